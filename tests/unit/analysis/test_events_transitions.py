"""Where a fall is placed when the segmentation leaves a short transition level between
two levels (a level holds at least MIN_LEVEL_S seconds, so a fall inside a second drags the
seconds before it into a 3-second level): at the first second that left the earlier level."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ssdbench.analysis import analyse_iops
from ssdbench.analysis.events import find_events

DATA = Path(__file__).resolve().parents[2] / "data" / "analysis"


def test_a_throttle_is_placed_where_the_seconds_left_the_level_before_it() -> None:
    # iops.csv of the portable simulated drive's 150-s torture in a CI run (2026-11-28,
    # tests/integration/test_simdrive_known_answers.py): the model throttled at 59.x and
    # 125.35 s; seconds 123-126 are 349, 355, 187, 93. The segmentation's levels end at 123
    # and 126: the throttle was placed at 123, two seconds before the model's.
    with (DATA / "portable-throttle-iops.csv").open(newline="") as f:
        series = [float(r["iops"]) for r in csv.DictReader(f)]
    assert [round(v) for v in series[123:127]] == [349, 355, 187, 93]
    ev = find_events(series)
    throttles = [e for e in ev.events if e.kind == "throttle"]
    assert [(e.at_s, e.at_s + e.duration_s) for e in throttles] == [(59, 94), (125, 150)]
    assert [(lv.start_s, lv.end_s) for lv in ev.levels][-2:] == [(94, 125), (125, 150)]
    # the moved seconds count in the level they joined: means of its own seconds
    lv = ev.levels[-2]
    assert abs(lv.mean - float(np.mean(series[94:125]))) < 1e-9
    assert lv.seconds == 31



def test_a_dip_in_the_last_seconds_of_a_short_run_is_not_its_final_level() -> None:
    # iops.csv of the enterprise simulated drive's 150-s torture (the known-answer loop
    # beside stress-ng --cpu 2, 2026-11-28 22:23, tests/integration/
    # test_simdrive_known_answers.py): the host starved the rig for a moment at the end
    # (second 147: 48 IOPS), so the drive's truth and fio both dipped. The run has no level
    # of FINAL_MIN_S, so the last level was taken whole: the 3-s dip, 134 IOPS against the
    # 232 it held from its cliff, and the steady-state check refused the model's steady
    # state. A fall in the run's last 10 s is a late fall: the level it fell from is final.
    with (DATA / "enterprise-end-dip-iops.csv").open(newline="") as f:
        series = [float(r["iops"]) for r in csv.DictReader(f)]
    assert len(series) == 150 and round(series[147]) == 48
    ev = find_events(series)
    assert ev.final_level is not None and 200 < ev.final_level < 260, ev.final_level
    late = [e for e in ev.events if e.kind == "late-fall"]
    assert len(late) == 1 and late[0].at_s >= 140, ev.events
    a = analyse_iops(np.asarray(series), round_s=15)
    assert a.steady_state.reached and a.steady_state.at_s is not None, a.steady_state
    # a fall the drive stays in (the same series, the last 40 s at its dip's level) is
    # not a late fall: the run shows where the drive went
    held = series[:110] + [50.0] * 40
    final = find_events(held).final_level
    assert final is not None and final < 60, final
