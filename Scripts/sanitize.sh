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
# Mutex frames for code outside the package, each line with its reason. This script applies them
# itself, more strictly than TSan's own suppressions would (those excuse a report when any one of
# its stacks has a listed frame, so they would also hide a race whose other side is unlocked
# package code): a data race is excused only when every one of its access stacks runs through a
# listed frame. Everything else TSan reports fails the run.
# Before the suite, the tsan run checks its own setup: SanitizerSetupTests (compiled only into TSan
# builds, run with VIEWFINDER_TSAN_PROBE=1) races unlocked package code (SanitizerProbe) against a
# test's Synchronization.Mutex, and the run fails unless that race is reported.
set -euo pipefail
cd "$(dirname "$0")/.."
which=all
if [[ $# -gt 0 && $1 != -- ]]; then which=$1; shift; fi
[[ ${1:-} == -- ]] && shift
Scripts/install-dependencies.sh tests >/dev/null

# Reads a test log; prints every sanitizer report that is not excused, then one line
# "reports R excused E". A TSan data race (or Swift access race) is excused when each of its access
# stacks (the "Read of size", "Previous write of size", "Modifying access of Swift variable" …
# sections) contains a frame listed in tsan-suppressions.txt ("race:" lines, matched as substrings).
unexcused_reports() {
    awk -v suppressions="$PWD/Scripts/tsan-suppressions.txt" '
        BEGIN {
            while ((getline line < suppressions) > 0) {
                if (line ~ /^race:/) patterns[++npatterns] = substr(line, 6)
            }
        }
        function listed(text,    i) {
            for (i = 1; i <= npatterns; i++) if (index(text, patterns[i]) > 0) return 1
            return 0
        }
        function finish() {
            if (!inreport) return
            if (inaccess && !accessmatched) allmatched = 0
            reports++
            if (israce && accesses > 0 && allmatched) excused++
            else printf "%s", text
            inreport = 0
        }
        /ERROR: AddressSanitizer|WARNING: ThreadSanitizer/ {
            finish()
            inreport = 1; text = ""; israce = ($0 ~ /ThreadSanitizer: (data race|Swift access race)/)
            accesses = 0; allmatched = 1; inaccess = 0
        }
        inreport {
            text = text $0 "\n"
            if ($0 ~ /^  (Previous )?(Atomic |atomic )?([Rr]ead|[Ww]rite) of size/ ||
                $0 ~ /^  (Previous )?([Mm]odifying|[Rr]ead-only) access of Swift variable/) {
                if (inaccess && !accessmatched) allmatched = 0
                inaccess = 1; accessmatched = 0; accesses++
            } else if (inaccess && $0 ~ /^ *$/) {
                if (!accessmatched) allmatched = 0
                inaccess = 0
            } else if (inaccess && listed($0)) {
                accessmatched = 1
            }
            if ($0 ~ /^SUMMARY: (Address|Thread)Sanitizer/) finish()
        }
        END { finish(); printf "reports %d excused %d\n", reports, excused }
    ' "$1"
}

# The TSan setup check: the deliberate race of SanitizerSetupTests must be reported (not excused).
check_tsan_setup() {
    local scratch=$1 log
    log=$(mktemp -t "viewfinder-tsan-probe.XXXXXX")
    echo "== tsan: checking that a race of package code beside a test's Mutex is reported (log: $log)"
    VIEWFINDER_TSAN_PROBE=1 swift test --skip-build --scratch-path "$scratch" --sanitize=thread \
        -Xswiftc -DVIEWFINDER_TSAN_LOCKS --filter SanitizerSetupTests >"$log" 2>&1 || true
    local unexcused
    unexcused=$(unexcused_reports "$log")
    if ! grep -q 'Suite "Sanitizer setup" passed' "$log"; then
        echo "== tsan: the setup test did not run (was the TSan build made with -DVIEWFINDER_TSAN_LOCKS?)"
        return 1
    fi
    if ! grep -q "SanitizerProbe" <<<"$unexcused"; then
        echo "== tsan: the deliberate race in SanitizerProbe was not reported: the suppressions hide races of the package's own code"
        tail -n 1 <<<"$unexcused"
        return 1
    fi
    if grep -q "bothSidesInTheMutexAreExcused" <<<"$unexcused" || grep -q "excused 0$" <<<"$unexcused"; then
        echo "== tsan: the race with both sides in the Mutex's frame was not excused: the suppressions do not apply"
        tail -n 1 <<<"$unexcused"
        return 1
    fi
    echo "== tsan: the deliberate race was reported, the Mutex-only one excused ($(tail -n 1 <<<"$unexcused"))"
}

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
    if [[ $name == tsan ]]; then check_tsan_setup "$scratch" || return 1; fi
    echo "== $name: testing (log: $log)"
    local status=0
    Scripts/v4l2-plugin.sh run -- swift test --skip-build --scratch-path "$scratch" --sanitize="$sanitizer" \
        "${flags[@]}" "$@" \
        >"$log" 2>&1 || status=$?
    tail -n 3 "$log"
    local unexcused counts
    unexcused=$(unexcused_reports "$log")
    counts=$(tail -n 1 <<<"$unexcused")
    echo "== $name: exit $status, sanitizer $counts, $((SECONDS - start)) s"
    if [[ $(wc -l <<<"$unexcused") -gt 1 ]]; then
        head -n 120 <<<"$unexcused"
        return 1
    fi
    return $status
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:abort_on_error=1}
# No suppressions= here: unexcused_reports applies Scripts/tsan-suppressions.txt (see above), so
# TSan prints every report, and exitcode=0 leaves the verdict to that filter and to the tests.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:report_signal_unsafe=0:exitcode=0}
failed=0
if [[ $which == all || $which == asan ]]; then run asan address "$@" || failed=1; fi
if [[ $which == all || $which == tsan ]]; then run tsan thread "$@" || failed=1; fi
exit $failed
