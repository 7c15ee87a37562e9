#ifndef VIEWFINDER_CV4L2_H
#define VIEWFINDER_CV4L2_H
#include <stdint.h>
#include <sys/types.h>
#include <linux/videodev2.h>

// libv4l2's v4l2_open and v4l2_ioctl are variadic: Swift cannot call them, so they are wrapped.
int vf_v4l2_open(const char *path, int flags);
int vf_v4l2_close(int fd);
int vf_v4l2_ioctl(int fd, unsigned long request, void *arg);
void *vf_v4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset);
int vf_v4l2_munmap(void *start, size_t length);

// The VIDIOC_* request codes are function-like macros: re-exposed as constants.
static const unsigned long VF_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long VF_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long VF_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long VF_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long VF_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
static const unsigned long VF_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long VF_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long VF_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long VF_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long VF_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long VF_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
static const unsigned long VF_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long VF_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long VF_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long VF_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
static const unsigned long VF_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
static const unsigned long VF_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
static const unsigned long VF_VIDIOC_S_CTRL = VIDIOC_S_CTRL;

// Pixel formats (v4l2_fourcc is a function-like macro).
static const uint32_t VF_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
static const uint32_t VF_V4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
static const uint32_t VF_V4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;
static const uint32_t VF_V4L2_PIX_FMT_BGR32 = V4L2_PIX_FMT_BGR32;
static const uint32_t VF_V4L2_PIX_FMT_ABGR32 = V4L2_PIX_FMT_ABGR32;
static const uint32_t VF_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;

#endif
