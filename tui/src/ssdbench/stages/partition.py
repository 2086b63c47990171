"""Over-provisioning: the "partition" stage between the erase and the fill.

* ``op_percent > 0``: a GPT with one partition of ``(100 − op)%`` of the user capacity,
  starting at 1 MiB and sized in whole MiB (sfdisk, script kept in ``jobs/partition.sfdisk``);
  the kernel re-reads the table (``blockdev --rereadpt``, else ``partx -u``), the stage waits
  (with a deadline) for ``/sys/class/block/<disk>/<part>`` and its /dev node, and every later
  stage runs on the partition (``ctx.target``). The spare region after the partition is
  then discarded explicitly after every erase, secure or not ("working backwards": the
  controller learns the spare is free, whatever the erase did). The table stays on the
  drive and is recorded in run.json ``partition``.
* ``op_percent == 0``: a table an earlier OP run left is wiped (``wipefs -a``) so the run
  really tests the whole span; recorded in run.json ``partition`` too.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench.stages.base import (
    RunContext,
    StageFailed,
    Target,
    resolve_target,
    sysfs_logical_block,
)
from ssdbench.system import CommandError

MIB = 1024 * 1024
LINUX_FS_TYPE = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
GPT_RESERVE = MIB  # room left at the end for the backup GPT (33 sectors, kept MiB-aligned)
APPEAR_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class OpLayout:
    op_percent: int
    disk_bytes: int
    sector_size: int
    start_bytes: int
    size_bytes: int

    @property
    def spare_bytes(self) -> int:
        return self.disk_bytes - self.start_bytes - self.size_bytes

    def script(self) -> str:
        """The sfdisk script (sectors of ``sector_size``)."""
        s = self.sector_size
        return (
            "label: gpt\n"
            f"sector-size: {s}\n"
            "unit: sectors\n"
            f"start={self.start_bytes // s}, size={self.size_bytes // s}, "
            f'type={LINUX_FS_TYPE}, name="ssdbench-op{self.op_percent}"\n'
        )

    def record(self) -> dict[str, Any]:
        return {"label": "gpt", "op_percent": self.op_percent, "start_bytes": self.start_bytes,
                "size_bytes": self.size_bytes, "spare_bytes": self.spare_bytes,
                "disk_bytes": self.disk_bytes, "script": self.script()}


def op_layout(disk_bytes: int, op_percent: int, sector_size: int = 512) -> OpLayout:
    """One partition of (100 − op)% of the capacity, 1 MiB aligned start and size."""
    if not 0 < op_percent <= 90:
        raise ValueError(f"op_percent must be 1..90, got {op_percent}")
    want = disk_bytes * (100 - op_percent) // 100
    size = (want // MIB) * MIB
    usable = ((disk_bytes - GPT_RESERVE) // MIB) * MIB - MIB  # minus the 1 MiB start
    size = min(size, usable)
    if size < MIB:
        raise ValueError(f"a {disk_bytes}-byte drive has no room for a {op_percent}% OP "
                         "partition")
    return OpLayout(op_percent, disk_bytes, sector_size, MIB, size)


def partition_name(disk: str, number: int = 1) -> str:
    """sda → sda1, nvme0n1 → nvme0n1p1, loop3 → loop3p1, mmcblk0 → mmcblk0p1."""
    return f"{disk}p{number}" if disk[-1:].isdigit() else f"{disk}{number}"


def existing_partitions(ctx: RunContext, disk: str) -> list[str]:
    return sorted(n for n in ctx.host.fs.listdir(f"/sys/class/block/{disk}")
                  if n.startswith(disk) and ctx.host.fs.exists(
                      f"/sys/class/block/{disk}/{n}/partition"))


def reread(ctx: RunContext, disk_path: str) -> list[str]:
    """Make the kernel re-read the table; the commands tried, in order."""
    tried = []
    for argv in (["blockdev", "--rereadpt", disk_path], ["partx", "-u", disk_path]):
        tried.append(" ".join(argv))
        try:
            ctx.host.runner.run(argv, timeout=60)
            return tried
        except CommandError:
            continue
    return tried


def wait_for(ctx: RunContext, disk: str, part: str, deadline_s: float,
             dev_dir: str = "/dev") -> str:
    """Wait for the partition in sysfs and its /dev node; its /dev path."""
    end = time.monotonic() + deadline_s
    dev = f"{dev_dir}/{part}"
    while True:
        if ctx.host.fs.exists(f"/sys/class/block/{disk}/{part}") and os.path.exists(dev):
            return dev
        if time.monotonic() >= end:
            raise StageFailed(
                f"the kernel did not show {part} within {deadline_s:.0f} s after the table "
                f"was written (no /sys/class/block/{disk}/{part} or {dev}); the table is "
                "left on the drive")
        time.sleep(0.1)


@dataclass
class PartitionStage:
    op_percent: int
    name: str = "partition"
    appear_timeout_s: float = APPEAR_TIMEOUT_S
    dev_dir: str = "/dev"

    def execute(self, ctx: RunContext) -> None:
        target = ctx.target
        if target.kind != "block" or target.kernel_name is None:
            if self.op_percent:
                raise StageFailed("over-provisioning needs a block device, not a file")
            ctx.record.set("partition", None)
            return
        if self.op_percent == 0:
            self._wipe(ctx, target)
        else:
            self._create(ctx, target)

    def _wipe(self, ctx: RunContext, target: Target) -> None:
        disk = target.kernel_name or ""
        old = existing_partitions(ctx, disk)
        try:
            ctx.host.runner.run(["wipefs", "-a", target.path], timeout=120)
        except CommandError as exc:
            raise StageFailed(f"wiping the partition table failed: {exc}") from exc
        tried = reread(ctx, target.path) if old else []
        ctx.record.set("partition", {"label": None, "op_percent": 0, "wiped": True,
                                     "old_partitions": old, "reread": tried})

    def _create(self, ctx: RunContext, target: Target) -> None:
        disk = target.kernel_name or ""
        sector = _sector_size(ctx, disk)
        try:
            layout = op_layout(target.span_bytes, self.op_percent, sector)
        except ValueError as exc:
            raise StageFailed(str(exc)) from None
        script_path = ctx.run_dir / "jobs" / "partition.sfdisk"
        script_path.parent.mkdir(parents=True, exist_ok=True)
        script_path.write_text(layout.script(), encoding="utf-8")
        ctx.emit(self.name, "running", f"GPT, one partition of {100 - self.op_percent}%")
        try:
            ctx.host.runner.run(["wipefs", "-a", target.path], timeout=120)
            ctx.host.runner.run(sfdisk_argv(target.path, script_path), timeout=120)
        except CommandError as exc:
            raise StageFailed(f"writing the partition table failed: {exc}") from exc
        tried = reread(ctx, target.path)
        part = partition_name(disk)
        dev = wait_for(ctx, disk, part, self.appear_timeout_s, self.dev_dir)
        new_target = resolve_target(ctx.host, dev)
        record = layout.record() | {"partition": dev, "reread": tried,
                                    "script_file": "jobs/partition.sfdisk"}
        if layout.spare_bytes > GPT_RESERVE:
            record["spare_discard"] = discard_spare(ctx, layout, target.path)
        ctx.record.set("partition", record)
        ctx.record.set("target", new_target.record(self.op_percent)
                       | {"disk": target.path, "disk_bytes": target.span_bytes})
        ctx.target = new_target


def discard_spare(ctx: RunContext, layout: OpLayout, disk_path: str) -> dict[str, Any]:
    """Discard the spare region after the partition (minus the backup GPT's MiB) after every
    erase: cheap, and the extra OP then does not rely on the erase having unmapped it (a
    secure erase that leaves LBAs mapped, or none at all). After a secure erase a drive that
    refuses the discard is noted (run.json warning), not a failure: the erase has already
    emptied it; without one the discard is the only thing that frees the spare. A Clear by
    overwrite (erase/overwrite.py) leaves every block holding its pattern: the spare then
    holds data, so a refused discard fails the stage as it does without a secure erase."""
    length = layout.spare_bytes - GPT_RESERVE
    offset = layout.start_bytes + layout.size_bytes
    argv = ["blkdiscard", "--offset", str(offset), "--length", str(length), disk_path]
    erase = ctx.record.data.get("erase") or {}
    # emptied: a secure erase that leaves the blocks unmapped, not an overwrite's pattern
    emptied = bool(erase.get("secure")) and erase.get("method") != "overwrite"
    entry: dict[str, Any] = {"offset": offset, "length": length, "argv": argv,
                             "after_secure_erase": bool(erase.get("secure"))}
    try:
        ctx.host.runner.run(argv, timeout=3600)
    except CommandError as exc:
        if not emptied:
            raise StageFailed(f"discarding the spare region failed: {exc}") from exc
        entry["error"] = str(exc)
        warnings = list(ctx.record.data.get("warnings") or [])
        warnings.append({"kind": "spare_discard", "message": (
            f"the spare region ({length} bytes after the partition) could not be discarded "
            f"after the secure erase: {exc}")})
        ctx.record.set("warnings", warnings)
    return entry


def sfdisk_argv(disk: str, script: Path) -> list[str]:
    # sfdisk reads its script on stdin; the runner has no stdin, so a shell redirects it
    # (the paths are positional arguments, never spliced into the command text).
    return ["sh", "-c", 'exec sfdisk --no-reread --wipe always "$0" < "$1"', disk, str(script)]


def _sector_size(ctx: RunContext, disk: str) -> int:
    return sysfs_logical_block(ctx.host, disk) or 512
