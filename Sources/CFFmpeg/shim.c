#include "CFFmpeg.h"
#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>

#if LIBAVFORMAT_VERSION_MAJOR >= 61
#define VF_WRITE_BUFFER const uint8_t *
#else
#define VF_WRITE_BUFFER uint8_t *
#endif

static int vf_file_sink_write(void *opaque, VF_WRITE_BUFFER buffer, int size) {
    VFFileSink *sink = opaque;
    if (sink->error) return AVERROR(sink->error);
    int allowed = size;
    int failure = 0;
    if (sink->limit > 0 && sink->position + size > sink->limit) {
        allowed = sink->position >= sink->limit ? 0 : (int)(sink->limit - sink->position);
        failure = ENOSPC;
    }
    int done = 0;
    while (done < allowed) {
        ssize_t n = pwrite(sink->fd, buffer + done, (size_t)(allowed - done), sink->position + done);
        if (n < 0) {
            if (errno == EINTR) continue;
            failure = errno;
            break;
        }
        done += (int)n;
    }
    sink->position += done;
    if (sink->position > sink->size) sink->size = sink->position;
    if (failure) {
        sink->error = failure;
        return AVERROR(failure);
    }
    return done;
}

static int64_t vf_file_sink_seek(void *opaque, int64_t offset, int whence) {
    VFFileSink *sink = opaque;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return sink->size;
    case SEEK_SET: break;
    case SEEK_CUR: offset += sink->position; break;
    case SEEK_END: offset += sink->size; break;
    default: return AVERROR(EINVAL);
    }
    if (offset < 0) return AVERROR(EINVAL);
    sink->position = offset;
    return offset;
}

AVIOContext *vf_file_sink_open(VFFileSink *sink, int buffer_size) {
    unsigned char *buffer = av_malloc((size_t)buffer_size);
    if (!buffer) return NULL;
    AVIOContext *context = avio_alloc_context(
        buffer, buffer_size, 1, sink, NULL, vf_file_sink_write, vf_file_sink_seek);
    if (!context) av_free(buffer);
    return context;
}

void vf_file_sink_close(AVIOContext **context) {
    if (!context || !*context) return;
    av_freep(&(*context)->buffer);
    avio_context_free(context);
}
