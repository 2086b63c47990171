"""A TRIM run with real fio on a loop device of a capacity that is not a power of two (root):
each probe writes its own window of the span (docs/plans.md "TRIM probes") and the idle
between the TRIM pass and the after-TRIM probe is honoured; a probe whose verdict cannot
answer goes on in chunks of its own, up to the cap, and says why it stopped."""

from __future__ import annotations

import csv
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import ssdbench.analysis.trim as trim_analysis
from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import loop_device

MIB = 2**20
SPAN = 37 * MIB  # a third of it (12.33 MiB) is less than the 16 MiB asked for: shrink rule
IDLE_S = 3


def _log_time(log: str, pattern: str) -> float:
    """Start time (epoch s) of the last log.txt command line matching ``pattern``."""
    for line in reversed(log.splitlines()):
        if re.search(pattern, line):
            stamp = re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line)
            assert stamp, line
            return datetime.strptime(stamp.group(0), "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=UTC).timestamp()
    raise AssertionError(f"no log line matches {pattern!r}")


def test_probes_land_in_three_windows_and_the_idle_is_honoured(tmp_path: Path) -> None:
    results = tmp_path / "results"
    with loop_device(37, prefix="ssdbench-probes-") as (dev, image):
        name = os.path.basename(dev)
        code = main(["run", dev, "--destroy", name, "--run", "trim", "--erase-fallback",
                     "discard", "--quiet", "--results", str(results),
                     "--set", "trim_torture_seconds=2", "--set", "probe_gib=0.015625",
                     "--set", f"trim_idle_seconds={IDLE_S}"])
        assert code == ExitCode.OK
        content = image.read_bytes()
    [drive_dir] = [p for p in results.iterdir() if p.is_dir()]
    run_dir = drive_dir / "trim"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done", record.get("error")
    assert record["params"]["trim_idle_seconds"] == IDLE_S
    assert record["params"]["probe_preset"] == "as-ssd"

    # the documented rule: three windows of min(probe, span / 3), in whole 4 KiB blocks
    size = SPAN // 3 - (SPAN // 3) % 4096
    offsets = {"clean": 0, "after_torture": size, "after_trim": 2 * size}
    probes = record["probes"]
    assert probes["offsets"] == offsets and probes["probe_bytes"] == size
    assert probes["shrunk"] is True and probes["requested_bytes"] == 16 * MIB
    assert (probes["block_bytes"], probes["iodepth"]) == (size, 1)
    # a shrunk probe has no room to go on; a probe of milliseconds has no noise margin
    assert probes["extensions"] == 0 and probes["max_multiple"] == 4
    for phase in offsets:
        ext = record["probe_extension"][phase]
        assert (ext["chunks"], ext["bytes"], ext["stopped"]) == (1, size, "no-margin"), ext

    with open(run_dir / "probes.csv", newline="") as f:
        rows = {r["phase"]: r for r in csv.DictReader(f)}
    for phase, offset in offsets.items():
        assert int(rows[phase]["offset_bytes"]) == offset
        assert int(rows[phase]["bytes"]) == size
        fio = json.loads((run_dir / "fio" / f"probe-{phase}.json").read_text())
        [job] = fio["jobs"]
        assert int(job["job options"]["offset"]) == offset  # what fio itself was told
        assert int(job["write"]["io_bytes"]) == size
        assert "iodepth=1\n" in (run_dir / "jobs" / f"probe-{phase}.fio").read_text()

    # On the disk: the TRIM pass zeroed the span (loop on tmpfs punches holes), then the
    # after-TRIM probe wrote exactly its window and nothing else.
    zero = bytes(4096)
    written = [i * 4096 for i in range(SPAN // 4096) if content[i * 4096:(i + 1) * 4096] != zero]
    assert written[0] == offsets["after_trim"] and written[-1] == offsets["after_trim"] + size - 4096
    assert len(written) == size // 4096

    trim = record["trim"]
    assert trim["idle_s"] == IDLE_S and trim["idle_measured_s"] >= IDLE_S
    # independent of ssdbench's own clock: log.txt's starts of the discard and of the
    # after-TRIM probe (whole seconds: floor(b) - floor(a) >= 3 when b - a >= 3) are at
    # least the idle apart; without the idle they are 0-1 s apart
    log = (drive_dir / "log.txt").read_text()
    gap = _log_time(log, r"jobs/probe-after_trim\.fio") - _log_time(log, r"blkdiscard")
    assert gap >= IDLE_S


CHUNK = MIB  # probe_gib = 1/1024


def test_a_probe_goes_on_in_chunks_until_it_answers_or_reaches_the_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The verdict is the analysis' (unit-tested with synthetic series); here its answers are
    # scripted so the stage's side is checked with real fio: the clean probe answers at
    # once, the after-torture probe after one extension, the after-TRIM one never (the cap)
    asked: list[str] = []

    def scripted(phase: str, means: Any, series: Any, **_: Any) -> tuple[bool, str]:
        done = {"clean": 0, "after_torture": 1, "after_trim": 99}[phase]
        assert means[phase] > 0  # fio's own mean of what the probe wrote so far
        asked.append(phase)
        extensions = asked.count(phase) - 1
        if extensions < done:
            return True, "the verdict's interval straddles a line (scripted)"
        return False, "answered: scripted"

    monkeypatch.setattr(trim_analysis, "extend_probe", scripted)
    results = tmp_path / "results"
    with loop_device(37, prefix="ssdbench-probe-ext-") as (dev, image):
        code = main(["run", dev, "--destroy", os.path.basename(dev), "--run", "trim",
                     "--erase-fallback", "discard", "--quiet", "--results", str(results),
                     "--set", "trim_torture_seconds=1", "--set", f"probe_gib={CHUNK / 2**30}",
                     "--set", "trim_idle_seconds=0", "--set", "probe_max_multiple=3"])
        assert code == ExitCode.OK
        content = image.read_bytes()
    [drive_dir] = [p for p in results.iterdir() if p.is_dir()]
    run_dir = drive_dir / "trim"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done", record.get("error")
    probes = record["probes"]
    assert (probes["probe_bytes"], probes["extensions"], probes["max_multiple"]) == (CHUNK, 2, 3)

    ext = record["probe_extension"]
    assert {p: (e["chunks"], e["bytes"], e["stopped"]) for p, e in ext.items()} == {
        "clean": (1, CHUNK, "answered"), "after_torture": (2, 2 * CHUNK, "answered"),
        "after_trim": (3, 3 * CHUNK, "cap")}
    assert ext["after_trim"]["cap_bytes"] == 3 * CHUNK

    # each extension is its own fio job, in a window past the three probes' windows
    window = {("after_torture", 1): 3 + 1 * 2, ("after_trim", 1): 3 + 2 * 2,
              ("after_trim", 2): 3 + 2 * 2 + 1}
    for (phase, k), w in window.items():
        fio = json.loads((run_dir / "fio" / f"probe-{phase}-ext{k}.json").read_text())
        [job] = fio["jobs"]
        assert int(job["job options"]["offset"]) == w * CHUNK
        assert int(job["write"]["io_bytes"]) == CHUNK
    assert not (run_dir / "fio" / "probe-clean-ext1.json").exists()
    assert not (run_dir / "fio" / "probe-after_torture-ext2.json").exists()

    # probes.csv: each probe's bytes and mean over all its chunks; run.json keeps one stage
    # per probe, its job the probe's own
    with open(run_dir / "probes.csv", newline="") as f:
        rows = {r["phase"]: r for r in csv.DictReader(f)}
    assert {p: int(r["bytes"]) for p, r in rows.items()} == {
        "clean": CHUNK, "after_torture": 2 * CHUNK, "after_trim": 3 * CHUNK}
    assert int(rows["after_trim"]["offset_bytes"]) == 2 * CHUNK
    names = [s["name"] for s in record["stages"]]
    assert not any("-ext" in n for n in names), names
    [stage] = [s for s in record["stages"] if s["name"] == "probe-after_trim"]
    assert stage["job"] == "jobs/probe-after_trim.fio" and stage["state"] == "done"

    # on the disk, after the TRIM zeroed the span: the after-TRIM probe's window and its two
    # extensions' windows, nothing else
    zero = bytes(4096)
    written = {i * 4096 // CHUNK for i in range(len(content) // 4096)
               if content[i * 4096:(i + 1) * 4096] != zero}
    assert written == {2, 7, 8}

    # the report says how much each probe wrote and why it stopped
    html = (drive_dir / "report.html").read_text()
    assert "3.00 MiB of 1.00 MiB planned (3 chunks)" in html and "the cap" in html
