"""Reading results files: gaps, damaged files, the fio-log rebuild hook."""

from __future__ import annotations

import math
import sys
import types
from pathlib import Path

import pytest

from ssdbench.report.load import (
    IOPS_COLUMNS,
    ResultsFileError,
    load_run,
    read_columns,
    read_probes,
)


def test_rows_are_placed_by_time_and_gaps_are_nan(tmp_path: Path):
    p = tmp_path / "iops.csv"
    p.write_text(",".join(IOPS_COLUMNS) + "\n0,10,,,,,\n2,30,0.1,5,6,7,8\n1,20,,,,,\n\n")
    cols = read_columns(p, IOPS_COLUMNS)
    assert list(cols["iops"]) == [10, 20, 30]
    assert math.isnan(cols["lat_mean_us"][0]) and cols["lat_max_us"][2] == 8
    p.write_text("time_s,iops,mib_s,lat_mean_us,lat_p99_us,lat_p9999_us,lat_max_us\n0,1,,,,,\n3,4,,,,,\n")
    cols = read_columns(p, IOPS_COLUMNS)
    assert cols["iops"].size == 4 and math.isnan(cols["iops"][1])
    assert list(cols["time_s"]) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ("time_s,iops\n0,1\n", "missing column"),
        ("time_s,mib_s,gib_written\n0,abc,1\n", "line 2: not a number"),
        ("time_s,mib_s,gib_written\n-1,1,1\n", "bad time_s"),
        ("time_s,mib_s,gib_written\n0.5,1,1\n", "bad time_s"),
        ("time_s,mib_s,gib_written\n0,inf,1\n", "not a finite number"),
    ],
)
def test_damaged_csv_raises_a_clear_error(tmp_path: Path, text: str, message: str):
    p = tmp_path / "fill.csv"
    p.write_text(text)
    with pytest.raises(ResultsFileError, match=message):
        read_columns(p, ("time_s", "mib_s", "gib_written"))


def test_probes_csv(tmp_path: Path):
    p = tmp_path / "probes.csv"
    p.write_text("phase,mib_s,seconds,bytes\nclean,315.1,26,8589934592\nafter_trim,,,\n")
    probes = read_probes(p)
    assert probes["clean"].mib_s == 315.1 and probes["clean"].bytes == 8589934592
    assert "after_trim" not in probes
    p.write_text("phase,mib_s,seconds,bytes\nbogus,1,1,1\n")
    with pytest.raises(ResultsFileError, match="unknown phase"):
        read_probes(p)


def test_load_run_collects_problems_instead_of_raising(tmp_path: Path):
    run = tmp_path / "consistency-default"
    run.mkdir()
    (run / "run.json").write_text("{not json")
    (run / "iops.csv").write_text("time_s,iops\n0,1\n")
    data = load_run(run)
    assert data.meta == {}
    assert data.iops is None
    assert any("run.json" in p for p in data.problems)
    assert any("iops.csv: missing column" in p for p in data.problems)
    assert data.kind == "consistency"  # from the folder name


def test_probe_means_fall_back_to_the_per_second_files(tmp_path: Path):
    run = tmp_path / "trim"
    run.mkdir()
    (run / "probe-clean.csv").write_text("time_s,mib_s\n0,100\n1,300\n")
    data = load_run(run)
    assert data.probes["clean"].mib_s == 200


def test_fio_logs_are_turned_into_csvs_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    run = tmp_path / "consistency-default"
    (run / "fio").mkdir(parents=True)
    (run / "fio" / "torture_iops.1.log").write_text("1000, 5, 1, 0, 0\n")
    calls: list[Path] = []

    def write_run_csvs(run_dir: Path) -> None:
        calls.append(run_dir)
        (run_dir / "iops.csv").write_text(",".join(IOPS_COLUMNS) + "\n0,5,,,,,\n")

    fake = types.ModuleType("ssdbench.fio.logs")
    fake.write_run_csvs = write_run_csvs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ssdbench.fio.logs", fake)
    data = load_run(run)
    assert calls == [run]
    assert data.iops is not None and list(data.iops["iops"]) == [5]

    def broken(run_dir: Path) -> None:
        raise ValueError("truncated log")

    fake.write_run_csvs = broken  # type: ignore[attr-defined]
    data = load_run(run)
    assert any("truncated log" in p for p in data.problems)
    assert data.iops is not None  # the CSV on disk is still used
