"""Where a fall is placed when the segmentation leaves a short transition level between
two levels (a level holds at least MIN_LEVEL_S seconds, so a fall inside a second drags the
seconds before it into a 3-second level): at the first second that left the earlier level."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

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

