from __future__ import annotations

import io
import subprocess
import sys

from ssdbench.kiosk.config import KioskConfig, parse_config
from ssdbench.kiosk.run import EventLines
from ssdbench.progress import Progress
from tests.conftest import REPO


def test_one_line_per_event_with_the_stage_mean() -> None:
    out = io.StringIO()
    lines = EventLines(out)
    lines(Progress("nvme0n1", "trim", "probe-clean", "running", message="started"))
    for rate in (300.0, 310.0, 320.0):
        lines(Progress("nvme0n1", "trim", "probe-clean", "running", fraction=0.5, mib_s=rate))
    lines(Progress("nvme0n1", "trim", "probe-clean", "running", message="result",
                   fraction=1.0, mib_s=312.44, iops=2499.5))
    lines(Progress("nvme0n1", "trim", "probe-clean", "done", message="done"))
    lines(Progress("sda", "consistency-default", "torture", "running", iops=1000.0))
    lines(Progress("sda", "consistency-default", "torture", "running", iops=3000.0))
    lines(Progress("sda", "consistency-default", "torture", "done", message="done"))
    lines(Progress("sda", "trim", "erase", "failed", message="secure erase failed: frozen"))
    assert out.getvalue().splitlines() == [
        "ssdbench: nvme0n1 trim probe-clean started",
        "ssdbench: nvme0n1 trim probe-clean done 312.4 MiB/s",
        "ssdbench: sda consistency-default torture done 2,000 IOPS",
        "ssdbench: sda trim erase failed: secure erase failed: frozen",
    ]


def test_kiosk_never_loads_textual() -> None:
    code = ("import sys, ssdbench.commands.kiosk, ssdbench.kiosk.run, ssdbench.plan.engine;"
            "sys.exit(1 if 'textual' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


PSID = "00215A9C0AA61EDA8F92DE7A9E30D969"


def _kiosk_config(**keys: object) -> KioskConfig:

    return parse_config({"plan": "erase", "destroy": "all-eligible",
                         "params": {"psid": PSID}, **keys})


def test_a_kiosk_psid_needs_select_to_name_exactly_one_drive_by_serial() -> None:
    """A `[params]` psid is tried on every locked drive of the session; each other drive
    answers NOT_AUTHORIZED and may lock out until a power cycle."""
    import pytest

    from ssdbench.kiosk.config import ConfigError
    from ssdbench.kiosk.run import _plan_for

    for select in ("all-eligible", ["model:Samsung*"], ["serial:S1", "serial:S2"]):
        with pytest.raises(ConfigError, match=r"`params\.psid`: a PSID belongs to one drive"):
            _plan_for(_kiosk_config(select=select))
    plan = _plan_for(_kiosk_config(select=["serial:S1"]))
    assert plan.params.psid == PSID


def test_a_kiosk_psid_is_refused_in_station_mode() -> None:
    import pytest

    from ssdbench.kiosk.config import ConfigError
    from ssdbench.kiosk.run import _plan_for

    with pytest.raises(ConfigError, match=r"`params\.psid`: not allowed with \[station\]"):
        _plan_for(_kiosk_config(select=["serial:S1"],
                                station={"idle_minutes": 1}))
