"""The drive's own counters on a real (emulated) NVMe controller: QEMU's SMART / Health log
through the host's nvme-cli, read before and after 8 MiB of writes, and the temperature
sampled once a second meanwhile (issue #20 item 5)."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from ssdbench.devices.counters import NVME_DATA_UNIT, parse_nvme_smart_log
from tests.integration.qemu_helper import run_guest

GUEST_SCRIPT = Path(__file__).with_name("guest_counters.py")
JOB = f"""
export PYTHONDONTWRITEBYTECODE=1
{sys.executable} {GUEST_SCRIPT} /run/out
echo "guest_counters rc=$?"
"""
MIB = 2**20


def test_smart_log_counts_the_writes_and_the_temperature_is_sampled(tmp_path: Path) -> None:
    run = run_guest(JOB, tmp_path / "vm", nvme_size_mib=32, timeout_s=300)
    assert run.returncode == 0, run.console[-2000:] + run.read("job.log")[-3000:]
    assert "guest_counters rc=0" in run.read("job.log"), run.read("job.log")[-3000:]
    record = json.loads(run.read("health.json"))
    assert record["tool"] == "nvme smart-log" and "unavailable" not in record
    delta = record["delta"]["host_writes_bytes"]
    # QEMU counts 512-byte units and reports whole thousands of them, rounded up
    assert 8 * MIB <= delta <= 8 * MIB + NVME_DATA_UNIT, delta
    assert record["delta"]["nand_writes_bytes"] is None  # NVMe's log has no NAND count
    assert record["delta"]["write_amplification"] is None
    # QEMU's controller reports 323 K: 50 degrees C, kelvin converted
    assert record["before"]["temperature_c"] == record["after"]["temperature_c"] == 50
    assert record["after"]["power_on_hours"] is not None
    raw = run.read("smart/after.json")
    assert parse_nvme_smart_log(raw).host_writes_bytes == record["after"]["host_writes_bytes"]
    rows = list(csv.DictReader(io.StringIO(run.read("sensors-torture.csv"))))
    assert len(rows) >= 3
    assert [int(r["second"]) for r in rows] == sorted(int(r["second"]) for r in rows)
    assert {r["temperature_c"] for r in rows} == {"50"}
    env = json.loads(run.read("environment.json"))
    assert env["io_scheduler"] and env["write_cache"] and env["apst"]
