"""PSID revert of a TCG Opal / Enterprise drive: the factory reset that needs no password,
only the PSID printed on the drive's label. It destroys the media encryption key (Opal: the
Revert method on the Admin SP, authenticated as PSID) - every byte on the drive becomes
unreadable, and the locking set up by the previous owner is gone.

Run with ``sedutil-cli --yesIreallywanttoERASEALLmydatausingthePSID PSID DEV`` (its long
alias ``--PSIDrevert`` takes the same arguments; sedutil Common/DtaOptions.cpp) through the
one runner. sedutil returns the TCG method status as its exit code: 1 NOT_AUTHORIZED (a wrong
PSID), 0x3F (63) FAIL, 255 when the drive refuses more attempts until a power cycle. Tested
with a fake runner fed captured outputs (tests/data/sed): no Opal drive is at hand.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from ssdbench.erase.model import EraseError
from ssdbench.system import CommandError, CommandNotFound, Host, hidden_in_logs

PSID_LENGTH = 32
PSID_REVERT_TIMEOUT_S = 3 * 3600.0  # Pyrite drives block-erase on revert (sedutil #507)
METHOD = "tcg-psid-revert"


class PsidError(EraseError):
    """The PSID revert was refused or failed; the message says why and what to do."""


def normalize_psid(text: str) -> str:
    """The PSID as sedutil wants it: upper case, without the dashes and spaces labels print
    (sedutil's help: <PSIDALLCAPSNODASHED>). Raises ValueError naming what is wrong."""
    psid = re.sub(r"[\s-]", "", text).upper()
    if not psid:
        raise ValueError("no PSID typed (32 characters from the drive's label)")
    if not psid.isalnum() or not psid.isascii():
        raise ValueError("a PSID has only letters and digits (dashes and spaces are dropped)")
    if len(psid) != PSID_LENGTH:
        raise ValueError(f"a PSID has {PSID_LENGTH} characters; this one has {len(psid)}")
    return psid


def check_typed_twice(first: str, second: str) -> str:
    """The PSID typed twice must match (after dropping dashes and case): returns it."""
    a, b = normalize_psid(first), normalize_psid(second)
    if a != b:
        raise ValueError("the two PSIDs differ: type the PSID from the label again")
    return a


def revert_argv(psid: str, device: str) -> list[str]:
    return ["sedutil-cli", "--yesIreallywanttoERASEALLmydatausingthePSID", psid, device]


_STATUS = re.compile(r"method status code (\w+)")


def explain_failure(returncode: int | None, output: str) -> str:
    """What a failed revert means for the operator, from sedutil's status line / code."""
    status = _STATUS.search(output)
    name = status.group(1) if status else ""
    if name == "NOT_AUTHORIZED" or returncode == 1:
        return ("the drive refused the PSID (NOT_AUTHORIZED): check it on the label - 32 "
                "characters, upper case, no dashes - and try again")
    if returncode == 255 or "NO_SESSIONS_AVAILABLE" in output:
        return ("the drive accepts no more attempts now (too many tries or a crashed "
                "session): power-cycle it and try again")
    if "header fields have 0 length" in output and not name:
        return ("the drive did not answer the TCG session (TRUSTED SEND/RECEIVE blocked: "
                "libata.allow_tpm=1 missing, a USB bridge or a RAID controller, or no TCG "
                "support)")
    what = f"TCG status {name}" if name else f"exit code {returncode}"
    return f"sedutil-cli failed ({what})"


@dataclass(frozen=True)
class PsidRevert:
    """What was done: the erase record's ``tcg_revert`` (the PSID itself is not kept)."""

    device: str
    started: str
    finished: str
    duration_s: float
    result: str  # "done" | "failed"
    detail: str
    exit_code: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"method": METHOD, "tool": "sedutil-cli", "device": self.device,
                "psid_typed_twice": True, "started": self.started, "finished": self.finished,
                "duration_s": round(self.duration_s, 1), "result": self.result,
                "detail": self.detail, "exit_code": self.exit_code}


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def psid_revert(host: Host, device: str, psid: str) -> PsidRevert:
    """Revert ``device`` with ``psid`` (already checked with :func:`check_typed_twice`).
    Never raises for a refused revert: the result says "failed" and why (the record keeps
    it); raises PsidError only when sedutil-cli is not there at all."""
    psid = normalize_psid(psid)
    wall0, t0 = time.time(), time.monotonic()
    try:
        with hidden_in_logs(psid):  # on the label, but not in log.txt, the screen or a store
            res = host.runner.run(revert_argv(psid, device), timeout=PSID_REVERT_TIMEOUT_S)
    except CommandNotFound:
        raise PsidError(
            "PSID revert needs sedutil-cli, which this image does not have (the stick image "
            "has it; the Debian dev image does not)") from None  # its argv holds the PSID
    except CommandError as exc:
        out = exc.stdout.decode("utf-8", "replace") + exc.stderr_tail
        return PsidRevert(device, _utc(wall0), _utc(time.time()), time.monotonic() - t0,
                          "failed", explain_failure(exc.returncode, out), exc.returncode)
    out = (res.text + res.stderr_text).strip()
    last = out.splitlines()[-1] if out else "sedutil-cli exited 0"
    return PsidRevert(device, _utc(wall0), _utc(time.time()), time.monotonic() - t0,
                      "done", f"PSID revert done: {last}", 0)
