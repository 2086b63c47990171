#!/usr/bin/env python3
"""The Clear by overwrite (docs/erase.md "Clear by overwrite") against fio on the same device.

On a loop device backed by a file on tmpfs (/dev/shm; root: losetup), in pairs whose order
alternates, after one uncounted warm-up of each:

* ``overwrite_mb_s``: ``overwrite_pass`` (random pattern: an AES-128-CTR block, sectors
  stamped) over the whole device;
* ``fio_seq_write_mb_s``: ``fio --rw=write --bs=1M --direct=1`` over the same device
  (``fio_seq_write_8m_mb_s``: the same with --bs=8M, the overwrite's own write size);
* ``overwrite_vs_fio``: the mean overwrite over the mean fio 1M (goal >= 0.95);
* ``overwrite_zero_mb_s``, ``overwrite_zero_vs_fio``: the same pass with the ``zero``
  pattern (no key stream: the write path alone);
* ``overwrite_cpu_percent``: the overwrite's process CPU over its wall time, % of one core
  (the kernel's copy into tmpfs included); ``prng_cpu_s_per_gib``: the pattern alone (the
  sectors' stamps; the key block is made once);
  ``prng_cpu_percent_at_<N>mb_s``: what that is at a drive's N MB/s (goal < 5);
* ``verify_1pct_vs_overwrite_percent``: the sampled verification of 1% over the pass's
  time (goal < 2).

Prints name=value lines on stdout; explanations on stderr. BENCH_SMOKE=1: 64 MiB, one pair
(make test checks the benchmark still runs; the figures mean nothing then).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ssdbench.erase import overwrite as ow

SMOKE = os.environ.get("BENCH_SMOKE") == "1"
SIZE = (64 if SMOKE else 2048) << 20
PAIRS = 1 if SMOKE else 5


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


def overwrite(dev: str, pattern: ow.Pattern) -> tuple[float, float, float]:
    """(MB/s, CPU % of one core, seconds)."""
    c0, t0 = cpu(), time.perf_counter()
    result = ow.overwrite_pass(ow.Device(dev), SIZE, 512, pattern)
    wall = time.perf_counter() - t0
    return SIZE / wall / 1e6, 100 * (cpu() - c0) / wall, result.seconds


def main() -> int:
    if os.geteuid() != 0:
        print("# bench_overwrite needs root (losetup)", file=sys.stderr)
        return 1
    folder = Path(tempfile.mkdtemp(prefix="ssdbench-bench-overwrite-", dir="/dev/shm"))
    image = folder / "disk.img"
    with open(image, "wb") as f:
        f.truncate(SIZE)
    dev = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        pattern = ow.Pattern.new("random")
        fio(dev, "1M")
        overwrite(dev, pattern)  # warm-up: tmpfs pages allocated, imports, AES context
        ours: list[float] = []
        cpus: list[float] = []
        theirs: list[float] = []
        theirs8: list[float] = []
        zero: list[float] = []
        pass_s: list[float] = []
        for i in range(PAIRS):
            order = ("ours", "fio") if i % 2 == 0 else ("fio", "ours")
            for who in order:
                if who == "ours":
                    mb_s, cpu_pct, seconds = overwrite(dev, pattern)
                    ours.append(mb_s)
                    cpus.append(cpu_pct)
                    pass_s.append(seconds)
                    zero.append(overwrite(dev, ow.Pattern.new("zero"))[0])
                else:
                    theirs.append(fio(dev, "1M"))
                    theirs8.append(fio(dev, "8M"))
            print(f"# pair {i}: overwrite {ours[-1]:.0f} MB/s ({cpus[-1]:.0f}% CPU), zero "
                  f"{zero[-1]:.0f} MB/s, fio 1M "
                  f"{theirs[-1]:.0f} MB/s, fio 8M {theirs8[-1]:.0f} MB/s", file=sys.stderr)
        ow.overwrite_pass(ow.Device(dev), SIZE, 512, pattern)  # the content the check reads
        checks = []
        for seed in range(3):
            c = ow.verify_sample(ow.Device(dev), SIZE, 512, pattern, 1.0, seed=seed)
            assert c.passed, c
            checks.append(c.seconds)
        # the pattern alone, as the pass makes it: 1 GiB of 8 MiB writes, each restamped
        import mmap

        buf = mmap.mmap(-1, ow.CHUNK_BYTES + mmap.PAGESIZE)
        pattern.fill(0, buf, ow.CHUNK_BYTES)
        n = (1 << 30) // ow.CHUNK_BYTES
        c0 = time.process_time()
        for k in range(n):
            pattern.restamp(k * ow.CHUNK_BYTES, buf, ow.CHUNK_BYTES)
        prng = time.process_time() - c0
        buf.close()
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        image.unlink(missing_ok=True)
        folder.rmdir()
    mean = sum(ours) / len(ours)
    fio_mean = sum(theirs) / len(theirs)
    print(f"overwrite_mb_s={mean:.0f}")
    print(f"fio_seq_write_mb_s={fio_mean:.0f}")
    print(f"fio_seq_write_8m_mb_s={sum(theirs8) / len(theirs8):.0f}")
    print(f"overwrite_vs_fio={mean / fio_mean:.3f}")
    print(f"overwrite_zero_mb_s={sum(zero) / len(zero):.0f}")
    print(f"overwrite_zero_vs_fio={sum(zero) / len(zero) / fio_mean:.3f}")
    print(f"overwrite_cpu_percent={sum(cpus) / len(cpus):.0f}")
    print(f"prng_cpu_s_per_gib={prng:.3f}")
    for speed in (200, 550, 1000, 3000):
        print(f"prng_cpu_percent_at_{speed}mb_s={100 * prng * speed * 1e6 / 2**30:.1f}")
    verify = sum(checks) / len(checks)
    print(f"verify_1pct_seconds={verify:.3f}")
    print(f"verify_1pct_vs_overwrite_percent="
          f"{100 * verify / (sum(pass_s) / len(pass_s)):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
