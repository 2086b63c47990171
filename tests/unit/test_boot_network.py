"""When the image brings the network up, and how it names a config URL on the console
(overlay/usr/libexec/ssdbench/lib.sh: network_reason, shown_url; rcS calls them at boot).
Run with the host's POSIX sh (and BusyBox's when the host has it: the image's shell)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "overlay" / "usr" / "libexec" / "ssdbench" / "lib.sh"
SHELLS = [["sh"]] + ([["busybox", "sh"]] if shutil.which("busybox") else [])


def call(shell: list[str], *args: str) -> str:
    done = subprocess.run([*shell, "-c", f'. "{LIB}"; "$@"', "sh", *args],
                          capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_a_config_url_is_shown_without_its_secrets(shell: list[str]) -> None:
    assert call(shell, "shown_url", "http://lab:pw@127.0.0.1:8080/c/k.toml?token=t#f") == \
        "http://127.0.0.1:8080/c/k.toml"
    assert call(shell, "shown_url", "https://srv/a@b/k.toml") == "https://srv/a@b/k.toml"


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_the_network_is_wanted_for_a_store_on_the_stick_too(shell: list[str],
                                                           tmp_path: Path) -> None:
    """A stick-booted bench whose ssdbench.toml has a [store] needs the network as much as
    one without a stick (docs/lab.md: 'with a stick, to both')."""
    stick = tmp_path / "stick"
    stick.mkdir()
    reason = lambda dev, cfg="": call(shell, "network_reason", dev, cfg, str(stick))  # noqa: E731
    assert reason("") == "no results stick"
    assert reason("/dev/sdb1") == ""  # no config on the stick
    (stick / "ssdbench.toml").write_text('plan = "quick"\n')
    assert reason("/dev/sdb1") == ""
    (stick / "ssdbench.toml").write_text('plan = "quick"\n\n[store]\nkind = "s3"\n')
    assert reason("/dev/sdb1") == f"{stick}/ssdbench.toml has a [store]"
    (stick / "lab.toml").write_text('  [store]\n')
    assert reason("/dev/sdb1", "lab.toml") == f"{stick}/lab.toml has a [store]"
    assert reason("/dev/sdb1", "https://u:p@cfg.lab/k.toml?x=1") == \
        "the config is https://cfg.lab/k.toml"
    # the lab's key from its server: the network too (a path on another medium: not)
    (stick / "erase.toml").write_text('plan = "erase"\n[params]\nrecord_key = "/media/k.pem"\n')
    assert reason("/dev/sdb1", "erase.toml") == ""
    (stick / "erase.toml").write_text(
        "plan = \"erase\"\n[params]\n  record_key='https://lab:pw@cfg.lab/k.pem'\n")
    assert reason("/dev/sdb1", "erase.toml") == f"{stick}/erase.toml has a record_key URL"
