#!/usr/bin/env bash
# Flake hunt: runs the whole test suite K times on a machine kept busy on purpose, and says per
# test how often it failed, with the first failure's message.
#
#   Scripts/flake-hunt.sh                      # 5 runs
#   Scripts/flake-hunt.sh --runs 3             # 3 runs
#   Scripts/flake-hunt.sh --runs 10 --timeout 1800 -- --filter LibV4L2PluginTests
#
# Options: --runs K (default 5); --timeout S, the longest one run may take before it is stopped
# and counted as failed (default 1200 s); --no-load runs without the hogs (for comparison);
# everything after `--` goes to the test binary, as with Scripts/test.sh (--filter, --skip).
#
# The tests are built once (Scripts/test.sh's build, `swift build --build-tests`); each run is
# Scripts/test.sh without its build (VIEWFINDER_TEST_PREBUILT=1), so it runs the same way: under
# a private PipeWire daemon and the libv4l2 fake-camera plug-in. Before each run one CPU hog per
# core (`nproc` busy loops) and one I/O hog (dd writing and syncing a scratch file) start, each
# in a session of its own; after the run they are killed by process group, and a trap kills them
# on any exit (Ctrl-C included), so nothing is left running. Each run's xUnit report and log are
# copied to the results directory (.build/flake-hunt/, printed at the end); the summary lists
# every test that failed in any run, its failure count and its first failure's message. The
# script exits non-zero when any test failed (or a run failed without a report).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
run_timeout=1200
load=true
test_args=()
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=${2:?--runs needs a number}; shift 2 ;;
        --timeout) run_timeout=${2:?--timeout needs seconds}; shift 2 ;;
        --no-load) load=false; shift ;;
        --) shift; test_args=("$@"); break ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "flake-hunt.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $runs in '' | *[!0-9]* | 0) echo "flake-hunt.sh: --runs wants a positive number, got '$runs'" >&2; exit 2 ;; esac
case $run_timeout in '' | *[!0-9]* | 0) echo "flake-hunt.sh: --timeout wants seconds, got '$run_timeout'" >&2; exit 2 ;; esac

results=.build/flake-hunt
rm -rf "$results"
mkdir -p "$results"
scratch=$(mktemp -d /tmp/viewfinder-flake-hunt.XXXXXX)

hogs=()
stop_hogs() {
    local pgid
    for pgid in "${hogs[@]}"; do
        kill -KILL -- "-$pgid" 2>/dev/null || true
        wait "$pgid" 2>/dev/null || true
    done
    hogs=()
    rm -f "$scratch/io"
}
runner=
cleanup() {
    # A run still going (the script was interrupted): timeout passes the signal to its group.
    if [ -n "$runner" ]; then
        kill -TERM "$runner" 2>/dev/null || true
        wait "$runner" 2>/dev/null || true
    fi
    stop_hogs
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Each hog runs in a session (and process group) of its own, so killing the group also ends the
# dd the I/O loop is waiting for. A background job of this (non-interactive) script is not a
# group leader, so setsid makes the new session in place and $! is its group ID.
start_hogs() {
    local i
    for ((i = 0; i < $(nproc); i++)); do
        setsid bash -c 'while :; do :; done' &
        hogs+=($!)
    done
    setsid bash -c 'while :; do dd if=/dev/zero of="$1" bs=1M count=256 conv=fdatasync status=none; done' \
        io-hog "$scratch/io" &
    hogs+=($!)
}

Scripts/install-dependencies.sh tests
swift build --build-tests

failed_runs=0
for ((run = 1; run <= runs; run++)); do
    $load && start_hogs
    echo "flake-hunt: run $run of $runs$($load && echo " ($(nproc) CPU hogs and an I/O hog running)")"
    status=0
    # timeout signals test.sh's whole process group (the PipeWire daemons and the test binary),
    # at the deadline or when this script is interrupted (cleanup).
    VIEWFINDER_TEST_PREBUILT=1 timeout --kill-after=30 "$run_timeout" \
        Scripts/test.sh "${test_args[@]}" >"$results/run-$run.log" 2>&1 &
    runner=$!
    wait "$runner" || status=$?
    runner=
    stop_hogs
    grep -E "^(✔|✘) Test run with|^tests: " "$results/run-$run.log" || true
    if [ -s .build/test-results.xml ]; then
        cp .build/test-results.xml "$results/run-$run.xml"
    else
        echo "flake-hunt: run $run wrote no xUnit report (exit status $status; see $results/run-$run.log)"
        failed_runs=$((failed_runs + 1))
    fi
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "flake-hunt: run $run did not finish within $run_timeout s and was stopped (see $results/run-$run.log)"
        failed_runs=$((failed_runs + 1))
    fi
done

summary_status=0
python3 - "$results" "$runs" <<'EOF' || summary_status=$?
import glob, os, sys, xml.etree.ElementTree as ET

directory, runs = sys.argv[1], int(sys.argv[2])
failures = {}  # test -> (count, first message, run)
reports = sorted(glob.glob(os.path.join(directory, "run-*.xml")), key=lambda p: int(p.split("-")[-1][:-4]))
for path in reports:
    run = int(path.split("-")[-1][:-4])
    for case in ET.parse(path).getroot().iter("testcase"):
        found = case.findall("failure") + case.findall("error")
        if not found:
            continue
        name = f'{case.get("classname")}.{case.get("name")}'
        message = (found[0].get("message") or found[0].text or "").strip()
        count, first, first_run = failures.get(name, (0, message, run))
        failures[name] = (count + 1, first, first_run)
print(f"flake-hunt: {len(reports)} of {runs} runs reported; {len(failures)} tests failed in some run")
for name, (count, message, run) in sorted(failures.items(), key=lambda item: -item[1][0]):
    print(f"  {count}/{len(reports)}  {name}")
    print(f"        first (run {run}): {message[:600]}")
sys.exit(1 if failures else 0)
EOF
echo "flake-hunt: reports and logs in $results/"
if [ "$summary_status" -ne 0 ] || [ "$failed_runs" -ne 0 ]; then
    exit 1
fi
