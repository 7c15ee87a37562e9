#ifndef VIEWFINDER_CYUV_H
#define VIEWFINDER_CYUV_H
// libyuv's C API (the headers are C-compatible outside C++). Debian ships no pkg-config file,
// so Package.swift links "yuv" by name.
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

#endif
