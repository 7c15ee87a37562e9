// The fake camera's own cost for Scripts/capture-path-bench.sh: streams N frames of WxH YUYV (or the
// given FourCC, e.g. MJPG) from a device through libv4l2 (v4l2_open, MMAP buffers, DQBUF/QBUF) and
// touches nothing else, so its CPU per frame is the camera's (the fake copies each frame into the
// dequeued buffer) plus libv4l2's.
//   stream_floor DEVICE WIDTH HEIGHT FRAMES [FOURCC]
#include <errno.h>
#include <fcntl.h>
#include <libv4l2.h>
#include <linux/videodev2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int xioctl(int fd, unsigned long request, void *argument) {
    int result;
    do result = v4l2_ioctl(fd, request, argument);
    while (result < 0 && errno == EINTR);
    return result;
}

int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && strlen(argv[5]) == 4)) {
        fprintf(stderr, "usage: %s DEVICE WIDTH HEIGHT FRAMES [FOURCC]\n", argv[0]);
        return 2;
    }
    int fd = v4l2_open(argv[1], O_RDWR);
    if (fd < 0) { perror("v4l2_open"); return 1; }
    struct v4l2_format format = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE};
    format.fmt.pix.width = (unsigned)atoi(argv[2]);
    format.fmt.pix.height = (unsigned)atoi(argv[3]);
    format.fmt.pix.pixelformat = argc == 6 ? v4l2_fourcc(argv[5][0], argv[5][1], argv[5][2], argv[5][3]) : V4L2_PIX_FMT_YUYV;
    format.fmt.pix.field = V4L2_FIELD_NONE;
    uint32_t wanted = format.fmt.pix.pixelformat;
    if (xioctl(fd, VIDIOC_S_FMT, &format) < 0) { perror("S_FMT"); return 1; }
    if (format.fmt.pix.pixelformat != wanted) { fprintf(stderr, "S_FMT: format not offered\n"); return 1; }
    struct v4l2_requestbuffers request = {.count = 4, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP};
    if (xioctl(fd, VIDIOC_REQBUFS, &request) < 0) { perror("REQBUFS"); return 1; }
    for (unsigned i = 0; i < request.count; i++) {
        struct v4l2_buffer buffer = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP, .index = i};
        if (xioctl(fd, VIDIOC_QUERYBUF, &buffer) < 0) { perror("QUERYBUF"); return 1; }
        if (v4l2_mmap(NULL, buffer.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, buffer.m.offset) == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        if (xioctl(fd, VIDIOC_QBUF, &buffer) < 0) { perror("QBUF"); return 1; }
    }
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(fd, VIDIOC_STREAMON, &type) < 0) { perror("STREAMON"); return 1; }
    long frames = atol(argv[4]);
    for (long n = 0; n < frames; n++) {
        struct v4l2_buffer buffer = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP};
        if (xioctl(fd, VIDIOC_DQBUF, &buffer) < 0) { perror("DQBUF"); return 1; }
        if (xioctl(fd, VIDIOC_QBUF, &buffer) < 0) { perror("QBUF"); return 1; }
    }
    xioctl(fd, VIDIOC_STREAMOFF, &type);
    v4l2_close(fd);
    return 0;
}
