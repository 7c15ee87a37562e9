// A userspace camera for Viewfinder's tests: a libv4l2 plugin (libv4l-dev's `libv4l-plugin.h`)
// that turns a regular file into a V4L2 capture device, so the production path (libv4l2 and
// libv4lconvert under `LibV4L2Interface`) runs end to end without V4L2 in the kernel.
//
// libv4l2 loads every plugin in its plugin directory on each v4l2_open() and gives the descriptor
// to the first plugin whose init() accepts it. This one accepts only regular files whose first line
// is "VIEWFINDER-FAKE-CAMERA 1", so real cameras are left alone. The file describes the camera
// (see Tests/V4L2Plugin/README.md for the format): identity, formats with discrete sizes and
// intervals, controls, and the frames to serve.
//
// Streaming: libv4l2 does mmap/munmap/close as raw syscalls on the descriptor, so REQBUFS puts a
// memfd on the same descriptor number (dup3) and QUERYBUF reports offsets into it; v4l2_mmap then
// maps real memory. A memfd always polls readable, so DQBUF paces itself: a non-blocking DQBUF that
// comes before the next frame is due answers EAGAIN once (as a driver answers the "drain until
// EAGAIN" probe after a frame) and, asked again, sleeps until the frame is due (the sleep a real
// poll() would have done). DQBUF copies the frame into the buffer with the camera's lock released,
// as a driver's DMA runs outside its queue's lock: a QBUF from another thread does not wait for it.
//
// Unplug: once the file is deleted (link count 0) every ioctl fails with ENODEV.
//
// State shared by all descriptors of one device file (control values, which descriptor owns the
// stream, as uvcvideo's "privileges") lives in a process-wide table; the plugin is linked with
// -z nodelete so that table survives libv4l2 unloading the plugin when the last descriptor closes.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libv4l-plugin.h>
#include <linux/usb/video.h>
#include <linux/uvcvideo.h>
#include <linux/videodev2.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

#define SIGNATURE "VIEWFINDER-FAKE-CAMERA 1"
#define MAX_BUFFERS 32
#define MAX_MENU 16
#define MAX_XU 16
#define MAX_XU_SIZE 64

struct interval { uint32_t numerator, denominator; };

struct frame_size {
    uint32_t width, height;
    struct interval *intervals;
    int interval_count;
};

struct frame {
    uint32_t width, height;
    const uint8_t *data;
    size_t length;
    uint8_t *owned;  // an encoded JPEG (freed with the model)
};

struct format {
    uint32_t fourcc;
    uint32_t flags;  // V4L2_FMT_FLAG_*
    char description[32];
    struct frame_size *sizes;
    int size_count;
    struct frame *frames;
    int frame_count;
};

struct control {
    uint32_t id, type;
    int32_t minimum, maximum, step, default_value;
    int32_t initial;
    uint32_t flags;
    char name[32];
    char *menu[MAX_MENU];
};

// An extension-unit control, answered through UVCIOC_CTRL_QUERY as uvcvideo answers it.
struct xu_control {
    uint8_t unit, selector, info;  // info: GET_INFO (bit 0 GET supported, bit 1 SET supported)
    char check;                    // how SET_CUR checks a value: 'b' each byte, 'l' little-endian number, 'n' not
    uint16_t size;
    uint8_t minimum[MAX_XU_SIZE], maximum[MAX_XU_SIZE], resolution[MAX_XU_SIZE], default_value[MAX_XU_SIZE],
        initial[MAX_XU_SIZE];
};

struct model {
    char card[32], driver[16], bus[32];
    int metadata;  // a UVC metadata node: not a capture device
    int paced;
    char stats[256];  // a file the stream's counters are written to (empty: none)
    struct format *formats;
    int format_count;
    struct control *controls;
    int control_count;
    struct xu_control *xu;
    int xu_count;
    void *map;
    size_t map_length;
};

// Shared per device file (dev, inode, change time): control values and the stream's owner.
struct shared {
    dev_t dev;
    ino_t ino;
    struct timespec ctime;
    int32_t values[64];
    uint8_t xu_values[MAX_XU][MAX_XU_SIZE];
    const void *owner;
    int users;
    struct shared *next;
};
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared *shared_list;

struct camera {
    int file;  // our own descriptor of the device file (unplug detection)
    int fd;    // the application's descriptor number
    struct model model;
    struct shared *shared;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    // Current format.
    int format_index;
    uint32_t width, height, bytesperline, sizeimage;
    struct interval interval;
    // Buffers.
    int buffer_count;
    size_t buffer_size;
    uint8_t *buffers;  // our mapping of the memfd
    int queued[MAX_BUFFERS];
    // When each buffer was queued (CLOCK_MONOTONIC ns): a frame due before the oldest queued
    // buffer's time found no buffer and is lost; one due after it was captured into it.
    int64_t queued_at[MAX_BUFFERS];
    int queue[MAX_BUFFERS];
    int queue_head, queue_length;
    struct v4l2_buffer done[MAX_BUFFERS];
    // Buffers a DQBUF is copying a frame into with the lock released (a driver's DMA does not hold
    // the queue's lock either, so a QBUF from another thread does not wait for a frame's copy).
    int filling[MAX_BUFFERS];
    int filling_count;
    uint32_t stream_generation;  // counts STREAMOFFs: a copy that spans one is not delivered
    int streaming;
    uint32_t sequence;
    struct timespec due;
    int last_was_eagain;
    // The "stats" file: frames delivered and lost since STREAMON, rewritten after every frame.
    int stats_fd;
    uint64_t delivered, lost;
};

// MARK: Parsing

static int parse_fourcc(const char *text, uint32_t *code) {
    if (strlen(text) != 4) return -1;
    *code = v4l2_fourcc(text[0], text[1], text[2], text[3]);
    return 0;
}

static char *rest_after(char *line, int fields) {
    char *p = line;
    for (int i = 0; i < fields; i++) {
        while (*p == ' ') p++;
        while (*p && *p != ' ') p++;
    }
    while (*p == ' ') p++;
    return p;
}

static void copy_text(char *to, size_t size, const char *from) {
    size_t length = strnlen(from, size - 1);
    memcpy(to, from, length);
    to[length] = 0;
}

static void free_model(struct model *m) {
    for (int i = 0; i < m->format_count; i++) {
        for (int j = 0; j < m->formats[i].size_count; j++) free(m->formats[i].sizes[j].intervals);
        free(m->formats[i].sizes);
        for (int j = 0; j < m->formats[i].frame_count; j++) tjFree(m->formats[i].frames[j].owned);
        free(m->formats[i].frames);
    }
    free(m->formats);
    for (int i = 0; i < m->control_count; i++)
        for (int j = 0; j < MAX_MENU; j++) free(m->controls[i].menu[j]);
    free(m->controls);
    free(m->xu);
    if (m->map) munmap(m->map, m->map_length);
    memset(m, 0, sizeof *m);
}

// Encodes an NV12 image (full range, as JFIF means it) as a baseline JPEG, 4:2:2 or 4:2:0 as UVC
// cameras send them, optionally without its Huffman tables (DHT segments), as many UVC cameras omit.
static uint8_t *encode_jpeg(const uint8_t *nv12, uint32_t width, uint32_t height, int subsampling, int quality,
    int strip_huffman, size_t *length) {
    int sub = subsampling == 420 ? TJSAMP_420 : TJSAMP_422;
    uint32_t chroma_width = (width + 1) / 2, chroma_height = sub == TJSAMP_420 ? (height + 1) / 2 : height;
    const uint8_t *y = nv12, *uv = nv12 + (size_t)width * height;
    uint8_t *u = malloc((size_t)chroma_width * chroma_height), *v = malloc((size_t)chroma_width * chroma_height);
    for (uint32_t row = 0; row < chroma_height; row++) {
        const uint8_t *source = uv + (size_t)(sub == TJSAMP_420 ? row : row / 2) * chroma_width * 2;
        for (uint32_t column = 0; column < chroma_width; column++) {
            u[row * chroma_width + column] = source[column * 2];
            v[row * chroma_width + column] = source[column * 2 + 1];
        }
    }
    const unsigned char *planes[3] = {y, u, v};
    int strides[3] = {(int)width, (int)chroma_width, (int)chroma_width};
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    tjhandle handle = tjInitCompress();
    int failed = !handle || tjCompressFromYUVPlanes(handle, planes, (int)width, strides, (int)height, sub, &jpeg,
                                &size, quality, TJFLAG_ACCURATEDCT) != 0;
    if (handle) tjDestroy(handle);
    free(u);
    free(v);
    if (failed) {
        tjFree(jpeg);
        return NULL;
    }
    if (strip_huffman) {
        size_t out = 2;
        for (size_t at = 2; at + 4 <= size;) {
            if (jpeg[at] != 0xFF) break;
            uint8_t marker = jpeg[at + 1];
            size_t segment = 2 + ((size_t)jpeg[at + 2] << 8 | jpeg[at + 3]);
            if (marker == 0xDA) {  // start of scan: the rest is entropy-coded data
                memmove(jpeg + out, jpeg + at, size - at);
                out += size - at;
                break;
            }
            if (marker != 0xC4) {
                memmove(jpeg + out, jpeg + at, segment);
                out += segment;
            }
            at += segment;
        }
        size = out;
    }
    *length = size;
    return jpeg;
}

// Parses a string of hexadecimal byte pairs ("00ff10") into `bytes`; returns how many, -1 if malformed.
static int parse_hex(const char *text, uint8_t *bytes, int capacity) {
    int count = 0;
    size_t length = strlen(text);
    if (length % 2 || length == 0) return -1;
    for (size_t i = 0; i < length; i += 2) {
        unsigned value;
        char pair[3] = {text[i], text[i + 1], 0};
        if (count == capacity || sscanf(pair, "%2x", &value) != 1) return -1;
        bytes[count++] = (uint8_t)value;
    }
    return count;
}

#define GROW(array, count) (array = realloc(array, sizeof *(array) * ((count) + 1)), &(array)[(count)++])

// Parses the text header up to the "data" line; frames point into the file's mapping.
static int parse_model(struct model *m, void *map, size_t length) {
    memset(m, 0, sizeof *m);
    m->map = map;
    m->map_length = length;
    m->paced = 1;
    copy_text(m->driver, sizeof m->driver, "viewfinder-fake");
    copy_text(m->card, sizeof m->card, "Viewfinder Fake Camera");
    const char *text = map;
    size_t offset = 0;
    const uint8_t *data = NULL;
    struct {
        uint32_t fourcc, width, height;
        size_t offset, length;
        int subsampling, quality, strip_huffman;  // subsampling 0: raw payload
    } *pending = NULL;
    int pending_count = 0;
    char line[1024];
    while (offset < length) {
        const char *end = memchr(text + offset, '\n', length - offset);
        size_t line_length = end ? (size_t)(end - (text + offset)) : length - offset;
        if (line_length >= sizeof line) goto fail;
        memcpy(line, text + offset, line_length);
        line[line_length] = 0;
        offset += line_length + (end ? 1 : 0);
        char word[64] = "";
        if (sscanf(line, "%63s", word) != 1 || word[0] == '#') continue;
        if (!strcmp(word, SIGNATURE) || !strcmp(word, "VIEWFINDER-FAKE-CAMERA")) continue;
        struct format *format = m->format_count ? &m->formats[m->format_count - 1] : NULL;
        if (!strcmp(word, "card")) {
            copy_text(m->card, sizeof m->card, rest_after(line, 1));
        } else if (!strcmp(word, "driver")) {
            copy_text(m->driver, sizeof m->driver, rest_after(line, 1));
        } else if (!strcmp(word, "bus")) {
            copy_text(m->bus, sizeof m->bus, rest_after(line, 1));
        } else if (!strcmp(word, "metadata")) {
            m->metadata = 1;
        } else if (!strcmp(word, "paced")) {
            m->paced = atoi(rest_after(line, 1));
        } else if (!strcmp(word, "stats")) {
            copy_text(m->stats, sizeof m->stats, rest_after(line, 1));
        } else if (!strcmp(word, "format")) {
            char code[8];
            unsigned flags;
            if (sscanf(line, "format %7s %u", code, &flags) != 2) goto fail;
            struct format *f = GROW(m->formats, m->format_count);
            memset(f, 0, sizeof *f);
            if (parse_fourcc(code, &f->fourcc)) goto fail;
            f->flags = flags;
            copy_text(f->description, sizeof f->description, rest_after(line, 3));
        } else if (!strcmp(word, "size")) {
            if (!format) goto fail;
            struct frame_size *s = GROW(format->sizes, format->size_count);
            memset(s, 0, sizeof *s);
            if (sscanf(line, "size %u %u", &s->width, &s->height) != 2) goto fail;
        } else if (!strcmp(word, "interval")) {
            if (!format || !format->size_count) goto fail;
            struct frame_size *s = &format->sizes[format->size_count - 1];
            struct interval *i = GROW(s->intervals, s->interval_count);
            if (sscanf(line, "interval %u %u", &i->numerator, &i->denominator) != 2 || !i->denominator) goto fail;
        } else if (!strcmp(word, "control")) {
            struct control *c = GROW(m->controls, m->control_count);
            memset(c, 0, sizeof *c);
            if (sscanf(line, "control %i %u %d %d %d %d %d %u", &c->id, &c->type, &c->minimum, &c->maximum,
                    &c->step, &c->default_value, &c->initial, &c->flags) != 8)
                goto fail;
            copy_text(c->name, sizeof c->name, rest_after(line, 9));
        } else if (!strcmp(word, "xu-control")) {
            unsigned unit, selector, info;
            char check[8];
            char hex[5][2 * MAX_XU_SIZE + 1];
            if (sscanf(line, "xu-control %u %u %u %7s %128s %128s %128s %128s %128s", &unit, &selector, &info, check,
                    hex[0], hex[1], hex[2], hex[3], hex[4]) != 9 || m->xu_count >= MAX_XU || unit < 1 || unit > 255 ||
                selector < 1 || selector > 255 || (strcmp(check, "bytes") && strcmp(check, "le") && strcmp(check, "none")))
                goto fail;
            struct xu_control *x = GROW(m->xu, m->xu_count);
            memset(x, 0, sizeof *x);
            x->unit = unit;
            x->selector = selector;
            x->info = info;
            x->check = check[0] == 'b' ? 'b' : check[0] == 'l' ? 'l' : 'n';
            uint8_t *fields[5] = {x->minimum, x->maximum, x->resolution, x->default_value, x->initial};
            for (int f = 0; f < 5; f++) {
                int n = parse_hex(hex[f], fields[f], MAX_XU_SIZE);
                if (n < 0 || (f > 0 && n != x->size)) goto fail;
                x->size = n;
            }
        } else if (!strcmp(word, "menu")) {
            uint32_t id;
            int index;
            if (sscanf(line, "menu %i %d", &id, &index) != 2 || index < 0 || index >= MAX_MENU) goto fail;
            for (int i = 0; i < m->control_count; i++)
                if (m->controls[i].id == id) m->controls[i].menu[index] = strdup(rest_after(line, 3));
        } else if (!strcmp(word, "frame")) {
            char code[8];
            unsigned width, height;
            unsigned long long at, size;
            if (sscanf(line, "frame %7s %u %u %llu %llu", code, &width, &height, &at, &size) != 5) goto fail;
            pending = realloc(pending, sizeof *pending * (pending_count + 1));
            if (parse_fourcc(code, &pending[pending_count].fourcc)) goto fail;
            pending[pending_count].width = width;
            pending[pending_count].height = height;
            pending[pending_count].offset = at;
            pending[pending_count].length = size;
            pending[pending_count].subsampling = 0;
            pending_count++;
        } else if (!strcmp(word, "frame-jpeg")) {
            // An NV12 (full range) payload the plugin encodes as an MJPG frame.
            unsigned width, height;
            unsigned long long at, size;
            int subsampling, quality, strip;
            if (sscanf(line, "frame-jpeg %u %u %llu %llu %d %d %d", &width, &height, &at, &size, &subsampling,
                    &quality, &strip) != 7 || size < (unsigned long long)width * height * 3 / 2)
                goto fail;
            pending = realloc(pending, sizeof *pending * (pending_count + 1));
            pending[pending_count].fourcc = V4L2_PIX_FMT_MJPEG;
            pending[pending_count].width = width;
            pending[pending_count].height = height;
            pending[pending_count].offset = at;
            pending[pending_count].length = size;
            pending[pending_count].subsampling = subsampling;
            pending[pending_count].quality = quality;
            pending[pending_count].strip_huffman = strip;
            pending_count++;
        } else if (!strcmp(word, "data")) {
            data = (const uint8_t *)text + offset;
            break;
        } else {
            goto fail;
        }
    }
    for (int p = 0; p < pending_count; p++) {
        if (!data || pending[p].offset + pending[p].length > length - (size_t)(data - (const uint8_t *)text))
            goto fail;
        for (int i = 0; i < m->format_count; i++) {
            if (m->formats[i].fourcc != pending[p].fourcc) continue;
            struct frame *f = GROW(m->formats[i].frames, m->formats[i].frame_count);
            f->width = pending[p].width;
            f->height = pending[p].height;
            f->data = data + pending[p].offset;
            f->length = pending[p].length;
            f->owned = NULL;
            if (pending[p].subsampling) {
                f->owned = encode_jpeg(f->data, f->width, f->height, pending[p].subsampling, pending[p].quality,
                    pending[p].strip_huffman, &f->length);
                if (!f->owned) goto fail;
                f->data = f->owned;
            }
        }
    }
    free(pending);
    return m->format_count > 0 ? 0 : -1;
fail:
    free(pending);
    m->map = NULL;  // the caller unmaps
    free_model(m);
    return -1;
}

// MARK: Helpers

static int is_gone(struct camera *c) {
    struct stat st;
    return fstat(c->file, &st) != 0 || st.st_nlink == 0;
}

static void now(struct timespec *t) { clock_gettime(CLOCK_MONOTONIC, t); }

static int64_t nanoseconds(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

static struct timespec from_nanoseconds(int64_t ns) {
    struct timespec t = {ns / 1000000000, ns % 1000000000};
    return t;
}

static int64_t interval_ns(struct interval i) {
    return i.denominator ? (int64_t)i.numerator * 1000000000 / i.denominator : 33333333;
}

static struct frame_size *find_size(struct format *f, uint32_t width, uint32_t height) {
    for (int i = 0; i < f->size_count; i++)
        if (f->sizes[i].width == width && f->sizes[i].height == height) return &f->sizes[i];
    return NULL;
}

static int format_index_of(struct model *m, uint32_t fourcc) {
    for (int i = 0; i < m->format_count; i++)
        if (m->formats[i].fourcc == fourcc) return i;
    return -1;
}

static void line_geometry(uint32_t fourcc, uint32_t width, uint32_t height, uint32_t *bytesperline, uint32_t *sizeimage,
    struct format *f) {
    switch (fourcc) {
    case V4L2_PIX_FMT_YUYV:
    case V4L2_PIX_FMT_UYVY:
        *bytesperline = width * 2;
        *sizeimage = width * height * 2;
        break;
    case V4L2_PIX_FMT_NV12:
    case V4L2_PIX_FMT_YUV420:
    case V4L2_PIX_FMT_YVU420:
        *bytesperline = width;
        *sizeimage = width * height * 3 / 2;
        break;
    case V4L2_PIX_FMT_RGB24:
    case V4L2_PIX_FMT_BGR24:
        *bytesperline = width * 3;
        *sizeimage = width * height * 3;
        break;
    default: {  // compressed: the largest frame of this size, at least what raw 4:2:2 needs
        *bytesperline = 0;
        size_t largest = (size_t)width * height * 2;
        for (int i = 0; f && i < f->frame_count; i++)
            if (f->frames[i].width == width && f->frames[i].height == height && f->frames[i].length > largest)
                largest = f->frames[i].length;
        *sizeimage = (uint32_t)largest;
    }
    }
}

// Nearest supported size of format `f` to width x height (smallest sum of differences).
static struct frame_size *nearest_size(struct format *f, uint32_t width, uint32_t height) {
    struct frame_size *best = NULL;
    int64_t best_distance = INT64_MAX;
    for (int i = 0; i < f->size_count; i++) {
        int64_t distance = llabs((int64_t)f->sizes[i].width - width) + llabs((int64_t)f->sizes[i].height - height);
        if (distance < best_distance) {
            best = &f->sizes[i];
            best_distance = distance;
        }
    }
    return best;
}

static struct interval nearest_interval(struct frame_size *s, struct interval wanted) {
    struct interval best = {1, 30};
    double best_distance = INFINITY;
    double target = wanted.denominator ? (double)wanted.numerator / wanted.denominator : 1.0 / 30;
    for (int i = 0; s && i < s->interval_count; i++) {
        double value = (double)s->intervals[i].numerator / s->intervals[i].denominator;
        if (fabs(value - target) < best_distance) {
            best = s->intervals[i];
            best_distance = fabs(value - target);
        }
    }
    return best;
}

static void fill_pix(struct camera *c, struct v4l2_pix_format *pix, int index, uint32_t width, uint32_t height) {
    struct format *f = &c->model.formats[index];
    memset(pix, 0, sizeof *pix);
    pix->width = width;
    pix->height = height;
    pix->pixelformat = f->fourcc;
    pix->field = V4L2_FIELD_NONE;
    line_geometry(f->fourcc, width, height, &pix->bytesperline, &pix->sizeimage, f);
    pix->colorspace = (f->flags & V4L2_FMT_FLAG_COMPRESSED) ? V4L2_COLORSPACE_JPEG : V4L2_COLORSPACE_SRGB;
}

static struct shared *acquire_shared(struct camera *c) {
    struct stat st;
    if (fstat(c->file, &st) != 0) return NULL;
    pthread_mutex_lock(&shared_lock);
    struct shared *s = shared_list;
    for (; s; s = s->next)
        if (s->dev == st.st_dev && s->ino == st.st_ino && s->ctime.tv_sec == st.st_ctim.tv_sec &&
            s->ctime.tv_nsec == st.st_ctim.tv_nsec)
            break;
    if (!s) {
        s = calloc(1, sizeof *s);
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        s->ctime = st.st_ctim;
        for (int i = 0; i < c->model.control_count && i < 64; i++) s->values[i] = c->model.controls[i].initial;
        for (int i = 0; i < c->model.xu_count; i++) memcpy(s->xu_values[i], c->model.xu[i].initial, c->model.xu[i].size);
        s->next = shared_list;
        shared_list = s;
    }
    s->users++;
    pthread_mutex_unlock(&shared_lock);
    return s;
}

// uvcvideo lets one descriptor at a time configure and stream ("privileges"): others get EBUSY.
static int take_ownership(struct camera *c) {
    pthread_mutex_lock(&shared_lock);
    int ok = !c->shared->owner || c->shared->owner == c;
    if (ok) c->shared->owner = c;
    pthread_mutex_unlock(&shared_lock);
    if (!ok) errno = EBUSY;
    return ok ? 0 : -1;
}

static void give_up_ownership(struct camera *c) {
    pthread_mutex_lock(&shared_lock);
    if (c->shared->owner == c) c->shared->owner = NULL;
    pthread_mutex_unlock(&shared_lock);
}

// MARK: Buffers

// Waits (with the lock held) until no DQBUF is copying into the buffers.
static void wait_for_fills(struct camera *c) {
    while (c->filling_count > 0) pthread_cond_wait(&c->changed, &c->lock);
}

static void free_buffers(struct camera *c) {
    wait_for_fills(c);
    if (c->buffers) munmap(c->buffers, c->buffer_size * c->buffer_count);
    c->buffers = NULL;
    c->buffer_count = 0;
    c->queue_length = 0;
    memset(c->queued, 0, sizeof c->queued);
}

// New buffers live in a fresh memfd put on the application's descriptor number, so libv4l2's raw
// mmap() of that descriptor maps them. Mappings of earlier buffers keep their memfd alive.
static int allocate_buffers(struct camera *c, int count) {
    long page = sysconf(_SC_PAGESIZE);
    size_t size = ((size_t)c->sizeimage + page - 1) / page * page;
    int memfd = memfd_create("viewfinder-fake-camera", MFD_CLOEXEC);
    if (memfd < 0) return -1;
    if (ftruncate(memfd, (off_t)(size * count)) != 0) {
        close(memfd);
        return -1;
    }
    int status = fcntl(c->fd, F_GETFL);
    int descriptor_flags = fcntl(c->fd, F_GETFD);
    if (status >= 0) fcntl(memfd, F_SETFL, status & O_NONBLOCK);
    if (dup3(memfd, c->fd, (descriptor_flags >= 0 && (descriptor_flags & FD_CLOEXEC)) ? O_CLOEXEC : 0) < 0) {
        close(memfd);
        return -1;
    }
    void *map = mmap(NULL, size * count, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    close(memfd);
    if (map == MAP_FAILED) return -1;
    c->buffers = map;
    c->buffer_size = size;
    c->buffer_count = count;
    return 0;
}

static void describe_buffer(struct camera *c, int index, struct v4l2_buffer *b) {
    uint32_t type = b->type;
    if (c->done[index].index == (uint32_t)index && c->done[index].bytesused) {
        *b = c->done[index];
    } else {
        memset(b, 0, sizeof *b);
        b->index = index;
    }
    b->type = type;
    b->memory = V4L2_MEMORY_MMAP;
    b->length = (uint32_t)c->buffer_size;
    b->m.offset = (uint32_t)(c->buffer_size * index);
    b->flags = (b->flags & ~(V4L2_BUF_FLAG_QUEUED | V4L2_BUF_FLAG_DONE)) |
               (c->queued[index] ? V4L2_BUF_FLAG_QUEUED : 0) | V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC;
}

// Describes the frame of sequence number c->sequence in c->done[index] and says which bytes go into
// the buffer (copied by the caller with the lock released).
static void fill_frame(struct camera *c, int index, const struct timespec *when, const uint8_t **from,
                       size_t *length_out) {
    struct format *f = &c->model.formats[c->format_index];
    struct frame *matching[256];
    int n = 0;
    for (int i = 0; i < f->frame_count && n < 256; i++)
        if (f->frames[i].width == c->width && f->frames[i].height == c->height) matching[n++] = &f->frames[i];
    struct v4l2_buffer *b = &c->done[index];
    memset(b, 0, sizeof *b);
    b->index = index;
    b->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b->memory = V4L2_MEMORY_MMAP;
    b->field = V4L2_FIELD_NONE;
    b->sequence = c->sequence;
    b->timestamp.tv_sec = when->tv_sec;
    b->timestamp.tv_usec = when->tv_nsec / 1000;
    b->flags = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_EOF;
    *from = NULL;
    *length_out = 0;
    if (n == 0) {
        b->flags |= V4L2_BUF_FLAG_ERROR;  // the file has no frames of this size
        b->bytesused = 0;
    } else {
        struct frame *frame = matching[c->sequence % n];
        size_t length = frame->length < c->buffer_size ? frame->length : c->buffer_size;
        *from = frame->data;
        *length_out = length;
        b->bytesused = (uint32_t)length;
    }
    b->length = (uint32_t)c->buffer_size;
    b->m.offset = (uint32_t)(c->buffer_size * index);
    c->sequence++;
}

// Waits for a change (a QBUF, STREAMOFF, a copy finishing) or the deadline, whichever comes first;
// callers look at the state again either way.
static void wait_until(struct camera *c, const struct timespec *deadline) {
    pthread_cond_timedwait(&c->changed, &c->lock, deadline);
}

// Rewrites the stats file (when the camera has one): one fixed-width line, "delivered lost
// sequence", so a reader sees the latest counters at offset 0 (read it twice: a read racing the
// write may see a mix).
static void write_stats(struct camera *c) {
    if (c->stats_fd < 0) return;
    char line[64];
    int length = snprintf(line, sizeof line, "%020llu %020llu %020llu\n", (unsigned long long)c->delivered,
                          (unsigned long long)c->lost, (unsigned long long)c->sequence);
    if (length > 0 && pwrite(c->stats_fd, line, (size_t)length, 0) < 0) {
        // Counters are for benchmarks; a failed write only leaves the previous line.
    }
}

static int dequeue(struct camera *c, struct v4l2_buffer *b) {
    if (!c->streaming) {
        errno = EINVAL;
        return -1;
    }
    int nonblocking = fcntl(c->fd, F_GETFL) & O_NONBLOCK;
    for (;;) {
        if (is_gone(c)) {
            errno = ENODEV;
            return -1;
        }
        if (!c->streaming) {
            errno = EINVAL;
            return -1;
        }
        struct timespec t;
        now(&t);
        if (c->queue_length == 0) {
            // A driver's poll() would block until a buffer comes back: wait briefly for a QBUF.
            if (nonblocking && !c->last_was_eagain) {
                c->last_was_eagain = 1;
                errno = EAGAIN;
                return -1;
            }
            struct timespec deadline = from_nanoseconds(nanoseconds(&t) + 20000000);
            wait_until(c, &deadline);
            if (c->queue_length == 0 && nonblocking) {
                errno = EAGAIN;
                return -1;
            }
            continue;
        }
        if (c->model.paced && nanoseconds(&t) < nanoseconds(&c->due)) {
            if (nonblocking && !c->last_was_eagain) {
                c->last_was_eagain = 1;
                errno = EAGAIN;
                return -1;
            }
            // Sleep in slices so an unplug or STREAMOFF is noticed.
            int64_t until = nanoseconds(&c->due);
            int64_t slice = nanoseconds(&t) + 50000000;
            struct timespec deadline = from_nanoseconds(until < slice ? until : slice);
            wait_until(c, &deadline);
            continue;
        }
        if (c->model.paced) {
            // Frames due while no buffer was queued are lost, as a driver loses them: they show as
            // a gap in the sequence numbers. A frame due while a buffer was queued was captured
            // into it, however late the reader dequeues it (then its timestamp is its due time):
            // the buffer at the head of the queue is the oldest queued, so every frame due before
            // it was queued is lost, and the first due after it is the one it holds.
            int64_t interval = interval_ns(c->interval);
            int64_t queued_at = c->queued_at[c->queue[c->queue_head]];
            int64_t gap = queued_at - nanoseconds(&c->due);
            if (interval > 0 && gap > 0) {
                int64_t missed = (gap + interval - 1) / interval;
                c->sequence += (uint32_t)missed;
                c->lost += (uint64_t)missed;
                c->due = from_nanoseconds(nanoseconds(&c->due) + missed * interval);
                // That frame may not be due yet: wait for it.
                if (nanoseconds(&t) < nanoseconds(&c->due)) continue;
            }
        }
        int index = c->queue[c->queue_head];
        c->queue_head = (c->queue_head + 1) % MAX_BUFFERS;
        c->queue_length--;
        c->queued[index] = 0;
        struct timespec when = c->model.paced ? c->due : t;
        const uint8_t *from;
        size_t length;
        fill_frame(c, index, &when, &from, &length);
        // Paced, the next frame is due one interval later even when this one was dequeued late: it
        // may already have been captured into the next queued buffer.
        int64_t next = nanoseconds(&c->due) + interval_ns(c->interval);
        if (!c->model.paced) next = nanoseconds(&t) + interval_ns(c->interval);
        c->due = from_nanoseconds(next);
        c->last_was_eagain = 0;
        if (length > 0) {
            // The copy runs unlocked; the buffer is neither queued nor the application's meanwhile
            // (QBUF refuses it), and REQBUFS and close wait for it (free_buffers).
            uint32_t generation = c->stream_generation;
            c->filling[index] = 1;
            c->filling_count++;
            pthread_mutex_unlock(&c->lock);
            memcpy(c->buffers + c->buffer_size * index, from, length);
            pthread_mutex_lock(&c->lock);
            c->filling[index] = 0;
            c->filling_count--;
            pthread_cond_broadcast(&c->changed);
            if (generation != c->stream_generation) {
                errno = EINVAL;  // STREAMOFF came during the copy: the buffer is the application's
                return -1;
            }
        }
        uint32_t type = b->type;
        *b = c->done[index];
        b->type = type;
        c->delivered++;
        write_stats(c);
        return 0;
    }
}

// MARK: ioctls

static int find_control(struct camera *c, uint32_t id) {
    for (int i = 0; i < c->model.control_count; i++)
        if (c->model.controls[i].id == id) return i;
    return -1;
}

// Compares two little-endian unsigned numbers of `size` bytes: <0, 0 or >0.
static int compare_le(const uint8_t *a, const uint8_t *b, int size) {
    for (int i = size - 1; i >= 0; i--)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

// UVCIOC_CTRL_QUERY as uvcvideo answers it (uvc_xu_ctrl_query): ENOENT for a unit or selector the
// camera does not have, EINVAL for an unknown request, ENOBUFS for a size other than the request's
// (2 for GET_LEN, 1 for GET_INFO, the control's size otherwise), EBADRQC for GET_CUR or SET_CUR on a
// control whose GET_INFO does not offer it. SET_CUR with a value outside GET_MIN…GET_MAX (byte by byte,
// or as little-endian numbers, as the device file says) fails with ERANGE, as uvcvideo reports a camera
// that stalls with "out of range" (request error 4).
static int extension_unit_query(struct camera *c, struct uvc_xu_control_query *q) {
    struct model *m = &c->model;
    int i = -1;
    for (int k = 0; k < m->xu_count; k++)
        if (m->xu[k].unit == q->unit && m->xu[k].selector == q->selector) i = k;
    if (i < 0) {
        errno = ENOENT;
        return -1;
    }
    struct xu_control *x = &m->xu[i];
    uint16_t size = x->size;
    uint8_t needs = 0;
    const uint8_t *answer = NULL;
    switch (q->query) {
    case UVC_GET_CUR: needs = UVC_CONTROL_CAP_GET; break;
    case UVC_SET_CUR: needs = UVC_CONTROL_CAP_SET; break;
    case UVC_GET_MIN: answer = x->minimum; break;
    case UVC_GET_MAX: answer = x->maximum; break;
    case UVC_GET_RES: answer = x->resolution; break;
    case UVC_GET_DEF: answer = x->default_value; break;
    case UVC_GET_LEN: size = 2; break;
    case UVC_GET_INFO: size = 1; break;
    default:
        errno = EINVAL;
        return -1;
    }
    if (q->size != size) {
        errno = ENOBUFS;
        return -1;
    }
    if (needs && !(x->info & needs)) {
        errno = EBADRQC;
        return -1;
    }
    if (!q->data) {
        errno = EFAULT;
        return -1;
    }
    if (q->query == UVC_GET_LEN) {
        q->data[0] = (uint8_t)(x->size & 0xff);
        q->data[1] = (uint8_t)(x->size >> 8);
        return 0;
    }
    if (q->query == UVC_GET_INFO) {
        q->data[0] = x->info;
        return 0;
    }
    if (answer) {
        memcpy(q->data, answer, size);
        return 0;
    }
    pthread_mutex_lock(&shared_lock);
    int result = 0;
    if (q->query == UVC_GET_CUR) {
        memcpy(q->data, c->shared->xu_values[i], size);
    } else {
        if (x->check == 'b') {
            for (int b = 0; b < size; b++)
                if (q->data[b] < x->minimum[b] || q->data[b] > x->maximum[b]) result = -1;
        } else if (x->check == 'l') {
            if (compare_le(q->data, x->minimum, size) < 0 || compare_le(q->data, x->maximum, size) > 0) result = -1;
        }
        if (result == 0) memcpy(c->shared->xu_values[i], q->data, size);
    }
    pthread_mutex_unlock(&shared_lock);
    if (result) errno = ERANGE;
    return result;
}

static int handle(struct camera *c, unsigned long request, void *arg) {
    struct model *m = &c->model;
    switch (request) {
    case VIDIOC_QUERYCAP: {
        struct v4l2_capability *cap = arg;
        memset(cap, 0, sizeof *cap);
        copy_text((char *)cap->driver, sizeof cap->driver, m->driver);
        copy_text((char *)cap->card, sizeof cap->card, m->card);
        copy_text((char *)cap->bus_info, sizeof cap->bus_info, m->bus);
        cap->version = 0x060100;
        cap->device_caps = m->metadata ? (V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING)
                                       : (V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING);
        cap->capabilities = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING |
                            V4L2_CAP_DEVICE_CAPS;
        return 0;
    }
    case VIDIOC_ENUM_FMT: {
        struct v4l2_fmtdesc *d = arg;
        if (d->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || m->metadata || d->index >= (uint32_t)m->format_count) break;
        struct format *f = &m->formats[d->index];
        uint32_t index = d->index, type = d->type;
        memset(d, 0, sizeof *d);
        d->index = index;
        d->type = type;
        d->flags = f->flags;
        d->pixelformat = f->fourcc;
        copy_text((char *)d->description, sizeof d->description, f->description);
        return 0;
    }
    case VIDIOC_ENUM_FRAMESIZES: {
        struct v4l2_frmsizeenum *s = arg;
        int i = format_index_of(m, s->pixel_format);
        if (i < 0 || s->index >= (uint32_t)m->formats[i].size_count) break;
        s->type = V4L2_FRMSIZE_TYPE_DISCRETE;
        s->discrete.width = m->formats[i].sizes[s->index].width;
        s->discrete.height = m->formats[i].sizes[s->index].height;
        return 0;
    }
    case VIDIOC_ENUM_FRAMEINTERVALS: {
        struct v4l2_frmivalenum *v = arg;
        int i = format_index_of(m, v->pixel_format);
        struct frame_size *s = i < 0 ? NULL : find_size(&m->formats[i], v->width, v->height);
        if (!s || v->index >= (uint32_t)s->interval_count) break;
        v->type = V4L2_FRMIVAL_TYPE_DISCRETE;
        v->discrete.numerator = s->intervals[v->index].numerator;
        v->discrete.denominator = s->intervals[v->index].denominator;
        return 0;
    }
    case VIDIOC_G_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) break;
        fill_pix(c, &f->fmt.pix, c->format_index, c->width, c->height);
        return 0;
    }
    case VIDIOC_TRY_FMT:
    case VIDIOC_S_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) break;
        int index = format_index_of(m, f->fmt.pix.pixelformat);
        if (index < 0) index = 0;
        struct frame_size *s = nearest_size(&m->formats[index], f->fmt.pix.width, f->fmt.pix.height);
        if (!s) break;
        fill_pix(c, &f->fmt.pix, index, s->width, s->height);
        if (request == VIDIOC_TRY_FMT) return 0;
        if (c->buffer_count || c->streaming) {
            errno = EBUSY;
            return -1;
        }
        if (take_ownership(c)) return -1;
        c->format_index = index;
        c->width = s->width;
        c->height = s->height;
        c->bytesperline = f->fmt.pix.bytesperline;
        c->sizeimage = f->fmt.pix.sizeimage;
        c->interval = nearest_interval(s, c->interval);
        return 0;
    }
    case VIDIOC_G_PARM:
    case VIDIOC_S_PARM: {
        struct v4l2_streamparm *p = arg;
        if (p->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) break;
        if (request == VIDIOC_S_PARM) {
            if (c->streaming) {
                errno = EBUSY;
                return -1;
            }
            if (take_ownership(c)) return -1;
            struct frame_size *s = find_size(&m->formats[c->format_index], c->width, c->height);
            struct interval wanted = {p->parm.capture.timeperframe.numerator, p->parm.capture.timeperframe.denominator};
            c->interval = nearest_interval(s, wanted);
        }
        memset(&p->parm, 0, sizeof p->parm);
        p->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
        p->parm.capture.timeperframe.numerator = c->interval.numerator;
        p->parm.capture.timeperframe.denominator = c->interval.denominator;
        p->parm.capture.readbuffers = 0;
        return 0;
    }
    case VIDIOC_REQBUFS: {
        struct v4l2_requestbuffers *r = arg;
        if (r->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || r->memory != V4L2_MEMORY_MMAP) break;
        if (c->streaming) {
            errno = EBUSY;
            return -1;
        }
        if (r->count == 0) {
            free_buffers(c);
            give_up_ownership(c);
            r->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP;
            return 0;
        }
        if (take_ownership(c)) return -1;
        free_buffers(c);
        int count = r->count > MAX_BUFFERS ? MAX_BUFFERS : (int)r->count;
        if (allocate_buffers(c, count)) return -1;
        memset(c->done, 0, sizeof c->done);
        r->count = count;
        r->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP;
        return 0;
    }
    case VIDIOC_QUERYBUF: {
        struct v4l2_buffer *b = arg;
        if (b->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || b->index >= (uint32_t)c->buffer_count) break;
        describe_buffer(c, b->index, b);
        return 0;
    }
    case VIDIOC_QBUF: {
        struct v4l2_buffer *b = arg;
        if (b->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || b->memory != V4L2_MEMORY_MMAP ||
            b->index >= (uint32_t)c->buffer_count || c->queued[b->index] || c->filling[b->index])
            break;
        c->queued[b->index] = 1;
        {
            struct timespec t;
            now(&t);
            c->queued_at[b->index] = nanoseconds(&t);
        }
        c->queue[(c->queue_head + c->queue_length) % MAX_BUFFERS] = b->index;
        c->queue_length++;
        pthread_cond_broadcast(&c->changed);
        describe_buffer(c, b->index, b);
        return 0;
    }
    case VIDIOC_DQBUF:
        return dequeue(c, arg);
    case VIDIOC_STREAMON: {
        if (*(int *)arg != V4L2_BUF_TYPE_VIDEO_CAPTURE || !c->buffer_count) break;
        if (take_ownership(c)) return -1;
        if (!c->streaming) {
            c->streaming = 1;
            c->sequence = 0;
            c->last_was_eagain = 0;
            struct timespec t;
            now(&t);
            c->due = from_nanoseconds(nanoseconds(&t) + interval_ns(c->interval));
            c->delivered = 0;
            c->lost = 0;
            if (c->stats_fd < 0 && m->stats[0])
                c->stats_fd = open(m->stats, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            write_stats(c);
        }
        return 0;
    }
    case VIDIOC_STREAMOFF: {
        if (*(int *)arg != V4L2_BUF_TYPE_VIDEO_CAPTURE) break;
        c->streaming = 0;
        c->stream_generation++;
        c->queue_length = 0;
        memset(c->queued, 0, sizeof c->queued);
        pthread_cond_broadcast(&c->changed);
        return 0;
    }
    case VIDIOC_QUERYCTRL: {
        struct v4l2_queryctrl *q = arg;
        int i = -1;
        if (q->id & V4L2_CTRL_FLAG_NEXT_CTRL) {
            uint32_t after = q->id & ~(V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);
            for (int k = 0; k < m->control_count; k++)
                if (m->controls[k].id > after && (i < 0 || m->controls[k].id < m->controls[i].id)) i = k;
        } else {
            i = find_control(c, q->id);
        }
        if (i < 0) break;
        struct control *k = &m->controls[i];
        memset(q, 0, sizeof *q);
        q->id = k->id;
        q->type = k->type;
        copy_text((char *)q->name, sizeof q->name, k->name);
        q->minimum = k->minimum;
        q->maximum = k->maximum;
        q->step = k->step;
        q->default_value = k->default_value;
        q->flags = k->flags;
        return 0;
    }
    case VIDIOC_QUERYMENU: {
        struct v4l2_querymenu *q = arg;
        int i = find_control(c, q->id);
        if (i < 0 || q->index >= MAX_MENU || !m->controls[i].menu[q->index]) break;
        copy_text((char *)q->name, sizeof q->name, m->controls[i].menu[q->index]);
        return 0;
    }
    case VIDIOC_G_CTRL:
    case VIDIOC_S_CTRL: {
        struct v4l2_control *v = arg;
        int i = find_control(c, v->id);
        if (i < 0 || i >= 64) break;
        struct control *k = &m->controls[i];
        if (request == VIDIOC_G_CTRL) {
            if (k->flags & V4L2_CTRL_FLAG_WRITE_ONLY) {
                errno = EACCES;
                return -1;
            }
            pthread_mutex_lock(&shared_lock);
            v->value = c->shared->values[i];
            pthread_mutex_unlock(&shared_lock);
            return 0;
        }
        if (k->flags & (V4L2_CTRL_FLAG_READ_ONLY | V4L2_CTRL_FLAG_INACTIVE)) {
            errno = EACCES;
            return -1;
        }
        if (v->value < k->minimum || v->value > k->maximum) {
            errno = ERANGE;
            return -1;
        }
        if (k->type == V4L2_CTRL_TYPE_MENU && (v->value >= MAX_MENU || !k->menu[v->value])) break;
        int32_t value = v->value;
        if (k->step > 1) value = k->minimum + (value - k->minimum) / k->step * k->step;
        pthread_mutex_lock(&shared_lock);
        c->shared->values[i] = value;
        pthread_mutex_unlock(&shared_lock);
        v->value = value;
        return 0;
    }
    case UVCIOC_CTRL_QUERY:
        return extension_unit_query(c, arg);
    default:
        errno = ENOTTY;
        return -1;
    }
    errno = EINVAL;
    return -1;
}

// MARK: Plugin entry points

static void *plugin_init(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)strlen(SIGNATURE)) return NULL;
    char first[sizeof SIGNATURE + 1] = "";
    if (pread(fd, first, sizeof first - 1, 0) != (ssize_t)(sizeof first - 1)) return NULL;
    if (memcmp(first, SIGNATURE, strlen(SIGNATURE)) != 0 || (first[strlen(SIGNATURE)] != '\n'))
        return NULL;
    void *map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) return NULL;
    struct camera *c = calloc(1, sizeof *c);
    if (!c || parse_model(&c->model, map, st.st_size) != 0) {
        fprintf(stderr, "viewfinder-fake-camera: cannot read the camera description (fd %d)\n", fd);
        munmap(map, st.st_size);
        free(c);
        return NULL;
    }
    c->file = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (c->file < 0) {
        free_model(&c->model);
        free(c);
        return NULL;
    }
    c->fd = fd;
    c->stats_fd = -1;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&c->changed, &attributes);
    pthread_condattr_destroy(&attributes);
    c->shared = acquire_shared(c);
    struct format *f = &c->model.formats[0];
    if (f->size_count) {
        c->width = f->sizes[0].width;
        c->height = f->sizes[0].height;
        c->interval = nearest_interval(&f->sizes[0], (struct interval){1, 30});
    }
    line_geometry(f->fourcc, c->width, c->height, &c->bytesperline, &c->sizeimage, f);
    return c;
}

static void plugin_close(void *priv) {
    struct camera *c = priv;
    if (!c) return;
    if (c->shared) {
        give_up_ownership(c);
        pthread_mutex_lock(&shared_lock);
        c->shared->users--;
        pthread_mutex_unlock(&shared_lock);
    }
    pthread_mutex_lock(&c->lock);
    free_buffers(c);
    pthread_mutex_unlock(&c->lock);
    close(c->file);
    if (c->stats_fd >= 0) close(c->stats_fd);
    free_model(&c->model);
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static int plugin_ioctl(void *priv, int fd, unsigned long request, void *arg) {
    struct camera *c = priv;
    (void)fd;
    pthread_mutex_lock(&c->lock);
    int result;
    if (is_gone(c)) {
        errno = ENODEV;
        result = -1;
    } else {
        result = handle(c, request, arg);
    }
    int saved = errno;
    pthread_mutex_unlock(&c->lock);
    errno = saved;
    return result;
}

static ssize_t plugin_read(void *priv, int fd, void *buffer, size_t n) {
    (void)priv;
    (void)fd;
    (void)buffer;
    (void)n;
    errno = EINVAL;  // no read() I/O: the camera streams only
    return -1;
}

__attribute__((visibility("default"))) const struct libv4l_dev_ops libv4l2_plugin = {
    .init = plugin_init,
    .close = plugin_close,
    .ioctl = plugin_ioctl,
    .read = plugin_read,
};
