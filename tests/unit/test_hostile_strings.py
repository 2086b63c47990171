"""Drive strings written by a counterfeiter (#28 items 4, 5 and 6): on screens and consoles
no markup and no control character, in paths and store keys no dot segment, in CSVs no
formula. Each test here failed on the code before 2026-11-27 (the comment says how)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

from ssdbench.kiosk.run import Screen
from ssdbench.kiosk.station import StationRow
from ssdbench.lab.config import parse_store
from ssdbench.lab.uploader import StoreUploader, bench_name
from ssdbench.report.summary import SUMMARY_COLUMNS, summary_csv
from ssdbench.results.layout import drive_dir_name
from tests.hostile import EVIL_MODEL, EVIL_SERIAL, hostile_bundle
from tests.unit.lab.test_outages import FlakyStore

REPO = Path(__file__).resolve().parents[2]


def test_serial_dot_dot_stays_inside_the_bench_folder(tmp_path: Path) -> None:
    # before: safe_name("..") kept "..", so lab1/bench/../20261127T.../run.json was sent
    root = tmp_path / "ram"
    drive = root / "20261127T010203Z_QEMU_.."
    drive.mkdir(parents=True)
    (drive / "drive.json").write_text(json.dumps({"drive": {"serial": ".."}}))
    cfg = parse_store({"kind": "http", "endpoint": "http://127.0.0.1:9/dav", "prefix": "lab1"},
                      tmp_path)
    up = StoreUploader(FlakyStore(), cfg, root, bench_name(cfg, ".."), lambda _l: None)
    key = up.key_for(f"{drive.name}/consistency-default/run.json")
    assert key is not None and ".." not in key.split("/"), key
    assert key.startswith("lab1/_./_.-h5ec1f7e700f3/"), key  # a serial: distinct (#42)
    name = drive_dir_name(datetime(2026, 11, 27), ".hidden", "../x")
    assert name == "20261127T000000Z__hidden__._x-hd6b96a97d147", name


def test_summary_csv_neutralises_a_formula_in_a_drive_string() -> None:
    # before: the model went verbatim into summary.csv: a spreadsheet ran =HYPERLINK(...)
    row = dict.fromkeys(SUMMARY_COLUMNS, "")
    row.update(model=EVIL_MODEL, serial="=cmd|' /C calc'!A0", steady_iops_mean="-3.5")
    parsed = next(csv.DictReader(io.StringIO(summary_csv([row]))))
    assert parsed["model"].startswith("'=") and parsed["serial"].startswith("'=")
    assert parsed["steady_iops_mean"] == "-3.5"


def test_ssdbench_list_prints_no_control_character_and_no_spoofed_serial(
        tmp_path: Path) -> None:
    # before: ESC [2J and BEL went to the terminal raw
    bundle = hostile_bundle(tmp_path / "bundle")
    proc = subprocess.run([sys.executable, "-m", "ssdbench", "list", "--from-bundle",
                           str(bundle)], capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "tui" / "src")))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert EVIL_SERIAL in proc.stdout  # the literal brackets, not another drive's serial


def test_the_station_screen_shows_markup_as_text() -> None:
    # before: station.add_row(..., row.model, ...) parsed "[/]": MarkupError, and the station
    # skipped the final report, the copy, the upload and the power-off
    class Board:
        def rows(self) -> list[StationRow]:
            return [StationRow("sda", EVIL_SERIAL, EVIL_MODEL, "FAIL", "[bold]x[/]")]

    screen = Screen(io.StringIO(), board=Board())  # type: ignore[arg-type]
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(screen._table())
    text = out.getvalue()
    assert EVIL_SERIAL in text and "[/]" in text and "\x1b" not in text
