#!/usr/bin/env bash
# Installs the Debian packages a purpose needs, if any are missing:
#
#   Scripts/install-dependencies.sh [PURPOSE...]
#
# A purpose is a product (what building and linking it needs), or what a script does:
#   core            ViewfinderCore: libswscale-dev libswresample-dev (libswscale, libswresample and
#                   libavutil: conversion), libyuv-dev (fast conversion), libturbojpeg0-dev
#                   libjpeg62-turbo-dev (JPEG), libexif-dev (photo metadata)
#   v4l2            ViewfinderV4L2: libv4l-dev (libv4l2)
#   pipewire        ViewfinderPipeWire: libpipewire-0.3-dev libspa-0.2-dev (PipeWire),
#                   libdbus-1-dev (the Camera portal), pkg-config (their headers' directories)
#   alsa            ViewfinderALSA: libasound2-dev (alsa-lib)
#   movie           ViewfinderMovie: libavformat-dev libavcodec-dev (FFmpeg)
#   web-preview     ViewfinderWebPreview: libwebsockets-dev
#   preview-window  ViewfinderPreviewWindow: libsdl2-dev
#   testing         ViewfinderTesting: nothing beyond core
#   metadata        ViewfinderMetadata: libzxing-dev (ZXing-cpp: QR and barcode decoding)
#   build           every product (the umbrella Viewfinder, the samples, docs and API checks)
#   demo            what Scripts/demo.sh needs: build
#   tests           what Scripts/test.sh needs: build, kernel-vm, and the tools the tests start
#                   (python3 also runs Scripts/doc-snippets.py for the documentation checks): ffmpeg
#                   (ffprobe, the ffmpeg CLI), xvfb x11-apps netpbm (the preview window's test: a
#                   virtual X display, xwd, pnmtopng), chromium chromium-driver (the preview page's
#                   browser tests), pipewire pipewire-bin wireplumber dbus-daemon (the private
#                   PipeWire daemon, Scripts/pipewire.sh), python3-dbus python3-gi (the mock Camera
#                   portal), gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
#                   gstreamer1.0-pipewire (pipewiresrc consumes the virtual camera output's node),
#                   qrencode zint (the metadata output's tests: QR codes and barcodes to decode)
#   kernel-vm       what Scripts/kernel-vm.sh needs (the kernel-driver tests' virtual machine):
#                   linux-image-amd64 (a kernel with vivid, snd-aloop, uvcvideo and 9p modules),
#                   qemu-system-x86 (TCG), busybox-static (the initramfs), v4l-utils (v4l2-ctl, the
#                   vivid suite's oracle), alsa-utils (aplay/arecord for the snd-aloop suite), usbip
#                   (usbipd/usbip: the uvcvideo suite's gadget attached over USB/IP), gcc and
#                   libturbojpeg0-dev (its gadget program, Tests/UVCGadget), udev (systemd-udevd and
#                   udevadm: WirePlumber's V4L2 monitor finds cameras through udev,
#                   Tests/KernelPipeWire/session.sh)
#   bench           what Scripts/bench.sh needs: tests (the peers are FFmpeg, GStreamer, Chromium)
# With no purpose: tests.
#
# Runs apt-get as root, or through sudo when not root. Does nothing when all are present.
set -euo pipefail

declare -A needs=(
    [core]="libswscale-dev libswresample-dev libyuv-dev libturbojpeg0-dev libjpeg62-turbo-dev libexif-dev"
    [v4l2]="libv4l-dev"
    [pipewire]="libpipewire-0.3-dev libspa-0.2-dev libdbus-1-dev pkg-config"
    [alsa]="libasound2-dev"
    [movie]="libavformat-dev libavcodec-dev"
    [web-preview]="libwebsockets-dev"
    [preview-window]="libsdl2-dev"
    [testing]=""
    [metadata]="libzxing-dev"
    [kernel-vm]="linux-image-amd64 qemu-system-x86 busybox-static v4l-utils alsa-utils usbip gcc libturbojpeg0-dev udev"
    [tools]="python3 ffmpeg xvfb x11-apps netpbm chromium chromium-driver pipewire pipewire-bin wireplumber dbus-daemon python3-dbus python3-gi gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-pipewire qrencode zint"
)
products=(core v4l2 pipewire alsa movie web-preview preview-window testing metadata)

purposes=("$@")
[ ${#purposes[@]} -eq 0 ] && purposes=(tests)
packages=()
for purpose in "${purposes[@]}"; do
    case "$purpose" in
        build | demo) for product in "${products[@]}"; do read -r -a more <<<"${needs[$product]}"; packages+=("${more[@]}"); done ;;
        tests | bench)
            for product in "${products[@]}" tools kernel-vm; do read -r -a more <<<"${needs[$product]}"; packages+=("${more[@]}"); done
            ;;
        testing) read -r -a more <<<"${needs[core]}"; packages+=("${more[@]}") ;;
        kernel-vm) read -r -a more <<<"${needs[kernel-vm]}"; packages+=("${more[@]}") ;;
        *)
            if [ -z "${needs[$purpose]+set}" ] || [ "$purpose" = tools ]; then
                echo "install-dependencies: unknown purpose '$purpose': use one of ${products[*]} build demo kernel-vm tests bench" >&2
                exit 2
            fi
            read -r -a more <<<"${needs[core]} ${needs[$purpose]}"
            packages+=("${more[@]}")
            ;;
    esac
done
missing=()
for package in $(printf '%s\n' "${packages[@]}" | sort -u); do
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
