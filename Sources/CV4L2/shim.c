#include "CV4L2.h"
#include <fcntl.h>
#include <libv4l2.h>
#include <sys/inotify.h>

int vf_v4l2_open(const char *path, int flags) { return v4l2_open(path, flags, 0); }
int vf_v4l2_close(int fd) { return v4l2_close(fd); }
int vf_v4l2_ioctl(int fd, unsigned long request, void *arg) { return v4l2_ioctl(fd, request, arg); }
void *vf_v4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset) {
    return v4l2_mmap(start, length, prot, flags, fd, offset);
}
int vf_v4l2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }

int vf_inotify_init(void) { return inotify_init1(IN_NONBLOCK | IN_CLOEXEC); }
int vf_inotify_add_watch(int fd, const char *path) {
    return inotify_add_watch(fd, path, IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO);
}
