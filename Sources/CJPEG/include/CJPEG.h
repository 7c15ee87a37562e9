#ifndef VIEWFINDER_CJPEG_H
#define VIEWFINDER_CJPEG_H
// libjpeg-turbo's libjpeg API (libjpeg62-turbo) for decoding Motion-JPEG frames one iMCU row (8 or
// 16 lines) at a time with jpeg_read_raw_data, so the caller can convert each group of rows while
// it is still in cache. libjpeg reports errors by longjmp, which Swift cannot catch: every function
// here catches them itself and returns -1 (the message from vf_jpeg_error). Warnings (a damaged
// frame: corrupt or truncated entropy-coded data) count as errors, as TurboJPEG's
// TJFLAG_STOPONWARNING does.
#include <stddef.h>

/// A reusable decompressor (one libjpeg decompress object and its error state). Not thread-safe.
typedef struct vf_jpeg_decoder vf_jpeg_decoder;

/// What a frame's header says, for the raw (row-group) path.
typedef struct {
    int width;
    int height;
    /// TurboJPEG's TJSAMP value for the layout: TJSAMP_422 (1), TJSAMP_420 (2) or TJSAMP_GRAY (3);
    /// -1 for the layouts the row-group path does not handle (4:4:4, 4:4:0, 4:1:1, ...: the frame
    /// is not started and the caller decodes it another way).
    int subsampling;
    /// 1 (greyscale) or 3 (Y'CbCr).
    int components;
    /// Luma rows each vf_jpeg_read_rows call produces (8 or 16): one iMCU row.
    int luma_rows;
    /// Chroma rows of each of Cb and Cr per call.
    int chroma_rows;
    /// Bytes libjpeg writes into each luma row (the width rounded up to whole 8x8 blocks).
    int luma_row_bytes;
    /// Bytes libjpeg writes into each chroma row (whole blocks).
    int chroma_row_bytes;
    /// Chroma samples per row that belong to the image.
    int chroma_width;
    /// The decoded image's size (the frame's, or its 1/scale_denom, rounded up).
    int output_width;
    int output_height;
} vf_jpeg_info;

/// A new decompressor, or NULL when out of memory.
vf_jpeg_decoder *vf_jpeg_create(void);
/// Frees a decompressor.
void vf_jpeg_destroy(vf_jpeg_decoder *decoder);
/// Reads `size` bytes of JPEG at `data` (which must stay valid until vf_jpeg_finish or vf_jpeg_abort)
/// up to its first scan, fills `info`, and when `info->subsampling` is not -1 starts raw decoding
/// (strict: accurate integer IDCT, stop at the first warning). Returns 0 or -1 (error; aborted).
int vf_jpeg_start(vf_jpeg_decoder *decoder, const unsigned char *data, unsigned long size, vf_jpeg_info *info);
/// vf_jpeg_start decoding at 1/`scale_denom` (1, 2, 4 or 8: libjpeg's scaled IDCT). A scaled frame
/// whose chroma libjpeg would scale differently from its luma (4:2:0), or whose 4:2:2 row groups
/// would be a single row (1/8), reports subsampling -1 and is not started, like another layout.
int vf_jpeg_start_scaled(
    vf_jpeg_decoder *decoder, const unsigned char *data, unsigned long size, int scale_denom, vf_jpeg_info *info);
/// Decodes the next iMCU row: `luma_rows` rows into y + i * y_stride and `chroma_rows` rows each into
/// cb + i * cb_stride and cr + i * cr_stride (rows must hold luma_row_bytes / chroma_row_bytes bytes;
/// cb and cr are ignored for greyscale). Returns the number of luma rows that belong to the image
/// (fewer than luma_rows in the last group when the height is not a multiple), or -1 (error; aborted).
int vf_jpeg_read_rows(vf_jpeg_decoder *decoder, unsigned char *y, int y_stride, unsigned char *cb, int cb_stride,
    unsigned char *cr, int cr_stride);
/// Finishes a frame whose rows were all read (checks the rest of the data). Returns 0 or -1.
int vf_jpeg_finish(vf_jpeg_decoder *decoder);
/// Abandons the current frame and drops every table a frame left behind (a fresh decompress
/// object), so a damaged frame cannot affect the next one.
void vf_jpeg_abort(vf_jpeg_decoder *decoder);
/// The last error's message ("" if none).
const char *vf_jpeg_error(const vf_jpeg_decoder *decoder);
/// Whether the last error was a warning (a damaged frame) rather than a fatal error.
int vf_jpeg_error_is_warning(const vf_jpeg_decoder *decoder);

#endif
