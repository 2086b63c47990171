"""SAS / SCSI erase through sg3_utils: SCSI SANITIZE (block erase, cryptographic erase,
overwrite) with its progress from REQUEST SENSE, and the reformat of a 520/528-byte drive
(storage arrays format them so) to 512 bytes a block with MODE SELECT + FORMAT UNIT.

The tools and what ssdbench reads from them (sg3_utils 1.46; captures of each, from the
emulated SAS drive of docs/ata-emulator.md in QEMU, in tests/data/sas-emu/):

* ``sg_opcodes DEV``: REPORT SUPPORTED OPERATION CODES as a table; the SANITIZE (48h)
  service actions the drive lists. A drive that does not answer it is tried in order.
* ``sg_sanitize --block|--crypto|--overwrite --zero --quick --early DEV``: SANITIZE with
  IMMED set; exit status 5 (ILLEGAL REQUEST) is a service action the drive does not have.
* ``sg_requests --progress DEV``: "Progress indication: 12.34% done" while the drive works
  (its sense-key-specific progress field, SPC-4 4.5.2.4.4), nothing once it is done.
  ``sg_requests DEV``: the sense data afterwards, decoded on stderr (sanitize failure
  mode: MEDIUM ERROR, "Sanitize command failed").
* ``sg_readcap -l DEV``: blocks, block length and protection (READ CAPACITY(16)).
* ``sg_format --format --size=512 --quick --early DEV``: MODE SELECT with the new block
  length, FORMAT UNIT with IMMED; then the SCSI rescan so sd reads the new capacity (sd
  gives a 520-byte drive capacity 0: "Unsupported sector size 520").
* ``sg_format --format --size=<current> --fmtpinfo=N [--pfu=1] --quick --early DEV``: the
  erase of a drive that lists no SANITIZE at all (``scsi-format``): FORMAT UNIT with IMMED
  keeping the block size and protection type, which re-initializes every block; its
  progress as above, then READ CAPACITY(16) must show the drive as it was. Not a Purge in
  NIST SP 800-88 Rev. 1 (Tables A-7/A-8 name SANITIZE): Clear at most (record/nist.py).

Every output is untrusted: a line that does not say what it should is a ParseError turned
into an EraseError naming the tool, never a default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ssdbench.devices.errors import ParseError
from ssdbench.devices.scsi import Capacity, Opcodes, parse_opcodes, parse_readcap
from ssdbench.devices.scsi import lines_of as _lines
from ssdbench.erase.hidden import rescan_kernel_view
from ssdbench.erase.model import (
    SCSI_FORMAT,
    SCSI_METHODS,
    SCSI_SANITIZE,
    SCSI_SANITIZE_BLOCK,
    SCSI_SANITIZE_CRYPTO,
    SCSI_SANITIZE_OVERWRITE,
    EraseError,
    EraseOptions,
    EraseTarget,
    NoEraseMethod,
    StallWatch,
    sanitize_limit_s,
)
from ssdbench.erase.ticker import Reporter
from ssdbench.system import CommandError, CommandNotFound, Host

# the parsers and method names live with discovery and the erase model, which read them too
__all__ = ["SCSI_FORMAT", "SCSI_METHODS", "SCSI_SANITIZE", "SCSI_SANITIZE_BLOCK",
           "SCSI_SANITIZE_CRYPTO", "SCSI_SANITIZE_OVERWRITE", "Capacity", "Opcodes",
           "SenseState", "candidates", "check_target", "choose", "erase", "format_unit",
           "parse_opcodes", "parse_progress", "parse_readcap", "parse_requests",
           "prepare_recorded", "read_capacity", "read_opcodes", "reformat", "sanitize",
           "wait_for_progress"]

ORDER = (SCSI_SANITIZE_BLOCK, SCSI_SANITIZE_CRYPTO, SCSI_SANITIZE_OVERWRITE)
SERVICE_ACTIONS = {SCSI_SANITIZE_BLOCK: 0x02, SCSI_SANITIZE_CRYPTO: 0x03,
                   SCSI_SANITIZE_OVERWRITE: 0x01}
SG_SANITIZE_OPTIONS = {SCSI_SANITIZE_BLOCK: ("--block",), SCSI_SANITIZE_CRYPTO: ("--crypto",),
                       SCSI_SANITIZE_OVERWRITE: ("--overwrite", "--zero")}
SCSI_TRANSPORTS = ("sas", "scsi")
REFORMAT_SIZES = (512, 4096)
SG_LIB_CAT_ILLEGAL_REQ = 5  # sg3_utils' exit status for ILLEGAL REQUEST (sg3_utils(8))
SG_LIB_CAT_INVALID_OP = 9  # ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE: no such command


@dataclass(frozen=True)
class SenseState:
    """``sg_requests`` (no --progress): the sense key and additional sense, sg3_utils' words."""

    sense_key: str
    additional: str

    @property
    def sanitize_failed(self) -> bool:
        return "sanitize command failed" in self.additional.lower()

    @property
    def format_failed(self) -> bool:
        """MEDIUM FORMAT CORRUPTED (31h/00h) or FORMAT COMMAND FAILED (31h/01h)."""
        more = self.additional.lower()
        return "format corrupted" in more or "format command failed" in more


def parse_progress(text: str) -> float | None:
    """``sg_requests --progress``: the percentage done, None when the drive reports no
    progress indication (it is not working on a sanitize or format)."""
    found = re.findall(r"Progress indication: (\d{1,3})\.(\d{2})% done", "\n".join(
        _lines(text, "sg_requests")))
    if not found:
        return None
    whole, cents = found[-1]
    percent = int(whole) + int(cents) / 100
    if percent > 100:
        raise ParseError(f"sg_requests: progress {percent}%: more than all of it")
    return percent


def parse_requests(text: str) -> SenseState:
    """``sg_requests``: "Sense key: ..." and "Additional sense: ..." of the decoded sense."""
    lines = _lines(text, "sg_requests")
    key = next((m.group(1).strip() for line in lines
                if (m := re.search(r"Sense key: (.+)$", line))), None)
    more = next((m.group(1).strip() for line in lines
                 if (m := re.search(r"Additional sense: (.+)$", line))), "")
    if key is None:
        raise ParseError("sg_requests: no sense key in its answer")
    return SenseState(key, more)


def check_target(target: EraseTarget, method: str) -> None:
    """SCSI methods are for SAS/SCSI drives the operator did not opt in to ATA pass-through
    (a SATA drive behind an HBA keeps the ATA paths)."""
    if target.transport not in SCSI_TRANSPORTS:
        raise NoEraseMethod(f"{target.path}: {method} is for SAS/SCSI drives, not "
                            f"{target.transport}", method=method)
    if target.ata_passthrough:
        raise NoEraseMethod(f"{target.path}: {method}: the drive is opted in to ATA "
                            "pass-through (a SATA drive behind an HBA): use the ATA methods",
                            method=method)
    if target.sed_lock:
        raise NoEraseMethod(f"{target.path}: locked self-encrypting drive: {target.sed_lock}",
                            method=method)


def _run_parsed(host: Host, argv: list[str], parse: Any, timeout: float = 60.0, *,
                stderr: bool = False) -> Any:
    """Run, then parse stdout (``stderr``: stderr after it, where sg_requests decodes the
    sense data)."""
    res = host.runner.run(argv, timeout=timeout)
    try:
        return parse(res.text + (res.stderr_text if stderr else ""))
    except ParseError as exc:
        raise EraseError(f"{argv[-1]}: {exc}") from exc


def read_capacity(host: Host, path: str) -> Capacity:
    result: Capacity = _run_parsed(host, ["sg_readcap", "-l", path], parse_readcap)
    return result


def read_opcodes(host: Host, path: str) -> Opcodes:
    try:
        result: Opcodes = _run_parsed(host, ["sg_opcodes", path], parse_opcodes)
    except CommandNotFound:
        raise
    except CommandError:  # REPORT SUPPORTED OPERATION CODES is optional (SPC-4)
        return Opcodes(False)
    return result


def candidates(method: str, opcodes: Opcodes) -> list[str]:
    """The service actions to try, in order: what the drive lists (block, crypto,
    overwrite for ``scsi-sanitize``), every one of them when it lists nothing."""
    wanted = list(ORDER) if method == SCSI_SANITIZE else [method]
    if not opcodes.listed:
        return wanted
    have = [m for m in wanted if SERVICE_ACTIONS[m] in opcodes.sanitize_actions]
    if not have:
        offered = ", ".join(m for m in ORDER if SERVICE_ACTIONS[m] in opcodes.sanitize_actions)
        raise NoEraseMethod(
            f"{method}: the drive lists no such SANITIZE service action (REPORT SUPPORTED "
            f"OPERATION CODES: {offered or 'no SANITIZE at all'})", method=method)
    return have


def wait_for_progress(host: Host, path: str, what: str, options: EraseOptions,
                      reporter: Reporter, *, limit_s: float) -> list[str]:
    """Poll REQUEST SENSE's progress until the drive reports none: the same stall and
    overall limits as the NVMe and ATA sanitize (``sanitize_stall_s``, the timeout)."""
    clock = options.clock
    start = clock.monotonic()
    watch = StallWatch(options.sanitize_stall_s, start)
    polls = 0
    while True:
        percent = _run_parsed(host, ["sg_requests", "--progress", path], parse_progress)
        polls += 1
        now = clock.monotonic()
        if percent is None:
            return [f"{what}: no progress indication after {polls} polls "
                    f"({now - start:.0f} s): done"]
        stuck = watch.stalled_for(percent, now)
        if stuck is not None:
            raise EraseError(
                f"{path}: the {what} made no progress for {stuck:.0f} s (stuck at "
                f"{percent:.2f}%). Not retrying: it keeps running in the drive and resumes "
                "after a power cycle; check `sg_requests --progress` later.")
        if now - start > limit_s:
            raise EraseError(f"{path}: the {what} did not finish in {limit_s:.0f} s")
        eta = (now - start) * (100 - percent) / percent if percent > 0 else None
        reporter.send(f"{what} ({percent:.2f}%)", fraction=percent / 100, eta_s=eta)
        clock.sleep(options.poll_interval_s)


def reformat(host: Host, target: EraseTarget, size: int, options: EraseOptions,
             reporter: Reporter) -> tuple[EraseTarget, list[str], dict[str, Any]]:
    """MODE SELECT + FORMAT UNIT to ``size`` bytes a block (520/528 -> 512 or 4096), then
    the SCSI rescan: the target as the kernel sees it after, the steps, and the record's
    ``scsi_reformat`` (the sizes and protection before and after)."""
    if size not in REFORMAT_SIZES:
        raise EraseError(f"{target.path}: reformat to {size} bytes a block: one of "
                         f"{REFORMAT_SIZES}")
    before = read_capacity(host, target.path)
    rec: dict[str, Any] = {"before": before.to_dict()}
    if before.block_size == size:
        rec.update(result="not needed", after=before.to_dict())
        return _as_seen(target, before), [f"already {size} bytes a block: no reformat"], rec
    argv = ["sg_format", "--format", f"--size={size}", "--quick", "--early", target.path]
    rec["command"] = " ".join(argv)
    reporter.send(f"reformatting {before.block_size} -> {size} bytes a block")
    host.runner.run(argv, timeout=120.0)
    steps = [f"sg_format --size={size}: FORMAT UNIT started ({before.block_size} bytes a "
             f"block, {before.blocks} blocks, protection type {before.protection_type})"]
    steps += wait_for_progress(host, target.path, "FORMAT UNIT", options, reporter,
                               limit_s=sanitize_limit_s(options, before.size_bytes))
    kernel = rescan_kernel_view(host, target.path)
    after = read_capacity(host, target.path)
    rec.update(after=after.to_dict(), kernel=kernel)
    if after.block_size != size:
        raise EraseError(f"{target.path}: after FORMAT UNIT the drive reports "
                         f"{after.block_size} bytes a block, not {size}")
    sectors = kernel.get("sectors")
    if not isinstance(sectors, int) or sectors * 512 != after.size_bytes:
        raise EraseError(f"{target.path}: the kernel sees {sectors} 512-byte sectors after the "
                         f"rescan, the drive {after.size_bytes} bytes: an erase through it "
                         "would not reach every block")
    rec["result"] = "done"
    steps.append(f"reformatted: {after.block_size} bytes a block, {after.blocks} blocks, "
                 f"protection type {after.protection_type}; the kernel sees "
                 f"{after.size_bytes} bytes")
    return _as_seen(target, after), steps, rec


def _as_seen(target: EraseTarget, cap: Capacity) -> EraseTarget:
    return replace(target, size_bytes=cap.size_bytes, logical_block_size=cap.block_size)


def format_allowed(path: str, opcodes: Opcodes) -> None:
    """``scsi-format`` only where REPORT SUPPORTED OPERATION CODES lists FORMAT UNIT and no
    SANITIZE that erases: a drive with SANITIZE is purged with it, and a drive that did not
    answer may have it (``scsi-sanitize`` tries each service action)."""
    if not opcodes.listed:
        raise NoEraseMethod(
            f"{path}: {SCSI_FORMAT}: the drive did not answer REPORT SUPPORTED OPERATION "
            f"CODES, so it may have SANITIZE: use {SCSI_SANITIZE} (it tries each service "
            "action)", method=SCSI_FORMAT)
    if opcodes.sanitize:
        offered = ", ".join(f"{a:#04x}" for a in sorted(opcodes.sanitize_actions))
        raise NoEraseMethod(
            f"{path}: {SCSI_FORMAT} is only for a drive without SANITIZE; this one lists "
            f"SANITIZE {offered}: use {SCSI_SANITIZE} (a Purge, not a Clear)",
            method=SCSI_FORMAT)
    if not opcodes.format_unit:
        raise NoEraseMethod(f"{path}: {SCSI_FORMAT}: the drive lists neither SANITIZE nor "
                            "FORMAT UNIT", method=SCSI_FORMAT)


def choose(host: Host, target: EraseTarget, method: str) -> tuple[list[str], list[str]]:
    """The service actions to try for ``method`` (from ``sg_opcodes``) and the step;
    ``[scsi-format]`` for ``scsi-format`` on a drive that lists no SANITIZE."""
    check_target(target, method)
    opcodes = read_opcodes(host, target.path)
    if method == SCSI_FORMAT:
        format_allowed(target.path, opcodes)
        return [SCSI_FORMAT], ["REPORT SUPPORTED OPERATION CODES: FORMAT UNIT, no SANITIZE "
                               "service action (the drive has none)"]
    order = candidates(method, opcodes)
    if opcodes.listed:
        listed = sorted(f"{a:#04x}" for a in opcodes.sanitize_actions)
        step = f"REPORT SUPPORTED OPERATION CODES: SANITIZE {', '.join(listed) or 'none'}"
    else:
        step = "REPORT SUPPORTED OPERATION CODES not answered: trying " + ", ".join(order)
    return order, [step]


def erase(host: Host, target: EraseTarget, order: list[str], options: EraseOptions,
          reporter: Reporter) -> tuple[str, list[str]]:
    """The erase ``prepare_recorded`` chose: FORMAT UNIT for ``[scsi-format]``, else
    SANITIZE. Returns (the method that ran, steps)."""
    if order == [SCSI_FORMAT]:
        return SCSI_FORMAT, format_unit(host, target, options, reporter)
    return sanitize(host, target, order, options, reporter)


# FORMAT UNIT's FMTPINFO and PFU (SBC-4 5.3.2, Table 40) for each protection type
FMTPINFO = {0: ("--fmtpinfo=0",), 1: ("--fmtpinfo=2",), 2: ("--fmtpinfo=3",),
            3: ("--fmtpinfo=3", "--pfu=1")}


def format_unit(host: Host, target: EraseTarget, options: EraseOptions,
                reporter: Reporter) -> list[str]:
    """FORMAT UNIT with IMMED keeping the block size and protection type (a drive that
    lists no SANITIZE): its progress until done, REQUEST SENSE after it (a format that
    failed: MEDIUM FORMAT CORRUPTED / FORMAT COMMAND FAILED), and READ CAPACITY(16) the
    same as before. Never retried once started: the medium is unusable until a format
    succeeds."""
    before = read_capacity(host, target.path)
    argv = ["sg_format", "--format", f"--size={before.block_size}",
            *FMTPINFO[before.protection_type], "--quick", "--early", target.path]
    reporter.send("FORMAT UNIT (re-initializing every block)", fraction=0.0)
    try:
        host.runner.run(argv, timeout=120.0)
    except CommandError as exc:
        raise EraseError(f"{target.path}: FORMAT UNIT refused: {exc}",
                         method=SCSI_FORMAT) from exc
    steps = [f"{' '.join(argv[:-1])}: FORMAT UNIT started, keeping {before.block_size} bytes "
             f"a block, {before.blocks} blocks, protection type {before.protection_type}: "
             "the drive re-initializes every block (it has no SANITIZE)"]
    try:
        steps += wait_for_progress(host, target.path, "FORMAT UNIT", options, reporter,
                                   limit_s=sanitize_limit_s(options, before.size_bytes))
        state: SenseState = _run_parsed(host, ["sg_requests", target.path], parse_requests,
                                        stderr=True)
        if state.format_failed:
            raise EraseError(
                f"{target.path}: the FORMAT UNIT failed ({state.sense_key}: "
                f"{state.additional}); the drive refuses reads until a format succeeds. "
                "Not retrying automatically.")
        after = read_capacity(host, target.path)
    except EraseError as exc:
        exc.method = SCSI_FORMAT
        raise
    steps.append(f"REQUEST SENSE after it: {state.sense_key}"
                 + (f", {state.additional}" if state.additional else ""))
    if after != before:
        raise EraseError(
            f"{target.path}: after FORMAT UNIT the drive reports {after.block_size} bytes a "
            f"block, {after.blocks} blocks, protection type {after.protection_type}; before "
            f"it {before.block_size}, {before.blocks}, {before.protection_type}",
            method=SCSI_FORMAT)
    steps.append(f"after it: {after.block_size} bytes a block, {after.blocks} blocks, "
                 f"protection type {after.protection_type}, as before")
    reporter.send("FORMAT UNIT done", fraction=1.0)
    return steps


def sanitize(host: Host, target: EraseTarget, order: list[str], options: EraseOptions,
             reporter: Reporter) -> tuple[str, list[str]]:
    """SANITIZE with IMMED, the first of ``order`` the drive takes, then its progress until
    done and the sense data after it. Returns (the method that ran, steps). Never retried
    once started: a failed sanitize leaves the drive in sanitize failure mode."""
    steps: list[str] = []
    for n, method in enumerate(order):
        argv = ["sg_sanitize", *SG_SANITIZE_OPTIONS[method], "--quick", "--early", target.path]
        try:
            host.runner.run(argv, timeout=120.0)
        except CommandError as exc:
            if exc.returncode == SG_LIB_CAT_INVALID_OP:  # no service action will do
                raise NoEraseMethod(
                    f"{target.path}: the drive has no SANITIZE (INVALID COMMAND OPERATION "
                    "CODE) and did not list its commands (REPORT SUPPORTED OPERATION CODES), "
                    f"so {SCSI_FORMAT} cannot be offered either: erase_fallback = "
                    "\"overwrite\" Clears it by overwriting every block", method=method) from exc
            if exc.returncode == SG_LIB_CAT_ILLEGAL_REQ and n + 1 < len(order):
                steps.append(f"{method}: ILLEGAL REQUEST (not supported); next")
                continue
            raise EraseError(f"{target.path}: {method} refused: {exc}", method=method) from exc
        steps.append(f"{' '.join(argv[:-1])}: SANITIZE started")
        try:
            steps += wait_for_progress(host, target.path, "SANITIZE", options, reporter,
                                       limit_s=sanitize_limit_s(options, target.size_bytes))
            state = _run_parsed(host, ["sg_requests", target.path], parse_requests,
                                          stderr=True)
        except EraseError as exc:
            exc.method = method
            raise
        if state.sanitize_failed:
            raise EraseError(
                f"{target.path}: the sanitize failed ({state.sense_key}: {state.additional}); "
                "the drive refuses reads and writes until a sanitize succeeds (or EXIT "
                "FAILURE MODE, if allowed). Not retrying automatically.", method=method)
        steps.append(f"REQUEST SENSE after it: {state.sense_key}"
                     + (f", {state.additional}" if state.additional else ""))
        reporter.send("SCSI sanitize done", fraction=1.0)
        return method, steps
    raise EraseError(f"{target.path}: no SANITIZE service action was taken")


def prepare_recorded(host: Host, target: EraseTarget, method: str, options: EraseOptions,
                     reporter: Reporter, *, reformat_to: int | None
                     ) -> tuple[EraseTarget, list[str], list[str], dict[str, Any] | None]:
    """Before the markers: the service actions to try, then, when the plan allows it
    (``scsi_reformat_512``), the reformat of a drive whose blocks the kernel cannot use.
    Returns (the target as the kernel sees it now, the order, steps, the record's
    ``scsi_reformat``: the sizes before and after, the command, the kernel's view; None
    without ``reformat_to``)."""
    order, steps = choose(host, target, method)
    busy = _run_parsed(host, ["sg_requests", "--progress", target.path], parse_progress)
    if busy is not None:
        raise EraseError(f"{target.path}: the drive is busy with a sanitize or format "
                         f"({busy:.2f}% done); wait for it to finish, then run again",
                         method=method)
    state: SenseState = _run_parsed(host, ["sg_requests", target.path], parse_requests,
                                          stderr=True)
    if state.sanitize_failed:
        raise EraseError(
            f"{target.path}: the drive is in sanitize failure mode from an earlier sanitize "
            f"({state.sense_key}: {state.additional}): it refuses reads and writes, so no "
            "marker can be written. A sanitize that succeeds ends it (`sg_sanitize --crypto` "
            "or `--block`), or `sg_sanitize --fail` if the failed one allowed it (AUSE); "
            "then run the erase again.", method=method)
    if reformat_to is not None:
        target, more, rec = reformat(host, target, reformat_to, options, reporter)
        return target, order, steps + more, rec
    cap = read_capacity(host, target.path)
    if cap.block_size not in REFORMAT_SIZES:
        raise NoEraseMethod(
            f"{target.path}: the drive is formatted with {cap.block_size}-byte blocks, which "
            "the kernel cannot read or write (capacity 0): set scsi_reformat_512 = true to "
            "reformat it to 512 first (sg_format; the record names both sizes)",
            method=method)
    steps.append(f"{cap.block_size} bytes a block, {cap.blocks} blocks, protection type "
                 f"{cap.protection_type}: no reformat")
    return _as_seen(target, cap), order, steps, None
