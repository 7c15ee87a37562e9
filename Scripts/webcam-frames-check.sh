#!/usr/bin/env bash
# The products split, checked as an app that wants only a webcam would meet it: installs only the
# core and V4L2 products' Debian packages, builds Samples/webcam-frames (it depends on
# ViewfinderCore and ViewfinderV4L2 alone), captures 30 frames from the libv4l2 plug-in camera
# (Scripts/v4l2-plugin.sh) and fails if the binary links PipeWire, FFmpeg's libavformat or
# libavcodec, SDL2, libwebsockets or D-Bus. CI runs it (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh core v4l2
swift build --package-path Samples/webcam-frames
binary="$(swift build --package-path Samples/webcam-frames --show-bin-path)/webcam-frames"

forbidden='libpipewire|libspa|libavformat|libavcodec|libSDL2|libwebsockets|libdbus'
if ldd "$binary" | grep -E "$forbidden"; then
    echo "webcam-frames-check: the core + V4L2 app links a library of another product (above)" >&2
    exit 1
fi
echo "webcam-frames-check: ldd names none of ${forbidden//|/, } ($(ldd "$binary" | wc -l) libraries)"

# A 320x240 YUYV plug-in camera at 30 fps in a directory of its own, as the app's /dev.
directory=$(mktemp -d /tmp/webcam-frames.XXXXXX)
trap 'rm -rf "$directory"' EXIT
{
    printf 'VIEWFINDER-FAKE-CAMERA 1\ncard Webcam Frames Check\ndriver uvcvideo\nbus usb-webcam-frames\npaced 1\n'
    printf 'format YUYV 0 YUYV 4:2:2\nsize 320 240\ninterval 1 30\nframe YUYV 320 240 0 153600\ndata\n'
    head -c 153600 /dev/zero | tr '\0' '\200'
} >"$directory/video0.tmp"
mv "$directory/video0.tmp" "$directory/video0"
if [ -n "${VIEWFINDER_FAKE_CAMERA_SKIPPED:-}" ]; then unset VIEWFINDER_FAKE_CAMERA_SKIPPED; fi
Scripts/v4l2-plugin.sh run -- sh -c '
    if [ -n "${VIEWFINDER_FAKE_CAMERA_SKIPPED:-}" ]; then
        echo "webcam-frames-check: the plug-in camera could not be installed: $VIEWFINDER_FAKE_CAMERA_SKIPPED" >&2
        exit 1
    fi
    exec "$0" --frames 30 --directory "$1"' "$binary" "$directory"
