#!/usr/bin/env bash
# Every test tier, as `make test` runs them (after lint): two lanes side by side, one per core.
#
#   scripts/run-tests.sh [PYTEST ARGS...]
#
#   lane e2e:  tests/e2e (the dev image booted in QEMU: TCG keeps one core busy)
#   lane rest: everything else (unit, UI, simulated drives, loop devices, Buildroot checks),
#              then the unit and UI tests again on the image's Python (test-image-python.sh)
#
# Most of the rest is waiting (timed fio runs on simulated drives, the Buildroot checks), so it
# fits beside QEMU: 28.5 minutes in all on 2 cores (QEMU lane 27.5, the rest 19.6 with the
# image-pins pass) instead of 33-35 one after the other (README.md). The lanes share nothing:
# e2e is the only user of build/dev-image, each lane has its own pytest temporary root, loop
# devices and tmux sessions are per test.
# Both lanes' lines go to the terminal as they come, prefixed "[e2e]" / "[rest]"; whole logs
# in build/test-logs/. Exit status: 0 only when both lanes passed.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
py=$repo/.venv/bin/python
logs=$repo/build/test-logs
mkdir -p "$logs"
cd "$repo"

lane() {  # NAME COMMAND...: run it with its own temporary root, prefix its lines, keep a log
    local name=$1
    shift
    local tmp=${TMPDIR:-/tmp}/ssdbench-tests-$name
    mkdir -p "$tmp"
    set +e
    PYTEST_DEBUG_TEMPROOT=$tmp "$@" 2>&1 | tee "$logs/$name.log" | sed -u "s/^/[$name] /"
    local rc=${PIPESTATUS[0]}
    set -e
    if [[ $rc -eq 5 ]]; then  # PYTEST ARGS that select nothing in this lane
        printf '[%s] no test selected in this lane\n' "$name"
        rc=0
    fi
    printf '[%s] lane finished: exit %s\n' "$name" "$rc"
    return "$rc"
}

rest() {
    "$py" -m pytest "$@" --ignore=tests/e2e tests || return
    scripts/test-image-python.sh "$@"
}

start=$(date +%s)
lane e2e "$py" -m pytest "$@" tests/e2e &
e2e=$!
rc_rest=0
lane rest rest "$@" || rc_rest=$?
rc_e2e=0
wait "$e2e" || rc_e2e=$?
printf 'run-tests: rest exit %s, e2e exit %s, %d s in all (logs: %s)\n' \
    "$rc_rest" "$rc_e2e" "$(($(date +%s) - start))" "${logs#"$repo"/}"
[[ $rc_rest -eq 0 && $rc_e2e -eq 0 ]]
