#!/usr/bin/env bash
# A real uvcvideo camera for the kernel tests, inside Scripts/kernel-vm.sh's VM: a configfs UVC
# gadget bound to usbip-vudc, fed by Tests/UVCGadget/viewfinder_uvc_gadget.c, exported by
# `usbipd --device` and attached back through vhci-hcd over the VM's own loopback, where the host
# side's uvcvideo driver binds to it.
#
#   Tests/UVCGadget/setup.sh build     compile the gadget program to .build/uvc-gadget/ (host side)
#   Tests/UVCGadget/setup.sh up        (root, in the VM) build the gadget, attach it; prints the
#                                      uvcvideo capture node (/dev/videoN) once it exists
#   Tests/UVCGadget/setup.sh detach    unplug it (usbip detach): uvcvideo's node goes away
#   Tests/UVCGadget/setup.sh down      detach, stop the programs, remove the gadget
#   Tests/UVCGadget/setup.sh formats   the formats the gadget offers, one a line (FOURCC WxH...)
#
# The gadget (USB 1d6b:0104, "Viewfinder UVC Gadget"): YUYV 160x120 and 320x240, MJPEG 320x240 and
# 640x360, each at 30, 15 and 10 frames a second; the processing unit declares brightness, the
# camera terminal the auto-exposure mode (the kernel's defaults). Logs go to $UVC_GADGET_DIR
# (default /tmp/uvc-gadget): gadget.log, usbipd.log. `up` waits up to UVC_GADGET_TIMEOUT seconds
# (default 120: the VM emulates its CPU) for each step's result, polling for it.
set -euo pipefail
# Descriptors inherited beyond stdin/out/err (a caller's pipe) are closed first: the daemons this
# starts would otherwise hold them open, and a caller reading to end of file would wait forever.
for descriptor in /proc/$$/fd/*; do
    descriptor="${descriptor##*/}"
    [ "$descriptor" -gt 2 ] 2>/dev/null && [ "$descriptor" != 255 ] && eval "exec $descriptor>&-" 2>/dev/null || true
done
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
state="${UVC_GADGET_DIR:-/tmp/uvc-gadget}"
timeout_seconds="${UVC_GADGET_TIMEOUT:-120}"
gadget=/sys/kernel/config/usb_gadget/viewfinder
function_dir="$gadget/functions/uvc.0"
udc=usbip-vudc.0
source_file="$here/viewfinder_uvc_gadget.c"
# The formats, in descriptor order: the program is told the same list.
yuyv_sizes=(160x120 320x240)
mjpeg_sizes=(320x240 640x360)
intervals=(333333 666666 1000000)
maxpacket=${UVC_GADGET_MAXPACKET:-1024}

say() { echo "uvc-gadget: $*" >&2; }
die() {
    say "$*"
    for log in "$state"/*.log; do [ -s "$log" ] && { say "--- $log"; tail -20 "$log" >&2; }; done
    say "--- kernel messages"
    dmesg 2>/dev/null | grep -i -E 'uvc|usb|vudc|vhci|gadget' | tail -30 >&2 || true
    exit 1
}

build() {
    local out="$1"
    mkdir -p "$(dirname "$out")"
    if [ ! -x "$out" ] || [ "$source_file" -nt "$out" ]; then
        "${CC:-gcc}" -std=gnu11 -O2 -g -Wall -Wextra -o "$out.tmp" "$source_file" -lturbojpeg
        mv "$out.tmp" "$out"
    fi
}

# Polls `test` (a shell command) every 0.2 s until it succeeds or the deadline passes.
wait_for() {
    local what="$1" test="$2" deadline=$(($(date +%s) + timeout_seconds))
    until eval "$test"; do
        [ "$(date +%s)" -lt "$deadline" ] || die "no $what within ${timeout_seconds} s"
        sleep 0.2
    done
}

uvc_capture_node() {
    local entry
    for entry in /sys/class/video4linux/video*; do
        [ -e "$entry/device/driver" ] || continue
        [ "$(basename "$(readlink -f "$entry/device/driver")")" = uvcvideo ] || continue
        # uvcvideo's first node of an interface is the capture node; the second its metadata node.
        [ "$(cat "$entry/index" 2>/dev/null)" = 0 ] || continue
        echo "/dev/$(basename "$entry")"
        return 0
    done
    return 1
}

frame() { # format-dir WxH
    local dir="$1/$2" width="${2%x*}" height="${2#*x}"
    mkdir "$dir"
    echo "$width" >"$dir/wWidth"
    echo "$height" >"$dir/wHeight"
    echo $((width * height * 2)) >"$dir/dwMaxVideoFrameBufferSize"
    echo $((width * height * 16 * 10)) >"$dir/dwMinBitRate"
    echo $((width * height * 16 * 30)) >"$dir/dwMaxBitRate"
    echo "${intervals[0]}" >"$dir/dwDefaultFrameInterval"
    # One write() with the whole list: configfs keeps only the last of several writes (a shell's
    # printf writes a line at a time), so dd copies it from a file in one block.
    printf '%s\n' "${intervals[@]}" >"$state/intervals"
    dd if="$state/intervals" of="$dir/dwFrameInterval" bs=4096 status=none
}

create_gadget() {
    mkdir -p "$state"
    modprobe libcomposite
    modprobe usb_f_uvc
    [ -d /sys/kernel/config/usb_gadget ] || mount -t configfs configfs /sys/kernel/config 2>/dev/null || true
    [ -d /sys/kernel/config/usb_gadget ] || die "configfs has no usb_gadget (libcomposite did not load)"
    mkdir "$gadget"
    echo 0x1d6b >"$gadget/idVendor"
    echo 0x0104 >"$gadget/idProduct"
    echo 0x0100 >"$gadget/bcdDevice"
    echo 0x0200 >"$gadget/bcdUSB"
    echo 0xEF >"$gadget/bDeviceClass"
    echo 0x02 >"$gadget/bDeviceSubClass"
    echo 0x01 >"$gadget/bDeviceProtocol"
    mkdir "$gadget/strings/0x409"
    echo Viewfinder >"$gadget/strings/0x409/manufacturer"
    echo "Viewfinder UVC Gadget" >"$gadget/strings/0x409/product"
    echo 0001 >"$gadget/strings/0x409/serialnumber"
    mkdir "$gadget/configs/c.1"
    mkdir "$gadget/configs/c.1/strings/0x409"
    echo "UVC camera" >"$gadget/configs/c.1/strings/0x409/configuration"
    mkdir "$function_dir"
    echo "$maxpacket" >"$function_dir/streaming_maxpacket"
    mkdir "$function_dir/control/header/h"
    ln -s "$function_dir/control/header/h" "$function_dir/control/class/fs/h"
    ln -s "$function_dir/control/header/h" "$function_dir/control/class/ss/h"
    mkdir "$function_dir/streaming/uncompressed/u"
    for size in "${yuyv_sizes[@]}"; do frame "$function_dir/streaming/uncompressed/u" "$size"; done
    mkdir "$function_dir/streaming/mjpeg/m"
    for size in "${mjpeg_sizes[@]}"; do frame "$function_dir/streaming/mjpeg/m" "$size"; done
    mkdir "$function_dir/streaming/header/h"
    ln -s "$function_dir/streaming/uncompressed/u" "$function_dir/streaming/header/h/u"
    ln -s "$function_dir/streaming/mjpeg/m" "$function_dir/streaming/header/h/m"
    ln -s "$function_dir/streaming/header/h" "$function_dir/streaming/class/fs/h"
    ln -s "$function_dir/streaming/header/h" "$function_dir/streaming/class/hs/h"
    ln -s "$function_dir/streaming/header/h" "$function_dir/streaming/class/ss/h"
    ln -s "$function_dir" "$gadget/configs/c.1/uvc.0"
    echo "$udc" >"$gadget/UDC" || die "could not bind the gadget to $udc"
}

gadget_node() {
    local entry
    for entry in /sys/class/video4linux/video*; do
        [ -e "$entry" ] || continue
        node="/dev/$(basename "$entry")"
        v4l2-ctl -d "$node" --info 2>/dev/null | grep -q 'Driver name *: g_uvc' && { echo "$node"; return 0; }
    done
    return 1
}

up() {
    [ "$(id -u)" = 0 ] || die "up needs root (it runs in Scripts/kernel-vm.sh's VM)"
    mkdir -p "$state"
    local program="$state/viewfinder_uvc_gadget"
    if [ -x "$root/.build/uvc-gadget/viewfinder_uvc_gadget" ] && [ ! "$source_file" -nt "$root/.build/uvc-gadget/viewfinder_uvc_gadget" ]; then
        program="$root/.build/uvc-gadget/viewfinder_uvc_gadget"
    else
        build "$program" || die "could not compile $source_file"
    fi
    modprobe usbip-vudc
    modprobe vhci-hcd
    modprobe uvcvideo
    local capture
    # Attached already (a gadget program running, uvcvideo's node there): nothing to do.
    if [ -s "$state/gadget.pid" ] && kill -0 "$(cat "$state/gadget.pid")" 2>/dev/null && capture=$(uvc_capture_node); then
        echo "$capture"
        return 0
    fi
    [ -d "$gadget" ] || create_gadget
    local node
    wait_for "UVC gadget node (driver g_uvc)" 'node=$(gadget_node)'
    local yuyv mjpeg
    yuyv="yuyv:$(IFS=,; echo "${yuyv_sizes[*]}")"
    mjpeg="mjpeg:$(IFS=,; echo "${mjpeg_sizes[*]}")"
    if ! [ -s "$state/gadget.pid" ] || ! kill -0 "$(cat "$state/gadget.pid")" 2>/dev/null; then
        "$program" --device "$node" --maxpacket "$maxpacket" "$yuyv" "$mjpeg" </dev/null >"$state/gadget.log" 2>&1 &
        echo $! >"$state/gadget.pid"
    fi
    wait_for "gadget program ready" 'grep -q "ready" "$state/gadget.log" || { kill -0 $(cat "$state/gadget.pid") 2>/dev/null || die "the gadget program stopped"; false; }'
    # usbip attach keeps its state in /var/run/vhci_hcd (Debian: /var/run is /run, a tmpfs here).
    mkdir -p /var/run/vhci_hcd 2>/dev/null || die "/var/run is not writable (usbip attach needs it)"
    if ! [ -s "$state/usbipd.pid" ] || ! kill -0 "$(cat "$state/usbipd.pid")" 2>/dev/null; then
        # The VM has no network device: usbipd's port (3240) is reachable on its loopback only.
        usbipd --device </dev/null >"$state/usbipd.log" 2>&1 &
        echo $! >"$state/usbipd.pid"
    fi
    wait_for "usbipd listening" 'usbip list -r 127.0.0.1 >/dev/null 2>&1 || grep -q "listening" "$state/usbipd.log"'
    local attached=0 deadline=$(($(date +%s) + timeout_seconds))
    until usbip attach -r 127.0.0.1 -d "$udc" >>"$state/attach.log" 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || die "usbip attach -r 127.0.0.1 -d $udc kept failing"
        sleep 0.5
    done
    wait_for "uvcvideo capture node" 'capture=$(uvc_capture_node) || { kill -0 $(cat "$state/gadget.pid") 2>/dev/null || die "the gadget program stopped"; false; }'
    echo "$capture"
}

detach() {
    local port
    for port in $(usbip port 2>/dev/null | sed -n 's/^Port \([0-9]*\):.*/\1/p'); do
        usbip detach -p "$port" >&2 || true
    done
}

down() {
    detach
    local pidfile
    for pidfile in "$state/gadget.pid" "$state/usbipd.pid"; do
        [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
        rm -f "$pidfile"
    done
    if [ -d "$gadget" ]; then
        echo "" >"$gadget/UDC" 2>/dev/null || true
        rm -f "$gadget/configs/c.1/uvc.0"
        rmdir "$gadget/configs/c.1/strings/0x409" "$gadget/configs/c.1" 2>/dev/null || true
        rm -f "$function_dir"/streaming/class/*/h "$function_dir"/streaming/header/h/[um]
        rmdir "$function_dir/streaming/header/h" 2>/dev/null || true
        for size in "${yuyv_sizes[@]}"; do rmdir "$function_dir/streaming/uncompressed/u/$size" 2>/dev/null || true; done
        for size in "${mjpeg_sizes[@]}"; do rmdir "$function_dir/streaming/mjpeg/m/$size" 2>/dev/null || true; done
        rmdir "$function_dir/streaming/uncompressed/u" "$function_dir/streaming/mjpeg/m" 2>/dev/null || true
        rm -f "$function_dir"/control/class/*/h
        rmdir "$function_dir/control/header/h" "$function_dir" "$gadget/strings/0x409" "$gadget" 2>/dev/null || true
    fi
}

case "${1:-}" in
    build) build "$root/.build/uvc-gadget/viewfinder_uvc_gadget" ;;
    up) up ;;
    detach) detach ;;
    down) down ;;
    formats)
        echo "YUYV ${yuyv_sizes[*]}"
        echo "MJPG ${mjpeg_sizes[*]}"
        ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
