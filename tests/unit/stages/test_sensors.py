"""DriveWatch on recorded smartctl output (issue #20 item 5)."""

from __future__ import annotations

from pathlib import Path

from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.stages.sensors import DriveWatch
from ssdbench.system import Host

BUNDLE = Path(__file__).resolve().parents[2] / "data" / "bundles" / "qemu-nvme-ahci-usb" / "cmd"


def _watch(argv: list[str], stdout: str, returncode: int) -> DriveWatch:
    runner = ReplayRunner().add(argv, stdout=stdout, returncode=returncode)
    return DriveWatch(Host(runner, ReplayFS(FSRecord())), "sata", "/dev/sda")


def test_smartctl_exit_bit_2_with_data_is_read(tmp_path: Path) -> None:
    """QEMU's AHCI disk: smartctl -x exits 4 (some logs are missing) but reads the
    temperature and power-on hours; those are kept, not thrown away."""
    text = (BUNDLE / "smartctl_-j_-x_dev_sda.out").read_text()
    watch = _watch(["smartctl", "-x", "-j", "/dev/sda"], text, 4)
    counters = watch.read(tmp_path / "smart" / "before.json")
    assert watch.unavailable is None
    assert counters is not None and counters.temperature_c == 31
    assert counters.read_at is not None and counters.read_at.endswith("Z")
    assert counters.to_json()["read_at"] == counters.read_at
    assert (tmp_path / "smart" / "before.json").read_text() == text


def test_smartctl_that_cannot_open_the_device_is_unavailable(tmp_path: Path) -> None:
    text = ('{"smartctl": {"exit_status": 2, "messages": [{"string": "/dev/sda: Unable to '
            'detect device type", "severity": "error"}]}}')
    watch = _watch(["smartctl", "-x", "-j", "/dev/sda"], text, 2)
    assert watch.read(tmp_path / "before.json") is None
    assert watch.unavailable == "smartctl could not read the drive"
    # not asked again during the run
    assert watch.read(tmp_path / "after.json") is None
