#!/usr/bin/env bash
# Installs missing system packages, then builds and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh
swift build --build-tests
swift test --skip-build "$@"
