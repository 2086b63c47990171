"""The fleet index (#46, docs/lab.md "The fleet at a million runs"): a build with the index
kept in the store gives the same rows as one that reads every run.json, reads only what is
new or changed, drops the rows of deleted runs, refuses a damaged or hostile index file with a
note (and rebuilds it), and shows a drive's hostile strings escaped on the page and the
search pages. Before: every build read every run.json, and the page was one table of every
run (a million rows)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from ssdbench.cli import main
from ssdbench.lab import fleet, fleetindex
from tests.conftest import DATA
from tests.hostile import EVIL_MODEL, HOSTILE_MODEL, HOSTILE_SERIAL

NOW = datetime(2026, 11, 25, 8, 0, 0, tzinfo=UTC)
RUN = json.loads((DATA / "lab/results/20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001/trim/"
                  "run.json").read_text())


def add_run(root: Path, bench: str, serial: str, run: str, *, iops: float = 20000.0,
            model: str = "Vendor SSD 1 TB", started: str = "2026-11-25T06:00:00Z",
            state: str = "done", lot: str = "") -> Path:
    doc = json.loads(json.dumps(RUN))
    doc.update(run=run, started=started, state=state)
    if lot:
        doc["lot"] = lot
    doc["drive"].update(model=model, serial=serial)
    doc["analysis"]["iops"]["steady"]["mean"] = iops
    folder = root / bench / fleetindex_safe(serial) / "20261125T060000Z" / run
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(doc))
    status = root / bench / "status.json"
    if not status.exists():
        status.write_text(json.dumps({"bench": bench, "state": "done",
                                      "time": "2026-11-25T07:59:00Z"}))
    return folder / "run.json"


def fleetindex_safe(serial: str) -> str:
    from ssdbench.untrusted import path_part

    return path_part(serial, distinct=True)


def lab(root: Path, drives: int = 6) -> Path:
    for d in range(drives):
        for run in ("trim", "consistency-default"):
            add_run(root, f"bench-{d % 3}", f"SN{d:04d}", run, iops=10000.0 + 1000 * d,
                    started=f"2026-11-25T06:{d:02d}:00Z", lot=f"LOT-{d % 2}")
    return root


def build(root: Path, out: Path, **kw: object) -> fleetindex.Result:
    out.mkdir(parents=True, exist_ok=True)
    return fleetindex.build(fleetindex.FolderSource(root), out, now=NOW, **kw)  # type: ignore[arg-type]


def rows(out: Path) -> list[dict[str, str]]:
    return sorted(csv.DictReader(io.StringIO((out / "fleet.csv").read_text())),
                  key=lambda r: (r["bench"], r["serial"], r["run"]))


def test_an_incremental_build_reads_only_new_runs_and_equals_a_full_build(
        tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1")
    first = build(root, tmp_path / "a")
    assert (first.runs, first.read) == (12, 12)
    # one index file per bench and day of its run ids
    assert sorted(p.relative_to(root / "_fleet").as_posix()
                  for p in (root / "_fleet").glob("*/*.csv.gz")) == [
        "bench-0/20261125.csv.gz", "bench-1/20261125.csv.gz", "bench-2/20261125.csv.gz"]
    again = build(root, tmp_path / "a")
    assert (again.runs, again.read) == (12, 0)  # all from the index
    add_run(root, "bench-1", "SNNEW1", "trim", started="2026-11-26T00:00:00Z")
    add_run(root, "bench-3", "SNNEW2", "trim", started="2026-11-26T01:00:00Z")
    # a finished run's run.json sent again (changed): read again
    changed = root / "bench-0/SN0000/20261125T060000Z/trim/run.json"
    doc = json.loads(changed.read_text())
    doc["analysis"]["iops"]["steady"]["mean"] = 55555.0
    changed.write_text(json.dumps(doc))
    os.utime(changed, ns=(time.time_ns(), time.time_ns() + 10**9))
    inc = build(root, tmp_path / "a")
    assert (inc.runs, inc.read) == (14, 3)
    full = build(root, tmp_path / "b", use_index=False)
    assert full.read == 14 and rows(tmp_path / "a") == rows(tmp_path / "b")
    assert any(r["steady_iops"] == "55555" for r in rows(tmp_path / "a"))
    page_a = fleet.fleet_html(inc.fleet)
    assert page_a == fleet.fleet_html(full.fleet).replace(full.fleet.generated,
                                                          inc.fleet.generated)
    assert "Runs by lot" in page_a and "LOT-1" in page_a


def test_a_running_run_is_read_again_until_it_is_finished(tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1", drives=1)
    path = add_run(root, "bench-0", "SNRUN", "trim", state="running")
    assert build(root, tmp_path / "o").read == 3
    assert build(root, tmp_path / "o").read == 1  # not indexed: still running
    doc = json.loads(path.read_text())
    doc["state"] = "done"
    path.write_text(json.dumps(doc))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert build(root, tmp_path / "o").read == 1
    assert build(root, tmp_path / "o").read == 0


def test_deleted_runs_leave_the_page_and_the_index(tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1")
    build(root, tmp_path / "o")
    shutil.rmtree(root / "bench-1/SN0001")
    result = build(root, tmp_path / "o")
    assert (result.runs, result.read) == (10, 0)
    assert all(r["serial"] != "SN0001" for r in rows(tmp_path / "o"))
    text = gzip.decompress((root / "_fleet/bench-1/20261125.csv.gz").read_bytes()).decode()
    assert "SN0001" not in text and text.count("\n") == 2 + 2  # first line, header, 2 runs


def _index_with(root: Path, bench: str, edit: object) -> None:
    path = root / "_fleet" / bench / "20261125.csv.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    path.write_bytes(gzip.compress(edit(text).encode()))  # type: ignore[operator]


def test_a_damaged_or_hostile_index_is_refused_with_a_note_and_rebuilt(tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1")
    build(root, tmp_path / "o")
    want = rows(tmp_path / "o")
    cases = {
        "not a gzip": lambda: (root / "_fleet/bench-0/20261125.csv.gz").write_bytes(b"PK\x03\x04junk"),
        "first line": lambda: _index_with(root, "bench-0", lambda t: "x" + t),
        # a row naming another bench's run, and one for a path out of the prefix
        "other bench": lambda: _index_with(root, "bench-0", lambda t: t.replace(
            "bench-0/SN0000", "bench-1/SN0000", 1)),
        "path": lambda: _index_with(root, "bench-0", lambda t: t.replace(
            "bench-0/SN0000", "bench-0/../../etc", 1)),
        "control": lambda: _index_with(root, "bench-0", lambda t: t.replace(
            "Vendor SSD", "Vendor\u202eSSD", 1)),
        "width": lambda: _index_with(root, "bench-0", lambda t: t.replace("\n", ",x\n", 3)),
        "running": lambda: _index_with(root, "bench-0", lambda t: t.replace(
            ",done,", ",running,", 1)),
        "bomb": lambda: (root / "_fleet/bench-0/20261125.csv.gz").write_bytes(gzip.compress(
            fleetindex.FIRST_LINE.encode() + b"\n" + b"a" * (fleetindex.INDEX_LIMIT + 10))),
    }
    for i, (why, damage) in enumerate(cases.items()):
        damage()
        out = tmp_path / f"o{i}"  # a new output folder: nothing cached, the index is read
        result = build(root, out)
        notes = [s for s in result.fleet.skipped
                 if s.startswith("_fleet/bench-0/20261125.csv.gz")]
        assert len(notes) == 1 and "refused, rebuilt from the store" in notes[0], (why, notes)
        assert result.read == 4, why  # bench-0's runs read again
        assert rows(out) == want, why
        assert "Files left out" in fleet.fleet_html(result.fleet), why
        assert build(root, tmp_path / f"n{i}").read == 0, why  # rebuilt: whole again


def test_an_index_cell_with_markup_is_escaped_and_a_formula_quoted(tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1")
    build(root, tmp_path / "o")
    _index_with(root, "bench-0", lambda t: t.replace("Vendor SSD 1 TB", "=1+2<img src=x>"))
    result = build(root, tmp_path / "n")  # nothing cached there: the index is read
    assert result.read == 0  # a valid index: its cells are used, as text
    page = fleet.fleet_html(result.fleet)
    assert "<img" not in page and "=1+2&lt;img src=x&gt;" in page
    assert "'=1+2<img src=x>" in (tmp_path / "n/fleet.csv").read_text()
    search = "".join(p.read_text() for p in (tmp_path / "n/fleet-serials").iterdir())
    assert "<img" not in search and "=1+2&lt;img src=x&gt;" in search


def test_hostile_drive_strings_on_the_page_the_csv_and_the_search_pages(
        tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1")
    add_run(root, "bench-0", HOSTILE_SERIAL, "trim", model=HOSTILE_MODEL, lot="<b>lot</b>")
    add_run(root, "bench-0", "SNEVIL", "trim", model=EVIL_MODEL)
    out = tmp_path / "o"
    assert main(["fleet", str(root), "-o", str(out)]) == 0
    assert main(["fleet", str(root), "-o", str(out)]) == 0  # from the index too
    pages = [out / "fleet.html", *(out / "fleet-serials").iterdir(),
             *(out / "fleet-lots").iterdir()]
    for page in pages:
        text = page.read_text()
        assert "<script>" not in text and "</style>" not in text.split("</head>")[1], page
        assert "<b>lot" not in text and "\u202e" not in text and "\x1b" not in text, page
        assert "default-src 'none'" in text, page
    assert "&lt;script&gt;" in (out / "fleet.html").read_text()
    assert any("&lt;script&gt;" in p.read_text() for p in (out / "fleet-serials").iterdir())
    text = (out / "fleet.csv").read_text()
    assert "'=HYPERLINK" in text and "\x1b" not in text and "\u202e" not in text
    # the hostile serial's page is named by its first characters, A-Z 0-9 or _
    assert all(p.name == "index.html" or p.stem.replace("_", "").isalnum()
               for p in (out / "fleet-serials").iterdir())


def test_the_page_shows_the_newest_runs_and_summaries_of_every_run(tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1")
    result = build(root, tmp_path / "o", newest=4)
    page = fleet.fleet_html(result.fleet)
    assert len(result.fleet.rows) == 4 and "The newest 4 runs" in page and "12 runs" in page
    assert [r["started"] for r in result.fleet.rows] == sorted(
        (r["started"] for r in rows(tmp_path / "o")), reverse=True)[:4]
    assert "Runs by model" in page and "Runs by bench" in page
    assert "fleet-serials/index.html" in page
    listing = (tmp_path / "o/fleet-serials/index.html").read_text()
    assert "SN.html" in listing and "(12)" in listing
    assert (tmp_path / "o/fleet-serials/SN.html").read_text().count("<tr>") == 13


def _age(root: Path, seconds: int = 3600) -> None:
    """Every folder's mtime an hour back (a store synced an hour ago)."""
    t = time.time_ns() - seconds * 10**9
    for dirpath, _dirs, _files in os.walk(root):
        if "_fleet" not in dirpath:
            os.utime(dirpath, ns=(t, t))


def test_a_folder_whose_mtime_is_the_one_listed_is_not_read_again(
        tmp_path: Path, monkeypatch: object) -> None:
    root = lab(tmp_path / "lab1")
    _age(root)
    build(root, tmp_path / "o")
    assert sorted(p.name for p in (root / "_fleet").iterdir())[:2] == [
        "bench-0", "bench-0.dirs.json.gz"]  # its index files by day, its folder listing
    read: list[str] = []
    real = os.scandir

    def counted(path: object = ".") -> object:
        if str(path).startswith(str(root)):
            read.append(str(path))
        return real(path)  # type: ignore[call-overload]

    monkeypatch.setattr(fleetindex.os, "scandir", counted)  # type: ignore[attr-defined]
    again = build(root, tmp_path / "o")
    assert again.read == 0 and read == [str(root)]  # the top folder only
    add_run(root, "bench-1", "SNNEW", "trim")  # a new serial folder in bench-1
    read.clear()
    inc = build(root, tmp_path / "o")
    assert inc.read == 1 and str(root / "bench-1") in read
    assert not any("bench-0" in p or "bench-2" in p for p in read)
    build(root, tmp_path / "full", use_index=False)
    assert rows(tmp_path / "o") == rows(tmp_path / "full")


def test_a_damaged_folder_listing_is_refused_and_the_folder_read_again(
        tmp_path: Path) -> None:
    root = lab(tmp_path / "lab1")
    _age(root)
    build(root, tmp_path / "o")
    path = root / "_fleet/bench-0.dirs.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc["dirs"]["bench-0/../../etc"] = [1, [], {}]
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    add_run(root, "bench-0", "SNNEW", "trim")
    _age(root)  # the new run's folders too: only a listing read again can find it
    result = build(root, tmp_path / "o")
    assert any(s.startswith("_fleet/bench-0.dirs.json.gz: refused") for s in
               result.fleet.skipped)
    assert result.read == 1 and any(r["serial"] == "SNNEW" for r in rows(tmp_path / "o"))


def test_a_search_page_over_its_rows_is_split_by_one_more_character(
        tmp_path: Path, monkeypatch: object) -> None:
    monkeypatch.setattr(fleetindex, "PAGE_ROWS", 4)  # type: ignore[attr-defined]
    monkeypatch.setattr(fleetindex, "PAGE_MAX", 5)  # type: ignore[attr-defined]
    root = lab(tmp_path / "lab1", drives=6)  # SN0000..SN0005, 2 runs each; 2 lots of 6
    for d in range(12):
        add_run(root, "bench-0", f"XY{d:02d}", "trim", lot="LOT-0")  # 18 runs of LOT-0
    out = tmp_path / "o"
    result = build(root, out)
    serials = result.fleet.summary.search["serials"]  # type: ignore[union-attr]
    assert sum(serials.values()) == 24 and max(serials.values()) <= 4
    assert {"SN0000", "XY00"} <= set(serials)  # split where the serials differ
    for name, n in serials.items():
        page = (out / "fleet-serials" / f"{name}.html").read_text()
        assert page.count("<tr>") == n + 1, name
    # one lot, 18 runs: not split (the values are the same), the first 5 shown
    lots = result.fleet.summary.search["lots"]  # type: ignore[union-attr]
    assert lots["LOT_0"] == 18
    page = (out / "fleet-lots/LOT_0.html").read_text()
    assert page.count("<tr>") == 6 and "the first 5 here" in page
    assert not list(out.rglob("*.part")) and not (out / "_fleet/.cache/spill").exists()


def test_a_split_stops_where_a_value_ends(tmp_path: Path, monkeypatch: object) -> None:
    monkeypatch.setattr(fleetindex, "PAGE_ROWS", 3)  # type: ignore[attr-defined]
    root = tmp_path / "lab1"
    for run in ("trim", "consistency-default", "intake", "speed"):
        add_run(root, "bench-0", "AB", run)  # 4 runs of serial AB: ends at 2 characters
        add_run(root, "bench-0", "AB1", run)
    result = build(root, tmp_path / "o")
    assert result.fleet.summary.search["serials"] == {"AB": 4, "AB1": 4}  # type: ignore[union-attr]


def _pages(out: Path) -> dict[str, bytes]:
    """fleet.csv and every search page, by path."""
    found = {"fleet.csv": (out / "fleet.csv").read_bytes()}
    for folder in ("fleet-serials", "fleet-asset-tags", "fleet-lots"):
        for p in sorted((out / folder).iterdir()) if (out / folder).is_dir() else ():
            found[f"{folder}/{p.name}"] = p.read_bytes()
    return found


def _same_as_a_cold_build(root: Path, inc: fleetindex.Result, out: Path, cold: Path) -> None:
    import shutil

    shutil.rmtree(cold, ignore_errors=True)
    full = build(root, cold, use_index=False)
    assert full.runs == inc.runs and full.read == full.runs
    assert _pages(out) == _pages(cold)
    assert fleet.fleet_html(inc.fleet) == fleet.fleet_html(full.fleet).replace(
        full.fleet.generated, inc.fleet.generated)


def _replace(path: Path, doc: dict[str, object]) -> None:
    """Written as a sync tool writes: a new file renamed into place."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


def test_an_incremental_build_makes_the_same_pages_and_csv_as_a_cold_build(
        tmp_path: Path, monkeypatch: object) -> None:
    """#46: the pages and fleet.csv an incremental build leaves are those of a build that
    reads every run.json, byte for byte, after new runs (a new day, and the same day),
    a run folder replaced, a run.json and a drive.json rewritten, runs deleted, and with
    hostile serials and lots (markup, path separators, a formula) on the search pages."""
    monkeypatch.setattr(fleetindex, "PAGE_ROWS", 3)  # type: ignore[attr-defined]
    root = lab(tmp_path / "lab1")
    hostile = [(HOSTILE_SERIAL, "<b>lot</b>"), ("../../etc/passwd", "a/../b"),
               ("=1+2", "LOT-0"), ("sn<i>x", "lot\\..\\c")]
    for i, (serial, lot) in enumerate(hostile):
        add_run(root, f"bench-{i % 2}", serial, "trim", lot=lot, model=EVIL_MODEL,
                started=f"2026-11-25T07:0{i}:00Z")
    out, cold = tmp_path / "o", tmp_path / "cold"
    first = build(root, out)
    _same_as_a_cold_build(root, first, out, cold)
    # new runs: a new day's (a new segment) and the same day's
    for d in range(4):
        path = add_run(root, f"bench-{d % 3}", f"NEW{d}", "trim", lot=f"LOT-{d}",
                       started=f"2026-11-26T0{d}:00:00Z")
        day = path.parents[1]
        os.rename(day, day.with_name("20261126T060000Z"))
    add_run(root, "bench-2", "SAMEDAY", "intake", lot="LOT-9")
    # a run folder replaced (another run.json), a run.json and a drive.json rewritten
    replaced = root / "bench-1/SN0001/20261125T060000Z/trim"
    doc = json.loads((replaced / "run.json").read_text())
    shutil.rmtree(replaced)
    replaced.mkdir()
    doc["analysis"]["iops"]["steady"]["mean"] = 77777.0
    doc["lot"] = "<script>x</script>"
    (replaced / "run.json").write_text(json.dumps(doc))
    edited = root / "bench-0/SN0000/20261125T060000Z/consistency-default/run.json"
    doc = json.loads(edited.read_text())
    doc["state"] = "failed"
    _replace(edited, doc)
    _replace(root / "bench-2/SN0002/20261125T060000Z/drive.json",
             {"drive": {"model": "Replaced model", "serial": "SN0002", "firmware": "F2"}})
    inc = build(root, out)
    assert inc.read == 4 + 1 + 1 + 1 + 2  # new, same day, replaced, edited, the drive's 2
    _same_as_a_cold_build(root, inc, out, cold)
    assert any(r["steady_iops"] == "77777" for r in rows(out))
    text = "".join(v.decode() for k, v in _pages(out).items() if k.endswith(".html"))
    assert "<script>" not in text and "<b>" not in text and "&lt;b&gt;lot" in text
    assert all(name.count("/") <= 1 and not name.startswith(".") for name in _pages(out))
    assert all(p.stem.replace("_", "").isalnum() or p.name == "index.html"
               for p in (out / "fleet-lots").iterdir())
    # runs deleted (a whole day of one bench, and one drive), then nothing changed
    shutil.rmtree(root / "bench-1/NEW1")
    shutil.rmtree(root / "bench-0/SN0003")
    inc = build(root, out)
    assert inc.read == 0
    _same_as_a_cold_build(root, inc, out, cold)
    again = build(root, out)
    assert again.read == 0 and _pages(out) == _pages(cold)


def test_folders_listed_again_are_kept_beside_the_listing(tmp_path: Path) -> None:
    """A build that lists only a few folders again writes those (``.dirs.new.json.gz``),
    not the whole listing; a listing with a sub-folder that is not a name is refused."""
    root = lab(tmp_path / "lab1", drives=30)
    _age(root)
    build(root, tmp_path / "o")
    listing = root / "_fleet/bench-1.dirs.json.gz"
    before = listing.read_bytes()
    add_run(root, "bench-1", "SNNEW", "trim")
    old = time.time_ns() - 10**12  # the new folders and bench-1 itself: not changed just now
    for p in (root / "bench-1/SNNEW/20261125T060000Z/trim", root / "bench-1/SNNEW/20261125T060000Z",
              root / "bench-1/SNNEW", root / "bench-1"):
        os.utime(p, ns=(old, old))
    inc = build(root, tmp_path / "o")
    assert inc.read == 1 and listing.read_bytes() == before  # the listing as it was
    since = json.loads(gzip.decompress((root / "_fleet/bench-1.dirs.new.json.gz").read_bytes()))
    assert sorted(since["dirs"]) == ["bench-1", "bench-1/SNNEW", "bench-1/SNNEW/20261125T060000Z",
                                     "bench-1/SNNEW/20261125T060000Z/trim"]
    assert build(root, tmp_path / "o").read == 0  # the two read together
    build(root, tmp_path / "full", use_index=False)
    assert rows(tmp_path / "o") == rows(tmp_path / "full")
    doc = json.loads(gzip.decompress(listing.read_bytes()))
    doc["dirs"]["bench-1"][1].append("..")
    listing.write_bytes(gzip.compress(json.dumps(doc).encode()))
    result = build(root, tmp_path / "o")
    assert any(s.startswith("_fleet/bench-1.dirs.json.gz: refused") for s in
               result.fleet.skipped)
    assert rows(tmp_path / "o") == rows(tmp_path / "full")
