"""docs/kiosk.md's table of config keys is the validator's list (#24 item 11)."""

from __future__ import annotations

import re

import pytest

from ssdbench.kiosk.config import KEYS, ConfigError, parse_config
from tests.conftest import REPO


def documented_keys() -> list[str]:
    text = (REPO / "docs" / "kiosk.md").read_text()
    section = text.split("## Config keys", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M)


def test_every_key_the_validator_accepts_is_in_the_table() -> None:
    assert sorted(documented_keys()) == sorted(KEYS)


@pytest.mark.parametrize("key", KEYS)
def test_each_documented_key_is_accepted(key: str) -> None:
    values = {"plan": "diagnose", "select": "all-eligible", "destroy": "all-eligible",
              "on_finish": "stay", "svg": False, "params": {},
              "store": {"kind": "http", "endpoint": "https://dav.lab.example"},
              "station": {"idle_minutes": 5},
              "jobs": {"url": "https://lab.example/jobs.toml", "no_job": "wait"},
              "fields": {"ask": ["asset_tag", "bay"], "names": ["bay"]},
              "post": {"url": "https://assets.lab.example/api/ssdbench", "token": "t"},
              "speed": {"class": {"X.*": {"seq1m_q8t1_read": 500, "seq1m_q1t1_read": 400,
                                          "rnd4k_q32t16_read": 300, "rnd4k_q1t1_read": 40}}}}
    needs = {"plan": "erase"} if key == "station" else {}  # station mode runs the erase plan
    parse_config({**needs, key: values[key], "destroy": "all-eligible"})


def test_a_key_outside_the_table_is_refused() -> None:
    assert "size" not in documented_keys()
    with pytest.raises(ConfigError, match="unknown key"):
        parse_config({"size": 1, "destroy": "all-eligible"})
