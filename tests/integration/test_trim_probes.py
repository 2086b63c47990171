"""A TRIM run with real fio on a loop device of a capacity that is not a power of two (root):
each probe writes its own window of the span (docs/plans.md "TRIM probes") and the idle
between the TRIM pass and the after-TRIM probe is honoured."""

from __future__ import annotations

import csv
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import loop_device

MIB = 2**20
SPAN = 37 * MIB  # a third of it (12.33 MiB) is less than the 16 MiB asked for: shrink rule
IDLE_S = 3


def _log_time(log: str, pattern: str) -> float:
    """Start time (epoch s) of the last log.txt command line matching ``pattern``."""
    for line in reversed(log.splitlines()):
        if re.search(pattern, line):
            stamp = re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line)
            assert stamp, line
            return datetime.strptime(stamp.group(0), "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=UTC).timestamp()
    raise AssertionError(f"no log line matches {pattern!r}")


def test_probes_land_in_three_windows_and_the_idle_is_honoured(tmp_path: Path) -> None:
    results = tmp_path / "results"
    with loop_device(37, prefix="ssdbench-probes-") as (dev, image):
        name = os.path.basename(dev)
        code = main(["run", dev, "--destroy", name, "--run", "trim", "--erase-fallback",
                     "discard", "--quiet", "--results", str(results),
                     "--set", "trim_torture_seconds=2", "--set", "probe_gib=0.015625",
                     "--set", f"trim_idle_seconds={IDLE_S}"])
        assert code == ExitCode.OK
        content = image.read_bytes()
    [drive_dir] = [p for p in results.iterdir() if p.is_dir()]
    run_dir = drive_dir / "trim"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done", record.get("error")
    assert record["params"]["trim_idle_seconds"] == IDLE_S
    assert record["params"]["probe_preset"] == "as-ssd"

    # the documented rule: three windows of min(probe, span / 3), in whole 4 KiB blocks
    size = SPAN // 3 - (SPAN // 3) % 4096
    offsets = {"clean": 0, "after_torture": size, "after_trim": 2 * size}
    probes = record["probes"]
    assert probes["offsets"] == offsets and probes["probe_bytes"] == size
    assert probes["shrunk"] is True and probes["requested_bytes"] == 16 * MIB
    assert (probes["block_bytes"], probes["iodepth"]) == (size, 1)

    with open(run_dir / "probes.csv", newline="") as f:
        rows = {r["phase"]: r for r in csv.DictReader(f)}
    for phase, offset in offsets.items():
        assert int(rows[phase]["offset_bytes"]) == offset
        assert int(rows[phase]["bytes"]) == size
        fio = json.loads((run_dir / "fio" / f"probe-{phase}.json").read_text())
        [job] = fio["jobs"]
        assert int(job["job options"]["offset"]) == offset  # what fio itself was told
        assert int(job["write"]["io_bytes"]) == size
        assert "iodepth=1\n" in (run_dir / "jobs" / f"probe-{phase}.fio").read_text()

    # On the disk: the TRIM pass zeroed the span (loop on tmpfs punches holes), then the
    # after-TRIM probe wrote exactly its window and nothing else.
    zero = bytes(4096)
    written = [i * 4096 for i in range(SPAN // 4096) if content[i * 4096:(i + 1) * 4096] != zero]
    assert written[0] == offsets["after_trim"] and written[-1] == offsets["after_trim"] + size - 4096
    assert len(written) == size // 4096

    trim = record["trim"]
    assert trim["idle_s"] == IDLE_S and trim["idle_measured_s"] >= IDLE_S
    # independent of ssdbench's own clock: log.txt's starts of the discard and of the
    # after-TRIM probe (whole seconds: floor(b) - floor(a) >= 3 when b - a >= 3) are at
    # least the idle apart; without the idle they are 0-1 s apart
    log = (drive_dir / "log.txt").read_text()
    gap = _log_time(log, r"jobs/probe-after_trim\.fio") - _log_time(log, r"blkdiscard")
    assert gap >= IDLE_S
