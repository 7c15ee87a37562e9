#ifndef VIEWFINDER_CPIPEWIRE_VIRTUAL_CAMERA_H
#define VIEWFINDER_CPIPEWIRE_VIRTUAL_CAMERA_H
// A camera node this process publishes from frames it pushes (the virtual camera output): it
// offers several raw formats and the consumer that links to it picks one. Unlike
// vf_pw_producer, frames are not drawn on the loop thread: the pushing thread takes a free buffer
// (never waiting), writes it outside the loop's lock and queues it back.
#include <stddef.h>
#include <stdint.h>

#include "CPipeWire.h"

typedef struct vf_pw_vcam vf_pw_vcam;

/// Publishes a `Video/Source` node (`media.role` Camera) named `name`, shown as `description`,
/// offering `formats` (`count` raw formats, each one size and its first rate; the first is
/// preferred). The node drives the graph: each queued frame starts a cycle. Returns NULL with a
/// message in `error` on failure.
vf_pw_vcam *vf_pw_vcam_open(
    vf_pw_connection *connection, const char *name, const char *description, const vf_pw_format *formats,
    int count, char *error, size_t error_size);

/// Offers `formats` instead (a consumer linked now renegotiates). Returns 0 or a negative errno.
int vf_pw_vcam_update_formats(vf_pw_vcam *vcam, const vf_pw_format *formats, int count);

/// The node's object.serial (0 until the daemon has given it one).
uint32_t vf_pw_vcam_serial(vf_pw_vcam *vcam);

/// What a consumer agreed on and how the node stands.
typedef struct {
    /// 1 while a consumer's link is streaming (frames can be queued).
    int streaming;
    /// 1 once a format was negotiated (then `format`, `stride` and `frame_size` hold it).
    int has_format;
    vf_pw_format format;
    int32_t stride;
    uint32_t frame_size;
    /// Frames queued to consumers, and frames refused because no buffer was free.
    uint64_t queued;
    uint64_t busy;
    /// The node's last error ("" when none).
    char error[256];
} vf_pw_vcam_status;

/// Reads the node's status.
void vf_pw_vcam_get_status(vf_pw_vcam *vcam, vf_pw_vcam_status *status);

/// Writes one frame into a buffer of the node: `data` (`capacity` bytes, rows `stride` apart in the
/// negotiated `format`); returns the bytes written, 0 when the frame could not be written.
typedef uint32_t (*vf_pw_vcam_fill_fn)(
    void *user, uint8_t *data, uint32_t capacity, int32_t stride, const vf_pw_format *format);

/// Publishes one frame without waiting for a buffer: takes a free one, lets `fill` write it (on
/// the calling thread, with the loop locked, so the buffer cannot go away meanwhile), stamps it
/// with sequence number `seq` and `pts_ns` (a spa_meta_header), queues it and starts a graph
/// cycle. Returns 1 when queued; 0 when the consumer holds every buffer or is still in the cycle
/// the previous frame started (nothing written: drop the frame; a new cycle would overrun the
/// consumer and the graph would lose a frame without a count); -1 when no consumer is streaming; -2 when `fill` wrote nothing (the buffer went
/// back flagged corrupted).
int vf_pw_vcam_publish(vf_pw_vcam *vcam, uint64_t seq, int64_t pts_ns, vf_pw_vcam_fill_fn fill, void *user);

/// Removes the node. No callback runs after it returns.
void vf_pw_vcam_close(vf_pw_vcam *vcam);

#endif
