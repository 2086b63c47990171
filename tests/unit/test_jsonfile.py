"""Every JSON file ssdbench reads back (run.json, drive.json, the journals) nested too
deeply, with a 5,000-digit number, or not UTF-8: a clear error or the reader's documented
fallback, never a RecursionError out of the engine, the report, the uploader or the kiosk
(#28 item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench import jsonfile
from ssdbench.erase.journal import JsonPasswordJournal
from ssdbench.lab.config import parse_store
from ssdbench.lab.uploader import StoreUploader
from ssdbench.plan.engine import _load_run_json
from ssdbench.plan.journal import Journal, JournalError
from ssdbench.report.load import ResultsFileError, read_json
from ssdbench.stages.discard import zero_promise
from tests.unit.lab.test_fleet import FolderStore

DEEP = "[" * 200_000 + "]" * 200_000
BAD: dict[str, str | bytes] = {"deep": DEEP, "digits": '{"a": ' + "9" * 5000 + "}", "latin1": b'{"a": "\xe9"}'}


def put(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("kind", BAD)
def test_every_reader_of_a_results_file_says_so_or_falls_back(tmp_path: Path,
                                                               kind: str) -> None:
    text = BAD[kind]
    with pytest.raises(ValueError):
        jsonfile.read(put(tmp_path / "x.json", text))
    with pytest.raises(ResultsFileError, match=r"run\.json: cannot read"):
        read_json(put(tmp_path / "r" / "run.json", text))
    assert _load_run_json(tmp_path / "r") == {}
    with pytest.raises(JournalError, match="unreadable journal"):
        Journal.open(put(tmp_path / "j" / "state.json", text).parent)
    with pytest.raises(ValueError, match="not valid JSON"):
        JsonPasswordJournal(put(tmp_path / "e" / "erase-journal.json", text))._load()
    assert zero_promise(put(tmp_path / "d" / "drive.json", text)) is None
    ram = tmp_path / "ram"
    put(ram / "20261127T100000Z_M_S1" / "drive.json", text)
    cfg = parse_store({"kind": "http", "endpoint": "http://127.0.0.1:1"}, Path("."))
    up = StoreUploader(FolderStore(tmp_path / "bucket"), cfg, ram, "b1", print)
    assert up.key_for("20261127T100000Z_M_S1/run/run.json") is None  # sent once readable


def test_plain_json_still_reads() -> None:
    assert jsonfile.loads('{"a": [1, 2.5, NaN]}')["a"][:2] == [1, 2.5]
