from __future__ import annotations

import io
import subprocess
import sys

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
