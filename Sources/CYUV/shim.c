#include "CYUV.h"

const struct YuvConstants *vf_yuv_bt601_video(void) { return &kYuvI601Constants; }
const struct YuvConstants *vf_yuv_bt601_full(void) { return &kYuvJPEGConstants; }
