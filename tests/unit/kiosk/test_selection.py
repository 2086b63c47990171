"""A kiosk whose `select` matches nothing says which entry, on screen and in the results,
and exits non-zero (#24 item 3), on the QEMU machine's recorded drives."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ssdbench.devices.bundle import load_bundle
from ssdbench.exitcodes import ExitCode
from ssdbench.kiosk.run import KioskOptions, run_kiosk
from ssdbench.system import Host

QEMU = Path(__file__).resolve().parents[2] / "data" / "bundles" / "qemu-nvme-ahci-usb"


def kiosk(tmp_path: Path, select: str, *, dry_run: bool) -> tuple[int, str, str, Path]:
    config = tmp_path / "ssdbench.toml"
    config.write_text(f'plan = "quick"\nselect = {select}\ndestroy = "all-eligible"\n')
    b = load_bundle(QEMU)
    out, err = io.StringIO(), io.StringIO()
    results = tmp_path / "results"
    rc = run_kiosk(KioskOptions(config=config, results=results, dry_run=dry_run,
                                no_power=True), Host(b.runner, b.fs), out, err)
    return rc, out.getvalue(), err.getvalue(), results


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_selector_that_matches_nothing_is_named_and_fails(tmp_path: Path,
                                                            dry_run: bool) -> None:
    rc, out, err, results = kiosk(tmp_path, '["serial:NOSUCHSERIAL"]', dry_run=dry_run)
    assert rc == ExitCode.NO_SUCH_DRIVE
    line = "`select` entry serial:NOSUCHSERIAL matched no drive"
    assert line in out and line in err
    assert "SSDBNVME0001" in err  # the drives that were there, to fix the config by
    if dry_run:
        assert not results.exists()  # a dry run writes nothing
    else:
        assert line in (results / "kiosk.txt").read_text()


def test_one_entry_matching_nothing_fails_the_run_though_another_matched(
        tmp_path: Path) -> None:
    rc, out, _err, _ = kiosk(tmp_path, '["serial:SSDBNVME0001", "model:Samsung*"]',
                             dry_run=True)
    assert rc == ExitCode.NO_SUCH_DRIVE
    assert "`select` entry model:Samsung* matched no drive" in out
    assert "would run quick on /dev/nvme0n1" in out


def test_a_selection_that_matches_is_a_success(tmp_path: Path) -> None:
    rc, out, _err, _ = kiosk(tmp_path, '["serial:SSDBNVME0001"]', dry_run=True)
    assert rc == ExitCode.OK, out
    assert "matched no drive" not in out
