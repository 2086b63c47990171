"""Hot-plug: the /sys/block poll rediscovers when a drive goes away (replayed host)."""

from __future__ import annotations

from ssdbench.devices import block_devices_signature
from ssdbench.system import Host, HostFS
from ssdbench.ui.app import build_app
from tests.ui.conftest import ram_destination, replay_host, wait_for


class UnpluggableFS:
    """The recorded sysfs, where vda can be "unplugged"."""

    def __init__(self, inner: HostFS) -> None:
        self.inner = inner
        self.unplugged = False

    def read_text(self, path: str) -> str | None:
        return self.inner.read_text(path)

    def listdir(self, path: str) -> list[str]:
        names = self.inner.listdir(path)
        if self.unplugged and path == "/sys/block":
            names = [n for n in names if n != "vda"]
        return names

    def readlink(self, path: str) -> str | None:
        return self.inner.readlink(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)


def test_signature_names_and_sizes() -> None:
    host = replay_host()
    sig = block_devices_signature(host)
    assert "loop1:65536" in sig and any(s.startswith("vda:") for s in sig)


async def test_removed_drive_disappears_without_a_keypress() -> None:
    recorded = replay_host()
    fs = UnpluggableFS(recorded.fs)
    app = build_app(Host(recorded.runner, fs), poll_interval=0.05,
                    destination_finder=ram_destination)
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: len(app.drives) == 2, what="first discovery")
        fs.unplugged = True
        await wait_for(pilot, lambda: [d.name for d in app.drives] == ["loop1"],
                       what="rediscovery after unplug")
        assert "1 drive(s)" in app.drives_screen.status


def test_results_held_in_ram_are_copied_when_a_stick_appears(tmp_path) -> None:
    from pathlib import Path

    from ssdbench.ui.app import copy_from_ram
    from ssdbench.ui.messages import DestinationView

    ram, stick = tmp_path / "ram", tmp_path / "stick"
    (ram / "ssdbench" / "drive" / "run").mkdir(parents=True)
    (ram / "ssdbench" / "drive" / "run" / "iops.csv").write_text("time_s,iops\n0,1\n")
    old = DestinationView(ram / "ssdbench", False, "in RAM", "no stick", ram)
    new = DestinationView(stick / "ssdbench", True, "stick", "stick", stick)
    assert copy_from_ram(new, old) == 0  # stick → RAM: never
    assert copy_from_ram(old, new) == 1
    copied = Path(stick / "ssdbench" / "drive" / "run" / "iops.csv")
    assert copied.read_text() == "time_s,iops\n0,1\n"
    assert copy_from_ram(old, new) == 0  # already there
