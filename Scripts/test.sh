#!/usr/bin/env bash
# Installs missing system packages, then builds and runs every test. The libv4l2 fake-camera
# plugin (Tests/V4L2Plugin) is built and installed for the run, in a private mount namespace
# where possible, and removed afterwards (Scripts/v4l2-plugin.sh); a private PipeWire daemon
# (pipewire, wireplumber, a D-Bus session bus) runs beside the tests and is stopped afterwards
# (Scripts/pipewire.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh
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
swift build --build-tests
Scripts/pipewire.sh run -- Scripts/v4l2-plugin.sh run -- swift test --skip-build "$@"
