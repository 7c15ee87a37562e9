#ifndef VIEWFINDER_CALSA_H
#define VIEWFINDER_CALSA_H
#include <alsa/asoundlib.h>

/// Routes alsa-lib's diagnostic messages (normally printed to stderr) to nowhere: Viewfinder
/// reports every failure through its own typed errors. Safe to call more than once.
void vf_alsa_silence_errors(void);

/// Opens PCM `name` for capture. With `extra_config` NULL this is plain `snd_pcm_open` on the
/// system configuration. Otherwise the text is parsed (`snd_config_load`) over a copy of the
/// system configuration and the PCM is opened from that tree (`snd_pcm_open_lconf`); the tree is
/// returned in `*config_out` and must stay alive until after `snd_pcm_close` (free it with
/// `snd_config_delete`). Returns 0 or a negative errno.
int vf_alsa_open_capture(snd_pcm_t **pcm, const char *name, const char *extra_config, int nonblocking,
                         snd_config_t **config_out);

/// Sets interleaved read/write access, `format`, the nearest rate and channel count, and the
/// nearest period and buffer sizes (in frames); then software parameters: wake-up at one period,
/// timestamps enabled on CLOCK_MONOTONIC. The values chosen are written back. Returns 0 or a
/// negative errno.
int vf_alsa_configure(snd_pcm_t *pcm, snd_pcm_format_t format, unsigned int *rate, unsigned int *channels,
                      snd_pcm_uframes_t *period_frames, snd_pcm_uframes_t *buffer_frames);

/// What a PCM can do: rate and channel ranges and which of S16_LE, S32_LE, FLOAT_LE it takes
/// (bits 0, 1, 2 of `*format_mask`). Returns 0 or a negative errno.
int vf_alsa_probe(snd_pcm_t *pcm, unsigned int *rate_min, unsigned int *rate_max, unsigned int *channels_min,
                  unsigned int *channels_max, unsigned int *format_mask);

/// Whether the PCM takes `format` at exactly `rate` with `channels` channels (1) or not (0).
int vf_alsa_supports(snd_pcm_t *pcm, snd_pcm_format_t format, unsigned int rate, unsigned int channels);

/// The timestamp of the last xrun (the trigger timestamp `snd_pcm_status` reports once the PCM
/// is in the XRUN state), in nanoseconds on the PCM's timestamp clock; 0 when unknown.
long long vf_alsa_xrun_nanoseconds(snd_pcm_t *pcm);

#endif
