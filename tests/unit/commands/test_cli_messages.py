"""What `ssdbench run` and the kiosk say when a value is wrong (#24 item 9), on recorded
drives: each message names what was given, what was expected, and where it came from."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from ssdbench.cli import build_parser
from ssdbench.commands import run as run_cmd
from ssdbench.devices.bundle import load_bundle
from ssdbench.exitcodes import ExitCode
from ssdbench.kiosk.run import KioskOptions, run_kiosk
from ssdbench.stages.params import ParamError, RunParams
from ssdbench.system import Host

BUNDLES = Path(__file__).resolve().parents[2] / "data" / "bundles"


def host(name: str = "this-machine-virtio-loop") -> Host:
    b = load_bundle(BUNDLES / name)
    return Host(b.runner, b.fs)


def run(argv: list[str], tmp_path: Path) -> tuple[int, str]:
    args: argparse.Namespace = build_parser().parse_args(
        ["run", *argv, "--results", str(tmp_path / "results")])
    err = io.StringIO()
    rc = run_cmd.main(args, host=host(), err=err)
    return rc, err.getvalue()


def test_a_wrong_consent_echoes_what_was_given_and_the_consent_id(tmp_path: Path) -> None:
    rc, err = run(["/dev/loop1", "--destroy", "WRONG"], tmp_path)
    assert rc == ExitCode.REFUSED
    assert "()" not in err  # a loop device has no model: no empty parentheses
    assert "'WRONG'" in err and "'loop1'" in err, err


def test_no_consent_at_all_says_so(tmp_path: Path) -> None:
    rc, err = run(["/dev/loop1"], tmp_path)
    assert rc == ExitCode.REFUSED
    assert "no --destroy" in err and "'loop1'" in err, err


def test_an_unknown_drive_lists_the_drives_list_shows(tmp_path: Path) -> None:
    rc, err = run(["/dev/sdz"], tmp_path)
    assert rc == ExitCode.NO_SUCH_DRIVE
    assert "/dev/loop1" in err and "/dev/vda" in err
    for hidden in ("/dev/loop0", "/dev/loop7", "/dev/zram0"):  # `list` hides them
        assert hidden not in err, err


def test_a_bad_kiosk_param_is_blamed_on_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "ssdbench.toml"
    config.write_text('plan = "quick"\ndestroy = "all-eligible"\n[params]\n'
                      "torture_seconds = -5\n")
    err = io.StringIO()
    rc = run_kiosk(KioskOptions(config=config, results=tmp_path / "r", dry_run=True,
                                no_power=True), host(), io.StringIO(), err)
    assert rc == ExitCode.USAGE
    assert f"{config} [params]" in err.getvalue()
    assert "command line" not in err.getvalue()


def test_unknown_keys_read_the_same_in_params_as_in_plans_and_the_kiosk() -> None:
    try:
        RunParams().with_values({"nonsense": 1}, source="x.toml")
    except ParamError as exc:
        assert str(exc).startswith("x.toml: `nonsense`: unknown key; the keys are "), exc
    else:
        raise AssertionError("an unknown key was accepted")


def test_a_psid_with_two_drives_is_refused_before_any_is_touched(tmp_path: Path) -> None:
    """A PSID is one drive's: with two drives it would be tried on the other as well (a
    NOT_AUTHORIZED there, perhaps a lock-out until a power cycle)."""
    psid = "00215A9C0AA61EDA8F92DE7A9E30D969"
    rc, err = run(["/dev/loop1", "/dev/loop2", "--plan", "erase", "--set", f"psid={psid}",
                   "--destroy", "loop1", "--destroy", "loop2"], tmp_path)
    assert rc == ExitCode.USAGE and "a PSID belongs to one drive" in err, err
    assert psid not in err
