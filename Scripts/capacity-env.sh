#!/usr/bin/env bash
# The room the capacity benchmark (viewfinder-bench's capacity/ group) runs in: several plug-in
# cameras (Tests/V4L2Plugin) as /dev/video0, /dev/video1, … that Viewfinder, GStreamer's v4l2src
# and FFmpeg's v4l2 input all open through libv4l2. viewfinder-bench runs its capacity worker
# through this script; it is not meant to be run by hand.
#
#   Scripts/capacity-env.sh -- COMMAND...
#
# It builds the plug-in camera and Benchmarks/capture-path/chardev_preload.c, then runs COMMAND in
# Scripts/v4l2-plugin.sh's private mount namespace (the plug-in installed there only) with a tmpfs
# over /dev holding the few real nodes the tools need (null, zero, full, random, urandom, tty,
# shm): COMMAND writes its camera files there, and nothing on the machine changes. How the peers
# reach the plug-in (found on Debian 12, as Scripts/capture-path-bench.sh says):
# - FFmpeg is not built with libv4l2: LD_PRELOAD of libv4l's v4l2convert.so routes its calls to
#   libv4l2, for paths under /dev/video* only (hence the tmpfs /dev);
# - GStreamer 1.22 uses libv4l2 with GST_V4L2_USE_LIBV4L2=1 and refuses a device that stat() does
#   not call a character device: chardev_preload.so reports /dev/video* so, and answers the
#   VIDIOC_G_INPUT/S_INPUT/ENUMINPUT FFmpeg needs.
# COMMAND gets VIEWFINDER_CAPACITY_ENV=1, VIEWFINDER_CAPACITY_CHARDEV (chardev_preload.so) and
# VIEWFINDER_CAPACITY_V4L2CONVERT (v4l2convert.so).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$root/.build/capacity

if [ "${1:-}" = "--inner" ]; then
    shift
    [ "${1:-}" = "--" ] && shift
    if [ "${VIEWFINDER_FAKE_CAMERA:-}" != namespace ]; then
        echo "capacity-env: no private mount namespace (${VIEWFINDER_FAKE_CAMERA_SKIPPED:-${VIEWFINDER_FAKE_CAMERA:-unknown}}); refusing to replace /dev" >&2
        exit 1
    fi
    olddev=$(mktemp -d /tmp/capacity-dev.XXXXXX)
    mount --bind /dev "$olddev"
    mount -t tmpfs -o mode=755 tmpfs /dev
    for node in null zero full random urandom tty; do
        touch "/dev/$node"
        mount --bind "$olddev/$node" "/dev/$node"
    done
    mkdir -p /dev/shm
    mount -t tmpfs tmpfs /dev/shm
    VIEWFINDER_CAPACITY_ENV=1 exec "$@"
fi

[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: $0 -- COMMAND..." >&2; exit 2; }
mkdir -p "$work"
Scripts/v4l2-plugin.sh build >/dev/null
if [ ! -f "$work/chardev_preload.so" ] || [ Benchmarks/capture-path/chardev_preload.c -nt "$work/chardev_preload.so" ]; then
    cc -O2 -fPIC -shared -Wall -Wextra -o "$work/chardev_preload.so" Benchmarks/capture-path/chardev_preload.c -ldl
fi
export VIEWFINDER_CAPACITY_CHARDEV=$work/chardev_preload.so
VIEWFINDER_CAPACITY_V4L2CONVERT=$(dirname "$(Scripts/v4l2-plugin.sh dir)")/v4l2convert.so
export VIEWFINDER_CAPACITY_V4L2CONVERT
exec Scripts/v4l2-plugin.sh run -- "$root/Scripts/capacity-env.sh" --inner -- "$@"
