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
// Routes libv4l2's messages through a filter that drops "error dequeuing buf: Resource temporarily
// unavailable" (printed on every EAGAIN of a non-converting stream) and passes its other errors and
// warnings to stderr. Does nothing when the application set v4l2_log_file or LIBV4L2_LOG_FILENAME.
void vf_v4l2_install_log_filter(void);
// Where the filter writes the lines it passes: standard error (-1, the default) or `fd`, so a test
// can read what libv4l2 would print without redirecting the whole process's descriptor 2 (which
// swallows every other thread's output while it lasts, and the test runner's own lines with it).
void vf_v4l2_set_log_destination(int fd);
// The FourCC libv4l2 said it converts from ("VIDIOC_S_FMT converting from: MJPG") during the last
// v4l2 call on this thread that logged one, then 0. Only known while the log filter is installed.
uint32_t vf_v4l2_take_conversion_source(void);

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
static const unsigned long VF_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;

// Pixel formats (v4l2_fourcc is a function-like macro).
static const uint32_t VF_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
static const uint32_t VF_V4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
static const uint32_t VF_V4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;
static const uint32_t VF_V4L2_PIX_FMT_BGR32 = V4L2_PIX_FMT_BGR32;
static const uint32_t VF_V4L2_PIX_FMT_ABGR32 = V4L2_PIX_FMT_ABGR32;
static const uint32_t VF_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;

static const uint32_t VF_V4L2_PIX_FMT_XBGR32 = V4L2_PIX_FMT_XBGR32;
static const uint32_t VF_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;

// Capabilities (struct v4l2_capability), as plain constants.
static const uint32_t VF_V4L2_CAP_VIDEO_CAPTURE = V4L2_CAP_VIDEO_CAPTURE;
static const uint32_t VF_V4L2_CAP_STREAMING = V4L2_CAP_STREAMING;
static const uint32_t VF_V4L2_CAP_META_CAPTURE = V4L2_CAP_META_CAPTURE;
static const uint32_t VF_V4L2_COLORSPACE_SRGB = V4L2_COLORSPACE_SRGB;
static const uint32_t VF_V4L2_CAP_DEVICE_CAPS = V4L2_CAP_DEVICE_CAPS;
static const uint32_t VF_V4L2_CAP_TIMEPERFRAME = V4L2_CAP_TIMEPERFRAME;

// Buffer types, memory, fields, flags.
static const uint32_t VF_V4L2_BUF_TYPE_VIDEO_CAPTURE = V4L2_BUF_TYPE_VIDEO_CAPTURE;
static const uint32_t VF_V4L2_BUF_TYPE_META_CAPTURE = V4L2_BUF_TYPE_META_CAPTURE;
// UVC payload-header metadata (struct uvc_meta_buf blocks) on a UVC camera's metadata node.
static const uint32_t VF_V4L2_META_FMT_UVC = V4L2_META_FMT_UVC;
static const uint32_t VF_V4L2_MEMORY_MMAP = V4L2_MEMORY_MMAP;
static const uint32_t VF_V4L2_FIELD_ANY = V4L2_FIELD_ANY;
static const uint32_t VF_V4L2_FIELD_NONE = V4L2_FIELD_NONE;
static const uint32_t VF_V4L2_BUF_FLAG_MAPPED = V4L2_BUF_FLAG_MAPPED;
static const uint32_t VF_V4L2_BUF_FLAG_QUEUED = V4L2_BUF_FLAG_QUEUED;
static const uint32_t VF_V4L2_BUF_FLAG_DONE = V4L2_BUF_FLAG_DONE;
static const uint32_t VF_V4L2_BUF_FLAG_ERROR = V4L2_BUF_FLAG_ERROR;
static const uint32_t VF_V4L2_BUF_FLAG_TIMESTAMP_MASK = V4L2_BUF_FLAG_TIMESTAMP_MASK;
static const uint32_t VF_V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC;

// Format enumeration.
static const uint32_t VF_V4L2_FMT_FLAG_COMPRESSED = V4L2_FMT_FLAG_COMPRESSED;
static const uint32_t VF_V4L2_FMT_FLAG_EMULATED = V4L2_FMT_FLAG_EMULATED;
static const uint32_t VF_V4L2_FRMSIZE_TYPE_DISCRETE = V4L2_FRMSIZE_TYPE_DISCRETE;
static const uint32_t VF_V4L2_FRMSIZE_TYPE_CONTINUOUS = V4L2_FRMSIZE_TYPE_CONTINUOUS;
static const uint32_t VF_V4L2_FRMSIZE_TYPE_STEPWISE = V4L2_FRMSIZE_TYPE_STEPWISE;
static const uint32_t VF_V4L2_FRMIVAL_TYPE_DISCRETE = V4L2_FRMIVAL_TYPE_DISCRETE;
static const uint32_t VF_V4L2_FRMIVAL_TYPE_CONTINUOUS = V4L2_FRMIVAL_TYPE_CONTINUOUS;
static const uint32_t VF_V4L2_FRMIVAL_TYPE_STEPWISE = V4L2_FRMIVAL_TYPE_STEPWISE;

// Controls: the IDs are built from class bases by macros, re-exposed as constants.
static const uint32_t VF_V4L2_CID_BRIGHTNESS = V4L2_CID_BRIGHTNESS;
static const uint32_t VF_V4L2_CID_CONTRAST = V4L2_CID_CONTRAST;
static const uint32_t VF_V4L2_CID_SATURATION = V4L2_CID_SATURATION;
static const uint32_t VF_V4L2_CID_HUE = V4L2_CID_HUE;
static const uint32_t VF_V4L2_CID_GAIN = V4L2_CID_GAIN;
static const uint32_t VF_V4L2_CID_SHARPNESS = V4L2_CID_SHARPNESS;
static const uint32_t VF_V4L2_CID_GAMMA = V4L2_CID_GAMMA;
static const uint32_t VF_V4L2_CID_BACKLIGHT_COMPENSATION = V4L2_CID_BACKLIGHT_COMPENSATION;
static const uint32_t VF_V4L2_CID_AUTO_WHITE_BALANCE = V4L2_CID_AUTO_WHITE_BALANCE;
static const uint32_t VF_V4L2_CID_WHITE_BALANCE_TEMPERATURE = V4L2_CID_WHITE_BALANCE_TEMPERATURE;
static const uint32_t VF_V4L2_CID_POWER_LINE_FREQUENCY = V4L2_CID_POWER_LINE_FREQUENCY;
static const uint32_t VF_V4L2_CID_EXPOSURE_AUTO = V4L2_CID_EXPOSURE_AUTO;
static const uint32_t VF_V4L2_CID_EXPOSURE_ABSOLUTE = V4L2_CID_EXPOSURE_ABSOLUTE;
static const uint32_t VF_V4L2_CID_EXPOSURE_AUTO_PRIORITY = V4L2_CID_EXPOSURE_AUTO_PRIORITY;
static const uint32_t VF_V4L2_CID_FOCUS_ABSOLUTE = V4L2_CID_FOCUS_ABSOLUTE;
static const uint32_t VF_V4L2_CID_FOCUS_AUTO = V4L2_CID_FOCUS_AUTO;
static const uint32_t VF_V4L2_CID_ZOOM_ABSOLUTE = V4L2_CID_ZOOM_ABSOLUTE;
static const uint32_t VF_V4L2_CID_FLASH_LED_MODE = V4L2_CID_FLASH_LED_MODE;
static const uint32_t VF_V4L2_CID_BASE = V4L2_CID_BASE;
static const uint32_t VF_V4L2_CID_LASTP1 = V4L2_CID_LASTP1;
static const uint32_t VF_V4L2_CID_CAMERA_CLASS_BASE = V4L2_CID_CAMERA_CLASS_BASE;

static const int32_t VF_V4L2_EXPOSURE_AUTO = V4L2_EXPOSURE_AUTO;
static const int32_t VF_V4L2_EXPOSURE_MANUAL = V4L2_EXPOSURE_MANUAL;
static const int32_t VF_V4L2_EXPOSURE_SHUTTER_PRIORITY = V4L2_EXPOSURE_SHUTTER_PRIORITY;
static const int32_t VF_V4L2_EXPOSURE_APERTURE_PRIORITY = V4L2_EXPOSURE_APERTURE_PRIORITY;
static const int32_t VF_V4L2_FLASH_LED_MODE_NONE = V4L2_FLASH_LED_MODE_NONE;
static const int32_t VF_V4L2_FLASH_LED_MODE_TORCH = V4L2_FLASH_LED_MODE_TORCH;

static const uint32_t VF_V4L2_CTRL_FLAG_DISABLED = V4L2_CTRL_FLAG_DISABLED;
static const uint32_t VF_V4L2_CTRL_FLAG_READ_ONLY = V4L2_CTRL_FLAG_READ_ONLY;
static const uint32_t VF_V4L2_CTRL_FLAG_INACTIVE = V4L2_CTRL_FLAG_INACTIVE;
static const uint32_t VF_V4L2_CTRL_FLAG_WRITE_ONLY = V4L2_CTRL_FLAG_WRITE_ONLY;
static const uint32_t VF_V4L2_CTRL_FLAG_NEXT_CTRL = V4L2_CTRL_FLAG_NEXT_CTRL;
static const uint32_t VF_V4L2_CTRL_TYPE_INTEGER = V4L2_CTRL_TYPE_INTEGER;
static const uint32_t VF_V4L2_CTRL_TYPE_BOOLEAN = V4L2_CTRL_TYPE_BOOLEAN;
static const uint32_t VF_V4L2_CTRL_TYPE_MENU = V4L2_CTRL_TYPE_MENU;
static const uint32_t VF_V4L2_CTRL_TYPE_BUTTON = V4L2_CTRL_TYPE_BUTTON;
static const uint32_t VF_V4L2_CTRL_TYPE_INTEGER_MENU = V4L2_CTRL_TYPE_INTEGER_MENU;
static const uint32_t VF_V4L2_CTRL_TYPE_CTRL_CLASS = V4L2_CTRL_TYPE_CTRL_CLASS;

// Hot-plug: inotify on /dev (wrapped so the Swift side needs nothing beyond this module).
int vf_inotify_init(void);
int vf_inotify_add_watch(int fd, const char *path);
static const uint32_t VF_IN_CREATE = 0x00000100;
static const uint32_t VF_IN_DELETE = 0x00000200;
static const uint32_t VF_IN_ATTRIB = 0x00000004;
static const uint32_t VF_IN_MOVED_FROM = 0x00000040;
static const uint32_t VF_IN_MOVED_TO = 0x00000080;
static const uint32_t VF_IN_Q_OVERFLOW = 0x00004000;

#endif
