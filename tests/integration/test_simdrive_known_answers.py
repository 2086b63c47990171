"""Known answers on the host path: `ssdbench run` on simulated SSDs (scripts/simdrive start +
attach: nbdkit model -> nbdfuse -> loop device with direct I/O), its results compared with the
model's own ground truth (tests/simknown.py says how; docs/simdrive.md "Known answers").

Real, odd capacities (IDEMA sector counts scaled down). The drives are small and their
fresh-out-of-box rate a few thousand IOPS so a fill takes seconds. One drive at a time: its
per-second answers need the host's CPU for the drive's processes (beside the enterprise run,
the 3000-IOPS drives moved a few of its writes across an edge: docs/simdrive.md), and
`make test` runs this beside the QEMU tier anyway; the long enterprise run (SNIA steady
state needs five whole minutes) comes first. `make test` runs the per-second ones
(enterprise, hostprio) first, as a job with no guest beside it, then the cliff, throttle and
TRIM answers on its light lane (scripts/run-tests.py LIGHT), beside two guests: beside
guests, or beside the 3000-IOPS drives, the rig's server answered late and the per-second
ones went over their 2%.
Extra OP needs a partition, which loop devices here do not get: the OP ratio is checked in
the QEMU run on simulated drives (tests/e2e/test_kiosk_quick.py)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from simdrive.truth import Truth
from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import REPO, require_root
from tests.simknown import (
    SimDrive,
    edge_s,
    fio_job,
    fit_start,
    iops_series,
    model_cliff_s,
    model_zero_seconds,
    read_csv,
    recorded_epoch,
    seconds_off,
    simulated_drive,
    snia_steady_state_s,
    wide_edges,
    window_rates,
    zero_seconds,
)

pytestmark = [pytest.mark.root, pytest.mark.slow]

# SNIA's steady state needs five whole rounds after the cliff (about 10 s in): rounds of 15 s
# (steady_round_s; the rule is the PTS's, on shorter rounds) and a margin of five more pin it
# as well as 60-s rounds did in a 360-s torture, in 150 s (issue 31)
ENTERPRISE_ROUND_S = 15
ENTERPRISE_TORTURE_S = 150
# how late the rig's server may answer writes the model completed, in seconds of the
# drive's rate (the host's scheduling, not ssdbench's): in CI on a loaded 2-core host
# (2026-11-26/27) 4 writes at 256 IOPS (16 ms) at one edge, 6 in another run, moved across
# the edge in the host's view; on an idle host at most 3 writes
RIG_LATE_S = 0.030


def _summary(results: Path) -> dict[str, str]:
    with (results / "summary.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1, rows
    return rows[0]


def _run_dir(results: Path, run: str) -> Path:
    found = sorted(results.glob(f"*/{run}"))
    assert len(found) == 1, found
    return found[0]


@dataclass
class Background:
    drive: SimDrive
    results: Path
    proc: subprocess.Popen[str]

    def wait(self, deadline_s: float) -> int:
        try:
            return self.proc.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            raise AssertionError("ssdbench on the enterprise drive did not finish") from None


@pytest.fixture(scope="module")
def enterprise(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Background]:
    """The enterprise drive's consistency run (`ssdbench run` in a subprocess, its log kept)."""
    require_root()
    base = tmp_path_factory.mktemp("sim-enterprise")
    with ExitStack() as stack:
        # 64 MiB + 3 sectors: small, so the spare runs out in ~10 s and the first minute is
        # already close to the steady level (SNIA's first window can be steady); 600 IOPS,
        # so the model and not a loaded host sets the pace
        drive = stack.enter_context(simulated_drive(base / "drive", "enterprise", "131075s",
                                                    600))
        assert drive.loop
        results = base / "results"
        log = stack.enter_context((base / "ssdbench.log").open("w"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "ssdbench", "run", drive.loop, "--destroy",
             os.path.basename(drive.loop), "--run", "consistency", "--erase-fallback",
             "discard", "--quiet", "--no-svg", "--no-pin", "--results", str(results),
             "--set", f"torture_seconds={ENTERPRISE_TORTURE_S}",
             "--set", f"steady_round_s={ENTERPRISE_ROUND_S}"],
            stdout=log, stderr=subprocess.STDOUT, text=True, cwd=REPO,
            env=dict(os.environ, PYTHONUNBUFFERED="1"))

        def kill_if_running() -> None:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)

        stack.callback(kill_if_running)
        yield Background(drive, results, proc)


def _run(drive: SimDrive, results: Path, *extra: str) -> None:
    assert drive.loop
    code = main(["run", drive.loop, "--destroy", os.path.basename(drive.loop),
                 "--erase-fallback", "discard", "--quiet", "--no-svg", "--no-pin",
                 "--results", str(results), *extra])
    assert code == ExitCode.OK


@pytest.fixture(scope="module")
def enterprise_done(enterprise: Background) -> tuple[Background, Path, list[float], list[float]]:
    """The finished enterprise run: (run, run folder, iops.csv, the model's seconds)."""
    rc = enterprise.wait(ENTERPRISE_TORTURE_S + 600)
    log = (enterprise.results.parent / "ssdbench.log").read_text()
    assert rc == ExitCode.OK, log[-2000:]
    run_dir = _run_dir(enterprise.results, "consistency-default")
    truth = enterprise.drive.truth()
    series = iops_series(run_dir)
    assert len(series) == ENTERPRISE_TORTURE_S
    start = _series_start(truth, run_dir)
    return enterprise, run_dir, series, truth.resample(start, len(series))


def test_enterprise_totals_windows_steady_state_and_cliff(
        enterprise_done: tuple[Background, Path, list[float], list[float]]) -> None:
    enterprise, run_dir, series, want = enterprise_done
    truth = enterprise.drive.truth()
    job = fio_job(run_dir)
    start = fit_start(truth, job)
    assert abs(start - job.start_estimate) < 0.3, (start, job.start_estimate)
    # fio's rows against the model over the same windows: median within 2%, 95% within
    # 5%, 99% within 10% and none beyond 25% (measured on a loaded 2-core host, two runs:
    # median 0.5-0.9%, 83-97% within 2%, 99% within 5%, worst 5.7-6.4%: completions reach
    # fio a little after the model's clock says, by a host-dependent latency; with three
    # more QEMU guests on the host one window of a 360-s run read 15.4%, 2026-11-25)
    rates = window_rates(truth, job, start)
    errors = sorted(abs(got - model) / max(model, 1.0) for got, model in rates.values())
    assert errors[len(errors) // 2] <= 0.02, errors[len(errors) // 2]
    assert sum(e <= 0.05 for e in errors) >= 0.95 * len(errors), errors[-20:]
    assert sum(e <= 0.10 for e in errors) >= 0.99 * len(errors), errors[-20:]
    assert errors[-1] <= 0.25, errors[-1]
    # totals within 0.5%: iops.csv's (an empty last second counts 0) and fio's own
    logged = sum(x for x in series if x == x)
    assert abs(logged - sum(want)) <= 0.005 * sum(want), (logged, sum(want))
    model_total = truth.writes_between(start, start + job.runtime_s + 0.05)
    assert abs(job.total_ios - model_total) <= 0.005 * model_total
    # no stall: paced GC never stops the host for a second; ssdbench's zero seconds are
    # only seconds fio's drifting rows left without a row (fio/logs.py rounds)
    gaps = sorted(set(range(len(series))) - set(rates))
    assert len(gaps) <= len(series) // 100, gaps
    summary = _summary(enterprise.results)
    assert zero_seconds(want) == (0, 0)
    assert int(summary["zero_iops_seconds"]) <= len(gaps), (summary, gaps)
    # SNIA steady state within one round of the model's, on the run's rounds
    record = json.loads((run_dir / "run.json").read_text())
    assert record["params"]["steady_round_s"] == ENTERPRISE_ROUND_S
    assert record["analysis"]["iops"]["steady_state"]["round_s"] == ENTERPRISE_ROUND_S
    model_ss = snia_steady_state_s(want, round_s=ENTERPRISE_ROUND_S)
    assert model_ss is not None
    got = summary["steady_state_at_s"]
    assert got, summary
    assert abs(int(got) - model_ss) <= ENTERPRISE_ROUND_S, (got, model_ss)
    # the cliff within 5 s of the model's when the model's steady level is below half its
    # FOB rate (ssdbench's cliff is a drop below 50%), else none
    model_cliff = model_cliff_s(truth, start, len(series))
    assert model_cliff is not None and model_cliff < 60
    steady = sum(want[model_cliff + 10:]) / len(want[model_cliff + 10:])
    plateau = max(sum(want[i:i + 3]) / 3 for i in range(0, max(1, model_cliff - 2)))
    cliff = record["analysis"]["iops"]["cliff"]
    if steady > 0.5 * plateau:
        assert cliff["at_s"] is None, cliff
    else:
        assert cliff["at_s"] is not None and abs(cliff["at_s"] - model_cliff) <= 5, (
            cliff, model_cliff)


def test_enterprise_iops_csv_seconds_within_2_percent(
        enterprise_done: tuple[Background, Path, list[float], list[float]]) -> None:
    """Every second of iops.csv within 2% of the writes the server answered in it (the
    host's view), and of the model's completions plus the writes the server had not yet
    answered at its edges, plus fio's 1-ms epoch at the edges; the server answers on time
    (at every edge at most RIG_LATE_S of writes, or 3, done but not yet answered).
    Measured (docs/simdrive.md "Known answers", a 360-s run): 360 of 360 within 1% since
    nbdfuse runs one connection per worker thread (simdrive/cli.py NBDFUSE_CONNECTIONS);
    before, nbdfuse held up to 6 answered writes through GC stalls and 1-2 seconds of 360
    were 2.2-2.7% off."""
    enterprise, run_dir, series, want = enterprise_done
    truth = enterprise.drive.truth()
    start = recorded_epoch(run_dir)
    # at each edge: the writes done but not yet answered, and how many may be
    lags = [truth.reply_lag(start + i) for i in range(len(series) + 1)]
    allowed = [max(3.0, RIG_LATE_S * want[min(i, len(want) - 1)]) for i in range(len(lags))]
    late = [(i, round(lag, 1), round(want[min(i, len(want) - 1)], 1))
            for i, lag in enumerate(lags) if abs(lag) > allowed[i]]
    worst = max(range(len(lags)), key=lambda i: abs(lags[i]))
    print(f"rig: at most {abs(lags[worst]):.1f} writes answered late at an edge (second {worst};"
          f" allowed {allowed[worst]:.1f})")
    assert late == [], late[:20]
    # an edge ssdbench's sampler did not catch (and says so) joins the seconds beside it
    wide = wide_edges(run_dir, len(series))
    assert seconds_off(truth, start, series, wide=wide, rig_lag=True) == [], sorted(wide)
    assert seconds_off(truth, start, series, replied=True, wide=wide) == [], sorted(wide)


@pytest.fixture(scope="module")
def hostprio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimDrive, Path]]:
    """The bursty host-priority drive: 60 s of torture, multi-second GC stalls."""
    require_root()
    base = tmp_path_factory.mktemp("sim-hostprio")
    with simulated_drive(base / "drive", "hostprio", "400009s", 3000) as drive:
        results = base / "results"
        # 60 s: ssdbench's cliff rules need a whole minute without a missing second
        _run(drive, results, "--run", "consistency", "--set", "torture_seconds=60")
        yield drive, results


def _fio_total_matches_the_model(drive: SimDrive, run_dir: Path) -> float:
    """fio's own total against the model's count over the job (0.5%); the fitted start."""
    truth = drive.truth()
    job = fio_job(run_dir)
    start = fit_start(truth, job)
    assert abs(start - job.start_estimate) < 0.3, (start, job.start_estimate)
    model_total = truth.writes_between(start, start + job.runtime_s + 0.05)
    assert abs(job.total_ios - model_total) <= 0.005 * model_total, (job.total_ios, model_total)
    return start


def _series_start(truth: Truth, run_dir: Path) -> float:
    """iops.csv's second 0 on the model's clock: fio's epoch as ssdbench recorded it, which
    must agree with fio's own raw log fitted to the model (5-ms steps) within 15 ms."""
    epoch = recorded_epoch(run_dir)
    fitted = fit_start(truth, fio_job(run_dir))
    assert abs(epoch - fitted) <= 0.015, (epoch, fitted)
    return epoch


def test_hostprio_fio_total(hostprio: tuple[SimDrive, Path]) -> None:
    drive, results = hostprio
    _fio_total_matches_the_model(drive, _run_dir(results, "consistency-default"))


def test_consumer_cliff(tmp_path: Path) -> None:
    """The consumer drive runs out of spare within seconds: ssdbench's cliff is within 5 s
    of the second the model started garbage-collecting."""
    results = tmp_path / "results"
    with simulated_drive(tmp_path / "drive", "consumer", "409597s", 3000) as drive:
        # 60 s: ssdbench's cliff rules need a whole minute without a missing second
        _run(drive, results, "--run", "consistency", "--set", "torture_seconds=60")
    run_dir = _run_dir(results, "consistency-default")
    start = _fio_total_matches_the_model(drive, run_dir)
    model = model_cliff_s(drive.truth(), start, len(iops_series(run_dir)))
    assert model is not None
    cliff = json.loads((run_dir / "run.json").read_text())["analysis"]["iops"]["cliff"]
    assert cliff["at_s"] is not None, cliff
    assert abs(cliff["at_s"] - model) <= 5, (cliff, model)


def test_hostprio_per_second_and_stalls_exact(hostprio: tuple[SimDrive, Path]) -> None:
    drive, results = hostprio
    run_dir = _run_dir(results, "consistency-default")
    truth = drive.truth()
    series = iops_series(run_dir)
    start = _series_start(truth, run_dir)
    want = truth.resample(start, len(series))
    summary = _summary(results)
    # on a miss: how well ssdbench's sampler caught the seconds' edges
    edges = {k: v for k, v in json.loads((run_dir / "run.json").read_text())[
        "reconciliation"]["torture"].items() if k in ("edge_bracket_ms_max", "wide_edges")}
    # edges ssdbench's sampler did not catch (run.json counts them; a loaded VM held the
    # real-time sampler ~100 ms twice in one CI run): the seconds beside one are checked
    # together below, and either may or may not be a zero second
    wide = wide_edges(run_dir, len(series))
    beside = {s for e in wide for s in (e - 1, e)}
    # the zero seconds: the model's, second by second, but for those whose only writes lie
    # within its log's 10-ms slot of an edge (either way is right there)
    zeros = {i for i, v in enumerate(series) if v < 0.5}
    # the count at an edge is interpolated between the sampler's reads either side of it
    # (a few ms apart on a loaded host): writes that close to an edge may fall either side
    near = edge_s(run_dir)
    sure, unsure = model_zero_seconds(truth, start, len(series), edge_s=near)
    assert sure - beside <= zeros <= sure | unsure | beside, (
        sorted(zeros ^ sure), sorted(unsure), sorted(wide), edges)
    assert zero_seconds(want)[0] > 5, "the model shows no stalls: the test proves nothing"
    assert (int(summary["zero_iops_seconds"]), int(summary["longest_stall_s"])) == (
        zero_seconds(series))
    assert abs(sum(series) - sum(want)) <= 0.005 * sum(want)
    assert seconds_off(truth, start, series, wide=wide, edge_s=near) == [], (edges, sorted(wide))
    assert seconds_off(truth, start, series, replied=True, wide=wide, edge_s=near) == [], (
        edges, sorted(wide))


def test_portable_throttles_are_throttles_and_the_cliff_is_not_one(tmp_path: Path) -> None:
    """The `portable` drive heats up under the torture and throttles (4x slower above 70 C
    until it cools below 60 C): ssdbench reports each of the model's throttles (truth log
    events) as a throttle within 2 s of its start and end, and its cliff where the model
    started garbage-collecting, never at a throttle (#30)."""
    results = tmp_path / "results"
    # 409597 sectors: 200 MiB, odd; the first throttle comes about a minute into the torture
    with simulated_drive(tmp_path / "drive", "portable", "409597s", 3000) as drive:
        _run(drive, results, "--run", "consistency", "--set", "torture_seconds=150")
    run_dir = _run_dir(results, "consistency-default")
    start = _fio_total_matches_the_model(drive, run_dir)
    truth = drive.truth()
    n = len(iops_series(run_dir))

    def model(kind: str) -> list[float]:
        return [float(e["time"]) - start for e in truth.events_of(kind)
                if start <= float(e["time"]) < start + n]

    starts, ends = model("throttle"), model("unthrottle")
    assert starts, truth.events
    iops = json.loads((run_dir / "run.json").read_text())["analysis"]["iops"]
    found = [e for e in iops["events"]["events"] if e["kind"] == "throttle"]
    assert len(found) == len(starts), (found, starts, ends)
    for event, begin, end in zip(found, starts, [*ends, float(n)], strict=False):
        assert abs(event["at_s"] - begin) <= 2, (event, begin)
        assert abs(event["at_s"] + event["duration_s"] - end) <= 2, (event, end)
    cliff = iops["cliff"]["at_s"]
    gc = model_cliff_s(truth, start, n)
    assert cliff is not None and gc is not None and abs(cliff - gc) <= 5, (cliff, gc)
    assert all(abs(cliff - b) > 5 for b in starts)


@pytest.mark.parametrize(("preset", "size", "verdict"), [
    # 976773168 sectors (500 GB) / 2048 + 1: 232.9 MiB, an odd sector count
    ("consumer", "476941s", "effective"),
    # 500118192 sectors (256 GB) / 1024, rounded: 238.5 MiB, odd
    ("sandforce", "488397s", "ineffective"),
])
def test_trim_verdict(tmp_path: Path, preset: str, size: str, verdict: str) -> None:
    """A fresh drive (the SandForce-like one ignores most TRIMs, so a discard 'erase' would
    not reset it): the verdict of ssdbench's TRIM run is the model's."""
    results = tmp_path / "results"
    with simulated_drive(tmp_path / "drive", preset, size, 3000) as drive:
        _run(drive, results, "--run", "trim", "--set", "trim_torture_seconds=30",
             "--set", "probe_gib=0.015625", "--set", "trim_idle_seconds=2")
        truth = drive.truth()
    summary = _summary(results)
    assert summary["run_state"] == "done"
    assert summary["trim_verdict"] == verdict, summary
    trims = truth.events_of("trim")
    assert trims, "no TRIM reached the model"
    invalidated = sum(e["invalidated_pages"] for e in trims)
    mapped = sum(e["mapped_pages"] for e in trims)
    # the model's own TRIM effect agrees with the verdict
    if verdict == "effective":
        assert invalidated == mapped > 0
    else:
        assert invalidated < 0.1 * mapped


@pytest.mark.parametrize("preset, size, fob", [
    # 409597 sectors (200 MiB, odd; the consumer preset's smallest is 86 MiB): the spare runs
    # out after about 1.06 capacities (18 s), then about 330 IOPS: 2 capacities in 165 s
    ("consumer", "409597s", 3000),
    # 131075 sectors (64 MiB + 3 sectors): after about 1.31 capacities (36 s); 90 s in all
    ("enterprise", "131075s", 600),
])
def test_wsat_cliff_where_the_spare_runs_out_and_the_level_after_it(
        tmp_path: Path, preset: str, size: str, fob: int) -> None:
    """SNIA PTS write saturation from the purge to 2 capacities (the PTS: 4; the spare runs
    out well before, and the test's minutes are few): ssdbench's gigabytes
    written where the model started garbage-collecting within 5% of the formula's free
    physical space (simdrive/presets.py: the spare runs out), fio's total the goal, and the
    final level within 5% of the model's own completions over the same seconds."""
    from simdrive import presets

    results = tmp_path / "results"
    with simulated_drive(tmp_path / "drive", preset, size, fob) as drive:
        _run(drive, results, "--plan", "wsat", "--set", "steady_round_s=10",
             "--set", "wsat_capacity_multiple=2")
        truth = drive.truth()
    run_dir = _run_dir(results, "wsat")
    record = json.loads((run_dir / "run.json").read_text())
    w = record["analysis"]["wsat"]
    assert record["analysis"]["problems"] == [], record["analysis"]["problems"]
    assert w["ended_by"] == "capacity" and w["goal_multiple"] == 2.0, w
    span = record["target"]["span_bytes"]
    assert w["written_gb"] == pytest.approx(2 * span // 4096 * 4096 / 1e9, rel=1e-6)
    series = iops_series(run_dir)
    job = fio_job(run_dir, "wsat")
    start = fit_start(truth, job)
    assert abs(start - recorded_epoch(run_dir, "wsat")) <= 0.015
    # the spare runs out: the model's first GC second, in gigabytes written by ssdbench's
    # curve, against the formula's free physical pages
    p = presets.get(preset)
    user = -(-span // 4096)
    blocks = -(-int(user * (1 + p.spare)) // p.pages_per_block)
    free_gb = (blocks - presets.reserve_blocks(p)) * p.pages_per_block * 4096 / 1e9
    first_gc = model_cliff_s(truth, start, len(series))
    assert first_gc is not None
    curve = [row["written_gb"] for row in read_csv(run_dir / "wsat.csv")]
    at_gc = float(curve[first_gc - 1]) if first_gc else 0.0
    assert abs(at_gc - free_gb) <= 0.05 * free_gb + fob * 4096 / 1e9, (at_gc, free_gb)
    # ssdbench's cliff (a fall below half) where the model's level falls below half
    want = truth.resample(start, len(series))
    fob_level = sum(want[:3]) / 3
    if w["final_iops"] < 0.5 * fob_level:
        assert w["cliff_at_s"] is not None and abs(w["cliff_at_s"] - first_gc) <= 5, (
            w["cliff_at_s"], first_gc)
    # the final level: the last five rounds against the model's completions in them
    n = 5 * w["round_s"]
    whole = len(series) // w["round_s"] * w["round_s"]
    model_final = sum(want[whole - n:whole]) / n
    assert abs(w["final_iops"] - model_final) <= 0.05 * model_final, (w["final_iops"],
                                                                      model_final)


def test_hir_bursts_against_the_models_idle_garbage_collection(tmp_path: Path) -> None:
    """SNIA PTS HIR on the consumer drive (its idle GC refills the free pool, simdrive/ftl.py)
    in a short variant: after a WSAT to 2 capacities, five 2-s bursts after idle periods of 2,
    5 and 10 s. ssdbench's burst IOPS of each period within 5% of the model's own
    completions in the same seconds, fio's total of each part the model's, and idle time wins
    writes back: the bursts after the longest idle are faster than the writes without a
    pause after them."""
    from ssdbench.analysis.pts import hir_state

    results = tmp_path / "results"
    with simulated_drive(tmp_path / "drive", "consumer", "409597s", 3000) as drive:
        _run(drive, results, "--plan", "hir", "--set", "steady_round_s=10",
             "--set", "wsat_capacity_multiple=2", "--set", "hir_waits=2,5,10",
             # five bursts a period: the consumer drive's GC stalls can cut one short,
             # and three left one measured burst after a 2-s idle in a CI run (2026-11-27)
             "--set", "hir_repetitions=5", "--set", "hir_burst_seconds=2")
        truth = drive.truth()
    run_dir = _run_dir(results, "hir")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["analysis"]["problems"] == [], record["analysis"]["problems"]
    h = record["analysis"]["hir"]
    assert [s["wait_s"] for s in h["states"]] == [2, 5, 10]
    for st in h["states"]:
        w = st["wait_s"]
        # fio's time 0 as ssdbench recorded it (fio logs nothing while it idles, so its own
        # log is no fit here; the other tests check the record against such fits)
        job = fio_job(run_dir, f"hir-idle-{w}")
        start = recorded_epoch(run_dir, f"hir-idle-{w}")
        model_total = truth.writes_between(start, start + job.runtime_s + 0.05)
        assert abs(job.total_ios - model_total) <= 0.005 * model_total + 3, (w, job.total_ios,
                                                                            model_total)
        got = [float(r["iops"] or 0) for r in read_csv(run_dir / f"hir-idle-{w}.csv")]
        want = truth.resample(start, len(got))
        model = hir_state(w, want, [], burst_s=2, baseline=h["baseline_iops"])
        assert st["bursts"] == model.bursts >= 2, (st, model)
        assert model.burst_iops is not None
        assert abs(st["burst_iops"] - model.burst_iops) <= 0.05 * model.burst_iops, (
            st, model)
    # idle time wins writes back: after the longest idle the bursts are faster than the
    # writes without a pause that follow (the level before, the WSAT's at 2 capacities, is
    # not steady yet: the returns run below it, 2026-11-27)
    last = h["states"][-1]
    assert last["vs_return"] > 1.0 and last["burst_iops"] > last["base_iops"], h


def test_iops_matrix_write_corner_against_the_steady_state_formula(tmp_path: Path) -> None:
    """The SNIA PTS IOPS test in a short variant on the enterprise drive (64 MiB + 3 sectors,
    600 IOPS fresh): one WIPC pass, then rounds of the seven mixes at 4 KiB, 2 s each, until
    the 4 KiB random writes are steady. The write-heavy corner (4 KiB, 0/100) of the
    measurement window against the model's steady-state formula (simdrive/presets.py: FOB
    over the write amplification and erase share at the drive's spare): within the margin
    the model itself keeps to it (greedy victims beat the formula by up to 12%,
    tests/simdrive/test_known_events.py), and the reads faster than the writes."""
    from simdrive import presets

    results = tmp_path / "results"
    size, fob = 131075 * 512, 600
    with simulated_drive(tmp_path / "drive", "enterprise", f"{size // 512}s", fob) as drive:
        _run(drive, results, "--plan", "iops", "--set", "pts_block_sizes=4k",
             "--set", "steady_round_s=2", "--set", "pts_max_rounds=20",
             "--set", "pts_wipc_passes=1")
    run_dir = _run_dir(results, "iops")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["analysis"]["problems"] == [], record["analysis"]["problems"]
    (loop,) = record["analysis"]["pts"]
    assert loop["reached"] is True, loop  # 20 rounds are ample: it settles in about ten
    corner = loop["window_figures"]["rnd-4k-0_100"]["iops"]
    p = presets.get("enterprise")
    formula = presets.steady_iops_formula(p, fob, presets.alpha_for(p, size))
    assert 0.95 * formula <= corner <= 1.15 * formula, (corner, formula, loop)
    reads = loop["window_figures"]["rnd-4k-100_0"]["iops"]
    assert reads > 2 * corner, (reads, corner)


@pytest.mark.parametrize("plan", ["throughput", "latency"])
def test_pts_throughput_and_latency_against_the_models_service_times(tmp_path: Path,
                                                                    plan: str) -> None:
    """The SNIA PTS throughput and latency tests in short variants on the enterprise drive
    (64 MiB + 3 sectors, 600 IOPS fresh; one WIPC pass, 2-s workloads, five rounds): the
    model serves one request at a time, a page written in 1/600 s (a sequential overwrite
    of a filled drive frees whole blocks: an erase of 4 units a 256-page block, no moves),
    a page read in 0.125 of that. So sequential reads run at 4,800 pages/s (18.75 MiB/s) and
    sequential writes at 600 / (1 + 4/256) pages/s (2.31 MiB/s): fio's figures within 10%.
    At queue depth 1 each I/O waits for the one before: in every round the IOPS times the
    mean latency is at most one second (Little's law; the window's
    means are not held to it: rounds that differ make the product of means larger), and a
    4 KiB read takes at least the model's 208 µs, a write at least 1/600 s."""
    from simdrive import presets

    p = presets.get("enterprise")
    size, fob = 131075 * 512, 600
    page_s = 1 / fob
    read_mib_s = fob / p.read_cost * 4096 / 2**20
    write_mib_s = fob / (1 + p.erase_cost / p.pages_per_block) * 4096 / 2**20
    results = tmp_path / "results"
    with simulated_drive(tmp_path / "drive", "enterprise", f"{size // 512}s", fob) as drive:
        _run(drive, results, "--plan", plan, "--set", "steady_round_s=2",
             "--set", "pts_max_rounds=5", "--set", "pts_wipc_passes=1",
             "--set", "pts_block_sizes=4k")
    record = json.loads((_run_dir(results, plan) / "run.json").read_text())
    assert record["analysis"]["problems"] == [], record["analysis"]["problems"]
    loops = {loop["name"]: loop for loop in record["analysis"]["pts"]}
    if plan == "throughput":
        assert set(loops) == {"throughput-1m", "throughput-128k"}
        for bs, loop in ((b, loops[f"throughput-{b}"]) for b in ("1m", "128k")):
            figs = loop["window_figures"]
            got_r, got_w = figs[f"seq-{bs}-100_0"]["mib_s"], figs[f"seq-{bs}-0_100"]["mib_s"]
            assert abs(got_r - read_mib_s) <= 0.10 * read_mib_s, (bs, got_r, read_mib_s)
            assert abs(got_w - write_mib_s) <= 0.10 * write_mib_s, (bs, got_w, write_mib_s)
        return
    for r in record["pts"]["latency"]["rounds"]:
        for name, floor_s in (("rnd-4k-100_0", page_s * p.read_cost), ("rnd-4k-0_100", page_s)):
            f = r["workloads"][name]
            # at most one (one I/O at a time); the host's own time between a completion and
            # the next submission is the rest (a loaded CI host's share is not pinned here)
            assert 0.3 <= f["iops"] * f["lat_mean_us"] / 1e6 <= 1.01, (r["round"], name, f)
            assert f["lat_mean_us"] >= floor_s * 1e6 * 0.97, (r["round"], name, f, floor_s)
            # fio's percentiles are its histogram's bins (64 a power of two: about 1% wide),
            # so the five nines may lie a bin's width above the exact maximum
            assert f["lat_mean_us"] <= f["lat_p99999_us"] <= 1.02 * f["lat_max_us"], f
