#ifndef VIEWFINDER_CV4LCONVERT_H
#define VIEWFINDER_CV4LCONVERT_H
// libv4lconvert (libv4l-dev 1.22) for the benchmark runner only: the MJPEG decoding a user gets
// when libv4l2 emulates YU12 or RGB24/BGR24 for an MJPEG camera, driven without a device.
// libv4lconvert asks its device a few questions when it is created (ENUM_FMT, ENUM_FRAMESIZES,
// QUERYCAP, input and control queries); the dev ops here answer them as a UVC camera offering one
// MJPEG size and nothing else, so no fd, driver or libv4l2 plugin is involved.
#include <stdint.h>

/// libv4lconvert's emulated destination formats (V4L2 fourccs).
extern const uint32_t vf_v4lconvert_yu12;
extern const uint32_t vf_v4lconvert_rgb24;
extern const uint32_t vf_v4lconvert_bgr24;

/// A libv4lconvert instance bound to a fake MJPEG camera of one size.
typedef struct vf_v4lconvert vf_v4lconvert;

/// Creates the fake camera (`width` x `height` MJPEG) and libv4lconvert on it; NULL on failure.
vf_v4lconvert *vf_v4lconvert_create(uint32_t width, uint32_t height);

/// Bytes one frame of `fourcc` takes at the camera's size (libv4lconvert's own layout: no row
/// padding), or 0 for a format libv4lconvert does not emulate.
int vf_v4lconvert_frame_size(const vf_v4lconvert *converter, uint32_t fourcc);

/// Decodes one MJPEG frame of `size` bytes into `destination` (`capacity` bytes) as `fourcc`
/// with v4lconvert_convert: returns the bytes written, or -1 (see vf_v4lconvert_error).
int vf_v4lconvert_mjpeg(vf_v4lconvert *converter, const uint8_t *jpeg, int size, uint32_t fourcc,
                        uint8_t *destination, int capacity);

/// libv4lconvert's message for the last failure.
const char *vf_v4lconvert_error(vf_v4lconvert *converter);

/// Destroys libv4lconvert and the fake camera.
void vf_v4lconvert_destroy(vf_v4lconvert *converter);

#endif
