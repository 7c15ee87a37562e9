#!/usr/bin/env bash
# Builds the DocC documentation of the library — the umbrella Viewfinder module with every module
# it re-exports (ViewfinderCore, ViewfinderV4L2, ViewfinderPipeWire, ViewfinderALSA,
# ViewfinderMovie, ViewfinderWebPreview, ViewfinderPreviewWindow, ViewfinderTesting,
# ViewfinderMetadata), so a link
# from one module's docs to another's type resolves — and of ViewfinderSimulator into
# .build/docs/<Module> (a DocC archive; `docc preview` or any static server shows it) and fails
# on any documentation warning, printing it: a broken ``symbol`` link, an unknown parameter, a
# topic that names nothing.
#
# Steps: build the modules, extract their public symbol graphs with the toolchain's
# swift-symbolgraph-extract, then `docc convert` each with its catalogue
# (Sources/<Module>/<Module>.docc, where the module has articles) with --warnings-as-errors.
#
#   Scripts/docs.sh                     # both
#   Scripts/docs.sh Viewfinder          # one
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/install-dependencies.sh build  # the system libraries the modules build against

modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
    modules=(Viewfinder ViewfinderSimulator)
fi

for tool in swift-symbolgraph-extract docc; do
    if ! command -v "$tool" >/dev/null; then
        echo "docs.sh: '$tool' is not on PATH; it ships with the Swift toolchain (usr/bin)." >&2
        exit 1
    fi
done

library_modules=ViewfinderCore,ViewfinderV4L2,ViewfinderPipeWire,ViewfinderALSA,ViewfinderMovie,ViewfinderWebPreview,ViewfinderPreviewWindow,ViewfinderTesting,ViewfinderMetadata
tool_name=docs.sh
# shellcheck source=Scripts/module-flags.sh
source "$(dirname "$0")/module-flags.sh"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
for module in "${modules[@]}"; do
    catalogue="Sources/$module/$module.docc"
    graphs=".build/symbol-graphs/$module"
    out=".build/docs/$module"
    rm -rf "$graphs" "$out"
    mkdir -p "$graphs" .build/docs
    reexported=()
    [ "$module" = Viewfinder ] && reexported=(-experimental-allowed-reexported-modules="$library_modules")
    if ! swift-symbolgraph-extract -module-name "$module" -target "$triple" "${flags[@]}" "${reexported[@]}" \
        -output-dir "$graphs" -minimum-access-level public >"$log" 2>&1; then
        cat "$log" >&2
        echo "docs.sh: extracting the symbol graph of $module failed." >&2
        exit 1
    fi
    status=0
    catalogue_argument=()
    [ -d "$catalogue" ] && catalogue_argument=("$catalogue")
    docc convert "${catalogue_argument[@]}" \
        --additional-symbol-graph-dir "$graphs" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.viewfinder.$module" \
        --output-path "$out" \
        --warnings-as-errors >"$log" 2>&1 || status=$?
    # docc prints diagnostics as "<file>:<line>:<col>: warning: …" (or "error:" under
    # --warnings-as-errors); any of them fails the run, whatever docc's exit status.
    if [ $status -ne 0 ] || grep -qE '(warning|error):' "$log"; then
        cat "$log" >&2
        count=$(grep -cE '(warning|error):' "$log" || true)
        echo "docs.sh: $module: $count documentation diagnostic(s) (docc exited $status)." >&2
        failed=1
    else
        echo "docs.sh: $module: no warnings; archive in $out"
    fi
done
exit $failed
