#!/usr/bin/env python3
"""The Clear by overwrite (docs/erase.md "Clear by overwrite") against fio on the same device.

One loop device over a file on tmpfs (/dev/shm; root: losetup), measured two ways:

* **device-bound**, at each rate of ``BENCH_OVERWRITE_RATES`` (MB/s, default 150,500,1000:
  a hard disk or USB stick, a SATA SSD, an NVMe drive at QD1): this process (and the fio it
  starts) moves into a cgroup whose blkio throttle (v1 ``blkio.throttle.*_bps_device``, or
  v2 ``io.max``) holds the loop device to that rate, reads and writes. The device, not the
  host's CPU, sets the speed, as on a real drive; 1 GiB, ``ROUNDS`` rounds.
* **tmpfs**, no throttle: the loop driver's copy into tmpfs is the device, so the "device"
  is a CPU, shared with the pass's own work and with the rest of the machine; 2 GiB,
  ``PAIRS`` rounds after an uncounted warm-up. This says how much CPU the write path costs,
  not how fast a drive is cleared.

A round runs ``overwrite_pass`` with the random pattern (an AES-128-CTR block, sectors
stamped), the same with the zero pattern (the write path alone), and
``fio --rw=write --bs=1M --direct=1 --size=100%`` over the same device, then the same with
``--bs=8M`` (the pass's write size: a device or a throttle that treats big writes apart
shows there), the order reversed every other round. Figures (``<t>``: ``tmpfs`` or
``<N>mb_s``; medians over the rounds, with ``_min`` and ``_max``):

* ``overwrite_<t>_mb_s``, ``fio_<t>_mb_s``, ``fio_8m_<t>_mb_s``; ``overwrite_vs_fio_<t>``
  (each round's ratio; goal >= 0.95 device-bound), ``overwrite_zero_vs_fio_<t>``,
  ``overwrite_vs_fio_8m_<t>``;
  ``overwrite_vs_fio_device_min``: the lowest device-bound median;
* ``overwrite_cpu_percent_<t>``: the process's CPU over the random pass's wall time, % of
  one core (pwrite's system time included); ``pattern_thread_cpu_percent_<t>``: the calling
  thread's, which makes the pattern (restamps each buffer) while the writer thread writes,
  opens, maps and unmaps its buffers; ``prng_in_pass_cpu_percent_<t>`` (goal < 5 for the
  PRNG stream) and ``prng_in_pass_cpu_s_per_gib_<t>``: the pattern alone in that pass (its
  ``fill`` and ``restamp`` timed in the thread), ``prng_in_pass_restamp_cpu_s_per_gib_<t>``:
  the restamps alone (what a GiB costs on a drive of any size: the fills are three per pass);
* ``verify_1pct_vs_overwrite_percent_<t>``: the sampled read-back of 1% (1 MiB units,
  O_DIRECT, compared with the recomputed pattern) over the random pass's time (goal < 2);
* ``prng_cpu_s_per_gib``: the pattern alone (restamping 1 GiB of 8 MiB buffers) and
  ``prng_cpu_percent_at_<N>mb_s``: that at a drive's N MB/s.

The tmpfs figures keep their older names too (``overwrite_vs_fio``,
``overwrite_zero_vs_fio``, ``overwrite_mb_s``, ``fio_seq_write_mb_s``,
``fio_seq_write_8m_mb_s``, ``overwrite_cpu_percent``,
``verify_1pct_vs_overwrite_percent``). Prints name=value lines on stdout, explanations and
every round on stderr. BENCH_SMOKE=1: 64 MiB, one round, rates 500 (make test checks the
benchmark still runs; the figures mean nothing then).
"""

from __future__ import annotations

import json
import mmap
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssdbench.erase import overwrite as ow

SMOKE = os.environ.get("BENCH_SMOKE") == "1"
MIB = 1 << 20
TMPFS_SIZE = (64 if SMOKE else 2048) * MIB
RATE_SIZE = (64 if SMOKE else 1024) * MIB
PAIRS = 1 if SMOKE else 5
ROUNDS = 1 if SMOKE else 5
RATES = [int(r) for r in os.environ.get(
    "BENCH_OVERWRITE_RATES", "500" if SMOKE else "150,500,1000").split(",") if r.strip()]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def fio(dev: str, bs: str) -> float:
    out = subprocess.run(
        ["fio", "--name=seq", f"--filename={dev}", "--rw=write", f"--bs={bs}", "--direct=1",
         "--size=100%", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]["write"]
    return float(job["bw_bytes"]) / 1e6


PRNG_CPU = [0.0, 0.0]  # CPU seconds TimedPattern spent: all, in fills (a buffer's first)


class TimedPattern(ow.Pattern):
    """The pattern, the CPU of making it counted in the pass: ``fill`` (a buffer's first
    write: the key block copied in, stamped) and ``restamp`` (every other write)."""

    def fill(self, offset: int, out: Any, length: int, zeros: bytes | None = None) -> None:
        t, before = time.thread_time(), PRNG_CPU[0]
        super().fill(offset, out, length, zeros)
        spent = time.thread_time() - t
        PRNG_CPU[0] = before + spent  # its restamp inside: counted once
        PRNG_CPU[1] += spent

    def restamp(self, offset: int, out: Any, length: int) -> None:
        t = time.thread_time()
        super().restamp(offset, out, length)
        PRNG_CPU[0] += time.thread_time() - t


@dataclass
class Pass:
    mb_s: float
    cpu_percent: float  # the process
    thread_cpu_percent: float  # the calling thread: the pattern, the loop, open, mmap
    prng_cpu_s: float  # the pattern alone (TimedPattern)
    restamp_cpu_s: float  # of which the restamps (the fills: once a buffer, a pass)
    seconds: float


def overwrite(dev: str, size: int, pattern: ow.Pattern) -> Pass:
    PRNG_CPU[:] = [0.0, 0.0]
    c0, t0, th0 = cpu(), time.perf_counter(), time.thread_time()
    result = ow.overwrite_pass(ow.Device(dev), size, 512, pattern)
    wall = time.perf_counter() - t0
    return Pass(size / wall / 1e6, 100 * (cpu() - c0) / wall,
                100 * (time.thread_time() - th0) / wall, PRNG_CPU[0], PRNG_CPU[0] - PRNG_CPU[1],
                result.seconds)


@dataclass
class Target:
    label: str  # "tmpfs" or "<N>mb_s"
    size: int
    ours: list[Pass] = field(default_factory=list)
    zero: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)
    theirs8: list[float] = field(default_factory=list)
    verify_s: list[float] = field(default_factory=list)

    def ratios(self, ours: list[float], fio8: bool = False) -> list[float]:
        """Each round's ``ours`` over its fio (1 MiB writes, or 8 MiB: the pass's)."""
        return [a / b for a, b in zip(ours, self.theirs8 if fio8 else self.theirs,
                                      strict=True)]


def measure(dev: str, target: Target, rounds: int, pattern: ow.Pattern) -> None:
    for i in range(rounds):
        order = ("ours", "fio") if i % 2 == 0 else ("fio", "ours")
        for who in order:
            if who == "ours":
                target.ours.append(overwrite(dev, target.size, pattern))
                target.zero.append(overwrite(dev, target.size, ow.Pattern.new("zero")).mb_s)
            else:
                target.theirs.append(fio(dev, "1M"))
                target.theirs8.append(fio(dev, "8M"))
        o = target.ours[-1]
        print(f"# {target.label} round {i}: overwrite {o.mb_s:.0f} MB/s (process "
              f"{o.cpu_percent:.1f}% CPU, pattern thread {o.thread_cpu_percent:.1f}%, the pattern "
              f"{100 * o.prng_cpu_s * o.mb_s * 1e6 / target.size:.1f}%), zero "
              f"{target.zero[-1]:.0f} MB/s, fio 1M {target.theirs[-1]:.0f} MB/s, fio 8M "
              f"{target.theirs8[-1]:.0f} MB/s; load {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)
    ow.overwrite_pass(ow.Device(dev), target.size, 512, pattern)  # the content the check reads
    for seed in range(3):
        c = ow.verify_sample(ow.Device(dev), target.size, 512, pattern, 1.0, seed=seed)
        assert c.passed, c
        target.verify_s.append(c.seconds)


def _cgroup_mounts() -> tuple[str | None, str | None]:
    """(the blkio v1 mount, the v2 mount) from /proc/self/mounts."""
    v1 = v2 = None
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        if fields[2] == "cgroup" and "blkio" in fields[3].split(","):
            v1 = fields[1]
        elif fields[2] == "cgroup2":
            v2 = fields[1]
    return v1, v2


def _own_cgroup(v1: bool) -> str:
    """This process's cgroup path (v1: its blkio hierarchy's; v2: the unified one)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (v1 and "blkio" in controllers.split(",")) or (not v1 and controllers == ""):
            return path
    raise OSError("no cgroup of this process in /proc/self/cgroup")


@contextmanager
def throttled(dev: str, mb_s: int) -> Iterator[None]:
    """This process (its threads, the fio it starts) in a new cgroup that holds ``dev`` to
    ``mb_s`` MB/s, reads and writes; back where it was afterwards."""
    devno = Path(f"/sys/class/block/{os.path.basename(dev)}/dev").read_text().strip()
    bps = mb_s * 1_000_000
    v1, v2 = _cgroup_mounts()
    if v1 is not None:
        root, home = Path(v1), _own_cgroup(v1=True)
        limits = {"blkio.throttle.write_bps_device": f"{devno} {bps}",
                  "blkio.throttle.read_bps_device": f"{devno} {bps}"}
    elif v2 is not None and "io" in Path(v2, "cgroup.controllers").read_text().split():
        root, home = Path(v2), _own_cgroup(v1=False)
        enabled = Path(v2, "cgroup.subtree_control")
        if "io" not in enabled.read_text().split():
            enabled.write_text("+io")
        limits = {"io.max": f"{devno} rbps={bps} wbps={bps}"}
    else:
        raise OSError("no blkio (v1) or io (v2) cgroup controller mounted")
    group = root / f"ssdbench-bench-overwrite-{os.getpid()}"
    group.mkdir()
    try:
        for name, value in limits.items():
            (group / name).write_text(value)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        try:
            yield
        finally:
            (root / home.lstrip("/") / "cgroup.procs").write_text(str(os.getpid()))
    finally:
        group.rmdir()


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def report(t: Target) -> None:
    """The target's figures, ``_<t>`` suffixed."""
    ours = [p.mb_s for p in t.ours]
    ratio, zratio, ratio8 = t.ratios(ours), t.ratios(t.zero), t.ratios(ours, fio8=True)
    verify = median(t.verify_s)
    pass_s = median([p.seconds for p in t.ours])
    print(f"overwrite_{t.label}_mb_s={median(ours):.0f}")
    print(f"fio_{t.label}_mb_s={median(t.theirs):.0f}")
    print(f"fio_8m_{t.label}_mb_s={median(t.theirs8):.0f}")
    for name, xs in ((f"overwrite_vs_fio_{t.label}", ratio),
                     (f"overwrite_zero_vs_fio_{t.label}", zratio),
                     (f"overwrite_vs_fio_8m_{t.label}", ratio8)):
        print(f"{name}={median(xs):.3f}")
        print(f"{name}_min={min(xs):.3f}")
        print(f"{name}_max={max(xs):.3f}")
    print(f"overwrite_cpu_percent_{t.label}={median([p.cpu_percent for p in t.ours]):.1f}")
    threads = [p.thread_cpu_percent for p in t.ours]
    print(f"pattern_thread_cpu_percent_{t.label}={median(threads):.2f}")
    print(f"pattern_thread_cpu_percent_{t.label}_max={max(threads):.2f}")
    prng = [100 * p.prng_cpu_s * p.mb_s * 1e6 / t.size for p in t.ours]  # over the wall
    print(f"prng_in_pass_cpu_percent_{t.label}={median(prng):.2f}")
    print(f"prng_in_pass_cpu_percent_{t.label}_max={max(prng):.2f}")
    print(f"prng_in_pass_cpu_s_per_gib_{t.label}="
          f"{median([p.prng_cpu_s * 2**30 / t.size for p in t.ours]):.4f}")
    print(f"prng_in_pass_restamp_cpu_s_per_gib_{t.label}="
          f"{median([p.restamp_cpu_s * 2**30 / t.size for p in t.ours]):.4f}")
    print(f"verify_1pct_seconds_{t.label}={verify:.3f}")
    print(f"verify_1pct_vs_overwrite_percent_{t.label}={100 * verify / pass_s:.2f}")


def prng_cpu_s_per_gib(pattern: ow.Pattern) -> float:
    """The pattern alone, as the pass makes it: 1 GiB of 8 MiB writes, each restamped."""
    buf = mmap.mmap(-1, ow.CHUNK_BYTES + mmap.PAGESIZE)
    pattern.fill(0, buf, ow.CHUNK_BYTES)
    c0 = time.process_time()
    for k in range((1 << 30) // ow.CHUNK_BYTES):
        pattern.restamp(k * ow.CHUNK_BYTES, buf, ow.CHUNK_BYTES)
    spent = time.process_time() - c0
    buf.close()
    return spent


@contextmanager
def loop_device(folder: Path, size: int) -> Iterator[str]:
    """A loop device over a new ``size``-byte file in ``folder`` (tmpfs)."""
    image = folder / f"disk-{size}.img"
    with open(image, "wb") as f:
        f.truncate(size)
    try:
        dev = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                             capture_output=True, text=True).stdout.strip()
        try:
            yield dev
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
    finally:
        image.unlink(missing_ok=True)


def main() -> int:
    if os.geteuid() != 0:
        print("# bench_overwrite needs root (losetup, cgroups)", file=sys.stderr)
        return 1
    folder = Path(tempfile.mkdtemp(prefix="ssdbench-bench-overwrite-", dir="/dev/shm"))
    pattern = TimedPattern.new("random")
    load0 = os.getloadavg()
    print(f"# {os.cpu_count()} CPUs, load average {load0[0]:.1f} {load0[1]:.1f} "
          f"{load0[2]:.1f} at the start", file=sys.stderr, flush=True)
    targets: list[Target] = []
    try:
        with loop_device(folder, TMPFS_SIZE) as dev:
            fio(dev, "1M")
            overwrite(dev, TMPFS_SIZE, pattern)  # warm-up: tmpfs pages, imports, key block
            tmpfs = Target("tmpfs", TMPFS_SIZE)
            measure(dev, tmpfs, PAIRS, pattern)
        with loop_device(folder, RATE_SIZE) as dev:
            for rate in RATES:
                target = Target(f"{rate}mb_s", RATE_SIZE)
                try:
                    with throttled(dev, rate):
                        measure(dev, target, ROUNDS, pattern)
                except OSError as exc:
                    print(f"# no throttle at {rate} MB/s ({exc}): no device-bound figures",
                          file=sys.stderr)
                    continue
                targets.append(target)
        prng = prng_cpu_s_per_gib(pattern)
    finally:
        folder.rmdir()
    load1 = os.getloadavg()
    print(f"# load average {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f} at the end",
          file=sys.stderr)
    for t in targets:
        report(t)
    if targets:
        print("overwrite_vs_fio_device_min="
              f"{min(median(t.ratios([p.mb_s for p in t.ours])) for t in targets):.3f}")
    report(tmpfs)
    ours = [p.mb_s for p in tmpfs.ours]
    print(f"overwrite_mb_s={median(ours):.0f}")
    print(f"fio_seq_write_mb_s={median(tmpfs.theirs):.0f}")
    print(f"fio_seq_write_8m_mb_s={median(tmpfs.theirs8):.0f}")
    print(f"overwrite_vs_fio={median(tmpfs.ratios(ours)):.3f}")
    print(f"overwrite_zero_vs_fio={median(tmpfs.ratios(tmpfs.zero)):.3f}")
    print(f"overwrite_cpu_percent={median([p.cpu_percent for p in tmpfs.ours]):.0f}")
    print(f"verify_1pct_vs_overwrite_percent="
          f"{100 * median(tmpfs.verify_s) / median([p.seconds for p in tmpfs.ours]):.2f}")
    print(f"prng_cpu_s_per_gib={prng:.4f}")
    for speed in (200, 550, 1000, 3000):
        print(f"prng_cpu_percent_at_{speed}mb_s={100 * prng * speed * 1e6 / 2**30:.2f}")
    print(f"host_load_average_1min={max(load0[0], load1[0]):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
