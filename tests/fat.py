"""What a power cut in the middle of a FAT rename leaves, made on a FAT32 image on purpose.

Linux's vfat_rename over an existing file writes the temp file's clusters into the final
name's directory entry (a ``sync`` mount writes it at once), frees the final file's old
clusters, and only then removes the temp name's entry: cut in between, both names hold one
cluster chain (seen in QEMU, docs/kiosk.md "Power loss"). :func:`crosslink` makes that state
with mtools (the copy) and a few bytes written here (the directory entry and the FAT), so the
repair at the next boot is tested without waiting for a lucky kill."""

from __future__ import annotations

import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

END = 0x0FFFFFF8
_MTOOLS_ENV = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}


@dataclass(frozen=True)
class _Fat32:
    bytes_per_sector: int
    sectors_per_cluster: int
    reserved: int
    fats: int
    fat_sectors: int
    root_cluster: int

    @property
    def cluster_bytes(self) -> int:
        return self.bytes_per_sector * self.sectors_per_cluster

    def fat_offset(self, n: int) -> int:
        return (self.reserved + n * self.fat_sectors) * self.bytes_per_sector

    def cluster_offset(self, cluster: int) -> int:
        data = (self.reserved + self.fats * self.fat_sectors) * self.bytes_per_sector
        return data + (cluster - 2) * self.cluster_bytes


def _geometry(f: _At) -> _Fat32:
    f.seek(0)
    boot: bytes = f.read(512)
    bps, spc, reserved, fats = struct.unpack_from("<HBHB", boot, 11)
    fat_sectors, root = struct.unpack_from("<I", boot, 36)[0], struct.unpack_from("<I", boot, 44)[0]
    assert fat_sectors and boot[82:87] == b"FAT32", "not a FAT32 image"
    return _Fat32(bps, spc, reserved, fats, fat_sectors, root)


def _next(f: _At, g: _Fat32, cluster: int) -> int:
    f.seek(g.fat_offset(0) + 4 * cluster)
    return int(struct.unpack("<I", f.read(4))[0]) & 0x0FFFFFFF


def _chain(f: _At, g: _Fat32, first: int) -> list[int]:
    chain = [first]
    while (nxt := _next(f, g, chain[-1])) < END and nxt >= 2:
        chain.append(nxt)
    return chain


def _entries(f: _At, g: _Fat32, dir_cluster: int) -> dict[str, int]:
    """Short (8.3) names of a directory -> the byte offset of their 32-byte entry."""
    found: dict[str, int] = {}
    for cluster in _chain(f, g, dir_cluster):
        base = g.cluster_offset(cluster)
        f.seek(base)
        data: bytes = f.read(g.cluster_bytes)
        for i in range(0, len(data), 32):
            entry = data[i:i + 32]
            if entry[0] == 0:
                return found
            if entry[0] == 0xE5 or entry[11] == 0x0F:  # deleted, long-name slot
                continue
            found[entry[:11].decode("ascii", "replace")] = base + i
    return found


def _first_cluster(entry: bytes) -> int:
    return int(struct.unpack_from("<H", entry, 20)[0]) << 16 | int(struct.unpack_from("<H", entry, 26)[0])


def _short_name(image: str, path: str) -> str:
    """The 8.3 name mtools shows for ``path`` (``mdir -a``), as stored: 'STATE~1 JSO'."""
    folder, _, name = path.rpartition("/")
    out = subprocess.run(["mdir", "-a", "-i", image, f"::{folder or '/'}"], check=True,
                         capture_output=True, text=True, env=_MTOOLS_ENV).stdout
    for line in out.splitlines():
        if line.rstrip().endswith(f" {name}"):  # a long name: mdir shows it last
            base, ext = line[:8].strip(), line[9:12].strip()
            return f"{base:<8}{ext:<3}"
    raise AssertionError(f"{path} has no long name in the image:\n{out}")


class _At:
    """A file seen from ``offset`` on (a partition inside a disk image)."""

    def __init__(self, f: BinaryIO, offset: int) -> None:
        self.f, self.offset = f, offset

    def seek(self, pos: int) -> None:
        self.f.seek(self.offset + pos)

    def read(self, n: int) -> bytes:
        return self.f.read(n)

    def write(self, data: bytes) -> None:
        self.f.write(data)


def crosslink(image: Path, folder: str, final: str, temp: str, *, offset: int = 0) -> None:
    """``folder/temp`` and ``folder/final`` left on one cluster chain (the temp's), the final
    file's own chain freed: a rename of temp over final cut after its first write. A temp not
    in the image yet is added first, a copy of the final file (with mtools). ``folder``: one
    level under the root, an 8.3 name ('ssdbench'); ``final`` and ``temp`` have long names. ``offset``: where the FAT
    partition starts in ``image`` (a stick image)."""
    mimage = f"{image}@@{offset}" if offset else str(image)
    env = _MTOOLS_ENV
    listing = subprocess.run(["mdir", "-a", "-i", mimage, f"::{folder}"], check=True,
                             capture_output=True, text=True, env=env).stdout
    if not any(line.rstrip().endswith(f" {temp}") for line in listing.splitlines()):
        data = subprocess.run(["mtype", "-i", mimage, f"::{folder}/{final}"], check=True,
                              capture_output=True, env=env).stdout
        local = image.with_name(image.name + ".copy")
        local.write_bytes(data)
        subprocess.run(["mcopy", "-n", "-i", mimage, str(local), f"::{folder}/{temp}"],
                       check=True, capture_output=True, env=env)
        local.unlink()
    final_83 = _short_name(mimage, f"{folder}/{final}")
    temp_83 = _short_name(mimage, f"{folder}/{temp}")
    with open(image, "r+b") as raw:
        f = _At(raw, offset)
        g = _geometry(f)
        f.seek(_entries(f, g, g.root_cluster)[f"{folder.upper():<11}"])
        entries = _entries(f, g, _first_cluster(f.read(32)))
        f.seek(entries[final_83])
        final_entry = bytearray(f.read(32))
        f.seek(entries[temp_83])
        temp_entry = f.read(32)
        old_chain = _chain(f, g, _first_cluster(bytes(final_entry)))
        final_entry[20:22], final_entry[26:28] = temp_entry[20:22], temp_entry[26:28]
        final_entry[28:32] = temp_entry[28:32]  # the size
        f.seek(entries[final_83])
        f.write(bytes(final_entry))
        for n in range(g.fats):
            for cluster in old_chain:
                f.seek(g.fat_offset(n) + 4 * cluster)
                f.write(b"\0\0\0\0")
