"""Drive discovery: sysfs + lsblk + hdparm + nvme-cli + smartctl → `Drive`.

Every command goes through ``host.runner`` with a timeout, every file through
``host.fs``; a tool failing for one drive is recorded in ``Drive.problems`` and the drive
is still listed.  See docs/devices.md for what is read from where.
"""

from __future__ import annotations

import os
import os.path
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from ssdbench.devices import safety
from ssdbench.devices.hdparm import PassThroughUnavailable, parse_hdparm_identify
from ssdbench.devices.lsblk import (
    BLKID_ARGV,
    BLKID_OK_CODES,
    LSBLK_ARGV,
    LSBLK_SOME_OK_CODES,
    LsblkDevice,
    parse_blkid_export,
    parse_lsblk_json,
)
from ssdbench.devices.model import (
    ATA_SANITIZE_BLOCK,
    ATA_SANITIZE_CRYPTO,
    ATA_SECURITY_ERASE,
    ATA_SECURITY_ERASE_ENHANCED,
    NVME_FORMAT_CRYPTO,
    NVME_FORMAT_USER_DATA,
    NVME_SANITIZE_BLOCK,
    NVME_SANITIZE_CRYPTO,
    NVME_SANITIZE_OVERWRITE,
    SCSI_FORMAT,
    SCSI_SANITIZE,
    SCSI_SANITIZE_BLOCK,
    SCSI_SANITIZE_CRYPTO,
    SCSI_SANITIZE_OVERWRITE,
    AtaIdentify,
    Drive,
    NvmeController,
    NvmeInfo,
    NvmeNamespace,
    ParseError,
    SmartSnapshot,
    ToolProblem,
    transport_place,
    world_wide_name,
)
from ssdbench.devices.nvme import (
    NvmeListEntry,
    parse_id_ctrl_json,
    parse_id_ns_json,
    parse_nvme_list_json,
    sane_size,
)
from ssdbench.devices.scsi import Capacity, Opcodes, parse_opcodes, parse_readcap
from ssdbench.devices.sed import read_sed
from ssdbench.devices.smart import (
    SMARTCTL_FATAL_BITS,
    SMARTCTL_OK_CODES,
    SmartIdentity,
    parse_smartctl_json,
)
from ssdbench.system import CommandError, CommandNotFound, CommandTimeout, Host

LSBLK_TIMEOUT_S = 30.0
HDPARM_TIMEOUT_S = 20.0
NVME_TIMEOUT_S = 20.0
SMARTCTL_TIMEOUT_S = 60.0
SG_TIMEOUT_S = 20.0

# Never listed: RAM disks, compressed swap, device-mapper/md (they are holders, the disks
# below them are listed and protected), optical and floppy drives.
HIDDEN_PREFIXES = ("ram", "zram", "dm-", "md", "sr", "fd")

# Erase refusal codes (why secure erase will not be attempted; see docs/devices.md).
REFUSE_USB = "usb-bridge"
REFUSE_FABRICS = "nvme-not-pcie"
REFUSE_VIRTUAL = "no-erase-command"
# A SATA drive behind a SAS/SCSI layer (its INQUIRY vendor is "ATA": a SCSI/ATA Translation
# layer, T10 SAT, answers so) that is not opted in to ATA pass-through. SCSI SANITIZE is not
# sent through the translation: the drive keeps the ATA path, by its opt-in.
REFUSE_SCSI = "scsi-not-supported"
SAT_VENDOR = "ATA"
REFUSE_PROTECTED = "protected"  # a SAS/SCSI drive that is protected: no erase offered
# SANITIZE service action -> method, in the erase's order (block, crypto, overwrite)
SCSI_SANITIZE_BY_ACTION = {0x02: SCSI_SANITIZE_BLOCK, 0x03: SCSI_SANITIZE_CRYPTO,
                           0x01: SCSI_SANITIZE_OVERWRITE}
# the problem line of a drive formatted with blocks the kernel cannot use (520/528)
REFORMAT_KIND = "block-size"
REFUSE_NO_IDENTIFY = "no-identify"
REFUSE_NO_METHOD = "no-erase-method"
ATA_PASSTHROUGH_ENV = "SSDBENCH_ATA_PASSTHROUGH"
REFUSE_SED_LOCKED = "sed-locked"  # TCG Opal/Enterprise locked: unlock or PSID revert first


class DriveNotFound(LookupError):
    """`find_drive` found nothing (the message names the drives that exist)."""


T = TypeVar("T")
P = ParamSpec("P")


@dataclass
class _Probe:
    """Raw facts gathered for one disk before it becomes a Drive."""

    name: str
    problems: list[ToolProblem] = field(default_factory=list)

    def attempt(
        self, tool: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T | None:
        try:
            return fn(*args, **kwargs)
        except CommandTimeout as exc:
            self.problems.append(ToolProblem(tool, "timeout", str(exc)))
        except CommandNotFound as exc:
            self.problems.append(ToolProblem(tool, "not-found", str(exc)))
        except CommandError as exc:
            self.problems.append(ToolProblem(tool, "failed", str(exc)))
        except PassThroughUnavailable as exc:
            self.problems.append(ToolProblem(tool, "pass-through", str(exc)))
        except ParseError as exc:
            self.problems.append(ToolProblem(tool, "parse", str(exc)))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                RecursionError) as exc:
            # a parser that met output it did not expect (a drive reports anything): the
            # drive is listed with the reason, discovery goes on (docs/security.md)
            self.problems.append(ToolProblem(
                tool, "parse", f"unexpected output: {type(exc).__name__}: {exc}"))
        return None


def _read_int(host: Host, path: str) -> int | None:
    text = host.fs.read_text(path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def _read_str(host: Host, path: str) -> str:
    return (host.fs.read_text(path) or "").strip()


def _transport(name: str, syspath: str, tran: str | None, nvme_transport: str) -> str:
    if name.startswith("loop"):
        return "loop"
    if name.startswith("nvme"):
        return "nvme"
    if "/usb" in syspath or tran == "usb":
        return "usb"
    if tran in ("sata", "ata", "sas", "nvme", "virtio", "mmc"):
        return tran
    if tran in ("spi", "fc", "iscsi", "srp"):
        return "scsi"
    if re.search(r"/ata\d+/", syspath):
        return "sata"
    if "/virtio" in syspath:
        return "virtio"
    if name.startswith("mmcblk"):
        return "mmc"
    if "/end_device-" in syspath or "/sas_" in syspath:
        return "sas"
    if re.search(r"/host\d+/target", syspath):
        return "scsi"
    return "other"


def _vpd_serial(host: Host, name: str) -> str:
    """The Unit Serial Number VPD page (0x80) the kernel caches: 4 header bytes, then ASCII."""
    raw = host.fs.read_text(f"/sys/block/{name}/device/vpd_pg80") or ""
    return raw[4:].strip(" \0\n") if len(raw) > 4 else ""


def _usb_serial(host: Host, syspath: str) -> str:
    """The USB device's iSerial: sysfs `serial` of the `2-1`-style ancestor directory."""
    path = os.path.normpath(os.path.join("/sys/block", syspath))
    while path not in ("/", "/sys", ""):
        if re.fullmatch(r"\d+-[\d.]+", os.path.basename(path)):
            return _read_str(host, f"{path}/serial")
        path = os.path.dirname(path)
    return ""


def is_listed(host: Host, name: str, include_all: bool = False) -> bool:
    """Whether `ssdbench list` shows the block device (always, with ``include_all``)."""
    # Read both values either way, so a bundle recorded with include_all replays both.
    hidden = _read_int(host, f"/sys/block/{name}/hidden") == 1  # nvme multipath paths
    size = _read_int(host, f"/sys/block/{name}/size") or 0  # 0: detached loop, no medium
    if include_all:
        return True
    if size == 0 and _maybe_unusable_scsi_disk(host, name):
        return True
    return not (name.startswith(HIDDEN_PREFIXES) or hidden or size == 0)


def _maybe_unusable_scsi_disk(host: Host, name: str) -> bool:
    """A disk of capacity 0 that may be a SAS/SCSI drive with blocks the kernel cannot use
    (520/528 bytes: sd reports capacity 0), not an empty card reader: an ``sd`` disk, not
    removable, not behind USB. Discovery then reads its block length (sg_readcap)."""
    if not re.fullmatch(r"sd[a-z]+", name):
        return False
    if _read_int(host, f"/sys/block/{name}/removable") != 0:
        return False
    return "/usb" not in (host.fs.readlink(f"/sys/block/{name}") or "/usb")


def _partitions(host: Host, name: str) -> tuple[str, ...]:
    return tuple(
        entry
        for entry in host.fs.listdir(f"/sys/block/{name}")
        if entry.startswith(name) and host.fs.exists(f"/sys/block/{name}/{entry}/partition")
    )


def _smart(host: Host, probe: _Probe, path: str) -> tuple[SmartSnapshot, SmartIdentity] | None:
    def run() -> tuple[SmartSnapshot, SmartIdentity]:
        result = host.runner.run(
            ["smartctl", "-j", "-x", path], ok_codes=SMARTCTL_OK_CODES,
            timeout=SMARTCTL_TIMEOUT_S,
        )
        snapshot, identity = parse_smartctl_json(result.text)
        if result.returncode & SMARTCTL_FATAL_BITS & 0x3:
            msg = "; ".join(snapshot.messages) or f"exit status {result.returncode}"
            raise ParseError(f"smartctl could not read {path}: {msg}")
        return snapshot, identity

    return probe.attempt("smartctl", run)


def _ata_erase_methods(ata: AtaIdentify) -> list[str]:
    methods = []
    sec = ata.security
    if sec is not None and sec.supported:
        methods.append(ATA_SECURITY_ERASE)
        if sec.enhanced_supported:
            methods.append(ATA_SECURITY_ERASE_ENHANCED)
    if ata.sanitize.supported:
        if ata.sanitize.block_erase:
            methods.append(ATA_SANITIZE_BLOCK)
        if ata.sanitize.crypto_scramble:
            methods.append(ATA_SANITIZE_CRYPTO)
    return methods


def _nvme_erase_methods(ctrl: NvmeController) -> list[str]:
    methods = []
    if ctrl.sanitize_block:
        methods.append(NVME_SANITIZE_BLOCK)
    if ctrl.sanitize_crypto:
        methods.append(NVME_SANITIZE_CRYPTO)
    if ctrl.sanitize_overwrite:
        methods.append(NVME_SANITIZE_OVERWRITE)
    if ctrl.format_supported:
        methods.append(NVME_FORMAT_USER_DATA)
        if ctrl.crypto_erase_supported:
            methods.append(NVME_FORMAT_CRYPTO)
    return methods


def _sg_opcodes(host: Host, path: str) -> Opcodes:
    """REPORT SUPPORTED OPERATION CODES; a drive that answers it with an error does not
    support it (optional in SPC-4): nothing is known, ``listed`` False."""
    try:
        result = host.runner.run(["sg_opcodes", path], timeout=SG_TIMEOUT_S)
    except (CommandNotFound, CommandTimeout):
        raise
    except CommandError:
        return Opcodes(False)
    return parse_opcodes(result.text)


def _sg_readcap(host: Host, path: str) -> Capacity:
    result = host.runner.run(["sg_readcap", "-l", path], timeout=SG_TIMEOUT_S)
    return parse_readcap(result.text)


def _scsi_erase_methods(opcodes: Opcodes) -> list[str]:
    """``scsi-sanitize`` (the erase takes block, else crypto, else overwrite) and each
    service action the drive lists; a drive that did not answer REPORT SUPPORTED OPERATION
    CODES is offered ``scsi-sanitize`` (the erase tries each service action in turn, an
    ILLEGAL REQUEST moves to the next, the record names the one that ran). A drive that
    lists no SANITIZE at all but FORMAT UNIT (older SAS drives) is offered ``scsi-format``
    (Clear at most: docs/erase.md); one that lists neither, nothing."""
    if not opcodes.listed:
        return [SCSI_SANITIZE]
    if not opcodes.sanitize:
        return [SCSI_FORMAT] if opcodes.format_unit else []
    return [SCSI_SANITIZE, *(m for a, m in SCSI_SANITIZE_BY_ACTION.items()
                             if a in opcodes.sanitize_actions)]


def reformat_problem(block_size: int) -> str:
    """The problem line of a drive the kernel shows with capacity 0 for its block length."""
    return (f"{block_size}-byte sectors: reformat to 512 with the erase plan's "
            "scsi_reformat_512 (the kernel shows capacity 0 until then)")


def _id_ctrl(host: Host, ctrl: str) -> NvmeController:
    argv = ["nvme", "id-ctrl", f"/dev/{ctrl}", "-o", "json"]
    return parse_id_ctrl_json(host.runner.run(argv, timeout=NVME_TIMEOUT_S).text)


def _id_ns(host: Host, name: str, nsid: int) -> NvmeNamespace:
    argv = ["nvme", "id-ns", f"/dev/{name}", "-o", "json"]
    return parse_id_ns_json(host.runner.run(argv, timeout=NVME_TIMEOUT_S).text,
                            nsid=nsid, name=name)


def _hdparm_identify(host: Host, path: str) -> AtaIdentify:
    result = host.runner.run(["hdparm", "-I", path], timeout=HDPARM_TIMEOUT_S)
    return parse_hdparm_identify(result.text + result.stderr_text)


def ata_passthrough_optins(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The drives (serials, kernel names or /dev paths) in ``SSDBENCH_ATA_PASSTHROUGH``
    (comma- or space-separated): SAS/SCSI-transport drives to treat as SATA drives behind an
    HBA that passes ATA commands through (docs/devices.md)."""
    raw = (os.environ if env is None else env).get(ATA_PASSTHROUGH_ENV, "")
    return frozenset(x for x in re.split(r"[\s,]+", raw) if x)


def discover(
    host: Host, *, include_all: bool = False, ata_passthrough: Collection[str] | None = None,
    only: Collection[str] | None = None,
) -> list[Drive]:
    """Every drive ssdbench can show, with identity, capabilities and safety.

    Hidden unless ``include_all``: ram/zram/dm/md/sr/fd devices, nvme multipath path
    devices, and devices of size 0 (detached loop devices, empty card readers) but a fixed
    ``sd`` disk (a SAS drive of 520-byte blocks shows capacity 0).
    ``ata_passthrough`` (default: :func:`ata_passthrough_optins`) opts SAS/SCSI drives in
    to ATA pass-through by serial, kernel name or path; a SATA drive behind a SAS/SCSI layer
    (INQUIRY vendor ``ATA``) that is not opted in keeps the ``scsi-not-supported`` refusal;
    any other SAS/SCSI drive is asked ``sg_opcodes`` and offered ``scsi-sanitize``, or
    ``scsi-format`` when it lists no SANITIZE but FORMAT UNIT (never when it is
    protected), and one of capacity 0 is asked ``sg_readcap`` (520/528-byte
    blocks: listed with a problem line, ``Drive.scsi_block_size``).

    ``only`` (kernel names) restricts discovery to those disks, and no command reaches any
    other device: lsblk and blkid are given the disks (and their partitions) to read, and
    ``nvme list`` (which identifies every namespace) is not run. The station uses it for the
    drives not being erased, the erase stage for its own drive. Nothing to look at runs
    nothing.
    """
    optins = ata_passthrough_optins() if ata_passthrough is None else frozenset(ata_passthrough)
    names = [n for n in host.fs.listdir("/sys/block")
             if (only is None or n in only) and is_listed(host, n, include_all)]
    lsblk_argv = list(LSBLK_ARGV)
    lsblk_ok: tuple[int, ...] = (0,)
    blkid_argv = list(BLKID_ARGV)
    if only is not None:
        lsblk_argv += [f"/dev/{n}" for n in names]
        lsblk_ok = LSBLK_SOME_OK_CODES  # a drive pulled since /sys/block was read
        blkid_argv += [dev for n in names
                       for dev in (f"/dev/{n}", *(f"/dev/{p}" for p in _partitions(host, n)))]
    all_disks = host.fs.listdir("/sys/block")
    global_problems: list[ToolProblem] = []
    lsblk_by_name: dict[str, LsblkDevice] = {}
    labels: dict[str, str] = {}
    uuids: dict[str, str] = {}
    if names:
        lsblk_probe = _Probe("lsblk")
        tree = lsblk_probe.attempt(
            "lsblk",
            lambda: parse_lsblk_json(
                host.runner.run(lsblk_argv, ok_codes=lsblk_ok, timeout=LSBLK_TIMEOUT_S).text
            ),
        )
        global_problems.extend(lsblk_probe.problems)
        for top in tree or []:
            for dev in top.walk():
                lsblk_by_name.setdefault(dev.kname, dev)
                if dev.label:
                    labels[dev.kname] = dev.label
                if dev.uuid:
                    uuids[dev.kname] = dev.uuid
        if not labels and not uuids:
            # No udev database (BusyBox mdev): lsblk knows no labels; probe with blkid.
            blkid_probe = _Probe("blkid")
            probed = blkid_probe.attempt(
                "blkid",
                lambda: parse_blkid_export(host.runner.run(
                    blkid_argv, ok_codes=BLKID_OK_CODES, timeout=LSBLK_TIMEOUT_S).text),
            )
            global_problems.extend(blkid_probe.problems)
            for kname, values in (probed or {}).items():
                if values.get("LABEL"):
                    labels[kname] = values["LABEL"]
                if values.get("UUID"):
                    uuids[kname] = values["UUID"]
    facts = safety.gather(host.fs, all_disks, labels, uuids)

    # NVMe: one id-ctrl per controller, one id-ns per namespace, `nvme list` as fallback.
    nvme_names = [n for n in names if re.fullmatch(r"nvme\d+n\d+", n)]
    controllers: dict[str, NvmeController | None] = {}
    ctrl_problems: dict[str, list[ToolProblem]] = {}
    namespaces: dict[str, NvmeNamespace] = {}
    ns_problems: dict[str, list[ToolProblem]] = {}
    nvme_list: dict[str, NvmeListEntry] = {}
    if nvme_names and only is None:
        list_probe = _Probe("nvme list")
        entries = list_probe.attempt(
            "nvme list",
            lambda: parse_nvme_list_json(
                host.runner.run(["nvme", "list", "-o", "json"], timeout=NVME_TIMEOUT_S).text
            ),
        )
        nvme_list = {os.path.basename(e.path): e for e in entries or []}
        global_problems.extend(list_probe.problems)
    for name in nvme_names:
        ctrl = "nvme" + re.findall(r"nvme(\d+)n", name)[0]
        if ctrl not in controllers:
            p = _Probe(ctrl)
            controllers[ctrl] = p.attempt("nvme id-ctrl", _id_ctrl, host, ctrl)
            ctrl_problems[ctrl] = p.problems
        nsid = _read_int(host, f"/sys/block/{name}/nsid") or int(name.rsplit("n", 1)[1])
        p = _Probe(name)
        ns = p.attempt("nvme id-ns", _id_ns, host, name, nsid)
        if ns is not None:
            namespaces[name] = ns
        ns_problems[name] = p.problems

    smartctl_missing = False
    drives = []
    for name in names:
        probe = _Probe(name)
        path = f"/dev/{name}"
        syspath = host.fs.readlink(f"/sys/block/{name}") or ""
        lb = lsblk_by_name.get(name)
        nvme_ctrl_name = ""
        nvme_transport = ""
        if name in nvme_names:
            nvme_ctrl_name = "nvme" + re.findall(r"nvme(\d+)n", name)[0]
            nvme_transport = _read_str(host, f"/sys/class/nvme/{nvme_ctrl_name}/transport")
        transport = _transport(name, syspath, lb.transport if lb else None, nvme_transport)
        size = (_read_int(host, f"/sys/block/{name}/size") or 0) * 512
        logical = _read_int(host, f"/sys/block/{name}/queue/logical_block_size") or 512
        physical = _read_int(host, f"/sys/block/{name}/queue/physical_block_size") or logical
        rotational = _read_int(host, f"/sys/block/{name}/queue/rotational") == 1
        discard_max = _read_int(host, f"/sys/block/{name}/queue/discard_max_bytes") or 0
        removable = _read_int(host, f"/sys/block/{name}/removable") == 1
        read_only = _read_int(host, f"/sys/block/{name}/ro") == 1
        partitions = _partitions(host, name)
        model = _read_str(host, f"/sys/block/{name}/device/model")
        vendor = _read_str(host, f"/sys/block/{name}/device/vendor")
        serial = _read_str(host, f"/sys/block/{name}/device/serial") or _read_str(
            host, f"/sys/block/{name}/serial"
        )
        firmware = _read_str(host, f"/sys/block/{name}/device/firmware_rev") or _read_str(
            host, f"/sys/block/{name}/device/rev"
        )
        if lb is not None:
            model = model or (lb.model or "")
            serial = serial or (lb.serial or "")
            firmware = firmware or (lb.revision or "")
        if transport == "usb" and not serial:
            serial = _usb_serial(host, syspath)
        if not serial and transport in ("sas", "scsi"):
            serial = _vpd_serial(host, name)
        passthrough = transport in ("sas", "scsi") and bool({serial, name, path} & optins)
        # a SATA drive behind SAT (INQUIRY vendor "ATA") keeps the ATA path (its opt-in)
        native_scsi = (transport in ("sas", "scsi") and not passthrough
                       and vendor.upper() != SAT_VENDOR)
        backing = None
        if transport == "loop":
            backing = _read_str(host, f"/sys/block/{name}/loop/backing_file") or None

        ata: AtaIdentify | None = None
        nvme: NvmeInfo | None = None
        methods: list[str] = []
        refusal: list[str] = []
        trim_device: bool | None = None
        if transport in ("sata", "ata", "usb") or passthrough:
            ata = probe.attempt("hdparm", _hdparm_identify, host, path)
            if ata is not None:
                model, serial, firmware = ata.model, ata.serial or serial, ata.firmware
                trim_device = ata.trim_supported
                if ata.rotation_rpm is not None:
                    rotational = ata.rotation_rpm != 0
                if transport != "usb":
                    methods = _ata_erase_methods(ata)
            elif transport != "usb":
                refusal.append(REFUSE_NO_IDENTIFY)
        elif transport == "nvme":
            ctrl = controllers.get(nvme_ctrl_name)
            probe.problems.extend(ctrl_problems.get(nvme_ctrl_name, []))
            probe.problems.extend(ns_problems.get(name, []))
            entry = nvme_list.get(name)
            if entry is not None and entry.size_problem:
                probe.problems.append(ToolProblem("nvme list", "implausible",
                                                  entry.size_problem))
            if size <= 0:  # no size in sysfs: id-ns, then nvme list, else unknown (0)
                ns_size = namespaces[name].size_bytes if name in namespaces else None
                size = (sane_size(ns_size) or sane_size(entry.size_bytes if entry else None)
                        or 0)
            if ctrl is not None:
                model = ctrl.model or model
                serial, firmware = ctrl.serial or serial, ctrl.firmware or firmware
                trim_device = ctrl.dsm_supported
                ns_of_ctrl = tuple(
                    namespaces[n] for n in nvme_names
                    if n in namespaces and n.startswith(nvme_ctrl_name + "n")
                )
                nvme = NvmeInfo(
                    controller=ctrl,
                    controller_name=nvme_ctrl_name,
                    controller_transport=nvme_transport,
                    namespaces=ns_of_ctrl,
                    nsid=namespaces[name].nsid if name in namespaces else None,
                )
                if nvme_transport in ("pcie", ""):
                    methods = _nvme_erase_methods(ctrl)
            elif entry is not None:
                model, serial, firmware = entry.model, entry.serial, entry.firmware
                refusal.append(REFUSE_NO_IDENTIFY)
            else:
                refusal.append(REFUSE_NO_IDENTIFY)
            if nvme_transport not in ("pcie", ""):
                refusal.append(REFUSE_FABRICS)
        scsi_capacity: Capacity | None = None
        if native_scsi and safety.protect_reasons(host.fs, facts, name, partitions, serial):
            refusal.append(REFUSE_PROTECTED)  # the boot disk, a mounted one: never offered
        elif native_scsi:
            opcodes = probe.attempt("sg_opcodes", _sg_opcodes, host, path)
            if opcodes is not None:
                methods = _scsi_erase_methods(opcodes)
            if size == 0:  # sd shows 520/528-byte drives with capacity 0: ask the drive
                scsi_capacity = probe.attempt("sg_readcap", _sg_readcap, host, path)

        smart: SmartSnapshot | None = None
        if transport not in ("loop", "virtio", "mmc", "other") and not smartctl_missing:
            got = _smart(host, probe, path)
            if got is not None:
                smart, ident = got
                model = model or ident.model
                serial = serial or ident.serial
                firmware = firmware or ident.firmware
            elif probe.problems and probe.problems[-1].kind == "not-found":
                smartctl_missing = True

        if transport == "usb":
            refusal.append(REFUSE_USB)
        elif transport in ("virtio", "loop", "mmc", "other"):
            refusal.append(REFUSE_VIRTUAL)
        elif transport in ("sas", "scsi") and not passthrough and not native_scsi:
            refusal.append(REFUSE_SCSI)
        if scsi_capacity is not None and not scsi_capacity.kernel_usable:
            probe.problems.append(ToolProblem("sg_readcap", REFORMAT_KIND,
                                              reformat_problem(scsi_capacity.block_size)))
        if not methods and not refusal:
            refusal.append(REFUSE_NO_METHOD)
        if transport == "usb":
            methods = []
        sed = read_sed(host, transport=transport, path=path,
                       controller_path=f"/dev/{nvme_ctrl_name}" if nvme_ctrl_name else None,
                       nvme_security=nvme is not None and nvme.controller.security_send_receive)
        if sed is not None and sed.blocks_erase:
            methods = []
            refusal.append(REFUSE_SED_LOCKED)

        trim = discard_max > 0 and (trim_device is not False)
        wwn = world_wide_name((lb.wwn if lb else None) or "")
        if wwn is None:  # the drive's own words: noted, not used
            probe.problems.append(ToolProblem("lsblk", "parse", "the WWN is not an identifier: "
                                              f"{(lb.wwn if lb else '')!r:.80}"))
        reasons = safety.protect_reasons(host.fs, facts, name, partitions, serial)
        if native_scsi and reasons and methods:  # protected by the serial smartctl gave
            methods = []
            refusal.append(REFUSE_PROTECTED)
        drives.append(
            Drive(
                path=path,
                name=name,
                transport=transport,
                model=model,
                serial=serial,
                firmware=firmware,
                size_bytes=size,
                logical_block_size=logical,
                physical_block_size=physical,
                rotational=rotational,
                trim_supported=trim,
                protected=bool(reasons),
                protect_reasons=reasons,
                erase_methods=tuple(methods),
                ata_security=None if ata is None else ata.security,
                nvme=nvme,
                erase_refusal=tuple(dict.fromkeys(refusal)),
                vendor=vendor,
                removable=removable,
                read_only=read_only,
                drat=bool(ata and ata.drat),
                rzat=bool(ata and ata.rzat)
                or bool(nvme and nvme.current_dlfeat is not None
                        and (nvme.current_dlfeat & 0x7) == 1),
                trim_limit_blocks=None if ata is None else ata.trim_limit_blocks,
                discard_max_bytes=discard_max,
                ata=ata,
                smart=smart,
                partitions=partitions,
                loop_backing_file=backing,
                problems=tuple(global_problems + probe.problems),
                sed=sed,
                ata_passthrough=passthrough,
                wwn=wwn or "",
                place=transport_place(syspath, name),
                scsi_block_size=None if scsi_capacity is None or scsi_capacity.kernel_usable
                else scsi_capacity.block_size,
            )
        )
    return drives


def find_drive(drives: list[Drive], spec: str) -> Drive:
    """The drive named by a /dev path, a kernel name or a serial (exact match)."""
    want = spec.strip()
    for d in drives:
        if want in (d.path, d.name) or (d.serial and want == d.serial):
            return d
    if want.startswith("/dev/"):
        base = os.path.basename(want)
        for d in drives:
            if base == d.name:
                return d
    known = ", ".join(f"{d.path} ({d.serial or 'no serial'})" for d in drives) or "none"
    raise DriveNotFound(f"no drive {spec!r}; drives found: {known}")
