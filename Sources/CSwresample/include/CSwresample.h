#ifndef VIEWFINDER_CSWRESAMPLE_H
#define VIEWFINDER_CSWRESAMPLE_H
#include <libswresample/swresample.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>

/// Allocates and initialises a resampler from (`in_format`, `in_rate`, `in_channels`) to
/// (`out_format`, `out_rate`, `out_channels`), using FFmpeg's default channel layouts for the
/// channel counts. Returns 0 or a negative AVERROR; `*context` is NULL on failure.
int vf_swr_make(SwrContext **context, enum AVSampleFormat out_format, int out_rate, int out_channels,
                enum AVSampleFormat in_format, int in_rate, int in_channels);

/// The negative AVERROR code for `errno`-style `code` (AVERROR is a function-like macro).
static inline int vf_swr_averror(int code) { return AVERROR(code); }

#endif
