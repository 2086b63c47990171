"""Erase verification: marker blocks written before the erase must not read back after it.

A drive (or a tool) that reports success without erasing is a known failure. Before the
erase, a recognisable block ("SSDBENCH-MARKER", serial, offset, a random nonce) is
written with O_DIRECT to the first and last block and evenly in between, and read back
(it must be there). After the erase the same blocks are read again: any marker that
survived fails the stage.

All I/O is ``dd`` through the Runner (``oflag=direct,seek_bytes`` / ``iflag=direct,
skip_bytes``); the marker blocks come from one file in a scratch directory.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ssdbench.erase.model import EraseError, EraseTarget, Verification, VerificationFailed
from ssdbench.system import Host

MARKER_MAGIC = b"SSDBENCH-MARKER"
MIN_BLOCK = 4096


@dataclass(frozen=True)
class MarkerSet:
    serial: str
    nonce: bytes
    block: int
    offsets: tuple[int, ...]

    def block_for(self, offset: int) -> bytes:
        line = (
            MARKER_MAGIC
            + b" serial="
            + self.serial.encode("utf-8", "replace")
            + f" offset={offset} lba={offset // 512} nonce=".encode()
            + self.nonce.hex().encode()
            + b"\n"
        )
        data = (line * (self.block // len(line) + 1))[: self.block]
        return data

    def matches(self, offset: int, data: bytes) -> bool:
        """The exact marker, or any block still carrying this run's nonce."""
        return data == self.block_for(offset) or (
            MARKER_MAGIC in data and self.nonce.hex().encode() in data
        )


def plan_markers(
    size_bytes: int, logical_block_size: int, serial: str, count: int, nonce: bytes
) -> MarkerSet:
    block = max(MIN_BLOCK, logical_block_size)
    if logical_block_size <= 0 or block % logical_block_size:
        raise EraseError(f"logical block size {logical_block_size} does not divide {block}")
    blocks = size_bytes // block
    if blocks < 2:
        raise EraseError(f"device of {size_bytes} bytes is too small for erase markers")
    count = max(2, min(count, blocks))
    # first, last, and evenly spread in between (block aligned)
    idx = sorted({round(i * (blocks - 1) / (count - 1)) for i in range(count)})
    return MarkerSet(serial, nonce, block, tuple(i * block for i in idx))


def _dd_write(
    host: Host, src: Path, index: int, device: str, *, offset: int, block: int
) -> None:
    host.runner.run(
        [
            "dd", f"if={src}", f"of={device}", f"bs={block}", "count=1",
            f"skip={index * block}", f"seek={offset}",
            "iflag=skip_bytes", "oflag=direct,seek_bytes", "conv=notrunc,nocreat,fsync",
            "status=none",
        ],
        timeout=60.0,
    )


def read_block(host: Host, device: str, offset: int, block: int) -> bytes:
    res = host.runner.run(
        [
            "dd", f"if={device}", f"bs={block}", "count=1", f"skip={offset}",
            "iflag=direct,skip_bytes", "status=none",
        ],
        timeout=60.0,
    )
    return res.stdout


def write_markers(
    host: Host,
    target: EraseTarget,
    count: int,
    *,
    nonce: bytes | None = None,
    scratch: Path | None = None,
) -> MarkerSet:
    """Write the markers and read each one back; raise EraseError when one did not stick."""
    markers = plan_markers(
        target.size_bytes,
        target.logical_block_size,
        target.serial,
        count,
        nonce if nonce is not None else secrets.token_bytes(8),
    )
    own_dir = scratch is None
    directory = Path(tempfile.mkdtemp(prefix="ssdbench-markers-")) if own_dir else scratch
    assert directory is not None
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / "markers.bin"
    try:
        src.write_bytes(b"".join(markers.block_for(o) for o in markers.offsets))
        for i, offset in enumerate(markers.offsets):
            _dd_write(host, src, i, target.path, offset=offset, block=markers.block)
        for offset in markers.offsets:
            data = read_block(host, target.path, offset, markers.block)
            if data != markers.block_for(offset):
                raise EraseError(
                    f"{target.path}: the marker written at byte {offset} did not read back "
                    f"({len(data)} bytes read); verification is impossible on this device"
                )
    finally:
        src.unlink(missing_ok=True)
        if own_dir:
            os.rmdir(directory)
    return markers


def check_markers(host: Host, target: EraseTarget, markers: MarkerSet) -> Verification:
    """Read the markers back after the erase; raise VerificationFailed if any survived."""
    survivors = []
    for offset in markers.offsets:
        data = read_block(host, target.path, offset, markers.block)
        if markers.matches(offset, data):
            survivors.append(offset)
    result = Verification(
        markers=len(markers.offsets),
        block_bytes=markers.block,
        survivors=tuple(survivors),
        offsets=markers.offsets,
    )
    if survivors:
        raise VerificationFailed(
            f"{target.path}: the drive reported success but did not erase: "
            f"{len(survivors)} of {len(markers.offsets)} marker blocks written before the "
            f"erase still read back (byte offsets {', '.join(map(str, survivors[:5]))}"
            f"{', ...' if len(survivors) > 5 else ''})"
        )
    return result
