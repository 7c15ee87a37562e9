#ifndef VIEWFINDER_CSWSCALE_H
#define VIEWFINDER_CSWSCALE_H
#include <libswscale/swscale.h>
#include <libavutil/pixfmt.h>

/// Returns the swscale colour-space coefficient table for ITU-R BT.601.
static inline const int *vf_sws_bt601_coefficients(void) { return sws_getCoefficients(SWS_CS_ITU601); }

#endif
