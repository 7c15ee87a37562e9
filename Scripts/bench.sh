#!/usr/bin/env bash
# Installs missing system packages, builds the benchmark runner in release mode and runs it.
# Arguments go to viewfinder-bench (try --quick, --filter NV12, --json results.json).
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh bench
swift build -c release --product viewfinder-bench
exec .build/release/viewfinder-bench "$@"
