#!/usr/bin/env bash
# Installs missing system packages, builds and runs the sample. Arguments go to viewfinder-demo
# (try --list-devices, or --seconds 5 --format bgra).
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh demo
swift build -c release --product viewfinder-demo
exec .build/release/viewfinder-demo "$@"
