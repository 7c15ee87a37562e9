#include "CExif.h"
#include <stdlib.h>
#include <string.h>

ExifData *vf_exif_new(void) {
    ExifData *data = exif_data_new();
    if (!data) return NULL;
    exif_data_set_data_type(data, EXIF_DATA_TYPE_COMPRESSED);
    exif_data_set_byte_order(data, EXIF_BYTE_ORDER_MOTOROLA);
    return data;
}

/// A new entry of `components` values of `format` in `ifd`, replacing any with that tag.
static ExifEntry *make_entry(ExifData *data, ExifIfd ifd, ExifTag tag, ExifFormat format, unsigned long components) {
    if (!data || ifd < 0 || ifd >= EXIF_IFD_COUNT) return NULL;
    ExifContent *content = data->ifd[ifd];
    ExifEntry *old = exif_content_get_entry(content, tag);
    if (old) exif_content_remove_entry(content, old);
    unsigned long size = exif_format_get_size(format) * components;
    if (size == 0) return NULL;
    ExifMem *mem = exif_mem_new_default();
    if (!mem) return NULL;
    ExifEntry *entry = exif_entry_new_mem(mem);
    if (!entry) {
        exif_mem_unref(mem);
        return NULL;
    }
    entry->data = exif_mem_alloc(mem, (ExifLong)size);
    if (!entry->data) {
        exif_entry_unref(entry);
        exif_mem_unref(mem);
        return NULL;
    }
    entry->size = (unsigned int)size;
    entry->tag = tag;
    entry->components = components;
    entry->format = format;
    exif_content_add_entry(content, entry);
    // The content holds the entry now.
    exif_entry_unref(entry);
    exif_mem_unref(mem);
    return entry;
}

int vf_exif_set_short(ExifData *data, ExifIfd ifd, ExifTag tag, uint16_t value) {
    ExifEntry *entry = make_entry(data, ifd, tag, EXIF_FORMAT_SHORT, 1);
    if (!entry) return -1;
    exif_set_short(entry->data, exif_data_get_byte_order(data), value);
    return 0;
}

int vf_exif_set_long(ExifData *data, ExifIfd ifd, ExifTag tag, uint32_t value) {
    ExifEntry *entry = make_entry(data, ifd, tag, EXIF_FORMAT_LONG, 1);
    if (!entry) return -1;
    exif_set_long(entry->data, exif_data_get_byte_order(data), value);
    return 0;
}

int vf_exif_set_rational(ExifData *data, ExifIfd ifd, ExifTag tag, uint32_t numerator, uint32_t denominator) {
    ExifEntry *entry = make_entry(data, ifd, tag, EXIF_FORMAT_RATIONAL, 1);
    if (!entry) return -1;
    ExifRational value = {numerator, denominator};
    exif_set_rational(entry->data, exif_data_get_byte_order(data), value);
    return 0;
}

int vf_exif_set_ascii(ExifData *data, ExifIfd ifd, ExifTag tag, const char *value) {
    if (!value) return -1;
    size_t length = strlen(value) + 1;
    ExifEntry *entry = make_entry(data, ifd, tag, EXIF_FORMAT_ASCII, length);
    if (!entry) return -1;
    memcpy(entry->data, value, length);
    return 0;
}

int vf_exif_set_undefined(ExifData *data, ExifIfd ifd, ExifTag tag, const uint8_t *bytes, unsigned int size) {
    if (!bytes || size == 0) return -1;
    ExifEntry *entry = make_entry(data, ifd, tag, EXIF_FORMAT_UNDEFINED, size);
    if (!entry) return -1;
    memcpy(entry->data, bytes, size);
    return 0;
}

int vf_exif_set_thumbnail(ExifData *data, const unsigned char *bytes, unsigned int size) {
    if (!data || !bytes || size == 0) return -1;
    // libexif frees `data->data` with its default allocator (free) when the data goes.
    unsigned char *copy = malloc(size);
    if (!copy) return -1;
    memcpy(copy, bytes, size);
    free(data->data);
    data->data = copy;
    data->size = size;
    return 0;
}

const unsigned char *vf_exif_thumbnail(ExifData *data, unsigned int *size) {
    if (size) *size = 0;
    if (!data || !data->data || data->size == 0) return NULL;
    if (size) *size = data->size;
    return data->data;
}

int vf_exif_save(ExifData *data, unsigned char **bytes, unsigned int *size) {
    if (!data || !bytes || !size) return -1;
    *bytes = NULL;
    *size = 0;
    exif_data_save_data(data, bytes, size);
    return *bytes && *size > 0 ? 0 : -1;
}

void vf_exif_free(void *bytes) { free(bytes); }

ExifData *vf_exif_load(const unsigned char *bytes, unsigned int size) {
    if (!bytes || size == 0) return NULL;
    ExifData *data = exif_data_new();
    if (!data) return NULL;
    exif_data_unset_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_load_data(data, bytes, size);
    // libexif leaves the IFDs empty when it finds no EXIF header.
    int found = 0;
    for (int ifd = 0; ifd < EXIF_IFD_COUNT; ifd++) found |= data->ifd[ifd] && data->ifd[ifd]->count > 0;
    if (!found) {
        exif_data_unref(data);
        return NULL;
    }
    return data;
}

ExifEntry *vf_exif_entry(ExifData *data, ExifIfd ifd, ExifTag tag) {
    if (!data || ifd < 0 || ifd >= EXIF_IFD_COUNT) return NULL;
    return exif_content_get_entry(data->ifd[ifd], tag);
}
