// TurboJPEG's own decode cost for Scripts/capture-path-bench.sh: decodes one JPEG file N times on one
// thread into one reused buffer, to planar Y'CbCr at the JPEG's own subsampling ("planes", the floor
// for NV12: no chroma repack) or to BGRA ("bgra"), and touches nothing else.
//   turbojpeg_floor FILE.jpg planes|bgra FRAMES
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[2], "planes") && strcmp(argv[2], "bgra"))) {
        fprintf(stderr, "usage: %s FILE.jpg planes|bgra FRAMES\n", argv[0]);
        return 2;
    }
    FILE *input = fopen(argv[1], "rb");
    if (!input) { perror(argv[1]); return 1; }
    fseek(input, 0, SEEK_END);
    long size = ftell(input);
    fseek(input, 0, SEEK_SET);
    unsigned char *jpeg = size > 0 ? malloc((size_t)size) : NULL;
    if (!jpeg || fread(jpeg, 1, (size_t)size, input) != (size_t)size) {
        fprintf(stderr, "turbojpeg_floor: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(input);
    tjhandle handle = tjInitDecompress();
    int width, height, subsampling, colorspace;
    if (!handle || tjDecompressHeader3(handle, jpeg, (unsigned long)size, &width, &height, &subsampling, &colorspace)) {
        fprintf(stderr, "turbojpeg_floor: %s\n", tjGetErrorStr2(handle));
        return 1;
    }
    int planes = strcmp(argv[2], "planes") == 0;
    unsigned char *out[3] = {0};
    int strides[3] = {0};
    for (int i = 0; i < (planes ? 3 : 1); i++) {
        int plane_width = planes ? tjPlaneWidth(i, width, subsampling) : width;
        int plane_height = planes ? tjPlaneHeight(i, height, subsampling) : height;
        strides[i] = planes ? plane_width : width * 4;
        out[i] = malloc((size_t)strides[i] * (size_t)plane_height);
        if (!out[i]) return 1;
    }
    long frames = atol(argv[3]);
    for (long n = 0; n < frames; n++) {
        int failed = planes ? tjDecompressToYUVPlanes(handle, jpeg, (unsigned long)size, out, width, strides, height, 0)
                            : tjDecompress2(handle, jpeg, (unsigned long)size, out[0], width, strides[0], height,
                                  TJPF_BGRA, 0);
        if (failed) {
            fprintf(stderr, "turbojpeg_floor: %s\n", tjGetErrorStr2(handle));
            return 1;
        }
    }
    tjDestroy(handle);
    for (int i = 0; i < 3; i++) free(out[i]);
    free(jpeg);
    return 0;
}
