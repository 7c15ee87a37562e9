#include "CV4L2.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <libv4l2.h>
#include <sys/inotify.h>

// v4l2_open is open(2) then v4l2_fd_open; done here in two steps so that a busy device (open's
// EBUSY) and libv4l2's full device table (v4l2_fd_open's EBUSY: it keeps at most 16 devices a
// process) are told apart. The second is returned as EMFILE: the process, not the camera, is full.
int vf_v4l2_open(const char *path, int flags) {
    int fd = open(path, flags);
    if (fd < 0) return -1;
    if (v4l2_fd_open(fd, 0) == -1) {
        int error = errno == EBUSY ? EMFILE : errno;
        close(fd);
        errno = error;
        return -1;
    }
    return fd;
}
int vf_v4l2_close(int fd) { return v4l2_close(fd); }
int vf_v4l2_ioctl(int fd, unsigned long request, void *arg) { return v4l2_ioctl(fd, request, arg); }
void *vf_v4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset) {
    return v4l2_mmap(start, length, prot, flags, fd, offset);
}
int vf_v4l2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }

static __thread uint32_t vf_conversion_source;
static _Atomic int vf_log_destination = -1;

void vf_v4l2_set_log_destination(int fd) { vf_log_destination = fd; }

uint32_t vf_v4l2_take_conversion_source(void) {
    uint32_t source = vf_conversion_source;
    vf_conversion_source = 0;
    return source;
}

// libv4l2 writes each message with one fprintf and an fflush, so every write is whole lines.
static ssize_t vf_log_write(void *cookie, const char *buffer, size_t size) {
    (void)cookie;
    const char *line = buffer, *end = buffer + size;
    while (line < end) {
        const char *newline = memchr(line, '\n', (size_t)(end - line));
        size_t length = newline ? (size_t)(newline - line) + 1 : (size_t)(end - line);
        const char *source = memmem(line, length, "converting from: ", 17);
        if (source && source + 21 <= line + length)
            vf_conversion_source = (uint32_t)(unsigned char)source[17] | (uint32_t)(unsigned char)source[18] << 8 |
                                   (uint32_t)(unsigned char)source[19] << 16 | (uint32_t)(unsigned char)source[20] << 24;
        // Only what libv4l2 would print without a log file: errors and warnings (not its debug log),
        // minus the EAGAIN of a non-blocking DQBUF, which is no error.
        int shown = (length >= 14 && (!strncmp(line, "libv4l2: error", 14) || !strncmp(line, "libv4l2: warning", 16)));
        if (shown && memmem(line, length, "dequeuing buf: Resource temporarily unavailable", 47)) shown = 0;
        if (shown) {
            int destination = vf_log_destination;
            if (destination < 0) destination = STDERR_FILENO;
            size_t written = 0;
            while (written < length) {
                ssize_t n = write(destination, line + written, length - written);
                if (n <= 0) break;
                written += (size_t)n;
            }
        }
        line += length;
    }
    return (ssize_t)size;
}

void vf_v4l2_install_log_filter(void) {
    if (v4l2_log_file || getenv("LIBV4L2_LOG_FILENAME")) return;
    cookie_io_functions_t functions = {.write = vf_log_write};
    FILE *file = fopencookie(NULL, "w", functions);
    if (!file) return;
    setvbuf(file, NULL, _IOLBF, 0);
    v4l2_log_file = file;
}

int vf_inotify_init(void) { return inotify_init1(IN_NONBLOCK | IN_CLOEXEC); }
int vf_inotify_add_watch(int fd, const char *path) {
    return inotify_add_watch(fd, path, IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO);
}
