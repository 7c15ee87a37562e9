#include "CALSA.h"
#include <string.h>

static void vf_alsa_quiet_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

void vf_alsa_silence_errors(void) { snd_lib_error_set_handler(vf_alsa_quiet_handler); }

int vf_alsa_open_capture(snd_pcm_t **pcm, const char *name, const char *extra_config, int nonblocking,
                         snd_config_t **config_out) {
    int mode = nonblocking ? SND_PCM_NONBLOCK : 0;
    *config_out = NULL;
    if (extra_config == NULL) return snd_pcm_open(pcm, name, SND_PCM_STREAM_CAPTURE, mode);
    snd_config_t *global = NULL;
    int err = snd_config_update_ref(&global);
    if (err < 0) return err;
    snd_config_t *tree = NULL;
    err = snd_config_copy(&tree, global);
    snd_config_unref(global);
    if (err < 0) return err;
    snd_input_t *input = NULL;
    err = snd_input_buffer_open(&input, extra_config, (ssize_t)strlen(extra_config));
    if (err >= 0) {
        err = snd_config_load(tree, input);
        snd_input_close(input);
    }
    if (err >= 0) err = snd_pcm_open_lconf(pcm, name, SND_PCM_STREAM_CAPTURE, mode, tree);
    if (err < 0) {
        snd_config_delete(tree);
        return err;
    }
    *config_out = tree;
    return 0;
}

int vf_alsa_configure(snd_pcm_t *pcm, snd_pcm_format_t format, unsigned int *rate, unsigned int *channels,
                      snd_pcm_uframes_t *period_frames, snd_pcm_uframes_t *buffer_frames) {
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    int err = snd_pcm_hw_params_any(pcm, hw);
    if (err < 0) return err;
    if ((err = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_format(pcm, hw, format)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_channels_near(pcm, hw, channels)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_rate_resample(pcm, hw, 0)) < 0) return err;
    int dir = 0;
    if ((err = snd_pcm_hw_params_set_rate_near(pcm, hw, rate, &dir)) < 0) return err;
    dir = 0;
    if ((err = snd_pcm_hw_params_set_period_size_near(pcm, hw, period_frames, &dir)) < 0) return err;
    if ((err = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, buffer_frames)) < 0) return err;
    if ((err = snd_pcm_hw_params(pcm, hw)) < 0) return err;
    dir = 0;
    snd_pcm_hw_params_get_period_size(hw, period_frames, &dir);
    snd_pcm_hw_params_get_buffer_size(hw, buffer_frames);

    snd_pcm_sw_params_t *sw;
    snd_pcm_sw_params_alloca(&sw);
    if ((err = snd_pcm_sw_params_current(pcm, sw)) < 0) return err;
    if ((err = snd_pcm_sw_params_set_avail_min(pcm, sw, *period_frames)) < 0) return err;
    if ((err = snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE)) < 0) return err;
    if ((err = snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC)) < 0) return err;
    return snd_pcm_sw_params(pcm, sw);
}

int vf_alsa_probe(snd_pcm_t *pcm, unsigned int *rate_min, unsigned int *rate_max, unsigned int *channels_min,
                  unsigned int *channels_max, unsigned int *format_mask) {
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    int err = snd_pcm_hw_params_any(pcm, hw);
    if (err < 0) return err;
    if ((err = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0) return err;
    int dir = 0;
    if ((err = snd_pcm_hw_params_get_rate_min(hw, rate_min, &dir)) < 0) return err;
    dir = 0;
    if ((err = snd_pcm_hw_params_get_rate_max(hw, rate_max, &dir)) < 0) return err;
    if ((err = snd_pcm_hw_params_get_channels_min(hw, channels_min)) < 0) return err;
    if ((err = snd_pcm_hw_params_get_channels_max(hw, channels_max)) < 0) return err;
    const snd_pcm_format_t formats[3] = {SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_FLOAT_LE};
    *format_mask = 0;
    for (unsigned int i = 0; i < 3; i++) {
        if (snd_pcm_hw_params_test_format(pcm, hw, formats[i]) == 0) *format_mask |= 1u << i;
    }
    return 0;
}

int vf_alsa_supports(snd_pcm_t *pcm, snd_pcm_format_t format, unsigned int rate, unsigned int channels) {
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    if (snd_pcm_hw_params_any(pcm, hw) < 0) return 0;
    if (snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED) < 0) return 0;
    if (snd_pcm_hw_params_set_format(pcm, hw, format) < 0) return 0;
    if (snd_pcm_hw_params_set_channels(pcm, hw, channels) < 0) return 0;
    if (snd_pcm_hw_params_set_rate_resample(pcm, hw, 0) < 0) return 0;
    return snd_pcm_hw_params_test_rate(pcm, hw, rate, 0) == 0 ? 1 : 0;
}

long long vf_alsa_xrun_nanoseconds(snd_pcm_t *pcm) {
    snd_pcm_status_t *status;
    snd_pcm_status_alloca(&status);
    if (snd_pcm_status(pcm, status) < 0) return 0;
    if (snd_pcm_status_get_state(status) != SND_PCM_STATE_XRUN) return 0;
    snd_htimestamp_t trigger;
    snd_pcm_status_get_trigger_htstamp(status, &trigger);
    return (long long)trigger.tv_sec * 1000000000LL + trigger.tv_nsec;
}
