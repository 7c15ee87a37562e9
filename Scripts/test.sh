#!/usr/bin/env bash
# Installs missing system packages, then builds and runs every test. The libv4l2 fake-camera
# plugin (Tests/V4L2Plugin) is built and installed for the run, in a private mount namespace
# where possible, and removed afterwards (Scripts/v4l2-plugin.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh
swift build --build-tests
Scripts/v4l2-plugin.sh run -- swift test --skip-build "$@"
