#!/usr/bin/env bash
# Installs the Debian packages Viewfinder builds against, if any are missing:
#   libv4l-dev (libv4l2: real cameras), libswscale-dev (libswscale + libavutil: conversion),
#   libyuv-dev (libyuv: fast conversion), libasound2-dev (alsa-lib: microphones),
#   libswresample-dev (libswresample: audio conversion), libavformat-dev libavcodec-dev
#   (FFmpeg: recording and file replay), libturbojpeg0-dev (JPEG), libexif-dev (photo metadata),
#   ffmpeg (ffprobe and the ffmpeg CLI for the recording tests), libsdl2-dev (the preview window),
#   xvfb x11-apps netpbm (the preview window's test: a virtual X display, xwd, pnmtopng),
#   libwebsockets-dev (the preview page's HTTP and WebSocket server), chromium chromium-driver
#   (the preview page's browser tests and the latency benchmark), libpipewire-0.3-dev
#   libspa-0.2-dev (the PipeWire camera backend), pipewire pipewire-bin wireplumber dbus-daemon (the
#   private daemon the PipeWire tests run beside, Scripts/pipewire.sh), libdbus-1-dev (the Camera
#   portal's D-Bus client), python3-dbus python3-gi (the portal tests' mock portal on a private bus),
#   gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good (the latency benchmark's
#   GStreamer peer: gst-launch-1.0, tcpserversink, multipartdemux/multipartmux, capssetter),
#   gstreamer1.0-pipewire (pipewiresrc: consumes the virtual camera output's node in its tests, and
#   is the pipewire/ benchmark's GStreamer peer).
# Runs apt-get as root, or through sudo when not root. Does nothing when all are present.
set -euo pipefail

packages=(libv4l-dev libswscale-dev libyuv-dev libasound2-dev libswresample-dev libavformat-dev libavcodec-dev libturbojpeg0-dev libjpeg62-turbo-dev libexif-dev ffmpeg libsdl2-dev xvfb x11-apps netpbm libwebsockets-dev chromium chromium-driver libpipewire-0.3-dev libspa-0.2-dev pipewire pipewire-bin wireplumber dbus-daemon libdbus-1-dev python3-dbus python3-gi gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-pipewire)
missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing missing system packages: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
else
    echo "error: ${missing[*]} must be installed and this user is not root and has no sudo." >&2
    echo "Ask an administrator to run: apt-get install ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Another apt-get (a second checkout's test run, an unattended upgrade) may hold dpkg's lock: wait
# for it rather than fail.
lock=(-o DPkg::Lock::Timeout=600)
"${sudo[@]}" apt-get "${lock[@]}" update -qq
"${sudo[@]}" apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
