"""Recording wrappers → bundle folder → replay gives the same drives (no live process)."""

from __future__ import annotations

import json
from pathlib import Path

from ssdbench.devices import discover
from ssdbench.devices.bundle import (
    RecordingFS,
    RecordingRunner,
    ReplayFS,
    ReplayRunner,
    argv_file_stem,
    load_bundle,
    write_bundle,
)
from ssdbench.devices.lsblk import parse_blkid_export
from ssdbench.system import Host

from .test_discover import SATA_SYS, USB_SYS, FakeMachine, hdparm_fixture


def test_argv_file_stem() -> None:
    assert argv_file_stem(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"]) == (
        "nvme_id-ctrl_dev_nvme0_-o_json")
    assert argv_file_stem(["smartctl", "-j", "-x", "/dev/sda"]) == "smartctl_-j_-x_dev_sda"


def test_round_trip_through_a_bundle_folder(tmp_path: Path) -> None:
    m = FakeMachine()
    m.disk("sda", SATA_SYS, minor=0)
    m.disk("sdb", USB_SYS, minor=16)
    m.runner.add(["hdparm", "-I", "/dev/sda"],
                 stdout=hdparm_fixture("hdparm-I_wd-red-WD40EFRX_hdd_frozen_hdparm9.65.txt"))
    m.runner.add(["hdparm", "-I", "/dev/sdb"], stdout=hdparm_fixture(
        "hdparm-I_usb-bridge-rejects-ATA-passthrough_rpi4.txt"),
        stderr="SG_IO: bad/missing sense data, sb[]:  70 00 05 00\n")
    m.runner.add(["smartctl", "-j", "-x", "/dev/sda"], returncode=4, stdout=json.dumps({
        "smartctl": {"exit_status": 4}, "smart_status": {"passed": True},
        "temperature": {"current": 31}, "power_on_time": {"hours": 12345},
        "ata_smart_attributes": {"table": [{"id": 5, "raw": {"value": 8}}]}}))
    m.runner.add(["smartctl", "-j", "-x", "/dev/sdb"], returncode=None, outcome="timeout")
    live = m.finish()
    rec_runner = RecordingRunner(live.runner)
    rec_fs = RecordingFS(live.fs)
    first = discover(Host(rec_runner, rec_fs))
    out = write_bundle(tmp_path / "b", rec_runner, rec_fs)
    assert (out / "cmd" / "hdparm_-I_dev_sdb.err").read_bytes().startswith(b"SG_IO")
    bundle = load_bundle(out)
    second = discover(Host(bundle.runner, bundle.fs))
    assert [d.to_json() for d in second] == [d.to_json() for d in first]
    assert bundle.fs.unrecorded == []
    sda, sdb = second
    assert sda.smart is not None and sda.smart.passed and sda.smart.temperature_c == 31
    assert sda.smart.power_on_hours == 12345 and sda.smart.reallocated_sectors == 8
    assert {p.kind for p in sdb.problems} >= {"pass-through", "timeout"}
    manifest = json.loads((out / "manifest.json").read_text())
    outcomes = {tuple(c["argv"]): c["outcome"] for c in manifest["commands"]}
    assert outcomes[("smartctl", "-j", "-x", "/dev/sdb")] == "timeout"
    assert manifest["files"]["/sys/block/sda/size"] == "fs/sys/block/sda/size"


def test_replay_fs_reports_unrecorded_reads() -> None:
    fs = ReplayFS(FakeMachine().fs)
    assert fs.read_text("/sys/block/nope/size") is None
    assert fs.unrecorded == ["read /sys/block/nope/size"]


def test_blkid_export() -> None:
    text = ("DEVNAME=/dev/sdb1\nSEC_TYPE=msdos\nLABEL_FATBOOT=SSDRESULTS\nLABEL=SSDRESULTS\n"
            "UUID=1234-ABCD\nBLOCK_SIZE=512\nTYPE=vfat\nPARTUUID=0a0b0c0d-01\n\n"
            "DEVNAME=/dev/vda\nUUID=5e3f\nTYPE=ext4\n")
    got = parse_blkid_export(text)
    assert got["sdb1"]["LABEL"] == "SSDRESULTS" and got["sdb1"]["UUID"] == "1234-ABCD"
    assert got["vda"]["TYPE"] == "ext4"
    assert parse_blkid_export("") == {}


def test_a_bundle_keeps_no_password_or_token_of_the_config_url(tmp_path: Path) -> None:
    """#28 item 3: the support bundle copies /proc/cmdline; a lab's config URL there carries
    its user and password (or a token in the query): they stay on the bench."""
    cmdline = ("BOOT_IMAGE=/boot/vmlinuz ssdbench.mode=kiosk ssdbench.boot_uuid=1234-ABCD "
               "ssdbench.config=https://lab:S3cr3t%21@cfg.lab:8443/benches/k.toml?token=T0K3N "
               "console=ttyS0\n")

    class Fs:
        def read_text(self, path: str) -> str | None:
            return cmdline if path == "/proc/cmdline" else None

    fs = RecordingFS(Fs())  # type: ignore[arg-type]
    assert fs.read_text("/proc/cmdline") == cmdline  # what the bench itself reads is whole
    out = write_bundle(tmp_path / "b", RecordingRunner(ReplayRunner()), fs)
    kept = (out / json.loads((out / "manifest.json").read_text())["files"]["/proc/cmdline"]
            ).read_text()
    assert "S3cr3t" not in kept and "T0K3N" not in kept and "//lab:" not in kept, kept
    assert ("ssdbench.config=https://REMOVED@cfg.lab:8443/benches/k.toml?REMOVED" in kept
            and "ssdbench.boot_uuid=1234-ABCD" in kept and kept.startswith("BOOT_IMAGE=")), kept
    assert not [p for p in out.rglob("*") if p.is_file() and b"S3cr3t" in p.read_bytes()]
