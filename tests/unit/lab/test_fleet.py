"""The fleet view from a folder laid out like the store: real results sent by the uploader
(into a folder), statuses of benches running, done, failed and silent."""

from __future__ import annotations

import csv
import io
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from ssdbench.cli import main
from ssdbench.lab import fleet
from ssdbench.lab.config import parse_store
from ssdbench.lab.uploader import StoreUploader
from tests.conftest import DATA

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
    rows = list(csv.DictReader(io.StringIO(fleet.fleet_csv(result))))
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


def test_cli_writes_page_and_csv(tmp_path: Path, capsys: object) -> None:
    root = lab(tmp_path)
    assert main(["fleet", str(root), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "fleet.html").is_file()
    assert (tmp_path / "out" / "fleet.csv").read_text().startswith("bench,model,")
    assert main(["fleet", str(tmp_path / "out")]) == 2  # no bench there
