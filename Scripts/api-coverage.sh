#!/usr/bin/env bash
# How much of AVFoundation's capture API Viewfinder has, by deleting "AV". Reads the SDK's capture
# symbols kept in API/AVFoundationCapture/symbols.txt (where they came from is in its header) and
# the public API of Viewfinder's library modules (swift-api-digester dumps, as api-check.sh makes),
# and prints the coverage by theme and in total (macOS-only members are not in the goal), then what
# is missing.
#
#   Scripts/api-coverage.sh              # builds the modules, dumps their API, prints the coverage
#   Scripts/api-coverage.sh --baseline   # no build: measures the API/*.json baselines instead
#   Scripts/api-coverage.sh --no-missing # the table only (also with --baseline)
#   Scripts/api-coverage.sh --present    # the table, then every symbol found
set -euo pipefail
cd "$(dirname "$0")/.."

modules=(ViewfinderCore ViewfinderV4L2 ViewfinderPipeWire ViewfinderALSA ViewfinderMovie ViewfinderWebPreview ViewfinderPreviewWindow ViewfinderTesting)
# Modules other work adds (the metadata output) count once they exist.
for extra in ViewfinderMetadata; do
    if [ -d "Sources/$extra" ]; then modules+=("$extra"); fi
done
symbols=API/AVFoundationCapture/symbols.txt
baseline=false
show=--missing
for arg in "$@"; do
    case "$arg" in
        --baseline) baseline=true ;;
        --no-missing | --present | --missing) show=$arg ;;
        -h | --help)
            sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "api-coverage.sh: unknown argument '$arg' (see --help)." >&2
            exit 2
            ;;
    esac
done

dumps=()
if $baseline; then
    for module in "${modules[@]}"; do
        if [ -f "API/$module.json" ]; then dumps+=("API/$module.json"); fi
    done
else
    if ! command -v swift-api-digester >/dev/null; then
        echo "api-coverage.sh: 'swift-api-digester' is not on PATH; it ships with the Swift toolchain (usr/bin)." >&2
        exit 1
    fi
    Scripts/install-dependencies.sh build >/dev/null  # the system libraries the modules build against
    tool_name=api-coverage.sh
    # shellcheck source=Scripts/module-flags.sh
    source "$(dirname "$0")/module-flags.sh"
    flags=(-target "$triple" "${flags[@]}")
    out=$(swift build --show-bin-path)/api-coverage
    mkdir -p "$out"
    for module in "${modules[@]}"; do
        swift-api-digester -dump-sdk -module "$module" "${flags[@]}" -swift-only \
            -avoid-location -avoid-tool-args -o "$out/$module.json"
        dumps+=("$out/$module.json")
    done
fi
python3 Scripts/api-coverage.py "$symbols" "$show" "${dumps[@]}"
