#ifndef VIEWFINDER_CTURBOJPEG_H
#define VIEWFINDER_CTURBOJPEG_H
// libjpeg-turbo's TurboJPEG 2.x API as Debian 12 ships it (libturbojpeg0-dev 2.1.5; no tj3
// functions). Its functions are plain C and Swift calls them directly; the TJFLAG_* values are
// integer macros Swift imports as constants. The helpers below only bundle what Swift would
// otherwise repeat.
#include <turbojpeg.h>

/// Whether the last failure of `handle` was a warning (TJERR_WARNING: the image may be
/// complete but damaged, e.g. a truncated or corrupt entropy-coded segment) rather than fatal.
int vf_tj_last_error_is_warning(tjhandle handle);

/// The plane sizes TurboJPEG uses for component `component` (0 = Y, 1 = Cb, 2 = Cr) of a
/// `width` x `height` image with subsampling `subsamp`: writes width and height, returns 0, or
/// -1 if the arguments are invalid.
int vf_tj_plane_size(int component, int width, int height, int subsamp, int *planeWidth, int *planeHeight);

#endif
