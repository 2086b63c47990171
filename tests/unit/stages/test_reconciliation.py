"""A broken reconciliation (a doctored fio log) reaches run.json as a warning the report
shows; a good one replaces an earlier warning of the same stage (stages/measure.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ssdbench.fio.logs import write_run_csvs
from ssdbench.report.html import warnings_html
from ssdbench.report.model import run_warnings
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, Target
from ssdbench.stages.measure import record_reconciliation
from ssdbench.stages.params import RunParams
from ssdbench.system import live_host
from tests.unit.fio.conftest import make_run_dir


def test_a_doctored_log_becomes_a_warning_in_run_json_and_the_report(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "torture-3s", "torture")
    log = run_dir / "fio" / "torture_iops.1.log"
    log.write_text(log.read_text() + "3000, 65751, 1, 0, 0\n")  # every second logged
    record = RunRecord.create(run_dir, run="consistency-default", kind="consistency",
                              drive={}, target={}, params={}, tools={})
    ctx = RunContext(host=live_host(), run_dir=run_dir, drive_name="loop9",
                     run_name="consistency-default",
                     target=Target("/dev/loop9", "block", "loop9", 32 * 2**20),
                     params=RunParams(), record=record)

    def check_and_record() -> dict[str, Any]:
        check = write_run_csvs(run_dir)["torture"]
        record_reconciliation(ctx, "torture", check.to_dict(), check.warning())
        return json.loads((run_dir / "run.json").read_text())  # type: ignore[no-any-return]

    meta = check_and_record()
    assert meta["reconciliation"]["torture"]["within_tolerance"] is True
    assert run_warnings(meta) == []

    log.write_text(log.read_text().replace("1000, 135276,", "1000, 35276,"))  # doctored
    meta = check_and_record()
    entry = meta["reconciliation"]["torture"]
    assert entry["fio_total"] == 318135 and 218000 < entry["series_total"] < 219000
    assert entry["within_tolerance"] is False and entry["relative_gap"] < -0.3
    [warning] = run_warnings(meta)
    assert warning.startswith("iops.csv: the per-second series sums to 218,")
    assert "fio&#x27;s own total is 318,135" in warnings_html(run_warnings(meta))
    # checked again (the same stage): one warning, not two
    assert len(run_warnings(check_and_record())) == 1
