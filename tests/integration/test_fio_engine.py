"""The fio runner on real fio and loop devices on tmpfs (root), plus fake fio for hangs."""

from __future__ import annotations

import csv
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ssdbench.fio import jobs
from ssdbench.fio.logs import write_run_csvs
from ssdbench.fio.runner import LiveStatus, run_fio
from ssdbench.system import SystemRunner
from tests.conftest import loop_device

MIB = 2**20


@pytest.fixture
def loop() -> Iterator[tuple[str, Path]]:
    """A 32 MiB loop device backed by a zero-filled file on /dev/shm."""
    with loop_device(32, prefix="ssdbench-fio-") as dev_image:
        yield dev_image


def target(dev: str) -> jobs.JobTarget:
    return jobs.JobTarget(dev, 32 * MIB)


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_fill_covers_every_byte_of_the_span(loop: tuple[str, Path], tmp_path: Path) -> None:
    dev, image = loop
    statuses: list[LiveStatus] = []
    outcome = run_fio(SystemRunner(), tmp_path, jobs.fill_job(target(dev)),
                      on_status=statuses.append)
    assert outcome.state == "done", outcome.reason
    assert outcome.report is not None and outcome.report.total("write")[0] == 32 * MIB
    with open(image, "rb") as f:
        chunks = [f.read(MIB) for _ in range(32)]
    zero = bytes(MIB)
    assert [i for i, c in enumerate(chunks) if c == zero] == []  # the last MiB included
    assert (tmp_path / "jobs" / "fill.fio").exists() and (tmp_path / "fio" / "fill.json").exists()
    write_run_csvs(tmp_path)
    table = csv_rows(tmp_path / "fill.csv")
    assert float(table[-1]["gib_written"]) == pytest.approx(32 / 1024, rel=1e-3)


def test_torture_of_n_seconds_gives_n_rows(loop: tuple[str, Path], tmp_path: Path) -> None:
    dev, _ = loop
    statuses: list[LiveStatus] = []
    job = jobs.torture_job(target(dev), seconds=3)
    outcome = run_fio(SystemRunner(), tmp_path, job, on_status=statuses.append)
    assert outcome.state == "done", outcome.reason
    assert statuses and statuses[-1].fraction is not None
    assert any(s.iops for s in statuses)  # per-second IOPS derived from cumulative dumps
    write_run_csvs(tmp_path)
    table = csv_rows(tmp_path / "iops.csv")
    assert [r["time_s"] for r in table] == ["0", "1", "2"]
    # the last second is empty when fio did not log it (never invented: docs/engine.md)
    assert all(float(r["iops"]) > 0 for r in table[:2])
    assert table[2]["iops"] == "" or float(table[2]["iops"]) > 0


def test_cancelled_torture_keeps_its_logs(loop: tuple[str, Path], tmp_path: Path) -> None:
    dev, _ = loop
    cancel = threading.Event()

    def on_status(status: LiveStatus) -> None:
        if status.elapsed_s >= 2:
            cancel.set()

    job = jobs.torture_job(target(dev), seconds=60)
    outcome = run_fio(SystemRunner(), tmp_path, job, on_status=on_status, cancel=cancel)
    assert outcome.state == "cancelled"
    assert outcome.duration_s < 30
    assert (tmp_path / "fio" / "torture_iops.1.log").stat().st_size > 0
    assert (tmp_path / "fio" / "torture.json").exists()
    write_run_csvs(tmp_path)
    assert len(csv_rows(tmp_path / "iops.csv")) >= 2


class _Recording:
    """A SystemRunner that remembers the processes it streamed (to kill one in a test)."""

    def __init__(self) -> None:
        self.inner = SystemRunner()
        self.procs: list[Any] = []

    def run(self, argv: Sequence[str], **kw: Any) -> Any:
        return self.inner.run(argv, **kw)

    def stream(self, argv: Sequence[str], **kw: Any) -> Any:
        proc = self.inner.stream(argv, **kw)
        self.procs.append(proc)
        return proc

    def add_sink(self, sink: Any) -> None:
        self.inner.add_sink(sink)

    def remove_sink(self, sink: Any) -> None:
        self.inner.remove_sink(sink)


def test_fio_killed_by_a_signal_fails_with_the_reason(
    loop: tuple[str, Path], tmp_path: Path
) -> None:
    dev, _ = loop
    runner = _Recording()

    def on_status(_status: LiveStatus) -> None:
        os.kill(runner.procs[0].pid, signal.SIGKILL)  # the fio this test started

    outcome = run_fio(runner, tmp_path, jobs.torture_job(target(dev), seconds=60),
                      on_status=on_status)
    assert outcome.state == "failed"
    assert outcome.reason is not None and "SIGKILL" in outcome.reason
    assert not (tmp_path / "fio" / "torture.json").exists()


@pytest.fixture
def fake_fio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder put first on the children's PATH; tests drop a `fio` script in it."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    monkeypatch.setenv("SSDBENCH_EXTRA_PATH", str(folder))
    return folder


def write_script(folder: Path, body: str) -> None:
    path = folder / "fio"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_hung_fio_is_detected_and_stopped(fake_fio: Path, tmp_path: Path) -> None:
    write_script(fake_fio, "exec sleep 600\n")
    run_dir = tmp_path / "run"
    outcome = run_fio(SystemRunner(), run_dir, jobs.torture_job(target("/dev/null"), seconds=5),
                      status_timeout_s=1.5)
    assert outcome.state == "failed"
    assert outcome.reason is not None and "hung" in outcome.reason


def test_error_in_job_json_is_a_failure_even_with_exit_0(
    fake_fio: Path, tmp_path: Path
) -> None:
    final = '{\n"fio version" : "fio-3.33",\n"jobs" : [{"jobname": "torture", "error": 5}]\n}\n'
    write_script(fake_fio, f"cat <<'END'\n{final}END\nexit 0\n")
    outcome = run_fio(SystemRunner(), tmp_path, jobs.torture_job(target("/dev/null"), seconds=5))
    assert outcome.state == "failed"
    assert outcome.reason is not None and "error 5" in outcome.reason
    assert "Input/output error" in outcome.reason


def test_nonzero_exit_is_a_failure_with_fios_message(fake_fio: Path, tmp_path: Path) -> None:
    write_script(fake_fio, "echo 'fio: failed to open /dev/x' >&2\nexit 1\n")
    outcome = run_fio(SystemRunner(), tmp_path, jobs.fill_job(target("/dev/null")))
    assert outcome.state == "failed"
    assert outcome.reason is not None
    assert "exited with code 1" in outcome.reason and "failed to open" in outcome.reason


class _SysfsSays:
    """The live filesystem, except that /sys/class/block/<name> exists when ``present``."""

    def __init__(self, present: bool) -> None:
        from ssdbench.system import LiveFS

        self.live, self.present = LiveFS(), present

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live, name)

    def exists(self, path: str) -> bool:
        if path.startswith("/sys/class/block/"):
            return self.present
        return bool(self.live.exists(path))


@pytest.mark.parametrize("present", [False, True])
def test_a_drive_gone_from_sysfs_is_named_in_the_failure(tmp_path: Path, present: bool) -> None:
    """fio on a device node that is gone: the failure says the drive disappeared, rather than
    only fio's own words (for a pulled NVMe drive: "you need to specify size=")."""
    from ssdbench.results.layout import RunRecord
    from ssdbench.stages.base import RunContext, StageFailed, Target
    from ssdbench.stages.measure import torture_stage
    from ssdbench.stages.params import RunParams
    from ssdbench.system import Host

    params = RunParams(torture_seconds=2)
    record = RunRecord.create(tmp_path, run="t", kind="consistency", drive={}, target={},
                              params=params.as_record(), tools={})
    ctx = RunContext(host=Host(SystemRunner(), _SysfsSays(present)), run_dir=tmp_path,
                     drive_name="ssdbench-gone0", run_name="t",
                     target=Target("/dev/ssdbench-gone0", "block", "ssdbench-gone0", 32 * MIB),
                     params=params, record=record)
    with pytest.raises(StageFailed) as info:
        torture_stage().execute(ctx)
    message = str(info.value)
    assert message.startswith("the drive disappeared (/dev/ssdbench-gone0 is gone); fio ") \
        is (not present), message
    assert "fio" in message


def test_probes_and_fills_write_fresh_data_every_pass(loop: tuple[str, Path],
                                                      tmp_path: Path) -> None:
    """Two probes over the same LBAs, and two fills, write different bytes (issue #20 item 4).

    With fio's default randrepeat=1 every job seeds its buffer generator from the job number,
    so the clean / after-torture / after-TRIM probes wrote byte-identical data that a
    deduplicating controller could drop."""
    dev, image = loop

    def probe_bytes(phase: str) -> bytes:
        job = jobs.probe_job(target(dev), phase=phase, probe_bytes=4 * MIB)
        assert "randrepeat=0" in job.text
        outcome = run_fio(SystemRunner(), tmp_path / phase, job)
        assert outcome.state == "done", outcome.reason
        with open(image, "rb") as f:
            return f.read(4 * MIB)

    first, second = probe_bytes("clean"), probe_bytes("after_torture")
    assert first != bytes(4 * MIB) and second != bytes(4 * MIB)
    same = sum(first[i:i + 4096] == second[i:i + 4096] for i in range(0, 4 * MIB, 4096))
    assert same == 0, f"{same} of 1024 4-KiB blocks identical between two probes"

    def fill_head() -> bytes:
        outcome = run_fio(SystemRunner(), tmp_path / f"fill{len(heads)}", jobs.fill_job(target(dev)))
        assert outcome.state == "done", outcome.reason
        with open(image, "rb") as f:
            return f.read(MIB)

    heads: list[bytes] = []
    heads.append(fill_head())
    heads.append(fill_head())
    assert heads[0] != heads[1]
