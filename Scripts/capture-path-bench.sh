#!/usr/bin/env bash
# The whole capture path against the peers, on the userspace fake camera through the real libv4l2:
# Viewfinder (viewfinder-bench capture) vs FFmpeg's v4l2 input vs GStreamer's v4l2src, CPU-ms per
# delivered frame (user + system of the whole process; the slope between a short and a long run,
# so start-up cancels), with the fake camera's own cost (Benchmarks/capture-path/stream_floor.c:
# DQBUF/QBUF through libv4l2 and nothing else) beside.
# Writes a Markdown table to stdout (and to $CAPTURE_PATH_OUT when set). Needs root.
#
#   Scripts/capture-path-bench.sh [--quick]
#
# How the peers reach the fake camera (found on Debian 12):
# - The fake (Tests/V4L2Plugin, a libv4l2 plugin) is a regular file served unpaced ("paced 0")
#   from frames filled once at start; each DQBUF copies the frame into the buffer (its own cost).
# - FFmpeg is not built with libv4l2 here; preloading libv4l's v4l2convert.so routes its calls
#   through libv4l2, but only for paths under /dev/video*. So the run happens in a private mount
#   namespace (Scripts/v4l2-plugin.sh run: unshare -m, also installing the plugin) with a tmpfs
#   over /dev holding the fake as /dev/video0 and the few real nodes the tools need.
# - GStreamer 1.22 uses libv4l2 only with GST_V4L2_USE_LIBV4L2=1 and refuses a device stat() does
#   not call a character device: Benchmarks/capture-path/chardev_preload.c reports /dev/video* so
#   (v4l2-ctl needs the same), and answers VIDIOC_G_INPUT/S_INPUT/ENUMINPUT, which FFmpeg requires
#   and the fake does not implement, with the one input of a UVC camera.
#
# MJPEG rows: set CAPTURE_PATH_MJPEG=1 once Viewfinder decodes MJPEG natively (the fake then also
# serves JPEG frames; see the "mjpeg" cases below).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

quick=0
inner=0
for argument in "$@"; do
    case "$argument" in
        --quick) quick=1 ;;
        --inner) inner=1 ;;
        *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
    esac
done

work=${CAPTURE_PATH_WORK:-$root/.build/capture-path}

if [ "$inner" -eq 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "capture-path-bench: needs root (a mount namespace with /dev replaced)" >&2; exit 1; }
    missing=()
    command -v gst-launch-1.0 >/dev/null 2>&1 || missing+=(gstreamer1.0-tools)
    [ -n "$(find /usr/lib -name libgstvideo4linux2.so 2>/dev/null | head -1)" ] || missing+=(gstreamer1.0-plugins-good)
    [ -n "$(find /usr/lib -name libgstvideoconvert.so 2>/dev/null | head -1)" ] || missing+=(gstreamer1.0-plugins-base)
    command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "capture-path-bench: installing ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
    fi
    swift build -c release --product viewfinder-bench >&2
    Scripts/v4l2-plugin.sh build >&2
    mkdir -p "$work"
    cc -O2 -fPIC -shared -Wall -Wextra -o "$work/chardev_preload.so" Benchmarks/capture-path/chardev_preload.c -ldl
    cc -O2 -Wall -Wextra -o "$work/stream_floor" Benchmarks/capture-path/stream_floor.c -lv4l2
    # The fake camera: YUYV at 1280x720 and 1920x1080, one frame each (ffmpeg's testsrc2).
    fake="$work/fake-yuyv"
    if [ ! -f "$fake" ]; then
        ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=1280x720 -frames:v 1 -pix_fmt yuyv422 \
            -f rawvideo -y "$work/720.yuyv"
        ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=1920x1080 -frames:v 1 -pix_fmt yuyv422 \
            -f rawvideo -y "$work/1080.yuyv"
        {
            printf 'VIEWFINDER-FAKE-CAMERA 1\ncard Bench Camera\ndriver uvcvideo\nbus usb-bench\npaced 0\n'
            printf 'format YUYV 0 YUYV 4:2:2\nsize 1280 720\ninterval 1 30\nsize 1920 1080\ninterval 1 30\n'
            printf 'frame YUYV 1280 720 0 1843200\nframe YUYV 1920 1080 1843200 4147200\ndata\n'
            cat "$work/720.yuyv" "$work/1080.yuyv"
        } > "$fake.tmp"
        mv "$fake.tmp" "$fake"
    fi
    args=(--inner)
    [ "$quick" -eq 1 ] && args+=(--quick)
    exec Scripts/v4l2-plugin.sh run -- "$0" "${args[@]}"
fi

# Inner: in the plugin's private mount namespace.
if [ "${VIEWFINDER_FAKE_CAMERA:-}" != namespace ]; then
    echo "capture-path-bench: no private mount namespace (${VIEWFINDER_FAKE_CAMERA_SKIPPED:-${VIEWFINDER_FAKE_CAMERA:-}}); refusing to replace /dev" >&2
    exit 1
fi
olddev=$(mktemp -d /tmp/capture-path-dev.XXXXXX)
mount --bind /dev "$olddev"
mount -t tmpfs -o mode=755 tmpfs /dev
for node in null zero full random urandom tty; do
    touch "/dev/$node"
    mount --bind "$olddev/$node" "/dev/$node"
done
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /dev/shm
cp "$work/fake-yuyv" /dev/video0

v4l2convert=$(dirname "$(Scripts/v4l2-plugin.sh dir)")/v4l2convert.so
bench="$root/.build/release/viewfinder-bench"
if [ "$quick" -eq 1 ]; then short=30; long=150; repeats=1; else short=100; long=1000; repeats=3; fi

# The command for a tool, case and frame count (words on one line each).
command_for() {
    local tool=$1 conversion=$2 width=$3 height=$4 frames=$5
    case "$tool" in
        viewfinder)
            local format=native
            [ "$conversion" = bgra ] && format=bgra
            [ "$conversion" = nv12 ] && format=nv12
            echo "$bench capture --format $format --size ${width}x${height} --frames $frames"
            ;;
        ffmpeg)
            local filter=""
            [ "$conversion" = bgra ] && filter="-vf format=bgra"
            [ "$conversion" = nv12 ] && filter="-vf format=nv12"
            echo "env LD_PRELOAD=$work/chardev_preload.so:$v4l2convert ffmpeg -nostdin -hide_banner -loglevel error -f v4l2 -input_format yuyv422 -video_size ${width}x${height} -i /dev/video0 -frames:v $frames -fps_mode passthrough $filter -f null -"
            ;;
        gstreamer)
            local tail="fakesink"
            [ "$conversion" = bgra ] && tail="videoconvert ! video/x-raw,format=BGRA ! fakesink"
            [ "$conversion" = nv12 ] && tail="videoconvert ! video/x-raw,format=NV12 ! fakesink"
            echo "env GST_V4L2_USE_LIBV4L2=1 LD_PRELOAD=$work/chardev_preload.so gst-launch-1.0 -q v4l2src device=/dev/video0 num-buffers=$frames ! video/x-raw,format=YUY2,width=$width,height=$height ! $tail"
            ;;
        fake)
            echo "$work/stream_floor /dev/video0 $width $height $frames"
            ;;
    esac
}

# CPU seconds (user + system of the process and its children) of one run of a command line.
cpu_of() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
command = sys.argv[1]
result = subprocess.run(command, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if result.returncode != 0:
    sys.stderr.write(result.stderr.decode(errors="replace")[-2000:])
    print("fail")
    sys.exit(0)
if "viewfinder-bench capture" in command:
    # What the session chose (camera format, delivered format, engine, statistics).
    sys.stderr.write(result.stderr.decode(errors="replace").strip().splitlines()[-1] + "\n")
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{usage.ru_utime + usage.ru_stime:.6f}")
PY
}

# CPU-ms per frame: the median over $repeats of (cpu(long) - cpu(short)) / (long - short).
slope() {
    local tool=$1 conversion=$2 width=$3 height=$4
    local values=()
    for _ in $(seq "$repeats"); do
        local a b
        a=$(cpu_of "$(command_for "$tool" "$conversion" "$width" "$height" "$short")")
        b=$(cpu_of "$(command_for "$tool" "$conversion" "$width" "$height" "$long")")
        if [ "$a" = fail ] || [ "$b" = fail ]; then echo "fail"; return; fi
        values+=("$(python3 -c "print(($b - $a) * 1000 / ($long - $short))")")
    done
    python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.2f}')" "${values[@]}"
}

cases=("yuyv native" "yuyv bgra" "yuyv nv12")
# MJPEG hook: once Viewfinder decodes MJPEG natively, add "mjpeg bgra" and "mjpeg nv12" cases
# (a fake file with frame-jpeg lines, ffmpeg -input_format mjpeg, GStreamer image/jpeg ! jpegdec).
[ "${CAPTURE_PATH_MJPEG:-0}" = 1 ] && echo "capture-path-bench: MJPEG rows are not wired yet" >&2

{
    echo "CPU-ms per delivered frame (user + system of the whole process; slope between $short and $long frames; median of $repeats)."
    echo "The fake camera is unpaced and copies each frame into the dequeued buffer (its own cost is the \"fake camera alone\" column)."
    echo
    echo "| camera → delivered | size | Viewfinder | FFmpeg (v4l2 + swscale) | GStreamer (v4l2src + videoconvert) | fake camera alone (libv4l2 DQBUF/QBUF) | FFmpeg ÷ Viewfinder | GStreamer ÷ Viewfinder |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|"
} | tee "${CAPTURE_PATH_OUT:-/dev/null}"
for size in "1280 720" "1920 1080"; do
    read -r width height <<< "$size"
    fk=$(slope fake native "$width" "$height")
    for case_ in "${cases[@]}"; do
        read -r source conversion <<< "$case_"
        vf=$(slope viewfinder "$conversion" "$width" "$height")
        ff=$(slope ffmpeg "$conversion" "$width" "$height")
        gs=$(slope gstreamer "$conversion" "$width" "$height")
        ratio() { python3 -c "import sys
try: print(f'{float(sys.argv[1]) / float(sys.argv[2]):.1f}×')
except Exception: print('–')" "$1" "$2"; }
        label="YUYV → ${conversion^^}"
        [ "$conversion" = native ] && label="YUYV native"
        echo "| $label | ${width}x${height} | $vf | $ff | $gs | $fk | $(ratio "$ff" "$vf") | $(ratio "$gs" "$vf") |" \
            | tee -a "${CAPTURE_PATH_OUT:-/dev/null}"
    done
done
{
    echo
    echo "Commands (N = frames):"
    echo
    for tool in viewfinder ffmpeg gstreamer fake; do
        echo "- \`$(command_for "$tool" bgra 1920 1080 N | sed "s#$root/##g; s#$work/#.build/capture-path/#g")\`"
    done
} | tee -a "${CAPTURE_PATH_OUT:-/dev/null}"
