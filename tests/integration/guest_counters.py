"""Runs INSIDE the QEMU guest (see qemu_helper.py): the drive's own counters of the
emulated NVMe drive around 8 MiB of writes, and its temperature sampled while they run.

    python guest_counters.py OUT_DIR

Writes OUT_DIR/smart/before.json and after.json (nvme smart-log's raw JSON), OUT_DIR/
health.json (run.json "health"), OUT_DIR/environment.json and OUT_DIR/sensors-torture.csv.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ssdbench.stages.sensors import DriveWatch, environment_record, health
from ssdbench.system import Host, LiveFS, SystemRunner

out = Path(sys.argv[1])
host = Host(SystemRunner(), LiveFS())
watch = DriveWatch(host, "nvme", "/dev/nvme0n1")
before = watch.read(out / "smart" / "before.json")
with watch.sample("torture", out) as rows:
    host.runner.run(["dd", "if=/dev/urandom", "of=/dev/nvme0n1", "bs=1M", "count=8",
                     "oflag=direct", "status=none"], timeout=120)
    deadline = time.monotonic() + 60
    while len(rows) < 4:  # the sampler's own rows: a few seconds of them
        if time.monotonic() > deadline:
            sys.exit(f"the sampler read {len(rows)} temperatures in 60 s")
        time.sleep(0.1)
after = watch.read(out / "smart" / "after.json")
(out / "health.json").write_text(json.dumps(health(before, after, watch), indent=2))
(out / "environment.json").write_text(json.dumps(
    environment_record(host, "nvme", "nvme0n1", {"fio": "fio-x", "kernel": "k"}), indent=2))
