#!/usr/bin/env bash
# End-to-end tests: the built `nearby` binary on hosts in network namespaces, each with its own
# avahi-daemon (tests/lab/netlab.sh). Checks what a user sees: JSON lines, exit codes, and what an
# independent DNS-SD client (avahi-browse, avahi-publish, Avahi's D-Bus API) sees on the wire.
#
#   tests/e2e/run.sh [TEST_NAME...]     (root; NEARBY=path/to/nearby, default .build/debug/nearby;
#                                        root only sets the lab up: every nearby a test starts
#                                        runs as the ordinary user $LAB_USER, nearby-lab; a name
#                                        with or without its test_ prefix)
#
# The tests are the test_* functions of the other *.sh files here (discovery.sh, sessions.sh, …);
# each runs in the same lab of LAB_HOSTS hosts, with its own output directory $OUT.
#   E2E_KEEP=DIR tests/e2e/run.sh …      also keeps each test's output directory under DIR
#   E2E_JOBS=N tests/e2e/run.sh …        N labs at once (default 3), each taking the next test from
#                                        one queue; each test's lines print together when it ends.
#                                        Most of a test's time is waiting on the network, not the CPU.
#
# Each result line starts with [n/N m:ss] (how many tests have ended, of how many, and the time so
# far); a failed test's line ends with the command that runs it again alone; with nothing printed
# for 30 s, a line names the tests running. Then the slowest tests, the failed ones (and the command
# that runs them again), and the closing line "e2e: N passed, M failed" (CI reads it); exits
# non-zero when anything failed.
#
# The tests do not depend on the caller's environment: whatever LANG, LC_ALL or TERM it has, they
# run in C.UTF-8 (bash reads $'\u202e' in the test files as UTF-8 only in a UTF-8 locale), and a
# test that wants a locale or a terminal sets it (tests/e2e/locale.sh runs nearby in plain C).
set -u
export LC_ALL=C.UTF-8 LANG=C.UTF-8
unset LANGUAGE
export PYTHONDONTWRITEBYTECODE=1   # no root-owned __pycache__ in the clone of the person who runs this
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lab/netlab.sh
source "$ROOT/tests/lab/netlab.sh"
[[ $EUID -eq 0 ]] || { echo "e2e: needs root (network namespaces): sudo $0 $*" >&2; exit 2; }
# The command that runs a test again alone (the failed tests' lines end with it).
if [[ -z ${E2E_AGAIN:-} ]]; then
    E2E_AGAIN=${SUDO_USER:+sudo }${NEARBY:+NEARBY=$NEARBY }$([[ $PWD == "$ROOT" ]] && echo tests/e2e/run.sh || echo "$ROOT/tests/e2e/run.sh")
    export E2E_AGAIN
fi

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
# mem_mb N: a test's bound of N MB on a process's memory, times E2E_MEM_SCALE (a whole number,
# default 1): an AddressSanitizer build holds shadow memory, redzones and freed memory in
# quarantine beside what nearby holds (scripts/sanitize e2e: 3). Every memory bound goes through it.
mem_mb() { echo $(( $1 * ${E2E_MEM_SCALE:-1} )); }
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
SELECTED=
for name in ${*:-$ALL}; do   # with or without the test_ prefix (the result lines show it without)
    name=test_${name#test_}
    declare -F "$name" >/dev/null || { echo "e2e: no test named ${name#test_} (the test_* functions of tests/e2e/*.sh)" >&2; exit 2; }
    SELECTED+="$name "
done
JOBS=${E2E_JOBS:-3}
set -- $SELECTED
((JOBS <= $#)) || JOBS=$#

# Progress: [n/N m:ss] on each result line; E2E_COUNT and E2E_TIMES are the files that count the
# ended tests and keep "ms name" of each (shared by the workers, written under the print lock).
: "${E2E_TOTAL:=$#}" "${E2E_START:=${EPOCHREALTIME/[.,]/}}"
export E2E_TOTAL E2E_START
elapsed() {
    local s=$(( (${EPOCHREALTIME/[.,]/} - E2E_START) / 1000000 ))
    printf '%d:%02d' $((s / 60)) $((s % 60))
}
COUNT=0 TIMES=()
result_line() { # result_line VERDICT TEST MS: count it, print its line (under the caller's lock)
    if [[ -n ${E2E_COUNT:-} ]]; then COUNT=$(( $(cat "$E2E_COUNT") + 1 )); echo "$COUNT" >"$E2E_COUNT"; else COUNT=$((COUNT + 1)); fi
    if [[ -n ${E2E_TIMES:-} ]]; then echo "$3 ${2#test_}" >>"$E2E_TIMES"; else TIMES+=("$3 ${2#test_}"); fi
    printf '[%*d/%d %s] %s - %s (%d ms)%s\n' ${#E2E_TOTAL} "$COUNT" "$E2E_TOTAL" "$(elapsed)" "$1" "${2#test_}" "$3" \
        "$([[ $1 == ok ]] || echo " — alone: $E2E_AGAIN ${2#test_}")"
}
summary() { # the slowest tests, the failed ones, and the closing line CI reads
    local slowest
    slowest=$({ if [[ -n ${E2E_TIMES:-} ]]; then cat "$E2E_TIMES"; else printf '%s\n' "${TIMES[@]}"; fi; } |
        sort -rn | head -n 5 | awk '$1 != "" {printf "%s%s %.1f s", sep, $2, $1 / 1000; sep = ", "}')
    echo "time: $(elapsed)${slowest:+; slowest: $slowest}"
    [[ $FAILED -eq 0 ]] || printf 'failed: %s — again: %s %s\n' "${FAILED_NAMES[*]#test_}" "$E2E_AGAIN" "${FAILED_NAMES[*]#test_}"
    echo "e2e: $PASSED passed, $FAILED failed"
}

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
    echo 0 >"$work/count"
    export E2E_COUNT=$work/count E2E_TIMES=$work/times
    for ((job = 1; job <= JOBS; job++)); do
        E2E_QUEUE=$work/queue E2E_RESULT=$work/result.$job E2E_SCHEMA_DIR=$work/out "$0" &
        workers+=($!)
    done
    trap 'kill -TERM "${workers[@]}" 2>/dev/null; wait; rm -rf "$work"; exit 130' INT TERM
    # While they run: with no result line for 30 s, one line says which tests are running.
    said=$SECONDS
    while :; do
        running=0
        for worker in "${workers[@]}"; do [[ $(ps -o stat= -p "$worker" 2>/dev/null) == [^Z]* ]] && running=1; done
        ((running)) || break
        sleep 1
        quiet=$(( $(date +%s) - $(stat -c %Y "$work/count") ))
        if ((quiet >= 30 && SECONDS - said >= 30)); then
            said=$SECONDS
            { flock -x 9
              printf '[%*d/%d %s] running: %s\n' ${#E2E_TOTAL} "$(cat "$work/count")" "$E2E_TOTAL" "$(elapsed)" \
                  "$(cat "$work"/result.*.current 2>/dev/null | sed 's/^test_//' | paste -sd ' ')"
            } 9>"$work/queue.print"
        fi
    done
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
        result_line "$verdict" test_every_line_matches_the_schema $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    fi
    for TEST in "${finals[@]}"; do
        started=${EPOCHREALTIME/[.,]/}
        if E2E_SCHEMA_DIR=$work/out "$TEST"; then PASSED=$((PASSED + 1)); verdict=ok; else FAILED=$((FAILED + 1)); FAILED_NAMES+=("$TEST"); verdict="not ok"; fi
        result_line "$verdict" "$TEST" $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    done
    [[ -z ${E2E_KEEP:-} ]] || { mkdir -p "$E2E_KEEP" && cp -r "$work/out/." "$E2E_KEEP/"; }
    summary
    rm -rf "$work"
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

# Every host's IPv4 addresses ("NS DEV ADDRESS/PREFIX" a line): what a test adds it must take away,
# and what it takes away it must put back, or every later test in this lab runs on another network
# (h2 kept ten addresses after an HTTP test once, and doctor asked its responder at the wrong one).
lab_addresses() {
    local k
    for ((k = 1; k <= LAB_HOSTS; k++)); do
        ip -n "$(lab_ns "$k")" -4 -o addr show 2>/dev/null | awk -v ns="$(lab_ns "$k")" '{ print ns, $2, $4 }'
    done | LC_ALL=C sort
}
LAB_ADDRESSES=$(lab_addresses)
# lab_addresses_kept: fails (naming them) when the test left addresses changed; removes what it added.
lab_addresses_kept() {
    local now added missing ns dev address
    now=$(lab_addresses)
    [[ $now != "$LAB_ADDRESSES" ]] || return 0
    added=$(LC_ALL=C comm -13 <(echo "$LAB_ADDRESSES") <(echo "$now"))
    missing=$(LC_ALL=C comm -23 <(echo "$LAB_ADDRESSES") <(echo "$now"))
    [[ -z $added ]] || echo "    FAIL: the test left addresses in the lab (removed now): $(tr '\n' ';' <<<"$added")"
    [[ -z $missing ]] || echo "    FAIL: the test took addresses from the lab and did not put them back: $(tr '\n' ';' <<<"$missing")"
    while read -r ns dev address; do
        [[ -n $address ]] && ip -n "$ns" addr del "$address" dev "$dev" 2>/dev/null
    done <<<"$added"
    return 1
}

while next_test; do
    TEST=$NEXT
    OUT=$LAB_DIR/out/$TEST
    mkdir -p "$OUT"
    started=${EPOCHREALTIME/[.,]/}
    [[ -z ${E2E_QUEUE:-} ]] || echo "$TEST" >"$E2E_RESULT.current"
    # A worker prints each test's lines together, so the labs' tests do not interleave.
    # (Outside the lab: a test may look for files that appear under it.)
    log=${E2E_QUEUE:-}.log.$$
    if [[ -n ${E2E_QUEUE:-} ]]; then run_bounded "$TEST" >"$log" 2>&1; else run_bounded "$TEST"; fi
    status=$?
    if [[ -n ${E2E_QUEUE:-} ]]; then lab_addresses_kept >>"$log" 2>&1; else lab_addresses_kept >&2; fi || status=1
    if ((status == 0)); then
        PASSED=$((PASSED + 1)); verdict=ok
    else
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$TEST"); verdict="not ok"
    fi
    ms=$(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    if [[ -n ${E2E_QUEUE:-} ]]; then
        rm -f "$E2E_RESULT.current"
        { flock -x 9; cat "$log"; result_line "$verdict" "$TEST" "$ms"; } 9>"$E2E_QUEUE.print"
        rm -f "$log"
    else
        result_line "$verdict" "$TEST" "$ms"
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
summary
[[ $FAILED -eq 0 ]]
