#!/usr/bin/env bash
# Every test tier, as `make test` runs them (after lint): two lanes side by side, one per core.
#
#   scripts/run-tests.sh [PYTEST ARGS...]
#
#   lane e2e:  tests/e2e (the dev image booted in QEMU: TCG keeps one core busy) but LATE_E2E,
#              and the integration tier's QEMU_LANE_EXTRA
#   lane rest: everything else (unit, UI, simulated drives, loop devices, Buildroot checks),
#              then the unit and UI tests again on the image's Python (test-image-python.sh),
#              then the e2e tests in LATE_E2E
#
# Most of the rest is waiting (timed fio runs on simulated drives, the Buildroot checks), so it
# fits beside QEMU. With every QEMU test in the QEMU lane it was the longer one (28.7 min, the
# rest 20.5): LATE_E2E, short boots that need nothing from the others, moves 3.5 minutes of it
# to the rest lane's end (then 22.0 and 22.8 min, 23.9 in all with lint and setup, 2026-11-23).
# The lanes share nothing but the dev image (build-dev-image.sh
# builds it once, under a lock); each lane has its own pytest temporary root, loop devices and
# tmux sessions are per test.
# Both lanes' lines go to the terminal as they come, prefixed "[e2e]" / "[rest]"; whole logs
# in build/test-logs/; a failed lane's failing tests and first error lines are printed again
# at the end (the lanes' lines interleave, and a CI log may keep only its tail). Exit status:
# 0 only when both lanes passed.
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

# QEMU tests the rest lane runs once its own are done
# (test_station.py too since the network boot test joined the QEMU lane, 2026-11-25)
LATE_E2E=(tests/e2e/test_drive_unplug.py tests/e2e/test_stick_pull.py
          tests/e2e/test_kiosk_config.py tests/e2e/test_station.py)

# A QEMU test of the integration tier the QEMU lane runs instead (two boots of the emulated
# ATA drive, ~4 min: the rest lane grew by the ATA emulator's boots, 2026-11-25)
QEMU_LANE_EXTRA=(tests/integration/test_ata_emu_qemu.py::test_hpa_set_by_hdparm_warned_then_native_max_restored_and_erased)

selected() {  # COMMAND...: its exit status, but 0 when PYTEST ARGS select none of its tests
    local rc=0
    "$@" || rc=$?
    [[ $rc -eq 5 ]] && return 0
    return "$rc"
}

rest() {  # all three parts whatever one of them says; the first failure's status
    local rc=0
    selected "$py" -m pytest "$@" --ignore=tests/e2e "${QEMU_LANE_EXTRA[@]/#/--deselect=}" tests \
        || rc=$?
    selected scripts/test-image-python.sh "$@" || rc=$((rc ? rc : $?))
    selected "$py" -m pytest "$@" "${LATE_E2E[@]}" || rc=$((rc ? rc : $?))
    return "$rc"
}

start=$(date +%s)
lane e2e "$py" -m pytest "$@" "${LATE_E2E[@]/#/--ignore=}" tests/e2e "${QEMU_LANE_EXTRA[@]}" &
e2e=$!
rc_rest=0
lane rest rest "$@" || rc_rest=$?
rc_e2e=0
wait "$e2e" || rc_e2e=$?
failures() {  # NAME: a failed lane's failing tests and first error lines, again at the end
    local log=$logs/$1.log
    printf '[%s] what failed (whole log: %s):\n' "$1" "${log#"$repo"/}"
    grep -E '^(FAILED|ERROR) ' "$log" | sed "s/^/[$1]   /" || true
    grep -E '^E  ' "$log" | head -n 20 | cut -c1-200 | sed "s/^/[$1]   /" || true
}
[[ $rc_e2e -eq 0 ]] || failures e2e
[[ $rc_rest -eq 0 ]] || failures rest
printf 'run-tests: rest exit %s, e2e exit %s, %d s in all (logs: %s)\n' \
    "$rc_rest" "$rc_e2e" "$(($(date +%s) - start))" "${logs#"$repo"/}"
[[ $rc_rest -eq 0 && $rc_e2e -eq 0 ]]
