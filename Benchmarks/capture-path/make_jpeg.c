// Webcam-like JPEG frames for Scripts/capture-path-bench.sh: encodes one full-range planar 4:2:2
// Y'CbCr picture (ffmpeg -pix_fmt yuvj422p -f rawvideo) as a baseline JPEG with TurboJPEG, 4:2:2 at
// the given quality, as UVC cameras send MJPEG, and prints its bits per pixel.
//   make_jpeg INPUT.yuv WIDTH HEIGHT QUALITY OUTPUT.jpg
#include <stdio.h>
#include <stdlib.h>
#include <turbojpeg.h>

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s INPUT.yuv WIDTH HEIGHT QUALITY OUTPUT.jpg\n", argv[0]);
        return 2;
    }
    int width = atoi(argv[2]), height = atoi(argv[3]), quality = atoi(argv[4]);
    if (width <= 0 || height <= 0 || quality < 1 || quality > 100) {
        fprintf(stderr, "make_jpeg: bad size or quality\n");
        return 2;
    }
    size_t luma = (size_t)width * height, chroma = (size_t)((width + 1) / 2) * height;
    unsigned char *picture = malloc(luma + 2 * chroma);
    FILE *input = fopen(argv[1], "rb");
    if (!picture || !input || fread(picture, 1, luma + 2 * chroma, input) != luma + 2 * chroma) {
        fprintf(stderr, "make_jpeg: cannot read %zu bytes of 4:2:2 from %s\n", luma + 2 * chroma, argv[1]);
        return 1;
    }
    fclose(input);
    const unsigned char *planes[3] = {picture, picture + luma, picture + luma + chroma};
    int strides[3] = {width, (width + 1) / 2, (width + 1) / 2};
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    tjhandle handle = tjInitCompress();
    if (!handle || tjCompressFromYUVPlanes(handle, planes, width, strides, height, TJSAMP_422, &jpeg, &size, quality,
                       TJFLAG_ACCURATEDCT) != 0) {
        fprintf(stderr, "make_jpeg: %s\n", tjGetErrorStr2(handle));
        return 1;
    }
    FILE *output = fopen(argv[5], "wb");
    if (!output || fwrite(jpeg, 1, size, output) != size || fclose(output) != 0) {
        perror(argv[5]);
        return 1;
    }
    printf("%.2f\n", (double)size * 8 / (double)luma);
    tjFree(jpeg);
    tjDestroy(handle);
    free(picture);
    return 0;
}
