"""Discovery and safety on hand-built hosts: real tool outputs (fixtures) served by a
ReplayRunner, sysfs/proc values by a ReplayFS."""

from __future__ import annotations

import json

import pytest

from ssdbench.commands.list import human_size
from ssdbench.devices import DriveNotFound, discover, find_drive
from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.devices.lsblk import BLKID_ARGV, LSBLK_ARGV
from ssdbench.system import Host

from .fixtures import FIXTURES, fixture_text

SATA_SYS = "../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/{n}"
USB_SYS = "../devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/{n}"
NVME_SYS = "../devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/{n}"


class FakeMachine:
    """sysfs + proc + commands of an imaginary machine, for discovery tests."""

    def __init__(self) -> None:
        self.fs = FSRecord()
        self.runner = ReplayRunner()
        self.blocks: list[str] = []
        self.lsblk: list[dict[str, object]] = []
        self.fs.files["/proc/self/mountinfo"] = ""
        self.fs.files["/proc/swaps"] = "Filename\tType\tSize\tUsed\tPriority\n"
        self.fs.files["/proc/cmdline"] = "console=tty1 quiet\n"

    def disk(self, name: str, sys: str, *, sectors: int = 1000, rota: int = 0,
             discard: int = 2147450880, parts: tuple[str, ...] = (), major: int = 8,
             minor: int = 0, serial: str = "", label: dict[str, str] | None = None) -> None:
        self.blocks.append(name)
        f = self.fs.files
        base = f"/sys/block/{name}"
        f[f"{base}/size"] = f"{sectors}\n"
        f[f"{base}/queue/logical_block_size"] = "512\n"
        f[f"{base}/queue/physical_block_size"] = "4096\n"
        f[f"{base}/queue/rotational"] = f"{rota}\n"
        f[f"{base}/queue/discard_max_bytes"] = f"{discard}\n"
        f[f"{base}/removable"] = "0\n"
        f[f"{base}/ro"] = "0\n"
        if serial:
            f[f"{base}/serial"] = serial + "\n"
        self.fs.readlinks[base] = sys.format(n=name)
        self.fs.readlinks[f"/sys/dev/block/{major}:{minor}"] = sys.format(n=name)
        self.fs.exists[f"/sys/class/block/{name}"] = True
        self.fs.listdirs[base] = ["device", "holders", "queue", *parts]
        children = []
        for i, p in enumerate(parts, start=1):
            self.fs.exists[f"{base}/{p}/partition"] = True
            self.fs.exists[f"/sys/class/block/{p}/partition"] = True
            self.fs.exists[f"/sys/class/block/{p}"] = True
            self.fs.readlinks[f"/sys/class/block/{p}"] = sys.format(n=name) + "/" + p
            self.fs.readlinks[f"/sys/dev/block/{major}:{minor + i}"] = (
                sys.format(n=name) + "/" + p)
            children.append({"name": p, "kname": p, "type": "part",
                             "label": (label or {}).get(p)})
        self.lsblk.append({"name": name, "kname": name, "type": "disk",
                           "children": children})

    def finish(self) -> Host:
        self.fs.listdirs["/sys/block"] = sorted(self.blocks)
        self.runner.add(LSBLK_ARGV, stdout=json.dumps({"blockdevices": self.lsblk}))
        self.runner.add(BLKID_ARGV, stdout="", returncode=2)  # nothing found
        return Host(self.runner, ReplayFS(self.fs))


def hdparm_fixture(name: str) -> str:
    return fixture_text(f"hdparm/{name}")


def smart_missing(m: FakeMachine, dev: str) -> None:
    m.runner.add(["smartctl", "-j", "-x", dev], returncode=None, outcome="not-found",
                 stderr="smartctl is not installed")


def test_sata_ssd_from_real_hdparm_output() -> None:
    m = FakeMachine()
    m.disk("sda", SATA_SYS, sectors=1000215216)
    m.runner.add(["hdparm", "-I", "/dev/sda"],
                 stdout=hdparm_fixture("hdparm-I_crucial-mx100-512g_ssd_frozen_sanitize.txt"))
    smart_missing(m, "/dev/sda")
    (d,) = discover(m.finish())
    assert (d.transport, d.model, d.serial, d.firmware) == (
        "sata", "Crucial_CT512MX100SSD1", "14330CEF1CD1", "MU01")
    assert d.size_bytes == 1000215216 * 512
    assert d.erase_methods == ("ata-security-erase", "ata-security-erase-enhanced",
                               "ata-sanitize-block", "ata-sanitize-crypto")
    assert d.ata_security is not None and d.ata_security.frozen
    assert d.trim_supported and d.drat and d.rzat
    assert not d.protected and d.erase_refusal == ()
    assert d.consent_id == "14330CEF1CD1"
    assert [p.tool for p in d.problems] == ["smartctl"]
    j = d.to_json()
    assert j["ata_security"] == {
        "supported": True, "enabled": False, "locked": False, "frozen": True,
        "expired": False, "enhanced_supported": True, "erase_minutes": 2,
        "enhanced_erase_minutes": 2, "erase_minutes_lower_bound": False,
        "enhanced_erase_minutes_lower_bound": False}
    assert j["nvme"] is None


def test_usb_drive_is_refused_for_erase_and_bridge_error_kept() -> None:
    m = FakeMachine()
    m.disk("sdb", USB_SYS, sectors=7814037168, rota=1, discard=0)
    m.runner.add(["hdparm", "-I", "/dev/sdb"],
                 stdout=hdparm_fixture("hdparm-I_usb-bridge-rejects-ATA-passthrough_rpi4.txt"))
    m.runner.add(["smartctl", "-j", "-x", "/dev/sdb"], returncode=2, stdout=json.dumps({
        "smartctl": {"exit_status": 2, "messages": [
            {"string": "/dev/sdb: Unknown USB bridge [0x1234:0x5678]", "severity": "error"}]}}))
    (d,) = discover(m.finish())
    assert d.transport == "usb"
    assert d.erase_methods == ()
    assert d.erase_refusal == ("usb-bridge",)
    assert d.ata_security is None and d.model == ""
    kinds = {(p.tool, p.kind) for p in d.problems}
    assert ("hdparm", "pass-through") in kinds
    assert ("smartctl", "parse") in kinds
    assert not d.trim_supported and d.rotational


def test_one_tool_failing_keeps_the_other_drives() -> None:
    m = FakeMachine()
    m.disk("sda", SATA_SYS, minor=0)
    m.disk("sdb", SATA_SYS, minor=16)
    m.runner.add(["hdparm", "-I", "/dev/sda"], returncode=None, outcome="timeout")
    m.runner.add(["hdparm", "-I", "/dev/sdb"],
                 stdout=hdparm_fixture("hdparm-I_apacer-AS340-120g_ssd_not-frozen.txt"))
    smart_missing(m, "/dev/sda")
    sda, sdb = discover(m.finish())
    assert sda.problems[0].kind == "timeout" and sda.erase_refusal == ("no-identify",)
    assert sdb.model == "Apacer AS340 120GB"
    assert sdb.erase_methods == ("ata-security-erase", "ata-security-erase-enhanced")
    # smartctl is not installed: asked once, not for every drive
    assert m.runner.calls.count(("smartctl", "-j", "-x", "/dev/sdb")) == 0


def nvme_machine(id_ctrl: dict[str, object], transport: str = "pcie",
                 nvme_list: str = "nvme/nvme-list-json_v1x-simple_seagate-firecuda530-x2.json",
                 ) -> FakeMachine:
    m = FakeMachine()
    m.disk("nvme0n1", NVME_SYS, major=259, sectors=2000)
    m.fs.files["/sys/class/nvme/nvme0/transport"] = transport + "\n"
    m.fs.files["/sys/block/nvme0n1/nsid"] = "1\n"
    m.runner.add(["nvme", "list", "-o", "json"], stdout=fixture_text(nvme_list))
    m.runner.add(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"], stdout=json.dumps(id_ctrl))
    m.runner.add(["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"], stdout=json.dumps({
        "nsze": 2000, "ncap": 2000, "nuse": 0, "flbas": 0, "dlfeat": 1,
        "lbafs": [{"ms": 0, "ds": 9, "rp": 0}]}))
    smart_missing(m, "/dev/nvme0n1")
    return m


PM1733 = {"sn": "S5RTNC0T104269", "mn": "SAMSUNG MZWLJ7T6HALA-00AU3", "fr": "EPK9CR5Q",
          "oacs": 0x5F, "fna": 0x4, "sanicap": 0x3, "oncs": 0x7F, "nn": 32}


def test_nvme_erase_methods_from_oacs_fna_sanicap() -> None:
    (d,) = discover(nvme_machine(PM1733).finish())
    assert (d.transport, d.model, d.serial) == (
        "nvme", "SAMSUNG MZWLJ7T6HALA-00AU3", "S5RTNC0T104269")
    assert d.erase_methods == ("nvme-sanitize-block", "nvme-sanitize-crypto",
                               "nvme-format-user-data", "nvme-format-crypto")
    assert d.trim_supported and d.rzat
    j = d.to_json()["nvme"]
    assert (j["oacs"], j["fna"], j["sanicap"], j["oncs"], j["dlfeat"]) == (0x5F, 4, 3, 0x7F, 1)
    assert j["namespaces"][0]["nsid"] == 1 and j["namespaces"][0]["size_bytes"] == 2000 * 512


def test_nvme_over_fabrics_gets_no_erase_method() -> None:
    (d,) = discover(nvme_machine(PM1733, transport="tcp").finish())
    assert d.erase_methods == () and "nvme-not-pcie" in d.erase_refusal


def test_nvme_id_ctrl_failure_falls_back_to_nvme_list() -> None:
    m = FakeMachine()
    m.disk("nvme0n1", NVME_SYS, major=259)
    m.fs.files["/sys/class/nvme/nvme0/transport"] = "pcie\n"
    m.runner.add(["nvme", "list", "-o", "json"], stdout=fixture_text(
        "nvme/nvme-list-json_v1x-simple_seagate-firecuda530-x2.json"))
    m.runner.add(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"], returncode=1,
                 stderr="NVMe status: INVALID_OPCODE: The associated command opcode field "
                        "is not valid(0x2001)\n")
    m.runner.add(["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"], returncode=1)
    smart_missing(m, "/dev/nvme0n1")
    (d,) = discover(m.finish())
    assert d.serial == "XXX00YYY" and d.nvme is None
    assert d.erase_refusal == ("no-identify",)
    assert any("INVALID_OPCODE" in p.message for p in d.problems)


NEGATIVE_LIST = "nvme/DERIVED_nvme-list-json_v2x-early_seagate-firecuda530-x2_negative-sizes.json"


def test_negative_nvme_list_sizes_are_never_used_and_are_reported() -> None:
    (d,) = discover(nvme_machine(PM1733, nvme_list=NEGATIVE_LIST).finish())
    assert d.size_bytes == 2000 * 512  # sysfs
    (p,) = [p for p in d.problems if p.tool == "nvme list"]
    assert p.kind == "implausible" and "-2147483648" in p.message


def test_size_without_sysfs_falls_back_to_id_ns_then_unknown() -> None:
    m = nvme_machine(PM1733)
    m.fs.files["/sys/block/nvme0n1/size"] = None  # unreadable
    (d,) = discover(m.finish(), include_all=True)
    assert d.size_bytes == 2000 * 512  # id-ns: nsze 2000 x 512-byte LBAs
    m = FakeMachine()
    m.disk("nvme0n1", NVME_SYS, major=259)
    m.fs.files["/sys/block/nvme0n1/size"] = None
    m.fs.files["/sys/class/nvme/nvme0/transport"] = "pcie\n"
    m.runner.add(["nvme", "list", "-o", "json"], stdout=fixture_text(NEGATIVE_LIST))
    m.runner.add(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"], stdout=json.dumps(PM1733))
    m.runner.add(["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"], returncode=1)
    smart_missing(m, "/dev/nvme0n1")
    (d,) = discover(m.finish(), include_all=True)
    assert d.size_bytes == 0  # unknown: never the negative value nvme list printed
    assert human_size(d.size_bytes) == "unknown"


def test_safety_mounted_swap_holder_results_and_boot_hint() -> None:
    m = FakeMachine()
    m.disk("sda", SATA_SYS, parts=("sda1", "sda2"), minor=0)
    m.disk("sdb", SATA_SYS, parts=("sdb1",), minor=16)
    m.disk("sdc", SATA_SYS, parts=("sdc1",), minor=32, label={"sdc1": "SSDRESULTS"})
    m.disk("sdd", SATA_SYS, minor=48)
    m.disk("sde", SATA_SYS, minor=64, serial="BOOTSTICK")
    m.disk("sdf", SATA_SYS, minor=80)
    for n in "abcdf":
        smart_missing(m, f"/dev/sd{n}")
        m.runner.add(["hdparm", "-I", f"/dev/sd{n}"], stdout=hdparm_fixture(
            "hdparm-I_apacer-AS340-120g_ssd_not-frozen.txt"))
    m.runner.add(["hdparm", "-I", "/dev/sde"], returncode=None, outcome="not-found")
    # sda1 mounted at / by major:minor; sda2 is swap
    m.fs.files["/proc/self/mountinfo"] = (
        "27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
        "30 27 0:40 / /mnt/my\\040data rw - ext4 /dev/mapper/vg-data rw\n")
    m.fs.files["/proc/swaps"] = "Filename Type Size Used Priority\n/dev/sda2 partition 1000 0 -2\n"
    # LVM: dm-0 on sdb1, mounted by its /dev/mapper name (anonymous 0:40 in mountinfo)
    m.fs.listdirs["/sys/class/block/sdb1/holders"] = ["dm-0"]
    m.fs.readlinks["/dev/mapper/vg-data"] = "../dm-0"
    m.fs.exists["/sys/class/block/dm-0"] = True
    m.fs.listdirs["/sys/class/block/dm-0/slaves"] = ["sdb1"]
    # sdd is a member of an md array
    m.fs.listdirs["/sys/class/block/sdd/holders"] = ["md127"]
    # the boot stick named by serial on the kernel command line
    m.fs.files["/proc/cmdline"] = "quiet ssdbench.boot=BOOTSTICK\n"
    drives = {d.name: d for d in discover(m.finish())}
    assert drives["sda"].protect_reasons == ("boot-medium", "mounted:/", "swap")
    assert drives["sdb"].protect_reasons == ("mounted:/mnt/my data", "holder:dm-0")
    assert drives["sdc"].protect_reasons == ("results-partition",)
    assert drives["sdd"].protect_reasons == ("holder:md127",)
    assert drives["sde"].protect_reasons == ("boot-medium",)
    assert drives["sdf"].protect_reasons == () and not drives["sdf"].protected
    assert all(drives[n].protected for n in ("sda", "sdb", "sdc", "sdd", "sde"))


def test_boot_device_file_and_label_hint() -> None:
    m = FakeMachine()
    m.disk("sda", SATA_SYS, parts=("sda1",), minor=0, label={"sda1": "SSDRESULTS"})
    m.disk("sdb", SATA_SYS, minor=16)
    for n in "ab":
        smart_missing(m, f"/dev/sd{n}")
        m.runner.add(["hdparm", "-I", f"/dev/sd{n}"], returncode=None, outcome="not-found")
    m.fs.files["/proc/cmdline"] = "ssdbench.boot=LABEL=SSDRESULTS\n"
    m.fs.files["/run/initramfs/ssdbench-boot-device"] = "/dev/sdb\n"
    drives = {d.name: d for d in discover(m.finish())}
    assert drives["sda"].protect_reasons == ("boot-medium", "results-partition")
    assert drives["sdb"].protect_reasons == ("boot-medium",)


def test_hidden_devices_and_all() -> None:
    m = FakeMachine()
    m.disk("loop0", "../devices/virtual/block/{n}", sectors=0, major=7)
    m.disk("loop1", "../devices/virtual/block/{n}", sectors=2048, major=7, minor=1)
    m.disk("zram0", "../devices/virtual/block/{n}", sectors=2048, major=253)
    m.fs.files["/sys/block/loop1/loop/backing_file"] = "/tmp/x.img\n"
    host = m.finish()
    names = [d.name for d in discover(host)]
    assert names == ["loop1"]
    (loop1,) = discover(host)
    assert loop1.consent_id == "loop1" and loop1.loop_backing_file == "/tmp/x.img"
    assert loop1.erase_refusal == ("no-erase-command",)
    assert [d.name for d in discover(host, include_all=True)] == ["loop0", "loop1", "zram0"]


def test_find_drive_by_path_name_serial_and_clear_error() -> None:
    m = FakeMachine()
    m.disk("sda", SATA_SYS)
    m.runner.add(["hdparm", "-I", "/dev/sda"],
                 stdout=hdparm_fixture("hdparm-I_apacer-AS340-120g_ssd_not-frozen.txt"))
    smart_missing(m, "/dev/sda")
    drives = discover(m.finish())
    for spec in ("/dev/sda", "sda", "270E0788096C03674465"):
        assert find_drive(drives, spec).name == "sda"
    with pytest.raises(DriveNotFound, match=r"/dev/sda \(270E0788096C03674465\)"):
        find_drive(drives, "/dev/nvme9n1")


def test_fixture_dir_is_inside_the_repo() -> None:
    assert "shared" not in FIXTURES.parts


def test_only_restricts_every_command_to_the_named_disks() -> None:
    """``only`` (the station's free drives, the erase stage's own drive): lsblk and blkid are
    given the devices they may read, and no other drive gets a command (`nvme list` would
    identify every namespace, hdparm/smartctl are per drive)."""
    m = FakeMachine()
    m.disk("sda", SATA_SYS, serial="S-A")
    m.disk("sdb", SATA_SYS, parts=("sdb1",), minor=16, serial="S-B")
    m.disk("nvme0n1", NVME_SYS, major=259, minor=0, serial="N-0")
    host = m.finish()
    m.runner.add([*LSBLK_ARGV, "/dev/sdb"], stdout=json.dumps({"blockdevices": m.lsblk[1:2]}))
    m.runner.add([*BLKID_ARGV, "/dev/sdb", "/dev/sdb1"], stdout="", returncode=2)
    m.runner.add(["hdparm", "-I", "/dev/sdb"],
                 stdout=hdparm_fixture("hdparm-I_crucial-mx100-512g_ssd_frozen_sanitize.txt"))
    smart_missing(m, "/dev/sdb")
    (d,) = discover(host, only={"sdb"})
    assert (d.name, d.serial) == ("sdb", "14330CEF1CD1")
    assert not [p for p in d.problems if p.tool in ("lsblk", "blkid")]
    reached = {a for argv in m.runner.calls for a in argv
               if a.startswith("/dev/") and a != "/dev/null"}
    assert reached == {"/dev/sdb", "/dev/sdb1"}, m.runner.calls


def test_only_with_nothing_to_look_at_runs_no_command() -> None:
    m = FakeMachine()
    m.disk("sda", SATA_SYS)
    host = m.finish()
    assert discover(host, only=()) == []
    assert m.runner.calls == []


def test_only_parses_real_restricted_lsblk_output() -> None:
    """The real answer of lsblk given devices (one pulled: exit 64) on the machine of the
    this-machine bundle: discovery of vda alone finds the drive as the full discovery did."""
    from ssdbench.devices.bundle import load_bundle

    from .fixtures import BUNDLES

    bundle = load_bundle(BUNDLES / "this-machine-virtio-loop")
    (full,) = [d for d in discover(Host(bundle.runner, bundle.fs)) if d.name == "vda"]
    bundle.runner.add([*LSBLK_ARGV, "/dev/vda"], returncode=64, stdout=fixture_text(
        "lsblk/lsblk-json-O_named-devices_vda+missing_exit64.json"))
    bundle.runner.add([*BLKID_ARGV, "/dev/vda"], stdout="")  # real: nothing, exit 0
    (only,) = discover(Host(bundle.runner, bundle.fs), only={"vda"})
    assert only.problems == ()
    assert only.to_json() == full.to_json()
