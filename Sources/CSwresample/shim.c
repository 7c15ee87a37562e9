#include "CSwresample.h"

int vf_swr_make(SwrContext **context, enum AVSampleFormat out_format, int out_rate, int out_channels,
                enum AVSampleFormat in_format, int in_rate, int in_channels) {
    AVChannelLayout out_layout, in_layout;
    av_channel_layout_default(&out_layout, out_channels);
    av_channel_layout_default(&in_layout, in_channels);
    *context = NULL;
    int err = swr_alloc_set_opts2(context, &out_layout, out_format, out_rate, &in_layout, in_format, in_rate, 0, NULL);
    av_channel_layout_uninit(&out_layout);
    av_channel_layout_uninit(&in_layout);
    if (err < 0) return err;
    err = swr_init(*context);
    if (err < 0) swr_free(context);
    return err;
}
