"""Every benchmark still runs (`make bench` with BENCH_SMOKE=1: tiny sizes, seconds, no goal
checked): a benchmark that breaks fails `make test` instead of rotting until someone runs
`make bench` (bench_report asserted 10 charts for a day after the report drew 12)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, require_root

pytestmark = [pytest.mark.root, pytest.mark.slow]

# one figure of each benchmark (docs/benchmarks.md)
FIGURES = ("analysis_24h_seconds", "fleet_seconds", "fleet_scale_incremental_seconds",
           "fleet_scale_s3_incremental_seconds",
           "overhead_iops_ratio",
           "parse_24h_seconds", "report_seconds", "report_charts", "sampler_edge_bracket_ms_max",
           "simdrive_pacing_1000_fio_iops", "simdrive_ceiling_iops", "overwrite_vs_fio")


def test_every_benchmark_runs_and_prints_its_figures() -> None:
    require_root()
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "bench.py")],
                          env=dict(os.environ, BENCH_SMOKE="1"), capture_output=True,
                          text=True, timeout=600, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = dict(re.findall(r"^(\w+)=(\S+)$", proc.stdout, re.M))
    missing = [f for f in FIGURES if f not in figures]
    assert not missing, (missing, proc.stdout)
    scripts = sorted(p.name for p in (REPO / "scripts" / "bench").glob("bench_*.py"))
    assert all(f"# {s}" in proc.stderr for s in scripts), proc.stderr[-3000:]
    assert int(figures["report_charts"]) >= 10
