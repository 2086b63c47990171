"""TRIM probes (docs/plans.md "TRIM probes"): presets, disjoint windows, the shrink rule for
small spans, the job files, and the idle between the TRIM pass and the after-TRIM probe."""

from __future__ import annotations

import json
import threading
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.fio import jobs
from ssdbench.progress import Progress
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, StageCancelled, StageFailed, Target
from ssdbench.stages.discard import SettleStage, TrimStage
from ssdbench.stages.params import RunParams
from ssdbench.stages.plans import trim_stages
from ssdbench.stages.probe import WINDOWS, fio_size, probe_layout, probe_stage
from ssdbench.system import Host

KIB, MIB, GIB = 1024, 1024**2, 1024**3
# real capacities: a 240 GB SATA SSD (468,862,128 sectors), a 500 GB NVMe (976,773,168)
SATA_240 = 468_862_128 * 512
NVME_500 = 976_773_168 * 512


def test_as_ssd_preset_is_the_default_and_is_aligned_to_16_mib_blocks() -> None:
    layout = probe_layout(SATA_240, RunParams())
    assert (layout.preset, layout.block_bytes, layout.iodepth) == ("as-ssd", 16 * MIB, 1)
    assert layout.probe_bytes == layout.requested_bytes == GIB and not layout.shrunk
    offsets = layout.to_dict()["offsets"]
    assert offsets == {"clean": 0, "after_torture": GIB, "after_trim": 2 * GIB}


def test_fill_preset_uses_the_fill_block_and_queue_depth() -> None:
    params = RunParams(probe_preset="fill", probe_gib=8.0, iodepth=32, block_size_fill="128k")
    layout = probe_layout(NVME_500, params)
    assert (layout.block_bytes, layout.iodepth, layout.probe_bytes) == (128 * KIB, 32, 8 * GIB)
    assert [layout.offset(p) for p in WINDOWS] == [0, 8 * GIB, 16 * GIB]


@pytest.mark.parametrize("span", [SATA_240, NVME_500, 3 * GIB, 256 * MIB + 8 * KIB,
                                  1_953_125 * 512, 62_500 * 4096 + 4096])
@pytest.mark.parametrize("preset, gib", [("as-ssd", 1.0), ("fill", 8.0), ("as-ssd", 0.25)])
def test_the_three_windows_are_disjoint_whole_blocks_inside_the_span(
        span: int, preset: str, gib: float) -> None:
    layout = probe_layout(span, RunParams(probe_preset=preset, probe_gib=gib))
    size = layout.probe_bytes
    assert size > 0 and size % layout.block_bytes == 0 and size % 4096 == 0
    windows = sorted((layout.offset(p), layout.offset(p) + size) for p in WINDOWS)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(windows))
    assert windows[-1][1] <= span
    assert layout.shrunk == (3 * layout.requested_bytes > span)


def test_a_small_span_shrinks_the_probe_to_a_third_of_it() -> None:
    # 2 GiB span, 1 GiB probes: three windows do not fit -> 682 MiB + rounding to 16 MiB
    layout = probe_layout(2 * GIB, RunParams())
    assert layout.shrunk and layout.probe_bytes == 672 * MIB  # 42 blocks of 16 MiB
    assert layout.to_dict()["shrunk"] is True
    # a span where a third is less than one 16 MiB block: the probe is one smaller block
    layout = probe_layout(30 * MIB + 4 * KIB, RunParams())
    assert layout.block_bytes == layout.probe_bytes == 10 * MIB
    with pytest.raises(StageFailed, match="too small for three TRIM probe windows"):
        probe_layout(8 * KIB, RunParams())


def test_probe_job_writes_its_window() -> None:
    target = jobs.JobTarget("/dev/loop9", 96 * MIB, iodepth=1)
    job = jobs.probe_job(target, phase="after_trim", probe_bytes=32 * MIB, block_size="16m",
                         offset=64 * MIB)
    lines = job.text.splitlines()
    for line in ("iodepth=1", "bs=16m", f"offset={64 * MIB}", f"size={32 * MIB}",
                 "refill_buffers=1", "rw=write"):
        assert line in lines
    assert job.total_bytes == 32 * MIB
    with pytest.raises(ValueError, match="outside the span"):
        jobs.probe_job(target, phase="clean", probe_bytes=MIB, offset=96 * MIB)


def test_fio_sizes() -> None:
    assert [fio_size(n) for n in (16 * MIB, 128 * KIB, 6 * KIB, GIB, 1536)] == [
        "16m", "128k", "6k", "1g", "1536"]


def _context(tmp_path: Path, span: int, params: RunParams,
             events: list[Progress] | None = None) -> tuple[RunContext, ReplayRunner]:
    run_dir = tmp_path / "drive" / "trim"
    run_dir.mkdir(parents=True)
    image = tmp_path / "disk.img"
    target = Target(str(image), "file", None, span)
    runner = ReplayRunner()
    runner.add(["fallocate", "--punch-hole", "--keep-size", "--offset", "0", "--length",
                str(span), str(image)])
    record = RunRecord.create(run_dir, run="trim", kind="trim", drive={"name": "img"},
                              target=target.record(0), params=params.as_record(), tools={})
    ctx = RunContext(host=Host(runner, ReplayFS(FSRecord())), run_dir=run_dir,
                     drive_name="img", run_name="trim", target=target, params=params,
                     record=record, progress=(events.append if events is not None
                                              else lambda _e: None))
    return ctx, runner


def _stored(ctx: RunContext) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ctx.record.path.read_text())
    return data


def test_probe_stage_records_the_layout_and_writes_the_window(tmp_path: Path) -> None:
    ctx, _ = _context(tmp_path, 100 * MIB, RunParams(probe_gib=0.03125))  # 32 MiB
    job = probe_stage("after_torture").make_job(ctx)
    assert f"offset={32 * MIB}" in job.text.splitlines()
    assert "iodepth=1" in job.text.splitlines() and "bs=16m" in job.text.splitlines()
    probes = _stored(ctx)["probes"]
    assert probes["offsets"] == {"clean": 0, "after_torture": 32 * MIB,
                                 "after_trim": 64 * MIB}
    assert (probes["preset"], probes["probe_bytes"], probes["iodepth"]) == (
        "as-ssd", 32 * MIB, 1)


def test_the_idle_after_trim_is_honoured_with_progress(tmp_path: Path) -> None:
    events: list[Progress] = []
    ctx, runner = _context(tmp_path, 64 * MIB, RunParams(trim_idle_seconds=1), events)
    TrimStage().execute(ctx)
    trim = _stored(ctx)["trim"]
    assert trim["idle_s"] == 1 and trim["idle_measured_s"] >= 1.0
    assert runner.calls[0][0] == "fallocate"  # the TRIM pass came first
    assert any("idle 1 s" in e.message for e in events)
    assert events[-1].fraction == 1.0 and events[-1].message == "idle of 1 s over"
    fractions = [e.fraction for e in events if e.fraction is not None]
    assert fractions == sorted(fractions)  # progress only goes forward


def test_no_idle_when_zero(tmp_path: Path) -> None:
    ctx, _ = _context(tmp_path, 64 * MIB, RunParams(trim_idle_seconds=0))
    TrimStage().execute(ctx)
    assert _stored(ctx)["trim"]["idle_s"] == 0


def test_cancel_ends_the_idle_at_once_and_keeps_the_trim_record(tmp_path: Path) -> None:
    ctx, _ = _context(tmp_path, 64 * MIB, RunParams(trim_idle_seconds=3600))
    done = threading.Event()

    def cancel_when_idle(event: Progress) -> None:
        if event.message.startswith("idle"):
            ctx.cancel.set()
        done.set()

    ctx.progress = cancel_when_idle
    with pytest.raises(StageCancelled, match="idle after TRIM"):
        TrimStage().execute(ctx)
    assert done.is_set()
    assert _stored(ctx)["trim"]["method"] == "fallocate"


def test_the_after_torture_probe_follows_the_same_idle_as_the_after_trim_probe(
        tmp_path: Path) -> None:
    """Issue #20 item 3: background GC during an idle alone can free a probe's worth of
    blocks, so both later probes get the same idle and the difference is TRIM's."""
    names = [s.name for s in trim_stages()]
    assert names == ["erase", "probe-clean", "fill", "torture", "settle",
                     "probe-after_torture", "trim", "probe-after_trim"]
    events: list[Progress] = []
    ctx, runner = _context(tmp_path, 64 * MIB, RunParams(trim_idle_seconds=1), events)
    SettleStage().execute(ctx)
    settle = _stored(ctx)["settle"]
    assert settle["idle_s"] == 1 and settle["idle_measured_s"] >= 1.0
    assert runner.calls == []  # nothing is sent to the drive
    assert any(e.message.startswith("idle 1 s: the same idle as after the TRIM")
               for e in events)


def test_cancel_ends_the_settle_idle_at_once(tmp_path: Path) -> None:
    ctx, _ = _context(tmp_path, 64 * MIB, RunParams(trim_idle_seconds=3600))
    ctx.progress = lambda event: ctx.cancel.set()
    with pytest.raises(StageCancelled, match="idle after the torture"):
        SettleStage().execute(ctx)
