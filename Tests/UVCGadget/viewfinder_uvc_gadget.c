// The userspace half of a configfs UVC gadget (the kernel's usb_f_uvc function), for the kernel
// tests: it answers the UVC class requests the host's uvcvideo driver sends (the controls the
// descriptors declare, the video streaming probe and commit) and, while the host streams, feeds
// numbered frames through the gadget's V4L2 output node.
//
//   viewfinder_uvc_gadget [--device /dev/videoN] [--maxpacket BYTES] FORMAT...
//
// FORMAT is `yuyv:WxH[,WxH...]` or `mjpeg:WxH[,WxH...]`, in the order the configfs gadget lists its
// formats and frames (Tests/UVCGadget/setup.sh creates both from the same list): the Nth FORMAT is
// bFormatIndex N, its Mth size bFrameIndex M. Every frame offers the intervals in INTERVALS below.
// Without --device, the first /dev/video node whose driver is "g_uvc" is used.
//
// Frames carry their own number: a YUYV frame starts with the 32-bit little-endian frame number,
// then its complement, then "VFUV" (the rest is a gradient); an MJPEG frame carries
// "VFUV" + the same eight bytes in a comment segment (COM) right after its start-of-image marker.
// The processing unit's brightness and the camera terminal's auto-exposure mode answer GET/SET;
// every other request is stalled. One line a state change goes to standard output.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/g_uvc.h>
#include <linux/usb/video.h>
#include <linux/videodev2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <turbojpeg.h>
#include <unistd.h>

#define MAX_FORMATS 4
#define MAX_FRAMES 8
#define BUFFER_COUNT 4

static const uint32_t INTERVALS[] = {333333, 666666, 1000000};  // 30, 15 and 10 frames a second.
#define INTERVAL_COUNT (sizeof(INTERVALS) / sizeof(INTERVALS[0]))

struct frame_size {
    unsigned width, height;
};
struct format {
    uint32_t fourcc;
    unsigned frame_count;
    struct frame_size frames[MAX_FRAMES];
};

static struct format formats[MAX_FORMATS];
static unsigned format_count;
static unsigned max_payload = 1024;

// Controls: the processing unit's brightness (entity 2), the camera terminal's AE mode (entity 1).
enum { CAMERA_TERMINAL = 1, PROCESSING_UNIT = 2 };
static int16_t brightness = 128;
static const int16_t brightness_min = 0, brightness_max = 255, brightness_default = 128;
static uint8_t ae_mode = 0x08;  // aperture priority (auto); manual is 0x01

// The video streaming state.
static struct uvc_streaming_control probe, commit;
static int control_pending;  // the selector (probe/commit, or an entity<<8|selector) a SET_CUR will fill
static int fd = -1;
static int streaming;
static void *buffers[BUFFER_COUNT];
static size_t buffer_lengths[BUFFER_COUNT];
static unsigned buffer_count;
static uint32_t frame_number;
static tjhandle jpeg;
static unsigned char *rgb;

static volatile sig_atomic_t stopping;
static void on_signal(int signal_number) {
    (void)signal_number;
    stopping = 1;
}

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    printf("uvc-gadget: ");
    vprintf(format, arguments);
    printf("\n");
    fflush(stdout);
    va_end(arguments);
}

static const struct frame_size *frame_of(unsigned format_index, unsigned frame_index) {
    if (format_index < 1 || format_index > format_count) return NULL;
    const struct format *format = &formats[format_index - 1];
    if (frame_index < 1 || frame_index > format->frame_count) return NULL;
    return &format->frames[frame_index - 1];
}

static uint32_t frame_bytes(unsigned format_index, unsigned frame_index) {
    const struct frame_size *size = frame_of(format_index, frame_index);
    if (!size) return 0;
    return size->width * size->height * 2;  // YUYV; also MJPEG's bound (a JPEG of these is smaller)
}

// Fills `control` with the nearest valid settings to what it asks for (`which`: <0 min, >0 max).
static void fill_streaming_control(struct uvc_streaming_control *control, int which) {
    unsigned format_index = control->bFormatIndex, frame_index = control->bFrameIndex;
    if (which < 0 || format_index < 1 || format_index > format_count) format_index = which > 0 ? format_count : 1;
    const struct format *format = &formats[format_index - 1];
    if (which < 0 || frame_index < 1 || frame_index > format->frame_count)
        frame_index = which > 0 ? format->frame_count : 1;
    uint32_t interval = control->dwFrameInterval;
    unsigned best = 0;
    for (unsigned i = 0; i < INTERVAL_COUNT; i++)
        if (INTERVALS[i] <= interval || i == 0) best = i;  // the longest interval not above the asked one
    if (which < 0) best = 0;
    if (which > 0) best = INTERVAL_COUNT - 1;
    memset(control, 0, sizeof *control);
    control->bmHint = 1;
    control->bFormatIndex = (uint8_t)format_index;
    control->bFrameIndex = (uint8_t)frame_index;
    control->dwFrameInterval = INTERVALS[best];
    control->dwMaxVideoFrameSize = frame_bytes(format_index, frame_index);
    control->dwMaxPayloadTransferSize = max_payload;
    control->bmFramingInfo = 3;
    control->bPreferedVersion = 1;
    control->bMinVersion = 1;
    control->bMaxVersion = 1;
}

static void respond(const void *data, int length, int asked) {
    struct uvc_request_data response;
    memset(&response, 0, sizeof response);
    if (length < 0) {
        response.length = -EL2HLT;  // stall
    } else {
        if (length > asked) length = asked;
        if (length > (int)sizeof response.data) length = sizeof response.data;
        response.length = length;
        if (data) memcpy(response.data, data, (size_t)length);  // NULL: the length a SET_CUR expects
    }
    if (ioctl(fd, UVCIOC_SEND_RESPONSE, &response) < 0) say("UVCIOC_SEND_RESPONSE failed: %s", strerror(errno));
}

static void answer_control(const struct usb_ctrlrequest *request, unsigned entity, unsigned selector) {
    uint8_t request_code = request->bRequest;
    int asked = request->wLength;
    uint8_t info = 0x03;  // GET and SET supported
    if (entity == PROCESSING_UNIT && selector == UVC_PU_BRIGHTNESS_CONTROL) {
        int16_t value;
        switch (request_code) {
        case UVC_GET_INFO: respond(&info, 1, asked); return;
        case UVC_GET_LEN: { uint16_t length = 2; respond(&length, 2, asked); return; }
        case UVC_GET_CUR: value = brightness; break;
        case UVC_GET_MIN: value = brightness_min; break;
        case UVC_GET_MAX: value = brightness_max; break;
        case UVC_GET_DEF: value = brightness_default; break;
        case UVC_GET_RES: value = 1; break;
        case UVC_SET_CUR:
            control_pending = (int)(entity << 8 | selector);
            respond(NULL, 2, asked);  // the data stage brings the value (UVC_EVENT_DATA)
            return;
        default: respond(NULL, -1, asked); return;
        }
        respond(&value, 2, asked);
        return;
    }
    if (entity == CAMERA_TERMINAL && selector == UVC_CT_AE_MODE_CONTROL) {
        uint8_t value;
        switch (request_code) {
        case UVC_GET_INFO: respond(&info, 1, asked); return;
        case UVC_GET_LEN: { uint16_t length = 1; respond(&length, 2, asked); return; }
        case UVC_GET_CUR: value = ae_mode; break;
        case UVC_GET_DEF: value = 0x08; break;
        case UVC_GET_RES: value = 0x01 | 0x08; break;  // the modes offered: manual, aperture priority
        case UVC_SET_CUR:
            control_pending = (int)(entity << 8 | selector);
            respond(NULL, 1, asked);
            return;
        default: respond(NULL, -1, asked); return;
        }
        respond(&value, 1, asked);
        return;
    }
    respond(NULL, -1, asked);
}

static void answer_streaming(const struct usb_ctrlrequest *request, unsigned selector) {
    int asked = request->wLength;
    if (selector != UVC_VS_PROBE_CONTROL && selector != UVC_VS_COMMIT_CONTROL) {
        respond(NULL, -1, asked);
        return;
    }
    struct uvc_streaming_control *target = selector == UVC_VS_PROBE_CONTROL ? &probe : &commit;
    struct uvc_streaming_control answer;
    uint8_t info = 0x03;
    uint16_t length = sizeof answer;
    switch (request->bRequest) {
    case UVC_SET_CUR:
        control_pending = selector == UVC_VS_PROBE_CONTROL ? 0x10000 : 0x20000;
        respond(NULL, sizeof answer, asked);
        return;
    case UVC_GET_CUR: answer = *target; break;
    case UVC_GET_MIN: memset(&answer, 0, sizeof answer); fill_streaming_control(&answer, -1); break;
    case UVC_GET_MAX: memset(&answer, 0, sizeof answer); fill_streaming_control(&answer, 1); break;
    case UVC_GET_DEF: memset(&answer, 0, sizeof answer); answer.dwFrameInterval = INTERVALS[0]; fill_streaming_control(&answer, 0); break;
    case UVC_GET_RES: memset(&answer, 0, sizeof answer); break;
    case UVC_GET_INFO: respond(&info, 1, asked); return;
    case UVC_GET_LEN: respond(&length, 2, asked); return;
    default: respond(NULL, -1, asked); return;
    }
    respond(&answer, sizeof answer, asked);
}

static void on_setup(const struct usb_ctrlrequest *request) {
    if ((request->bRequestType & USB_TYPE_MASK) != USB_TYPE_CLASS ||
        (request->bRequestType & USB_RECIP_MASK) != USB_RECIP_INTERFACE) {
        respond(NULL, -1, request->wLength);
        return;
    }
    unsigned interface = request->wIndex & 0xff, entity = request->wIndex >> 8, selector = request->wValue >> 8;
    // Interface 0 is video control (entity: a unit or terminal); interface 1 video streaming.
    if (interface == 0)
        answer_control(request, entity, selector);
    else
        answer_streaming(request, selector);
}

static void on_data(const struct uvc_request_data *data) {
    int which = control_pending;
    control_pending = 0;
    if (which == 0x10000 || which == 0x20000) {
        struct uvc_streaming_control asked;
        memset(&asked, 0, sizeof asked);
        memcpy(&asked, data->data, (size_t)data->length < sizeof asked ? (size_t)data->length : sizeof asked);
        fill_streaming_control(&asked, 0);
        if (which == 0x10000) {
            probe = asked;
        } else {
            commit = asked;
            probe = asked;
            say("commit: format %u frame %u interval %u", commit.bFormatIndex, commit.bFrameIndex,
                commit.dwFrameInterval);
        }
    } else if (which == (PROCESSING_UNIT << 8 | UVC_PU_BRIGHTNESS_CONTROL) && data->length >= 2) {
        int16_t value;
        memcpy(&value, data->data, 2);
        if (value < brightness_min) value = brightness_min;
        if (value > brightness_max) value = brightness_max;
        brightness = value;
        say("brightness %d", brightness);
    } else if (which == (CAMERA_TERMINAL << 8 | UVC_CT_AE_MODE_CONTROL) && data->length >= 1) {
        if (data->data[0] == 0x01 || data->data[0] == 0x08) ae_mode = data->data[0];
        say("auto-exposure mode 0x%02x", ae_mode);
    }
}

// Writes frame `number` of the committed format into `buffer`; returns the bytes used.
static size_t fill_frame(uint8_t *buffer, size_t capacity, uint32_t number) {
    const struct frame_size *size = frame_of(commit.bFormatIndex, commit.bFrameIndex);
    if (!size) return 0;
    uint8_t stamp[12];
    uint32_t complement = ~number;
    memcpy(stamp, &number, 4);
    memcpy(stamp + 4, &complement, 4);
    memcpy(stamp + 8, "VFUV", 4);
    if (formats[commit.bFormatIndex - 1].fourcc == V4L2_PIX_FMT_YUYV) {
        size_t bytes = (size_t)size->width * size->height * 2;
        if (bytes > capacity) return 0;
        for (unsigned y = 0; y < size->height; y++) {
            uint8_t *row = buffer + (size_t)y * size->width * 2;
            for (unsigned x = 0; x < size->width; x++) {
                row[x * 2] = (uint8_t)(16 + (x * 219) / size->width);  // luma: a horizontal ramp
                row[x * 2 + 1] = 128;                                  // chroma: grey
            }
        }
        memcpy(buffer, stamp, sizeof stamp);
        return bytes;
    }
    // MJPEG: a horizontal ramp that shifts with the number, compressed, then the stamp in a COM.
    for (unsigned y = 0; y < size->height; y++)
        for (unsigned x = 0; x < size->width; x++) {
            unsigned char *pixel = rgb + ((size_t)y * size->width + x) * 3;
            pixel[0] = (unsigned char)(x + number);
            pixel[1] = (unsigned char)y;
            pixel[2] = 128;
        }
    unsigned char *jpeg_data = buffer + 4 + 2 + sizeof stamp;
    unsigned long jpeg_size = capacity - (4 + 2 + sizeof stamp);
    if (tjCompress2(jpeg, rgb, (int)size->width, 0, (int)size->height, TJPF_RGB, &jpeg_data, &jpeg_size, TJSAMP_422,
                    80, TJFLAG_NOREALLOC) != 0) {
        say("JPEG compression failed: %s", tjGetErrorStr2(jpeg));
        return 0;
    }
    // jpeg_data starts with SOI (FF D8): move SOI to the front, then COM (FF FE, length, stamp).
    uint8_t *out = buffer;
    out[0] = 0xff;
    out[1] = 0xd8;
    out[2] = 0xff;
    out[3] = 0xfe;
    out[4] = 0;
    out[5] = 2 + sizeof stamp;
    memcpy(out + 6, stamp, sizeof stamp);
    // The compressed data (after its own SOI) follows directly: shift it down by two bytes.
    memmove(out + 6 + sizeof stamp, jpeg_data + 2, jpeg_size - 2);
    return 6 + sizeof stamp + jpeg_size - 2;
}

static int queue_buffer(unsigned index) {
    struct v4l2_buffer buffer;
    memset(&buffer, 0, sizeof buffer);
    buffer.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    buffer.memory = V4L2_MEMORY_MMAP;
    buffer.index = index;
    buffer.bytesused = (uint32_t)fill_frame(buffers[index], buffer_lengths[index], frame_number);
    buffer.field = V4L2_FIELD_NONE;
    frame_number++;
    if (ioctl(fd, VIDIOC_QBUF, &buffer) < 0) {
        say("VIDIOC_QBUF failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static void release_buffers(void) {
    for (unsigned i = 0; i < buffer_count; i++) munmap(buffers[i], buffer_lengths[i]);
    buffer_count = 0;
    struct v4l2_requestbuffers request;
    memset(&request, 0, sizeof request);
    request.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    request.memory = V4L2_MEMORY_MMAP;
    ioctl(fd, VIDIOC_REQBUFS, &request);
}

static void stream_off(void) {
    if (!streaming) return;
    int type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    ioctl(fd, VIDIOC_STREAMOFF, &type);
    release_buffers();
    streaming = 0;
    say("stream off after %u frames", frame_number);
}

static void stream_on(void) {
    stream_off();
    const struct frame_size *size = frame_of(commit.bFormatIndex, commit.bFrameIndex);
    if (!size) {
        say("stream on without a committed format");
        return;
    }
    uint32_t fourcc = formats[commit.bFormatIndex - 1].fourcc;
    struct v4l2_format format;
    memset(&format, 0, sizeof format);
    format.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    format.fmt.pix.width = size->width;
    format.fmt.pix.height = size->height;
    format.fmt.pix.pixelformat = fourcc;
    format.fmt.pix.field = V4L2_FIELD_NONE;
    format.fmt.pix.sizeimage = size->width * size->height * 2;
    if (ioctl(fd, VIDIOC_S_FMT, &format) < 0) {
        say("VIDIOC_S_FMT failed: %s", strerror(errno));
        return;
    }
    struct v4l2_requestbuffers request;
    memset(&request, 0, sizeof request);
    request.count = BUFFER_COUNT;
    request.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    request.memory = V4L2_MEMORY_MMAP;
    if (ioctl(fd, VIDIOC_REQBUFS, &request) < 0 || request.count == 0) {
        say("VIDIOC_REQBUFS failed: %s", strerror(errno));
        return;
    }
    for (unsigned i = 0; i < request.count; i++) {
        struct v4l2_buffer buffer;
        memset(&buffer, 0, sizeof buffer);
        buffer.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
        buffer.memory = V4L2_MEMORY_MMAP;
        buffer.index = i;
        if (ioctl(fd, VIDIOC_QUERYBUF, &buffer) < 0) {
            say("VIDIOC_QUERYBUF failed: %s", strerror(errno));
            release_buffers();
            return;
        }
        buffers[i] = mmap(NULL, buffer.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, buffer.m.offset);
        if (buffers[i] == MAP_FAILED) {
            say("mmap failed: %s", strerror(errno));
            release_buffers();
            return;
        }
        buffer_lengths[i] = buffer.length;
        buffer_count = i + 1;
    }
    for (unsigned i = 0; i < buffer_count; i++)
        if (queue_buffer(i) < 0) {
            release_buffers();
            return;
        }
    int type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    if (ioctl(fd, VIDIOC_STREAMON, &type) < 0) {
        say("VIDIOC_STREAMON failed: %s", strerror(errno));
        release_buffers();
        return;
    }
    streaming = 1;
    say("stream on: %s %ux%u", fourcc == V4L2_PIX_FMT_YUYV ? "YUYV" : "MJPEG", size->width, size->height);
}

static void on_event(void) {
    struct v4l2_event event;
    if (ioctl(fd, VIDIOC_DQEVENT, &event) < 0) return;
    const struct uvc_event *uvc = (const void *)&event.u.data;
    switch (event.type) {
    case UVC_EVENT_CONNECT: say("connected"); break;
    case UVC_EVENT_DISCONNECT: say("disconnected"); stream_off(); break;
    case UVC_EVENT_SETUP: on_setup(&uvc->req); break;
    case UVC_EVENT_DATA: on_data(&uvc->data); break;
    case UVC_EVENT_STREAMON: stream_on(); break;
    case UVC_EVENT_STREAMOFF: stream_off(); break;
    }
}

static void on_buffer_done(void) {
    struct v4l2_buffer buffer;
    memset(&buffer, 0, sizeof buffer);
    buffer.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    buffer.memory = V4L2_MEMORY_MMAP;
    if (ioctl(fd, VIDIOC_DQBUF, &buffer) < 0) {
        if (errno != EAGAIN) {
            say("VIDIOC_DQBUF failed: %s", strerror(errno));
            stream_off();
        }
        return;
    }
    queue_buffer(buffer.index);
}

static int open_gadget_node(const char *path) {
    int node = open(path, O_RDWR | O_NONBLOCK);
    if (node < 0) return -1;
    struct v4l2_capability capability;
    if (ioctl(node, VIDIOC_QUERYCAP, &capability) < 0 || strcmp((const char *)capability.driver, "g_uvc") != 0) {
        close(node);
        return -1;
    }
    return node;
}

static int parse_format(const char *argument) {
    if (format_count == MAX_FORMATS) return -1;
    struct format *format = &formats[format_count];
    const char *sizes;
    if (strncmp(argument, "yuyv:", 5) == 0) {
        format->fourcc = V4L2_PIX_FMT_YUYV;
        sizes = argument + 5;
    } else if (strncmp(argument, "mjpeg:", 6) == 0) {
        format->fourcc = V4L2_PIX_FMT_MJPEG;
        sizes = argument + 6;
    } else {
        return -1;
    }
    while (*sizes) {
        unsigned width, height;
        int used;
        if (format->frame_count == MAX_FRAMES || sscanf(sizes, "%ux%u%n", &width, &height, &used) != 2 || width == 0 ||
            height == 0 || width % 2)
            return -1;
        format->frames[format->frame_count++] = (struct frame_size){width, height};
        sizes += used;
        if (*sizes == ',') sizes++;
    }
    if (format->frame_count == 0) return -1;
    format_count++;
    return 0;
}

int main(int argc, char **argv) {
    const char *device = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            device = argv[++i];
        } else if (strcmp(argv[i], "--maxpacket") == 0 && i + 1 < argc) {
            max_payload = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (parse_format(argv[i]) < 0) {
            fprintf(stderr,
                    "usage: %s [--device /dev/videoN] [--maxpacket BYTES] yuyv:WxH[,WxH...] | mjpeg:WxH[,WxH...]...\n"
                    "'%s' is not a format this gadget knows (yuyv or mjpeg, even widths, at most %d sizes)\n",
                    argv[0], argv[i], MAX_FRAMES);
            return 2;
        }
    }
    if (format_count == 0) {
        fprintf(stderr, "%s: no FORMAT given (for example yuyv:320x240)\n", argv[0]);
        return 2;
    }
    if (device) {
        fd = open_gadget_node(device);
        if (fd < 0) {
            fprintf(stderr, "%s: %s is not a UVC gadget's node (driver g_uvc)\n", argv[0], device);
            return 1;
        }
    } else {
        DIR *directory = opendir("/dev");
        struct dirent *entry;
        char path[300];
        while (directory && fd < 0 && (entry = readdir(directory)))
            if (strncmp(entry->d_name, "video", 5) == 0) {
                snprintf(path, sizeof path, "/dev/%s", entry->d_name);
                fd = open_gadget_node(path);
            }
        if (directory) closedir(directory);
        if (fd < 0) {
            fprintf(stderr, "%s: no UVC gadget node (driver g_uvc) in /dev: bind the configfs gadget first\n", argv[0]);
            return 1;
        }
    }
    size_t largest = 0;
    for (unsigned f = 0; f < format_count; f++)
        for (unsigned i = 0; i < formats[f].frame_count; i++) {
            size_t bytes = (size_t)formats[f].frames[i].width * formats[f].frames[i].height * 3;
            if (bytes > largest) largest = bytes;
        }
    rgb = malloc(largest);
    jpeg = tjInitCompress();
    if (!rgb || !jpeg) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    probe.dwFrameInterval = INTERVALS[0];
    fill_streaming_control(&probe, 0);
    commit = probe;

    // Subscribing to SETUP connects the gadget to the bus (the kernel waits for an application).
    static const unsigned events[] = {UVC_EVENT_CONNECT, UVC_EVENT_DISCONNECT, UVC_EVENT_STREAMON,
                                      UVC_EVENT_STREAMOFF, UVC_EVENT_DATA,    UVC_EVENT_SETUP};
    for (unsigned i = 0; i < sizeof events / sizeof events[0]; i++) {
        struct v4l2_event_subscription subscription;
        memset(&subscription, 0, sizeof subscription);
        subscription.type = events[i];
        if (ioctl(fd, VIDIOC_SUBSCRIBE_EVENT, &subscription) < 0) {
            fprintf(stderr, "%s: VIDIOC_SUBSCRIBE_EVENT failed: %s\n", argv[0], strerror(errno));
            return 1;
        }
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    say("ready");

    while (!stopping) {
        fd_set events_ready, buffers_ready;
        FD_ZERO(&events_ready);
        FD_ZERO(&buffers_ready);
        FD_SET(fd, &events_ready);
        if (streaming) FD_SET(fd, &buffers_ready);
        int ready = select(fd + 1, NULL, &buffers_ready, &events_ready, NULL);
        if (ready < 0) {
            if (errno == EINTR) continue;
            say("select failed: %s", strerror(errno));
            break;
        }
        if (FD_ISSET(fd, &events_ready)) on_event();
        if (streaming && FD_ISSET(fd, &buffers_ready)) on_buffer_done();
    }
    stream_off();
    tjDestroy(jpeg);
    free(rgb);
    close(fd);
    say("stopped");
    return 0;
}
