#!/usr/bin/env bash
# Soak run (Tests/viewfinder-soak; release build, SOAK_CONFIGURATION=debug for the debug one): N frames or M minutes through a converting
# output with processors, a slow delegate, a delegate holding buffers and native delivery, in
# turn; fails when a frame is unaccounted or RSS grows more than 2 MB after the warm-up round.
#
#   Scripts/soak.sh                      # 1,000,000 frames
#   Scripts/soak.sh --frames 5000000
#   Scripts/soak.sh --minutes 10 [--phase-frames 50000] [--allowance-mb 2]
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh build >/dev/null
configuration=${SOAK_CONFIGURATION:-release}
# glibc's allocator, left to itself, raises its mmap threshold each time a large block is freed
# and gives new threads arenas of their own: per-phase pools (300 KB frames) then land on the heap
# and RSS creeps up in steps that are fragmentation, not leaks. A fixed threshold and two arenas
# make RSS measure what the pipeline holds (measured: 20 M frames, 45.04 -> 45.09 MB).
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-65536}
export MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}
swift build -c "$configuration" --product viewfinder-soak 2>&1 | grep -E "error|warning" || true
exec "$(swift build -c "$configuration" --product viewfinder-soak --show-bin-path)/viewfinder-soak" "$@"
