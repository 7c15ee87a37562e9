// The virtual camera node: see include/CPipeWireVirtualCamera.h.
#include "CPipeWireVirtualCamera.h"
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spa/buffer/meta.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>
#include <spa/utils/result.h>

#define VF_VCAM_MAX_FORMATS 8

struct vf_pw_vcam {
    struct pw_thread_loop *loop;
    struct pw_stream *stream;
    struct spa_hook listener;
    vf_pw_format offered[VF_VCAM_MAX_FORMATS];
    int offered_count;
    vf_pw_vcam_status status;
    /// A graph cycle this node started has not completed yet (the consumer is still at it), and
    /// since when (CLOCK_MONOTONIC ns).
    int cycle_pending;
    int64_t pending_since_ns;
};

/// How long a cycle may stay pending before the node stops waiting for its trigger_done (a lost
/// event must not stop publishing for good).
#define VF_VCAM_CYCLE_TIMEOUT_NS (500 * SPA_NSEC_PER_MSEC)

static int64_t vcam_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * SPA_NSEC_PER_SEC + now.tv_nsec;
}

/// Packed rows (the first plane's stride) and the whole frame's size of a raw layout.
static void vcam_geometry(uint32_t layout, uint32_t w, uint32_t h, int32_t *stride, uint32_t *size) {
    switch (layout) {
    case VF_PW_FORMAT_YUY2: *stride = (int32_t)(((w + 1) / 2) * 4); *size = (uint32_t)*stride * h; break;
    case VF_PW_FORMAT_NV12: *stride = (int32_t)w; *size = w * h + ((w + 1) / 2) * 2 * ((h + 1) / 2); break;
    case VF_PW_FORMAT_I420: *stride = (int32_t)w; *size = w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2); break;
    default: *stride = (int32_t)(w * 4); *size = w * h * 4; break;
    }
}

/// One EnumFormat param per offered format: raw, one size, one rate.
static int vcam_build_formats(
    struct spa_pod_builder *b, const vf_pw_format *formats, int count, const struct spa_pod **params) {
    int n = 0;
    for (int i = 0; i < count && n < VF_VCAM_MAX_FORMATS; i++) {
        const vf_pw_format *f = &formats[i];
        uint32_t id = vf_pw_to_spa_format(f->video_format);
        if (f->codec != VF_PW_CODEC_RAW || id == SPA_VIDEO_FORMAT_UNKNOWN) continue;
        struct spa_rectangle size = SPA_RECTANGLE(f->width, f->height);
        struct spa_fraction rate = SPA_FRACTION(30, 1);
        if (f->rate_count > 0 && f->rates[0].num > 0) rate = SPA_FRACTION(f->rates[0].num, f->rates[0].denom);
        struct spa_pod_frame frame;
        spa_pod_builder_push_object(b, &frame, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
        spa_pod_builder_add(
            b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video), SPA_FORMAT_mediaSubtype,
            SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw), SPA_FORMAT_VIDEO_format, SPA_POD_Id(id), SPA_FORMAT_VIDEO_size,
            SPA_POD_Rectangle(&size), SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&rate), 0);
        params[n++] = spa_pod_builder_pop(b, &frame);
    }
    return n;
}

static void on_vcam_state(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct vf_pw_vcam *v = data;
    (void)old;
    v->status.streaming = state == PW_STREAM_STATE_STREAMING;
    if (!v->status.streaming) v->cycle_pending = 0;
    if (state == PW_STREAM_STATE_ERROR) snprintf(v->status.error, sizeof v->status.error, "%s", error ? error : "");
}

/// A consumer agreed on a format (or, with `param` NULL, the format was cleared): remember it and
/// size the buffers for it.
static void on_vcam_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct vf_pw_vcam *v = data;
    if (id != SPA_PARAM_Format) return;
    if (param == NULL) {
        v->status.has_format = 0;
        return;
    }
    struct spa_video_info_raw info;
    spa_zero(info);
    if (spa_format_video_raw_parse(param, &info) < 0 || vf_pw_from_spa_format(info.format) == VF_PW_FORMAT_UNKNOWN) {
        v->status.has_format = 0;
        pw_stream_set_error(v->stream, -EINVAL, "unsupported format");
        return;
    }
    vf_pw_format f;
    memset(&f, 0, sizeof f);
    f.codec = VF_PW_CODEC_RAW;
    f.video_format = vf_pw_from_spa_format(info.format);
    f.width = info.size.width;
    f.height = info.size.height;
    f.rate_count = 1;
    f.rates[0] = (vf_pw_fraction){info.framerate.num, info.framerate.denom};
    v->status.format = f;
    vcam_geometry(f.video_format, f.width, f.height, &v->status.stride, &v->status.frame_size);
    v->status.has_format = 1;

    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[2];
    // Few buffers: the newest frame wins, so a consumer that holds them all makes frames drop
    // rather than wait.
    params[0] = spa_pod_builder_add_object(
        &b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers, SPA_PARAM_BUFFERS_buffers,
        SPA_POD_CHOICE_RANGE_Int(4, 2, 8), SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1), SPA_PARAM_BUFFERS_size,
        SPA_POD_Int(v->status.frame_size), SPA_PARAM_BUFFERS_stride, SPA_POD_Int(v->status.stride),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
    params[1] = spa_pod_builder_add_object(
        &b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta, SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    pw_stream_update_params(v->stream, params, 2);
}

/// The graph cycle the last frame started has completed: the consumer took it.
static void on_vcam_trigger_done(void *data) {
    struct vf_pw_vcam *v = data;
    v->cycle_pending = 0;
}

static const struct pw_stream_events vf_vcam_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_vcam_state,
    .param_changed = on_vcam_param_changed,
    .trigger_done = on_vcam_trigger_done,
};

vf_pw_vcam *vf_pw_vcam_open(
    vf_pw_connection *connection, const char *name, const char *description, const vf_pw_format *formats,
    int count, char *error, size_t error_size) {
    struct vf_pw_vcam *v = calloc(1, sizeof(*v));
    if (!v) return NULL;
    v->loop = vf_pw_connection_thread_loop(connection);
    v->offered_count = count < VF_VCAM_MAX_FORMATS ? count : VF_VCAM_MAX_FORMATS;
    memcpy(v->offered, formats, sizeof(vf_pw_format) * (size_t)v->offered_count);
    struct pw_properties *props = pw_properties_new(
        PW_KEY_MEDIA_CLASS, "Video/Source", PW_KEY_MEDIA_ROLE, "Camera", PW_KEY_MEDIA_TYPE, "Video",
        PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_NODE_NAME, name, PW_KEY_NODE_DESCRIPTION,
        description ? description : name, NULL);
    pw_thread_loop_lock(v->loop);
    v->stream = pw_stream_new(vf_pw_connection_core(connection), name, props);
    if (!v->stream) {
        int err = errno;
        pw_thread_loop_unlock(v->loop);
        if (error && error_size) snprintf(error, error_size, "cannot create a PipeWire stream: %s", strerror(err));
        free(v);
        return NULL;
    }
    pw_stream_add_listener(v->stream, &v->listener, &vf_vcam_events, v);
    uint8_t buffer[4096];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[VF_VCAM_MAX_FORMATS];
    int n = vcam_build_formats(&b, v->offered, v->offered_count, params);
    int res = n == 0 ? -EINVAL
                     : pw_stream_connect(
                           v->stream, PW_DIRECTION_OUTPUT, PW_ID_ANY,
                           PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_MAP_BUFFERS, params, (uint32_t)n);
    if (res < 0) {
        spa_hook_remove(&v->listener);
        pw_stream_destroy(v->stream);
        pw_thread_loop_unlock(v->loop);
        if (error && error_size) {
            snprintf(
                error, error_size, "cannot publish a PipeWire node: %s",
                n == 0 ? "no raw format to offer" : spa_strerror(res));
        }
        free(v);
        return NULL;
    }
    pw_thread_loop_unlock(v->loop);
    return v;
}

int vf_pw_vcam_update_formats(vf_pw_vcam *v, const vf_pw_format *formats, int count) {
    uint8_t buffer[4096];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[VF_VCAM_MAX_FORMATS];
    pw_thread_loop_lock(v->loop);
    v->offered_count = count < VF_VCAM_MAX_FORMATS ? count : VF_VCAM_MAX_FORMATS;
    memcpy(v->offered, formats, sizeof(vf_pw_format) * (size_t)v->offered_count);
    int n = vcam_build_formats(&b, v->offered, v->offered_count, params);
    int res = n == 0 ? -EINVAL : pw_stream_update_params(v->stream, params, (uint32_t)n);
    pw_thread_loop_unlock(v->loop);
    return res < 0 ? res : 0;
}

uint32_t vf_pw_vcam_serial(vf_pw_vcam *v) {
    pw_thread_loop_lock(v->loop);
    const struct pw_properties *props = pw_stream_get_properties(v->stream);
    const char *serial = props ? pw_properties_get(props, PW_KEY_OBJECT_SERIAL) : NULL;
    uint32_t value = serial ? (uint32_t)strtoul(serial, NULL, 10) : 0;
    pw_thread_loop_unlock(v->loop);
    return value;
}

void vf_pw_vcam_get_status(vf_pw_vcam *v, vf_pw_vcam_status *status) {
    pw_thread_loop_lock(v->loop);
    *status = v->status;
    pw_thread_loop_unlock(v->loop);
}

int vf_pw_vcam_publish(vf_pw_vcam *v, uint64_t seq, int64_t pts_ns, vf_pw_vcam_fill_fn fill, void *user) {
    pw_thread_loop_lock(v->loop);
    if (!v->status.streaming || !v->status.has_format) {
        pw_thread_loop_unlock(v->loop);
        return -1;
    }
    // While the consumer is still in the cycle the previous frame started, a new cycle would
    // overrun it and the graph would lose a frame nobody counts: this one is dropped instead.
    int64_t now = vcam_now_ns();
    int driving = pw_stream_is_driving(v->stream);
    if (driving && v->cycle_pending && now - v->pending_since_ns < VF_VCAM_CYCLE_TIMEOUT_NS) {
        v->status.busy++;
        pw_thread_loop_unlock(v->loop);
        return 0;
    }
    struct pw_buffer *b = pw_stream_dequeue_buffer(v->stream);
    if (!b) {
        v->status.busy++;
        pw_thread_loop_unlock(v->loop);
        return 0;
    }
    struct spa_data *d = &b->buffer->datas[0];
    uint32_t written = 0;
    if (b->buffer->n_datas > 0 && d->data != NULL && d->chunk != NULL && d->maxsize >= v->status.frame_size) {
        written = fill(user, d->data, d->maxsize, v->status.stride, &v->status.format);
    }
    if (b->buffer->n_datas > 0 && d->chunk != NULL) {
        d->chunk->offset = 0;
        d->chunk->size = written;
        d->chunk->stride = v->status.stride;
        d->chunk->flags = written == 0 ? SPA_CHUNK_FLAG_CORRUPTED : 0;
    }
    struct spa_meta_header *header = spa_buffer_find_meta_data(b->buffer, SPA_META_Header, sizeof(*header));
    if (header) {
        header->pts = pts_ns;
        header->flags = written == 0 ? SPA_META_HEADER_FLAG_CORRUPTED : 0;
        header->seq = seq;
        header->dts_offset = 0;
    }
    pw_stream_queue_buffer(v->stream, b);
    if (driving) {
        v->cycle_pending = 1;
        v->pending_since_ns = now;
    }
    pw_stream_trigger_process(v->stream);
    if (written > 0) v->status.queued++;
    pw_thread_loop_unlock(v->loop);
    return written > 0 ? 1 : -2;
}

void vf_pw_vcam_close(vf_pw_vcam *v) {
    if (!v) return;
    pw_thread_loop_lock(v->loop);
    spa_hook_remove(&v->listener);
    pw_stream_disconnect(v->stream);
    pw_stream_destroy(v->stream);
    pw_thread_loop_unlock(v->loop);
    free(v);
}
