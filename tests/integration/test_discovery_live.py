"""Live discovery on this machine: a loop device the test creates is listed unprotected,
the disk holding / is protected; a bundle captured live replays to the same answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.devices import discover
from ssdbench.devices.bundle import load_bundle
from ssdbench.system import Host, SystemRunner, live_host
from tests.conftest import require_root


@pytest.fixture
def loop_device(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_root()
    runner = SystemRunner()
    shm = Path("/dev/shm")
    folder = shm if shm.is_dir() else tmp_path_factory.mktemp("loop")
    image = folder / f"ssdbench-discovery-test-{id(runner)}.img"
    with open(image, "wb") as f:
        f.truncate(16 * 1024 * 1024)
    dev = runner.run(["losetup", "-f", "--show", str(image)], timeout=30).text.strip()
    try:
        yield dev
    finally:
        runner.run(["losetup", "-d", dev], timeout=30)
        image.unlink()


def _root_disk_names(drives: list[dict[str, object]]) -> list[str]:
    return [str(d["name"]) for d in drives if any(
        r == "mounted:/" for r in d["protect_reasons"])]  # type: ignore[attr-defined]


def test_list_json_live(loop_device: str) -> None:
    result = SystemRunner().run([sys.executable, "-m", "ssdbench", "list", "--json"],
                                timeout=120)
    drives = json.loads(result.text)
    by_path = {d["path"]: d for d in drives}
    loop = by_path[loop_device]
    assert loop["transport"] == "loop"
    assert loop["size_bytes"] == 16 * 1024 * 1024
    assert not loop["protected"] and loop["protect_reasons"] == []
    assert loop["erase_methods"] == [] and loop["consent_id"] == loop["name"]
    roots = _root_disk_names(drives)
    assert len(roots) == 1
    root = next(d for d in drives if d["name"] == roots[0])
    assert root["protected"] and "boot-medium" in root["protect_reasons"]
    assert not any(d["name"].startswith(("ram", "zram")) for d in drives)


def test_bundle_live_replays_identically(loop_device: str, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    SystemRunner().run([sys.executable, "-m", "ssdbench", "bundle", str(out)], timeout=300)
    live_answer = json.loads((out / "list.json").read_text())
    assert loop_device in {d["path"] for d in live_answer}
    bundle = load_bundle(out)
    replayed = [d.to_json() for d in discover(Host(bundle.runner, bundle.fs))]
    assert replayed == live_answer
    assert bundle.fs.unrecorded == []
    # And the in-process live discovery agrees on the safety of every drive.
    live = {d.name: d.protect_reasons for d in discover(live_host())}
    assert {d["name"]: tuple(d["protect_reasons"]) for d in live_answer} == live
