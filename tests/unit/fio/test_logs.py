from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from ssdbench.fio.histlog import SparseLog
from ssdbench.fio.logs import (
    LogError,
    StageFiles,
    bin_edges_ns,
    hist_percentiles,
    load_log,
    per_second,
    resample,
    stage_series,
    write_run_csvs,
)
from ssdbench.fio.status import parse_report
from tests.unit.fio.conftest import make_run_dir


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_torture_iops_csv_has_one_row_per_second_and_never_invents_the_last(
        tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "torture-3s", "torture")
    checks = write_run_csvs(run_dir)
    table = rows(run_dir / "iops.csv")
    assert [r["time_s"] for r in table] == ["0", "1", "2"]
    assert list(table[0]) == ["time_s", "iops", "mib_s", "lat_mean_us", "lat_p99_us",
                              "lat_p9999_us", "lat_max_us"]
    # fio logged only 2 of the 3 seconds: the third stays empty (missing), not made up
    report = StageFiles(run_dir / "fio", "torture").report()
    assert report is not None
    _, total_ios = report.total("write")
    assert float(table[0]["iops"]) == 135276.0 and float(table[1]["iops"]) == 117305.0
    assert table[2]["iops"] == "" and table[2]["mib_s"] == ""
    # ... so the series is short of fio's own total by the unlogged second: a warning
    check = checks["torture"]
    assert (check.quantity, check.fio_total, check.missing_seconds) == ("ios", total_ios, 1)
    assert check.series_total == 135276 + 117305 == 252581
    assert check.relative_gap == pytest.approx(252581 / 318135 - 1) and not check.ok
    assert "fio logged no value for 1 s" in (check.warning() or "")
    # latency from the lat and histogram logs, ordered sensibly
    first = table[0]
    assert 0 < float(first["lat_mean_us"]) < float(first["lat_max_us"])
    assert float(first["lat_p99_us"]) <= float(first["lat_p9999_us"]) <= float(first["lat_max_us"])


def test_every_logged_second_adds_up_to_fios_total(tmp_path: Path) -> None:
    """A run whose log holds every second (fio logged its final window): within 0.5%."""
    run_dir = make_run_dir(tmp_path, "torture-3s", "torture")
    log = run_dir / "fio" / "torture_iops.1.log"
    # the real log plus the final window (2003 → 3000 ms) at the rate of the I/Os fio
    # counted beyond the log: 65554 I/Os in 0.997 s
    log.write_text(log.read_text() + "3000, 65751, 1, 0, 0\n")
    check = write_run_csvs(run_dir)["torture"]
    assert check.ok and abs(check.relative_gap or 1) < 2e-3 and check.missing_seconds == 0
    assert check.warning() is None
    # a doctored log (the first second's 135276 IOPS made 35276) breaks it on purpose
    log.write_text(log.read_text().replace("1000, 135276,", "1000, 35276,"))
    check = write_run_csvs(run_dir)["torture"]
    assert check.relative_gap == pytest.approx(-100000 / 318135, abs=3e-3) and not check.ok
    assert check.to_dict()["within_tolerance"] is False
    warning = check.warning() or ""
    assert warning.startswith("iops.csv: the per-second series sums to 218,")
    assert "fio's own total is 318,135 (-31." in warning and "more than 0.5%" in warning


def test_drifting_stamps_leave_no_false_zero_second(tmp_path: Path) -> None:
    """Under load fio's windows stretch (1000, 2000, 3400, 4450): every second keeps I/O
    and the amounts add up; nothing lands as a zero second that was never a stall."""
    t = np.array([1000.0, 2000.0, 3400.0, 4450.0])
    rate = np.array([100.0, 100.0, 100.0, 100.0])
    grid = resample(t, rate, 5)
    assert grid.amount.sum() == pytest.approx(445.0) and grid.logged_total == 445.0
    assert grid.rates()[:4].tolist() == pytest.approx([100.0] * 4)
    assert math.isnan(grid.rates()[4])  # 4.45 s logged of 5: the last second is missing
    # a bandwidth series gets the rest of fio's total over the unlogged 0.55 s
    assert grid.with_tail(500.0, 5.0)[4] == pytest.approx(45.0 + 55.0)


def test_a_stall_stays_a_stall() -> None:
    """fio writes no row while no I/O completes, then one row averaging the whole window
    (2.0 → 5.1 s at 30/s): its 93 I/Os completed in its first second, the rest is zero."""
    grid = resample(np.array([1000.0, 2000.0, 5100.0, 6100.0]),
                    np.array([100.0, 100.0, 30.0, 100.0]), 6)
    assert grid.rates().tolist() == pytest.approx([100.0, 100.0, 93.0, 0.0, 0.0, 90.0])
    assert grid.logged_total == pytest.approx(393.0)


def test_cancelled_run_keeps_every_logged_second(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "cancelled", "torture")
    write_run_csvs(run_dir)
    table = rows(run_dir / "iops.csv")
    assert [r["time_s"] for r in table] == ["0", "1", "2"]  # 2.1 s → two full seconds + tail
    assert float(table[0]["iops"]) == 82428.0


def test_fill_with_empty_logs_comes_from_the_json_totals(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "fill-2pass", "fill")
    write_run_csvs(run_dir)
    table = rows(run_dir / "fill.csv")
    assert len(table) == 1
    assert float(table[-1]["gib_written"]) == pytest.approx(64 / 1024, rel=1e-3)
    assert not (run_dir / "iops.csv").exists()


def test_missing_and_duplicate_seconds(tmp_path: Path) -> None:
    t = np.array([1000.0, 2001.0, 2001.0, 5000.0, 5999.0])
    v = np.array([10.0, 20.0, 99.0, 50.0, 60.0])
    vals, present = per_second(t, v, 7)  # latency means: the first row of a second wins
    assert vals.tolist() == [10.0, 20.0, 0.0, 0.0, 50.0, 60.0, 0.0]
    assert present.tolist() == [True, True, False, False, True, True, False]
    # rates (IOPS, KiB/s): a duplicate stamp is summed over the same window, not dropped
    grid = resample(t, v, 7)
    dup = (20.0 + 99.0) * 1.001  # the 2001 rows: 1.000 → 2.001 s, summed
    stall = 50.0 * 2.999  # 2.001 → 5.000 s is a stall window: its first second holds it
    assert grid.amount.tolist() == pytest.approx(
        [10.0, dup / 1.001, dup * 0.001 / 1.001 + stall * 0.999, stall * 0.001, 0.0,
         60.0 * 0.999, 0.0])
    assert grid.logged_total == pytest.approx(10 + 119 * 1.001 + 50 * 2.999 + 60 * 0.999)
    # a final partial window (2000 → 2250 ms at 400/s: 100 I/Os) is the third second's rate
    grid = resample(np.array([1000.0, 2000.0, 2250.0]), np.array([300.0, 200.0, 400.0]), 3,
                    last_s=0.25)
    assert grid.amount.tolist() == pytest.approx([300.0, 200.0, 100.0])
    assert grid.rates().tolist() == pytest.approx([300.0, 200.0, 400.0])


def test_a_final_partial_row_is_a_rate_over_the_partial_second(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "cancelled", "torture")  # job_runtime 2105 ms
    log = run_dir / "fio" / "torture_iops.1.log"
    log.write_text(log.read_text() + "2105, 80000, 1, 0, 0\n")  # 105 ms at 80000 IOPS
    series = stage_series(StageFiles(run_dir / "fio", "torture"), "write")
    assert series.iops.tolist() == [82428.0, 76495.0, pytest.approx(80000.0)]
    assert series.last_second_s == pytest.approx(0.105)
    assert (series.iops * series.seconds()).sum() == pytest.approx(82428 + 76495 + 8400)


def test_newer_fio_extra_columns_and_torn_last_line(tmp_path: Path) -> None:
    # fio >= 3.36 adds a priority column (and an issue time with log_issue_time).
    path = tmp_path / "x_iops.1.log"
    path.write_text("1000, 5, 1, 0, 0, 0\n2000, 6, 1, 0, 0, 0\n3000, 7, 1, 0")
    arr = load_log(path)
    assert arr.shape == (2, 6)
    assert arr[:, 1].tolist() == [5.0, 6.0]


def test_a_log_that_is_not_one_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.log"
    path.write_text("hello\nworld\n")
    with pytest.raises(LogError):
        load_log(path)


def test_histogram_bins_match_fio_latency_groups() -> None:
    lower, upper = bin_edges_ns(1856)
    assert lower[:3].tolist() == [0, 1, 2]
    assert lower[128] == 128 and upper[128] == 130  # second group: 2 ns wide
    assert lower[192] == 256 and upper[192] == 260
    assert upper[-1] == 2**34  # top of the last bin: ~17 s
    assert np.all(upper[:-1] == lower[1:])
    clower, cupper = bin_edges_ns(232)  # coarseness 3: 8 fine bins each
    assert clower[16] == lower[128] and cupper[16] == upper[135]
    with pytest.raises(LogError):
        bin_edges_ns(1000)


def test_histogram_percentiles() -> None:
    table = np.zeros((2, 3 + 1856))
    table[:, 0], table[:, 1], table[:, 2] = (1000, 2000), 1, 4096  # time_ms, write, bs
    counts = table[:, 3:]
    counts[0, 100] = 9900  # 100 ns
    counts[0, 1000] = 99  # bin 1000
    counts[0, 1500] = 1
    pct, mx = hist_percentiles(SparseLog.from_dense(table), 1, 2, (50.0, 99.0, 99.99))
    lower, upper = bin_edges_ns(1856)
    mid = (lower + upper) / 2000.0
    assert pct[0].tolist() == [mid[100], mid[100], mid[1000]]
    assert mx[0] == mid[1500]
    assert np.isnan(pct[1]).all() and np.isnan(mx[1])


def test_bandwidth_series_take_the_unlogged_tail_from_fios_total(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, "torture-3s", "torture")
    files = StageFiles(run_dir / "fio", "torture")
    series = stage_series(files, "write", latency=False, recover_tail=True)
    report = parse_report(__import__("json").loads(files.json.read_text()))
    total_bytes, _ = report.total("write")
    assert (series.mib_s * series.seconds()).sum() * 2**20 == pytest.approx(total_bytes, rel=1e-9)
    assert stage_series(files, "write").mib_s[-1] != stage_series(files, "write").mib_s[-1]


def test_a_fill_whose_runtime_ends_past_its_last_row_adds_up_to_fios_total(
        tmp_path: Path) -> None:
    """The demo's NVMe fill (fio 3.33 in the QEMU guest, 2026-11-28, tests/data/fio/
    demo-nvme-fill): 61.1 s of runtime are 61 rows (a last part under 100 ms is no row of
    its own) and the log ends at 60.671 s. The bytes fio counts beyond the log were spread
    over the unlogged 0.429 s, but only the grid's 0.329 s of it was kept: the series fell
    942 KB (-0.38%) short of fio's total (a slower run of the demo: -0.69%, over the 0.5%
    tolerance, and index.html opened on that warning). The tail past the grid now goes
    to the last row (#43)."""
    import shutil

    from ssdbench.fio.logs import write_run_csvs

    src = Path(__file__).resolve().parents[2] / "data" / "fio" / "demo-nvme-fill"
    run_dir = tmp_path / "trim"
    shutil.copytree(src, run_dir / "fio")
    checks = write_run_csvs(run_dir)
    fill = checks["fill"]
    assert fill.fio_total == 250_059_264  # the demo drive, the same span
    assert fill.relative_gap == pytest.approx(0.0, abs=1e-4) and fill.ok
    rows = (run_dir / "fill.csv").read_text().splitlines()
    assert len(rows) == 1 + 61  # the runtime's rows, none invented
    gib = float(rows[-1].split(",")[2])
    assert gib * 2**30 == pytest.approx(250_059_264, rel=1e-5)
