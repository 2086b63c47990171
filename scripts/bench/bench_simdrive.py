#!/usr/bin/env python3
"""The simulated SSD on the host path (root: nbdkit + nbdfuse + a loop device).

A fresh enterprise-preset drive (42% spare: the runs stay before the cliff, so every
write costs exactly one page program), fio 4 KiB random write QD32 libaio direct for
BENCH_SIMDRIVE_SECONDS (default 8) per target, logging per second on the epoch:

* ``simdrive_pacing_<N>_fio_iops``: fio's IOPS (total I/Os / runtime) at FOB N (1000, 2000,
  4000); ``simdrive_pacing_<N>_error_percent``: (fio - N) / N;
  ``simdrive_pacing_<N>_model_vs_fio_percent``: the model's completed writes over fio's
  logged seconds vs fio's own count of them (what the known-answer tests compare);
  ``simdrive_pacing_<N>_max_second_error_percent``: the worst whole second of fio's log
  (first and last excluded) against the model log resampled on fio's seconds.
* ``simdrive_ceiling_iops``: fio's IOPS at FOB 100000 (the host path is the limit: nbdkit's
  Python plugin, nbdfuse, the loop device). Goal: >= 4500, so FOB <= 4000 is paced exactly.

Prints name=value lines on stdout; explanations on stderr. BENCH_SMOKE=1: FOB 1000 and the
ceiling for 5 s each (make test checks the benchmark still runs; no figure means anything).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from simdrive import truth as truthlog  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"  # make test's smoke run: seconds, no figure
SECONDS = int(os.environ.get("BENCH_SIMDRIVE_SECONDS", "5" if SMOKE else "8"))
FOBS = (1000,) if SMOKE else (1000, 2000, 4000)
SIZE = "1831492s"  # IDEMA 240 GB / 256: 894 MiB
SIMDRIVE = str(REPO / "scripts" / "simdrive")


def run(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def fio(dev: str, workdir: Path, seconds: int) -> tuple[float, list[tuple[float, int]]]:
    """(fio IOPS, [(epoch end of a logged second, I/Os in it)])."""
    out = run([
        "fio", "--name=pace", f"--filename={dev}", "--rw=randwrite", "--bs=4k",
        "--iodepth=32", "--ioengine=libaio", "--direct=1", "--time_based",
        f"--runtime={seconds}", "--norandommap", "--randrepeat=0",
        f"--write_iops_log={workdir}/pace", "--log_avg_msec=1000", "--log_unix_epoch=1",
        "--output-format=json",
    ])
    job = json.loads(out[out.index("{"):])["jobs"][0]["write"]
    rows = []
    for line in (workdir / "pace_iops.1.log").read_text().splitlines():
        cols = [c.strip() for c in line.split(",")]
        rows.append((int(cols[0]) / 1000.0, int(cols[1])))
    return float(job["iops"]), rows


def measure(fob: float, seconds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-simdrive-") as tmp:
        d = Path(tmp)
        run([SIMDRIVE, "start", "--preset", "enterprise", "--size", SIZE, "--dir", str(d),
             "--fob-iops", str(fob)])
        try:
            dev = run([SIMDRIVE, "attach", "--dir", str(d)])
            iops, rows = fio(dev, d, seconds)
        finally:
            run([SIMDRIVE, "stop", "--dir", str(d)])
        log = truthlog.load(d / "truth.jsonl")
        inner = rows[1:-1]
        model = [log.writes_between(t - 1.0, t) for t, _ in inner]
        fio_n = sum(n for _, n in inner)
        if not fio_n:  # a run too short to leave a whole second between its first and last
            return {"fio_iops": iops, "model_vs_fio": float("nan"),
                    "worst_second": float("nan")}
        worst = max((abs(m - n) / n * 100.0 for m, (_, n) in zip(model, inner, strict=True)
                     if n), default=float("nan"))
        return {"fio_iops": iops, "model_vs_fio": (sum(model) - fio_n) / fio_n * 100.0,
                "worst_second": worst}


def main() -> int:
    if os.geteuid() != 0:
        print("bench_simdrive: needs root (nbdfuse, losetup)", file=sys.stderr)
        return 1
    for fob in FOBS:
        r = measure(float(fob), SECONDS)
        print(f"# FOB {fob}: fio {r['fio_iops']:.1f} IOPS", file=sys.stderr)
        print(f"simdrive_pacing_{fob}_fio_iops={r['fio_iops']:.1f}")
        print(f"simdrive_pacing_{fob}_error_percent={(r['fio_iops'] - fob) / fob * 100:.2f}")
        print(f"simdrive_pacing_{fob}_model_vs_fio_percent={r['model_vs_fio']:.3f}")
        print(f"simdrive_pacing_{fob}_max_second_error_percent={r['worst_second']:.2f}")
    r = measure(100000.0, SECONDS)
    print(f"simdrive_ceiling_iops={r['fio_iops']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
