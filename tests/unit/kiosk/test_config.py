from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import ssdbench
from ssdbench.kiosk.config import (
    ConfigError,
    choose_drives,
    find_config,
    kernel_cmdline_value,
    load_config,
    parse_config,
)

EXAMPLE = Path(ssdbench.__file__).parent / "data" / "ssdbench.toml.example"


def test_shipped_example_is_valid() -> None:
    config = load_config(EXAMPLE)
    assert config.plan == "quick" and config.select_all
    assert config.destroy_serials == ("REPLACE-WITH-SERIAL",)
    assert config.on_finish == "stay"
    assert config.svg


def test_full_config() -> None:
    config = parse_config(
        tomllib.loads(
            'plan = "review"\nselect = ["serial:S1", "model:Samsung SSD 8*"]\n'
            'destroy = ["S1", "S2"]\non_finish = "poweroff"\nsvg = false\n'
            '[params]\ntorture_seconds = 600\n'
        )
    )
    assert not config.svg
    assert config.selects("S1", "anything")
    assert config.selects("X", "SAMSUNG SSD 870 EVO 1TB")
    assert not config.selects("X", "Crucial MX500")
    assert config.consents("S2") and not config.consents("S3") and not config.consents("")
    assert config.params == {"torture_seconds": 600}


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ('plan = "fast"\ndestroy = "all-eligible"', "plan", "review, quick, trim, diagnose"),
        ('plan = "quick"', "destroy", "erases and writes drives"),
        ('destroy = "everything"', "destroy", "all-eligible"),
        ("destroy = []", "destroy", "list of serials"),
        ('destroy = ["S1", 3]', "destroy[1]", "non-empty string"),
        ('destroy = "all-eligible"\nselect = ["S1"]', "select[0]", "serial:SERIAL"),
        ('destroy = "all-eligible"\non_finish = "halt"', "on_finish", "poweroff, reboot, stay"),
        ('destroy = "all-eligible"\ntorture_seconds = 5', "torture_seconds", "unknown key"),
        ('destroy = "all-eligible"\nparams = 5', "params", "table"),
        ('destroy = "all-eligible"\nsvg = "no"', "svg", "true or false"),
        ('destroy = "all-eligible"\n[params]\nx = [1]', "params.x", "number"),
    ],
)
def test_bad_values_name_the_key(text: str, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(tomllib.loads(text), "stick/ssdbench.toml")
    assert info.value.key == key
    assert fragment in str(info.value)
    assert str(info.value).startswith("stick/ssdbench.toml: `" + key + "`")


def test_diagnose_needs_no_consent() -> None:
    config = parse_config({"plan": "diagnose"})
    assert not config.destructive and config.consents("")


def test_grade_needs_no_consent_and_intake_does() -> None:
    config = parse_config({"plan": "grade", "params": {"self_test": "extended",
                                                       "grade_media_errors_scrap": 3}})
    assert not config.destructive and config.consents("")
    with pytest.raises(ConfigError, match=r"`destroy`: plan \"intake\" erases and writes"):
        parse_config({"plan": "intake"})
    assert parse_config({"plan": "intake", "destroy": ["S1"]}).destructive


def test_syntax_error_and_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "ssdbench.toml"
    bad.write_text('plan = "quick\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(tmp_path / "missing.toml")
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(bad)


def test_search_order(tmp_path: Path) -> None:
    root = tmp_path / "stick"
    root.mkdir()
    assert find_config(None, "quiet", root) is None
    (root / "ssdbench.toml").write_text("")
    assert find_config(None, "quiet", root) == root / "ssdbench.toml"
    assert find_config(None, "ssdbench.config=lab/a.toml", root) == root / "lab/a.toml"
    assert find_config(None, "ssdbench.config=/etc/b.toml", root) == Path("/etc/b.toml")
    assert find_config(tmp_path / "c.toml", "ssdbench.config=/x", root) == tmp_path / "c.toml"
    assert kernel_cmdline_value("a=1 ssdbench.mode=kiosk ssdbench.mode=diagnose", "ssdbench.mode") == "diagnose"


def test_choose_drives_never_picks_protected_or_unconsented() -> None:
    config = parse_config({"plan": "quick", "destroy": ["S1", "S3"]})
    chosen, skipped = choose_drives(
        config, [("S1", "A", False), ("S2", "B", False), ("S3", "C", True)]
    )
    assert chosen == [0]
    assert skipped == [(1, "not named in `destroy` (no consent to erase it)"), (2, "protected")]
