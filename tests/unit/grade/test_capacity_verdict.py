"""The drive's ONE capacity verdict (grade/capacity.py ``drive_capacity``) from the quick
and the full check, the stronger evidence winning, and every writer showing it: run.json's
``capacity``, summary.csv, report.html, the erase record and its certificate, the fleet
page. Issue #43: a quick "genuine" and a full "FAKE (wraps)" were both shown, each where
it was read, and the certificate said "Capacity check: genuine"."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ssdbench.grade.capacity import check_capacity, check_full, drive_capacity
from tests.unit.grade.test_capacity import MIB, Model, OneBad
from tests.unit.grade.test_capacity_full import Chunked

B = 4096
REAL = 48 * MIB + B  # a wrap off the grid


def quick(model: Model) -> dict[str, Any]:
    r = check_capacity(model, model.claimed, B, evict=4 * MIB, nonce=b"q" * 16)
    return {**r.to_json(), "summary": r.summary}


def full(model: Model) -> dict[str, Any]:
    drive = Chunked(model)
    r = check_full(drive, model.claimed, B, 512, clock=lambda: drive.t, nonce=7,
                   evict=4 * MIB)
    return {**r.to_json(), "summary": r.summary}


@pytest.fixture(scope="module")
def contradicting() -> dict[str, Any]:
    """The issue's run.json: the quick check saw a genuine drive, the full check the
    wrap (two models: today's quick check finds this wrap itself)."""
    return {"authenticity": quick(Model(96 * MIB, 96 * MIB)),
            "capacity_full": full(Model(96 * MIB, REAL, "wrap"))}


def test_a_full_checks_fake_beats_a_quick_checks_genuine(contradicting: dict[str, Any]) -> None:
    assert contradicting["authenticity"]["verdict"] == "genuine"
    d = drive_capacity(contradicting)
    assert d is not None
    assert (d["verdict"], d["fake"], d["real_bytes"], d["by"]) == (
        "wraps", True, REAL, "full check")
    assert d["summary"].startswith("FAKE (wraps): 50,335,744 of 100,663,296 bytes")


def test_a_fake_beats_failing_and_failing_beats_genuine() -> None:
    failing = quick(OneBad(64 * MIB, 64 * MIB))
    assert failing["verdict"] == "unreadable"
    genuine_full = full(Model(64 * MIB, 64 * MIB))
    d = drive_capacity({"authenticity": failing, "capacity_full": genuine_full})
    assert d is not None and (d["verdict"], d["by"]) == ("unreadable", "quick check")
    fake = quick(Model(64 * MIB, 20 * MIB, "drop"))
    d = drive_capacity({"authenticity": fake, "capacity_full": full(OneBad(64 * MIB, 64 * MIB))})
    assert d is not None and (d["verdict"], d["real_bytes"], d["by"]) == (
        "drops", 20 * MIB, "quick check")
    assert drive_capacity({}) is None
    # untrusted run.json: a verdict it does not know, or numbers that are not, count as none
    assert drive_capacity({"authenticity": {"verdict": "<b>genuine</b>"}}) is None
    d = drive_capacity({"authenticity": {"verdict": "wraps", "real_bytes": "12", "summary": 3}})
    assert d is not None and (d["real_bytes"], d["summary"]) == (None, "wraps")


def test_every_writer_shows_the_one_verdict(tmp_path: Path,
                                            contradicting: dict[str, Any]) -> None:
    from ssdbench.lab.fleet import _capacity
    from ssdbench.record.render import _grade_heading
    from ssdbench.record.stage import _authenticity
    from ssdbench.report.html import authenticity_html
    from ssdbench.report.summary import authenticity_cells

    cells = authenticity_cells(contradicting)  # summary.csv, index.html, the fleet's rows
    assert cells == {"authenticity": "wraps", "real_capacity_bytes": str(REAL)}
    assert _capacity(cells) == "<b>FAKE: wraps, holds 50.3 MB</b>"  # the fleet page
    page = authenticity_html(contradicting)  # report.html
    assert '<span class="verdict g-scrap">wraps</span> FAKE (wraps)' in page
    assert "Quick check: genuine" in page
    (tmp_path / "authenticity").mkdir()
    (tmp_path / "authenticity" / "run.json").write_text(json.dumps(contradicting))
    found = _authenticity(SimpleNamespace(run_dir=tmp_path / "erase"))  # type: ignore[arg-type]
    assert found is not None
    assert (found["verdict"], found["fake"], found["real_bytes"]) == ("wraps", True, REAL)
    assert found["full"] == found["summary"]
    heading = _grade_heading({"grade": {"grade": "not gradable"}, "authenticity": found})
    assert "Capacity check: FAKE (wraps)" in heading  # the certificate
