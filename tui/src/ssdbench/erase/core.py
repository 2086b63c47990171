"""The erase stage's entry points: :func:`choose_method` and :func:`erase_drive`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ssdbench.erase import ata, nvme, scsi
from ssdbench.erase import overwrite as ow
from ssdbench.erase.hdparm import IdentifyInfo
from ssdbench.erase.journal import PasswordJournal
from ssdbench.erase.model import (
    ALL_METHODS,
    ATA_METHODS,
    ATA_SANITIZE_BLOCK,
    ATA_SANITIZE_CRYPTO,
    ATA_SECURITY_ERASE,
    ATA_SECURITY_ERASE_ENHANCED,
    DISCARD,
    NVME_FORMAT_CRYPTO,
    NVME_FORMAT_USER_DATA,
    NVME_METHODS,
    NVME_SANITIZE_BLOCK,
    NVME_SANITIZE_CRYPTO,
    NVME_SANITIZE_OVERWRITE,
    OVERWRITE,
    EraseError,
    EraseOptions,
    EraseRecord,
    EraseTarget,
    NoEraseMethod,
    Verification,
    VerificationFailed,
)
from ssdbench.erase.ticker import Reporter, Ticker
from ssdbench.erase.verify import check_markers, write_markers
from ssdbench.progress import ProgressCallback, ignore_progress
from ssdbench.system import CommandError, Host

ATA_TRANSPORTS = ("sata", "ata")
PASSTHROUGH_TRANSPORTS = ("sas", "scsi")  # ATA only with the drive's ata_passthrough opt-in
VIRTUAL_TRANSPORTS = ("virtio", "loop", "xen", "nbd", "other")


def _available_ata(target: EraseTarget, options: EraseOptions) -> tuple[list[str], str]:
    sec = target.ata
    if sec is None:
        return [], "no ATA Security information (hdparm -I gave none)"
    methods: list[str] = []
    why = ""
    usable = sec.supported and not sec.expired
    if not sec.supported:
        why = "the drive does not support the ATA Security feature set"
    elif sec.expired:
        why = "security count expired (power-cycle the drive)"
    elif sec.frozen and not options.allow_suspend:
        usable = False
        why = (
            "security is frozen and the plan does not allow suspend-to-RAM "
            f"(allow_suspend = true tries it). {ata.HOTPLUG_HELP}"
        )
    if usable:
        if sec.enhanced_supported and options.enhanced:
            methods.append(ATA_SECURITY_ERASE_ENHANCED)
        methods.append(ATA_SECURITY_ERASE)
    if sec.sanitize_block:
        methods.append(ATA_SANITIZE_BLOCK)
    if sec.sanitize_crypto:
        methods.append(ATA_SANITIZE_CRYPTO)
    return methods, why


def _available_nvme(target: EraseTarget, options: EraseOptions) -> tuple[list[str], str]:
    caps = target.nvme
    if caps is None:
        return [], "no NVMe Identify Controller information"
    methods: list[str] = []
    if caps.sanitize_block:
        methods.append(NVME_SANITIZE_BLOCK)
    if caps.sanitize_crypto:
        methods.append(NVME_SANITIZE_CRYPTO)
    if caps.format_supported:
        if caps.format_crypto_supported and options.crypto:
            methods.append(NVME_FORMAT_CRYPTO)
        methods.append(NVME_FORMAT_USER_DATA)
        if caps.format_crypto_supported and not options.crypto:
            methods.append(NVME_FORMAT_CRYPTO)
    if caps.sanitize_overwrite:
        methods.append(NVME_SANITIZE_OVERWRITE)  # slow: only when asked for
    return methods, "" if methods else "neither sanitize (SANICAP) nor Format NVM (OACS bit 1)"


def available_methods(
    target: EraseTarget, options: EraseOptions | None = None
) -> tuple[list[str], str]:
    """Secure methods in order of preference, and why the list is empty/short."""
    options = options or EraseOptions()
    transport = target.transport.lower()
    if target.sed_lock:
        return [], f"locked self-encrypting drive: {target.sed_lock}"
    if transport == "usb":
        return [], (
            "the drive is behind a USB bridge: bridges mangle or reject ATA pass-through "
            "(and may abort an erase leaving a locked drive); connect it to SATA/NVMe directly"
        )
    if transport in VIRTUAL_TRANSPORTS:
        return [], f"virtual disk (transport {transport}) has no secure erase command"
    if transport == "nvme":
        return _available_nvme(target, options)
    if transport in ATA_TRANSPORTS:
        return _available_ata(target, options)
    if transport in PASSTHROUGH_TRANSPORTS and target.ata_passthrough:
        return _available_ata(target, options)
    if transport in scsi.SCSI_TRANSPORTS and target.scsi_sanitize:
        # SCSI SANITIZE (erase/scsi.py): the service action is chosen when the erase starts,
        # from what the drive lists (REPORT SUPPORTED OPERATION CODES)
        return [scsi.SCSI_SANITIZE], ""
    if transport in scsi.SCSI_TRANSPORTS and target.scsi_format:
        # no SANITIZE listed at all: FORMAT UNIT re-initializes every block (Clear at most)
        return [scsi.SCSI_FORMAT], ""
    return [], (
        f"transport {transport!r} (SAS/RAID/SCSI paths block ATA security commands; a SATA "
        "drive behind an HBA that passes them through can be opted in: docs/erase.md)"
    )


def _overwrite_possible(target: EraseTarget, why: str = "") -> str:
    """OVERWRITE, or NoEraseMethod: a locked drive (SED or ATA password) refuses writes."""
    lock = target.sed_lock or (
        "ATA security locked (a user password is set)" if target.ata and target.ata.locked
        else "")
    if lock:
        raise NoEraseMethod(f"{target.path}: no overwrite of a locked drive: {lock}"
                            + (f" (and no firmware erase: {why})" if why else ""),
                            method=OVERWRITE)
    return OVERWRITE


def choose_method(
    target: EraseTarget, preference: str | None = None, options: EraseOptions | None = None
) -> str:
    """The method to use: ``preference`` when possible, else the best available.

    Order: NVMe sanitize block, sanitize crypto, format (crypto first only when
    ``options.crypto``); ATA enhanced security erase (when ``options.enhanced``), normal
    security erase, sanitize block, sanitize crypto. With nothing secure (a USB bridge, a
    drive that stays frozen, a virtual disk): "overwrite" with ``erase_fallback =
    "overwrite"``, "discard" with ``erase_fallback = "discard"``. "overwrite" by name is
    possible on any drive but a locked one. Raises NoEraseMethod naming the reason.
    """
    options = options or EraseOptions()
    methods, why = available_methods(target, options)
    if preference is not None:
        if preference in scsi.SCSI_METHODS:  # SAS/SCSI: chosen by name (erase/scsi.py)
            scsi.check_target(target, preference)
            return preference
        if preference not in ALL_METHODS:
            raise NoEraseMethod(f"unknown erase method {preference!r}; one of {ALL_METHODS}")
        if preference == DISCARD or preference in methods:
            return preference
        if preference == OVERWRITE:
            return _overwrite_possible(target)
        family = NVME_METHODS if target.transport == "nvme" else ATA_METHODS
        hint = f" ({why})" if why else ""
        if preference not in family or not methods:
            raise NoEraseMethod(
                f"{target.path}: {preference} is not possible on this drive{hint}",
                method=preference,
            )
        raise NoEraseMethod(
            f"{target.path}: {preference} is "
            + (f"not possible on this drive{hint}" if why else "not supported by this drive")
            + f"; it offers {', '.join(methods)}",
            method=preference,
        )
    # ATA security on a frozen drive with allow_suspend stays first: the suspend is tried.
    if methods:
        return methods[0]
    if options.erase_fallback == OVERWRITE:
        return _overwrite_possible(target, why)
    if options.erase_fallback == "discard" and not target.sed_lock:  # locked: discard fails too
        return DISCARD
    raise NoEraseMethod(
        f"{target.path}: no secure erase possible: {why}. Set erase_fallback = \"overwrite\" "
        "to Clear it by overwriting every block, or \"discard\" to discard instead (the result "
        "is then marked not secure-erased)."
    )


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def discard(host: Host, target: EraseTarget, reporter: Reporter) -> list[str]:
    with Ticker(reporter, "discarding the whole device (not a secure erase)", None):
        host.runner.run(["blkdiscard", "-f", target.path], timeout=6 * 3600.0)
    return ["blkdiscard of the whole device (not secure-erased)"]


def overwrite(target: EraseTarget, options: EraseOptions, reporter: Reporter,
              fallback_why: str = "") -> tuple[list[str], dict[str, Any]]:
    """One pass over every block, then the sampled check; (steps, run.json overwrite).
    Raises VerificationFailed when a sampled block does not hold the pattern."""
    pattern = ow.Pattern.new(options.overwrite_pattern, options.overwrite_seed)
    dev = ow.Device(target.path)
    block = target.logical_block_size

    def tick(done: int, total: int, message: str, eta: float | None) -> None:
        reporter.send(message, fraction=0.97 * done / total if total else None, eta_s=eta)

    steps = [f"no firmware erase: {fallback_why}"] if fallback_why else []
    reporter.send(f"overwriting every block ({pattern.kind})", fraction=0.0)
    result = ow.overwrite_pass(dev, target.size_bytes, block, pattern, progress=tick,
                               clock=options.clock, cancel=options.cancel)
    steps.append(f"one pass of {pattern.kind} over {result.bytes_total} bytes at "
                 f"{result.mb_s:.0f} MB/s; {result.bad_count} bad blocks")
    sample = None
    if options.verify:
        reporter.send(f"reading back {options.overwrite_verify_percent:g}% of the drive",
                      fraction=0.97)
        sample = ow.verify_sample(
            dev, target.size_bytes, block, pattern, options.overwrite_verify_percent,
            bad_offsets=frozenset(b.offset for b in result.bad_blocks), clock=options.clock,
            progress=lambda d, t, m, e: reporter.send(m, fraction=0.97 + 0.03 * d / t))
        steps.append(f"verified {sample.units_checked} units of {sample.unit_bytes} bytes "
                     f"({sample.percent:g}% sampled in {sample.subsections} subsections): "
                     f"{sample.mismatch_count} mismatched blocks")
    rec = ow.record(pattern, result, sample)
    if sample is not None and not sample.passed:
        where = ", ".join(map(str, (sample.mismatches or sample.unreadable)[:5]))
        raise VerificationFailed(
            f"{target.path}: the overwrite did not stick: {sample.mismatch_count} blocks "
            f"read back without the pattern, {len(sample.unreadable)} sampled units "
            f"unreadable (byte offsets {where or 'none'}); {sample.units_checked} units "
            "checked", method=OVERWRITE)
    return steps, rec


def erase_drive(
    host: Host,
    target: EraseTarget,
    *,
    method: str | None = None,
    journal: PasswordJournal,
    progress: ProgressCallback = ignore_progress,
    options: EraseOptions | None = None,
    scratch: Path | None = None,
    scsi_reformat_to: int | None = None,
) -> EraseRecord:
    """Erase ``target`` with ``method`` (None: the best available) and verify it.

    Raises EraseError (NoEraseMethod, VerificationFailed) with the reason; the drive is
    left without a temporary password whenever that is possible (else the journal keeps
    it for the next boot, see :func:`ssdbench.erase.ata.recover_leftover_password`).
    ``scsi_reformat_to``: a SAS drive of 520/528-byte blocks is first reformatted to this
    (the plan's ``scsi_reformat_512``; erase/scsi.py).
    """
    options = options or EraseOptions()
    chosen = choose_method(target, method, options)
    reporter = Reporter(progress, target.name, options.run, options.clock)
    started_wall = time.time()
    t0 = options.clock.monotonic()
    steps: list[str] = [f"method {chosen}"]
    secure = chosen != DISCARD
    # the overwrite checks its own pattern (sampled read-back) instead of markers
    verify = options.verify and secure and chosen != OVERWRITE
    markers = None
    overwrite_rec: dict[str, Any] | None = None
    checked: tuple[IdentifyInfo, list[str]] | None = None
    scsi_order: list[str] = []
    scsi_reformat: dict[str, Any] | None = None
    try:
        if chosen in scsi.SCSI_METHODS:
            target, scsi_order, pre, scsi_reformat = scsi.prepare_recorded(
                host, target, chosen, options, reporter, reformat_to=scsi_reformat_to)
            steps += pre
        if chosen in ATA_METHODS:
            # Before any marker is written: a password an earlier run left is removed, and a
            # drive locked/enabled with an unknown password or expired is refused untouched.
            info, pre = ata.check_and_prepare(
                host, target, journal, options, reporter,
                security_needed=chosen in (ATA_SECURITY_ERASE, ATA_SECURITY_ERASE_ENHANCED),
            )
            steps += pre
            checked = (info, [])
        if verify:
            reporter.send(f"writing {options.marker_count} verification markers")
            markers = write_markers(
                host, target, options.marker_count, nonce=options.nonce, scratch=scratch
            )
            steps.append(f"{len(markers.offsets)} markers written and read back")
        reporter.send(f"erasing with {chosen}")
        if chosen in (ATA_SECURITY_ERASE, ATA_SECURITY_ERASE_ENHANCED):
            steps += ata.security_erase(
                host, target, chosen, journal=journal, options=options, reporter=reporter,
                checked=checked,
            )
        elif chosen in (ATA_SANITIZE_BLOCK, ATA_SANITIZE_CRYPTO):
            steps += ata.sanitize(
                host, target, chosen, journal=journal, options=options, reporter=reporter,
                checked=checked,
            )
        elif chosen in (NVME_SANITIZE_BLOCK, NVME_SANITIZE_CRYPTO, NVME_SANITIZE_OVERWRITE):
            steps += nvme.sanitize(host, target, chosen, options, reporter)
        elif chosen in (NVME_FORMAT_USER_DATA, NVME_FORMAT_CRYPTO):
            steps += nvme.format_nvm(host, target, chosen, options, reporter)
        elif chosen in scsi.SCSI_METHODS:
            chosen, more = scsi.erase(host, target, scsi_order, options, reporter)
            steps += more
        elif chosen == OVERWRITE:
            why = "" if method == OVERWRITE else available_methods(target, options)[1]
            more, overwrite_rec = overwrite(target, options, reporter, why)
            steps += more
        else:
            steps += discard(host, target, reporter)
        erase_s = options.clock.monotonic() - t0
        verification: Verification | None = None
        if markers is not None:
            reporter.send("checking the verification markers")
            verification = check_markers(host, target, markers)
            steps.append(f"verified: none of {verification.markers} markers survived")
    except CommandError as exc:
        reporter.send(str(exc), state="failed")
        raise EraseError(f"{chosen} failed: {exc}", method=chosen) from exc
    except EraseError as exc:
        if exc.method is None:
            exc.method = chosen
        reporter.send(str(exc), state="failed")
        raise
    duration = options.clock.monotonic() - t0
    detail = (
        f"{chosen} in {erase_s:.1f} s"
        + (f"; {verification.markers} markers erased" if verification else "")
        + (f"; {ov['percent']:g}% read back holding the pattern"
           if overwrite_rec and (ov := overwrite_rec.get("verification")) else "")
        + ("" if secure else "; NOT secure-erased (discard fallback)")
    )
    reporter.send(detail, state="done", fraction=1.0)
    return EraseRecord(
        method=chosen,
        secure=secure,
        verified=(verification.passed if verification is not None else
                  bool(ov["passed"]) if overwrite_rec and (ov := overwrite_rec["verification"])
                  else None),
        duration_s=duration,
        detail=detail,
        device=target.path,
        serial=target.serial,
        started=_utc(started_wall),
        finished=_utc(time.time()),
        verification=verification,
        steps=tuple(steps),
        overwrite=overwrite_rec,
        scsi_reformat=scsi_reformat,
    )


def stage_hook(
    target: EraseTarget,
    *,
    journal: PasswordJournal,
    options: EraseOptions | None = None,
    method: str | None = None,
    scratch: Path | None = None,
) -> Callable[[Any], dict[str, Any]]:
    """A ``RunContext.secure_erase`` for the stages room: ``hook(ctx)`` erases with
    ``ctx.host`` / ``ctx.progress`` / ``ctx.run_name`` and returns ``EraseRecord.to_dict()``
    (run.json ``erase``). Errors propagate as EraseError (NoEraseMethod, VerificationFailed)."""

    def hook(ctx: Any) -> dict[str, Any]:
        opts = replace(options or EraseOptions(), run=str(getattr(ctx, "run_name", "")))
        cancel = getattr(ctx, "cancel", None)
        if isinstance(cancel, threading.Event):
            opts = replace(opts, cancel=cancel)
        params = getattr(ctx, "params", None)
        if getattr(params, "erase_fallback", None) == OVERWRITE:  # the plan allows it
            opts = replace(opts, erase_fallback=OVERWRITE)
        if params is not None and hasattr(params, "overwrite_verify_percent"):
            opts = replace(opts, overwrite_verify_percent=float(
                params.overwrite_verify_percent))
        if params is not None and hasattr(params, "overwrite_pattern"):
            opts = replace(opts, overwrite_pattern=str(params.overwrite_pattern))
        reformat = 512 if getattr(params, "scsi_reformat_512", False) is True else None
        record = erase_drive(
            ctx.host,
            target,
            method=method,
            journal=journal,
            progress=getattr(ctx, "progress", ignore_progress),
            options=opts,
            scratch=scratch,
            scsi_reformat_to=reformat,
        )
        return record.to_dict()

    return hook
