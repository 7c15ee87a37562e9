#!/usr/bin/env bash
# Runs a command beside a private PipeWire daemon, for the PipeWire backend's tests:
#
#   Scripts/pipewire.sh run -- CMD...
#
# Starts, in a fresh private XDG_RUNTIME_DIR, a D-Bus session bus (dbus-daemon: WirePlumber
# needs one), `pipewire` serving the socket "viewfinder-test" (not the default pipewire-0, so
# the library's built-in provider in every other test sees no daemon and no test camera), and
# `wireplumber` (the session manager that links a capture stream to its camera node). CMD runs
# with VIEWFINDER_PIPEWIRE_REMOTE=viewfinder-test and VIEWFINDER_PIPEWIRE_EXPECTED=1 (the tests
# then fail, not skip, when the daemon cannot be reached); everything is stopped afterwards, by
# process ID, and the directory removed. CMD's exit status is the script's.
#
# Where pipewire, wireplumber or dbus-daemon are missing, CMD runs without them and
# VIEWFINDER_PIPEWIRE_SKIPPED says why (the PipeWire tests then report themselves skipped),
# except with CI=true, where the script fails; Scripts/install-dependencies.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "${1:-}" = run ] && [ "${2:-}" = -- ] || { echo "usage: $0 run -- CMD..." >&2; exit 2; }
shift 2

for tool in pipewire wireplumber dbus-daemon; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        if [ "${CI:-}" = true ]; then
            # CI is meant to have the daemon: its tests fail rather than skip.
            echo "pipewire.sh: $tool is not installed, and CI=true expects the PipeWire tests to run: Scripts/install-dependencies.sh installs it" >&2
            exit 1
        fi
        echo "pipewire.sh: $tool is not installed; running without a PipeWire daemon" >&2
        VIEWFINDER_PIPEWIRE_SKIPPED="$tool is not installed (Scripts/install-dependencies.sh installs it)" exec "$@"
    fi
done

runtime=$(mktemp -d /tmp/viewfinder-pipewire.XXXXXX)
chmod 700 "$runtime"
pids=()
cleanup() {
    local pid
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        pid=${pids[$i]}
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$runtime"
}
trap cleanup EXIT

export XDG_RUNTIME_DIR="$runtime"
remote=viewfinder-test
bus="unix:path=$runtime/bus"
dbus-daemon --session --address="$bus" --nofork --nopidfile >"$runtime/dbus.log" 2>&1 &
pids+=($!)
export DBUS_SESSION_BUS_ADDRESS="$bus"
# Wait for each part to be there (a socket appearing), never a fixed sleep.
wait_for_socket() {
    local path=$1 what=$2 tries=0
    until [ -S "$path" ]; do
        tries=$((tries + 1))
        if [ $tries -gt 500 ]; then
            echo "pipewire.sh: $what did not start; its log:" >&2
            cat "$runtime"/*.log >&2 || true
            exit 1
        fi
        sleep 0.01
    done
}
wait_for_socket "$runtime/bus" dbus-daemon
PIPEWIRE_CORE=$remote pipewire >"$runtime/pipewire.log" 2>&1 &
pids+=($!)
wait_for_socket "$runtime/$remote" pipewire
PIPEWIRE_REMOTE=$remote wireplumber >"$runtime/wireplumber.log" 2>&1 &
pids+=($!)
# WirePlumber is ready once it shows up as a client of the daemon.
tries=0
until PIPEWIRE_REMOTE=$remote pw-cli ls Client 2>/dev/null | grep -qi wireplumber; do
    tries=$((tries + 1))
    if [ $tries -gt 200 ]; then
        echo "pipewire.sh: wireplumber did not connect; its log:" >&2
        cat "$runtime/wireplumber.log" >&2 || true
        exit 1
    fi
    sleep 0.05
done

status=0
VIEWFINDER_PIPEWIRE_REMOTE=$remote VIEWFINDER_PIPEWIRE_EXPECTED=1 "$@" || status=$?
exit $status
