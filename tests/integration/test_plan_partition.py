"""Over-provisioning: the layout, the sfdisk script applied by the real sfdisk to an image
file (partitions on loop devices do not appear on this machine), and the stage's flow with
recorded command results."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, StageFailed, Target
from ssdbench.stages.params import RunParams
from ssdbench.stages.partition import (
    MIB,
    PartitionStage,
    op_layout,
    partition_name,
    sfdisk_argv,
)
from ssdbench.system import CommandError, CommandSink, Host, Result, RunningProcess

GIB = 1024 * MIB


def test_layout_is_mib_aligned_and_the_requested_share() -> None:
    layout = op_layout(GIB, 25)
    assert layout.start_bytes == MIB and layout.size_bytes == 768 * MIB
    assert layout.spare_bytes == 255 * MIB
    assert "start=2048, size=1572864," in layout.script()
    odd = op_layout(1_000_204_886_016, 7)  # a "1 TB" drive
    assert odd.size_bytes % MIB == 0 and odd.size_bytes <= 1_000_204_886_016 * 93 // 100
    assert "start=256, size=" in op_layout(GIB, 25, sector_size=4096).script()
    with pytest.raises(ValueError, match="no room"):
        op_layout(2 * MIB, 50)
    assert [partition_name(d) for d in ("sda", "nvme0n1", "loop3", "mmcblk0")] == [
        "sda1", "nvme0n1p1", "loop3p1", "mmcblk0p1"]


def test_real_sfdisk_writes_the_table_we_describe(tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:
        f.truncate(64 * MIB)
    layout = op_layout(64 * MIB, 25)
    script = tmp_path / "partition.sfdisk"
    script.write_text(layout.script())
    subprocess.run(sfdisk_argv(str(image), script), check=True, capture_output=True)
    table = json.loads(subprocess.run(["sfdisk", "--json", str(image)], check=True,
                                      capture_output=True, text=True).stdout)["partitiontable"]
    assert table["label"] == "gpt" and len(table["partitions"]) == 1
    part = table["partitions"][0]
    assert part["start"] * 512 == MIB and part["size"] * 512 == 48 * MIB
    assert part["name"] == "ssdbench-op25"


class Recorded:
    """Replies per argv (recorded from util-linux here); every call is kept in order."""

    def __init__(self, fail: Sequence[str] = ()) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    def run(self, argv: Sequence[str], *, ok_codes: Sequence[int] = (0,),
            timeout: float | None = 60.0, env: Mapping[str, str] | None = None) -> Result:
        self.calls.append(list(argv))
        if argv[0] in self.fail:
            raise CommandError(argv, "exit code 1", returncode=1,
                               stderr=f"{argv[0]}: BLKRRPART: Invalid argument")
        return Result(tuple(argv), 0, b"", b"", 0.01)

    def stream(self, argv: Sequence[str], *, ok_codes: Sequence[int] = (0,),
               env: Mapping[str, str] | None = None,
               cwd: str | Path | None = None) -> RunningProcess:
        raise AssertionError("no streaming here")

    def add_sink(self, sink: CommandSink) -> None:
        pass

    def remove_sink(self, sink: CommandSink) -> None:
        pass


class FakeSys:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/")[0] for p in self.files if p.startswith(prefix)})

    def readlink(self, path: str) -> str | None:
        return None

    def exists(self, path: str) -> bool:
        return any(p == path or p.startswith(path + "/") for p in self.files)


def ctx_for(tmp_path: Path, runner: Recorded, fs: FakeSys, erase: dict[str, object] | None
            ) -> RunContext:
    record = RunRecord.create(tmp_path, run="consistency-op25", kind="consistency", drive={},
                              target={}, params={}, tools={})
    record.set("erase", erase)
    return RunContext(host=Host(runner, fs), run_dir=tmp_path, drive_name="nvme0n1",
                      run_name="consistency-op25",
                      target=Target("/dev/nvme0n1", "block", "nvme0n1", GIB),
                      params=RunParams(), record=record)


def test_op_flow_not_secure_erased_discards_the_spare(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvme0n1p1").write_bytes(b"\0" * 4096)  # stands in for the node udev makes
    fs = FakeSys({"/sys/class/block/nvme0n1/queue/logical_block_size": "512\n",
                  "/sys/class/block/nvme0n1/nvme0n1p1/partition": "1\n"})
    runner = Recorded(fail=("blockdev",))  # BLKRRPART refused: partx -u is the fallback
    ctx = ctx_for(tmp_path, runner, fs, {"method": "discard", "secure": False})
    PartitionStage(25, dev_dir=str(dev), appear_timeout_s=1).execute(ctx)
    script = str(tmp_path / "jobs" / "partition.sfdisk")
    assert runner.calls == [
        ["wipefs", "-a", "/dev/nvme0n1"],
        sfdisk_argv("/dev/nvme0n1", Path(script)),
        ["blockdev", "--rereadpt", "/dev/nvme0n1"],
        ["partx", "-u", "/dev/nvme0n1"],
        ["blkdiscard", "--offset", str(769 * MIB), "--length", str(254 * MIB), "/dev/nvme0n1"],
    ]
    assert ctx.target.path == str(dev / "nvme0n1p1")
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["partition"]["size_bytes"] == 768 * MIB
    assert data["partition"]["spare_discard"]["length"] == 254 * MIB
    assert data["target"]["op_percent"] == 25 and data["target"]["disk"] == "/dev/nvme0n1"


def test_op_flow_secure_erased_and_the_partition_never_shows(tmp_path: Path) -> None:
    fs = FakeSys({"/sys/class/block/nvme0n1/queue/logical_block_size": "512\n"})
    runner = Recorded()
    ctx = ctx_for(tmp_path, runner, fs, {"method": "nvme-format", "secure": True})
    with pytest.raises(StageFailed, match="did not show nvme0n1p1"):
        PartitionStage(25, dev_dir=str(tmp_path), appear_timeout_s=0.3).execute(ctx)
    assert not any(c[0] == "blkdiscard" for c in runner.calls)


@pytest.mark.parametrize("refused", [False, True])
def test_op_flow_secure_erased_still_discards_the_spare(tmp_path: Path, refused: bool) -> None:
    """The spare is discarded after a secure erase too (docs/plans.md); a drive that
    refuses it then is a warning, not a failure (the erase has emptied the spare)."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvme0n1p1").write_bytes(b"\0" * 4096)
    fs = FakeSys({"/sys/class/block/nvme0n1/queue/logical_block_size": "512\n",
                  "/sys/class/block/nvme0n1/nvme0n1p1/partition": "1\n"})
    runner = Recorded(fail=("blkdiscard",) if refused else ())
    ctx = ctx_for(tmp_path, runner, fs, {"method": "nvme-format", "secure": True})
    PartitionStage(25, dev_dir=str(dev), appear_timeout_s=1).execute(ctx)
    spare = ["blkdiscard", "--offset", str(769 * MIB), "--length", str(254 * MIB),
             "/dev/nvme0n1"]
    assert runner.calls[-1] == spare and ctx.target.path == str(dev / "nvme0n1p1")
    data = json.loads((tmp_path / "run.json").read_text())
    entry = data["partition"]["spare_discard"]
    assert entry["after_secure_erase"] is True and entry["argv"] == spare
    assert ("error" in entry) == refused
    assert [w["kind"] for w in data.get("warnings", [])] == (["spare_discard"] if refused else [])


def test_op_flow_without_secure_erase_fails_when_the_spare_discard_fails(
        tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvme0n1p1").write_bytes(b"\0" * 4096)
    fs = FakeSys({"/sys/class/block/nvme0n1/queue/logical_block_size": "512\n",
                  "/sys/class/block/nvme0n1/nvme0n1p1/partition": "1\n"})
    ctx = ctx_for(tmp_path, Recorded(fail=("blkdiscard",)), fs,
                  {"method": "discard", "secure": False})
    with pytest.raises(StageFailed, match="discarding the spare region failed"):
        PartitionStage(25, dev_dir=str(dev), appear_timeout_s=1).execute(ctx)


def test_zero_op_wipes_a_leftover_table(tmp_path: Path) -> None:
    fs = FakeSys({"/sys/class/block/nvme0n1/nvme0n1p1/partition": "1\n"})
    runner = Recorded()
    ctx = ctx_for(tmp_path, runner, fs, None)
    PartitionStage(0).execute(ctx)
    assert runner.calls == [["wipefs", "-a", "/dev/nvme0n1"],
                            ["blockdev", "--rereadpt", "/dev/nvme0n1"]]
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["partition"]["wiped"] and data["partition"]["old_partitions"] == ["nvme0n1p1"]
