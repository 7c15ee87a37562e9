#include "CTurboJPEG.h"

int vf_tj_last_error_is_warning(tjhandle handle) { return tjGetErrorCode(handle) == TJERR_WARNING; }

int vf_tj_plane_size(int component, int width, int height, int subsamp, int *planeWidth, int *planeHeight) {
    int w = tjPlaneWidth(component, width, subsamp);
    int h = tjPlaneHeight(component, height, subsamp);
    if (w < 0 || h < 0) return -1;
    *planeWidth = w;
    *planeHeight = h;
    return 0;
}
