// TurboJPEG's own decode cost for Scripts/capture-path-bench.sh: decodes one JPEG file N times on one
// thread, to planar Y'CbCr at the JPEG's own subsampling ("planes", the floor for NV12: no chroma
// repack) or to BGRA ("bgra"), and touches nothing else. By default into one reused (cache-hot)
// buffer; with DESTINATIONS > 1 into that many buffers in turn, as a capture path must (each
// delivered frame is a buffer the application may still hold while the next one decodes), so the
// destination is as cold as it is there. Same decoder, same flags either way.
//   turbojpeg_floor FILE.jpg planes|bgra FRAMES [DESTINATIONS]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

int main(int argc, char **argv) {
    int destinations = argc == 5 ? atoi(argv[4]) : 1;
    if ((argc != 4 && argc != 5) || (strcmp(argv[2], "planes") && strcmp(argv[2], "bgra")) || destinations < 1
        || destinations > 64) {
        fprintf(stderr, "usage: %s FILE.jpg planes|bgra FRAMES [DESTINATIONS (1-64)]\n", argv[0]);
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
    unsigned char *outs[64][3] = {{0}};
    int strides[3] = {0};
    for (int d = 0; d < destinations; d++) {
        for (int i = 0; i < (planes ? 3 : 1); i++) {
            int plane_width = planes ? tjPlaneWidth(i, width, subsampling) : width;
            int plane_height = planes ? tjPlaneHeight(i, height, subsampling) : height;
            strides[i] = planes ? plane_width : width * 4;
            size_t bytes = (size_t)strides[i] * (size_t)plane_height;
            outs[d][i] = malloc(bytes);
            if (!outs[d][i]) return 1;
            memset(outs[d][i], 0, bytes);  // Mapped before timing, as a pool's buffers are.
        }
    }
    long frames = atol(argv[3]);
    for (long n = 0; n < frames; n++) {
        unsigned char **out = outs[n % destinations];
        int failed = planes ? tjDecompressToYUVPlanes(handle, jpeg, (unsigned long)size, out, width, strides, height, 0)
                            : tjDecompress2(handle, jpeg, (unsigned long)size, out[0], width, strides[0], height,
                                  TJPF_BGRA, 0);
        if (failed) {
            fprintf(stderr, "turbojpeg_floor: %s\n", tjGetErrorStr2(handle));
            return 1;
        }
    }
    tjDestroy(handle);
    for (int d = 0; d < destinations; d++)
        for (int i = 0; i < 3; i++) free(outs[d][i]);
    free(jpeg);
    return 0;
}
