"""The fleet view from a folder laid out like the store: real results sent by the uploader
(into a folder), statuses of benches running, done, failed and silent."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.lab import fleet
from ssdbench.lab.config import parse_store
from ssdbench.lab.uploader import StoreUploader
from tests.conftest import DATA
from tests.schema_check import check_csv, check_csv_text

NOW = datetime(2026, 11, 25, 8, 0, 0, tzinfo=UTC)


class FolderStore:
    """A store that is a folder (put = write the file), to lay results out as keys."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, key: str, data: bytes, content_type: str = "") -> None:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def get(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def keys(self, prefix: str) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*")
                      if p.is_file() and p.relative_to(self.root).as_posix().startswith(prefix))


def lab(tmp_path: Path) -> Path:
    bucket = tmp_path / "bucket"
    store = FolderStore(bucket)
    cfg = parse_store({"kind": "http", "endpoint": "http://127.0.0.1:1", "prefix": "lab1"},
                      Path("."))
    statuses = {"bench-a": ("running", "2026-11-25T07:59:50Z"),
                "bench-b": ("running", "2026-11-25T07:40:00Z"),
                "bench-c": ("failed", "2026-11-25T07:00:00Z")}
    for bench, (state, at) in statuses.items():
        ram = tmp_path / bench
        shutil.copytree(DATA / "lab" / "results", ram)
        st = {"bench": bench, "state": state, "plan": "quick", "time": at,
              "drives": [{"drive": "nvme0n1", "serial": "DEMONVME0001", "run": "trim",
                          "stage": "torture", "state": "running", "percent": 45.7,
                          "iops": 1234.0, "eta_s": 75}],
              "last_event": "nvme0n1 trim torture started", "errors": []}
        up = StoreUploader(store, cfg, ram, bench, print)
        assert up.sync() > 0
        store.put(up.status_key, json.dumps(st).encode())
    return bucket / "lab1"


def test_states_rows_and_charts(tmp_path: Path) -> None:
    result = fleet.build(fleet.folder_entries(lab(tmp_path)), now=NOW)
    assert {b.name: b.state for b in result.benches.values()} == {
        "bench-a": "running", "bench-b": "silent", "bench-c": "failed"}
    rows = check_csv_text(fleet.fleet_csv(result), "fleet.csv", "fleet.csv")  # its schema
    assert len(rows) == 6  # 2 runs (one per drive) on each of 3 benches
    trim = next(r for r in rows if r["bench"] == "bench-a" and r["run"] == "trim")
    assert (trim["model"], trim["serial"], trim["firmware"], trim["run_id"]) == (
        "QEMU NVMe Ctrl", "DEMONVME0001", "7.2.22", "20261125T062239Z")
    assert trim["trim_verdict"] == "ineffective" and trim["steady_iops"] == "102"
    assert trim["erase_method"] == "nvme-format-user-data" and trim["state"] == "done"
    page = fleet.fleet_html(result)
    assert page.count('class="state silent"') >= 2  # the bench and its running drive
    assert "<svg" in page and "QEMU NVMe Ctrl" in page and "http" not in page.split(
        "<body>")[1].replace("http://www.w3.org/2000/svg", "")  # self-contained


def test_cli_writes_page_and_csv(tmp_path: Path, capsys: object,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = lab(tmp_path)
    assert main(["fleet", str(root), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "fleet.html").is_file()
    assert (tmp_path / "out" / "fleet.csv").read_text().startswith("bench,model,")
    assert check_csv(tmp_path / "out" / "fleet.csv")  # ssdbench/schemas/fleet.csv.schema.json
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["fleet", str(tmp_path / "out")]) == 2  # no bench there
    assert list(here.iterdir()) == []  # and nothing written (-o is here)


BAD_FILES = {
    # wrong types where objects are
    "run.json": json.dumps({"run": "trim", "state": "done", "drive": ["not", "an", "object"],
                            "analysis": [1, 2], "erase": "yes", "started": 5}),
    # NaN and Infinity (Python's json writes them, JSON has none)
    "drive.json": '{"drive": {"model": "X", "serial": NaN, "firmware": Infinity}}',
    # nested too deeply
    "status.json": "[" * 100_000 + "]" * 100_000,
}


def test_a_benchs_bad_files_are_left_out_with_a_note_and_the_page_is_built(
        tmp_path: Path, capsys: object) -> None:
    """#28 item 7: one wrong-typed, NaN/Infinity or deeply nested file from any bench was
    a traceback and no fleet page."""
    root = lab(tmp_path)
    run_json = sorted(root.glob("bench-a/*/*/*/run.json"))[0]
    drive_json = sorted(root.glob("bench-b/*/*/drive.json"))[0]
    run_json.write_text(BAD_FILES["run.json"])
    drive_json.write_text(BAD_FILES["drive.json"])
    (root / "bench-c" / "status.json").write_text(BAD_FILES["status.json"])
    # a bench whose status lists drives and errors of the wrong shapes, an infinite ETA
    (root / "bench-d").mkdir()
    (root / "bench-d" / "status.json").write_text(json.dumps({
        "state": "running", "time": "2026-11-25T07:59:55Z", "errors": 42,
        "drives": [{"drive": "sda", "eta_s": 1e400, "percent": "x"}, "sdb"],
        "store": ["x"]}).replace("Infinity", "1e999"))
    result = fleet.build(fleet.folder_entries(root), now=NOW)
    page = fleet.fleet_html(result)
    assert "Files left out" in page
    skipped = "\n".join(result.skipped)
    assert f"{drive_json.relative_to(root).as_posix()}: not JSON" in skipped
    assert "NaN is not a JSON number" in skipped
    assert "bench-c/status.json: nested too deeply" in skipped
    # the wrong-typed run.json is used for what it holds: its row stays
    bad_row = [r for r in result.rows if r["bench"] == "bench-a" and r["run"] == "trim"
               and r["started"] == "5"]
    assert len(bad_row) == 1 and bad_row[0]["state"] == "done", result.rows
    assert {"bench-a", "bench-b", "bench-c", "bench-d"} <= set(result.benches)
    assert result.benches["bench-c"].state == "unknown"
    assert main(["fleet", str(root), "-o", str(tmp_path / "out")]) == 0
    assert "Files left out" in (tmp_path / "out" / "fleet.html").read_text()
    assert "left out" in capsys.readouterr().err  # type: ignore[attr-defined]


def test_an_object_the_store_cannot_give_is_left_out_with_the_stores_reason(
        tmp_path: Path) -> None:
    root = lab(tmp_path)

    class Flaky(FolderStore):
        def get(self, key: str) -> bytes:
            if key.endswith("bench-b/status.json"):
                raise OSError("connection reset by the store")
            return super().get(key)

    result = fleet.build(fleet.store_entries(Flaky(root.parent), "lab1"), now=NOW)
    assert any(s.startswith("bench-b/status.json: cannot be read: the store: connection reset")
               for s in result.skipped), result.skipped
    assert len(result.rows) > 0 and "bench-b" in result.benches


def test_each_benchs_erase_records_are_checked_as_a_chain(tmp_path: Path) -> None:
    """Erase records sent by the real uploader: a bench whose chain is whole says so; one
    whose record was deleted from the store, or changed there, is named in red (#28)."""
    from ssdbench.record.chain import link_seal_write
    from ssdbench.record.write import seal
    from tests.unit.record.test_record import make_key, record

    bucket = tmp_path / "bucket"
    store = FolderStore(bucket)
    cfg = parse_store({"kind": "http", "endpoint": "http://127.0.0.1:1", "prefix": "lab1"},
                      Path("."))
    key = make_key(tmp_path)
    for bench in ("erase-1", "erase-2", "erase-3"):
        ram = tmp_path / bench
        for i in range(3):
            path = ram / f"20261125T07{i}000Z_QEMU_NVMe_Ctrl_SER{i}" / "erase" / "erase-record.json"
            path.parent.mkdir(parents=True)
            (path.parent.parent / "drive.json").write_text(json.dumps(
                {"drive": {"serial": f"SER{i}", "model": "QEMU NVMe Ctrl"}}))
            link_seal_write(ram, path, record(), lambda r: seal(r, str(key)))
        up = StoreUploader(store, cfg, ram, bench, print)
        assert up.sync() > 0
    assert (bucket / "lab1" / "erase-1" / "_bench" / "record-chain.json").is_file()
    second = sorted((bucket / "lab1" / "erase-2").rglob("erase-record.json"))[1]
    second.unlink()
    third = sorted((bucket / "lab1" / "erase-3").rglob("erase-record.json"))[2]
    third.write_bytes(third.read_bytes().replace(b"A. Tester", b"X. Tester"))
    built = fleet.build(fleet.folder_entries(bucket / "lab1"), now=NOW)
    assert (built.benches["erase-1"].records_ok, built.benches["erase-1"].records) == (
        True, "3 records, chain intact")
    assert not built.benches["erase-2"].records_ok
    assert "record(s) 2 of 3 missing" in built.benches["erase-2"].records
    assert not built.benches["erase-3"].records_ok
    assert "the signature does not match the content" in built.benches["erase-3"].records
    page = fleet.fleet_html(built)
    assert page.count("chain broken") == 2 and "3 records, chain intact" in page


def test_models_on_a_log_scale_a_model_less_drive_named_and_iops_printed_alike() -> None:
    """#32 item 4, as a lab saw it: a drive without a model string at 35,526 IOPS beside
    real drives at 103 and 111 drew as "?" on a linear scale that hid the others; steady
    IOPS printed "54645 ± 14091" in one row and "101 ± 9" in the next."""
    import re

    def row(model: str, serial: str, mean: str, sd: str) -> dict[str, str]:
        return dict.fromkeys(fleet.CSV_COLUMNS, "") | {
            "bench": "b1", "model": model, "serial": serial, "run": "consistency-default",
            "state": "done", "steady_iops": mean, "steady_iops_stddev": sd,
            "started": "2026-11-27T10:00:00Z"}

    rows = [row("", "USB0001", "35526", "14091"), row("WDC WDS100T", "W1", "103", "9"),
            row("WDC WDS100T", "W2", "111", "8"), row("Crucial MX500", "C1", "54645", "14091")]
    svg = fleet.model_chart(rows, "consistency-default")
    assert "no model string: serial USB0001, bench b1" in svg and ">?<" not in svg
    widths = [float(w) for w in re.findall(r'<rect x="\d+" y="[\d.]+" width="([\d.]+)"', svg)]
    assert min(widths) > 0.2 * max(widths), widths  # 107 IOPS is a bar you can see
    assert "log scale" in svg
    page = fleet.fleet_html(fleet.Fleet({}, rows, "2026-11-27T10:00:00Z"))
    assert "54,645 ± 14,091" in page and "103 ± 9" in page
    assert "none reported" in page
    # nothing keeps a long cell on one line: the page wraps to its window; words break
    # only when one alone is too wide, and a bench's free text (errors, URLs) anywhere
    assert re.search(r"th,td\{[^}]*white-space:nowrap", page) is None
    assert re.search(r"th,td\{[^}]*overflow-wrap:break-word", page)
    assert "div.long{max-width:28em;overflow-wrap:anywhere}" in page


def test_a_drive_far_from_its_models_other_runs_is_marked() -> None:
    """#32 item 4: the fleet flags a drive far from its model's fleet baseline: the median
    steady IOPS of the model's other finished runs of the same name (three at least)."""
    def row(serial: str, mean: str, model: str = "Crucial MX500") -> dict[str, str]:
        return dict.fromkeys(fleet.CSV_COLUMNS, "") | {
            "bench": "b1", "model": model, "serial": serial, "run": "consistency-default",
            "state": "done", "steady_iops": mean, "started": "2026-11-27T10:00:00Z"}

    rows = [row("A", "5000"), row("B", "5200"), row("C", "4900"), row("D", "2100"),
            row("E", "5100"), row("X", "900", "Other SSD"), row("Y", "100", "Other SSD")]
    marks = fleet.off_baseline(rows)
    assert marks == {id(rows[3]): "58% below its model (median 5,050 of 4 others)"}
    page = fleet.fleet_html(fleet.Fleet({}, rows, "2026-11-27T10:00:00Z"))
    assert "58% below its model (median 5,050 of 4 others)" in page
    assert "1 run(s) far from their model's other runs" in page


def test_the_capacity_check_is_on_the_fleet_page_and_in_fleet_csv() -> None:
    """#32 item 4: the authenticity result on the fleet page: a fake with what it holds."""
    blank = dict.fromkeys(fleet.CSV_COLUMNS, "")
    rows = [{**blank, "bench": "b1", "model": "", "serial": "F1", "run": "authenticity",
             "state": "failed", "started": "2026-11-27T10:00:00Z", "steady_iops": "",
             "steady_iops_stddev": "", "authenticity": "wraps",
             "real_capacity_bytes": "67108864"},
            {**blank, "bench": "b1", "model": "M", "serial": "G1", "run": "authenticity",
             "state": "done", "started": "2026-11-27T09:00:00Z", "steady_iops": "",
             "steady_iops_stddev": "", "authenticity": "genuine",
             "real_capacity_bytes": "500107862016"}]
    page = fleet.fleet_html(fleet.Fleet({}, rows, "2026-11-27T10:00:00Z"))
    assert "capacity check" in page and "<b>FAKE: wraps, holds 67.1 MB</b>" in page
    assert "<td>genuine</td>" in page
    assert {"authenticity", "real_capacity_bytes"} <= set(fleet.CSV_COLUMNS)


def test_the_host_of_each_run_and_bench_is_on_the_page_not_in_the_csv() -> None:
    """#45: the machine a run was made in (run.json host) and the one a bench runs on
    (status.json host); the firmware's strings escaped; fleet.csv keeps its columns."""
    host = {"machine": {"sys_vendor": "<b>Evil</b>", "product_name": "X\u202e1"},
            "notes": {}, "dmi": "read",
            "controller": {"bus": "pci", "pci_address": "0000:00:05.0",
                           "pci_id": "1b36:0010", "driver": "nvme"}}
    run = {"run": "erase", "state": "done", "started": "2026-11-28T10:00:00Z",
           "drive": {"serial": "S1", "model": "M"}, "host": host}
    st = {"bench": "b1", "state": "running", "time": "2026-11-28T10:00:00Z", "host": host}
    entries = {"b1/status.json": lambda: json.dumps(st).encode(),
               "b1/S1/r1/erase/run.json": lambda: json.dumps(run).encode()}
    f = fleet.build(entries, now=datetime(2026, 11, 28, 10, 0, 5, tzinfo=UTC))
    page = fleet.fleet_html(f)
    assert page.count("&lt;b&gt;Evil&lt;/b&gt; X?1") == 2 and "<b>Evil</b>" not in page
    assert "title='PCI 0000:00:05.0 1b36:0010, driver nvme'" in page
    assert fleet.fleet_csv(f).splitlines()[0] == ",".join(fleet.CSV_COLUMNS)
