"""board/ssdbench/post-build.sh on a root filesystem laid out as Buildroot leaves it (the
overlay copied in, kbd's console fonts installed), and the hot-plug set-up of the overlay's
init script against the kernel fragment and the BusyBox it runs on."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.buildroot import brtree

POST_BUILD = brtree.REPO / "board" / "ssdbench" / "post-build.sh"
RCS = brtree.REPO / "overlay" / "etc" / "init.d" / "rcS"
FRAGMENT = brtree.REPO / "board" / "ssdbench" / "linux.fragment"
# Console fonts of kbd 2.9.0 (data/consolefonts/ of its source, the names `make install`
# keeps; with --enable-compress each gets .gz) that post-build.sh may pick, best first.
KBD_FONTS = ("Lat2-Terminus16.psfu", "eurlatgr.psfu", "default8x16.psfu")


def _rootfs(tmp_path: Path) -> Path:
    target = tmp_path / "target"
    shutil.copytree(brtree.REPO / "overlay", target, symlinks=True)
    (target / "sbin").mkdir()
    return target


def _post_build(target: Path, binaries: Path | None = None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BINARIES_DIR"}
    if binaries is not None:
        env["BINARIES_DIR"] = str(binaries)
    done = subprocess.run(
        ["bash", str(POST_BUILD), str(target)], env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _font(seed: int) -> bytes:
    # A PSF2 header (magic 72 b5 4a 86) and glyph bytes: setfont's format, not a real glyph set.
    return bytes.fromhex("72b54a86") + bytes((seed + i) % 256 for i in range(4096))


@pytest.mark.parametrize("compressed", [True, False], ids=["gzipped", "plain"])
def test_console_font_is_found_under_kbd_names(tmp_path: Path, compressed: bool) -> None:
    target = _rootfs(tmp_path)
    fonts = target / "usr" / "share" / "kbd" / "consolefonts"
    fonts.mkdir(parents=True)
    for seed, name in enumerate(KBD_FONTS):
        data = _font(seed)
        if compressed:
            (fonts / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (fonts / name).write_bytes(data)
    _post_build(target)
    link = target / "usr" / "share" / "consolefonts" / "ssdbench.psf.gz"
    assert link.is_symlink() or link.is_file(), "post-build.sh did not pick a kbd font"
    path = target / os.readlink(link).lstrip("/") if link.is_symlink() else link
    assert gzip.decompress(path.read_bytes()) == _font(0), "not Lat2-Terminus16 (kbd's name)"


def test_debian_console_setup_font_is_still_used(tmp_path: Path) -> None:
    target = _rootfs(tmp_path)
    fonts = target / "usr" / "share" / "consolefonts"
    fonts.mkdir(parents=True)
    (fonts / "Uni2-Terminus16.psf.gz").write_bytes(gzip.compress(_font(7)))
    _post_build(target)
    assert os.readlink(fonts / "ssdbench.psf.gz") == "/usr/share/consolefonts/Uni2-Terminus16.psf.gz"


def test_rcs_loads_the_font_post_build_makes() -> None:
    assert "/usr/share/consolefonts/ssdbench.psf.gz" in RCS.read_text()


def test_buildroot_image_gets_an_image_id(tmp_path: Path) -> None:
    """Without an id from the dev image build, post-build.sh writes
    <version>-<16 hex digits of its inputs> to /etc/ssdbench-image-id (rcS logs it) and to
    $BINARIES_DIR/image-id (post-image.sh puts it on the stick); the same inputs give the
    same id."""
    ids = []
    for run in ("a", "b"):
        target, binaries = _rootfs(tmp_path / run), tmp_path / run / "images"
        _post_build(target, binaries)
        image_id = (target / "etc" / "ssdbench-image-id").read_text()
        assert re.fullmatch(r"\d+\.\d+\.\d+\S*-[0-9a-f]{16}\n", image_id), image_id
        assert (binaries / "image-id").read_text() == image_id
        ids.append(image_id)
    assert ids[0] == ids[1]
    assert "/etc/ssdbench-image-id" in RCS.read_text()


def test_dev_image_id_is_kept(tmp_path: Path) -> None:
    target = _rootfs(tmp_path)
    (target / "etc" / "ssdbench-image-id").write_text("0123456789abcdef\n")
    _post_build(target)
    assert (target / "etc" / "ssdbench-image-id").read_text() == "0123456789abcdef\n"


def test_hotplug_does_not_need_a_uevent_helper() -> None:
    """/proc/sys/kernel/hotplug exists only with CONFIG_UEVENT_HELPER, which neither the
    image's kernel (linux.fragment) nor Debian's (dev image) has: rcS must not rely on it
    and runs mdev as a netlink daemon instead."""
    rcs = RCS.read_text()
    fragment = FRAGMENT.read_text()
    if re.search(r">\s*/proc/sys/kernel/hotplug", rcs):
        assert re.search(r"^CONFIG_UEVENT_HELPER=y$", fragment, re.M), (
            "rcS writes /proc/sys/kernel/hotplug but the kernel has no CONFIG_UEVENT_HELPER"
        )
    assert re.search(r"^\s*mdev -d\b", rcs, re.M), "rcS starts no mdev daemon"


def test_dev_image_busybox_has_the_mdev_daemon() -> None:
    """The dev image's BusyBox (Debian's busybox-static) knows `mdev -d`."""
    busybox = shutil.which("busybox")
    assert busybox, "busybox missing: apt-get install busybox-static (make deps)"
    done = subprocess.run([busybox, "mdev", "--help"], capture_output=True, text=True, check=False)
    assert re.search(r"^\s*-d\s+Daemon", done.stdout + done.stderr, re.M), done.stderr


def test_botocore_keeps_the_s3_models_and_an_s3_client_still_starts(tmp_path: Path) -> None:
    """post-build.sh drops the models of every AWS service but S3 (28 MB of the initramfs);
    boto3 from that tree still makes an S3 client (the test venv's boto3/botocore, laid out
    as Buildroot's python3.14 site-packages)."""
    import boto3  # type: ignore[import-untyped]
    import botocore  # type: ignore[import-untyped]

    target = _rootfs(tmp_path)
    site = target / "usr" / "lib" / "python3.14" / "site-packages"
    for module in (boto3, botocore):
        shutil.copytree(Path(module.__file__).parent, site / module.__name__)
    assert len(list((site / "botocore" / "data").iterdir())) > 100
    _post_build(target)
    kept = sorted(p.name for p in (site / "botocore" / "data").iterdir() if p.is_dir())
    assert kept == ["s3"]
    assert sorted(p.name for p in (site / "boto3" / "data").iterdir()) == ["s3"]
    assert (site / "botocore" / "data" / "endpoints.json").is_file()
    code = ("import boto3; c = boto3.session.Session().client('s3', endpoint_url="
            "'http://127.0.0.1:9', region_name='us-east-1', aws_access_key_id='k', "
            "aws_secret_access_key='s'); print(c.meta.service_model.service_name)")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stdout.strip() == "s3", done.stderr
