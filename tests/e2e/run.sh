#!/usr/bin/env bash
# End-to-end tests: the built `nearby` binary on hosts in network namespaces, each with its own
# avahi-daemon (tests/lab/netlab.sh). Checks what a user sees: JSON lines, exit codes, and what an
# independent DNS-SD client (avahi-browse, avahi-publish, Avahi's D-Bus API) sees on the wire.
#
#   tests/e2e/run.sh [TEST_NAME...]     (root; NEARBY=path/to/nearby, default .build/debug/nearby;
#                                        root only sets the lab up: every nearby a test starts
#                                        runs as the ordinary user $LAB_USER, nearby-lab)
#
# The tests are the test_* functions of the other *.sh files here (discovery.sh, sessions.sh, …);
# each runs in the same lab of LAB_HOSTS hosts, with its own output directory $OUT.
#   E2E_KEEP=DIR tests/e2e/run.sh …      also keeps each test's output directory under DIR
#   E2E_JOBS=N tests/e2e/run.sh …        N labs at once (default 3), each taking the next test from
#                                        one queue; each test's lines print together when it ends.
#                                        Most of a test's time is waiting on the network, not the CPU.
#
# Ends with the line "e2e: N passed, M failed" and exits non-zero when anything failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lab/netlab.sh
source "$ROOT/tests/lab/netlab.sh"
[[ $EUID -eq 0 ]] || { echo "e2e: needs root (network namespaces)" >&2; exit 2; }

# Root sets the lab up; nearby runs as its users run it, an ordinary user (tests/lab/as-user):
# $NEARBY is tests/lab/nearby, which runs the built binary $NEARBY_BIN as the lab's user. A test
# about root runs "$NEARBY_BIN" itself. The test shells make what they make with umask 000, so
# that user can write in the directories a test prepares (nearby itself runs with umask 022).
if [[ -z ${NEARBY_BIN:-} ]]; then
    NEARBY_BIN=$(readlink -f "${NEARBY:-$ROOT/.build/debug/nearby}")
    [[ -x $NEARBY_BIN ]] || { echo "e2e: no binary at $NEARBY_BIN (swift build first)" >&2; exit 2; }
    _lab_ensure_user || exit 2
    # A clone under a directory the user cannot enter: the user runs a copy (removed on exit).
    if ! "$ROOT/tests/lab/as-user" test -x "$NEARBY_BIN"; then
        copy=$(mktemp -d "${LAB_TMPDIR:-/tmp}/nbbin.XXXXXX") && chmod 0755 "$copy" &&
            cp "$NEARBY_BIN" "$copy/nearby" || { echo "e2e: cannot copy $NEARBY_BIN for $LAB_USER" >&2; exit 2; }
        NEARBY_BIN=$copy/nearby
        trap 'rm -rf "$copy"' EXIT
    fi
    export NEARBY_BIN
fi
NEARBY=$ROOT/tests/lab/nearby
umask 000

PASSED=0 FAILED=0 FAILED_NAMES=()
OUT= # per-test output directory

LAB_HOSTS=${LAB_HOSTS:-6}

# --- assertions: print what was expected on failure, return 1 --------------------------------
fail() { printf '    FAIL: %s\n' "$*" >&2; return 1; }
expect_eq() { [[ "$1" == "$2" ]] || fail "${3:-value}: expected '$2', got '$1'"; }
# expect_json FILE JQ_FILTER DESCRIPTION: some line of FILE satisfies the filter
expect_json() {
    [[ -n $(jq -c "$2" "$1" 2>/dev/null) ]] || { fail "$3 (filter: $2)"; sed 's/^/      | /' "$1" >&2; return 1; }
}
count_json() { jq -c "$2" "$1" 2>/dev/null | wc -l; }
id_of() { lab_run "$1" "$NEARBY" identity | jq -r .peer.id; }

# Start `nearby advertise` on host K in the background, wait for its `advertising` line.
# Sets ADV_PID and ADV_PORT; output in $OUT/adv-hK-SERVICE.jsonl.
advertise() {
    local host=$1 service=$2; shift 2
    local file=$OUT/adv-h$host-$service.jsonl
    lab_bg "$host" "$file" "$NEARBY" advertise --service "$service" "$@" >/dev/null
    ADV_PID=$LAB_PID
    local line
    line=$(lab_wait_line "$file" 'select(.event=="advertising")' 10) || {
        fail "no advertising event from h$host"; cat "$file" "$file.err" >&2; return 1; }
    ADV_PORT=$(jq -r .port <<<"$line")
}

stop() { # stop PID: SIGINT, wait, and return its exit status (124 if it did not exit in 10 s)
    kill -INT "$1" 2>/dev/null
    lab_wait_pid "$1" 10
}

# Every event line any test captured matches docs/events.schema.json (with E2E_JOBS, every lab's).
test_every_line_matches_the_schema() {
    python3 - "$ROOT/docs/events.schema.json" "${E2E_SCHEMA_DIR:-$LAB_DIR/out}"/*/*.jsonl <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft202012Validator(schema)
lines = bad = 0
kinds = set()
import os
for path in sys.argv[2:]:
    # A test's link to another of its files (E2E_KEEP copies links as links): that file is read itself.
    if os.path.islink(path):
        continue
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        lines += 1
        try:
            event = json.loads(line)
        except ValueError as error:
            print(f"    FAIL: {path}:{number}: not JSON: {error}: {line!r}", file=sys.stderr); bad += 1; continue
        kinds.add(event.get("event"))
        for error in validator.iter_errors(event):
            print(f"    FAIL: {path}:{number}: {error.message}", file=sys.stderr); bad += 1
print(f"    {lines} lines checked, kinds: {' '.join(sorted(map(str, kinds)))}")
sys.exit(1 if bad or lines == 0 else 0)
PY
}


# --- runner ---------------------------------------------------------------------------------
for file in "$ROOT"/tests/e2e/*.sh; do
    [[ $file == */run.sh ]] || source "$file"
done
ALL=$(declare -F | awk '{print $3}' | grep '^test_' | grep -v '^test_every_line')
ALL="$ALL test_every_line_matches_the_schema test_every_line_is_free_of_library_text"
SELECTED=${*:-$ALL}
JOBS=${E2E_JOBS:-3}
set -- $SELECTED
((JOBS <= $#)) || JOBS=$#

# Several labs at once: this process starts JOBS workers (this script again, with E2E_QUEUE), sums
# what they report, and checks the schema over every lab's lines at the end.
if [[ -z ${E2E_QUEUE:-} ]] && ((JOBS > 1)); then
    work=$(mktemp -d)
    schema= finals=()
    for TEST in $SELECTED; do
        if [[ $TEST == test_every_line_matches_the_schema ]]; then schema=yes
        # The other checks over every lab's lines (words.sh) run here at the end too.
        elif [[ $TEST == test_every_line_* ]]; then finals+=("$TEST"); else echo "$TEST"; fi
    done >"$work/queue"
    workers=()
    for ((job = 1; job <= JOBS; job++)); do
        E2E_QUEUE=$work/queue E2E_RESULT=$work/result.$job E2E_SCHEMA_DIR=$work/out "$0" &
        workers+=($!)
    done
    trap 'kill -TERM "${workers[@]}" 2>/dev/null; wait; rm -rf "$work"; exit 130' INT TERM
    wait "${workers[@]}"
    for ((job = 1; job <= JOBS; job++)); do
        # A worker that ended without a result (its lab never came up) counts as one failure.
        { read -r passed failed names <"$work/result.$job"; } 2>/dev/null || { passed=0 failed=1 names="lab-$job"; }
        PASSED=$((PASSED + passed)); FAILED=$((FAILED + failed))
        [[ -z $names ]] || FAILED_NAMES+=($names)
    done
    if [[ -n $schema ]]; then
        started=${EPOCHREALTIME/[.,]/}
        if E2E_SCHEMA_DIR=$work/out test_every_line_matches_the_schema; then
            PASSED=$((PASSED + 1)); verdict=ok
        else
            FAILED=$((FAILED + 1)); FAILED_NAMES+=(test_every_line_matches_the_schema); verdict="not ok"
        fi
        printf '%s - %s (%d ms)\n' "$verdict" every_line_matches_the_schema $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    fi
    for TEST in "${finals[@]}"; do
        started=${EPOCHREALTIME/[.,]/}
        if E2E_SCHEMA_DIR=$work/out "$TEST"; then PASSED=$((PASSED + 1)); verdict=ok; else FAILED=$((FAILED + 1)); FAILED_NAMES+=("$TEST"); verdict="not ok"; fi
        printf '%s - %s (%d ms)\n' "$verdict" "${TEST#test_}" $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    done
    [[ -z ${E2E_KEEP:-} ]] || { mkdir -p "$E2E_KEEP" && cp -r "$work/out/." "$E2E_KEEP/"; }
    rm -rf "$work"
    [[ $FAILED -eq 0 ]] || printf 'failed: %s\n' "${FAILED_NAMES[*]}"
    echo "e2e: $PASSED passed, $FAILED failed"
    [[ $FAILED -eq 0 ]]
    exit
fi

# The next test: from the command line, or (a worker) from the shared queue.
next_test() {
    if [[ -z ${E2E_QUEUE:-} ]]; then
        set -- $REMAINING
        [[ $# -gt 0 ]] || return 1
        NEXT=$1; shift; REMAINING="$*"
        return 0
    fi
    NEXT=$({
        flock -x 9
        head -n 1 "$E2E_QUEUE"
        sed -i 1d "$E2E_QUEUE"
    } 9>"$E2E_QUEUE.lock")
    [[ -n $NEXT ]]
}
REMAINING=$SELECTED

# Runs test function $1 in a subshell; one still running after E2E_TEST_TIMEOUT seconds (600) is
# killed with every process it started, and fails saying so (a hang never holds the suite).
descendants() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$child"; descendants "$child"; done
}
run_bounded() {
    local limit=${E2E_TEST_TIMEOUT:-600} test_pid timer status waited
    ("$1") &
    test_pid=$!
    (
        # Polled, so that the timer ends with the test (and with a worker killed mid-test).
        for ((waited = 0; waited < limit; waited++)); do
            sleep 1
            kill -0 "$test_pid" 2>/dev/null || exit 0
        done
        echo "    FAIL: $1 still running after $limit s: killed with every process it started" >&2
        kill -KILL $(descendants "$test_pid") "$test_pid" 2>/dev/null
    ) &
    timer=$!
    wait "$test_pid"; status=$?
    # The timer first: killed after its sleep, it would live long enough to report it ("Killed").
    kill -KILL "$timer" $(descendants "$timer") 2>/dev/null
    wait "$timer" 2>/dev/null
    return "$status"
}

if ! lab_up "$LAB_HOSTS"; then
    echo "e2e: the lab did not come up"
    # A worker's missing result counts as a failure; the process that started it says the total.
    [[ -n ${E2E_QUEUE:-} ]] || echo "e2e: 0 passed, 1 failed"
    exit 1
fi
mkdir -p "$LAB_DIR/out"
# Name host 1 before anything advertises, so every test sees the same display name.
lab_run 1 "$NEARBY" identity --rename "Alice Box" >/dev/null

while next_test; do
    TEST=$NEXT
    OUT=$LAB_DIR/out/$TEST
    mkdir -p "$OUT"
    started=${EPOCHREALTIME/[.,]/}
    # A worker prints each test's lines together, so the labs' tests do not interleave.
    # (Outside the lab: a test may look for files that appear under it.)
    log=${E2E_QUEUE:-}.log.$$
    if [[ -n ${E2E_QUEUE:-} ]]; then run_bounded "$TEST" >"$log" 2>&1; else run_bounded "$TEST"; fi
    status=$?
    if ((status == 0)); then
        PASSED=$((PASSED + 1)); verdict=ok
    else
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$TEST"); verdict="not ok"
    fi
    line=$(printf '%s - %s (%d ms)' "$verdict" "${TEST#test_}" $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 )))
    if [[ -n ${E2E_QUEUE:-} ]]; then
        { flock -x 9; cat "$log"; echo "$line"; } 9>"$E2E_QUEUE.print"
        rm -f "$log"
    else
        echo "$line"
    fi
    # Nothing a test started outlives it (only this lab's processes: other labs may be running).
    lab_nearby_pids() {
        local k pid
        for ((k = 1; k <= LAB_HOSTS; k++)); do
            for pid in $(ip netns pids "$(lab_ns "$k")" 2>/dev/null); do
                [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$NEARBY_BIN" ]] && echo "$pid"
            done
        done
    }
    pids=$(lab_nearby_pids)
    if [[ -n $pids ]]; then
        kill -INT $pids 2>/dev/null; sleep 0.3
        pids=$(lab_nearby_pids); [[ -z $pids ]] || kill -KILL $pids 2>/dev/null
    fi
done

# A worker hands its outputs (for the schema check) and counts to the process that started it.
if [[ -n ${E2E_QUEUE:-} ]]; then
    # The event lines and stderr (what the checks over every line read), unless E2E_KEEP asks for everything.
    mkdir -p "$E2E_SCHEMA_DIR"
    if [[ -n ${E2E_KEEP:-} ]]; then
        cp -r "$LAB_DIR/out/." "$E2E_SCHEMA_DIR/"
    else
        (cd "$LAB_DIR/out" && find . -mindepth 2 -maxdepth 2 \( -name '*.jsonl' -o -name '*.err' \) -exec cp --parents -t "$E2E_SCHEMA_DIR" {} +)
    fi
    echo "$PASSED $FAILED ${FAILED_NAMES[*]}" >"$E2E_RESULT"
    lab_down
    exit 0
fi
# E2E_KEEP=DIR keeps what every test saw (its JSON lines, stderr, terminals) for reading afterwards.
[[ -z ${E2E_KEEP:-} ]] || { mkdir -p "$E2E_KEEP" && cp -r "$LAB_DIR/out/." "$E2E_KEEP/"; }
lab_down
[[ $FAILED -eq 0 ]] || printf 'failed: %s\n' "${FAILED_NAMES[*]}"
echo "e2e: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
