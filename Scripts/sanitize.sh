#!/usr/bin/env bash
# Runs the whole test suite under AddressSanitizer and under ThreadSanitizer, each in its own
# build directory (.build/sanitize-asan, .build/sanitize-tsan), with the libv4l2 fake-camera plugin
# installed as Scripts/test.sh does. Fails on any sanitizer report (or test failure).
#
#   Scripts/sanitize.sh            # both
#   Scripts/sanitize.sh asan       # one of them
#   Scripts/sanitize.sh tsan -- --filter Robustness   # extra arguments go to `swift test`
#
# ASan: leak detection is off (LeakSanitizer reports the Swift runtime's metadata caches, which are
# never freed by design); memory growth is what Scripts/soak.sh checks.
# TSan: Synchronization.Mutex hands a contended lock over inside the kernel (futex), where TSan
# cannot see the happens-before, and its withLock is inlined, so no suppression can name it. TSan
# builds therefore compile Mutex as a pthread mutex (-DVIEWFINDER_TSAN_LOCKS, see
# Sources/Viewfinder/Support/TSanVisibleMutex.swift); Scripts/tsan-suppressions.txt keeps the
# Mutex frames for code outside the package, each line with its reason. Everything else TSan
# reports fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
which=all
if [[ $# -gt 0 && $1 != -- ]]; then which=$1; shift; fi
[[ ${1:-} == -- ]] && shift
Scripts/install-dependencies.sh >/dev/null

run() {
    local name=$1 sanitizer=$2
    shift 2
    local flags=()
    # TSan: Mutex becomes a pthread mutex TSan can see (Sources/Viewfinder/Support/TSanVisibleMutex.swift).
    [[ $name == tsan ]] && flags=(-Xswiftc -DVIEWFINDER_TSAN_LOCKS)
    local scratch=.build/sanitize-$name log
    log=$(mktemp -t "viewfinder-$name.XXXXXX")
    local start=$SECONDS
    echo "== $name: building in $scratch"
    if ! swift build --build-tests --scratch-path "$scratch" --sanitize="$sanitizer" "${flags[@]}" >"$log" 2>&1; then
        grep -E "error" "$log" | head -n 20
        echo "== $name: build failed"
        return 1
    fi
    echo "== $name: testing (log: $log)"
    local status=0
    Scripts/v4l2-plugin.sh run -- swift test --skip-build --scratch-path "$scratch" --sanitize="$sanitizer" \
        "${flags[@]}" "$@" \
        >"$log" 2>&1 || status=$?
    tail -n 3 "$log"
    local reports
    reports=$(grep -cE "ERROR: AddressSanitizer|WARNING: ThreadSanitizer|SUMMARY: (Address|Thread)Sanitizer" "$log" || true)
    echo "== $name: exit $status, $reports sanitizer report lines, $((SECONDS - start)) s"
    if [[ $reports -ne 0 ]]; then
        grep -E -A 30 "ERROR: AddressSanitizer|WARNING: ThreadSanitizer" "$log" | head -n 120
        return 1
    fi
    return $status
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:abort_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$PWD/Scripts/tsan-suppressions.txt:halt_on_error=0:report_signal_unsafe=0}
failed=0
if [[ $which == all || $which == asan ]]; then run asan address "$@" || failed=1; fi
if [[ $which == all || $which == tsan ]]; then run tsan thread "$@" || failed=1; fi
exit $failed
