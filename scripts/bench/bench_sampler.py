#!/usr/bin/env python3
"""How punctually the block-stat sampler catches fio's second edges on a busy host.

The sampler (``python -m ssdbench.fio.blockstat``, fio/blockstat.py) reads a stat file 2 ms
apart from 6 ms before to 6 ms after each whole second of fio's clock; each second of
iops.csv is interpolated between the reads either side of its edges, so a late read
widens that bracket and blurs the seconds beside it. This runs the sampler for
BENCH_SAMPLER_SECONDS (default 20; 2 with BENCH_SMOKE=1, make test's smoke run) on a
constant stat file with a made-up fio epoch, while BENCH_SAMPLER_HOGS (default 3; 1 with
BENCH_SMOKE=1) shell loops spin on the CPUs and one ``dd`` writes 1 MiB
blocks into a scratch file (page-cache pressure), and prints:

* ``sampler_policy``: how the sampler is scheduled (``fifo`` as root, else ``other``);
* ``sampler_edge_bracket_ms_median`` / ``_p99`` / ``_max``: the gap between the reads either
  side of each edge (2 ms when all goes to plan; goal: max under 6 ms, the dense window);
* ``sampler_wide_edges``: edges bracketed wider than 20 ms (run.json ``wide_edges``);
* ``sampler_reads_per_s``.

Prints name=value lines on stdout; explanations on stderr.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ssdbench.fio.blockstat import BlockStatSampler
from ssdbench.fio.logs import WIDE_EDGE_MS, StageFiles, load_block_trace
from ssdbench.system import SystemRunner

SMOKE = os.environ.get("BENCH_SMOKE") == "1"  # make test's smoke run: seconds, no figure
SECONDS = int(os.environ.get("BENCH_SAMPLER_SECONDS", "2" if SMOKE else "20"))
HOGS = int(os.environ.get("BENCH_SAMPLER_HOGS", "1" if SMOKE else "3"))


def main() -> int:
    runner = SystemRunner()
    with tempfile.TemporaryDirectory(prefix="bench-sampler-") as tmp:
        work = Path(tmp)
        stat = work / "stat"
        stat.write_text("    5 0 40 1 7 0 56 2 0 3 3 0 0 0 0 0 0\n")
        load = [runner.stream(["sh", "-c", "while :; do :; done"]) for _ in range(HOGS)]
        load.append(runner.stream(["sh", "-c", f"while :; do dd if=/dev/zero "
                                   f"of={work}/scratch bs=1M count=256 2>/dev/null; done"]))
        sampler = BlockStatSampler(runner, str(stat), work / "fio", "bench",
                                   device="bench", direction="write", io_size=4096)
        try:
            if not sampler.start():
                print(f"the sampler did not start: {sampler.error}", file=sys.stderr)
                return 1
            pid = sampler.pid
            policy = "fifo" if pid and os.sched_getscheduler(pid) == os.SCHED_FIFO else "other"
            epoch_ms = time.time_ns() // 1_000_000 + 300
            sampler.offer_epoch(epoch_ms)
            time.sleep(SECONDS + 0.3)
            sampler.stop()
        finally:
            for proc in load:
                proc.terminate(grace_s=1.0)
                proc.wait()
        if sampler.error:
            print(f"the sampler ended early: {sampler.error}", file=sys.stderr)
            return 1
        trace = load_block_trace(StageFiles(work / "fio", "bench"), "write")
        if trace is None:
            print("the trace did not load", file=sys.stderr)
            return 1
        brackets = trace.edge_brackets_ms(SECONDS)
        brackets = brackets[np.isfinite(brackets)]
    print(f"{HOGS} CPU hogs and a dd writer beside the sampler for {SECONDS} s; "
          f"{brackets.size} edges", file=sys.stderr)
    print(f"sampler_policy={policy}")
    print(f"sampler_edge_bracket_ms_median={np.median(brackets):.3f}")
    print(f"sampler_edge_bracket_ms_p99={np.percentile(brackets, 99):.3f}")
    print(f"sampler_edge_bracket_ms_max={brackets.max():.3f}")
    print(f"sampler_wide_edges={int((brackets > WIDE_EDGE_MS).sum())}")
    print(f"sampler_reads_per_s={sampler.samples / (SECONDS + 0.3):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
