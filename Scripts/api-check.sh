#!/usr/bin/env bash
# Keeps the public interface's shape checked. API/<Module>.json is a baseline of the public API
# of each library module (the umbrella Viewfinder declares nothing: it re-exports them) and of
# ViewfinderSimulator, dumped by the toolchain's swift-api-digester. This script builds the
# modules and compares their public API with the baseline:
#
#   Scripts/api-check.sh            # fails on a breaking change (a public declaration removed,
#                                   # renamed, or its type, generics, conformances or attributes
#                                   # changed); additions pass
#   Scripts/api-check.sh --update   # rewrites the baseline from the current code
#
# A breaking change is therefore a deliberate edit: run --update and commit API/*.json with it.
# Additions pass the check without an update; update the baseline when convenient so later
# removals of the new API are caught too.
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh build  # the system libraries the modules build against

modules=(ViewfinderCore ViewfinderV4L2 ViewfinderPipeWire ViewfinderALSA ViewfinderMovie ViewfinderWebPreview ViewfinderPreviewWindow ViewfinderTesting ViewfinderMetadata ViewfinderSimulator)
baselines=API
update=false
case "${1:-}" in
    "") ;;
    --update) update=true ;;
    -h | --help)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "api-check.sh: unknown argument '$1' (use --update to rewrite the baseline)." >&2
        exit 2
        ;;
esac

if ! command -v swift-api-digester >/dev/null; then
    echo "api-check.sh: 'swift-api-digester' is not on PATH; it ships with the Swift toolchain (usr/bin)." >&2
    exit 1
fi
tool_name=api-check.sh
# shellcheck source=Scripts/module-flags.sh
source "$(dirname "$0")/module-flags.sh"
flags=(-target "$triple" "${flags[@]}")

if $update; then
    mkdir -p "$baselines"
    for module in "${modules[@]}"; do
        # No file paths or tool arguments in the baseline, so it does not depend on the checkout.
        swift-api-digester -dump-sdk -module "$module" "${flags[@]}" -swift-only \
            -avoid-location -avoid-tool-args -o "$baselines/$module.json"
        echo "api-check.sh: wrote $baselines/$module.json"
    done
    exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
for module in "${modules[@]}"; do
    baseline="$baselines/$module.json"
    if [ ! -f "$baseline" ]; then
        echo "api-check.sh: no baseline $baseline; create it with 'Scripts/api-check.sh --update'." >&2
        failed=1
        continue
    fi
    # -compiler-style-diags: each breaking change is an "error: API breakage: …" at the changed
    # declaration, and the digester exits non-zero when there is one.
    status=0
    swift-api-digester -diagnose-sdk -module "$module" "${flags[@]}" -baseline-path "$baseline" \
        -compiler-style-diags >"$log" 2>&1 || status=$?
    if [ $status -ne 0 ] || grep -q 'error:' "$log"; then
        cat "$log" >&2
        count=$(grep -c 'API breakage' "$log" || true)
        echo "api-check.sh: $module: $count breaking change(s) to the public API against $baseline." >&2
        echo "  If the change is deliberate, run 'Scripts/api-check.sh --update' and commit $baseline." >&2
        failed=1
    else
        echo "api-check.sh: $module: no breaking change against $baseline"
    fi
done
exit $failed
