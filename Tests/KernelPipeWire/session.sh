#!/usr/bin/env bash
# The PipeWire route on a kernel camera, inside Scripts/kernel-vm.sh's VM: starts what a desktop
# would (udev, a D-Bus session bus, pipewire, wireplumber), waits until WirePlumber's V4L2
# monitor has turned every V4L2 capture node into a PipeWire node, then runs CMD:
#
#   Scripts/kernel-vm.sh run --module "vivid n_devs=1 node_types=0x1" -- \
#       Tests/KernelPipeWire/session.sh run -- pw-cli ls Node
#
# CMD runs with PIPEWIRE_REMOTE and VIEWFINDER_PIPEWIRE_REMOTE naming the daemon's socket
# (viewfinder-kernel), DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR set; its exit status is the
# script's; everything started is stopped afterwards by process ID. What the VM lacks, and how
# this works around it:
# - no udev: WirePlumber's V4L2 monitor enumerates through libudev, so systemd-udevd runs here
#   and `udevadm trigger` fills its database. Both refuse to act in a chroot ("Running in chroot,
#   ignoring request."), and the VM's command runs in one: SYSTEMD_IGNORE_CHROOT=1.
# - no logind: the Bluetooth monitor loads WirePlumber's logind module, which fails ("failed to
#   start systemd logind monitor: -2"), and WirePlumber then leaves ("disconnected from
#   pipewire"): a configuration fragment turns the Bluetooth monitor off.
# - no session bus: dbus-daemon --session.
# Logs: $XDG_RUNTIME_DIR/{udevd,pipewire,wireplumber}.log, printed when the nodes do not appear.
set -euo pipefail
[ "${1:-}" = run ] && [ "${2:-}" = -- ] && [ $# -ge 3 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
shift 2
timeout_seconds="${KERNEL_PIPEWIRE_TIMEOUT:-120}"
runtime=$(mktemp -d /tmp/kernel-pipewire.XXXXXX)
chmod 700 "$runtime"
export XDG_RUNTIME_DIR="$runtime" XDG_CONFIG_HOME="$runtime/config" SYSTEMD_IGNORE_CHROOT=1
pids=()
cleanup() {
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[$i]}" 2>/dev/null || true; done
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do wait "${pids[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
fail() {
    echo "kernel-pipewire: $*" >&2
    for log in "$runtime"/*.log; do [ -s "$log" ] && { echo "--- $log" >&2; tail -20 "$log" >&2; }; done
    exit 1
}
wait_for() {
    local what="$1" test="$2" deadline=$(($(date +%s) + timeout_seconds))
    until eval "$test"; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "no $what within ${timeout_seconds} s"
        sleep 0.2
    done
}

# udev: its daemon, then every device announced again so its database (ID_V4L_*) is filled.
mkdir -p /run/udev
/lib/systemd/systemd-udevd >"$runtime/udevd.log" 2>&1 &
pids+=($!)
wait_for "udev control socket" '[ -S /run/udev/control ]'
udevadm trigger --action=add
udevadm settle --timeout="$timeout_seconds" || fail "udevadm settle timed out"

dbus-daemon --session --nofork --print-address=3 3>"$runtime/bus" >"$runtime/dbus.log" 2>&1 &
pids+=($!)
wait_for "D-Bus session bus" '[ -s "$runtime/bus" ]'
DBUS_SESSION_BUS_ADDRESS=$(head -1 "$runtime/bus")
export DBUS_SESSION_BUS_ADDRESS

remote=viewfinder-kernel
export PIPEWIRE_REMOTE=$remote VIEWFINDER_PIPEWIRE_REMOTE=$remote VIEWFINDER_PIPEWIRE_EXPECTED=1
PIPEWIRE_CORE=$remote pipewire >"$runtime/pipewire.log" 2>&1 &
pids+=($!)
wait_for "PipeWire socket" '[ -S "$runtime/$remote" ]'

mkdir -p "$XDG_CONFIG_HOME/wireplumber/bluetooth.lua.d"
echo 'bluez_monitor.enabled = false' >"$XDG_CONFIG_HOME/wireplumber/bluetooth.lua.d/51-viewfinder-kernel.lua"
wireplumber >"$runtime/wireplumber.log" 2>&1 &
pids+=($!)

# Every V4L2 capture node udev knows becomes a Video/Source node.
expected=0
for entry in /sys/class/video4linux/video*; do
    [ -e "$entry" ] || continue
    udevadm info "/dev/$(basename "$entry")" 2>/dev/null | grep -q 'ID_V4L_CAPABILITIES=.*:capture:' &&
        expected=$((expected + 1))
done
[ "$expected" -gt 0 ] || fail "udev reports no V4L2 capture node (load vivid: --module \"vivid n_devs=1 node_types=0x1\")"
wait_for "$expected V4L2 node(s) in PipeWire" \
    '[ "$(pw-cli ls Node 2>/dev/null | grep -c "node.name = \"v4l2_input\.")" -ge "$expected" ] || { kill -0 ${pids[3]} 2>/dev/null || fail "wireplumber stopped"; false; }'
status=0
"$@" || status=$?
exit "$status"
