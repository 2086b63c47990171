"""What scripts/run-qemu.sh writes on the stick before a boot, without booting: the GRUB
environment of the entry and kernel arguments asked for, with TCG's `init_on_alloc=0`
(docs/testing.md), and a second run on the same stick (--keep-stick, as the tests' rig boots
a prepared stick) that asks for nothing keeps it. A CI run lost its kiosk boot to that: the
second run rewrote the grubenv with the TCG argument alone, GRUB fell back to the menu's
default entry (interactive), and the kiosk test waited for a kiosk that never started."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.rig import RUN_QEMU, partitions

pytestmark = [pytest.mark.e2e, pytest.mark.root]


def _grubenv(stick: Path) -> str:
    boot = f"{stick}@@{partitions(stick)[0].start_bytes}"
    out = subprocess.run(["mtype", "-i", boot, "::/boot/grub/grubenv"], check=True,
                         capture_output=True, timeout=60, env={"MTOOLS_SKIP_CHECK": "1"})
    return out.stdout.decode().rstrip("#")


def _prepare(work: Path, image: Path, *args: str) -> None:
    subprocess.run([str(RUN_QEMU), "--prepare-only", "--image", str(image), "--workdir",
                    str(work), "--accel", "tcg", *args], check=True, capture_output=True,
                   timeout=120)


def test_the_entry_and_arguments_stay_for_the_next_boot_of_the_stick(dev_image: Path,
                                                                    tmp_path: Path) -> None:
    _prepare(tmp_path, dev_image, "--entry", "kiosk", "--append", "ssdbench.settle=3")
    stick = tmp_path / "stick.img"
    env = _grubenv(stick)
    assert "ssdbench_default=kiosk\nssdbench_timeout=0\n" in env
    assert "ssdbench_append=ssdbench.settle=3 init_on_alloc=0\n" in env
    _prepare(tmp_path, dev_image, "--keep-stick")
    assert _grubenv(stick) == env  # untouched: the kiosk entry is still the one to boot
    fresh = tmp_path / "fresh"
    _prepare(fresh, dev_image)  # nothing asked: the stick's own menu, timeout and all
    assert "ssdbench_default" not in _grubenv(fresh / "stick.img")
    assert "init_on_alloc" not in _grubenv(fresh / "stick.img")
