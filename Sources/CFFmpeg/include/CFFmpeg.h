#ifndef VIEWFINDER_CFFMPEG_H
#define VIEWFINDER_CFFMPEG_H
// FFmpeg's libavformat, libavcodec and libavutil as Debian 12 ships them (FFmpeg 5.1), plus the
// few things Swift cannot reach directly: the AVERROR and AV_NOPTS_VALUE macros, av_err2str,
// the fixed-size plane arrays of AVFrame, and a file sink (an AVIOContext over a file
// descriptor that counts bytes and can be told to fail like a full disk after N bytes).
#include <stdint.h>
#include <stddef.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

/// AVERROR(e): FFmpeg's negative error code for the errno `e`.
static inline int vf_averror(int e) { return AVERROR(e); }
/// The errno behind an FFmpeg error code (AVUNERROR), meaningful only for codes made by AVERROR.
static inline int vf_avunerror(int code) { return AVUNERROR(code); }
/// AVERROR_EOF: end of stream (a function-like tag macro in C).
static inline int vf_averror_eof(void) { return AVERROR_EOF; }
/// AVERROR(EAGAIN): output not available now, feed more input (or drain).
static inline int vf_averror_eagain(void) { return AVERROR(EAGAIN); }
/// AVERROR_ENCODER_NOT_FOUND.
static inline int vf_averror_encoder_not_found(void) { return AVERROR_ENCODER_NOT_FOUND; }
/// AV_NOPTS_VALUE: "no timestamp".
static inline int64_t vf_nopts_value(void) { return AV_NOPTS_VALUE; }
/// AV_TIME_BASE_Q (1/1,000,000) as a value.
static inline AVRational vf_time_base_q(void) { return (AVRational){1, AV_TIME_BASE}; }
/// AV_CODEC_FLAG_GLOBAL_HEADER.
static inline int vf_codec_flag_global_header(void) { return AV_CODEC_FLAG_GLOBAL_HEADER; }

/// av_err2str without the compound literal: writes the message for `code` into `buffer`.
static inline const char *vf_err2str(int code, char *buffer, size_t size) {
    av_strerror(code, buffer, size);
    return buffer;
}

/// Points plane `plane` of `frame` at `data`, rows `linesize` bytes apart.
static inline void vf_frame_set_plane(AVFrame *frame, int plane, uint8_t *data, int linesize) {
    frame->data[plane] = data;
    frame->linesize[plane] = linesize;
}
/// Plane `plane` of `frame`.
static inline uint8_t *vf_frame_plane(const AVFrame *frame, int plane) { return frame->data[plane]; }
/// The frame's plane pointers as the `void **` av_audio_fifo_read and _write take.
static inline void **vf_frame_data(AVFrame *frame) { return (void **)frame->data; }
/// Row stride of plane `plane` of `frame`.
static inline int vf_frame_linesize(const AVFrame *frame, int plane) { return frame->linesize[plane]; }
/// Sets the frame's first buffer reference (what makes a frame reference-counted).
static inline void vf_frame_set_buffer(AVFrame *frame, AVBufferRef *buffer) { frame->buf[0] = buffer; }
/// A const pointer array view of the frame's planes, for sws_scale.
static inline const uint8_t *const *vf_frame_planes(const AVFrame *frame) {
    return (const uint8_t *const *)frame->data;
}
/// The frame's row strides, for sws_scale.
static inline const int *vf_frame_linesizes(const AVFrame *frame) { return frame->linesize; }

/// Where a ``vf_file_sink`` writes: a file descriptor, the byte count, and an optional limit.
typedef struct VFFileSink {
    /// The descriptor written with pwrite (the caller opens and closes it).
    int fd;
    /// The offset of the next write (moved by seeks).
    int64_t position;
    /// The file's size as written so far: the highest byte offset reached.
    int64_t size;
    /// When positive, writes past this many bytes fail with ENOSPC (a disk that fills up).
    int64_t limit;
    /// The errno of the first failed write or seek, 0 if none failed.
    int error;
} VFFileSink;

/// An AVIOContext writing to `sink` (write + seek) through a `buffer_size`-byte buffer; NULL
/// when out of memory. Free with vf_file_sink_close.
AVIOContext *vf_file_sink_open(VFFileSink *sink, int buffer_size);
/// Frees an AVIOContext made by vf_file_sink_open and its buffer (does not flush or close the fd).
void vf_file_sink_close(AVIOContext **context);
/// The error recorded on an AVIOContext (0 if none).
static inline int vf_avio_error(const AVIOContext *context) { return context ? context->error : 0; }

#endif
