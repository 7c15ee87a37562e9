#include "CYUV.h"

#include <stddef.h>

#include <libyuv/row.h>

const struct YuvConstants *vf_yuv_bt601_video(void) { return &kYuvI601Constants; }
const struct YuvConstants *vf_yuv_bt601_full(void) { return &kYuvJPEGConstants; }

typedef void (*vf_y_row)(const uint8_t *, uint8_t *, int);
typedef void (*vf_uv_row)(const uint8_t *, int, uint8_t *, uint8_t *, int);
typedef void (*vf_merge_row)(const uint8_t *, const uint8_t *, uint8_t *, int);

// The exact SIMD row functions are used only when a row is a whole number of steps that are at
// least as long as any of theirs (64 pixels, 32 chroma pairs); otherwise libyuv's "Any" wrappers,
// which finish a row's tail through a small buffer of their own on the stack.
static int vf_multiple(int count, int step) { return count % step == 0; }

int vf_argb_to_nv12(const uint8_t *src, int src_stride, uint8_t *dst_y, int y_stride, uint8_t *dst_uv,
    int uv_stride, int width, int height, int full_range, uint8_t *row_scratch) {
    if (!src || !dst_y || !dst_uv || !row_scratch || width <= 0 || height <= 0) return -1;
    int half = (width + 1) / 2;
    vf_y_row y_row = full_range ? ARGBToYJRow_C : ARGBToYRow_C;
    vf_uv_row uv_row = full_range ? ARGBToUVJRow_C : ARGBToUVRow_C;
    vf_merge_row merge_row = MergeUVRow_C;
    int whole = vf_multiple(width, 64);
    if (TestCpuFlag(kCpuHasSSSE3)) {
        y_row = full_range ? (whole ? ARGBToYJRow_SSSE3 : ARGBToYJRow_Any_SSSE3)
                           : (whole ? ARGBToYRow_SSSE3 : ARGBToYRow_Any_SSSE3);
        uv_row = full_range ? (whole ? ARGBToUVJRow_SSSE3 : ARGBToUVJRow_Any_SSSE3)
                            : (whole ? ARGBToUVRow_SSSE3 : ARGBToUVRow_Any_SSSE3);
    }
    if (TestCpuFlag(kCpuHasSSE2)) merge_row = vf_multiple(half, 32) ? MergeUVRow_SSE2 : MergeUVRow_Any_SSE2;
    if (TestCpuFlag(kCpuHasAVX2)) {
        y_row = full_range ? (whole ? ARGBToYJRow_AVX2 : ARGBToYJRow_Any_AVX2)
                           : (whole ? ARGBToYRow_AVX2 : ARGBToYRow_Any_AVX2);
        uv_row = full_range ? (whole ? ARGBToUVJRow_AVX2 : ARGBToUVJRow_Any_AVX2)
                            : (whole ? ARGBToUVRow_AVX2 : ARGBToUVRow_Any_AVX2);
        merge_row = vf_multiple(half, 32) ? MergeUVRow_AVX2 : MergeUVRow_Any_AVX2;
    }
    uint8_t *row_u = row_scratch;
    uint8_t *row_v = row_scratch + ((half + 63) & ~63);
    int y = 0;
    for (; y + 1 < height; y += 2) {
        const uint8_t *row = src + (size_t)y * src_stride;
        uv_row(row, src_stride, row_u, row_v, width);
        merge_row(row_u, row_v, dst_uv + (size_t)(y / 2) * uv_stride, half);
        y_row(row, dst_y + (size_t)y * y_stride, width);
        y_row(row + src_stride, dst_y + (size_t)(y + 1) * y_stride, width);
    }
    if (y < height) {  // An odd last row: its chroma from itself alone.
        const uint8_t *row = src + (size_t)y * src_stride;
        uv_row(row, 0, row_u, row_v, width);
        merge_row(row_u, row_v, dst_uv + (size_t)(y / 2) * uv_stride, half);
        y_row(row, dst_y + (size_t)y * y_stride, width);
    }
    return 0;
}

size_t vf_argb_to_nv12_scratch_bytes(int width) { return 2 * (size_t)(((width + 1) / 2 + 63) & ~63); }
