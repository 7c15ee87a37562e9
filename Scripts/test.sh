#!/usr/bin/env bash
# Installs missing system packages, then builds and runs every test. The libv4l2 fake-camera
# plugin (Tests/V4L2Plugin) is built and installed for the run, in a private mount namespace
# where possible, and removed afterwards (Scripts/v4l2-plugin.sh); a private PipeWire daemon
# (pipewire, wireplumber, a D-Bus session bus) runs beside the tests and is stopped afterwards
# (Scripts/pipewire.sh). With VIEWFINDER_TEST_PREBUILT=1 the packages and the build are taken as
# they are (Scripts/flake-hunt.sh builds once, then runs this several times).
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
# A session that opens a camera applies the camera's saved profile from the XDG config directory:
# the test binary gets an empty one of its own (removed afterwards), never the user's.
config_home=$(mktemp -d)
trap 'rm -rf "$config_home"' EXIT
results=.build/test-results.xml
rm -f "$results"
status=0
Scripts/pipewire.sh run -- Scripts/v4l2-plugin.sh run -- env XDG_CONFIG_HOME="$config_home" \
    "$(swift build --show-bin-path)/ViewfinderPackageTests.xctest" --testing-library swift-testing \
    --xunit-output "$results" "$@" || status=$?
if [ -s "$results" ]; then
    counts=$(sed -n 's/.*<testsuite name="TestResults".* tests="\([0-9]*\)" failures="\([0-9]*\)" skipped="\([0-9]*\)".*/\1 \2 \3/p' "$results" | head -n 1)
    if [ -n "$counts" ]; then
        read -r tests _ skipped <<<"$counts"
        # The report's failures attribute counts issues (a test may record several): count the
        # test cases that have a failure instead.
        failures=$(awk '/<testcase/ { failed = 0 } /<failure/ { failed = 1 } /<\/testcase>/ { if (failed) n++ } END { print n + 0 }' "$results")
        echo "tests: $((tests - failures - skipped)) passed, $failures failed, $skipped skipped"
    fi
else
    echo "test.sh: the test binary wrote no xUnit report ($results)" >&2
fi
exit "$status"
