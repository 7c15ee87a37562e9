// PipeWire shim: see include/CPipeWire.h.
#include "CPipeWire.h"
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pipewire/pipewire.h>
#include <pipewire/extensions/metadata.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/video/type-info.h>
#include <spa/pod/builder.h>
#include <spa/pod/iter.h>
#include <spa/utils/result.h>
#include <spa/buffer/meta.h>
#include <spa/param/props.h>

static void vf_pw_set_error(char *error, size_t error_size, const char *format, const char *detail) {
    if (error && error_size > 0) snprintf(error, error_size, format, detail ? detail : "");
}

static void vf_pw_init_once(void) {
    static int done = 0;
    if (!__atomic_exchange_n(&done, 1, __ATOMIC_SEQ_CST)) pw_init(NULL, NULL);
}

const char *vf_pw_library_version(void) {
    vf_pw_init_once();
    return pw_get_library_version();
}

// MARK: - Formats

uint32_t vf_pw_from_spa_format(uint32_t id) {
    switch (id) {
    case SPA_VIDEO_FORMAT_YUY2: return VF_PW_FORMAT_YUY2;
    case SPA_VIDEO_FORMAT_NV12: return VF_PW_FORMAT_NV12;
    case SPA_VIDEO_FORMAT_I420: return VF_PW_FORMAT_I420;
    case SPA_VIDEO_FORMAT_BGRx: return VF_PW_FORMAT_BGRX;
    case SPA_VIDEO_FORMAT_RGBx: return VF_PW_FORMAT_RGBX;
    case SPA_VIDEO_FORMAT_BGRA: return VF_PW_FORMAT_BGRA;
    default: return VF_PW_FORMAT_UNKNOWN;
    }
}

uint32_t vf_pw_to_spa_format(uint32_t format) {
    switch (format) {
    case VF_PW_FORMAT_YUY2: return SPA_VIDEO_FORMAT_YUY2;
    case VF_PW_FORMAT_NV12: return SPA_VIDEO_FORMAT_NV12;
    case VF_PW_FORMAT_I420: return SPA_VIDEO_FORMAT_I420;
    case VF_PW_FORMAT_BGRX: return SPA_VIDEO_FORMAT_BGRx;
    case VF_PW_FORMAT_RGBX: return SPA_VIDEO_FORMAT_RGBx;
    case VF_PW_FORMAT_BGRA: return SPA_VIDEO_FORMAT_BGRA;
    default: return SPA_VIDEO_FORMAT_UNKNOWN;
    }
}

/// Builds an EnumFormat for exactly `format` (one size, its first rate or the range's maximum).
static const struct spa_pod *vf_pw_build_format(struct spa_pod_builder *b, const vf_pw_format *format) {
    struct spa_rectangle size = SPA_RECTANGLE(format->width, format->height);
    struct spa_fraction rate = SPA_FRACTION(0, 1);
    if (format->rate_is_range) {
        rate = SPA_FRACTION(format->rate_max.num, format->rate_max.denom);
    } else if (format->rate_count > 0) {
        rate = SPA_FRACTION(format->rates[0].num, format->rates[0].denom);
    }
    struct spa_pod_frame f;
    spa_pod_builder_push_object(b, &f, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
    spa_pod_builder_add(b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video), 0);
    if (format->codec == VF_PW_CODEC_MJPEG) {
        spa_pod_builder_add(b, SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_mjpg), 0);
    } else {
        spa_pod_builder_add(
            b, SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw), SPA_FORMAT_VIDEO_format,
            SPA_POD_Id(vf_pw_to_spa_format(format->video_format)), 0);
    }
    spa_pod_builder_add(b, SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&size), 0);
    if (rate.num > 0) spa_pod_builder_add(b, SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&rate), 0);
    return spa_pod_builder_pop(b, &f);
}

/// Reads the frame rates of a framerate property into `out`.
static void vf_pw_parse_rates(const struct spa_pod *value, vf_pw_format *out) {
    uint32_t count = 0, choice = 0;
    const struct spa_pod *child = spa_pod_get_values(value, &count, &choice);
    if (child->type != SPA_TYPE_Fraction || count == 0) return;
    const struct spa_fraction *values = SPA_POD_BODY_CONST(child);
    switch (choice) {
    case SPA_CHOICE_None:
        out->rate_count = 1;
        out->rates[0] = (vf_pw_fraction){values[0].num, values[0].denom};
        break;
    case SPA_CHOICE_Enum:
        // values[0] is the default, the alternatives follow.
        for (uint32_t i = count > 1 ? 1 : 0; i < count && out->rate_count < VF_PW_MAX_RATES; i++) {
            if (values[i].num == 0 || values[i].denom == 0) continue;
            out->rates[out->rate_count++] = (vf_pw_fraction){values[i].num, values[i].denom};
        }
        break;
    case SPA_CHOICE_Range:
    case SPA_CHOICE_Step:
        if (count >= 3) {
            out->rate_is_range = 1;
            out->rate_min = (vf_pw_fraction){values[1].num, values[1].denom};
            out->rate_max = (vf_pw_fraction){values[2].num, values[2].denom};
            // A minimum of 0/1 ("any") is no rate a camera can be paced at: keep the default.
            if (out->rate_min.num == 0) out->rate_min = (vf_pw_fraction){values[0].num, values[0].denom};
        }
        break;
    default:
        break;
    }
}

/// Appends the formats `param` (an EnumFormat object) describes to `formats`; returns the new count.
static int vf_pw_parse_enum_format(const struct spa_pod *param, vf_pw_format *formats, int count, int capacity) {
    if (!spa_pod_is_object_type(param, SPA_TYPE_OBJECT_Format)) return count;
    const struct spa_pod_object *object = (const struct spa_pod_object *)param;
    uint32_t media_type = 0, media_subtype = 0;
    const struct spa_pod *format_value = NULL, *size_value = NULL, *rate_value = NULL;
    const struct spa_pod_prop *prop;
    SPA_POD_OBJECT_FOREACH(object, prop) {
        uint32_t n = 0, choice = 0;
        const struct spa_pod *child = spa_pod_get_values(&prop->value, &n, &choice);
        switch (prop->key) {
        case SPA_FORMAT_mediaType:
            if (child->type == SPA_TYPE_Id && n > 0) media_type = *(const uint32_t *)SPA_POD_BODY_CONST(child);
            break;
        case SPA_FORMAT_mediaSubtype:
            if (child->type == SPA_TYPE_Id && n > 0) media_subtype = *(const uint32_t *)SPA_POD_BODY_CONST(child);
            break;
        case SPA_FORMAT_VIDEO_format: format_value = &prop->value; break;
        case SPA_FORMAT_VIDEO_size: size_value = &prop->value; break;
        case SPA_FORMAT_VIDEO_framerate: rate_value = &prop->value; break;
        default: break;
        }
    }
    if (media_type != SPA_MEDIA_TYPE_video || size_value == NULL) return count;
    uint32_t codecs[1];
    uint32_t layouts[32];
    uint32_t layout_count = 0;
    if (media_subtype == SPA_MEDIA_SUBTYPE_mjpg) {
        codecs[0] = VF_PW_CODEC_MJPEG;
        layouts[layout_count++] = VF_PW_FORMAT_UNKNOWN;
    } else if (media_subtype == SPA_MEDIA_SUBTYPE_raw && format_value != NULL) {
        codecs[0] = VF_PW_CODEC_RAW;
        uint32_t n = 0, choice = 0;
        const struct spa_pod *child = spa_pod_get_values(format_value, &n, &choice);
        if (child->type != SPA_TYPE_Id) return count;
        const uint32_t *ids = SPA_POD_BODY_CONST(child);
        for (uint32_t i = (choice == SPA_CHOICE_Enum && n > 1) ? 1 : 0; i < n && layout_count < 32; i++) {
            uint32_t mapped = vf_pw_from_spa_format(ids[i]);
            if (mapped == VF_PW_FORMAT_UNKNOWN) continue;
            int seen = 0;
            for (uint32_t j = 0; j < layout_count; j++) seen |= layouts[j] == mapped;
            if (!seen) layouts[layout_count++] = mapped;
        }
    } else {
        return count;
    }
    vf_pw_format rates = {0};
    if (rate_value) vf_pw_parse_rates(rate_value, &rates);
    uint32_t n = 0, choice = 0;
    const struct spa_pod *sizes = spa_pod_get_values(size_value, &n, &choice);
    if (sizes->type != SPA_TYPE_Rectangle || n == 0) return count;
    const struct spa_rectangle *rectangles = SPA_POD_BODY_CONST(sizes);
    uint32_t first = 0, last = 1;
    if (choice == SPA_CHOICE_Enum) {
        first = n > 1 ? 1 : 0;
        last = n;
    } else if (choice == SPA_CHOICE_Range || choice == SPA_CHOICE_Step) {
        // A size range: its default (values[0]) and its maximum (values[2]).
        last = n >= 3 ? 3 : 1;
    }
    for (uint32_t l = 0; l < layout_count; l++) {
        for (uint32_t i = first; i < last; i++) {
            if ((choice == SPA_CHOICE_Range || choice == SPA_CHOICE_Step) && i == 1) continue;
            if (rectangles[i].width == 0 || rectangles[i].height == 0) continue;
            if (count >= capacity) return count;
            vf_pw_format *out = &formats[count];
            *out = rates;
            out->codec = codecs[0];
            out->video_format = layouts[l];
            out->width = rectangles[i].width;
            out->height = rectangles[i].height;
            int duplicate = 0;
            for (int k = 0; k < count; k++) {
                duplicate |= formats[k].codec == out->codec && formats[k].video_format == out->video_format
                    && formats[k].width == out->width && formats[k].height == out->height;
            }
            if (!duplicate) count++;
        }
    }
    return count;
}

// MARK: - Connection

struct vf_pw_connection {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct pw_registry *registry;
    struct spa_hook core_listener;
    struct spa_hook registry_listener;
    vf_pw_node_added_fn added;
    vf_pw_global_removed_fn removed;
    vf_pw_connection_error_fn failed;
    void *user;
    int synced_seq;
    int error;
    // The session manager's "default" metadata, bound when the registry announces it: its
    // default.video.source (a JSON object naming a node), kept as the daemon last said.
    struct pw_metadata *metadata;
    uint32_t metadata_id;
    struct spa_hook metadata_listener;
    char default_video_source[512];
};

static int on_metadata_property(void *data, uint32_t subject, const char *key, const char *type, const char *value) {
    struct vf_pw_connection *c = data;
    (void)type;
    if (subject != PW_ID_CORE) return 0;
    if (key == NULL) {
        c->default_video_source[0] = 0;  // every property of the subject removed
    } else if (strcmp(key, "default.video.source") == 0) {
        snprintf(c->default_video_source, sizeof c->default_video_source, "%s", value ? value : "");
    }
    return 0;
}

static const struct pw_metadata_events vf_metadata_events = {
    PW_VERSION_METADATA_EVENTS,
    .property = on_metadata_property,
};

static void vf_pw_drop_metadata(struct vf_pw_connection *c) {
    if (!c->metadata) return;
    spa_hook_remove(&c->metadata_listener);
    pw_proxy_destroy((struct pw_proxy *)c->metadata);
    c->metadata = NULL;
    c->default_video_source[0] = 0;
}

static void on_core_done(void *data, uint32_t id, int seq) {
    struct vf_pw_connection *c = data;
    if (id == PW_ID_CORE) {
        c->synced_seq = seq;
        pw_thread_loop_signal(c->loop, false);
    }
}

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct vf_pw_connection *c = data;
    (void)seq;
    // Only a broken connection is fatal; other errors the daemon reports on the core (a link
    // that could not be made, say) reach the stream or node they concern through its own events.
    if (id == PW_ID_CORE && res == -EPIPE) {
        c->error = res;
        if (c->failed) c->failed(c->user, c->error, message);
        pw_thread_loop_signal(c->loop, false);
    }
}

static const struct pw_core_events vf_core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = on_core_done,
    .error = on_core_error,
};

static void on_registry_global(
    void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version, const struct spa_dict *props) {
    struct vf_pw_connection *c = data;
    (void)permissions;
    (void)version;
    if (strcmp(type, PW_TYPE_INTERFACE_Metadata) == 0) {
        const char *name = props ? spa_dict_lookup(props, PW_KEY_METADATA_NAME) : NULL;
        if (name && strcmp(name, "default") == 0 && c->metadata == NULL) {
            c->metadata = pw_registry_bind(c->registry, id, PW_TYPE_INTERFACE_Metadata, PW_VERSION_METADATA, 0);
            if (c->metadata) {
                c->metadata_id = id;
                pw_metadata_add_listener(c->metadata, &c->metadata_listener, &vf_metadata_events, c);
            }
        }
        return;
    }
    if (strcmp(type, PW_TYPE_INTERFACE_Node) != 0 || c->added == NULL) return;
    const char *serial = props ? spa_dict_lookup(props, PW_KEY_OBJECT_SERIAL) : NULL;
    c->added(
        c->user, id, serial ? (uint32_t)strtoul(serial, NULL, 10) : id,
        props ? spa_dict_lookup(props, PW_KEY_NODE_NAME) : NULL,
        props ? spa_dict_lookup(props, PW_KEY_MEDIA_CLASS) : NULL,
        props ? spa_dict_lookup(props, PW_KEY_MEDIA_ROLE) : NULL);
}

static void on_registry_global_remove(void *data, uint32_t id) {
    struct vf_pw_connection *c = data;
    if (c->metadata && id == c->metadata_id) {
        vf_pw_drop_metadata(c);
        return;
    }
    if (c->removed) c->removed(c->user, id);
}

static const struct pw_registry_events vf_registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global = on_registry_global,
    .global_remove = on_registry_global_remove,
};

vf_pw_connection *vf_pw_connection_open(
    int fd, const char *remote_name, vf_pw_node_added_fn added, vf_pw_global_removed_fn removed, vf_pw_connection_error_fn failed,
    void *user, char *error, size_t error_size) {
    vf_pw_init_once();
    struct vf_pw_connection *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->added = added;
    c->removed = removed;
    c->failed = failed;
    c->user = user;
    c->loop = pw_thread_loop_new("viewfinder.pipewire", NULL);
    if (!c->loop) goto fail_loop;
    c->context = pw_context_new(pw_thread_loop_get_loop(c->loop), NULL, 0);
    if (!c->context) goto fail_context;
    if (pw_thread_loop_start(c->loop) < 0) goto fail_start;
    pw_thread_loop_lock(c->loop);
    struct pw_properties *props = remote_name ? pw_properties_new(PW_KEY_REMOTE_NAME, remote_name, NULL) : NULL;
    c->core = fd >= 0 ? pw_context_connect_fd(c->context, fd, NULL, 0) : pw_context_connect(c->context, props, 0);
    if (!c->core) {
        int err = errno;
        pw_thread_loop_unlock(c->loop);
        vf_pw_set_error(error, error_size, "cannot connect to the PipeWire daemon: %s", strerror(err));
        pw_thread_loop_stop(c->loop);
        pw_context_destroy(c->context);
        pw_thread_loop_destroy(c->loop);
        free(c);
        return NULL;
    }
    pw_core_add_listener(c->core, &c->core_listener, &vf_core_events, c);
    c->registry = pw_core_get_registry(c->core, PW_VERSION_REGISTRY, 0);
    pw_registry_add_listener(c->registry, &c->registry_listener, &vf_registry_events, c);
    pw_thread_loop_unlock(c->loop);
    return c;

fail_start:
    pw_context_destroy(c->context);
fail_context:
    pw_thread_loop_destroy(c->loop);
fail_loop:
    vf_pw_set_error(error, error_size, "cannot start a PipeWire loop%s", "");
    free(c);
    return NULL;
}

/// With the loop locked: a round trip to the daemon.
static int vf_pw_sync_locked(struct vf_pw_connection *c, int timeout_ms) {
    if (c->error) return c->error;
    int seq = pw_core_sync(c->core, PW_ID_CORE, 0);
    struct timespec deadline;
    pw_thread_loop_get_time(c->loop, &deadline, (int64_t)timeout_ms * SPA_NSEC_PER_MSEC);
    // Several threads may wait at once: each waits until the answer to its own round trip (or a
    // later one, as the daemon answers in order) has come.
    while ((int32_t)((uint32_t)c->synced_seq - (uint32_t)seq) < 0 && !c->error) {
        if (pw_thread_loop_timed_wait_full(c->loop, &deadline) != 0) return -ETIMEDOUT;
    }
    return c->error ? c->error : 0;
}

int vf_pw_connection_sync(vf_pw_connection *c, int timeout_ms) {
    pw_thread_loop_lock(c->loop);
    int res = vf_pw_sync_locked(c, timeout_ms);
    pw_thread_loop_unlock(c->loop);
    return res;
}

int vf_pw_connection_default_video_source(vf_pw_connection *c, char *buffer, size_t size) {
    pw_thread_loop_lock(c->loop);
    snprintf(buffer, size, "%s", c->default_video_source);
    int known = c->metadata != NULL;
    pw_thread_loop_unlock(c->loop);
    return known;
}

int vf_pw_connection_set_default_metadata(vf_pw_connection *c, const char *key, const char *type, const char *value) {
    pw_thread_loop_lock(c->loop);
    int res = c->metadata ? pw_metadata_set_property(c->metadata, PW_ID_CORE, key, type, value) : -ENOENT;
    pw_thread_loop_unlock(c->loop);
    return res < 0 ? res : 0;
}

int vf_pw_connection_in_loop_thread(vf_pw_connection *c) { return pw_thread_loop_in_thread(c->loop) ? 1 : 0; }

void vf_pw_connection_close(vf_pw_connection *c) {
    if (!c) return;
    pw_thread_loop_lock(c->loop);
    vf_pw_drop_metadata(c);
    spa_hook_remove(&c->registry_listener);
    pw_proxy_destroy((struct pw_proxy *)c->registry);
    spa_hook_remove(&c->core_listener);
    pw_core_disconnect(c->core);
    pw_thread_loop_unlock(c->loop);
    pw_thread_loop_stop(c->loop);
    pw_context_destroy(c->context);
    pw_thread_loop_destroy(c->loop);
    free(c);
}

// MARK: - Node description

struct vf_pw_describe {
    struct vf_pw_connection *c;
    vf_pw_node_details *details;
    vf_pw_format *formats;
    int capacity;
    int count;
    int got_info;
    /// Set when the node says its params changed (its formats may be there now).
    int params_changed;
};

static void vf_copy(char *out, size_t size, const struct spa_dict *props, const char *key) {
    const char *value = props ? spa_dict_lookup(props, key) : NULL;
    snprintf(out, size, "%s", value ? value : "");
}

static void on_node_info(void *data, const struct pw_node_info *info) {
    struct vf_pw_describe *d = data;
    if (info->change_mask & PW_NODE_CHANGE_MASK_PARAMS) {
        d->params_changed = 1;
        pw_thread_loop_signal(d->c->loop, false);
    }
    if (d->got_info && !(info->change_mask & PW_NODE_CHANGE_MASK_PROPS)) return;
    const struct spa_dict *props = info->props;
    vf_copy(d->details->name, sizeof d->details->name, props, PW_KEY_NODE_NAME);
    vf_copy(d->details->description, sizeof d->details->description, props, PW_KEY_NODE_DESCRIPTION);
    vf_copy(d->details->nick, sizeof d->details->nick, props, PW_KEY_NODE_NICK);
    vf_copy(d->details->media_class, sizeof d->details->media_class, props, PW_KEY_MEDIA_CLASS);
    vf_copy(d->details->media_role, sizeof d->details->media_role, props, PW_KEY_MEDIA_ROLE);
    vf_copy(d->details->object_path, sizeof d->details->object_path, props, PW_KEY_OBJECT_PATH);
    vf_copy(d->details->v4l2_path, sizeof d->details->v4l2_path, props, "api.v4l2.path");
    vf_copy(d->details->bus_path, sizeof d->details->bus_path, props, PW_KEY_DEVICE_BUS_PATH);
    vf_copy(d->details->v4l2_bus_info, sizeof d->details->v4l2_bus_info, props, "api.v4l2.cap.bus_info");
    vf_copy(d->details->v4l2_card, sizeof d->details->v4l2_card, props, "api.v4l2.cap.card");
    vf_copy(d->details->device_api, sizeof d->details->device_api, props, PW_KEY_DEVICE_API);
    const char *serial = props ? spa_dict_lookup(props, PW_KEY_OBJECT_SERIAL) : NULL;
    d->details->serial = serial ? (uint32_t)strtoul(serial, NULL, 10) : 0;
    d->got_info = 1;
}

static void on_node_param(
    void *data, int seq, uint32_t id, uint32_t index, uint32_t next, const struct spa_pod *param) {
    struct vf_pw_describe *d = data;
    (void)seq;
    (void)index;
    (void)next;
    if (id != SPA_PARAM_EnumFormat || param == NULL) return;
    d->count = vf_pw_parse_enum_format(param, d->formats, d->count, d->capacity);
}

static const struct pw_node_events vf_node_events = {
    PW_VERSION_NODE_EVENTS,
    .info = on_node_info,
    .param = on_node_param,
};

int vf_pw_node_describe(
    vf_pw_connection *c, uint32_t id, vf_pw_node_details *details, vf_pw_format *formats, int capacity,
    int timeout_ms) {
    memset(details, 0, sizeof(*details));
    struct vf_pw_describe d = {.c = c, .details = details, .formats = formats, .capacity = capacity};
    struct spa_hook listener;
    spa_zero(listener);
    pw_thread_loop_lock(c->loop);
    struct pw_node *node = pw_registry_bind(c->registry, id, PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, 0);
    if (!node) {
        pw_thread_loop_unlock(c->loop);
        return -errno;
    }
    pw_node_add_listener(node, &listener, &vf_node_events, &d);
    struct timespec deadline;
    pw_thread_loop_get_time(c->loop, &deadline, (int64_t)timeout_ms * SPA_NSEC_PER_MSEC);
    int res = 0;
    for (int round = 0; round < 50; round++) {
        d.params_changed = 0;
        pw_node_enum_params(node, 0, SPA_PARAM_EnumFormat, 0, UINT32_MAX, NULL);
        // Twice: the bind and the enumeration reach the node's owner, whose answers come after
        // the first round trip of ours completes.
        res = vf_pw_sync_locked(c, timeout_ms);
        if (res == 0) res = vf_pw_sync_locked(c, timeout_ms);
        if (res != 0 || d.count > 0) break;
        // No format yet: a producer's node is in the registry before the update that carries
        // its formats has reached the daemon (seen under load, where a camera that came back
        // was listed with none). Wait for the node to say its params changed, and ask again,
        // until the deadline; a node that never offers a format is then listed with none.
        while (!d.params_changed && !c->error) {
            if (pw_thread_loop_timed_wait_full(c->loop, &deadline) != 0) break;
        }
        if (!d.params_changed) break;
    }
    spa_hook_remove(&listener);
    pw_proxy_destroy((struct pw_proxy *)node);
    pw_thread_loop_unlock(c->loop);
    if (res < 0) return res;
    if (!d.got_info) return -ENOENT;
    return d.count;
}

// MARK: - Streams (capture and producer alike)

/// Connects `stream` offering or asking for exactly `format`. On failure the stream is destroyed
/// (its listener removed first) and the negative errno returned.
static int vf_pw_connect_stream(
    struct pw_stream *stream, struct spa_hook *listener, enum pw_direction direction, enum pw_stream_flags flags,
    const vf_pw_format *format) {
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[1] = {vf_pw_build_format(&b, format)};
    int res = pw_stream_connect(stream, direction, PW_ID_ANY, flags | PW_STREAM_FLAG_MAP_BUFFERS, params, 1);
    if (res < 0) {
        spa_hook_remove(listener);
        pw_stream_destroy(stream);
    }
    return res;
}

/// Once a format is fixed: 2-16 buffers (8 preferred) of one block in memory of `data_types`
/// (a producer also gives their `size` and `stride`; 0 leaves them to the other side), and the
/// header meta (pts, sequence).
static void vf_pw_update_buffer_params(struct pw_stream *stream, uint32_t size, int32_t stride, int data_types) {
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    struct spa_pod_frame f;
    const struct spa_pod *params[2];
    spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers);
    spa_pod_builder_add(
        &b, SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(8, 2, 16), SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int(data_types), 0);
    if (size > 0) {
        spa_pod_builder_add(
            &b, SPA_PARAM_BUFFERS_size, SPA_POD_Int(size), SPA_PARAM_BUFFERS_stride, SPA_POD_Int(stride), 0);
    }
    params[0] = spa_pod_builder_pop(&b, &f);
    params[1] = spa_pod_builder_add_object(
        &b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta, SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    pw_stream_update_params(stream, params, 2);
}

/// Disconnects and destroys `stream` (with the loop locked).
static void vf_pw_destroy_stream(struct pw_stream *stream, struct spa_hook *listener) {
    spa_hook_remove(listener);
    pw_stream_disconnect(stream);
    pw_stream_destroy(stream);
}

// MARK: - Capture stream

struct vf_pw_stream {
    struct vf_pw_connection *c;
    struct pw_stream *stream;
    struct spa_hook listener;
    vf_pw_format format;
    vf_pw_frame_fn on_frame;
    vf_pw_state_fn on_state;
    void *user;
};

static void on_capture_state(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct vf_pw_stream *s = data;
    (void)old;
    int mapped = VF_PW_STATE_UNCONNECTED;
    switch (state) {
    case PW_STREAM_STATE_ERROR: mapped = VF_PW_STATE_ERROR; break;
    case PW_STREAM_STATE_UNCONNECTED: mapped = VF_PW_STATE_UNCONNECTED; break;
    case PW_STREAM_STATE_CONNECTING: mapped = VF_PW_STATE_CONNECTING; break;
    case PW_STREAM_STATE_PAUSED: mapped = VF_PW_STATE_PAUSED; break;
    case PW_STREAM_STATE_STREAMING: mapped = VF_PW_STATE_STREAMING; break;
    }
    if (s->on_state) s->on_state(s->user, mapped, error);
}

/// Once the format is fixed: ask for buffers Viewfinder can read (mappable memory) and the
/// header meta (pts, sequence).
static void on_capture_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct vf_pw_stream *s = data;
    if (id != SPA_PARAM_Format || param == NULL) return;
    vf_pw_update_buffer_params(
        s->stream, 0, 0, (1 << SPA_DATA_MemPtr) | (1 << SPA_DATA_MemFd) | (1 << SPA_DATA_DmaBuf));
}

static void on_capture_process(void *data) {
    struct vf_pw_stream *s = data;
    struct pw_buffer *b;
    while ((b = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        struct spa_buffer *buffer = b->buffer;
        if (buffer->n_datas > 0 && buffer->datas[0].data != NULL && buffer->datas[0].chunk != NULL) {
            struct spa_data *d = &buffer->datas[0];
            vf_pw_frame frame = {0};
            uint32_t offset = SPA_MIN(d->chunk->offset, d->maxsize);
            frame.data = (const uint8_t *)d->data + offset;
            frame.size = SPA_MIN(d->chunk->size, d->maxsize - offset);
            frame.stride = d->chunk->stride;
            frame.corrupted = (d->chunk->flags & SPA_CHUNK_FLAG_CORRUPTED) != 0;
            frame.memory_kind = d->type == SPA_DATA_MemPtr ? 0 : d->type == SPA_DATA_MemFd ? 1
                : d->type == SPA_DATA_DmaBuf                                             ? 2
                                                                                         : 3;
            struct spa_meta_header *header = spa_buffer_find_meta_data(buffer, SPA_META_Header, sizeof(*header));
            if (header) {
                frame.has_header = 1;
                frame.pts_ns = header->pts;
                frame.seq = header->seq;
                frame.corrupted |= (header->flags & SPA_META_HEADER_FLAG_CORRUPTED) != 0;
            }
            if (s->on_frame) s->on_frame(s->user, &frame);
        }
        pw_stream_queue_buffer(s->stream, b);
    }
}

static const struct pw_stream_events vf_capture_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_capture_state,
    .param_changed = on_capture_param_changed,
    .process = on_capture_process,
};

vf_pw_stream *vf_pw_stream_open(
    vf_pw_connection *c, uint32_t target_serial, const char *name, const vf_pw_format *format,
    vf_pw_frame_fn on_frame, vf_pw_state_fn on_state, void *user, char *error, size_t error_size) {
    struct vf_pw_stream *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->c = c;
    s->format = *format;
    s->on_frame = on_frame;
    s->on_state = on_state;
    s->user = user;
    char target[32];
    snprintf(target, sizeof target, "%u", target_serial);
    struct pw_properties *props = pw_properties_new(
        PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Camera",
        PW_KEY_TARGET_OBJECT, target, PW_KEY_NODE_DONT_RECONNECT, "true", NULL);
    pw_thread_loop_lock(c->loop);
    s->stream = pw_stream_new(c->core, name, props);
    if (!s->stream) {
        int err = errno;
        pw_thread_loop_unlock(c->loop);
        vf_pw_set_error(error, error_size, "cannot create a PipeWire stream: %s", strerror(err));
        free(s);
        return NULL;
    }
    pw_stream_add_listener(s->stream, &s->listener, &vf_capture_events, s);
    int res = vf_pw_connect_stream(s->stream, &s->listener, PW_DIRECTION_INPUT, PW_STREAM_FLAG_AUTOCONNECT, format);
    if (res < 0) {
        pw_thread_loop_unlock(c->loop);
        vf_pw_set_error(error, error_size, "cannot connect a PipeWire stream: %s", spa_strerror(res));
        free(s);
        return NULL;
    }
    pw_thread_loop_unlock(c->loop);
    return s;
}

void vf_pw_stream_close(vf_pw_stream *s) {
    if (!s) return;
    pw_thread_loop_lock(s->c->loop);
    vf_pw_destroy_stream(s->stream, &s->listener);
    pw_thread_loop_unlock(s->c->loop);
    free(s);
}

// MARK: - Producer

struct vf_pw_producer {
    struct vf_pw_connection *c;
    struct pw_stream *stream;
    struct spa_hook listener;
    struct spa_source *timer;
    vf_pw_format format;
    vf_pw_fill_fn fill;
    void *user;
    uint64_t seq;
    uint64_t produced;
    uint64_t skipped;
    int streaming;
    uint32_t frame_size;
    int32_t stride;
    vf_pw_control controls[VF_PW_MAX_CONTROLS];
    int control_count;
    int shows_values;
    /// Offers its format this long after its node appears (0: at once), as a slow producer does.
    struct spa_source *format_timer;
};

static void vf_pw_frame_geometry(const vf_pw_format *f, uint32_t *size, int32_t *stride) {
    uint32_t w = f->width, h = f->height;
    if (f->codec == VF_PW_CODEC_MJPEG) {
        *stride = 0;
        *size = w * h * 2 + 65536;  // room for any JPEG of the frame
        return;
    }
    switch (f->video_format) {
    case VF_PW_FORMAT_YUY2: *stride = (int32_t)(((w + 1) / 2) * 4); *size = (uint32_t)*stride * h; break;
    case VF_PW_FORMAT_NV12: *stride = (int32_t)w; *size = w * h + ((w + 1) / 2) * 2 * ((h + 1) / 2); break;
    case VF_PW_FORMAT_I420: *stride = (int32_t)w; *size = w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2); break;
    default: *stride = (int32_t)(w * 4); *size = w * h * 4; break;
    }
}

static int vf_pw_produce(struct vf_pw_producer *p) {
    if (!p->streaming) return -1;
    uint64_t seq = p->seq++;
    struct pw_buffer *b = pw_stream_dequeue_buffer(p->stream);
    if (!b) {
        p->skipped++;
        return 0;
    }
    struct spa_buffer *buffer = b->buffer;
    struct spa_data *d = &buffer->datas[0];
    uint32_t written = 0;
    if (d->data && p->fill) written = p->fill(p->user, d->data, d->maxsize, p->stride, seq);
    d->chunk->offset = 0;
    d->chunk->size = written;
    d->chunk->stride = p->stride;
    d->chunk->flags = 0;
    struct spa_meta_header *header = spa_buffer_find_meta_data(buffer, SPA_META_Header, sizeof(*header));
    if (header) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        header->pts = (int64_t)now.tv_sec * SPA_NSEC_PER_SEC + now.tv_nsec;
        header->flags = 0;
        header->seq = seq;
        header->dts_offset = 0;
    }
    pw_stream_queue_buffer(p->stream, b);
    pw_stream_trigger_process(p->stream);
    p->produced++;
    return 1;
}

static void on_producer_format_timer(void *data, uint64_t expirations) {
    struct vf_pw_producer *p = data;
    (void)expirations;
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[1] = {vf_pw_build_format(&b, &p->format)};
    pw_stream_update_params(p->stream, params, 1);
}

static void on_producer_timer(void *data, uint64_t expirations) {
    (void)expirations;
    vf_pw_produce(data);
}

static void on_producer_state(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct vf_pw_producer *p = data;
    (void)old;
    (void)error;
    p->streaming = state == PW_STREAM_STATE_STREAMING;
    if (!p->timer) return;
    struct timespec value = {0}, interval = {0};
    if (p->streaming) {
        uint32_t num = p->format.rate_count ? p->format.rates[0].num : 30;
        uint32_t den = p->format.rate_count ? p->format.rates[0].denom : 1;
        uint64_t ns = num ? (uint64_t)den * SPA_NSEC_PER_SEC / num : SPA_NSEC_PER_SEC / 30;
        interval.tv_sec = ns / SPA_NSEC_PER_SEC;
        interval.tv_nsec = ns % SPA_NSEC_PER_SEC;
        value.tv_nsec = 1;
    }
    pw_loop_update_timer(pw_thread_loop_get_loop(p->c->loop), p->timer, &value, &interval, false);
}

/// Publishes the producer's controls: one PropInfo param each, and one Props param with their
/// values (with the loop locked).
static int vf_pw_publish_controls(struct vf_pw_producer *p, int with_info) {
    uint8_t buffer[16384];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
    const struct spa_pod *params[VF_PW_MAX_CONTROLS + 1];
    uint32_t n = 0;
    for (int i = 0; with_info && i < p->control_count; i++) {
        const vf_pw_control *control = &p->controls[i];
        struct spa_pod_frame f[2];
        spa_pod_builder_push_object(&b, &f[0], SPA_TYPE_OBJECT_PropInfo, SPA_PARAM_PropInfo);
        spa_pod_builder_add(
            &b, SPA_PROP_INFO_id, SPA_POD_Id(control->id), SPA_PROP_INFO_description, SPA_POD_String(control->name), 0);
        switch (control->kind) {
        case VF_PW_CONTROL_BOOL:
            spa_pod_builder_add(&b, SPA_PROP_INFO_type, SPA_POD_CHOICE_Bool(control->default_value != 0), 0);
            break;
        case VF_PW_CONTROL_FLOAT:
            spa_pod_builder_add(
                &b, SPA_PROP_INFO_type,
                SPA_POD_CHOICE_RANGE_Float(
                    (float)control->float_default, (float)control->float_minimum, (float)control->float_maximum),
                0);
            break;
        case VF_PW_CONTROL_MENU:
            spa_pod_builder_add(&b, SPA_PROP_INFO_type, SPA_POD_CHOICE_ENUM_Int(1, control->default_value), 0);
            spa_pod_builder_prop(&b, SPA_PROP_INFO_labels, 0);
            spa_pod_builder_push_struct(&b, &f[1]);
            for (uint32_t m = 0; m < control->menu_count && m < VF_PW_MAX_MENU; m++) {
                spa_pod_builder_int(&b, control->menu_values[m]);
                spa_pod_builder_string(&b, control->menu_names[m]);
            }
            spa_pod_builder_pop(&b, &f[1]);
            break;
        default:
            spa_pod_builder_add(
                &b, SPA_PROP_INFO_type,
                SPA_POD_CHOICE_STEP_Int(control->default_value, control->minimum, control->maximum, SPA_MAX(1, control->step)), 0);
            break;
        }
        const struct spa_pod *info = spa_pod_builder_pop(&b, &f[0]);
        if (info == NULL) return -ENOSPC;
        params[n++] = info;
    }
    struct spa_pod_frame f;
    spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_Props, SPA_PARAM_Props);
    for (int i = 0; p->shows_values && i < p->control_count; i++) {
        const vf_pw_control *control = &p->controls[i];
        spa_pod_builder_prop(&b, control->id, 0);
        if (control->kind == VF_PW_CONTROL_BOOL) {
            spa_pod_builder_bool(&b, control->value != 0);
        } else if (control->kind == VF_PW_CONTROL_FLOAT) {
            spa_pod_builder_float(&b, (float)control->float_value);
        } else {
            spa_pod_builder_int(&b, control->value);
        }
    }
    const struct spa_pod *props = spa_pod_builder_pop(&b, &f);
    if (props == NULL) return -ENOSPC;
    params[n++] = props;
    return pw_stream_update_params(p->stream, params, n);
}

/// A Props set on the producer's node: take the values of its controls (clamped to their
/// ranges; a menu keeps its value for one it does not offer) and show them in its Props.
static void vf_pw_producer_props_set(struct vf_pw_producer *p, const struct spa_pod *param) {
    vf_pw_control incoming[VF_PW_MAX_CONTROLS];
    memcpy(incoming, p->controls, sizeof(vf_pw_control) * (size_t)p->control_count);
    for (int i = 0; i < p->control_count; i++) incoming[i].has_value = 0;
    vf_pw_parse_props(param, incoming, p->control_count);
    for (int i = 0; i < p->control_count; i++) {
        if (!incoming[i].has_value) continue;
        vf_pw_control *control = &p->controls[i];
        if (control->kind == VF_PW_CONTROL_FLOAT) {
            control->float_value = SPA_CLAMP(incoming[i].float_value, control->float_minimum, control->float_maximum);
            continue;
        }
        int32_t value = incoming[i].value;
        if (control->kind == VF_PW_CONTROL_MENU) {
            int offered = 0;
            for (uint32_t m = 0; m < control->menu_count; m++) offered |= control->menu_values[m] == value;
            if (!offered) continue;
        }
        control->value = SPA_CLAMP(value, control->minimum, control->maximum);
    }
    vf_pw_publish_controls(p, 0);
}

int vf_pw_producer_set_controls(vf_pw_producer *p, const vf_pw_control *controls, int count, int shows_values) {
    if (count < 0 || count > VF_PW_MAX_CONTROLS) return -EINVAL;
    pw_thread_loop_lock(p->c->loop);
    p->shows_values = shows_values;
    memcpy(p->controls, controls, sizeof(vf_pw_control) * (size_t)count);
    p->control_count = count;
    int res = vf_pw_publish_controls(p, 1);
    // Until the daemon has them, other clients enumerating the node's params see the old ones.
    if (res >= 0 && !pw_thread_loop_in_thread(p->c->loop)) res = vf_pw_sync_locked(p->c, 2000);
    pw_thread_loop_unlock(p->c->loop);
    return res;
}

int vf_pw_producer_control_value(vf_pw_producer *p, uint32_t id, int32_t *value, double *float_value) {
    int found = 0;
    pw_thread_loop_lock(p->c->loop);
    for (int i = 0; i < p->control_count; i++) {
        if (p->controls[i].id != id) continue;
        if (value) *value = p->controls[i].value;
        if (float_value) *float_value = p->controls[i].float_value;
        found = 1;
    }
    pw_thread_loop_unlock(p->c->loop);
    return found;
}

static void on_producer_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct vf_pw_producer *p = data;
    if (id == SPA_PARAM_Props && param != NULL) {
        vf_pw_producer_props_set(p, param);
        return;
    }
    if (id != SPA_PARAM_Format || param == NULL) return;
    vf_pw_update_buffer_params(p->stream, p->frame_size, p->stride, (1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr));
}

static const struct pw_stream_events vf_producer_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_producer_state,
    .param_changed = on_producer_param_changed,
};

vf_pw_producer *vf_pw_producer_open(
    vf_pw_connection *c, const char *name, const char *description, const vf_pw_format *format, int paced,
    int format_delay_ms, vf_pw_fill_fn fill, void *user, char *error, size_t error_size) {
    struct vf_pw_producer *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->c = c;
    p->format = *format;
    p->fill = fill;
    p->user = user;
    vf_pw_frame_geometry(format, &p->frame_size, &p->stride);
    struct pw_properties *props = pw_properties_new(
        PW_KEY_MEDIA_CLASS, "Video/Source", PW_KEY_MEDIA_ROLE, "Camera", PW_KEY_MEDIA_TYPE, "Video",
        PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_NODE_NAME, name, PW_KEY_NODE_DESCRIPTION,
        description ? description : name, NULL);
    pw_thread_loop_lock(c->loop);
    p->stream = pw_stream_new(c->core, name, props);
    if (!p->stream) {
        int err = errno;
        pw_thread_loop_unlock(c->loop);
        vf_pw_set_error(error, error_size, "cannot create a PipeWire stream: %s", strerror(err));
        free(p);
        return NULL;
    }
    if (paced) p->timer = pw_loop_add_timer(pw_thread_loop_get_loop(c->loop), on_producer_timer, p);
    pw_stream_add_listener(p->stream, &p->listener, &vf_producer_events, p);
    int res;
    if (format_delay_ms > 0) {
        // The node appears offering nothing; its format follows in a later update.
        res = pw_stream_connect(
            p->stream, PW_DIRECTION_OUTPUT, PW_ID_ANY, PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_MAP_BUFFERS, NULL, 0);
        if (res < 0) {
            spa_hook_remove(&p->listener);
            pw_stream_destroy(p->stream);
        } else {
            struct pw_loop *loop = pw_thread_loop_get_loop(c->loop);
            p->format_timer = pw_loop_add_timer(loop, on_producer_format_timer, p);
            struct timespec value = {format_delay_ms / 1000, (long)(format_delay_ms % 1000) * 1000000L};
            struct timespec none = {0};
            pw_loop_update_timer(loop, p->format_timer, &value, &none, false);
        }
    } else {
        res = vf_pw_connect_stream(p->stream, &p->listener, PW_DIRECTION_OUTPUT, PW_STREAM_FLAG_DRIVER, format);
    }
    if (res < 0) {
        if (p->timer) pw_loop_destroy_source(pw_thread_loop_get_loop(c->loop), p->timer);
        pw_thread_loop_unlock(c->loop);
        vf_pw_set_error(error, error_size, "cannot publish a PipeWire node: %s", spa_strerror(res));
        free(p);
        return NULL;
    }
    pw_thread_loop_unlock(c->loop);
    return p;
}

int vf_pw_producer_push(vf_pw_producer *p) {
    pw_thread_loop_lock(p->c->loop);
    int res = vf_pw_produce(p);
    pw_thread_loop_unlock(p->c->loop);
    return res;
}

void vf_pw_producer_counts(vf_pw_producer *p, uint64_t *produced, uint64_t *skipped, int *streaming) {
    pw_thread_loop_lock(p->c->loop);
    if (produced) *produced = p->produced;
    if (skipped) *skipped = p->skipped;
    if (streaming) *streaming = p->streaming;
    pw_thread_loop_unlock(p->c->loop);
}

void vf_pw_producer_close(vf_pw_producer *p) {
    if (!p) return;
    pw_thread_loop_lock(p->c->loop);
    if (p->timer) pw_loop_destroy_source(pw_thread_loop_get_loop(p->c->loop), p->timer);
    if (p->format_timer) pw_loop_destroy_source(pw_thread_loop_get_loop(p->c->loop), p->format_timer);
    vf_pw_destroy_stream(p->stream, &p->listener);
    pw_thread_loop_unlock(p->c->loop);
    free(p);
}

// MARK: - For the shim's other files (internal.h)

struct pw_thread_loop *vf_pw_connection_thread_loop(vf_pw_connection *c) { return c->loop; }

struct pw_core *vf_pw_connection_core(vf_pw_connection *c) { return c->core; }

struct pw_registry *vf_pw_connection_registry(vf_pw_connection *c) { return c->registry; }

int vf_pw_connection_sync_locked(vf_pw_connection *c, int timeout_ms) { return vf_pw_sync_locked(c, timeout_ms); }
