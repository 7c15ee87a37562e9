#!/usr/bin/env bash
# The products split, checked as an app that wants only a webcam would meet it: installs only the
# core and V4L2 products' Debian packages, builds Samples/webcam-frames (it depends on
# ViewfinderCore and ViewfinderV4L2 alone), captures 30 frames from the libv4l2 plug-in camera
# (Scripts/v4l2-plugin.sh) and fails if the binary links PipeWire, FFmpeg's libavformat or
# libavcodec, SDL2, libwebsockets or D-Bus. Then the README's quick start, as a newcomer makes it:
# a new package from the README's quick-start Package.swift and main.swift (nothing else; beside
# it a link named Viewfinder to this checkout, where the manifest's `.package(path:
# "../Viewfinder")` looks), built with the same packages, run against the plug-in camera (it must
# name the camera and print frames, and not call it virtual) and against the virtual camera
# (VIEWFINDER_VIRTUAL_DEVICES=1 and an empty device directory: it must say the camera is
# virtual). CI runs it (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || {
    echo "$(basename "$0"): python3 is needed to read the README's code blocks (Scripts/doc-snippets.py): apt-get install python3" >&2
    exit 1
}
Scripts/install-dependencies.sh core v4l2
swift build --package-path Samples/webcam-frames
binary="$(swift build --package-path Samples/webcam-frames --show-bin-path)/webcam-frames"

forbidden='libpipewire|libspa|libavformat|libavcodec|libSDL2|libwebsockets|libdbus'
if ldd "$binary" | grep -E "$forbidden"; then
    echo "webcam-frames-check: the core + V4L2 app links a library of another product (above)" >&2
    exit 1
fi
echo "webcam-frames-check: ldd names none of ${forbidden//|/, } ($(ldd "$binary" | wc -l) libraries)"

# The quick start's package, from the README alone.
quick=$(mktemp -d /tmp/quick-start.XXXXXX)
trap 'rm -rf "$quick"' EXIT
ln -s "$(pwd)" "$quick/Viewfinder"
quick_name=$(python3 Scripts/doc-snippets.py --quick-start README.md "$quick/quick-start")
# (Its build directory is kept in this checkout's .build, so a second run only relinks.)
quick_build=(swift build --package-path "$quick/quick-start" --scratch-path "$(pwd)/.build/quick-start")
"${quick_build[@]}"
quick_binary="$("${quick_build[@]}" --show-bin-path)/$quick_name"

# A 320x240 YUYV plug-in camera at 30 fps in a directory of its own, as the app's /dev.
directory=$(mktemp -d /tmp/webcam-frames.XXXXXX)
trap 'rm -rf "$directory" "$quick"' EXIT
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
    "$0" --frames 30 --directory "$1" || exit 1
    echo "webcam-frames-check: the README quick start, on the plug-in camera:"
    "$2" "$1" >"$3/plugin.out" 2>&1 || { cat "$3/plugin.out"; exit 1; }' \
    "$binary" "$directory" "$quick_binary" "$quick"
cat "$quick/plugin.out"
grep -q '^camera: Webcam Frames Check (external' "$quick/plugin.out" &&
    grep -q '^frame 3: 320x240 BGRA' "$quick/plugin.out" && ! grep -q virtual "$quick/plugin.out" || {
    echo "webcam-frames-check: the quick start did not name the plug-in camera as a real V4L2 camera and print its frames" >&2
    exit 1
}

echo "webcam-frames-check: the README quick start, on the virtual camera (no camera in its directory):"
mkdir "$quick/no-cameras"
VIEWFINDER_VIRTUAL_DEVICES=1 "$quick_binary" "$quick/no-cameras" | tee "$quick/virtual.out"
grep -q '^camera: Test Pattern Camera (virtual' "$quick/virtual.out" && grep -q '^frame 3: ' "$quick/virtual.out" || {
    echo "webcam-frames-check: the quick start did not say the virtual camera is virtual, or printed no frames" >&2
    exit 1
}
echo "webcam-frames-check: the quick start built from the README ran on the plug-in and the virtual camera"
