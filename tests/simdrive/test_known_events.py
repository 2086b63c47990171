"""Known answers for the events ssdbench reports (#30), on the offline twin (the very FTL the
served drive runs): the `portable` preset's thermal throttles are throttles, not the cliff,
each found within 2 s of the model's own throttle; its SLC cache's end is found within 2 s;
and the steady-IOPS formula holds on personalities drawn at random (seeded), not only on the
presets."""

from __future__ import annotations

import dataclasses
import random
import statistics

import numpy as np
import pytest

from simdrive import presets, twin
from simdrive.ftl import Personality, min_size
from ssdbench.analysis import analyse_iops, fill_stats

# IDEMA 1 TB (1,953,525,168 sectors) scaled down 1024 times, whole 4 KiB pages: 910 MiB
PORTABLE_SIZE = 1_953_525_168 * 512 // 1024 // 4096 * 4096


@pytest.fixture(scope="module")
def portable() -> twin.TortureRun:
    return twin.torture("portable", PORTABLE_SIZE, fob_iops=4000.0, seconds=300)


def model_events(run: twin.TortureRun, kind: str, stage: str) -> list[float]:
    return [float(e["at_s"]) for e in run.events  # type: ignore[arg-type]
            if e["event"] == kind and e["stage"] == stage]


def test_thermal_throttles_are_throttles_and_the_cliff_is_the_cliff(
        portable: twin.TortureRun) -> None:
    starts = model_events(portable, "throttle", "torture")
    ends = model_events(portable, "unthrottle", "torture")
    assert len(starts) >= 3, portable.events  # the model throttles again and again
    a = analyse_iops(np.array(portable.iops, dtype=float))
    assert a.cliff.at_s is not None and portable.cliff_s is not None
    assert abs(a.cliff.at_s - portable.cliff_s) <= 2, (a.cliff, portable.cliff_s)
    assert a.events is not None
    found = a.events.of("throttle")
    assert len(found) == len(starts), (found, starts)
    for event, start, end in zip(found, starts, [*ends, 300.0], strict=False):
        assert abs(event.at_s - start) <= 2, (event, start)
        assert abs(event.at_s + event.duration_s - end) <= 2, (event, end)
        assert event.depth is not None and 0.15 < event.depth < 0.35  # 4x slower: 1/4
    # none of them moved the cliff or the steady state's search
    assert a.steady_state.search_from_s <= 60


def test_the_slc_cache_end_is_found_within_two_seconds() -> None:
    # a larger cache than the preset's so the fill has a plateau of several seconds
    p = dataclasses.replace(presets.get("portable"), name="portable-slc", slc_fraction=0.3,
                            throttle_c=0.0)
    run = twin.torture(p, PORTABLE_SIZE, fob_iops=4000.0, seconds=5)
    (full,) = model_events(run, "slc_full", "fill")
    rate = np.array(run.fill_mib_s)
    f = fill_stats(rate, np.cumsum(rate) / 1024)
    assert f.cliff_at_s is not None and abs(f.cliff_at_s - full) <= 2, (f, full)
    assert f.reference_mib_s is not None and f.after_cliff_mib_s is not None
    assert f.reference_mib_s / f.after_cliff_mib_s == pytest.approx(3.0, rel=0.1)


def random_personality(rng: random.Random) -> Personality:
    gc = rng.choice(["credit", "burst"])
    return Personality(
        name="drawn", description="drawn at random", spare=round(rng.uniform(0.07, 0.45), 3),
        pages_per_block=rng.choice([32, 64, 128, 256]), gc=gc,
        victim=rng.choice(["greedy", "fifo"]), low=rng.choice([2, 4]),
        jitter=rng.choice([0.0, 0.05, 0.2]),
        burst_median=4.0 if gc == "burst" else 0.0, burst_sigma=0.5 if gc == "burst" else 0.0,
        burst_cap=20 if gc == "burst" else 0,
        move_cost=rng.choice([0.6, 1.0, 1.5]), erase_cost=rng.choice([2.0, 4.0, 12.0]))


@pytest.mark.parametrize("seed", range(6))
def test_steady_iops_formula_holds_on_drawn_personalities(seed: int) -> None:
    """FIFO: within 3% of the formula (its Lambert-W answer is FIFO's own). Greedy picks
    better victims than FIFO, so it may beat the formula, by up to 12% at low spare, and is
    never more than 3% under it. The GC reserve is left out of alpha (`alpha_for`); without
    that the small drives here ran up to 9% under the formula."""
    p = random_personality(random.Random(1000 + seed))
    size = max(128 << 20, 2 * min_size(p))
    run = twin.torture(p, size, fob_iops=2000.0, seconds=150, seed=seed + 1)
    formula = presets.steady_iops_formula(p, 2000.0, presets.alpha_for(p, size, 0.0))
    steady = statistics.fmean(run.iops[-60:])
    ratio = steady / formula
    if p.victim == "fifo":
        assert ratio == pytest.approx(1.0, abs=0.03), (p, ratio)
    else:
        assert 0.97 <= ratio <= 1.12, (p, ratio)
