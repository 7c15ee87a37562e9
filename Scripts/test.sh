#!/usr/bin/env bash
# Installs missing system packages, then builds and runs every test. The libv4l2 fake-camera
# plugin (Tests/V4L2Plugin) is built and installed for the run, in a private mount namespace
# where possible, and removed afterwards (Scripts/v4l2-plugin.sh); a private PipeWire daemon
# (pipewire, wireplumber, a D-Bus session bus) runs beside the tests and is stopped afterwards
# (Scripts/pipewire.sh). Then the kernel-driver suites run against vivid and snd-aloop in a QEMU
# VM (Scripts/kernel-vm.sh; VIEWFINDER_KERNEL_TESTS below), with a uvcvideo camera attached over
# USB/IP there (Tests/UVCGadget/setup.sh). With VIEWFINDER_TEST_PREBUILT=1 the
# packages and the build are taken as they are (Scripts/flake-hunt.sh builds once, then runs this
# several times).
set -euo pipefail
cd "$(dirname "$0")/.."
prebuilt=${VIEWFINDER_TEST_PREBUILT:-}
[ -n "$prebuilt" ] || Scripts/install-dependencies.sh tests
# The browser tests reach chromedriver and Chromium's DevTools as "localhost". A machine without
# /etc/hosts (a bare chroot or container) cannot resolve it: write the loopback lines Debian's
# installer writes, as root, or say what to do.
if ! getent hosts localhost >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && [ ! -e /etc/hosts ]; then
        echo "test.sh: 'localhost' does not resolve and there is no /etc/hosts: writing Debian's loopback lines" >&2
        printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >/etc/hosts
    else
        echo "test.sh: 'localhost' does not resolve: add '127.0.0.1 localhost' to /etc/hosts (the browser tests need it)" >&2
    fi
fi
[ -n "$prebuilt" ] || swift build --build-tests
# The test binary runs directly, not under `swift test`: SwiftPM relays the binary's output
# through pipes, and here its relay lost lines (the runner's closing "Test run with N tests"
# among them) in 3 runs of 3 while the binary's own output, written straight to the log, kept
# every line. Every test is a Swift Testing test, so the XCTest runner is not started. The
# runner's count is repeated from its xUnit report as a plain "N passed, N failed" line.
# Arguments (e.g. --filter NAME, --skip NAME) go to the test binary.
# The tests use the virtual test-pattern camera and virtual microphone as devices of the process
# (CaptureDevice.default(for: .video) among them): they are opt-in, so the run asks for them.
export VIEWFINDER_VIRTUAL_DEVICES=1
binary="$(swift build --show-bin-path)/ViewfinderPackageTests.xctest"
# Prints "LABEL: N passed, N failed, N skipped" from an xUnit report.
report() {
    local label="$1" results="$2" counts tests skipped failures
    if [ -s "$results" ]; then
        counts=$(sed -n 's/.*<testsuite name="TestResults".* tests="\([0-9]*\)" failures="\([0-9]*\)" skipped="\([0-9]*\)".*/\1 \2 \3/p' "$results" | head -n 1)
        if [ -n "$counts" ]; then
            read -r tests _ skipped <<<"$counts"
            # The report's failures attribute counts issues (a test may record several): count
            # the test cases that have a failure instead.
            failures=$(awk '/<testcase/ { failed = 0 } /<failure/ { failed = 1 } /<\/testcase>/ { if (failed) n++ } END { print n + 0 }' "$results")
            echo "$label: $((tests - failures - skipped)) passed, $failures failed, $skipped skipped"
        fi
    else
        echo "test.sh: the test binary wrote no xUnit report ($results)" >&2
    fi
}
# VIEWFINDER_KERNEL_TESTS: unset runs the kernel-driver suites in the VM after the main run when
# no arguments were given; 1 runs them with the arguments given; only runs nothing else; 0 skips.
kernel=${VIEWFINDER_KERNEL_TESTS:-}
[ -z "$kernel" ] && { [ $# -eq 0 ] && kernel=1 || kernel=0; }
status=0
# A session that opens a camera applies the camera's saved profile from the XDG config directory:
# the test binary gets an empty one of its own (removed afterwards), never the user's.
config_home=$(mktemp -d)
trap 'rm -rf "$config_home"' EXIT
if [ "$kernel" != only ]; then
    results=.build/test-results.xml
    rm -f "$results"
    Scripts/pipewire.sh run -- Scripts/v4l2-plugin.sh run -- env XDG_CONFIG_HOME="$config_home" \
        "$binary" --testing-library swift-testing --xunit-output "$results" "$@" || status=$?
    report tests "$results"
fi
# Runs the test binary in a VM (Scripts/kernel-vm.sh): LABEL, OUT (the host side of the VM's
# writable share, where its xUnit report lands), the VM's options up to "--", what runs the
# binary there (a wrapper, or nothing) up to "::", then the test binary's arguments. Outside CI
# a VM that cannot boot is a warning; with CI=true it fails the run.
run_in_vm() {
    local label="$1" out="$2" started elapsed vm_status=0 vm_args=() wrapper=()
    shift 2
    while [ "$1" != -- ]; do vm_args+=("$1"); shift; done
    shift
    while [ "$1" != :: ]; do wrapper+=("$1"); shift; done
    shift
    rm -rf "$out" && mkdir -p "$out"
    started=$(date +%s)
    Scripts/kernel-vm.sh run --out "$out" --env XDG_CONFIG_HOME=/tmp/viewfinder-config "${vm_args[@]}" -- \
        "${wrapper[@]}" "$binary" --testing-library swift-testing --no-parallel \
        --xunit-output /tmp/.kernel-vm-out/kernel-results.xml "$@" || vm_status=$?
    elapsed=$(($(date +%s) - started))
    if [ "$vm_status" -ge 124 ] && [ ! -s "$out/kernel-results.xml" ]; then
        if [ "${CI:-}" = true ]; then
            echo "test.sh: the $label could not run (the VM did not boot or timed out): failing, as CI=true" >&2
            status=1
        else
            echo "test.sh: warning: the $label could not run (the VM did not boot or timed out)" >&2
        fi
    else
        [ "$vm_status" -ne 0 ] && status=1
        report "$label (VM, ${elapsed} s wall including boot)" "$out/kernel-results.xml"
    fi
}
if [ "$kernel" != 0 ]; then
    # The kernel-driver suites (Tests/*/Kernel*Tests.swift) and the hardware tests, in a QEMU VM
    # with vivid, snd-aloop and the UVC gadget's drivers loaded: the host's test binary runs there,
    # as root, from the read-only share of this checkout. vivid: 22 webcam-like capture nodes
    # (node_types 0x1), enough for the 17-camera test and a spare one the disconnect test
    # unregisters. USB/IP's device and host sides, the configfs UVC function and uvcvideo serve the
    # uvcvideo suite, whose gadget program (Tests/UVCGadget) is compiled here: the VM's root is
    # read-only.
    # (Filters match test IDs: the Kernel* suites, V4L2HardwareTests, the ALSA hardwareDefault test.)
    default_kernel_run=false
    [ $# -eq 0 ] && default_kernel_run=true &&
        set -- --filter "\\.Kernel" --filter "V4L2HardwareTests" --filter "hardwareDefault" --skip "KernelPipeWireTests"
    node_types=$(printf '0x1,%.0s' $(seq 22))
    Tests/UVCGadget/setup.sh build
    run_in_vm "kernel-driver tests" .build/kernel-vm-out \
        --module "vivid n_devs=22 node_types=${node_types%,}" --module "snd-aloop pcm_substreams=2" \
        --modules "usbip-vudc;vhci-hcd;libcomposite;usb_f_uvc;uvcvideo" -- :: "$@"
    if [ "$default_kernel_run" = true ]; then
        # The PipeWire route on a kernel camera, in a VM of its own: one vivid camera, and
        # Tests/KernelPipeWire/session.sh running udev, a session bus, PipeWire and WirePlumber,
        # whose V4L2 monitor makes the camera a PipeWire node.
        run_in_vm "kernel PipeWire tests" .build/kernel-vm-pipewire-out \
            --module "vivid n_devs=1 node_types=0x1" -- Tests/KernelPipeWire/session.sh run -- \
            :: --filter "KernelPipeWireTests"
    fi
fi
exit "$status"
