"""Restoring the native max (an HPA's hidden sectors) before the erase (#22 item 4): the
hdparm -N calls through the one runner, fed the public captures of tests/data/erase/hidden.
On a device (the real hdparm and kernel): the emulated SATA SSD in QEMU,
tests/integration/test_ata_emu_qemu.py (QEMU's own IDE/AHCI has no SET MAX ADDRESS)."""

from __future__ import annotations

from ssdbench.erase.hidden import restore_native_max, restore_native_max_argv
from ssdbench.system import Host

from .replay import FakeFS, ScriptedRunner
from .test_hidden import capture

ENABLED = capture("hdparm-N_hpa-enabled_forensicswiki.txt").replace("/dev/sdc", "/dev/sda")
RESTORED = "/dev/sda:\n max sectors   = 586072368/586072368, HPA is disabled\n"


def _run(*replies: tuple[list[str], str, int]) -> tuple[dict[str, object], ScriptedRunner]:
    runner = ScriptedRunner()
    for argv, out, code in replies:
        runner.add(argv, out, returncode=code, stderr="SET_MAX_ADDRESS(_EXT) failed" if code
                   else "")
    return restore_native_max(Host(runner, FakeFS()), "/dev/sda"), runner


def test_restore_sets_the_native_max_permanently_and_checks_it() -> None:
    n = ["hdparm", "-N", "/dev/sda"]
    out, runner = _run((n, ENABLED, 0), (["hdparm", "-N", "p586072368", "/dev/sda"], "", 0),
                       (n, RESTORED, 0))
    assert out["result"] == "done"
    assert (out["before_sectors"], out["native_sectors"], out["after_sectors"]) == (
        586070255, 586072368, 586072368)
    assert runner.calls[1] == ("hdparm", "-N", "p586072368", "/dev/sda")
    assert "--yes-i-know-what-i-am-doing" not in restore_native_max_argv("/dev/sda", 5)


def test_restore_not_needed_without_an_hpa() -> None:
    disabled = capture("hdparm-N_hpa-disabled_forensicswiki.txt")
    out, runner = _run((["hdparm", "-N", "/dev/sda"], disabled, 0))
    assert out["result"] == "not needed" and len(runner.calls) == 1


def test_restore_refused_by_the_drive_is_a_failure_with_the_reason() -> None:
    n = ["hdparm", "-N", "/dev/sda"]
    out, _ = _run((n, ENABLED, 0), (["hdparm", "-N", "p586072368", "/dev/sda"], "", 5))
    assert out["result"] == "failed" and "one permanent change per power cycle" in str(
        out["reason"])


def test_restore_that_did_not_take_is_a_failure() -> None:
    n = ["hdparm", "-N", "/dev/sda"]
    out, _ = _run((n, ENABLED, 0), (["hdparm", "-N", "p586072368", "/dev/sda"], "", 0),
                  (n, ENABLED, 0))
    assert out["result"] == "failed" and "still hides 2113 sectors" in str(out["reason"])


def _restore_with_kernel(size: str) -> dict[str, object]:
    n = ["hdparm", "-N", "/dev/sda"]
    runner = ScriptedRunner()
    runner.add(n, ENABLED)
    runner.add(["hdparm", "-N", "p586072368", "/dev/sda"], "")
    runner.add(n, RESTORED)
    runner.add(["sh", "-c", "echo 1 > /sys/block/sda/device/rescan"], "")
    return restore_native_max(Host(runner, FakeFS({"/sys/block/sda/size": size})), "/dev/sda")


def test_restore_rescans_so_the_kernel_sees_the_native_max() -> None:
    out = _restore_with_kernel("586072368\n")
    assert out["result"] == "done"
    assert out["kernel"] == {"command": "sh -c echo 1 > /sys/block/sda/device/rescan",
                             "sectors": 586072368}


def test_restore_the_kernel_does_not_see_is_a_failure() -> None:
    out = _restore_with_kernel("586070255\n")
    assert out["result"] == "failed" and "kernel still sees 586070255" in str(out["reason"])
