#ifndef VIEWFINDER_CPIPEWIRE_H
#define VIEWFINDER_CPIPEWIRE_H
// PipeWire (libpipewire-0.3, libspa 0.2) behind plain C: the SPA pod builders and parsers are
// macros and inline functions over variable-length structures, so Swift sees only opaque
// handles, plain structs and callbacks. Every handle runs on one pw_thread_loop per connection;
// callbacks arrive on that loop's thread and must not block or call back into the shim's
// synchronous functions (vf_pw_node_describe, vf_pw_*_close).
#include <stddef.h>
#include <stdint.h>

/// Codecs a camera node can offer.
enum { VF_PW_CODEC_RAW = 0, VF_PW_CODEC_MJPEG = 1 };

/// Raw layouts the shim names (SPA video format IDs are mapped to these).
enum {
    VF_PW_FORMAT_UNKNOWN = 0,
    VF_PW_FORMAT_YUY2 = 1,
    VF_PW_FORMAT_NV12 = 2,
    VF_PW_FORMAT_I420 = 3,
    VF_PW_FORMAT_BGRX = 4,
    VF_PW_FORMAT_RGBX = 5,
    VF_PW_FORMAT_BGRA = 6,
};

/// Stream states reported to Swift.
enum {
    VF_PW_STATE_ERROR = -1,
    VF_PW_STATE_UNCONNECTED = 0,
    VF_PW_STATE_CONNECTING = 1,
    VF_PW_STATE_PAUSED = 2,
    VF_PW_STATE_STREAMING = 3,
};

#define VF_PW_MAX_RATES 16

typedef struct {
    uint32_t num;
    uint32_t denom;
} vf_pw_fraction;

/// One format of a node: a codec, a raw layout (raw only), one size, and its frame rates: either
/// `rate_count` discrete rates, or (rate_is_range) every rate from rate_min to rate_max.
typedef struct {
    uint32_t codec;
    uint32_t video_format;
    uint32_t width;
    uint32_t height;
    uint32_t rate_count;
    vf_pw_fraction rates[VF_PW_MAX_RATES];
    int rate_is_range;
    vf_pw_fraction rate_min;
    vf_pw_fraction rate_max;
} vf_pw_format;

/// The properties of a node Viewfinder reads (empty strings where the node has none).
typedef struct {
    char name[256];
    char description[256];
    char nick[128];
    char media_class[64];
    char media_role[64];
    char object_path[256];
    char v4l2_path[128];
    char bus_path[128];
    /// `api.v4l2.cap.bus_info` and `api.v4l2.cap.card`: what VIDIOC_QUERYCAP said, for a node
    /// PipeWire's V4L2 plugin made.
    char v4l2_bus_info[128];
    char v4l2_card[128];
    char device_api[32];
    uint32_t serial;
} vf_pw_node_details;

typedef struct vf_pw_connection vf_pw_connection;

/// A global appeared in the registry (nodes only; `media_class` and `media_role` may be NULL).
typedef void (*vf_pw_node_added_fn)(
    void *user, uint32_t id, uint32_t serial, const char *name, const char *media_class, const char *media_role);
/// A global went away.
typedef void (*vf_pw_global_removed_fn)(void *user, uint32_t id);
/// The connection to the daemon failed (the daemon went away, say): `res` is a negative errno.
typedef void (*vf_pw_connection_error_fn)(void *user, int res, const char *message);

/// Connects to the PipeWire daemon: through `fd` when it is >= 0 (a remote the Camera portal
/// opened; the connection takes ownership of it), otherwise to the socket `remote_name` (NULL:
/// $PIPEWIRE_REMOTE, else pipewire-0, in $XDG_RUNTIME_DIR). Starts the loop thread and the registry
/// (callbacks may be NULL). Returns NULL with a message in `error` on failure.
vf_pw_connection *vf_pw_connection_open(
    int fd, const char *remote_name, vf_pw_node_added_fn added, vf_pw_global_removed_fn removed, vf_pw_connection_error_fn failed,
    void *user, char *error, size_t error_size);
/// Waits until the daemon has answered everything sent so far (so every global present has been
/// reported). Returns 0, or a negative errno (-ETIMEDOUT, -EPIPE).
int vf_pw_connection_sync(vf_pw_connection *connection, int timeout_ms);
/// Stops the loop thread and disconnects. No callback runs after it returns.
void vf_pw_connection_close(vf_pw_connection *connection);
// Whether the caller runs on the connection's loop thread (inside one of its callbacks), where
// closing the connection, a stream or a producer must not happen: closing joins that thread.
int vf_pw_connection_in_loop_thread(vf_pw_connection *connection);

// The session manager's default video source: the value of default.video.source in the daemon's
// "default" metadata (a JSON object, {"name": "<node.name>"}), empty when unset, copied into
// `buffer`. Returns 1 when the daemon has that metadata, 0 otherwise. Current as of the last
// round trip (vf_pw_connection_sync).
int vf_pw_connection_default_video_source(vf_pw_connection *connection, char *buffer, size_t size);
// Sets `key` of the core subject in the "default" metadata (what `wpctl set-default` writes:
// default.configured.video.source); for tests. 0, or a negative errno (-ENOENT without metadata).
int vf_pw_connection_set_default_metadata(
    vf_pw_connection *connection, const char *key, const char *type, const char *value);

/// Reads node `id`'s properties and EnumFormat params (formats of other codecs are left out; a
/// list of sizes becomes one format per size). Returns how many formats were written (at most
/// `capacity`) or a negative errno. Must not be called on the loop thread.
int vf_pw_node_describe(
    vf_pw_connection *connection, uint32_t id, vf_pw_node_details *details, vf_pw_format *formats, int capacity,
    int timeout_ms);

/// One frame as a stream hands it over, valid during the callback only.
typedef struct {
    const uint8_t *data;
    uint32_t size;
    int32_t stride;
    /// 1 when the buffer carried a spa_meta_header (then pts_ns and seq are the producer's).
    int has_header;
    int64_t pts_ns;
    uint64_t seq;
    /// 1 when the producer flagged the buffer corrupt (SPA_META_HEADER_FLAG_CORRUPTED or a data
    /// chunk flagged so).
    int corrupted;
    /// The kind of memory: 0 MemPtr, 1 MemFd, 2 DmaBuf, 3 other.
    int memory_kind;
} vf_pw_frame;

typedef void (*vf_pw_frame_fn)(void *user, const vf_pw_frame *frame);
typedef void (*vf_pw_state_fn)(void *user, int state, const char *error);

typedef struct vf_pw_stream vf_pw_stream;

/// Opens a capture stream linked to the node with `target_serial` (its object.serial) in exactly
/// `format` (one size, the first rate). Frames arrive on the loop thread through `on_frame`; their
/// buffers go back to the producer when the callback returns. Returns NULL with a message in
/// `error` on failure.
vf_pw_stream *vf_pw_stream_open(
    vf_pw_connection *connection, uint32_t target_serial, const char *name, const vf_pw_format *format,
    vf_pw_frame_fn on_frame, vf_pw_state_fn on_state, void *user, char *error, size_t error_size);
/// Disconnects and destroys the stream. No callback runs after it returns.
void vf_pw_stream_close(vf_pw_stream *stream);

/// Fills one buffer of a producer: write the frame's bytes into `data` (`capacity` bytes, rows
/// `stride` apart) and return how many were written (0 skips the frame).
typedef uint32_t (*vf_pw_fill_fn)(void *user, uint8_t *data, uint32_t capacity, int32_t stride, uint64_t seq);

typedef struct vf_pw_producer vf_pw_producer;

/// Publishes a `Video/Source` node (role Camera) named `name` with `description`, producing
/// frames of `format` (one size, the first rate) paced by a timer on the loop (the node drives
/// the graph). `fill` writes each frame; every frame is stamped with a spa_meta_header (its
/// sequence number and CLOCK_MONOTONIC time); a frame no buffer was free for is skipped, and its
/// sequence number with it. `paced` 0: no timer, frames are pushed with vf_pw_producer_push.
/// `format_delay_ms` > 0: the node appears offering no format and offers `format` that much
/// later (a slow producer, for tests).
vf_pw_producer *vf_pw_producer_open(
    vf_pw_connection *connection, const char *name, const char *description, const vf_pw_format *format, int paced,
    int format_delay_ms, vf_pw_fill_fn fill, void *user, char *error, size_t error_size);
/// Produces one frame now (for unpaced producers); returns 1 if a buffer was free, 0 if it was
/// skipped (its sequence number is used up either way), -1 when the node is not streaming.
int vf_pw_producer_push(vf_pw_producer *producer);
/// How many consumers' links reached streaming so far, and frames produced / skipped.
void vf_pw_producer_counts(vf_pw_producer *producer, uint64_t *produced, uint64_t *skipped, int *streaming);
/// Stops the timer and destroys the node.
void vf_pw_producer_close(vf_pw_producer *producer);

// MARK: - Controls (SPA_PARAM_PropInfo / SPA_PARAM_Props)

/// The SPA property IDs of the video controls (SPA_PROP_brightness … SPA_PROP_sharpness), and
/// where a node's own controls start (PipeWire's V4L2 plugin: SPA_PROP_START_CUSTOM + the V4L2
/// control ID). shim.c checks they equal libspa's.
enum {
    VF_PW_PROP_BRIGHTNESS = 0x20001,
    VF_PW_PROP_CONTRAST = 0x20002,
    VF_PW_PROP_SATURATION = 0x20003,
    VF_PW_PROP_HUE = 0x20004,
    VF_PW_PROP_GAMMA = 0x20005,
    VF_PW_PROP_EXPOSURE = 0x20006,
    VF_PW_PROP_GAIN = 0x20007,
    VF_PW_PROP_SHARPNESS = 0x20008,
    VF_PW_PROP_START_CUSTOM = 0x1000000,
};

/// What values a control takes: an integer range (with a step), a boolean, a menu of integers
/// (with labels where the node gives them), or a floating-point range (libcamera's nodes).
enum { VF_PW_CONTROL_INT = 0, VF_PW_CONTROL_BOOL = 1, VF_PW_CONTROL_MENU = 2, VF_PW_CONTROL_FLOAT = 3 };

#define VF_PW_MAX_MENU 16
#define VF_PW_MAX_CONTROLS 64

/// One control of a node: its PropInfo (only video controls: IDs from SPA_PROP_START_Video to
/// SPA_PROP_START_Other, custom ones from SPA_PROP_START_CUSTOM, and libcamera's control IDs below
/// SPA_PROP_START_Device, as PipeWire 0.3's libcamera plugin names them) and, when the node's Props
/// carry it, its current value (`has_value`).
typedef struct {
    uint32_t id;
    uint32_t kind;
    /// The node's description of it (SPA_PROP_INFO_description, else SPA_PROP_INFO_name).
    char name[64];
    int32_t minimum;
    int32_t maximum;
    int32_t step;
    int32_t default_value;
    int has_value;
    int32_t value;
    /// VF_PW_CONTROL_FLOAT: the range, default and value.
    double float_minimum;
    double float_maximum;
    double float_default;
    double float_value;
    /// VF_PW_CONTROL_MENU: the choices.
    uint32_t menu_count;
    int32_t menu_values[VF_PW_MAX_MENU];
    char menu_names[VF_PW_MAX_MENU][48];
} vf_pw_control;

/// Reads node `id`'s controls: its PropInfo params (video controls only) and the values its Props
/// params carry. Returns how many were written (at most `capacity`), 0 for a node without
/// controls, or a negative errno (-ENOENT: no such node). Must not be called on the loop thread.
int vf_pw_node_controls(vf_pw_connection *connection, uint32_t id, vf_pw_control *controls, int capacity, int timeout_ms);

/// Sets control `control` (as vf_pw_node_controls described it) of node `id` to `value` (or
/// `float_value` for VF_PW_CONTROL_FLOAT) with pw_node_set_param(SPA_PARAM_Props), and waits until
/// the daemon has passed it on. Returns 0, or a negative errno (the node's error, -ETIMEDOUT,
/// -ENOENT when the node is gone). Must not be called on the loop thread.
int vf_pw_node_set_control(
    vf_pw_connection *connection, uint32_t id, const vf_pw_control *control, int32_t value, double float_value,
    int timeout_ms);

/// Publishes `count` controls (at most VF_PW_MAX_CONTROLS) on a producer's node as PropInfo
/// params and (`shows_values`) their `value`s as its Props (else an empty Props, as PipeWire's V4L2
/// plugin shows); a Props set on the node (pw_node_set_param) updates them (clamped to their
/// ranges) and the Props it shows. Returns once the daemon has them (off the loop thread): 0 or a
/// negative errno.
int vf_pw_producer_set_controls(vf_pw_producer *producer, const vf_pw_control *controls, int count, int shows_values);
/// The value a producer's control `id` has now (`float_value` for VF_PW_CONTROL_FLOAT); returns 1,
/// or 0 when it has no such control.
int vf_pw_producer_control_value(vf_pw_producer *producer, uint32_t id, int32_t *value, double *float_value);

/// The library's version string (pw_get_library_version).
const char *vf_pw_library_version(void);

#endif

// The virtual camera node (virtual_camera.c), outside the include guard's scope so it can
// include this header.
#include "CPipeWireVirtualCamera.h"
