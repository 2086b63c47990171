"""scripts/run-tests.py, the scheduler `make test` runs every tier with: the longest job
first, a job's needs first, a job that wants no QEMU beside it never overlapping one, a
failed need failing its dependants, the budget and the closing line from the jobs' logs."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO


@pytest.fixture
def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_tests", REPO / "scripts" / "run-tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "run_tests", module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "LOGS", tmp_path / "logs")
    (tmp_path / "logs").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    return module


def started(name: str) -> str:
    return f'[ -e "$TMPDIR/{name}.start" ]'


def ended(name: str) -> str:
    return f'[ -e "$TMPDIR/{name}.end" ]'


def wait_until(cond: str) -> str:
    """Shell that waits for ``cond``, polling every 10 ms, and exits 1 after 60 s."""
    return (f"n=0; until {cond}; do n=$((n+1)); [ $n -gt 6000 ] && exit 1; sleep 0.01; "
            "done; ")


def job(rt: ModuleType, name: str, seconds: float, *, rc: int = 0, until: str = "",
        **kw: Any) -> Any:
    """A job that sleeps ``seconds`` and leaves markers of its start and end in TMPDIR.
    With ``until`` (a shell condition, e.g. ``started("unit")``) it first waits, at most
    60 s, for it: an overlap the test asserts is then there on any host, however late a
    loaded machine starts a job at SCHED_IDLE (a CI run started a 0.5 s job after its
    0.4 s partner had ended); a scheduler that ran them one after the other fails on the
    wait's exit 1, not a race."""
    wait = wait_until(until) if until else ""
    script = (f'touch "$TMPDIR/{name}.start"; {wait}sleep {seconds}; echo {name}; '
              f'touch "$TMPDIR/{name}.end"; exit {rc}')
    return rt.Job(name, ["sh", "-c", script], seconds, pytest=False, **kw)


def run(rt: ModuleType, jobs: list[Any], lanes: int = 2) -> list[Any]:
    """The jobs on main()'s lanes: ``lanes`` core lanes (0, 1), the host lane (2), a light
    lane each for the light jobs (3...)."""
    for i, j in enumerate(jobs):
        j.number = i
    runner = rt.Runner(list(jobs))
    import threading

    threads = [threading.Thread(target=runner.lane, args=(i, kind))  # as main() does
               for i, kind in enumerate(rt.lane_kinds(lanes, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)  # a loaded host may starve the SCHED_IDLE jobs for a while
    assert not any(t.is_alive() for t in threads), "the lanes did not end in 120 s"
    return jobs


def overlap(a: Any, b: Any) -> bool:
    return bool(a.start < b.end and b.start < a.end)


def test_longest_first_needs_first_and_alone_never_beside_qemu(rt: ModuleType) -> None:
    image = job(rt, "dev-image", 0.2, first=True, until=started("known"))
    quick = job(rt, "kiosk_quick", 0.6, needs=("dev-image",), qemu=True, alone=True)
    serial = job(rt, "serial", 0.8, needs=("dev-image",), qemu=True)
    boot = job(rt, "boot", 0.3, needs=("dev-image",), qemu=True)
    known = job(rt, "known", 0.7, until=started("dev-image"))
    unit = job(rt, "unit", 0.5)
    done = run(rt, [unit, boot, serial, quick, known, image])
    assert all(j.rc == 0 for j in done)
    assert image.lane != known.lane and overlap(image, known)
    for j in (quick, serial, boot):
        assert j.start >= image.end
    # the job that wants no QEMU beside it comes first after the dev image, then no guest
    # runs beside it
    assert quick.start < serial.start
    assert not overlap(quick, serial) and not overlap(quick, boot)
    assert (quick.log.read_text().splitlines()
            == ["kiosk_quick"])


def test_a_light_job_runs_on_its_own_lane_the_others_at_sched_idle_and_cpu_counted(
        rt: ModuleType) -> None:
    # Each job says it runs (a marker in TMPDIR) and waits, at most 60 s, for the markers of
    # the others it must overlap: so all three are alive at one moment on any host (a CI
    # run beside guests started the light job after the 20,000-step spin had ended; a
    # scheduler that ran them one after the other fails on the wait's exit 1, not a race)
    def waiting(me: str, others: str) -> str:
        return (f'touch "$TMPDIR/{me}.start"; '
                + wait_until(" && ".join(started(o) for o in others.split())))

    light = rt.Job("known", ["sh", "-c", waiting("known", "spin unit") + "echo known"], 0.9,
                   pytest=False, light=True)
    # /proc/PID/stat's 41st field: the scheduling policy (5: SCHED_IDLE)
    spin = rt.Job("spin", ["sh", "-c", waiting("spin", "known")
                           + "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; "
                           "cut -d' ' -f41 /proc/self/stat"], 0.5, pytest=False)
    unit = rt.Job("unit", ["sh", "-c", waiting("unit", "known") + "echo unit"], 0.2,
                  pytest=False)
    policy = rt.Job("policy", ["cut", "-d ", "-f41", "/proc/self/stat"], 0.1, pytest=False,
                    light=True)
    run(rt, [light, spin, unit, policy])
    assert (light.rc, spin.rc, unit.rc, policy.rc) == (0, 0, 0, 0)
    # the core and host lanes never took it: they were free before it ended
    assert light.lane >= 3 and {spin.lane, unit.lane} <= {0, 1, 2}
    assert overlap(light, spin) and overlap(light, unit)
    assert spin.log.read_text().split() == [str(os.SCHED_IDLE)]
    assert policy.log.read_text().split() == [str(os.SCHED_OTHER)]
    assert spin.cpu_s > 0.01 and light.cpu_s < spin.cpu_s


def test_the_host_lane_takes_host_jobs_only_and_fills_the_minutes_alone_keeps_guests_out(
        rt: ModuleType) -> None:
    image = job(rt, "dev-image", 0.1, first=True)
    # the guest that wants no other waits for the three host jobs' ends (exit 1 after 60 s
    # if they cannot run beside it); each host job for a second one's start
    quick = job(rt, "kiosk_quick", 0.3, needs=("dev-image",), qemu=True, alone=True,
                until=" && ".join(ended(f"host{i}") for i in range(3)))
    boot = job(rt, "boot", 0.3, needs=("dev-image",), qemu=True)
    fio = job(rt, "pts-loop", 0.2, heavy=True)
    two = '[ "$(ls "$TMPDIR" | grep -c "^host.\\.start$")" -ge 2 ]'
    hosts = [job(rt, f"host{i}", 0.35, until=two) for i in range(3)]
    run(rt, [image, quick, boot, fio, *hosts])
    assert all(j.rc == 0 for j in (image, quick, boot, fio, *hosts))
    host_lane = [j for j in (image, quick, boot, fio, *hosts) if j.lane == 2]
    assert host_lane and not any(j.qemu or j is image for j in host_lane)
    # two host jobs at once beside the guest that wants no other: all three ran while it
    # did (its exit 0 says they ended before it)
    assert sum(overlap(a, b) for a in hosts for b in hosts if a is not b) >= 2
    assert all(h.start < quick.end for h in hosts)
    assert boot.start >= quick.end and fio.start >= quick.end
    # a job only the host lane takes waits for it, however free a core lane is
    pins = job(rt, "image-pins", 0.3)
    unit = job(rt, "unit", 0.2)
    run(rt, [pins, unit])
    assert pins.rc == 0 and pins.lane == 2


def test_light_jobs_each_on_a_lane_of_their_own_at_once_after_the_part_they_wait_for(
        rt: ModuleType) -> None:
    first = job(rt, "per-second", 0.3, quiet=True, light=True)
    lights = [job(rt, f"light{i}", 0.6, light=True, after=("per-second",),
                  until=" && ".join(started(f"light{k}") for k in range(3)))
              for i in range(3)]
    unit = job(rt, "unit", 0.2)
    run(rt, [*lights, first, unit])
    assert all(j.rc == 0 for j in (*lights, first, unit))
    # light lanes (3...) only, the three at once on lanes of their own
    assert first.lane >= 3 and sorted({j.lane for j in lights}) == sorted(j.lane for j in lights)
    assert min(j.lane for j in lights) >= 3
    for a in lights:
        assert a.start >= first.end
        assert all(overlap(a, b) for b in lights if b is not a)
    # the file's light groups and the part that waits: every test of the file in one job
    # exactly (the groups' expressions and the rest's are one another's complement)
    names = {j.name: j for j in rt.jobs([])}
    for rel, groups in rt.LIGHT.items():
        rest = names[f"{rel} -k not ({' or '.join(groups)})"]
        assert rest.quiet and rest.light and not rest.alone
        for i, g in enumerate(groups):
            assert names[f"{rel} -k {g}"].light
            # one beside the kiosk quick plan, as the one light job was; the others after it
            assert names[f"{rel} -k {g}"].after == ((rest.name,) if i == 0
                                                   else (rest.name, *rt.ALONE))


def test_a_quiet_job_has_no_guest_beside_it_but_the_one_that_wants_no_other(
        rt: ModuleType) -> None:
    image = job(rt, "dev-image", 0.1, first=True)
    known = job(rt, "per-second", 0.5, quiet=True, light=True,  # wants no guest but quick
                until=started("kiosk_quick"))
    quick = job(rt, "kiosk_quick", 0.3, needs=("dev-image",), qemu=True, alone=True,
                until=started("per-second"))
    boot = job(rt, "boot", 0.2, needs=("dev-image",), qemu=True)
    fio = job(rt, "pts-loop", 0.1, heavy=True)
    unit = job(rt, "unit", 0.6)
    run(rt, [image, known, quick, boot, fio, unit])
    assert all(j.rc == 0 for j in (image, known, quick, boot, fio, unit))
    assert overlap(quick, known)
    assert not overlap(boot, known), (boot.start, known.end)
    assert not overlap(fio, known) and not overlap(fio, quick)
    assert not overlap(quick, boot)


def test_the_dev_image_at_the_normal_priority_the_guest_that_wants_no_other_just_above_idle(
        rt: ModuleType) -> None:
    # /proc/PID/stat's 41st field: the scheduling policy (SCHED_IDLE for the host's jobs); the
    # 19th: the nice value
    def policy(name: str, **kw: Any) -> Any:
        return rt.Job(name, ["cut", "-d ", "-f19,41", "/proc/self/stat"], 0.1, pytest=False,
                      **kw)

    image = policy("dev-image", first=True)
    quick = policy("kiosk_quick", needs=("dev-image",), qemu=True, alone=True)
    boot = policy("boot", needs=("dev-image",), qemu=True)
    unit = policy("unit")
    run(rt, [image, quick, boot, unit])
    got = {j.name: j.log.read_text().strip() for j in (image, quick, boot, unit)}
    nice = os.nice(0)  # what the jobs inherit (a SCHED_IDLE task has one too)
    assert got == {"dev-image": f"{nice} {os.SCHED_OTHER}",
                   "kiosk_quick": f"{min(19, nice + 19)} {os.SCHED_OTHER}",
                   "boot": f"{nice} {os.SCHED_IDLE}", "unit": f"{nice} {os.SCHED_IDLE}"}


def test_a_heavy_host_job_never_runs_beside_one_that_wants_no_guest(rt: ModuleType) -> None:
    image = job(rt, "dev-image", 0.1, first=True)
    quick = job(rt, "kiosk_quick", 0.4, needs=("dev-image",), qemu=True, alone=True,
                until=started("unit"))
    fio = job(rt, "pts-loop", 0.3, heavy=True)
    unit = job(rt, "unit", 0.5, until=started("kiosk_quick"))
    run(rt, [image, quick, fio, unit])
    assert all(j.rc == 0 for j in (image, quick, fio, unit))
    assert not overlap(quick, fio) and overlap(quick, unit)
    jobs = rt.jobs([])
    assert {j.name for j in jobs if j.heavy} - {"image-pins"} == set(rt.HEAVY)
    # image-pins only while it has its CPython to build
    (pins,) = [j for j in jobs if j.name == "image-pins"]
    assert pins.heavy == rt.image_pins_builds()


def test_a_job_after_another_waits_for_its_end_whatever_its_outcome(rt: ModuleType) -> None:
    first = job(rt, "per-second", 0.4, rc=1)
    light = job(rt, "light", 0.1, light=True, after=("per-second",))
    unit = job(rt, "unit", 0.1)
    run(rt, [light, first, unit])
    assert (first.rc, light.rc, unit.rc) == (1, 0, 0)  # it ran although the other failed
    assert light.start >= first.end and light.lane == 3


def test_a_failed_need_fails_its_dependants_and_the_rest_goes_on(rt: ModuleType) -> None:
    image = job(rt, "dev-image", 0.1, rc=3, first=True)
    e2e = job(rt, "e2e", 0.1, needs=("dev-image",), qemu=True)
    unit = job(rt, "unit", 0.1)
    run(rt, [image, e2e, unit])
    assert (image.rc, e2e.rc, unit.rc) == (3, 1, 0)
    assert "not run: dev-image failed" in e2e.log.read_text()


def test_every_jobs_pytest_summary_adds_up_to_the_closing_counts(rt: ModuleType,
                                                                 tmp_path: Path) -> None:
    logs = []
    for i, line in enumerate((
            "====== 816 passed, 1 deselected, 15 xfailed in 1553.49s (0:25:53) ======",
            "================ 697 passed, 2 deselected in 126.64s (0:02:06) ================",
            "==== 1 failed, 11 passed, 2 skipped, 1 error in 674.10s (0:11:14) ====")):
        j = rt.Job(f"j{i}", [], 1.0)
        j.log = tmp_path / f"j{i}.log"
        j.log.write_text(f"tests/x.py ...\n{line}\n")
        logs.append(j)
    n = rt.counts(logs)
    assert (n["passed"], n["failed"], n["skipped"], n["xfailed"]) == (1524, 2, 2, 15)


def test_the_jobs_cover_every_test_file(rt: ModuleType) -> None:
    jobs = rt.jobs([])
    argv = " ".join(" ".join(j.argv) for j in jobs)
    for f in sorted((REPO / "tests").glob("*/test_*.py")):
        rel = f.relative_to(REPO).as_posix()
        top = rel.split("/")[1]
        assert rel in argv or f"tests/{top}" in argv.split(), rel
    assert any(j.name == "image-pins" for j in jobs)
    assert [j.name for j in jobs if j.first] == ["dev-image"]
    (known,) = rt.LIGHT
    assert [j.name for j in jobs if j.alone] == ["tests/e2e/test_kiosk_quick.py"]
    assert [j.name for j in jobs if j.quiet] == [
        f"{known} -k not ({' or '.join(rt.LIGHT[known])})"]
