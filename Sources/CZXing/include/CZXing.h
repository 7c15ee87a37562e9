#ifndef VIEWFINDER_CZXING_H
#define VIEWFINDER_CZXING_H
// ZXing-cpp (Debian's libzxing-dev 1.4, a C++ library) behind a plain C function, so the Swift
// metadata output reaches it without C++ interoperability. Only shim.cpp includes ZXing's headers.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// ZXing's barcode formats (the values of ZXing::BarcodeFormat in 1.4).
enum {
    VF_ZX_AZTEC = 1 << 0,
    VF_ZX_CODABAR = 1 << 1,
    VF_ZX_CODE39 = 1 << 2,
    VF_ZX_CODE93 = 1 << 3,
    VF_ZX_CODE128 = 1 << 4,
    VF_ZX_DATABAR = 1 << 5,
    VF_ZX_DATABAR_EXPANDED = 1 << 6,
    VF_ZX_DATAMATRIX = 1 << 7,
    VF_ZX_EAN8 = 1 << 8,
    VF_ZX_EAN13 = 1 << 9,
    VF_ZX_ITF = 1 << 10,
    VF_ZX_MAXICODE = 1 << 11,
    VF_ZX_PDF417 = 1 << 12,
    VF_ZX_QRCODE = 1 << 13,
    VF_ZX_UPCA = 1 << 14,
    VF_ZX_UPCE = 1 << 15,
    VF_ZX_MICROQRCODE = 1 << 16,
};

/// How the pixels are laid out: one luma byte per pixel (every `pixel_stride` bytes), or 4-byte
/// B, G, R, X pixels.
enum { VF_ZX_LUMA = 0, VF_ZX_BGRX = 1 };

/// One code found: its format (a VF_ZX_ value), its text as UTF-8 (`text_length` bytes, not
/// terminated, valid only during the call), and its corners in pixels of the image passed —
/// top-left, top-right, bottom-right, bottom-left of the symbol as read (x, y pairs).
typedef void (*vf_zx_found)(void *context, int format, const char *text, size_t text_length, const int corners[8]);

/// Reads every code of the `formats` (a mask of VF_ZX_ values) in a `width` x `height` image at
/// `data` (rows `row_stride` bytes apart, pixels `pixel_stride` apart, laid out as `layout`),
/// calling `found` for each valid one. `try_harder` spends more time on hard images (rotated
/// 1-D codes, small codes). Returns the number found, or -1 (with `error`, if not NULL, holding a
/// message of at most `error_size` bytes) when ZXing failed.
int vf_zx_read(
    const uint8_t *data, int width, int height, int row_stride, int pixel_stride, int layout, int formats,
    int try_harder, vf_zx_found found, void *context, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
