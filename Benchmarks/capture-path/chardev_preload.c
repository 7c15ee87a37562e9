// LD_PRELOAD shim for Scripts/capture-path-bench.sh: GStreamer's v4l2src refuses a device that
// stat() does not call a character device, but the fake camera (Tests/V4L2Plugin) is a regular
// file. Path-based stat calls on /dev/video* report a character device (major 81, as V4L2's);
// fstat is left alone, because the libv4l2 plugin checks the descriptor for a regular file.
// FFmpeg's v4l2 input also needs VIDIOC_G_INPUT/S_INPUT/ENUMINPUT, which the fake does not
// answer: on /dev/video* descriptors they report the one input a UVC camera has ("Camera 1");
// every other ioctl goes on unchanged (to v4l2convert.so when it is preloaded after this).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/videodev2.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static int is_fake(const char *path) { return path && strncmp(path, "/dev/video", 10) == 0; }

static void as_chardev(const char *path, struct stat *st) {
    if (!is_fake(path) || !S_ISREG(st->st_mode)) return;
    st->st_mode = (st->st_mode & ~S_IFMT) | S_IFCHR;
    st->st_rdev = makedev(81, 0);
}

#define REAL(name, ...)                         \
    typedef __VA_ARGS__;                        \
    static name##_fn real_##name;               \
    if (!real_##name) real_##name = (name##_fn)dlsym(RTLD_NEXT, #name)

int stat(const char *path, struct stat *st) {
    REAL(stat, int (*stat_fn)(const char *, struct stat *));
    int result = real_stat(path, st);
    if (result == 0) as_chardev(path, st);
    return result;
}

int stat64(const char *path, struct stat64 *st) {
    REAL(stat64, int (*stat64_fn)(const char *, struct stat64 *));
    int result = real_stat64(path, st);
    if (result == 0) as_chardev(path, (struct stat *)st);
    return result;
}

int lstat(const char *path, struct stat *st) {
    REAL(lstat, int (*lstat_fn)(const char *, struct stat *));
    int result = real_lstat(path, st);
    if (result == 0) as_chardev(path, st);
    return result;
}

int fstatat(int dir, const char *path, struct stat *st, int flags) {
    REAL(fstatat, int (*fstatat_fn)(int, const char *, struct stat *, int));
    int result = real_fstatat(dir, path, st, flags);
    if (result == 0 && path[0]) as_chardev(path, st);
    return result;
}

int fstatat64(int dir, const char *path, struct stat64 *st, int flags) {
    REAL(fstatat64, int (*fstatat64_fn)(int, const char *, struct stat64 *, int));
    int result = real_fstatat64(dir, path, st, flags);
    if (result == 0 && path[0]) as_chardev(path, (struct stat *)st);
    return result;
}

static int fd_is_fake(int fd) {
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(link, target, sizeof target - 1);
    if (length <= 0) return 0;
    target[length] = 0;
    return is_fake(target);
}

int ioctl(int fd, unsigned long request, ...) {
    va_list arguments;
    va_start(arguments, request);
    void *argument = va_arg(arguments, void *);
    va_end(arguments);
    REAL(ioctl, int (*ioctl_fn)(int, unsigned long, ...));
    if ((request == VIDIOC_G_INPUT || request == VIDIOC_S_INPUT || request == VIDIOC_ENUMINPUT) && fd_is_fake(fd)) {
        if (request == VIDIOC_G_INPUT) {
            *(int *)argument = 0;
            return 0;
        }
        if (request == VIDIOC_S_INPUT) {
            if (*(int *)argument == 0) return 0;
            errno = EINVAL;
            return -1;
        }
        struct v4l2_input *input = argument;
        if (input->index != 0) {
            errno = EINVAL;
            return -1;
        }
        memset(input, 0, sizeof *input);
        snprintf((char *)input->name, sizeof input->name, "Camera 1");
        input->type = V4L2_INPUT_TYPE_CAMERA;
        return 0;
    }
    return real_ioctl(fd, request, argument);
}
