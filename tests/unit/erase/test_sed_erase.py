"""Locked self-encrypting drives in the erase room: refused with the advice, and the PSID
revert step (sedutil-cli through the one runner, fed captured outputs: the only way to test it
without an Opal drive)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ssdbench.devices.sed import parse_sedutil_query
from ssdbench.erase import EraseOptions, NoEraseMethod, choose_method, target_from_drive
from ssdbench.erase.model import EraseTarget
from ssdbench.erase.psid import (
    PsidError,
    PsidRevert,
    check_typed_twice,
    normalize_psid,
    psid_revert,
    revert_argv,
)
from ssdbench.system import CommandNotFound, Host

from ..devices.test_sed import capture
from .replay import FakeFS, ScriptedRunner


def locked_drive_json() -> dict[str, object]:
    sed = parse_sedutil_query(capture("sedutil-query_samsung-pm810_opal1-locked_sedutil-325.txt"))
    return {"path": "/dev/sdb", "name": "sdb", "transport": "sata", "serial": "S0S8NEAB909523",
            "model": "SAMSUNG SSD PM810 FDE 2.5\" 256GB", "size_bytes": 256 * 10**9,
            "logical_block_size": 512, "erase_methods": [],
            "ata_security": {"supported": True, "enabled": False, "locked": False,
                             "frozen": False, "expired": False, "enhanced_supported": True},
            "sed": sed.to_json()}


def test_target_from_a_locked_drive_carries_the_reason_and_advice() -> None:
    target = target_from_drive(locked_drive_json())
    assert "Opal 1" in target.sed_lock and "PSID revert" in target.sed_lock


@pytest.mark.parametrize("fallback", ["fail", "discard"])
def test_erase_of_a_locked_drive_is_refused_with_the_advice(fallback: str) -> None:
    target = target_from_drive(locked_drive_json())
    with pytest.raises(NoEraseMethod, match=r"locked self-encrypting drive.*PSID revert"):
        choose_method(target, options=EraseOptions(erase_fallback=fallback))
    with pytest.raises(NoEraseMethod, match="locked self-encrypting drive"):
        choose_method(target, "ata-security-erase")


def test_an_unlocked_target_still_erases() -> None:
    drive = locked_drive_json()
    drive.pop("sed")
    target: EraseTarget = target_from_drive(drive)
    assert target.sed_lock == "" and choose_method(target) == "ata-security-erase-enhanced"


# ---- PSID revert (sedutil-cli through the runner, fed captured outputs) ----

PSID = "00215A9C0AA61EDA8F92DE7A9E30D969"  # the one posted in sedutil #340 (a revoked drive)


def test_psid_is_normalised_and_checked_typed_twice() -> None:
    assert normalize_psid("00215a9c-0aa6-1eda 8f92de7a9e30d969") == PSID
    assert check_typed_twice(PSID.lower(), PSID) == PSID
    with pytest.raises(ValueError, match="differ"):
        check_typed_twice(PSID, PSID[:-1] + "0")
    with pytest.raises(ValueError, match="32 characters; this one has 31"):
        normalize_psid(PSID[:-1])
    with pytest.raises(ValueError, match="letters and digits"):
        normalize_psid(PSID[:-1] + "!")


def _revert(stderr: str, returncode: int) -> PsidRevert:
    runner = ScriptedRunner()
    runner.add(revert_argv(PSID, "/dev/sdb"), "", stderr=stderr, returncode=returncode)
    result = psid_revert(Host(runner, FakeFS()), "/dev/sdb", PSID.lower())
    assert runner.calls == [("sedutil-cli", "--yesIreallywanttoERASEALLmydatausingthePSID",
                             PSID, "/dev/sdb")]
    return result


def test_psid_revert_refused_with_a_wrong_psid() -> None:
    out = _revert(capture("sedutil-psid-revert_not-authorized_sedutil-476.txt"), 1)
    assert out.result == "failed" and out.exit_code == 1
    assert "NOT_AUTHORIZED" in out.detail and "no dashes" in out.detail
    record = out.to_dict()
    assert record["method"] == "tcg-psid-revert" and PSID not in str(record)


def test_psid_revert_failing_with_tcg_status_fail() -> None:
    out = _revert(capture("sedutil-psid-revert_fail-rc63_sedutil-325.txt"), 63)
    assert out.result == "failed" and out.detail == "sedutil-cli failed (TCG status FAIL)"


def test_psid_revert_locked_out_asks_for_a_power_cycle() -> None:
    out = _revert("Command failed on send 255\nSession start failed rc = 255\n", 255)
    assert "power-cycle" in out.detail


def test_the_psid_is_hidden_from_the_logs_while_sedutil_runs() -> None:
    """The PSID goes to sedutil-cli's argv; log.txt and the screen (every CommandRecord)
    show *** (system.hidden_in_logs), and only while the revert runs."""
    from ssdbench.system import shown_argv

    seen: list[tuple[str, ...]] = []
    runner = ScriptedRunner()
    argv = revert_argv(PSID, "/dev/sdb")
    runner.add(argv, "", stderr="revertTper completed successfully\n", returncode=0)
    inner = runner.run

    def run(argv: Sequence[str], **kw: Any) -> Any:
        seen.append(shown_argv(argv))
        return inner(argv, **kw)

    runner.run = run  # type: ignore[method-assign]
    psid_revert(Host(runner, FakeFS()), "/dev/sdb", PSID)
    assert seen == [("sedutil-cli", "--yesIreallywanttoERASEALLmydatausingthePSID", "***",
                     "/dev/sdb")]
    assert shown_argv(argv) == tuple(argv)


def test_psid_revert_done() -> None:
    # sedutil's success line (DtaDevOpal::revertTPer, LOG(I)): from its source, not a capture
    out = _revert("revertTper completed successfully\n", 0)
    assert out.result == "done" and "revertTper completed successfully" in out.detail


def test_psid_revert_without_sedutil_says_which_image_has_it() -> None:
    runner = ScriptedRunner()
    argv = revert_argv(PSID, "/dev/sdb")
    runner.add(argv, exception=CommandNotFound(argv, "not installed"))
    with pytest.raises(PsidError, match="stick image has it"):
        psid_revert(Host(runner, FakeFS()), "/dev/sdb", PSID)
