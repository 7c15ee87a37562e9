#ifndef VIEWFINDER_CYUV_H
#define VIEWFINDER_CYUV_H
// libyuv's C API (the headers are C-compatible outside C++). Debian ships no pkg-config file,
// so Package.swift links "yuv" by name.
#include <stddef.h>

#include <libyuv/basic_types.h>
#include <libyuv/convert.h>
#include <libyuv/convert_argb.h>
#include <libyuv/convert_from.h>
#include <libyuv/convert_from_argb.h>
#include <libyuv/planar_functions.h>
#include <libyuv/rotate.h>
#include <libyuv/rotate_argb.h>
#include <libyuv/scale.h>
#include <libyuv/scale_argb.h>
#include <libyuv/scale_uv.h>
#include <libyuv/cpu_id.h>

/// BT.601 limited-range ("video range") constants, as a pointer Swift can pass on.
const struct YuvConstants *vf_yuv_bt601_video(void);
/// BT.601 full-range ("JPEG") constants.
const struct YuvConstants *vf_yuv_bt601_full(void);

/// BGRA (libyuv's "ARGB") to NV12, BT.601 video range or (`full_range`) full range, a row pair at
/// a time with libyuv's row functions: what libyuv's ARGBToNV12 does, without its malloc of the
/// row pair's chroma per call (`row_scratch`, ``vf_argb_to_nv12_scratch_bytes`` long, is the
/// caller's) and with a full-range variant, which libyuv lacks. 0, or -1 for bad arguments.
int vf_argb_to_nv12(const uint8_t *src, int src_stride, uint8_t *dst_y, int y_stride, uint8_t *dst_uv,
    int uv_stride, int width, int height, int full_range, uint8_t *row_scratch);
/// The bytes of `row_scratch` ``vf_argb_to_nv12`` needs for rows `width` pixels wide.
size_t vf_argb_to_nv12_scratch_bytes(int width);

#endif
