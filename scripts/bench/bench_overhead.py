#!/usr/bin/env python3
"""ssdbench's own cost around fio (root: needs a loop device).

* ``overhead_iops_ratio``: 4 KiB random write QD32 for 20 s on a loop device on tmpfs,
  bare ``fio jobs/torture.fio`` vs ssdbench's torture stage (same job file, plus
  ``--status-interval=1`` followed live and the CSVs written), after one uncounted warm-up
  run, 6 pairs, which one goes first alternating;
  mean ssdbench IOPS / mean bare IOPS (goal >= 0.98).
* ``ssdbench_cpu_percent``: CPU time of this Python process (getrusage RUSAGE_SELF: its
  own threads, not fio) during the ssdbench runs, as % of one core (goal <= 2).
* ``parse_24h_seconds``: parse a synthetic 86,400-second fio log set (iops, bw, lat and a
  clat histogram at the default coarseness) into per-second series (goal <= 1);
  ``parse_24h_without_hist_seconds``: iops and bw logs only; ``csvs_24h_seconds``: all
  logs plus writing iops.csv (write_run_csvs).

Prints name=value lines on stdout; explanations on stderr. BENCH_SMOKE=1: 2-second runs, one
pair, a 600-second log set (make test checks the benchmark still runs; the figures mean
nothing then).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from ssdbench.fio import jobs
from ssdbench.fio.logs import StageFiles, stage_series, write_run_csvs
from ssdbench.progress import Progress
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, Target
from ssdbench.stages.measure import torture_stage
from ssdbench.stages.params import RunParams
from ssdbench.system import live_host

SMOKE = os.environ.get("BENCH_SMOKE") == "1"  # make test's smoke run: seconds, no figure
SECONDS = int(os.environ.get("BENCH_SECONDS", "2" if SMOKE else "20"))
PAIRS = int(os.environ.get("BENCH_PAIRS", "1" if SMOKE else "6"))
LOG_SECONDS = 600 if SMOKE else 86_400  # the synthetic "24 h" log set
SIZE = 256 * 2**20


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def bare(work: Path, dev: str, i: int) -> float:
    run_dir = work / f"bare{i}"
    job = jobs.torture_job(jobs.JobTarget(dev, SIZE), seconds=SECONDS)
    job.write(run_dir)
    out = subprocess.run(["fio", "--output-format=json", job.relpath], cwd=run_dir,
                         check=True, capture_output=True).stdout
    report = json.loads(out[out.index(b"{"):])
    return float(report["jobs"][0]["write"]["iops"])


def with_ssdbench(work: Path, dev: str, i: int) -> tuple[float, float, float]:
    run_dir = work / f"ssdbench{i}"
    run_dir.mkdir()
    host = live_host()
    params = RunParams(torture_seconds=SECONDS)
    record = RunRecord.create(run_dir, run="bench", kind="consistency", drive={},
                              target={}, params=params.as_record(), tools={})
    events: list[Progress] = []
    ctx = RunContext(host=host, run_dir=run_dir, drive_name=Path(dev).name, run_name="bench",
                     target=Target(dev, "block", Path(dev).name, SIZE), params=params,
                     record=record, progress=events.append, cancel=threading.Event())
    c0, t0 = cpu_s(), time.monotonic()
    torture_stage().execute(ctx)
    c1, t1 = cpu_s(), time.monotonic()
    report = json.loads((run_dir / "fio" / "torture.json").read_text())
    return float(report["jobs"][0]["write"]["iops"]), c1 - c0, t1 - t0


def synth_24h(folder: Path, coarseness: int = 3) -> Path:
    n = LOG_SECONDS
    fio_dir = folder / "fio"
    fio_dir.mkdir(parents=True)
    rng = np.random.default_rng(7)
    t = (np.arange(1, n + 1) * 1000).astype(np.int64)
    iops = rng.integers(5_000, 60_000, n)
    iops[rng.integers(0, n, 500)] = 0
    lat = rng.integers(500_000, 9_000_000, n)
    for kind, values in (("iops", iops), ("bw", iops * 4), ("lat", lat)):
        text = "".join(f"{a}, {b}, 1, 0, 0\n" for a, b in zip(t.tolist(), values.tolist(),
                                                            strict=True))
        (fio_dir / f"torture_{kind}.1.log").write_text(text)
    nbins = jobs.HIST_BINS >> coarseness
    rows = []
    for _ in range(256):
        counts = np.zeros(nbins, dtype=np.int64)
        counts[rng.integers(nbins // 2, nbins // 2 + 60, 40)] = rng.integers(1, 4000, 40)
        rows.append(", ".join(map(str, counts.tolist())))
    hist = "".join(f"{a + 1}, 1, 4096, {rows[k % 256]}\n" for k, a in enumerate(t.tolist()))
    (fio_dir / "torture_clat_hist.1.log").write_text(hist)
    final = {"fio version": "fio-3.33", "jobs": [{
        "jobname": "torture", "error": 0, "job_runtime": n * 1000,
        "job options": {"time_based": "1", "runtime": f"{n}s"},
        "write": {"io_bytes": int(iops.sum()) * 4096, "total_ios": int(iops.sum()),
                  "runtime": n * 1000}}]}
    (fio_dir / "torture.json").write_text(json.dumps(final))
    return folder


def main() -> int:
    if os.geteuid() != 0:
        print("bench_overhead: needs root (loop device)", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="ssdbench-bench-", dir="/dev/shm"))
    try:
        t0 = time.perf_counter()
        folder = synth_24h(work / "synth")
        print(f"# synthetic 24 h log set written in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
        t0 = time.perf_counter()
        series = stage_series(StageFiles(folder / "fio", "torture"), "write")
        parse_s = time.perf_counter() - t0
        assert series.iops.size == LOG_SECONDS
        t0 = time.perf_counter()
        stage_series(StageFiles(folder / "fio", "torture"), "write", latency=False)
        no_hist_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_run_csvs(folder)
        csv_s = time.perf_counter() - t0
        print(f"parse_24h_seconds={parse_s:.3f}")
        print(f"parse_24h_without_hist_seconds={no_hist_s:.3f}")
        print(f"csvs_24h_seconds={csv_s:.3f}")
        sys.stdout.flush()

        image = work / "disk.img"
        with open(image, "wb") as f:
            f.truncate(SIZE)
        dev = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                             capture_output=True, text=True).stdout.strip()
        try:
            # a first run is not counted: it allocates the tmpfs pages behind the loop device
            bare(work, dev, 99)
            bare_iops, ours_iops, cpu, wall = [], [], 0.0, 0.0
            for i in range(PAIRS):
                # Alternate which goes first (ABBA…): the one that runs second in a pair
                # was measured faster on a warm loop device, whichever it was.
                if i % 2:
                    iops, c, w = with_ssdbench(work, dev, i)
                    bare_iops.append(bare(work, dev, i))
                else:
                    bare_iops.append(bare(work, dev, i))
                    iops, c, w = with_ssdbench(work, dev, i)
                ours_iops.append(iops)
                cpu += c
                wall += w
                print(f"# pair {i}: bare {bare_iops[-1]:,.0f} IOPS, ssdbench {iops:,.0f} IOPS, "
                      f"ssdbench CPU {c:.2f} s in {w:.1f} s", file=sys.stderr)
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
        ratio = (sum(ours_iops) / len(ours_iops)) / (sum(bare_iops) / len(bare_iops))
        print(f"overhead_iops_ratio={ratio:.3f}")
        print(f"ssdbench_cpu_percent={100.0 * cpu / wall:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
