"""The speed plan with real fio on a loop device (root): read-only by default (not one byte
written: the backing file's checksum and the kernel's write counters of the loop device),
no consent needed; its writes only with speed_writes and --destroy."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import loop_device
from tests.schema_check import check_json

MIB = 2**20
SHORT = ["--set", "speed_seconds=2", "--set", "speed_ramp_seconds=1", "--quiet", "--no-svg"]
LABELS = ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T16", "RND4K Q1T1"]


@pytest.fixture
def loop() -> Iterator[tuple[str, Path]]:
    """A 48 MiB loop device whose every byte is 0xA5 (a stray write shows)."""
    with loop_device(48, fill=0xA5, prefix="ssdbench-speed-") as found:
        yield found


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(4 * MIB):
            digest.update(chunk)
    return digest.hexdigest()


def _writes(dev: str) -> tuple[int, int]:
    """The kernel's writes completed and sectors written of the device (/sys/block/X/stat
    fields 5 and 7)."""
    fields = Path(f"/sys/block/{os.path.basename(dev)}/stat").read_text().split()
    return int(fields[4]), int(fields[6])


def _run_dir(results: Path) -> Path:
    found = sorted(results.glob("*/speed"))
    assert len(found) == 1, found
    return found[0]


def test_speed_reads_the_four_corners_and_writes_not_one_byte(
        loop: tuple[str, Path], tmp_path: Path) -> None:
    dev, image = loop
    before_sum, before_writes = _sha256(image), _writes(dev)
    config = tmp_path / "lab.toml"
    # the lab's class table (a pattern that would match any model)
    config.write_text('[speed.class."^$|.*"]\nseq1m_q8t1_read = 1e9\nseq1m_q1t1_read = 1e9\n'
                      "rnd4k_q32t16_read = 1e9\nrnd4k_q1t1_read = 1e9\n")
    results = tmp_path / "results"
    code = main(["run", dev, "--plan", "speed", "--results", str(results),
                 "--config", str(config), *SHORT])  # no --destroy: read-only
    assert code == ExitCode.OK
    assert _writes(dev) == before_writes
    assert _sha256(image) == before_sum
    run_dir = _run_dir(results)
    record = check_json(run_dir / "run.json", "run.json")
    assert record["state"] == "done"
    corners = record["speed"]["corners"]
    assert [c["label"] for c in corners] == LABELS
    assert all(c["direction"] == "read" for c in corners)
    assert all(c["mb_s"] > 0 and c["iops"] > 0 and c["mean_latency_us"] > 0 for c in corners)
    # a loop device has no temperature: the cells are empty, not made up
    assert all(c["temperature_start_c"] is None for c in corners)
    # a loop device has no model: no class of the lab's table is its class
    assert record["params"]["speed_classes"] == {"^$|.*": {
        "seq1m_q8t1_read": 1e9, "seq1m_q1t1_read": 1e9, "rnd4k_q32t16_read": 1e9,
        "rnd4k_q1t1_read": 1e9}}
    assert all(c["verdict"] == "no reference" for c in corners)
    assert record["speed"]["verdict"]["text"] == "no reference for this model"
    for c in corners:
        job = (run_dir / c["job"]).read_text()
        assert "--readonly" in job and "rw=write" not in job and "rw=randwrite" not in job
    with (run_dir / "speed.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["corner"] for r in rows] == LABELS
    assert [float(r["mb_s"]) for r in rows] == [c["mb_s"] for c in corners]
    log = (run_dir.parent / "log.txt").read_text()
    assert log.count("--readonly") >= 4


def test_speed_writes_need_consent(loop: tuple[str, Path], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    dev, image = loop
    before_sum, before_writes = _sha256(image), _writes(dev)
    results = tmp_path / "results"
    code = main(["run", dev, "--plan", "speed", "--set", "speed_writes=true",
                 "--results", str(results), *SHORT])
    assert code == ExitCode.REFUSED
    assert "--destroy" in capsys.readouterr().err
    assert not results.exists()
    assert (_sha256(image), _writes(dev)) == (before_sum, before_writes)
    code = main(["run", dev, "--plan", "speed", "--set", "speed_writes=true",
                 "--destroy", os.path.basename(dev), "--results", str(results), *SHORT])
    assert code == ExitCode.OK
    corners = json.loads((_run_dir(results) / "run.json").read_text())["speed"]["corners"]
    assert [(c["label"], c["direction"]) for c in corners] == [
        *((label, "read") for label in LABELS), *((label, "write") for label in LABELS)]
    assert _writes(dev)[1] > before_writes[1]
