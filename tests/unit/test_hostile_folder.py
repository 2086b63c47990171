"""A results folder made by someone else (#42): every reader of results (`ssdbench report`,
`ssdbench fleet`, `verify-record`, `run --resume`) on tests/hostile.py's
hostile_results_folder writes nothing outside its output folder, never hangs on a FIFO and
never crashes; the one path sanitiser keeps serials apart; charts take any drive string;
every CSV is a CSV. Each test here failed on the code before 2026-11-28 (the comment says
how)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ssdbench import jsonfile
from ssdbench.results import atomic
from ssdbench.results.layout import drive_dir_name
from ssdbench.untrusted import path_part
from tests.hostile import (
    FORMULA_WORKLOAD,
    MATH_MODEL,
    TRAVERSAL_LOOP,
    _pts_entry,
    hostile_results_folder,
)

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO / "tui" / "src"), MPLBACKEND="Agg")


def tree(top: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple[str, str]]:
    """Every entry under ``top`` (links not followed) but those under ``skip``: its kind and
    its content's hash (a file), its target (a link)."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirs, files in os.walk(top):
        here = Path(dirpath)
        dirs[:] = [d for d in dirs if here / d not in skip]
        for name in dirs + files:
            path = here / name
            rel = path.relative_to(top).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", "")
            elif path.is_file():
                out[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                out[rel] = ("other", "")
    return out


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return hostile_results_folder(tmp_path / "stick" / "ssdbench")


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``ssdbench ARGS`` in a process of its own: a reader that blocks on a FIFO is a
    TimeoutExpired here, not a hung test run."""
    try:
        return subprocess.run([sys.executable, "-m", "ssdbench", *args], capture_output=True,
                              text=True, check=False, env=ENV, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"ssdbench {' '.join(args)} hung ({timeout} s): a FIFO read? {exc}")


def test_report_writes_only_inside_the_folder_and_reports_every_drive(hostile: Path) -> None:
    # before: pwned.csv and pwned-rounds.csv were written to stick/outside/, the charts and
    # report.html into victim/ through the links, the report hung on the FIFOs (hir-idle-5.csv,
    # the fio log), and the drive's charts failed on its model (mathtext ValueError)
    top = hostile.parent.parent
    before = tree(top, skip=(hostile,))
    proc = cli("report", "--no-svg", str(hostile))
    assert tree(top, skip=(hostile,)) == before, proc.stderr
    assert not (top / "stick" / "outside").exists()
    assert proc.returncode == 1, proc.stderr  # damaged files, named
    assert "Traceback" not in proc.stderr, proc.stderr
    for why in ("a FIFO, not a regular file", "over the limit", "nested too deeply",
                "a symbolic link"):
        assert why in proc.stderr, (why, proc.stderr)
    assert (hostile / "index.html").is_file()
    run = hostile / "20261127T000000Z_traversal" / "consistency-default"
    assert (run / "iops-full-log.png").stat().st_size > 10_000  # the model did not stop it
    assert "charts failed" not in proc.stderr, proc.stderr
    tables = sorted(p.name for p in run.glob("pts-*.csv"))
    assert len(tables) == 4 and all("/" not in t and not t.startswith("pts-.") for t in tables)
    name = f"pts-{path_part(TRAVERSAL_LOOP, distinct=True)}.csv"
    with (run / name).open(newline="") as f:
        rows = list(csv.reader(f))
    assert {len(r) for r in rows} == {9}  # the comma in the workload name is one cell
    assert rows[1][0] == "'" + FORMULA_WORKLOAD  # not a formula
    page = (hostile / "index.html").read_text()
    assert "not for the report" not in page


def test_fleet_reads_a_hostile_copy_of_a_store_without_hanging_or_following_links(
        hostile: Path, tmp_path: Path) -> None:
    # before: the FIFOs (status.json, drive.json) hung `ssdbench fleet`, and a run.json
    # that is a link was read wherever it pointed
    out = tmp_path / "fleet-out"
    before = tree(tmp_path, skip=(out,))
    proc = cli("fleet", str(hostile), "-o", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert tree(tmp_path, skip=(out,)) == before
    # (#46: the index of a folder's runs and the search pages go beside the page, in -o)
    assert {"_fleet", "fleet.csv", "fleet.html", "fleet-serials"} == {
        p.name for p in out.iterdir()}
    page = (out / "fleet.html").read_text()
    for why in ("a FIFO", "a symbolic link", "over the limit", "nested too deeply"):
        assert why in page, why


def test_fleet_output_is_not_written_through_a_link(hostile: Path, tmp_path: Path) -> None:
    # before: a fleet.csv link in -o was replaced silently; now nothing goes through a link
    out = tmp_path / "fleet-out"
    out.mkdir()
    secret = tmp_path / "secret.csv"
    secret.write_text("kept\n")
    (out / "fleet.csv").symlink_to(secret)
    proc = cli("fleet", str(hostile / "lab"), "-o", str(out), timeout=120)
    assert proc.returncode == 1 and "symbolic link" in proc.stderr, proc.stderr
    assert secret.read_text() == "kept\n" and (out / "fleet.csv").is_symlink()


def test_run_resume_refuses_a_journal_that_points_outside(hostile: Path) -> None:
    # before: state.json's drive_dir "../outside" was joined to the results folder and,
    # being a folder, used: the resumed plan's files went there
    (hostile.parent / "outside").mkdir()
    top = hostile.parent.parent
    before = tree(top)
    proc = cli("run", "--resume", "--results", str(hostile), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "drive_dir '../outside' is not a folder of this results folder" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert tree(top) == before


def test_verify_record_chain_on_the_hostile_folder_writes_nothing(hostile: Path) -> None:
    top = hostile.parent.parent
    before = tree(top)
    proc = cli("verify-record", "--chain", str(hostile / "lab" / "bench1"), timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert tree(top) == before


def test_journal_drive_dir_is_one_folder_under_the_root(tmp_path: Path) -> None:
    from ssdbench.results.layout import journal_drive_dir

    root = tmp_path / "ssdbench"
    (root / "20261127T000000Z_M_S1").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "linked").symlink_to(tmp_path / "outside")
    assert journal_drive_dir(root, "20261127T000000Z_M_S1") == root / "20261127T000000Z_M_S1"
    for bad in ("../outside", "linked", "..", ".", "", "a/b", None, 5, "missing"):
        assert journal_drive_dir(root, bad) is None, bad


def test_distinct_serials_never_share_a_folder() -> None:
    # before: SN 0001, SN/0001 and SN_0001 were all SN_0001: three drives in one folder
    serials = ("SN 0001", "SN/0001", "SN_0001", "SN\\0001", "SN_0001-h" + "0" * 12)
    names = {drive_dir_name(datetime(2026, 11, 28), "M", s) for s in serials}
    assert len(names) == len(serials)
    assert drive_dir_name(datetime(2026, 11, 28), "M", "SN_0001") == "20261128T000000Z_M_SN_0001"
    assert path_part("S4EVNF0M123456", distinct=True) == "S4EVNF0M123456"  # clean: as it was
    assert path_part(" S4EV ", distinct=True) == "S4EV"  # ATA padding is no part of it
    long_a, long_b = "x" * 70 + "a", "x" * 70 + "b"
    assert path_part(long_a, distinct=True) != path_part(long_b, distinct=True)
    for s in (*serials, long_a, "..", ".", ""):
        part = path_part(s, distinct=True)
        assert len(part) <= 64 and part not in (".", "..") and not part.startswith(".")
        assert part == path_part(part)  # only A-Za-z0-9._-


def test_a_chart_takes_a_drive_model_that_is_a_broken_formula() -> None:
    # before: ValueError from matplotlib's mathtext: the drive's charts and the comparisons
    # of index.html were not drawn
    import numpy as np

    from ssdbench.report import charts as ch

    t = np.arange(120, dtype=np.float64)
    iops = np.full(120, 9000.0)
    title = ch.title_for(MATH_MODEL, "consistency-default", 25.0)
    drawn = ch.iops_charts(t, iops, title=title, steady_start_s=60, cliff_s=None,
                           steady_state_s=None, steady_mean=9000.0, svg=False)
    assert drawn and all(c.png[:4] == b"\x89PNG" for c in drawn)
    fig = ch.iops_figures(t, iops, title=title, steady_start_s=60, cliff_s=None,
                          steady_state_s=None, steady_mean=9000.0)[0][1]
    assert MATH_MODEL in (fig.get_suptitle() or "").replace("\\$", "$")
    series = [ch.DriveSeries(MATH_MODEL, t, iops, 60.0, ch.Workload(), ""),
              ch.DriveSeries("$x$ 2", t, iops, 60.0, ch.Workload(), "")]
    assert ch.compare_iops_charts("run$1$", series, svg=False)
    rows = [(MATH_MODEL, {"clean": 300.0}, "effective", "probe: $4k$")]
    assert ch.compare_trim_chart(rows, svg=False) is not None


def test_pts_tables_are_csv_with_safe_names() -> None:
    # before: the tables were joined strings (a workload name with a comma shifted the
    # columns, a formula stayed a formula) named pts-<key>.csv with the key as it was
    from ssdbench.analysis.pts import pts_loop
    from ssdbench.report import pts_csvs

    loop = pts_loop(TRAVERSAL_LOOP, _pts_entry(FORMULA_WORKLOAD))
    tables = pts_csvs(loop)
    for name, text in tables.items():
        assert "/" not in name and ".." not in name.split("-")[1:2]
        rows = list(csv.reader(io.StringIO(text)))
        assert {len(r) for r in rows} == {9 if not name.endswith("-rounds.csv") else 10}
        assert all(not c.startswith(("=", "+", "@")) for r in rows for c in r)


def fifo_unblocked(path: Path, call: Callable[[], Any], seconds: float = 10) -> Any:
    """``call()`` in a thread; if it is still blocked after ``seconds`` (open() of a FIFO
    waits for a writer), a writer opens the FIFO to free it and the test fails."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(5)
        pytest.fail(f"reading {path.name} blocked on the FIFO")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_jsonfile_refuses_a_fifo_a_link_and_a_huge_file(tmp_path: Path) -> None:
    # before: a FIFO blocked the reader for ever, a 16 MiB + 1 file was read whole, a link
    # was followed wherever it pointed
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="a FIFO, not a regular file"):
        fifo_unblocked(fifo, lambda: jsonfile.read(fifo))
    huge = tmp_path / "drive.json"
    with huge.open("wb") as f:
        f.write(b"{}")
        f.truncate(jsonfile.JSON_LIMIT + 1)
    with pytest.raises(OSError, match="over the limit"):
        jsonfile.read(huge)
    target = tmp_path / "secret.json"
    target.write_text(json.dumps({"secret": 1}))
    link = tmp_path / "status.json"
    link.symlink_to(target)
    with pytest.raises(OSError, match="a symbolic link"):
        jsonfile.read(link, follow=False)
    assert jsonfile.read(link) == {"secret": 1}  # followed where the caller allows it
    assert jsonfile.read_bytes(target, limit=100) == target.read_bytes()


def test_results_csv_reader_refuses_a_fifo(tmp_path: Path) -> None:
    # before: read_columns opened hir-idle-5.csv and waited for a writer for ever
    from ssdbench.report.load import ResultsFileError, read_columns

    fifo = tmp_path / "hir-idle-5.csv"
    os.mkfifo(fifo)
    with pytest.raises(ResultsFileError, match="FIFO"):
        fifo_unblocked(fifo, lambda: read_columns(fifo, ("time_s", "iops")))


def test_atomic_writes_stay_inside_their_root(tmp_path: Path) -> None:
    # before: there was no root: a name with ../ or a link in the way was written through
    root = tmp_path / "out"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "linked").symlink_to(outside)
    (root / "report.html").symlink_to(outside / "report.html")
    for bad in (root / "x" / ".." / ".." / "outside" / "pwned.csv", root / "linked" / "a.png",
                root / "report.html", root / ".."):
        with pytest.raises(atomic.OutsideRoot):
            atomic.write_text(bad, "x", root=root)
    assert list(outside.iterdir()) == [] and not (root / "x").exists()
    atomic.write_text(root / "sub" / "ok.csv", "fine\n", root=root)
    assert (root / "sub" / "ok.csv").read_text() == "fine\n"


def test_a_planted_temporary_link_is_not_written_through(tmp_path: Path) -> None:
    # before: open(".NAME.tmp-PID-THREAD", "wb") followed a link planted under that name
    victim = tmp_path / "victim.txt"
    victim.write_text("kept\n")
    target = tmp_path / "out" / "summary.csv"
    target.parent.mkdir()
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    tmp.symlink_to(victim)
    atomic.write_text(target, "new\n")
    assert victim.read_text() == "kept\n" and target.read_text() == "new\n"
    assert not tmp.exists() and not tmp.is_symlink()


def test_the_kiosk_does_not_heal_or_report_a_folder_a_journal_points_out_of(
        tmp_path: Path) -> None:
    # before: a finished entry's drive_dir "../../outside/..." was healed (its drive.json
    # rewritten) and queued for a report there, outside the results folder
    from ssdbench.kiosk.config import parse_config
    from ssdbench.kiosk.run import _jobs, _plan_for
    from ssdbench.plan.journal import Journal
    from tests.unit.plan.test_heal import SERIAL, drive, folder

    root = tmp_path / "stick" / "ssdbench"
    root.mkdir(parents=True)
    outside = folder(tmp_path / "outside")  # a drive folder the heal would change
    config = parse_config({"plan": "trim", "select": [f"serial:{SERIAL}"],
                           "destroy": [SERIAL]})
    plan = _plan_for(config)
    journal = Journal.open(root)
    journal.start_drive(SERIAL, drive="nvme0n1", model="QEMU NVMe Ctrl", serial=SERIAL,
                        drive_dir=os.path.relpath(outside, root), plan=plan.to_json(),
                        identity=drive().identity.to_json())
    journal.run_state(SERIAL, "trim", "done")
    journal.finish_drive(SERIAL, "done")
    before = tree(tmp_path / "outside")
    reports: list[Path] = []
    _jobs(config, plan, [drive()], journal, io.StringIO(), reports=reports)
    assert reports == [] and tree(tmp_path / "outside") == before


def test_a_stick_whose_ssdbench_folder_is_a_link_is_not_reported(tmp_path: Path) -> None:
    # before: DIR/ssdbench, a link to another folder, was reported: summary.csv, index.html
    # and every report.html went where the link pointed
    elsewhere = hostile_results_folder(tmp_path / "elsewhere" / "ssdbench")
    stick = tmp_path / "stick"
    stick.mkdir()
    (stick / "ssdbench").symlink_to(elsewhere)
    before = tree(tmp_path / "elsewhere")
    proc = cli("report", "--no-svg", str(stick), timeout=120)
    assert proc.returncode == 2 and "a symbolic link: not reported" in proc.stderr, proc.stderr
    assert tree(tmp_path / "elsewhere") == before
