"""A drive pulled in the middle of a run: the NVMe drive sits behind a PCIe root port and is
removed with QMP `device_del` as soon as the kiosk says its torture started. Its run must
end failed with a reason, the SATA drive running at the same time must finish, and the
kiosk must still write the summary and power off."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rig import Boot, QmpAt, boot_kiosk

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(1800)]

VICTIM_SERIAL = "E2EPULLNVME1"
SURVIVOR_SERIAL = "E2EKEEPSATA1"
TORTURE_S = 12  # the survivor still tortures when the victim is pulled (its torture starts first)
CONFIG = f"""\
plan = "trim"
select = ["serial:{VICTIM_SERIAL}", "serial:{SURVIVOR_SERIAL}"]
destroy = ["{VICTIM_SERIAL}", "{SURVIVOR_SERIAL}"]
on_finish = "poweroff"
svg = false  # PNG only: the report takes minutes under TCG

[params]
trim_torture_seconds = {TORTURE_S}
probe_gib = 0.03125
trim_idle_seconds = 1
erase_fallback = "discard"
"""
# The only NVMe drive is nvme0n1 (QEMU device id nvme0); the kiosk mirrors its lines on ttyS0.
PULL_AT = r"ssdbench: nvme0n1 trim torture started"


@pytest.fixture(scope="module")
def pulled(dev_image: Path, tmp_path_factory: pytest.TempPathFactory) -> Boot:
    return boot_kiosk(
        tmp_path_factory.mktemp("unplug"),
        CONFIG,
        nvme=(f"256M,serial={VICTIM_SERIAL}",),
        sata=(f"256M,serial={SURVIVOR_SERIAL},model=E2E survivor SATA",),
        nvme_hotplug=True,
        qmp_at=(QmpAt(PULL_AT, ({"execute": "device_del", "arguments": {"id": "nvme0"}},)),),
        timeout_s=720,
        direct=True,  # the stick's kernel without firmware and GRUB (test_boot.py has those)
    )


def _run_json(b: Boot, serial: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((b.drive_dir(serial) / "trim" / "run.json").read_text())
    return data


def test_the_drive_was_pulled_mid_torture(pulled: Boot) -> None:
    assert len(pulled.qmp_fired) == 1, f"the torture never started:\n{pulled.tail(80)}"
    fired = pulled.qmp_fired[0]
    assert fired.replies == ({"return": {}},), fired
    assert pulled.seconds_until("nvme0n1 trim torture started") <= fired.at_s + 1


def test_pulled_drive_fails_with_a_reason(pulled: Boot) -> None:
    record = _run_json(pulled, VICTIM_SERIAL)
    assert record["state"] == "failed", record
    error = record["error"] or ""
    assert error.startswith("stage torture:") or error.startswith("stage probe"), error
    assert "the drive disappeared (/dev/nvme0n1" in error, error
    stages = {s["name"]: s["state"] for s in record["stages"]}
    assert stages["erase"] == "done" and stages["fill"] == "done", stages
    assert "failed" in stages.values(), stages
    assert "TRIM" not in [s for s, v in stages.items() if v == "done"]
    assert f"({VICTIM_SERIAL}): failed" in pulled.serial, pulled.tail(60)
    line = next(ln for ln in pulled.serial.splitlines() if "nvme0n1 trim" in ln and "failed" in ln)
    assert ": " in line.partition("failed")[2], line  # the kiosk line carries the reason


def test_the_other_drive_completes(pulled: Boot) -> None:
    record = _run_json(pulled, SURVIVOR_SERIAL)
    assert record["state"] == "done" and record["error"] is None, record
    iops = list(csv.DictReader((pulled.drive_dir(SURVIVOR_SERIAL) / "trim" / "iops.csv").open()))
    assert len(iops) == TORTURE_S
    summary = {r["serial"]: r for r in
               csv.DictReader((pulled.results / "ssdbench" / "summary.csv").open())}
    assert summary[SURVIVOR_SERIAL]["run_state"] == "done"
    assert summary[SURVIVOR_SERIAL]["trim_verdict"]
    assert summary[VICTIM_SERIAL]["run_state"] == "failed"


def test_kiosk_finishes_and_powers_off(pulled: Boot) -> None:
    assert pulled.returncode == 0, pulled.tail()
    assert "ssdbench: poweroff" in pulled.serial, pulled.tail()
    state = json.loads((pulled.results / "ssdbench" / "state.json").read_text())
    assert state["drives"][SURVIVOR_SERIAL]["state"] == "done"
    assert state["drives"][VICTIM_SERIAL]["state"] == "failed"
    assert pulled.bystander_sha_after == pulled.bystander_sha_before
    assert pulled.boot_partition_sha_after == pulled.boot_partition_sha_before
