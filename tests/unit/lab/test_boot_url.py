"""The boot scripts read a URL as lab/fetch.py does (#42 item 4): the scheme in any case,
and the console line names it without any part of its password
(overlay/usr/libexec/ssdbench/lib.sh, run with the host's sh and BusyBox's when there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_boot_network import SHELLS, call


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
@pytest.mark.parametrize("url", ["https://lab:Zq7?x@cfg.lab/k.toml",
                                 "https://lab:Zq7#x@cfg.lab/k.toml",
                                 "HTTPS://lab:Zq7@cfg.lab/k.toml?t=1"])
def test_the_console_names_a_config_url_without_its_password(shell: list[str],
                                                             url: str) -> None:
    shown = call(shell, "shown_url", url)
    assert shown.lower() == "https://cfg.lab/k.toml", shown


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_a_url_in_capitals_brings_the_network_up(shell: list[str], tmp_path: Path) -> None:
    stick = tmp_path / "stick"
    stick.mkdir()
    assert call(shell, "network_reason", "/dev/sdb1", "HTTPS://cfg.lab/k.toml",
                str(stick)).lower() == "the config is https://cfg.lab/k.toml"
    (stick / "erase.toml").write_text('plan = "erase"\n[params]\n'
                                      'record_key = " HTTPS://lab:pw@cfg.lab/k.pem"\n')
    assert call(shell, "network_reason", "/dev/sdb1", "erase.toml", str(stick)) == (
        f"{stick}/erase.toml has a record_key URL")
