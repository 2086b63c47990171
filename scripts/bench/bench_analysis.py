#!/usr/bin/env python3
"""The analysis of a 24-hour per-second series (docs/analysis.md "Levels and events").

* ``analysis_24h_seconds``: ``analyse_iops`` (statistics, levels and events, SNIA steady
  state) of the slowest of four synthetic 86,400-second series, in a fresh process after one
  uncounted warm-up (goal <= 1): a plateau, a cliff and a noisy steady state; the same with
  a throttle every ten minutes and stalls; a bimodal steady state (every second 2K or 9K);
  and a slow exponential decline.
* ``fill_24h_seconds``: ``fill_stats`` of a 86,400-second fill with an SLC cache and
  throttles.

Prints name=value lines on stdout; explanations on stderr. BENCH_SMOKE=1: 3,600 seconds (make
test checks the benchmark still runs; the figures mean nothing then).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from ssdbench.analysis import analyse_iops, fill_stats

SMOKE = os.environ.get("BENCH_SMOKE") == "1"
N = 3_600 if SMOKE else 86_400


def series() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2026)
    t = np.arange(N, dtype=np.float64)
    cliff = np.r_[rng.normal(40_000, 1_200, N // 20), rng.normal(6_000, 900, N - N // 20)]
    throttled = cliff.copy()
    for start in range(N // 10, N - 120, 600):
        throttled[start:start + 90] *= 0.3
    throttled[rng.choice(N, N // 500, replace=False)] = 0.0
    bimodal = np.where(rng.random(N) < 0.5, 2_000.0, 9_000.0) * rng.normal(1, 0.05, N)
    decline = (5_000 + 75_000 * np.exp(-t / (N / 5))) * rng.normal(1, 0.05, N)
    return {"cliff": cliff.clip(0), "throttles-and-stalls": throttled.clip(0),
            "bimodal": bimodal, "decline": decline}


def main() -> int:
    shapes = series()
    analyse_iops(shapes["cliff"][:3_600])  # warm-up: imports, first numpy calls
    worst = 0.0
    for name, values in shapes.items():
        t0 = time.perf_counter()
        a = analyse_iops(values)
        dt = time.perf_counter() - t0
        worst = max(worst, dt)
        levels = len(a.events.levels) if a.events else 0
        events = len(a.events.events) if a.events else 0
        print(f"# {name}: {dt:.3f} s, {levels} levels, {events} events", file=sys.stderr)
    print(f"analysis_24h_seconds={worst:.3f}")
    rng = np.random.default_rng(7)
    rate = np.r_[rng.normal(3_000, 60, N // 50), rng.normal(900, 40, N - N // 50)]
    for start in range(N // 10, N - 200, 1_800):
        rate[start:start + 120] *= 0.5
    t0 = time.perf_counter()
    fill_stats(rate.clip(0), np.cumsum(rate.clip(0)) / 1024)
    print(f"fill_24h_seconds={time.perf_counter() - t0:.3f}")
    print("# goal: analysis_24h_seconds <= 1", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
