"""The erase plan's stage: check hidden areas, read health, erase (the ordinary erase
stage: the erase room's secure erase, or the discard fallback), verify, read health
again, and write the signed record - also when the erase failed (a FAIL record)."""

from __future__ import annotations

import os.path
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ssdbench import jsonfile
from ssdbench.erase.hidden import ata_hidden_areas, nvme_hidden_capacity, restore_native_max
from ssdbench.erase.psid import PsidError, psid_revert
from ssdbench.erase.scsi import SCSI_TRANSPORTS
from ssdbench.grade.capacity import drive_capacity
from ssdbench.record.build import FAIL, build_record, people_of
from ssdbench.record.chain import link_seal_write
from ssdbench.record.write import RECORD_JSON, append_session_csv, seal, write_record_files
from ssdbench.stages.base import RunContext, StageFailed, StageNotAvailable, with_drive_state
from ssdbench.stages.discard import EraseStage
from ssdbench.stages.grade import grade_now
from ssdbench.stages.health import HealthStage
from ssdbench.system import CommandError, Host
from ssdbench.untrusted import path_part

if TYPE_CHECKING:
    from ssdbench.devices import Drive

ATA_TRANSPORTS = ("sata", "ata")


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _version(host: Host, argv: list[str]) -> str | None:
    try:
        res = host.runner.run(argv, timeout=10.0)
    except CommandError:
        return None
    text = (res.text or res.stderr_text).strip()
    return text.splitlines()[0].strip() if text else None


def _image(host: Host) -> str | None:
    """The image's id (/etc/ssdbench-image-id: both images write it, the same text rcS logs
    at boot), after the OS name when os-release has one."""
    text = host.fs.read_text("/etc/os-release") or ""
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    name = fields.get("PRETTY_NAME", "").strip('"')
    build = fields.get("BUILD_ID", fields.get("IMAGE_VERSION", "")).strip('"')
    image_id = (host.fs.read_text("/etc/ssdbench-image-id") or "").strip()
    ours = f"ssdbench image {image_id}" if image_id else ""
    return " ".join(p for p in (name, build, ours) if p) or None


def tool_versions(ctx: RunContext, transport: str) -> dict[str, Any]:
    tools = dict(ctx.record.data.get("tools") or {})
    tools.pop("ioengine", None)
    tools["image"] = _image(ctx.host)
    if transport in ATA_TRANSPORTS:
        tools["hdparm"] = _version(ctx.host, ["hdparm", "-V"])
    if transport == "nvme":
        tools["nvme-cli"] = _version(ctx.host, ["nvme", "version"])
    if transport in SCSI_TRANSPORTS:  # sg_sanitize, sg_format: one package, one version
        tools["sg3_utils"] = _version(ctx.host, ["sg_sanitize", "--version"])
    return tools


def bench_name(host: Host, hostname: str | None = None) -> str:
    """The bench's name on its records: ``ssdbench.bench=`` on the kernel command line, else
    the host name DHCP gave, else the first wired NIC's MAC, else the system's host name -
    the store uploader's order (lab/uploader.py) without ``[store] bench``, which the erase
    stage does not see; in the store-key form (``A-Za-z0-9._-``). The bench id beside it
    (record/chain.py) is what tells benches apart."""
    name = ""
    for word in (host.fs.read_text("/proc/cmdline") or "").split():
        key, sep, value = word.partition("=")
        if sep and key == "ssdbench.bench":
            name = value  # the last one wins, as the kernel reads it

    def first_line(path: str) -> str:
        lines = (host.fs.read_text(path) or "").strip().splitlines()
        return lines[0].strip() if lines else ""

    name = (name or first_line("/run/ssdbench/dhcp-hostname")
            or first_line("/run/ssdbench/mac").replace(":", "-"))
    return path_part(name or hostname or socket.gethostname())


def with_twins(drive: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """``drive`` with every drive that reports its serial: those present at its start
    (drive.json) and those a station saw since (``ctx.twins``: a twin plugged in while this
    one erased is named in both records, #42)."""
    had = drive.get("serial_shared_with")
    names = {str(n) for n in had} if isinstance(had, list) else set()
    if ctx.twins is not None:
        try:
            names |= {str(n) for n in ctx.twins()}
        except Exception:  # the front end's board must not stop a record
            pass
    names.discard(str(drive.get("name") or ""))
    return {**drive, "serial_shared_with": sorted(names)} if names else drive


def _discovered(ctx: RunContext) -> dict[str, Any]:
    """Discovery's full identity of the drive (drive.json "drive", written by the engine
    before the first run; run.json "drive" holds only a summary)."""
    try:
        data = jsonfile.read(ctx.run_dir.parent / "drive.json")
    except (OSError, ValueError):
        return {}
    drive = data.get("drive") if isinstance(data, dict) else None
    return drive if isinstance(drive, dict) else {}


def _authenticity(ctx: RunContext) -> dict[str, Any] | None:
    """The drive's fake-capacity check of this plan (the intake plan's authenticity run,
    before this one), for the record; None when the plan had none."""
    try:
        data = jsonfile.read(ctx.run_dir.parent / "authenticity" / "run.json")
    except (OSError, ValueError):
        return None
    found = data.get("authenticity") if isinstance(data, dict) else None
    if not isinstance(found, dict):
        return None
    full = data.get("capacity_full")
    if isinstance(full, dict) and isinstance(full.get("summary"), str):
        found = {**found, "full": full["summary"]}  # the full check's words, when it ran
    # the drive's one verdict of the quick and the full check (the stronger evidence wins)
    return {**found, **(drive_capacity(data) or {})}


def _health(ctx: RunContext, phase: str) -> Any:
    """The drive's counters around the erase; a drive without SMART (a loop device, a USB
    bridge) has none: recorded as not available, and the erase goes on (the health stage's
    StageNotAvailable stops a stage of its own, never the erase inside this one)."""
    try:
        HealthStage(phase).execute(ctx)
    except StageNotAvailable:
        pass
    return (ctx.record.data.get("health") or {}).get(phase)


def _rediscover(ctx: RunContext, drive: dict[str, Any]) -> Drive | str:
    """Discovery of this drive alone (its kernel name), or why it is gone: no tool reaches
    the other drives, which may be in their own erases (station mode, a parallel kiosk
    run). The run's secure erase follows the fresh state."""
    from ssdbench.devices import DriveNotFound, discover, find_drive
    from ssdbench.stages import secure_erase

    path = str(drive.get("path"))
    name = str(drive.get("name") or os.path.basename(path))
    try:
        fresh = find_drive(discover(ctx.host, only={name}), path)
    except DriveNotFound as exc:
        return str(exc)
    ctx.secure_erase = secure_erase.secure_erase_hook(fresh, ctx.run_dir.parent.parent)
    return fresh


def unlock_for_erase(ctx: RunContext, drive: dict[str, Any],
                     stage: str) -> tuple[str | None, dict[str, Any] | None]:
    """A locked self-encrypting drive (discovery's ``sed.blocks_erase``): without a PSID the
    erase is refused with the advice (error); with one, PSID revert it, discover it again and
    give the run the secure erase its unlocked state allows. Returns (error, the revert)."""
    sed = drive.get("sed")
    if not isinstance(sed, dict) or not sed.get("blocks_erase"):
        return None, None
    locked = f"locked self-encrypting drive: {sed.get('lock_reason')}"
    psid = str(getattr(ctx.params, "psid", "") or "")
    if not psid:
        return f"{locked}; no erase until it is unlocked: {sed.get('advice')}", None
    path = str(drive.get("path"))
    ctx.emit(stage, "running", "PSID revert (sedutil-cli): destroys the drive's data key")
    try:
        revert = psid_revert(ctx.host, path, psid).to_dict()
    except PsidError as exc:
        return f"{locked}; PSID revert impossible: {exc}", {
            "method": "tcg-psid-revert", "device": path, "result": "failed", "detail": str(exc)}
    if revert["result"] != "done":
        return f"{locked}; PSID revert failed: {revert['detail']}", revert
    fresh = _rediscover(ctx, drive)
    if isinstance(fresh, str):
        return f"PSID revert done but the drive is gone: {fresh}", revert
    if fresh.sed_locked:
        return (f"PSID revert reported success but the drive is still locked "
                f"({fresh.sed.lock_reason if fresh.sed else ''})"), revert
    return None, revert


def _after_restore(ctx: RunContext, drive: dict[str, Any],
                   restore: dict[str, Any]) -> dict[str, Any]:
    """The kernel sees a restored native max after the rescan: discover the drive again so
    the erase and its verification markers address the whole of it (discovery ran before)."""
    sectors = (restore.get("kernel") or {}).get("sectors")
    block = int(drive.get("logical_block_size") or 512)
    if restore["result"] != "done" or not isinstance(sectors, int) or (
            sectors * block == drive.get("size_bytes")):
        return drive
    fresh = _rediscover(ctx, drive)
    if isinstance(fresh, str):
        restore.update(result="failed", reason=f"the drive is gone after the restore: {fresh}")
        return drive
    return {**drive, "size_bytes": fresh.size_bytes}


@dataclass
class CertifiedEraseStage:
    """Erase and record; the run fails when the record says FAIL (with its reason)."""

    name: str = "erase"

    def execute(self, ctx: RunContext) -> None:
        drive = {**(ctx.record.data.get("drive") or {}), **_discovered(ctx)}
        drive = with_twins(drive, ctx)
        transport = str(drive.get("transport") or "")
        t0, wall0 = time.monotonic(), time.time()
        hidden: dict[str, Any] = {}
        params = ctx.params
        path = str(drive.get("path"))
        restore = None
        # an ATA drive behind a SAS/SCSI path with the pass-through opt-in is ATA here too
        if transport in ATA_TRANSPORTS or drive.get("ata_passthrough"):
            if getattr(params, "restore_native_max", False):
                ctx.emit(self.name, "running", "restoring the native max (hdparm -N p<native>)")
                restore = restore_native_max(ctx.host, path)
                drive = _after_restore(ctx, drive, restore)
            ctx.emit(self.name, "running", "checking HPA and DCO (hdparm -N, --dco-identify)")
            block = int(drive.get("logical_block_size") or 512)
            size = drive.get("size_bytes")
            hidden["ata"] = ata_hidden_areas(ctx.host, path,
                                             size // block if isinstance(size, int) else None)
            if restore is not None:
                hidden["ata"]["native_max_restore"] = restore
                if restore["result"] == "failed":
                    hidden["ata"]["warnings"].append(
                        f"native max restore failed: {restore['reason']}")
        before = _health(ctx, "before")
        graded = grade_now(ctx)  # what a refurbisher decides on: reuse, note, scrap
        ctx.record.set("grade", graded)
        checked = _authenticity(ctx)
        error, revert = unlock_for_erase(ctx, drive, self.name)
        if error is None:
            try:
                EraseStage(self.name).execute(ctx)
            except StageFailed as exc:  # a drive pulled mid-erase: the record says so
                error = with_drive_state(ctx, str(exc), during=" during the erase")
        erase = ctx.record.data.get("erase")
        method = str((erase or {}).get("method") or "")
        nvme = drive.get("nvme")
        if transport == "nvme" or isinstance(nvme, dict):
            hidden["nvme"] = nvme_hidden_capacity(
                nvme if isinstance(nvme, dict) else None,
                nvme.get("nsid") if isinstance(nvme, dict) else None,
                sanitize=method.startswith("nvme-sanitize"))
        after = _health(ctx, "after")
        record = build_record(
            drive=drive, erase=erase, error=error, hidden=hidden,
            tools=tool_versions(ctx, transport),
            people=people_of(params),
            health_before=before, health_after=after,
            started=_utc(wall0), finished=_utc(time.time()),
            duration_s=time.monotonic() - t0, tcg_revert=revert, grade=graded,
            authenticity=checked, host=ctx.record.data.get("host"),
        )
        key = str(getattr(params, "record_key", "") or "")
        # the results folder's bench and the next link of its record chain, signed with
        # the record
        record, _data = link_seal_write(ctx.run_dir.parent.parent, ctx.run_dir / RECORD_JSON,
                                        record, lambda r: seal(r, key),
                                        bench_name=bench_name(ctx.host))
        files = write_record_files(ctx.run_dir, record,
                                   pdf=bool(getattr(params, "record_pdf", True)))
        csv_path = append_session_csv(ctx.run_dir.parent.parent, record)
        sig = record["signature"]
        ctx.record.set("erase_record", {
            **files, "session_csv": csv_path.name, "result": record["result"],
            "category": record["sanitization"]["category"],
            "signed": not sig.get("unsigned"), "fingerprint": sig.get("fingerprint"),
            "warnings": record["warnings"]})
        if sig.get("unsigned"):
            ctx.emit(self.name, "running", f"record UNSIGNED: {sig.get('reason')}")
        if files["pdf_problem"]:
            ctx.emit(self.name, "running", files["pdf_problem"])
        if record["result"]["status"] == FAIL:
            raise StageFailed(f"erase record FAIL: {record['result']['reason']}")
