"""ATA SECURITY ERASE UNIT and ATA SANITIZE through hdparm.

Sequence (hdparm.8; tinyapps.org wipe_drives_hdparm; openSeaChest as the model):

1. ``hdparm -I``: Security supported, not locked, not expired; a frozen drive is unfrozen
   by suspend-to-RAM (``rtcwake -m mem``) when the plan allows it, then IDENTIFY again.
2. The temporary password is recorded in the journal (against the drive's identity, so
   twins that share a serial keep one each), THEN set with
   ``--security-set-pass``; IDENTIFY must show ``enabled``.
3. ``--security-erase[-enhanced]`` blocks until the drive is done; a ticker thread reports
   progress from elapsed vs the drive's own estimate. IDENTIFY must show ``not enabled``.
4. On any failure the password is removed again (``--security-unlock`` then
   ``--security-disable``); if that fails too, the journal keeps it for the next boot.
"""

from __future__ import annotations

import secrets

from ssdbench.erase.hdparm import (
    IdentifyInfo,
    IdentifyUnavailable,
    parse_identify,
    parse_sanitize_status,
)
from ssdbench.erase.journal import PasswordEntry, PasswordJournal, find_entry
from ssdbench.erase.model import (
    ATA_SANITIZE_BLOCK,
    ATA_SANITIZE_CRYPTO,
    ATA_SECURITY_ERASE_ENHANCED,
    AtaSecurityState,
    EraseError,
    EraseOptions,
    EraseTarget,
    StallWatch,
)
from ssdbench.erase.ticker import Reporter, Ticker
from ssdbench.system import CommandError, Host

IDENTIFY_TIMEOUT_S = 30.0
SECURITY_CMD_TIMEOUT_S = 60.0
UNKNOWN_ERASE_TIMEOUT_S = 12 * 3600
RESUME_SETTLE_S = 30.0  # how long IDENTIFY may keep failing right after resume

HOTPLUG_HELP = (
    "The BIOS froze the drive's security at power-on. Unfreeze it by hot-plugging: with the "
    "machine running, unplug the drive's SATA power cable for a few seconds and plug it back "
    "(the data cable stays connected; the port must support hot-plug, AHCI mode), then run "
    "the erase again. Some firmwares re-freeze drives on resume, so suspend-to-RAM may not "
    "help on this machine."
)


def erase_timeout_s(estimate_min: int | None, size_bytes: int, *, lower_bound: bool = False) -> int:
    """hdparm's own rule (``get_erase_timeout_secs``): the larger of 2 x estimate + 60 min
    and capacity at 30 MiB/s + 30 min; "more than 508 min" counts as 508 + 90 min; 12 h
    when nothing is known."""
    by_capacity = (size_bytes // (1024 * 1024)) // 30 + 30 * 60 if size_bytes > 0 else 0
    if estimate_min:
        minutes = estimate_min + 90 if lower_bound else estimate_min * 2 + 60
        by_estimate = minutes * 60
    else:
        by_estimate = 0
    best = max(by_capacity, by_estimate)
    return best if best > 0 else UNKNOWN_ERASE_TIMEOUT_S


def identify(host: Host, target: EraseTarget) -> IdentifyInfo:
    res = host.runner.run(["hdparm", "-I", target.path], timeout=IDENTIFY_TIMEOUT_S)
    try:
        info = parse_identify(res.text)
    except IdentifyUnavailable as exc:
        raise EraseError(f"{target.path}: {exc}") from exc
    if info.security is None:
        raise EraseError(f"{target.path}: hdparm -I shows no Security section")
    return info


def _security(info: IdentifyInfo) -> AtaSecurityState:
    assert info.security is not None
    return info.security


def _hdparm_security(host: Host, target: EraseTarget, op: str, password: str) -> None:
    host.runner.run(
        ["hdparm", "--user-master", "u", op, password, target.path],
        timeout=SECURITY_CMD_TIMEOUT_S,
    )


def remove_password(
    host: Host, target: EraseTarget, entry: PasswordEntry, journal: PasswordJournal,
    *, info: IdentifyInfo | None = None,
) -> list[str]:
    """Unlock and disable the temporary password; clear its journal entry once IDENTIFY
    agrees. ``info``: an IDENTIFY the caller has just read (saves one).

    Raises EraseError (the journal keeps the password) when the drive still shows
    security enabled afterwards.
    """
    steps: list[str] = []
    password = entry.password
    sec = _security(info or identify(host, target))
    if sec.enabled:
        errors: list[str] = []
        if sec.locked:
            try:
                _hdparm_security(host, target, "--security-unlock", password)
                steps.append("unlocked with the recorded password")
            except CommandError as exc:
                errors.append(str(exc))
        try:
            _hdparm_security(host, target, "--security-disable", password)
            steps.append("disabled the temporary password")
        except CommandError as exc:
            errors.append(str(exc))
        sec = _security(identify(host, target))
        if sec.enabled:
            raise EraseError(
                f"{target.path}: could not remove the temporary ATA password (it stays in the "
                f"journal for serial {target.serial}; power-cycle the drive and run ssdbench "
                f"again, or run: hdparm --user-master u --security-disable PASSWORD "
                f"{target.path}). " + " / ".join(errors)
            )
    journal.clear_password(entry)
    steps.append("security is not enabled; journal entry cleared")
    return steps


def recover_leftover_password(
    host: Host, target: EraseTarget, journal: PasswordJournal
) -> list[str]:
    """At start (or the next boot): remove a password an earlier run left on the drive.

    The entry is the drive's own, or an older journal's for its serial; a drive that
    shows up locked in another place is offered the one entry of its serial and model
    (:func:`ssdbench.erase.journal.find_entry`). Other drives' entries are left alone.
    """
    entries = [e for e in journal.entries() if e.serial == target.serial]
    if not entries:
        return []
    info = None
    match = find_entry(entries, target, locked=None)
    if match is None:  # only another drive's entries, or this drive moved: is it locked?
        info = identify(host, target)
        match = find_entry(entries, target, locked=_security(info).locked)
        if match is None:
            return []
    return [
        f"journal holds a password from an earlier run for {target.serial} ({match.how})",
        *remove_password(host, target, match.entry, journal, info=info),
    ]


def _others_note(journal: PasswordJournal, target: EraseTarget) -> str:
    """Why the journal's passwords for this serial were not tried (for the refusal)."""
    others = [e for e in journal.entries() if e.serial == target.serial]
    if not others:
        return "none recorded for this serial"
    places = ", ".join(sorted({e.identity.place for e in others if e.identity is not None}))
    return (f"the journal holds {len(others)} password{'s' if len(others) > 1 else ''} for "
            f"this serial recorded for drives in other places ({places}), and cannot tell "
            "which one this drive is; see docs/erase.md 'The password journal'")


def _unfreeze(
    host: Host, target: EraseTarget, options: EraseOptions, reporter: Reporter
) -> tuple[IdentifyInfo, list[str]]:
    steps: list[str] = []
    if not options.allow_suspend:
        raise EraseError(
            f"{target.path}: the drive's security is frozen and the plan does not allow "
            f"suspend-to-RAM (allow_suspend = false). {HOTPLUG_HELP}",
        )
    reporter.send(f"security frozen: suspend-to-RAM for {options.suspend_seconds} s to unfreeze")
    try:
        host.runner.run(
            ["rtcwake", "-m", "mem", "-s", str(options.suspend_seconds)],
            timeout=options.suspend_seconds + 120.0,
        )
    except CommandError as exc:
        raise EraseError(
            f"{target.path}: suspend-to-RAM failed ({exc}); the drive stays frozen. "
            + HOTPLUG_HELP
        ) from exc
    steps.append(f"suspend-to-RAM {options.suspend_seconds} s (rtcwake -m mem)")
    deadline = options.clock.monotonic() + RESUME_SETTLE_S
    while True:
        try:
            info = identify(host, target)
            break
        except (EraseError, CommandError):
            if options.clock.monotonic() >= deadline:
                raise
            options.clock.sleep(1.0)
    if _security(info).frozen:
        raise EraseError(
            f"{target.path}: still frozen after suspend-to-RAM and resume. " + HOTPLUG_HELP
        )
    steps.append("IDENTIFY after resume: not frozen")
    return info, steps


def check_and_prepare(
    host: Host,
    target: EraseTarget,
    journal: PasswordJournal,
    options: EraseOptions,
    reporter: Reporter,
    *,
    security_needed: bool,
) -> tuple[IdentifyInfo, list[str]]:
    """IDENTIFY, recover a leftover password, refuse what cannot work, unfreeze."""
    steps = recover_leftover_password(host, target, journal)
    info = identify(host, target)
    sec = _security(info)
    if sec.expired:
        raise EraseError(
            f"{target.path}: security count expired (too many wrong passwords); "
            "power-cycle the drive and try again"
        )
    if sec.locked or sec.enabled:
        raise EraseError(
            f"{target.path}: ATA security is {'locked' if sec.locked else 'enabled'} with a "
            f"password ssdbench does not know ({_others_note(journal, target)}); it cannot "
            "be erased without that password (a PSID revert or the master password may help)"
        )
    if security_needed and not sec.supported:
        raise EraseError(f"{target.path}: the drive does not support the ATA Security feature set")
    if security_needed and sec.frozen:
        info, more = _unfreeze(host, target, options, reporter)
        steps += more
    return info, steps


def security_erase(
    host: Host,
    target: EraseTarget,
    method: str,
    *,
    journal: PasswordJournal,
    options: EraseOptions,
    reporter: Reporter,
    checked: tuple[IdentifyInfo, list[str]] | None = None,
) -> list[str]:
    """``checked``: what :func:`check_and_prepare` (security_needed=True) returned when the
    caller ran it already (erase_drive does, before it writes its markers)."""
    enhanced = method == ATA_SECURITY_ERASE_ENHANCED
    info, steps = checked or check_and_prepare(
        host, target, journal, options, reporter, security_needed=True
    )
    sec = _security(info)
    if enhanced and not sec.enhanced_supported:
        raise EraseError(f"{target.path}: enhanced security erase is not supported", method=method)
    password = options.password or "ssdb" + secrets.token_hex(8)
    # The journal first: a crash between these two lines leaves a recorded password that
    # was never set (harmless), never a set password that nobody knows.
    entry = PasswordEntry(target.serial, password, target.identity)
    journal.record_password(entry)
    steps.append("temporary password recorded in the journal")
    try:
        reporter.send("setting a temporary ATA user password")
        _hdparm_security(host, target, "--security-set-pass", password)
        info = identify(host, target)
        sec = _security(info)
        if not sec.enabled:
            raise EraseError(
                f"{target.path}: SECURITY SET PASSWORD did not enable security "
                "(IDENTIFY still shows 'not enabled')",
                method=method,
            )
        steps.append(f"password set (security enabled, level {sec.level or 'unknown'})")
        estimate = sec.enhanced_erase_minutes if enhanced else sec.erase_minutes
        lower = info.enhanced_erase_lower_bound if enhanced else info.erase_lower_bound
        timeout = erase_timeout_s(estimate, target.size_bytes, lower_bound=lower)
        op = "--security-erase-enhanced" if enhanced else "--security-erase"
        expected = estimate * 60.0 if estimate else None
        label = "enhanced security erase" if enhanced else "security erase"
        with Ticker(reporter, f"ATA {label} (drive estimate {estimate or '?'} min)", expected):
            host.runner.run(
                ["hdparm", "--user-master", "u", op, password, target.path],
                # hdparm's own SG_IO timeout is `timeout`; ours only guards a hung hdparm.
                timeout=timeout + 600.0,
            )
        steps.append(f"SECURITY ERASE UNIT ({label}) returned success")
        sec = _security(identify(host, target))
        if sec.enabled:
            raise EraseError(
                f"{target.path}: hdparm reported success but security is still enabled",
                method=method,
            )
    except (EraseError, CommandError) as exc:
        reason = str(exc)
        try:
            steps += remove_password(host, target, entry, journal)
            cleanup = "the temporary password was removed"
        except (EraseError, CommandError) as cexc:
            cleanup = f"and removing the password failed too: {cexc}"
        raise EraseError(f"ATA {method} failed: {reason}; {cleanup}", method=method) from exc
    journal.clear_password(entry)
    steps.append("IDENTIFY: security not enabled; password gone; journal entry cleared")
    return steps


def sanitize(
    host: Host,
    target: EraseTarget,
    method: str,
    *,
    journal: PasswordJournal,
    options: EraseOptions,
    reporter: Reporter,
    checked: tuple[IdentifyInfo, list[str]] | None = None,
) -> list[str]:
    """ATA SANITIZE (BLOCK ERASE / CRYPTO SCRAMBLE) started by hdparm, then polled.
    ``checked``: as for :func:`security_erase`."""
    _, steps = checked or check_and_prepare(
        host, target, journal, options, reporter, security_needed=False
    )
    flag = {
        ATA_SANITIZE_BLOCK: "--sanitize-block-erase",
        ATA_SANITIZE_CRYPTO: "--sanitize-crypto-scramble",
    }[method]
    host.runner.run(
        ["hdparm", "--yes-i-know-what-i-am-doing", flag, target.path],
        timeout=SECURITY_CMD_TIMEOUT_S,
    )
    steps.append(f"hdparm {flag}: started in background")
    clock = options.clock
    start = clock.monotonic()
    limit = options.sanitize_timeout_s or float(erase_timeout_s(None, target.size_bytes))
    watch = StallWatch(options.sanitize_stall_s, start)
    while True:
        res = host.runner.run(
            ["hdparm", "--sanitize-status", target.path], ok_codes=range(256), timeout=30.0
        )
        status = parse_sanitize_status(res.text, res.stderr_text)
        now = clock.monotonic()
        if status.failed:
            raise EraseError(
                f"{target.path}: ATA sanitize failed (state {status.state}); the drive stays "
                "in the failed state until a sanitize succeeds. Not retrying.",
                method=method,
            )
        if status.state == "SD2":
            stuck = watch.stalled_for(status.fraction, now)
            if stuck is not None:
                raise EraseError(
                    f"{target.path}: ATA sanitize made no progress for "
                    f"{stuck:.0f} s (stuck at {100 * (status.fraction or 0):.1f}%). "
                    "Not retrying automatically.",
                    method=method,
                )
            reporter.send("ATA sanitize", fraction=status.fraction)
        elif status.completed_ok or status.state in ("SD0", "SD4"):
            if not status.completed_ok:
                raise EraseError(
                    f"{target.path}: sanitize is idle but the drive does not report "
                    "'Completed Without Error'",
                    method=method,
                )
            steps.append("sanitize status: Last Sanitize Operation Completed Without Error")
            return steps
        elif status.state == "SD1":
            raise EraseError(f"{target.path}: sanitize is frozen (SD1)", method=method)
        if now - start > limit:
            raise EraseError(f"{target.path}: sanitize did not finish in {limit:.0f} s")
        clock.sleep(options.poll_interval_s)
