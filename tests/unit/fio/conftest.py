from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ssdbench.fio.status import JsonStreamSplitter

FIO_DATA = Path(__file__).resolve().parents[2] / "data" / "fio"


def make_run_dir(tmp_path: Path, case: str, stage: str) -> Path:
    """A run folder as the runner leaves it: fio/ logs plus fio/<stage>.json (final object)."""
    src = FIO_DATA / case
    run_dir = tmp_path / case
    shutil.copytree(src / "fio", run_dir / "fio")
    splitter = JsonStreamSplitter()
    splitter.feed((src / "stdout.txt").read_bytes())
    splitter.finish()
    (run_dir / "fio" / f"{stage}.json").write_text(splitter.texts[-1])
    return run_dir


@pytest.fixture
def fio_data() -> Path:
    return FIO_DATA
