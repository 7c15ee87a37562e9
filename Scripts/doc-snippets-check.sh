#!/usr/bin/env bash
# Compiles every ```swift block of README.md and of the DocC articles (Sources/*/*.docc/*.md)
# against this checkout, so the documentation cannot drift from the API. CI runs it (.ci/run).
#
#   Scripts/doc-snippets-check.sh [--keep]     (--keep: leave the generated package, print where)
#
# How a block is compiled (Scripts/doc-snippets.py writes a package in a temporary directory that
# depends on this checkout by path):
#   - a block marked with the line `<!-- snippet-check: program -->` just before its fence is a
#     whole program: the main.swift of an executable target of its own (the README's quick start);
#   - a block with a declaration that must sit at file scope (an `extension`, `@Test`, `@main`, a
#     leading `#if`) goes into a file of its own as written;
#   - any other block is the body of a function of its own, which gets as parameters the names
#     the articles use without declaring them (session, camera, output, connection, previewLayer,
#     sampleBuffer, cameras, handler, tap, viewController — see Scripts/doc-snippets.py); a block
#     that declares one of them shadows it.
#   Every file imports Foundation, Dispatch and Viewfinder (and Testing, ViewfinderSimulator).
# A block may opt out only with `<!-- snippet-check: skip REASON -->` just before its fence; the
# reason is required (a Package.swift manifest, say, which the quick-start check builds as one).
#
# Prints the number of blocks compiled and skipped; fails if any block does not compile (the
# compiler's messages name the document and block number through the generated file's name).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || {
    echo "$(basename "$0"): python3 is needed to read the README's code blocks (Scripts/doc-snippets.py): apt-get install python3" >&2
    exit 1
}
keep=
[ "${1:-}" = --keep ] && keep=1
Scripts/install-dependencies.sh build >&2

work=$(mktemp -d /tmp/doc-snippets.XXXXXX)
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
checkout=$(pwd)
python3 Scripts/doc-snippets.py "$checkout" "$work" README.md Sources/*/*.docc/*.md >"$work/summary.txt"
cat "$work/summary.txt"
# The generated package's own build directory, kept between runs in this checkout's .build so only
# the snippets recompile.
scratch="$checkout/.build/doc-snippets"
status=0
swift build --package-path "$work" --scratch-path "$scratch" --build-tests >"$work/build.log" 2>&1 || status=$?
grep -E 'error:' "$work/build.log" >&2 || true
if [ "$status" -ne 0 ]; then
    tail -n 20 "$work/build.log" >&2
    echo "doc-snippets-check: a documentation code block does not compile (above; package in $work)" >&2
    trap - EXIT
    exit 1
fi
compiled=$(sed -n 's/^compiled blocks: //p' "$work/summary.txt")
echo "doc-snippets-check: $compiled code blocks compiled against the package$([ -n "$keep" ] && echo " ($work)")"
