"""The spare region after the partition is discarded after every erase (stages/partition.py
``discard_spare``): a drive that refuses the discard after a secure erase that emptied it is
a warning; after a Clear by overwrite the spare holds the pattern, so a refusal fails the
stage, as it does without a secure erase (#44)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, StageFailed, Target
from ssdbench.stages.params import RunParams
from ssdbench.stages.partition import GPT_RESERVE, OpLayout, discard_spare
from ssdbench.system import Host

MIB = 1024 * 1024
LAYOUT = OpLayout(op_percent=25, disk_bytes=256 * MIB, sector_size=512, start_bytes=MIB,
                  size_bytes=191 * MIB)
ARGV = ["blkdiscard", "--offset", str(192 * MIB), "--length",
        str(LAYOUT.spare_bytes - GPT_RESERVE), "/dev/sdz"]


def _ctx(tmp_path: Path, erase: dict[str, object]) -> RunContext:
    runner = ReplayRunner().add(ARGV, stderr="blkdiscard: BLKDISCARD ioctl failed",
                                returncode=1)
    record = RunRecord.create(tmp_path, run="consistency-op25", kind="consistency",
                              drive={"name": "sdz"},
                              target=Target("/dev/sdz", "block", "sdz", 256 * MIB).record(0),
                              params={}, tools={})
    record.set("erase", erase)
    return RunContext(host=Host(runner, ReplayFS(FSRecord(files={}))), run_dir=tmp_path,
                      drive_name="sdz", run_name="consistency-op25",
                      target=Target("/dev/sdz", "block", "sdz", 256 * MIB),
                      params=RunParams(), record=record)


def test_a_refused_discard_after_a_secure_erase_is_a_warning(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, {"method": "nvme-format-crypto", "secure": True})
    entry = discard_spare(ctx, LAYOUT, "/dev/sdz")
    assert "error" in entry
    assert any(w["kind"] == "spare_discard" for w in ctx.record.data["warnings"])


@pytest.mark.parametrize("erase", [{"method": "overwrite", "secure": True},
                                   {"method": "discard", "secure": False}])
def test_a_refused_discard_after_an_overwrite_fails_as_without_a_secure_erase(
        tmp_path: Path, erase: dict[str, object]) -> None:
    with pytest.raises(StageFailed, match="discarding the spare region failed"):
        discard_spare(_ctx(tmp_path, erase), LAYOUT, "/dev/sdz")
