#!/usr/bin/env bash
# The whole capture path against the peers, on the userspace fake camera through the real libv4l2:
# Viewfinder (viewfinder-bench capture) vs FFmpeg's v4l2 input vs GStreamer's v4l2src, CPU-ms per
# delivered frame (user + system of the whole process; the slope between a short and a long run,
# so start-up cancels), with the fake camera's own cost (Benchmarks/capture-path/stream_floor.c:
# DQBUF/QBUF through libv4l2 and nothing else) beside, and for MJPEG TurboJPEG's own decode cost
# (Benchmarks/capture-path/turbojpeg_floor.c).
# Writes a Markdown table to stdout (and to $CAPTURE_PATH_OUT when set). Needs root.
#
#   Scripts/capture-path-bench.sh [--quick]
#
# For a partial run (while working on one path): CAPTURE_PATH_CASES="mjpeg nv12,mjpeg bgra" picks
# cases (default: all), CAPTURE_PATH_SIZES="1920x1080" sizes (default: 1280x720,1920x1080), and
# CAPTURE_PATH_PEERS=0 skips FFmpeg and GStreamer ("–" in their columns); CAPTURE_PATH_REPEATS=N
# repeats each row N times (default 3, 1 with --quick).
# CAPTURE_PATH_BASELINE=PATH adds another viewfinder-bench binary (an earlier commit's release
# build) as a contender interleaved with this one, and two columns: its figure and this build's
# over it (the before/after of a change, in one run).
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
# MJPEG rows: the fake camera also offers MJPG (as a UVC webcam offers YUYV and MJPEG), serving given
# JPEG bytes ("frame MJPG" lines): webcam-like frames made once by Benchmarks/capture-path/make_jpeg.c
# from ffmpeg's testsrc2 with per-pixel luma noise, 4:2:2, quality 85, about 1.2 bit/pixel (the
# colour-bar pattern decodes 2.5x faster than real scenes and would flatter every decoder).
# "MJPEG -> NV12" is full-range NV12 for all three (what JFIF frames decode to; no range mapping).
#
# The TurboJPEG floor (turbojpeg_floor.c: TurboJPEG's own decode of the same JPEG file the fake
# serves, to planar Y'CbCr at its own 4:2:2 subsampling or to BGRA, same flags, nothing else) is
# given twice: into one reused buffer (hot in cache: the strict floor), and into 7 buffers in turn
# (like for like: a capture path delivers each frame in its own buffer, which the application may
# hold while the next decodes; Viewfinder's decode pool is the video data output's default budget
# of 6 frames in flight + 1). The fake camera's copy of each JPEG into the dequeued buffer is in
# Viewfinder's figure and not in the floor's; its cost is the "fake camera alone" column.
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
    cc -O2 -Wall -Wextra -o "$work/make_jpeg" Benchmarks/capture-path/make_jpeg.c -lturbojpeg
    cc -O2 -Wall -Wextra -o "$work/turbojpeg_floor" Benchmarks/capture-path/turbojpeg_floor.c -lturbojpeg
    # The fake camera: YUYV and MJPEG at 1280x720 and 1920x1080, one frame each (ffmpeg's testsrc2;
    # the JPEG frames with luma noise of strength 6 at 720p and 7 at 1080p, about 1.2 bit/pixel each).
    fake="$work/fake-camera"
    if [ ! -f "$fake" ]; then
        for size in "1280 720 6" "1920 1080 7"; do
            read -r width height noise <<< "$size"
            ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=${width}x${height}" -frames:v 1 \
                -pix_fmt yuyv422 -f rawvideo -y "$work/$height.yuyv"
            ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=${width}x${height}" -frames:v 1 \
                -vf "format=yuvj422p,noise=c0s=$noise:c0_seed=1" -pix_fmt yuvj422p -f rawvideo -y "$work/$height.yuv422"
            "$work/make_jpeg" "$work/$height.yuv422" "$width" "$height" 85 "$work/$height.jpg" > "$work/$height.bpp"
        done
        j720=$(stat -c %s "$work/720.jpg")
        j1080=$(stat -c %s "$work/1080.jpg")
        {
            printf 'VIEWFINDER-FAKE-CAMERA 1\ncard Bench Camera\ndriver uvcvideo\nbus usb-bench\npaced 0\n'
            printf 'format YUYV 0 YUYV 4:2:2\nsize 1280 720\ninterval 1 30\nsize 1920 1080\ninterval 1 30\n'
            printf 'format MJPG 1 Motion-JPEG\nsize 1280 720\ninterval 1 30\nsize 1920 1080\ninterval 1 30\n'
            printf 'frame YUYV 1280 720 0 1843200\nframe YUYV 1920 1080 1843200 4147200\n'
            printf 'frame MJPG 1280 720 5990400 %s\nframe MJPG 1920 1080 %s %s\ndata\n' \
                "$j720" "$((5990400 + j720))" "$j1080"
            cat "$work/720.yuyv" "$work/1080.yuyv" "$work/720.jpg" "$work/1080.jpg"
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
cp "$work/fake-camera" /dev/video0

v4l2convert=$(dirname "$(Scripts/v4l2-plugin.sh dir)")/v4l2convert.so
bench="$root/.build/release/viewfinder-bench"
if [ "$quick" -eq 1 ]; then short=30; long=150; repeats=1; else short=100; long=1000; repeats=3; fi
repeats=${CAPTURE_PATH_REPEATS:-$repeats}
# Destination buffers of the like-for-like TurboJPEG floor (see the header).
floor_buffers=7

# The command for a tool, camera format (yuyv, mjpeg), case and frame count (words on one line).
command_for() {
    local tool=$1 source=$2 conversion=$3 width=$4 height=$5 frames=$6
    case "$tool" in
        viewfinder | baseline)
            local binary=$bench
            [ "$tool" = baseline ] && binary=$CAPTURE_PATH_BASELINE
            local format=native
            [ "$conversion" = bgra ] && format=bgra
            [ "$conversion" = nv12 ] && format=nv12
            [ "$conversion" = nv12 ] && [ "$source" = mjpeg ] && format=nv12-full
            echo "$binary capture --camera-format $source --format $format --size ${width}x${height} --frames $frames"
            ;;
        ffmpeg)
            local filter="" input=yuyv422
            [ "$conversion" = bgra ] && filter="-vf format=bgra"
            [ "$conversion" = nv12 ] && filter="-vf format=nv12"
            if [ "$source" = mjpeg ]; then
                input=mjpeg
                [ "$conversion" = nv12 ] && filter="-vf scale=out_range=full,format=nv12"
            fi
            echo "env LD_PRELOAD=$work/chardev_preload.so:$v4l2convert ffmpeg -nostdin -hide_banner -loglevel error -f v4l2 -input_format $input -video_size ${width}x${height} -i /dev/video0 -frames:v $frames -fps_mode passthrough $filter -f null -"
            ;;
        gstreamer)
            local caps="video/x-raw,format=YUY2,width=$width,height=$height" tail="fakesink"
            [ "$source" = mjpeg ] && caps="image/jpeg,width=$width,height=$height ! jpegdec"
            [ "$conversion" = bgra ] && tail="videoconvert ! video/x-raw,format=BGRA ! fakesink"
            [ "$conversion" = nv12 ] && tail="videoconvert ! video/x-raw,format=NV12 ! fakesink"
            echo "env GST_V4L2_USE_LIBV4L2=1 LD_PRELOAD=$work/chardev_preload.so gst-launch-1.0 -q v4l2src device=/dev/video0 num-buffers=$frames ! $caps ! $tail"
            ;;
        fake)
            local fourcc=YUYV
            [ "$source" = mjpeg ] && fourcc=MJPG
            echo "$work/stream_floor /dev/video0 $width $height $frames $fourcc"
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

# One sample of a tool's CPU-ms per frame: (cpu(long) - cpu(short)) / (long - short), or "fail".
# Arguments: tool, camera format, case, width, height (or, for "turbojpeg", the JPEG file,
# planes|bgra, destination buffers).
sample() {
    local tool=$1
    shift
    local a b
    if [ "$tool" = turbojpeg ]; then
        a=$(cpu_of "$work/turbojpeg_floor $1 $2 $short $3")
        b=$(cpu_of "$work/turbojpeg_floor $1 $2 $long $3")
    else
        a=$(cpu_of "$(command_for "$tool" "$@" "$short")")
        b=$(cpu_of "$(command_for "$tool" "$@" "$long")")
    fi
    if [ "$a" = fail ] || [ "$b" = fail ]; then echo fail; return; fi
    python3 -c "print(($b - $a) * 1000 / ($long - $short))"
}

# Samples the contenders named in the arguments (each one's sample() arguments in args[name])
# interleaved, $repeats times: every repeat runs each once, starting with a different one and
# reversing the direction every other repeat (as viewfinder-bench's Measure.order does), so none
# always follows the same other work, and a machine whose speed drifts over tens of seconds (by
# 10-25 % on the VMs this ran on) moves the contenders of one repeat alike. Appends to
# samples[name], one value per repeat.
declare -A args samples
interleave() {
    local names=("$@")
    local n=$# r k step
    for r in $(seq 0 $((repeats - 1))); do
        step=1
        [ $((r % 2)) -eq 1 ] && step=$((n - 1))
        for k in $(seq 0 $((n - 1))); do
            local name=${names[$(((r + k * step) % n))]}
            # shellcheck disable=SC2086  # the arguments are words
            samples[$name]+="$(sample ${args[$name]}) "
        done
    done
}

# The median of a contender's samples, "fail" if one failed, "–" if it did not run.
median_of() {
    python3 -c "import statistics,sys
values = sys.argv[1].split()
if not values: print('–')
elif 'fail' in values: print('fail')
else: print(f'{statistics.median(map(float, values)):.2f}')" "${samples[$1]:-}"
}

# The median over the repeats of a's sample over b's from the same repeat ("–" when either is
# missing or failed).
paired() {
    python3 -c "import statistics,sys
a, b = sys.argv[1].split(), sys.argv[2].split()
try:
    print(f'{statistics.median(float(x) / float(y) for x, y in zip(a, b, strict=True)):.{sys.argv[3]}f}×')
except Exception: print('–')" "${samples[$1]:-}" "${samples[$2]:-}" "${3:-1}"
}

cases=("yuyv native" "yuyv bgra" "yuyv nv12" "mjpeg nv12" "mjpeg bgra")
if [ -n "${CAPTURE_PATH_CASES:-}" ]; then IFS=, read -r -a cases <<< "$CAPTURE_PATH_CASES"; fi
sizes=("1280 720" "1920 1080")
if [ -n "${CAPTURE_PATH_SIZES:-}" ]; then
    IFS=, read -r -a sizes <<< "${CAPTURE_PATH_SIZES//x/ }"
fi
peers=${CAPTURE_PATH_PEERS:-1}
baseline=${CAPTURE_PATH_BASELINE:-}
baseline_header="" baseline_rule=""
if [ -n "$baseline" ]; then
    baseline_header=" Viewfinder baseline ($baseline) | Viewfinder ÷ baseline |"
    baseline_rule="---:|---:|"
fi

{
    echo "CPU-ms per delivered frame (user + system of the whole process; slope between $short and $long frames; median of $repeats repeats, each running every contender of a row once, interleaved: the first rotated and the direction reversed every other repeat). Ratios are the median of the same-repeat ratios."
    echo "The fake camera is unpaced and copies each frame into the dequeued buffer (its own cost is the \"fake camera alone\" column)."
    echo "MJPEG frames: testsrc2 with per-pixel luma noise, 4:2:2, quality 85, $(cat "$work/720.bpp") bit/pixel at 1280x720 and $(cat "$work/1080.bpp") at 1920x1080;"
    echo "MJPEG → NV12 is full-range NV12 for all three. \"TurboJPEG alone\" decodes the same JPEG file the fake serves, on one thread, to planar 4:2:2 (NV12 rows) or BGRA:"
    echo "into one reused buffer (hot: the strict floor), and into $floor_buffers buffers in turn (like for like: Viewfinder delivers each frame in its own buffer of a pool of $floor_buffers, the output's default 6 frames in flight + 1)."
    echo
    echo "| camera → delivered | size | Viewfinder | FFmpeg (v4l2 + decoder + swscale) | GStreamer (v4l2src + jpegdec + videoconvert) | fake camera alone (libv4l2 DQBUF/QBUF) | TurboJPEG alone, 1 buffer | TurboJPEG alone, $floor_buffers buffers | Viewfinder ÷ TurboJPEG (1 buffer) | Viewfinder ÷ TurboJPEG ($floor_buffers buffers) | FFmpeg ÷ Viewfinder | GStreamer ÷ Viewfinder |$baseline_header"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|$baseline_rule"
} | tee "${CAPTURE_PATH_OUT:-/dev/null}"
for size in "${sizes[@]}"; do
    read -r width height <<< "$size"
    samples=()
    args[fake_yuyv]="fake yuyv native $width $height"
    args[fake_mjpeg]="fake mjpeg native $width $height"
    interleave fake_yuyv fake_mjpeg
    for case_ in "${cases[@]}"; do
        read -r source conversion <<< "$case_"
        names=(viewfinder)
        args[viewfinder]="viewfinder $source $conversion $width $height"
        if [ "$peers" != 0 ]; then
            args[ffmpeg]="ffmpeg $source $conversion $width $height"
            args[gstreamer]="gstreamer $source $conversion $width $height"
            names+=(ffmpeg gstreamer)
        fi
        if [ -n "$baseline" ]; then
            args[baseline]="baseline $source $conversion $width $height"
            names+=(baseline)
        fi
        for name in viewfinder ffmpeg gstreamer turbojpeg turbojpeg_n baseline; do samples[$name]=""; done
        if [ "$source" = mjpeg ]; then
            floor_mode=planes
            [ "$conversion" = bgra ] && floor_mode=bgra
            # The floor right beside Viewfinder, in either direction.
            args[turbojpeg]="turbojpeg $work/$height.jpg $floor_mode 1"
            args[turbojpeg_n]="turbojpeg $work/$height.jpg $floor_mode $floor_buffers"
            names=(turbojpeg "${names[@]}" turbojpeg_n)
        fi
        interleave "${names[@]}"
        fk=$(median_of fake_yuyv)
        label="YUYV → ${conversion^^}"
        [ "$conversion" = native ] && label="YUYV native"
        if [ "$source" = mjpeg ]; then
            fk=$(median_of fake_mjpeg)
            label="MJPEG → ${conversion^^}"
        fi
        echo "| $label | ${width}x${height} | $(median_of viewfinder) | $(median_of ffmpeg) | $(median_of gstreamer) | $fk | $(median_of turbojpeg) | $(median_of turbojpeg_n) | $(paired viewfinder turbojpeg 2) | $(paired viewfinder turbojpeg_n 2) | $(paired ffmpeg viewfinder) | $(paired gstreamer viewfinder) |$([ -n "$baseline" ] && echo " $(median_of baseline) | $(paired viewfinder baseline 3) |")" \
            | tee -a "${CAPTURE_PATH_OUT:-/dev/null}"
    done
done
{
    echo
    echo "Commands (N = frames):"
    echo
    for source in yuyv mjpeg; do
        conversion=bgra
        [ "$source" = mjpeg ] && conversion=nv12
        for tool in viewfinder ffmpeg gstreamer fake; do
            echo "- \`$(command_for "$tool" "$source" "$conversion" 1920 1080 N | sed "s#$root/##g; s#$work/#.build/capture-path/#g")\`"
        done
    done
    echo "- \`.build/capture-path/turbojpeg_floor .build/capture-path/1080.jpg planes|bgra N 1|$floor_buffers\`"
} | tee -a "${CAPTURE_PATH_OUT:-/dev/null}"
