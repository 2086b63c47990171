#!/usr/bin/env python3
"""Every test tier, as `make test` runs them (after lint): jobs on one lane per core, the
longest first, each lane taking the next job when its last one ends.

    scripts/run-tests.py [PYTEST ARGS...]      (through scripts/run-tests.sh)
    scripts/run-tests.py --jobs                the jobs and their measured durations

The jobs (``jobs()``): the dev image's build; each QEMU test file (tests/e2e, after the dev
image); each slow integration file (the QEMU ones split into their tests: each is a boot or
two of its own), the quick integration files together; unit, UI, simdrive and the Buildroot
checks together; the unit and UI tests again on the image's Python pins
(scripts/test-image-python.sh). How long each takes comes from tests/durations.tsv (measured
in a `make test` on a 2-core machine; a job it does not name counts as 60 s). A lane takes
the longest job whose needs are done, so the long QEMU files start first and the short jobs
fill the end: neither core waits idle while the other has hours of queue (issue 31); a job
in ALONE never runs beside another QEMU job, and starts right after the dev image. Beside
the core lanes, a host lane takes only jobs that boot no guest (the host's tests, which
mostly wait: they fill the minutes the ALONE job keeps the guests out), and each job in
LIGHT (tests that mostly wait on real-time simulated drives) runs on a light lane of its
own. The light jobs (and the dev image, which every guest waits for) run at the normal
priority, every other job at SCHED_IDLE (``chrt --idle``), so a light job's drive gets a
core the moment it needs one. Every job was
written to run beside any other (own pytest temporary root /tmp/ssdbench-tNN, own loop
devices, tmux sessions, ports and QEMU working folders).

Output: every job's lines as they come, prefixed ``[job]``; whole logs in build/test-logs/
(one per job); at the end a budget (each lane's jobs, their wall time and CPU use, the
slowest tests, how far the whole `make test` is from 30 minutes, which measured durations
are off), then a failed job's failing tests and first error lines again (a CI log may keep
only its tail).
build/test-logs/durations.tsv gets this run's job times: copy it over tests/durations.tsv
when the tests change much. Exit status: 0 only when every job passed.

Environment: SSDBENCH_TEST_LANES (default: the number of cores, at least 2),
SSDBENCH_TEST_T0 (epoch seconds when `make test` began: the budget counts installs and lint).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO / "build" / "test-logs"
DURATIONS = REPO / "tests" / "durations.tsv"
PY = str(REPO / ".venv" / "bin" / "python")
BUDGET_S = 30 * 60
UNKNOWN_S = 60.0
QUICK_S = 45.0  # integration files measured under this run together as one job
QUICK_JOB = "tests/integration (quick files)"
SLOWEST = 15
# pytest --durations rows: "123.45s call     tests/e2e/test_boot.py::test_x"
DURATION_ROW = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+)\s*$")
# integration files whose tests each boot QEMU on their own: one job per test
SPLIT = ("tests/integration/test_ata_emu_qemu.py",)
# the other integration files that boot QEMU
QEMU_INTEGRATION = ("tests/integration/test_erase_qemu.py",
                    "tests/integration/test_counters_qemu.py",
                    "tests/integration/test_capacity_dm_qemu.py",
                    "tests/integration/test_usb_and_disk_qemu.py",
                    "tests/integration/test_sas_emu_qemu.py")
# QEMU jobs that never run beside another QEMU job: the kiosk quick plan's known answers
# hold the guest's own pace against the simulated drives' models (the OP ratio), and a second
# guest on a 2-core host squeezed it (model OP ratio 1.46, below the 1.5 the test needs to
# prove anything, beside the power-loss test's boots, 2026-11-27). The per-second known
# answers (QUIET) may run beside it: they take 2% of a core, and beside it and two host
# jobs at SCHED_IDLE the OP ratios were 4.63 and 4.21 (models 4.62, 4.20; 2026-11-28).
ALONE = ("tests/e2e/test_kiosk_quick.py",)
# host jobs that run fio flat out on loop devices (both cores for seconds at a time), and
# image-pins when it builds CPython first (a new machine: both cores for 3.5 minutes;
# image_pins_builds()): never beside a job in ALONE or the per-second known answers (the
# WSAT loop test's fio beside the kiosk quick plan's guest left the model no OP effect, 0.91
# against the 1.5 it needs, in a CI run of 2026-11-27; the CPython build beside it left the
# SATA model 1.35, in a cold run of 2026-11-28)
HEAVY = ("tests/integration/test_pts_loop.py", "tests/integration/test_pts_rounds_loop.py")
# host jobs only the host lane takes: image-pins (unit and UI again, on the image's Python
# pins; 2:09 warm, 5:20 when it builds its CPython first) on a core lane kept that lane from
# the guests 48 s after the kiosk quick plan ended (CI, 2026-11-28); on the host lane it runs
# beside them
HOST_ONLY = ("image-pins",)
# the scheduling class of every job but the light ones (their drives' processes preempt it
# the moment they wake: a SCHED_IDLE task yields to any normal one), and the light ones'
# (said, not inherited: `make test` itself may run at SCHED_IDLE, as image-pins runs this
# script's own tests)
BACKGROUND = ("chrt", "--idle", "0")
FOREGROUND = ("chrt", "--other", "0")
# the guest that wants no other (ALONE) between the two: its known answers want its pace,
# and at SCHED_IDLE beside the host's jobs it left the SATA model idle 1.6 s of a 5-s TRIM
# probe (model log: 4.6 MiB/s served, 3.2 measured; the verdict read "ineffective", a CI run
# of 2026-11-29); at the normal priority it delayed the per-second known answers' loop
# device work (two seconds 3% off, each other's edge, the next CI run). At nice 19 it takes
# the cores from every SCHED_IDLE job at once, and gives them to a waking normal task
BETWEEN = ("chrt", "--other", "0", "nice", "-n", "19")
# tests that mostly wait, not compute (file -> pytest -k expressions): the host-path known
# answers whose simulated drives serve I/O at their models' real-time pace (the whole file:
# 12% of the 2 cores measured while it ran alone, 2026-11-27). They run on lanes of
# their own beside the core lanes, and every other job at SCHED_IDLE (BACKGROUND), so the
# drives' processes get a core when they need one. The rest of their file, the per-second
# known answers (enterprise, hostprio: QUIET), runs first, on a light lane too, with no
# guest beside it but the ALONE one, and the light part only once it ended: beside two
# guests at nice 5 the rig's server answered 7-9 writes late across a second (2.6%, over
# their 2%; twice, once at real-time priority), beside the light part's 3000-IOPS drives 3
# seconds of 360 were 3% off, and beside one guest it answered 6 writes late once
# (2026-11-27); beside the kiosk quick plan's guest and two host jobs, all at SCHED_IDLE, at
# most 0.9 writes late at an edge, of the 18 allowed (2026-11-28).
# They are split into groups of about equal length (the -k expressions below, by their tests'
# measured times), one job each, each on a light lane of its own: together they took 19-20
# minutes on one lane after the per-second part's 4:28, the run's critical path once the core
# lanes got shorter (#31). Three at once take more of the CPU than one did: one of them (the
# first group, mostly the 600-IOPS enterprise drive's) starts beside the kiosk quick plan as the
# one light job always did, the others once that plan (ALONE) ended, so they never squeeze its
# guest; all three beside the guests after it cost those about a third of their pace (power
# loss 4:46-4:50 against 3:22, 2026-11-28).
LIGHT = {"tests/integration/test_simdrive_known_answers.py": (
    "pts_throughput or wsat",  # 3:12 + 1:06 + 1:06 + 0:55 (2026-11-28)
    "hir or iops_matrix",  # 3:55 + 2:13
    "portable or consumer_cliff or trim_verdict",  # 2:49 + 1:20 + 1:15 + 1:05
)}

# Whole files of known answers on real-time simulated drives, one light job each, after the
# guest that wants no other beside it (the speed plan's QD1 corner is judged with the rig's
# measured round trip, but a squeezed rig is no place for it either)
LIGHT_FILES = ("tests/integration/test_simdrive_speed.py",)


@dataclass
class Job:
    name: str
    argv: list[str]
    estimate_s: float
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()  # starts once these ended, whatever their outcome
    pytest: bool = True
    qemu: bool = False  # boots a QEMU guest (TCG: a core or two while it runs)
    first: bool = False  # every guest waits for it (the dev image): taken first, on a core
    # lane, at the normal priority
    alone: bool = False  # no other QEMU job at the same time (ALONE)
    quiet: bool = False  # no QEMU job beside it but an ALONE one, no HEAVY one (QUIET)
    heavy: bool = False  # fio flat out on the host: never beside an alone or quiet job (HEAVY)
    light: bool = False  # mostly waits: runs on a light lane (LIGHT)
    number: int = 0  # its place in jobs(): its temporary root's name
    # filled in as it runs
    lane: int = -1
    start: float = 0.0
    end: float = 0.0
    rc: int | None = None
    cpu_s: float = 0.0  # user + system time of the job's processes that were waited for
    log: Path = field(default_factory=Path)


def read_durations() -> dict[str, float]:
    known: dict[str, float] = {}
    if DURATIONS.is_file():
        for line in DURATIONS.read_text().splitlines():
            cols = line.split("\t")[:2]  # job, wall seconds (then CPU seconds)
            if len(cols) == 2 and not line.startswith("#"):
                try:
                    known[cols[0]] = float(cols[1])
                except ValueError:
                    continue
    return known


def image_pins_builds() -> bool:
    """Whether image-pins builds its CPython first: its script finds no interpreter it
    could take without building one (scripts/test-image-python.sh --find)."""
    return subprocess.run([str(REPO / "scripts" / "test-image-python.sh"), "--find"],
                          capture_output=True, timeout=60, check=False).returncode != 0


def test_functions(path: Path) -> list[str]:
    return re.findall(r"^def (test_\w+)\(", path.read_text(), re.M)


def jobs(args: list[str]) -> list[Job]:
    known = read_durations()

    def est(name: str) -> float:
        return known.get(name, UNKNOWN_S)

    pytest = [PY, "-m", "pytest", *args]
    out = [Job("dev-image", [str(REPO / "scripts" / "build-dev-image.sh")], est("dev-image"),
               pytest=False, first=True)]
    for f in sorted((REPO / "tests" / "e2e").glob("test_*.py")):
        rel = f"tests/e2e/{f.name}"
        out.append(Job(rel, [*pytest, rel], est(rel), needs=("dev-image",), qemu=True,
                       alone=rel in ALONE))
    quick: list[str] = []
    for f in sorted((REPO / "tests" / "integration").glob("test_*.py")):
        rel = f"tests/integration/{f.name}"
        if rel in SPLIT:
            for t in test_functions(f):
                node = f"{rel}::{t}"
                out.append(Job(node, [*pytest, node], est(node), qemu=True))
        elif rel in LIGHT:
            # the per-second part first, on a core lane; the light parts after it ended (their
            # 3000-IOPS drives beside the enterprise run moved writes across edges: a CI run
            # had 3 seconds of 360 3% off, 2026-11-27)
            every = " or ".join(LIGHT[rel])
            rest = f"{rel} -k not ({every})"
            out.append(Job(rest, [*pytest, rel, "-k", f"not ({every})"], est(rest),
                           quiet=True, light=True))
            # and but for the first, after the guest that wants no other beside it: three
            # light jobs' drives take most of a core, the kiosk quick plan's known answers
            # want the guest's pace
            for i, group in enumerate(LIGHT[rel]):
                name = f"{rel} -k {group}"
                out.append(Job(name, [*pytest, rel, "-k", group], est(name), light=True,
                               after=(rest,) if i == 0 else (rest, *ALONE)))
        elif rel in LIGHT_FILES:
            out.append(Job(rel, [*pytest, rel], est(rel), light=True, after=tuple(ALONE)))
        elif est(rel) >= QUICK_S or rel in QEMU_INTEGRATION or rel in HEAVY:
            out.append(Job(rel, [*pytest, rel], est(rel), qemu=rel in QEMU_INTEGRATION,
                           heavy=rel in HEAVY))
        else:
            quick.append(rel)
    if quick:
        out.append(Job(QUICK_JOB, [*pytest, *quick],
                       sum(est(q) for q in quick)))
    fast = ["tests/unit", "tests/ui", "tests/simdrive", "tests/buildroot", "tests/fuzz"]
    out.append(Job("unit, ui, simdrive, buildroot", [*pytest, *fast],
                   est("unit, ui, simdrive, buildroot")))
    out.append(Job("image-pins", [str(REPO / "scripts" / "test-image-python.sh"), *args],
                   est("image-pins"), heavy=image_pins_builds()))
    for i, job in enumerate(out):
        job.number = i
    return out


def light_lanes(todo: list[Job]) -> int:
    """A lane for each light job: they wait on real-time drives, not on a core."""
    return sum(j.light for j in todo)


def lane_kinds(cores: int, todo: list[Job]) -> list[str]:
    """The lanes main() runs, by number: one "core" lane per core (any job but a light
    one), one "host" lane (jobs that boot no guest), a "light" lane per light job."""
    return ["core"] * cores + ["host"] + ["light"] * light_lanes(todo)


def takes(kind: str, job: Job) -> bool:
    """Whether a lane of ``kind`` takes ``job``. The host lane: the host's jobs while the
    ALONE guest keeps the others out, then the HEAVY ones (fio on loop devices, under half a
    core on average: 0.40-0.42 in CI) beside the guests, which would otherwise spend two and
    a half minutes of a core lane on them."""
    if kind == "light":
        return job.light
    if kind == "host":
        return not (job.light or job.qemu or job.first)
    return not (job.light or job.name in HOST_ONLY)


class Runner:
    def __init__(self, todo: list[Job]) -> None:
        self.todo = todo
        self.cond = threading.Condition()
        self.done: set[str] = set()
        self.failed_needs: set[str] = set()
        self.running: list[Job] = []
        self.out_lock = threading.Lock()

    def _fits(self, job: Job) -> bool:
        """Its needs are done, and no QEMU job would run beside one that wants none."""
        if not all(n in self.done for n in (*job.needs, *job.after)):
            return False
        if (job.heavy and any(r.alone or r.quiet for r in self.running)) or (
                (job.alone or job.quiet) and any(r.heavy for r in self.running)):
            return False
        if job.alone:  # no other guest beside it (a quiet one is no guest)
            return not any(r.qemu for r in self.running)
        if job.quiet:  # no guest beside it but an alone one
            return not any(r.qemu and not r.alone for r in self.running)
        return not (job.qemu and any(r.alone or r.quiet for r in self.running))

    def _next(self, kind: str = "core") -> Job | None:
        """The longest job the lane's kind takes that fits now (None when none is left);
        waits while none left fits."""
        with self.cond:
            while True:
                mine = [j for j in self.todo if takes(kind, j)]
                if not mine:
                    return None
                ready = [j for j in mine if self._fits(j)]
                if ready:
                    # the dev image first (the QEMU files wait for it), then a job that wants
                    # no QEMU beside it, while the other lane still runs light jobs
                    job = max(ready, key=lambda j: (j.first, j.alone, j.quiet,
                                                    j.estimate_s))
                    self.todo.remove(job)
                    self.running.append(job)
                    return job
                self.cond.wait()

    def _say(self, job: Job, line: str) -> None:
        with self.out_lock:
            sys.stdout.write(f"[{label(job.name)}] {line}")
            sys.stdout.flush()

    def _run(self, job: Job) -> None:
        safe = re.sub(r"[^\w.-]+", "_", job.name).strip("_")
        job.log = LOGS / f"{safe}.log"
        # short: a Unix socket under it (nbdkit -U, QMP) may be at most 107 bytes long
        tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"ssdbench-t{job.number:02d}"
        tmp.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTEST_DEBUG_TEMPROOT=str(tmp), PYTHONUNBUFFERED="1")
        job.start = time.time()
        self._say(job, f"started on lane {job.lane} (measured {job.estimate_s:.0f} s)\n")
        missing = [n for n in job.needs if n in self.failed_needs]
        with job.log.open("w") as log:
            if missing:
                line = f"not run: {', '.join(missing)} failed\n"
                log.write(line)
                self._say(job, line)
                job.rc = 1
            else:
                # the dev image at the normal priority too: every guest waits for it (beside
                # the host's jobs at the same priority it took 47 s, alone 25 s)
                fore = job.light or job.first
                argv = [*(FOREGROUND if fore else BETWEEN if job.alone else BACKGROUND),
                        *job.argv]
                proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        text=True, errors="replace")
                assert proc.stdout is not None
                for line in proc.stdout:
                    log.write(line)
                    self._say(job, line)
                # wait4: the exit status and the CPU time of the job's process tree (what
                # its processes waited for: QEMU and fio yes, a daemon or a tmux pane no)
                _pid, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = job.rc = os.waitstatus_to_exitcode(status)
                job.cpu_s = usage.ru_utime + usage.ru_stime
                if job.rc == 5 and job.pytest:  # PYTEST ARGS that select none of its tests
                    self._say(job, "no test selected in this job\n")
                    job.rc = 0
        job.end = time.time()
        self._say(job, f"finished: exit {job.rc} in {job.end - job.start:.0f} s\n")

    def lane(self, number: int, kind: str = "core") -> None:
        while (job := self._next(kind)) is not None:
            job.lane = number
            try:
                self._run(job)
            except Exception as exc:  # a job that cannot start fails, the others go on
                job.rc = 1
                job.end = time.time()
                self._say(job, f"could not run: {exc}\n")
            with self.cond:
                self.running.remove(job)
                self.done.add(job.name)
                if job.rc:
                    self.failed_needs.add(job.name)
                self.cond.notify_all()


def label(name: str) -> str:
    """A job's line prefix: its file's or test's name without the folders."""
    return name.rsplit("::", 1)[-1].rsplit("/", 1)[-1].removesuffix(".py")


# pytest's closing line: "=== 831 passed, 2 skipped, 15 xfailed in 1602.31s (0:26:42) ==="
SUMMARY = re.compile(r"^=+ (.*\d+ (?:passed|failed|error|errors|skipped|xfailed|xpassed|"
                     r"deselected|warnings?)\b.*) in [\d.]+s.*=+$")
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")


def counts(done: list[Job]) -> dict[str, int]:
    """Every job's pytest closing line added up: passed, failed (with errors), skipped..."""
    total: dict[str, int] = defaultdict(int)
    for j in done:
        if not j.pytest or not j.log.is_file():
            continue
        for line in j.log.read_text(errors="replace").splitlines():
            m = SUMMARY.match(line)
            if m:
                for n, what in COUNT.findall(m.group(1)):
                    total["failed" if what.startswith("error") else what] += int(n)
    return total


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def test_times(log: Path) -> dict[str, float]:
    """nodeid -> setup + call + teardown seconds, from a log's --durations table."""
    times: dict[str, float] = defaultdict(float)
    if log.is_file():
        for line in log.read_text(errors="replace").splitlines():
            m = DURATION_ROW.match(line)
            if m:
                times[m.group(3)] += float(m.group(1))
    return dict(times)


def budget(done: list[Job], kinds: list[str], t0: float, start: float) -> None:
    """Where the time went (a report, never a failure)."""
    print("test budget (make test within 30 minutes on a fresh 2-core machine):")
    end = max((j.end for j in done), default=start)
    for lane, kind in enumerate(kinds):
        mine = sorted((j for j in done if j.lane == lane), key=lambda j: j.start)
        if not mine:  # a light lane no job needed (a light job ran after another on its lane)
            continue
        last = max((j.end for j in mine), default=start)
        nth = kinds[:lane].count(kind)
        what = {"core": f"lane {nth}", "host": "host lane"}.get(kind, f"light lane {nth}")
        print(f"  {what}: {minutes(last - start)} busy until, idle at the end "
              f"{minutes(end - last)}")
        for j in mine:
            wall = j.end - j.start
            print(f"    {minutes(wall):>6}  {j.name}  (CPU {j.cpu_s / max(wall, 1):.2f} cores)"
                  + ("" if j.rc == 0 else f"  (exit {j.rc})"))
    rows = sorted(((s, node) for j in done if j.pytest
                   for node, s in test_times(j.log).items()), reverse=True)
    if rows:
        print(f"  slowest tests (setup + call + teardown; a module fixture's boot counts "
              f"on its first test), of {len(rows)} listed:")
        for seconds, node in rows[:SLOWEST]:
            print(f"    {minutes(seconds):>6}  {node}")
    off = [j for j in done if abs((j.end - j.start) - j.estimate_s) > max(60.0, j.estimate_s / 2)]
    if off:
        print("  measured durations off by more than half (tests/durations.tsv; this run's: "
              "build/test-logs/durations.tsv): "
              + ", ".join(f"{j.name} {j.estimate_s:.0f} -> {j.end - j.start:.0f} s" for j in off))
    total = time.time() - t0
    left = BUDGET_S - total
    print(f"  tests {minutes(end - start)}; make test in all (installs and lint too) "
          f"{minutes(total)}: " + (f"{minutes(left)} under the 30-minute budget" if left >= 0
                                   else f"{minutes(-left)} OVER the 30-minute budget"))


def failures(done: list[Job]) -> None:
    for j in done:
        if j.rc == 0:
            continue
        text = j.log.read_text(errors="replace") if j.log.is_file() else ""
        print(f"[{label(j.name)}] what failed (exit {j.rc}; whole log: {j.log.relative_to(REPO)}):")
        for line in text.splitlines():
            if line.startswith(("FAILED ", "ERROR ")):
                print(f"[{label(j.name)}]   {line}")
        for line in [ln for ln in text.splitlines() if ln.startswith("E  ")][:20]:
            print(f"[{label(j.name)}]   {line[:200]}")
        if "FAILED " not in text and "E  " not in text:
            for line in text.splitlines()[-15:]:
                print(f"[{label(j.name)}]   {line[:200]}")


def main(args: list[str]) -> int:
    if args == ["--jobs"]:  # what would run, in the order a single lane would take it
        for j in sorted(jobs([]), key=lambda j: (not j.first, not j.alone,
                                                 not j.quiet, -j.estimate_s)):
            notes = ([f"after {', '.join((*j.needs, *j.after))}"]
                     if j.needs or j.after else []) + \
                (["QEMU"] if j.qemu else []) + (["no other QEMU beside it"] if j.alone else []) + \
                (["no QEMU beside it but a no-other-QEMU one"] if j.quiet else []) + \
                (["fio flat out: never beside a no-other-QEMU job"] if j.heavy else []) + \
                (["light: on a light lane of its own"] if j.light else [])
            print(f"{j.estimate_s:6.0f} s  {j.name}" + (f" ({'; '.join(notes)})" if notes else ""))
        return 0
    LOGS.mkdir(parents=True, exist_ok=True)
    for old in LOGS.glob("*.log"):
        old.unlink()
    lanes = int(os.environ.get("SSDBENCH_TEST_LANES") or max(2, os.cpu_count() or 2))
    start = time.time()
    t0 = float(os.environ.get("SSDBENCH_TEST_T0") or start)
    todo = jobs(args)
    all_jobs = list(todo)
    kinds = lane_kinds(lanes, todo)
    light = kinds.count("light")
    print(f"run-tests: {len(todo)} jobs on {lanes} lanes, longest first, a lane for the "
          f"host's jobs" + (f", and {light} lanes for the light ones" if light else ""))
    runner = Runner(todo)
    threads = [threading.Thread(target=runner.lane, args=(i, kind), daemon=True)
               for i, kind in enumerate(kinds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with (LOGS / "durations.tsv").open("w") as f:
        f.write("# job\tseconds (wall, this run; tests/durations.tsv is read by "
                "scripts/run-tests.py)\tCPU seconds (of the processes it waited for)\n")
        for j in sorted(all_jobs, key=lambda j: j.name):
            f.write(f"{j.name}\t{j.end - j.start:.0f}\t{j.cpu_s:.0f}\n")
        # the quick files one by one (their tests' own times): what groups them next time
        # (--durations lists the slowest 30 tests: a file of only quick ones counts 0 s)
        per_file: dict[str, float] = defaultdict(float)
        for j in all_jobs:
            if j.name == QUICK_JOB:
                for arg in j.argv:
                    if arg.startswith("tests/integration/"):
                        per_file[arg] += 0.0
                for node, seconds in test_times(j.log).items():
                    per_file[node.split("::", 1)[0]] += seconds
        for name in sorted(per_file):
            f.write(f"{name}\t{per_file[name]:.0f}\n")
    budget(all_jobs, kinds, t0, start)
    failures(all_jobs)
    bad = [j.name for j in all_jobs if j.rc != 0]
    print(f"run-tests: {len(all_jobs) - len(bad)} of {len(all_jobs)} jobs passed"
          + (f"; failed: {', '.join(bad)}" if bad else "")
          + f"; {time.time() - start:.0f} s (logs: {LOGS.relative_to(REPO)})")
    n = counts(all_jobs)
    for k in ("xfailed", "xpassed"):
        if n.get(k):
            print(f"run-tests: {n[k]} {k} (expected failures: see the jobs' summaries)")
    # the plain closing line, every job's tests added up (a job that failed without a
    # pytest summary still counts: the line says failed)
    failed = n.get("failed", 0) or (1 if bad else 0)
    print(f"tests: {n.get('passed', 0)} passed, {failed} failed, {n.get('skipped', 0)} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
