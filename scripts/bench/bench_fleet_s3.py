#!/usr/bin/env python3
"""The fleet at a million runs over a loopback S3 store (#46): bench_fleet_scale.py with
FLEET_STORE=s3 (a real s3proxy on 127.0.0.1; its docstring says what is seeded and what is
timed), so `make bench` measures both the folder store and the S3 store. Prints the
``fleet_scale_s3_*`` figures; BENCH_SMOKE=1: 2,000 runs and 200 new ones."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

if __name__ == "__main__":
    os.environ["FLEET_STORE"] = "s3"
    runpy.run_path(str(Path(__file__).with_name("bench_fleet_scale.py")), run_name="__main__")
