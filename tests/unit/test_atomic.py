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
