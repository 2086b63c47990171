from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssdbench.results import atomic


def test_write_json_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "a" / "run.json"
    atomic.write_json(target, {"x": 1})
    atomic.write_json(target, {"x": 2})
    assert json.loads(target.read_text()) == {"x": 2}
    assert [p.name for p in target.parent.iterdir()] == ["run.json"]


def test_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "summary.csv"
    atomic.write_text(target, "old\n")

    class Boom:
        def __str__(self) -> str:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic.write_json(target, {"bad": Boom()})
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.csv"]


def test_threads_writing_one_file_at_once_all_succeed(tmp_path: Path) -> None:
    """The station's erase threads announce into kiosk.txt together: with one temporary name
    per process, one thread's rename took the other's file away (FileNotFoundError killed
    the erase thread and the session never ended)."""
    import threading

    target = tmp_path / "kiosk.txt"
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(n: int) -> None:
        start.wait()
        try:
            for i in range(60):
                atomic.write_text(target, f"writer {n} line {i}\n")
        except BaseException as exc:  # every failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_text().startswith("writer ")
    assert [p.name for p in tmp_path.iterdir()] == ["kiosk.txt"]  # no temporary file left
