#ifndef VIEWFINDER_CEXIF_H
#define VIEWFINDER_CEXIF_H
// libexif (libexif-dev). Building entries takes several allocator and ownership steps that are
// simpler in C, so they are wrapped; reading uses libexif's functions and structs directly.
#include <stdint.h>
#include <libexif/exif-data.h>
#include <libexif/exif-entry.h>
#include <libexif/exif-content.h>
#include <libexif/exif-utils.h>
#include <libexif/exif-tag.h>
#include <libexif/exif-ifd.h>
#include <libexif/exif-format.h>
#include <libexif/exif-byte-order.h>

/// An empty EXIF block for a compressed (JPEG) image, big-endian, or NULL when out of memory.
ExifData *vf_exif_new(void);

/// Sets `tag` in `ifd` to one SHORT, replacing any entry with that tag. 0 on success.
int vf_exif_set_short(ExifData *data, ExifIfd ifd, ExifTag tag, uint16_t value);
/// Sets `tag` in `ifd` to one LONG. 0 on success.
int vf_exif_set_long(ExifData *data, ExifIfd ifd, ExifTag tag, uint32_t value);
/// Sets `tag` in `ifd` to one RATIONAL. 0 on success.
int vf_exif_set_rational(ExifData *data, ExifIfd ifd, ExifTag tag, uint32_t numerator, uint32_t denominator);
/// Sets `tag` in `ifd` to the NUL-terminated ASCII string `value`. 0 on success.
int vf_exif_set_ascii(ExifData *data, ExifIfd ifd, ExifTag tag, const char *value);
/// Sets `tag` in `ifd` to `size` UNDEFINED bytes. 0 on success.
int vf_exif_set_undefined(ExifData *data, ExifIfd ifd, ExifTag tag, const uint8_t *bytes, unsigned int size);

/// Sets the thumbnail (IFD1's JPEGInterchangeFormat data) to a copy of `size` bytes of a JPEG
/// file, replacing any; libexif writes it after IFD1 when `data` is saved (IFD1 must have an entry,
/// such as Compression). 0 on success.
int vf_exif_set_thumbnail(ExifData *data, const unsigned char *bytes, unsigned int size);
/// The thumbnail libexif found when loading (or that was set), and its size; NULL when none.
const unsigned char *vf_exif_thumbnail(ExifData *data, unsigned int *size);

/// Serialises `data` as the payload of an APP1 segment (starting "Exif\0\0") into a buffer
/// the caller frees with `vf_exif_free`. 0 on success.
int vf_exif_save(ExifData *data, unsigned char **bytes, unsigned int *size);
/// Frees a buffer from `vf_exif_save`.
void vf_exif_free(void *bytes);

/// Parses EXIF from a JPEG file or an APP1 payload exactly as stored (libexif's "fix to the
/// specification" option is off, so nothing is added), or NULL if there is none.
ExifData *vf_exif_load(const unsigned char *bytes, unsigned int size);
/// The entry for `tag` in `ifd`, or NULL.
ExifEntry *vf_exif_entry(ExifData *data, ExifIfd ifd, ExifTag tag);

#endif
