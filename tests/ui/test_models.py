"""The UI's plain-Python parts: run state from Progress events, estimates, text charts,
plan parsing and presets."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ssdbench.devices import AtaSecurity, Drive
from ssdbench.progress import Progress
from ssdbench.stages.params import ParamError, RunParams
from ssdbench.ui import fmt
from ssdbench.ui.engine import plan_with, preset_plan
from ssdbench.ui.estimate import basis, estimate, expected_speed
from ssdbench.ui.plan import build_plan, parse_op_levels
from ssdbench.ui.state import DriveRunState
from tests.ui.conftest import LOOP_BUNDLE


def loop_drive() -> Drive:
    from ssdbench.devices import discover
    from tests.ui.conftest import replay_host

    return next(d for d in discover(replay_host()) if d.name == "loop1")


def test_state_follows_progress_and_keeps_series_per_stage() -> None:
    st = DriveRunState.planned("sdb", [("r", "fill"), ("r", "torture")])
    st.apply(Progress("sdb", "r", "fill", "running", message="started"))
    st.apply(Progress("sdb", "r", "fill", "running", fraction=0.5, elapsed_s=1, eta_s=1,
                      mib_s=500.0))
    st.apply(Progress("sdb", "r", "fill", "running", fraction=0.5, elapsed_s=1, mib_s=9.0))
    assert list(st.mib_s) == [500.0]  # same second: not a new point
    st.apply(Progress("sdb", "r", "fill", "done", message="done"))
    st.apply(Progress("sdb", "r", "torture", "running", message="started"))
    assert not st.mib_s  # a new stage starts a new chart
    for t, v in ((1, 100.0), (2, 300.0)):
        st.apply(Progress("sdb", "r", "torture", "running", elapsed_s=t, iops=v,
                          fraction=t / 4))
    cur = st.current
    assert cur is not None and cur.name == "torture" and cur.fraction == 0.5
    assert st.avg_iops == 200.0 and st.last_iops == 300.0
    st.apply(Progress("sdb", "r", "op-partition", "skipped", message="not built"))
    assert [s.name for s in st.stages] == ["fill", "torture", "op-partition"]
    st.finished("failed")
    assert [s.state for s in st.stages] == ["done", "failed", "skipped"]
    assert st.log[-1] == "finished: failed"


def test_chart_and_bar_use_console_glyphs_only() -> None:
    rows = fmt.chart([0, 50, 100], width=3, height=2)
    assert rows == ["  " + fmt.FULL, " " + fmt.FULL + fmt.FULL]
    assert fmt.chart([10, 20], width=4, height=1, stretch=True) == [
        fmt.LOWER_HALF * 2 + fmt.FULL * 2]
    assert fmt.bar(0.5, 4) == fmt.FULL * 2 + fmt.LIGHT * 2
    text = "".join(rows) + fmt.bar(0.3, 10)
    text.encode("cp437")  # raises if a glyph is missing from the console font


def test_estimate_formula_on_a_recorded_drive() -> None:
    drive = loop_drive()  # 32 MiB, loop: 300 MiB/s write
    params = preset_plan("quick").params
    est = estimate(drive, [("consistency", 0)], params, "discard")
    parts = dict(est.parts)
    assert parts["consistency/erase"] == 10.0
    assert parts["consistency/fill"] == pytest.approx(32 / 300)
    assert parts["consistency/torture"] == params.torture_seconds
    sata = dataclasses.replace(drive, transport="sata", size_bytes=500 * 10**9,
                               ata_security=AtaSecurity(True, False, False, False, False,
                                                        True, 2, 4))
    sata = dataclasses.replace(sata, erase_methods=("ata-security-erase-enhanced",))
    est = estimate(sata, [("trim", 0)], RunParams(), "fail")
    parts = dict(est.parts)
    assert parts["trim/erase"] == 4 * 60.0  # enhanced erase time
    assert parts["trim/fill"] == pytest.approx(500e9 / 2**20 / 400)
    assert parts["trim/probe-clean"] == pytest.approx(1 * 1024 / 400)  # the 1 GiB AS-SSD probe
    assert parts["trim/trim"] == 10.0 + RunParams().trim_idle_seconds  # TRIM, then 60 s idle
    assert est.seconds == pytest.approx(sum(parts.values()))


def test_the_erase_plan_is_estimated_as_its_erase_only() -> None:
    """Purge and verify only (#22): no fill, no torture in its estimate (it said 33m30s for a
    32 MiB loop device: the 30-minute default torture)."""
    est = estimate(loop_drive(), [("erase", 0)], preset_plan("erase").params, "discard")
    assert dict(est.parts) == {"erase/erase": 10.0} and est.seconds == 10.0


def test_the_pts_plans_are_estimated_from_their_writes_and_idle_periods() -> None:
    """WSAT: the goal's writes at the transport's expected random-write rate (NVMe 25,000
    IOPS), under its time cap; HIR: the WSAT, then every idle period's bursts and returns
    (15.5 h with the PTS's figures). A 1 TB NVMe drive (IDEMA capacity)."""
    nvme = dataclasses.replace(loop_drive(), transport="nvme", size_bytes=1_000_204_886_016)
    params = RunParams()
    parts = dict(estimate(nvme, [("wsat", 0)], params, "discard").parts)
    assert parts["wsat/wsat"] == pytest.approx(4 * 1_000_204_886_016 / (25_000 * 4096))
    parts = dict(estimate(nvme, [("hir", 0)], params, "discard").parts)
    assert parts["hir/hir"] == 55_930
    capped = params.with_values({"wsat_seconds": 3600})
    assert dict(estimate(nvme, [("wsat", 0)], capped, "discard").parts)["wsat/wsat"] == 3600


def test_the_pts_round_loops_are_estimated_at_their_most_rounds() -> None:
    """IOPS: the WIPC (two writes of the span at the transport's sequential speed), then 25
    rounds of 7 mixes x 8 block sizes x 60 s (23 h 20 min); latency 25 rounds of 9; the
    throughput loop twice, each with its WIPC and the second with its own erase; the shorter
    variant's parameters shrink them."""
    nvme = dataclasses.replace(loop_drive(), transport="nvme", size_bytes=1_000_204_886_016)
    write, _ = expected_speed(nvme)
    wipc = 2 * 1_000_204_886_016 / 2**20 / write
    params = RunParams()
    parts = dict(estimate(nvme, [("iops", 0)], params, "discard").parts)
    assert parts == {"iops/erase": parts["iops/erase"], "iops/wipc": pytest.approx(wipc),
                     "iops/rounds": 25 * 56 * 60}
    parts = dict(estimate(nvme, [("latency", 0)], params, "discard").parts)
    assert parts["latency/rounds"] == 25 * 9 * 60
    parts = dict(estimate(nvme, [("throughput", 0)], params, "discard").parts)
    assert list(parts) == ["throughput/erase", "throughput/wipc-1m", "throughput/rounds-1m",
                           "throughput/erase-128k", "throughput/wipc-128k",
                           "throughput/rounds-128k"]
    assert parts["throughput/rounds-128k"] == 25 * 2 * 60
    short = params.with_values({"pts_block_sizes": "128k,4k", "steady_round_s": 10,
                                "pts_max_rounds": 5, "pts_wipc_passes": 0})
    parts = dict(estimate(nvme, [("iops", 0)], short, "discard").parts)
    assert parts["iops/wipc"] == 0 and parts["iops/rounds"] == 5 * 14 * 10
    assert dict(estimate(nvme, [("latency", 0)], short, "discard").parts)[
        "latency/rounds"] == 5 * 3 * 10  # 4k only: the latency test has no 128k
    # the plan screen's line says what was assumed
    assert "PTS rounds at their most (5;" in basis(nvme, ["iops"], short)
    assert "WSAT at 25,000 random-write IOPS" in basis(nvme, ["hir"])
    assert "WSAT" not in basis(nvme, ["trim"]) and "PTS" not in basis(nvme, ["trim"])


def test_plan_parsing_and_refusals() -> None:
    assert parse_op_levels("0, 25") == (0, 25)
    for bad, words in (("", "expected percentages"), ("0,0", "repeated"),
                       ("7x", "whole number"), ("95", "0 to 90")):
        with pytest.raises(ParamError, match=words):
            parse_op_levels(bad)
    drive = loop_drive()
    values = {"torture_seconds": "60", "op_levels": "0", "probe_gib": "0.5",
              "fill_passes": "1", "trim_torture_seconds": "60"}
    with pytest.raises(ParamError, match="no secure erase on loop1"):
        build_plan("quick", values, "fail", [drive])
    plan = build_plan("quick", values, "discard", [drive])
    assert [r.name for r in plan.runs] == ["consistency-default", "trim"]
    assert plan.params.erase_fallback == "discard"
    assert plan.params.torture_seconds == 60 and plan.params.probe_gib == 0.5
    diag = build_plan("diagnose", values, "fail", [drive])  # read-only: no erase check
    assert not diag.destructive and [r.name for r in diag.runs] == ["diagnose"]
    review = plan_with("review", {}, (0, 10, 25), "fail")
    assert [r.name for r in review.runs] == ["consistency-default", "consistency-op10",
                                             "consistency-op25", "trim"]
    assert review.params.torture_seconds == 2000


def test_bundle_used_by_the_ui_tests_is_the_expected_one() -> None:
    listed = json.loads((LOOP_BUNDLE / "list.json").read_text())
    assert {(d["name"], d["protected"]) for d in listed} == {("loop1", False), ("vda", True)}


def test_chart_shows_mib_s_for_sequential_and_iops_for_random_stages() -> None:
    from ssdbench.ui.widgets import chart_series

    st = DriveRunState.planned("sdb", [("r", "fill"), ("r", "torture")])
    st.apply(Progress("sdb", "r", "fill", "running", elapsed_s=1, iops=4000.0, mib_s=500.0))
    assert chart_series(st) == ([500.0], "MiB/s")
    st.apply(Progress("sdb", "r", "fill", "done"))
    st.apply(Progress("sdb", "r", "torture", "running", elapsed_s=1, iops=9e4, mib_s=350.0))
    assert chart_series(st) == ([9e4], "IOPS")


def test_the_plan_form_offers_a_clear_by_overwrite_where_no_secure_erase_exists() -> None:
    """#44: a drive without a firmware erase (a loop device here, a USB bridge or a frozen
    drive on a bench) can be Cleared by one overwrite pass from the plan screen; the refusal
    names the choice, and the estimate counts the pass at the drive's write speed."""
    from ssdbench.ui.engine import ERASE_CHOICES, ERASE_OVERWRITE
    from ssdbench.ui.estimate import DISCARD_S, erase_seconds, expected_speed

    assert ("secure erase, else Clear by overwrite", ERASE_OVERWRITE) in ERASE_CHOICES
    drive = loop_drive()
    values = {"torture_seconds": "60", "op_levels": "0", "probe_gib": "0.5",
              "fill_passes": "1", "trim_torture_seconds": "60"}
    with pytest.raises(ParamError, match="Clear by overwrite"):
        build_plan("quick", values, "fail", [drive])
    plan = build_plan("erase", {}, ERASE_OVERWRITE, [drive])
    assert plan.params.erase_fallback == "overwrite"
    seconds = erase_seconds(drive, ERASE_OVERWRITE)
    assert seconds == pytest.approx(drive.size_bytes / (expected_speed(drive)[0] * 2**20))
    assert erase_seconds(drive, "discard") == DISCARD_S
