"""A power cut in the middle of a FAT rename (the stick mirror's atomic copy of state.json)
leaves the temp name and the final name on one cluster chain (tests/fat.py). Seen in QEMU
(test_power_loss.py, 2026-11-26): the next boot left the pair alone, rewrote state.json (a
rename over it frees its clusters), and the temp name was left on freed clusters: mtools
then stopped copying the stick at that name (state.json was not in the copy), and deleting
the temp later would free clusters a newer file holds.

The image's init now runs ``fsck.fat -a`` before it mounts the stick (lib.sh
``check_results_fat``), which parts the pair by truncating the second name in the directory;
the mirror's seed (``remove_torn(checked=True)``) then keeps the whole file under the final
name. The real fsck.fat on a real FAT32 image; the tidy on the files as the stick then holds
them (copied out with mtools: this machine's kernel has no vfat; the mount itself is
test_power_loss.py's)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ssdbench.kiosk.mirror import remove_torn
from tests.conftest import REPO
from tests.fat import crosslink

LIB = REPO / "overlay" / "usr" / "libexec" / "ssdbench" / "lib.sh"
TEMP = ".state.json.tmp-266-139626106832576"
OLD = '{"drives": {"E2EPOWERLOSS1": {"state": "running", "stage": "fill"}}, "pad": "%s"}\n' % (
    "o" * 1500)
NEW = '{"drives": {"E2EPOWERLOSS1": {"state": "running", "stage": "torture"}}, "pad": "%s"}\n' % (
    "n" * 1500)
MTOOLS = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}


def _mtools(*argv: str) -> str:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True,
                          env=MTOOLS, timeout=60).stdout


def _put(image: Path, rel: str, text: str) -> None:
    local = image.with_name("put.tmp")
    local.write_text(text)
    _mtools("mcopy", "-n", "-i", str(image), str(local), f"::{rel}")


def _stick(tmp_path: Path) -> Path:
    image = tmp_path / "results.img"  # FAT32 with 512-byte clusters, as the image's stick
    subprocess.run(["truncate", "-s", "64M", str(image)], check=True)
    subprocess.run(["mkfs.fat", "-F", "32", "-s", "1", "-n", "SSDRESULTS", str(image)],
                   check=True, capture_output=True)
    _mtools("mmd", "-i", str(image), "::ssdbench")
    return image


def _check(image: Path, words: Path) -> int:
    """lib.sh's check_results_fat as rcS runs it (POSIX sh)."""
    return subprocess.run(["sh", "-c", f'. "{LIB}"; check_results_fat "$1" "$2"', "sh",
                           str(image), str(words)], timeout=120).returncode


@pytest.mark.parametrize("temp_first", [False, True], ids=["temp-second", "temp-first"])
def test_a_rename_cut_on_the_stick_is_repaired_at_the_next_boot(tmp_path: Path,
                                                                  temp_first: bool) -> None:
    """Both directory orders: fsck.fat truncates whichever name comes second; the final
    name ends up with the file the rename was writing, and no temp file is left."""
    image = _stick(tmp_path)
    if temp_first:  # the temp in a slot before the final name's (a deleted entry reused)
        _put(image, f"ssdbench/{TEMP}", NEW)
        _put(image, "ssdbench/state.json", OLD)
    else:
        _put(image, "ssdbench/state.json", OLD)
        _put(image, f"ssdbench/{TEMP}", NEW)
    crosslink(image, "ssdbench", "state.json", TEMP)
    broken = subprocess.run(["fsck.fat", "-n", str(image)], capture_output=True, text=True)
    assert "share clusters" in broken.stdout, broken.stdout  # the state a cut rename leaves

    words = tmp_path / "results-fsck.txt"
    assert _check(image, words) == 1, words.read_text()  # repaired
    assert "share clusters" in words.read_text()
    clean = subprocess.run(["fsck.fat", "-n", str(image)], capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout
    assert _check(image, words) == 0  # nothing more to do

    out = tmp_path / "stick"
    out.mkdir()
    _mtools("mcopy", "-s", "-n", "-i", str(image), "::ssdbench", str(out))
    results = out / "ssdbench"
    removed, restored = remove_torn(results, checked=True)
    assert (results / "state.json").read_text() == NEW
    assert not list(results.glob(".*.tmp-*"))
    if temp_first:  # fsck.fat emptied the final name: the temp (fsynced before) replaces it
        assert (removed, restored) == ([], [results / "state.json"])
    else:  # fsck.fat emptied the temp name
        assert (removed, restored) == ([results / TEMP], [])


def test_an_unchecked_stick_keeps_the_pair(tmp_path: Path) -> None:
    """Without fsck.fat (or when it failed) the pair cannot be told from two copies: the temp
    is left, as before (deleting it would free the final file's clusters)."""
    image = _stick(tmp_path)
    _put(image, "ssdbench/state.json", OLD)
    crosslink(image, "ssdbench", "state.json", TEMP)
    out = tmp_path / "stick"
    out.mkdir()
    _mtools("mcopy", "-s", "-n", "-i", str(image), "::ssdbench", str(out))
    assert remove_torn(out / "ssdbench") == ([], [])
    assert (out / "ssdbench" / TEMP).read_text() == OLD
