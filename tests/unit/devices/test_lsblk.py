"""lsblk --json, old util-linux (strings everywhere) and the current one."""

from __future__ import annotations

import json

from ssdbench.devices.lsblk import parse_lsblk_json

from .fixtures import all_fixture_files, fixture_text


def test_old_util_linux_strings() -> None:
    top = parse_lsblk_json(
        fixture_text("lsblk/lsblk-json_old-util-linux_usb-stick+nvme_drivelist.json"))
    sda, nvme = top
    assert sda.name == "sda" and sda.removable is True and sda.read_only is False
    assert sda.mountpoints == ("/media/jwentz/Temp",)
    assert sda.size_bytes is not None and abs(sda.size_bytes - 14.3 * 2**30) < 2**20
    assert nvme.removable is False and nvme.type == "disk"
    parts = {c.name: c for c in nvme.children}
    assert set(parts) == {"nvme0n1p1", "nvme0n1p2", "nvme0n1p3"}
    assert parts["nvme0n1p2"].mountpoints == ("/",)
    assert parts["nvme0n1p3"].mountpoints == ("[SWAP]",)
    assert nvme.walk()[0].name == "nvme0n1"


def test_new_util_linux_booleans_and_mountpoints() -> None:
    text = json.dumps({"blockdevices": [{
        "name": "vda", "kname": "vda", "maj:min": "254:0", "rm": False, "ro": False,
        "rota": False, "size": 274877906944, "type": "disk", "tran": "virtio",
        "mountpoint": "/", "mountpoints": ["/", "/srv"], "log-sec": 512, "phy-sec": 4096,
        "label": "root", "uuid": "abc"}]})
    (d,) = parse_lsblk_json(text)
    assert d.mountpoints == ("/", "/srv")
    assert d.size_bytes == 274877906944
    assert (d.log_sec, d.phy_sec, d.transport, d.label, d.uuid) == (
        512, 4096, "virtio", "root", "abc")


def test_every_fixture_has_a_source_header() -> None:
    from .fixtures import FIXTURES

    files = all_fixture_files()
    assert len(files) >= 17
    for rel in files:
        head = (FIXTURES / rel).read_text(encoding="utf-8").splitlines()[0]
        assert head.startswith("# source:"), rel
