"""The machine's DMI identity and a drive's controller (issue #45), read through ReplayFS.

Layouts: this development machine (a VM with no SMBIOS tables: /sys/class/dmi/id is absent;
its disk vda is virtio on PCI 0000:00:02.0, 1af4:1042, driver virtio-pci: captured with
``ls``/``cat``/``readlink`` on 2026-11-28), and the QEMU bundle's sysfs chains
(tests/data/bundles/qemu-nvme-ahci-usb, recorded) with the ids QEMU's devices carry.
"""

from __future__ import annotations

from collections.abc import Mapping

from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.devices.host import (
    DMI_DIR,
    NOT_READABLE,
    NOTE_CUT,
    NOTE_PLACEHOLDER,
    NOTE_UNREADABLE,
    VALUE_LIMIT,
    describe,
    host_record,
    read_controller,
    read_machine,
)
from ssdbench.system import Host
from tests.hostile import EVIL_MODEL, HOSTILE_SERIAL

# a QEMU q35 guest's /sys/class/dmi/id (QEMU's SMBIOS defaults; root reads all of them)
QEMU_DMI = {
    "sys_vendor": "QEMU\n", "product_name": "Standard PC (Q35 + ICH9, 2009)\n",
    "product_serial": "\n", "product_uuid": "4c4c4544-0042-3510-8052-b4c04f4e4432\n",
    "bios_version": "1.16.3-debian-1.16.3-2\n", "bios_date": "04/01/2014\n",
}


def _host(files: Mapping[str, str | None], links: Mapping[str, str | None] | None = None,
          exists: dict[str, bool] | None = None) -> Host:
    return Host(ReplayRunner(), ReplayFS(FSRecord(files=dict(files), readlinks=dict(links or {}),
                                                  exists=dict(exists or {}))))


def _dmi(values: Mapping[str, str | None], **exists: bool) -> Host:
    files = {f"{DMI_DIR}/{k}": v for k, v in values.items()}
    return _host(files, exists={DMI_DIR: True, **{f"{DMI_DIR}/{k}": v
                                                   for k, v in exists.items()}})


def test_this_vm_has_no_dmi_and_says_so() -> None:
    host = _host({}, exists={DMI_DIR: False})
    m = read_machine(host).to_json()
    assert m["dmi"].startswith("absent")
    assert set(m["machine"].values()) == {None}
    assert "no DMI identity" in describe({**m, "controller": None})["machine"]


def test_this_vms_virtio_disk_controller() -> None:
    pci = "/sys/devices/pci0000:00/0000:00:02.0"
    host = _host({f"{pci}/vendor": "0x1af4\n", f"{pci}/device": "0x1042\n",
                  f"{pci}/subsystem_vendor": "0x1af4\n", f"{pci}/subsystem_device": "0x1042\n"},
                 {"/sys/block/vda": "../devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
                  f"{pci}/driver": "../../../bus/pci/drivers/virtio-pci",
                  f"{pci}/virtio1/block/vda/device": "../../../virtio1"})
    c = read_controller(host, "vda").to_json()
    assert c == {"bus": "pci", "pci_address": "0000:00:02.0", "pci_id": "1af4:1042",
                 "subsystem_id": "1af4:1042", "driver": "virtio-pci"}


def test_qemu_dmi_read_as_given() -> None:
    m = read_machine(_dmi(QEMU_DMI)).to_json()
    assert m["machine"]["sys_vendor"] == "QEMU"
    assert m["machine"]["product_uuid"] == "4c4c4544-0042-3510-8052-b4c04f4e4432"
    assert m["machine"]["board_name"] is None and m["notes"]["board_name"] == "absent"
    assert m["notes"]["product_serial"] == "empty"
    assert "sys_vendor" not in m["notes"] and m["dmi"] == "read"


def test_placeholders_kept_and_flagged() -> None:
    m = read_machine(_dmi({**QEMU_DMI, "sys_vendor": "To be filled by O.E.M.\n",
                           "product_serial": "System Serial Number",
                           "board_name": "Default string",
                           "product_uuid": "00000000-0000-0000-0000-000000000000"})).to_json()
    for key in ("sys_vendor", "product_serial", "board_name", "product_uuid"):
        assert m["notes"][key] == NOTE_PLACEHOLDER, key
    assert m["machine"]["sys_vendor"] == "To be filled by O.E.M."
    ff = read_machine(_dmi({"product_uuid": "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"})).to_json()
    assert ff["notes"]["product_uuid"] == NOTE_PLACEHOLDER
    assert "(placeholder)" in describe({**m, "controller": None})["serial"]


def test_root_only_files_are_not_readable_never_a_crash() -> None:
    # as a user: the files exist, reading them fails (LiveFS gives None)
    values = {**QEMU_DMI, "product_serial": None, "product_uuid": None}
    m = read_machine(_dmi(values, product_serial=True, product_uuid=True)).to_json()
    assert m["machine"]["product_serial"] == NOT_READABLE
    assert m["notes"]["product_uuid"] == NOTE_UNREADABLE
    assert describe({**m, "controller": None})["serial"] == (
        f"serial {NOT_READABLE}, UUID {NOT_READABLE}")


def test_hostile_values_bounded_and_kept_raw() -> None:
    long = "A" * 5000
    m = read_machine(_dmi({"sys_vendor": EVIL_MODEL, "product_name": HOSTILE_SERIAL,
                           "product_serial": long})).to_json()
    assert m["machine"]["product_serial"] == "A" * VALUE_LIMIT
    assert m["notes"]["product_serial"] == NOTE_CUT
    # raw in the record (JSON escapes it); every reader shows it through visible()
    assert m["machine"]["sys_vendor"] == EVIL_MODEL.strip()


def test_nvme_sata_usb_controllers_of_the_qemu_bundle() -> None:
    root = "/sys/devices/pci0000:00"
    files: dict[str, str | None] = {}
    for addr, vd, sub in (("05.0", ("0x1b36", "0x0010"), ("0x1af4", "0x1100")),
                          ("06.0", ("0x8086", "0x2922"), ("0x1af4", "0x1100")),
                          ("07.0", ("0x1b36", "0x000d"), ("0x1af4", "0x1100"))):
        p = f"{root}/0000:00:{addr}"
        files |= {f"{p}/vendor": vd[0], f"{p}/device": vd[1],
                  f"{p}/subsystem_vendor": sub[0], f"{p}/subsystem_device": sub[1]}
    usb = f"{root}/0000:00:07.0/usb2/2-1"
    files |= {f"{usb}/idVendor": "46f4\n", f"{usb}/idProduct": "0001\n",
              f"{usb}/product": "QEMU USB HARDDRIVE\x1b[2J\n"}
    links = {
        "/sys/block/nvme0n1": "../devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1",
        "/sys/block/sda": "../devices/pci0000:00/0000:00:06.0/ata1/host0/target0:0:0/"
                          "0:0:0:0/block/sda",
        "/sys/block/sdb": "../devices/pci0000:00/0000:00:07.0/usb2/2-1/2-1:1.0/host12/"
                          "target12:0:0/12:0:0:0/block/sdb",
        f"{root}/0000:00:05.0/driver": "../../../bus/pci/drivers/nvme",
        f"{root}/0000:00:06.0/driver": "../../../bus/pci/drivers/ahci",
        f"{root}/0000:00:07.0/driver": "../../../bus/pci/drivers/xhci_hcd",
    }
    host = _host(files, links)
    assert read_controller(host, "nvme0n1").to_json() == {
        "bus": "pci", "pci_address": "0000:00:05.0", "pci_id": "1b36:0010",
        "subsystem_id": "1af4:1100", "driver": "nvme"}
    assert read_controller(host, "sda").to_json()["pci_id"] == "8086:2922"
    usb_c = read_controller(host, "sdb").to_json()
    assert usb_c["bus"] == "usb" and usb_c["usb_id"] == "46f4:0001"
    assert usb_c["driver"] == "xhci_hcd" and usb_c["usb_product"].startswith("QEMU USB")
    line = describe({"controller": usb_c, "machine": {}, "notes": {}})["controller"]
    assert line.startswith("USB bridge 46f4:0001") and "0000:00:07.0" in line


def test_no_controller_for_a_loop_device_or_a_strange_name() -> None:
    host = _host({}, {"/sys/block/loop0": "../devices/virtual/block/loop0"})
    c = read_controller(host, "loop0").to_json()
    assert c["bus"] == "none" and "virtual" in c["reason"]
    assert read_controller(host, "../../etc").bus == "none"
    assert read_controller(host, "sdz").to_json()["reason"] == "no /sys/block/sdz"


def test_hostile_driver_link_and_ids_are_not_taken() -> None:
    p = "/sys/devices/pci0000:00/0000:00:02.0"
    host = _host({f"{p}/vendor": "0x1af4<script>", f"{p}/device": "0x1042"},
                 {"/sys/block/vda": "../devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
                  f"{p}/driver": "../drivers/<b>x</b>"})
    c = read_controller(host, "vda").to_json()
    assert c["pci_id"] == "?:1042" and c["driver"] == "?"


def test_host_record_has_machine_and_controller() -> None:
    rec = host_record(_dmi(QEMU_DMI), "sdq")
    assert rec["machine"]["sys_vendor"] == "QEMU"
    assert rec["controller"]["bus"] == "none"
