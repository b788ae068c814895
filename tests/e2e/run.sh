#!/usr/bin/env bash
# End-to-end tests: the built `nearby` binary on hosts in network namespaces, each with its own
# avahi-daemon (tests/lab/netlab.sh). Checks what a user sees: JSON lines, exit codes, and what an
# independent DNS-SD client (avahi-browse, avahi-publish, Avahi's D-Bus API) sees on the wire.
#
#   tests/e2e/run.sh [TEST_NAME...]     (root; NEARBY=path/to/nearby, default .build/debug/nearby)
#
# The tests are the test_* functions of the other *.sh files here (discovery.sh, sessions.sh, …);
# each runs in the same lab of LAB_HOSTS hosts, with its own output directory $OUT.
#   E2E_KEEP=DIR tests/e2e/run.sh …      also keeps each test's output directory under DIR
#
# Ends with the line "e2e: N passed, M failed" and exits non-zero when anything failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NEARBY=${NEARBY:-$ROOT/.build/debug/nearby}
NEARBY=$(readlink -f "$NEARBY")
# shellcheck source=../lab/netlab.sh
source "$ROOT/tests/lab/netlab.sh"

[[ -x $NEARBY ]] || { echo "e2e: no binary at $NEARBY (swift build first)" >&2; exit 2; }
[[ $EUID -eq 0 ]] || { echo "e2e: needs root (network namespaces)" >&2; exit 2; }

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

# Every event line any test captured matches docs/events.schema.json.
test_every_line_matches_the_schema() {
    python3 - "$ROOT/docs/events.schema.json" "$LAB_DIR"/out/*/*.jsonl <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft202012Validator(schema)
lines = bad = 0
kinds = set()
for path in sys.argv[2:]:
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
ALL="$ALL test_every_line_matches_the_schema"
SELECTED=${*:-$ALL}

lab_up "$LAB_HOSTS" || { echo "e2e: the lab did not come up"; echo "e2e: 0 passed, 1 failed"; exit 1; }
mkdir -p "$LAB_DIR/out"
# Name host 1 before anything advertises, so every test sees the same display name.
lab_run 1 "$NEARBY" identity --rename "Alice Box" >/dev/null

for TEST in $SELECTED; do
    OUT=$LAB_DIR/out/$TEST
    mkdir -p "$OUT"
    started=${EPOCHREALTIME/[.,]/}
    if "$TEST"; then
        PASSED=$((PASSED + 1)); verdict=ok
    else
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$TEST"); verdict="not ok"
    fi
    printf '%s - %s (%d ms)\n' "$verdict" "${TEST#test_}" $(( (${EPOCHREALTIME/[.,]/} - started) / 1000 ))
    # Nothing a test started outlives it (only this lab's processes: other labs may be running).
    lab_nearby_pids() {
        local k pid
        for ((k = 1; k <= LAB_HOSTS; k++)); do
            for pid in $(ip netns pids "$(lab_ns "$k")" 2>/dev/null); do
                [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$NEARBY" ]] && echo "$pid"
            done
        done
    }
    pids=$(lab_nearby_pids)
    if [[ -n $pids ]]; then
        kill -INT $pids 2>/dev/null; sleep 0.3
        pids=$(lab_nearby_pids); [[ -z $pids ]] || kill -KILL $pids 2>/dev/null
    fi
done

# E2E_KEEP=DIR keeps what every test saw (its JSON lines, stderr, terminals) for reading afterwards.
[[ -z ${E2E_KEEP:-} ]] || { mkdir -p "$E2E_KEEP" && cp -r "$LAB_DIR/out/." "$E2E_KEEP/"; }
lab_down
[[ $FAILED -eq 0 ]] || printf 'failed: %s\n' "${FAILED_NAMES[*]}"
echo "e2e: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
