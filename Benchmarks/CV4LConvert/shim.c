#include "CV4LConvert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <libv4lconvert.h>
#include <libv4l-plugin.h>

const uint32_t vf_v4lconvert_yu12 = V4L2_PIX_FMT_YUV420;
const uint32_t vf_v4lconvert_rgb24 = V4L2_PIX_FMT_RGB24;
const uint32_t vf_v4lconvert_bgr24 = V4L2_PIX_FMT_BGR24;

struct vf_v4lconvert {
    uint32_t width, height;
    struct v4lconvert_data *data;
};

// The fake camera: one MJPEG format at one discrete size; every other request fails with EINVAL
// (no inputs, no controls), as a driver answers what it does not support.
static int fake_ioctl(void *priv, int fd, unsigned long request, void *arg) {
    (void)fd;
    const struct vf_v4lconvert *camera = priv;
    switch (request) {
    case VIDIOC_QUERYCAP: {
        struct v4l2_capability *cap = arg;
        memset(cap, 0, sizeof *cap);
        strcpy((char *)cap->driver, "uvcvideo");
        strcpy((char *)cap->card, "viewfinder-bench MJPEG");
        strcpy((char *)cap->bus_info, "bench:mjpeg");
        cap->capabilities = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING | V4L2_CAP_DEVICE_CAPS;
        cap->device_caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
        return 0;
    }
    case VIDIOC_ENUM_FMT: {
        struct v4l2_fmtdesc *desc = arg;
        if (desc->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || desc->index != 0) break;
        desc->flags = V4L2_FMT_FLAG_COMPRESSED;
        desc->pixelformat = V4L2_PIX_FMT_MJPEG;
        strcpy((char *)desc->description, "Motion-JPEG");
        return 0;
    }
    case VIDIOC_ENUM_FRAMESIZES: {
        struct v4l2_frmsizeenum *size = arg;
        if (size->pixel_format != V4L2_PIX_FMT_MJPEG || size->index != 0) break;
        size->type = V4L2_FRMSIZE_TYPE_DISCRETE;
        size->discrete.width = camera->width;
        size->discrete.height = camera->height;
        return 0;
    }
    default:
        break;
    }
    errno = EINVAL;
    return -1;
}

static void *fake_init(int fd) {
    (void)fd;
    return NULL;
}

static void fake_close(void *priv) { (void)priv; }

static ssize_t fake_read(void *priv, int fd, void *buffer, size_t n) {
    (void)priv, (void)fd, (void)buffer, (void)n;
    errno = EINVAL;
    return -1;
}

static ssize_t fake_write(void *priv, int fd, const void *buffer, size_t n) {
    (void)priv, (void)fd, (void)buffer, (void)n;
    errno = EINVAL;
    return -1;
}

static const struct libv4l_dev_ops fake_ops = {
    .init = fake_init, .close = fake_close, .ioctl = fake_ioctl, .read = fake_read, .write = fake_write,
};

vf_v4lconvert *vf_v4lconvert_create(uint32_t width, uint32_t height) {
    vf_v4lconvert *converter = calloc(1, sizeof *converter);
    if (!converter) return NULL;
    converter->width = width;
    converter->height = height;
    // fd -1: libv4lconvert only fstat()s it (to look the camera up in sysfs), which fails harmlessly.
    converter->data = v4lconvert_create_with_dev_ops(-1, converter, &fake_ops);
    if (!converter->data) {
        free(converter);
        return NULL;
    }
    return converter;
}

static void fill_format(struct v4l2_format *format, uint32_t width, uint32_t height, uint32_t fourcc) {
    memset(format, 0, sizeof *format);
    format->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    format->fmt.pix.width = width;
    format->fmt.pix.height = height;
    format->fmt.pix.pixelformat = fourcc;
    format->fmt.pix.field = V4L2_FIELD_NONE;
}

int vf_v4lconvert_frame_size(const vf_v4lconvert *converter, uint32_t fourcc) {
    if (!v4lconvert_supported_dst_format(fourcc)) return 0;
    struct v4l2_format format;
    fill_format(&format, converter->width, converter->height, fourcc);
    v4lconvert_fixup_fmt(&format);
    return (int)format.fmt.pix.sizeimage;
}

int vf_v4lconvert_mjpeg(vf_v4lconvert *converter, const uint8_t *jpeg, int size, uint32_t fourcc,
                        uint8_t *destination, int capacity) {
    struct v4l2_format source, target;
    fill_format(&source, converter->width, converter->height, V4L2_PIX_FMT_MJPEG);
    source.fmt.pix.sizeimage = (uint32_t)size;
    fill_format(&target, converter->width, converter->height, fourcc);
    v4lconvert_fixup_fmt(&target);
    // v4lconvert_convert takes a non-const source but does not write to a JPEG.
    return v4lconvert_convert(converter->data, &source, &target, (unsigned char *)jpeg, size, destination, capacity);
}

const char *vf_v4lconvert_error(vf_v4lconvert *converter) { return v4lconvert_get_error_message(converter->data); }

void vf_v4lconvert_destroy(vf_v4lconvert *converter) {
    if (!converter) return;
    v4lconvert_destroy(converter->data);
    free(converter);
}
