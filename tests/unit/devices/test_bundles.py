"""Every captured drive setup in tests/data/bundles/<name>/ replays to its expected.json.

A bundle is what `ssdbench bundle` wrote on a real machine or in a QEMU guest
(scripts/capture-qemu-bundle.sh); expected.json is the `ssdbench list --json` answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.devices import discover
from ssdbench.devices.bundle import (
    ReplayRunner,
    argv_file_stem,
    load_bundle,
)
from ssdbench.system import Host, RecordingMissing

from .fixtures import BUNDLES

BUNDLE_DIRS = sorted(p for p in BUNDLES.iterdir() if (p / "manifest.json").is_file())
REQUIRED_KEYS = {
    "path", "name", "transport", "model", "serial", "firmware", "size_bytes",
    "logical_block_size", "physical_block_size", "rotational", "trim_supported",
    "protected", "protect_reasons", "erase_methods", "ata_security", "nvme",
}


def test_there_are_bundles() -> None:
    names = {p.name for p in BUNDLE_DIRS}
    assert {"this-machine-virtio-loop", "qemu-nvme-ahci-usb"} <= names


@pytest.mark.parametrize("bundle_dir", BUNDLE_DIRS, ids=lambda p: p.name)
def test_bundle_replays_to_expected(bundle_dir: Path) -> None:
    bundle = load_bundle(bundle_dir)
    drives = discover(Host(bundle.runner, bundle.fs))
    expected = json.loads((bundle_dir / "expected.json").read_text())
    assert [d.to_json() for d in drives] == expected
    assert bundle.fs.unrecorded == []
    for obj in expected:
        assert set(obj) >= REQUIRED_KEYS


@pytest.mark.parametrize("bundle_dir", BUNDLE_DIRS, ids=lambda p: p.name)
def test_bundle_replays_all_devices(bundle_dir: Path) -> None:
    bundle = load_bundle(bundle_dir)
    drives = discover(Host(bundle.runner, bundle.fs), include_all=True)
    expected = json.loads((bundle_dir / "list-all.json").read_text())
    assert [d.to_json() for d in drives] == expected


@pytest.mark.parametrize("bundle_dir", BUNDLE_DIRS, ids=lambda p: p.name)
def test_manifest_names_every_file(bundle_dir: Path) -> None:
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    assert manifest["format"] == 1 and manifest["kernel"] and manifest["created"]
    for cmd in manifest["commands"]:
        assert cmd["stdout"] == f"cmd/{argv_file_stem(cmd['argv'])}.out"
        assert (bundle_dir / cmd["stdout"]).is_file()
        assert (bundle_dir / cmd["stderr"]).is_file()
    for path, rel in manifest["files"].items():
        assert rel == "missing" or (bundle_dir / rel).is_file(), path


def test_this_machine_root_disk_protected_loop_not() -> None:
    expected = json.loads((BUNDLES / "this-machine-virtio-loop" / "expected.json").read_text())
    by_transport = {d["transport"]: d for d in expected}
    root = by_transport["virtio"]
    assert root["protected"] and "mounted:/" in root["protect_reasons"]
    assert "boot-medium" in root["protect_reasons"]
    loop = by_transport["loop"]
    assert not loop["protected"] and loop["erase_methods"] == []
    assert loop["consent_id"] == loop["name"]


def test_list_from_bundle_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    bundle_dir = BUNDLES / "this-machine-virtio-loop"
    assert main(["list", "--from-bundle", str(bundle_dir), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == json.loads((bundle_dir / "expected.json").read_text())


def test_list_from_bundle_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--from-bundle", str(BUNDLES / "this-machine-virtio-loop")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["DEVICE", "TRAN", "MODEL"]
    vda = next(line for line in lines if line.startswith("/dev/vda"))
    assert "yes: boot-medium, mounted:/" in vda


def test_list_from_missing_bundle_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "--from-bundle", str(tmp_path)]) == 1
    assert "not a support bundle" in capsys.readouterr().err


def test_replay_runner_missing_recording_names_argv() -> None:
    runner = ReplayRunner().add(["nvme", "list", "-o", "json"], stdout='{"Devices": []}')
    assert runner.run(["nvme", "list", "-o", "json"]).text == '{"Devices": []}'
    with pytest.raises(RecordingMissing, match="nvme id-ctrl /dev/nvme0 -o json"):
        runner.run(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"])


def test_replay_runner_exit_codes_and_order() -> None:
    from ssdbench.system import CommandError

    runner = ReplayRunner()
    runner.add(["x"], stdout="first").add(["x"], stdout="second", returncode=3)
    assert runner.run(["x"]).text == "first"
    with pytest.raises(CommandError) as info:
        runner.run(["x"])
    assert info.value.returncode == 3
    assert runner.run(["x"], ok_codes=(3,)).text == "second"  # the last one repeats


def _qemu() -> dict[str, dict[str, object]]:
    expected = json.loads((BUNDLES / "qemu-nvme-ahci-usb" / "expected.json").read_text())
    return {d["name"]: d for d in expected}


def test_qemu_nvme_from_real_nvme_cli_2_json() -> None:
    nvme = _qemu()["nvme0n1"]
    assert (nvme["transport"], nvme["model"], nvme["serial"]) == (
        "nvme", "QEMU NVMe Ctrl", "SSDBNVME0001")
    assert nvme["size_bytes"] == 256 * 1024 * 1024
    assert nvme["trim_supported"] and not nvme["protected"]
    assert nvme["erase_methods"] == ["nvme-format-user-data"]  # QEMU 7.2: no sanitize
    info = nvme["nvme"]
    assert isinstance(info, dict)
    assert (info["sanicap"], info["fna"], info["dlfeat"]) == (0, 0, 1)
    assert info["oacs"] & 0x2 and info["oncs"] & 0x4  # Format, DSM


def test_qemu_sata_usb_mounted_and_swap() -> None:
    d = _qemu()
    sata = d["sda"]
    assert (sata["transport"], sata["model"], sata["serial"]) == (
        "sata", "SSDBENCH SATA DISK", "SSDBSATA0001")
    assert not sata["protected"] and sata["erase_refusal"] == ["no-erase-method"]
    usb = d["sdb"]
    assert usb["transport"] == "usb" and usb["serial"] == "SSDBUSB00001"
    assert usb["protect_reasons"] == ["boot-medium", "results-partition"]
    assert usb["erase_refusal"] == ["usb-bridge"] and usb["erase_methods"] == []
    assert d["vda"]["protect_reasons"] == ["mounted:/mnt"]
    assert d["vdb"]["protect_reasons"] == ["swap"]


def test_qemu_nvme_list_of_nvme_cli_2_3() -> None:
    from ssdbench.devices.nvme import parse_nvme_list_json

    text = (BUNDLES / "qemu-nvme-ahci-usb" / "cmd" / "nvme_list_-o_json.out").read_text()
    (e,) = parse_nvme_list_json(text)
    assert (e.path, e.serial, e.size_bytes, e.product) == (
        "/dev/nvme0n1", "SSDBNVME0001", 268435456, "")


def test_a_parser_that_meets_unexpected_output_lists_the_drive_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # #28 item 9: discovery caught ParseError only; any other exception from a parser (46 of
    # them in 14 parsers under the fuzz) ended `ssdbench list` and the TUI's scan
    import importlib

    discover_module = importlib.import_module("ssdbench.devices.discover")

    def broken(_text: str) -> object:
        raise IndexError("list index out of range")

    monkeypatch.setattr(discover_module, "parse_hdparm_identify", broken)
    b = load_bundle(BUNDLES / "qemu-nvme-ahci-usb")
    drives = {d.name: d for d in discover(Host(b.runner, b.fs))}
    sda = drives["sda"]
    assert [(p.tool, p.kind) for p in sda.problems] == [("hdparm", "parse")]
    assert "IndexError" in sda.problems[0].message
    assert "nvme0n1" in drives  # the others are listed as before
