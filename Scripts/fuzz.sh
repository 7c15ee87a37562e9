#!/usr/bin/env bash
# Seeded, time-boxed fuzzing of the inputs Viewfinder takes from outside (Tests/ViewfinderFuzzing):
# the V4L2 format listing (parser, simulated driver, discovery, a stream start), the MJPEG header
# and decode path (JPEGDecoder), and the file-replay reader (MovieFileReader) on mutated small
# files. Built with AddressSanitizer (.build/sanitize-asan), so a memory error is a crash too.
# The drivers run in parallel, each for the time given; a crash keeps its input as
# Tests/FuzzCorpus/<target>/crash-<sha1>, which the test "every input the fuzzer ever crashed on…"
# replays, and the driver goes on with the next seed. Exits 1 if anything crashed.
#
#   Scripts/fuzz.sh [--seconds 300] [--seed 1] [listing] [mjpeg] [movie]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=300
seed=1
targets=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) targets+=("$1"); shift ;;
    esac
done
[[ ${#targets[@]} -eq 0 ]] && targets=(listing mjpeg movie)
Scripts/install-dependencies.sh build >/dev/null
# VIEWFINDER_FUZZ_BINARY: a viewfinder-fuzz already built (no build step), e.g. .build/debug/viewfinder-fuzz.
binary=${VIEWFINDER_FUZZ_BINARY:-}
if [[ -z $binary ]]; then
    scratch=.build/sanitize-asan
    swift build --product viewfinder-fuzz --scratch-path "$scratch" --sanitize=address 2>&1 | grep -E "error" || true
    binary=$(swift build --product viewfinder-fuzz --scratch-path "$scratch" --sanitize=address --show-bin-path)/viewfinder-fuzz
fi
work=$(mktemp -d -t viewfinder-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}

# Seeds: what the targets are built to read.
"$binary" seeds --out "$work/seeds"
if command -v ffmpeg >/dev/null; then
    for spec in "y4m:-pix_fmt yuv420p" "avi:-c:v mjpeg -pix_fmt yuvj420p" "mkv:-c:v ffv1" "mp4:-c:v mpeg4"; do
        extension=${spec%%:*}
        # shellcheck disable=SC2086
        ffmpeg -v error -y -f lavfi -i testsrc=size=32x24:rate=5 -frames:v 3 ${spec#*:} \
            "$work/seeds/movie/seed.$extension"
    done
fi

fuzz() {
    local target=$1 end=$((SECONDS + seconds)) round=0 crashes=0
    local current="$work/current-$target" log="$work/log-$target"
    mkdir -p "Tests/FuzzCorpus/$target"
    while ((SECONDS < end)); do
        local status=0
        "$binary" "$target" --seeds "$work/seeds/$target" --seed $((seed * 1000 + round)) \
            --seconds $((end - SECONDS)) --current "$current" >"$log" 2>&1 || status=$?
        if [[ $status -eq 0 ]]; then
            echo "$(tail -n 1 "$log")"
            break
        fi
        local sha
        sha=$(sha1sum "$current" | cut -c1-12)
        cp "$current" "Tests/FuzzCorpus/$target/crash-$sha"
        echo "$target: CRASH (exit $status), input kept as Tests/FuzzCorpus/$target/crash-$sha"
        grep -m 5 -E "Fatal error|ERROR: AddressSanitizer|SUMMARY" "$log" || true
        crashes=$((crashes + 1))
        round=$((round + 1))
    done
    [[ $crashes -eq 0 ]]
}

pids=()
for target in "${targets[@]}"; do
    fuzz "$target" &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit $failed
