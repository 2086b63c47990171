from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.stages.params import ParamError, RunParams, build_params, parse_set


def test_defaults_are_the_review_values() -> None:
    p = RunParams()
    assert (p.torture_seconds, p.trim_torture_seconds, p.fill_passes, p.probe_gib) == (
        2000, 3600, 1, 1.0)
    assert (p.probe_preset, p.trim_idle_seconds) == ("as-ssd", 60)  # AS-SSD's sequential write
    assert p.effective_steady_start_s == 1400
    assert p.as_record()["steady_start_s"] == 1400
    assert RunParams(torture_seconds=600).effective_steady_start_s == 420


def test_set_values_are_converted() -> None:
    p = build_params(sets=["torture_seconds=30", "probe_gib=0.5", "ioengine=io_uring",
                           "block_size_fill=1m"])
    assert p.torture_seconds == 30 and p.probe_gib == 0.5 and p.ioengine == "io_uring"
    assert p.probe_bytes == 2**29


@pytest.mark.parametrize("item, words", [
    ("torture_seconds=abc", ["'torture_seconds'", "whole number"]),
    ("torture_seconds=0", ["'torture_seconds'", "≥ 1"]),
    ("ioengine=posixaio", ["'ioengine'", "libaio or io_uring"]),
    ("block_size_fill=3x", ["'block_size_fill'", "4k"]),
    ("erase_fallback=maybe", ["'erase_fallback'", "fail, discard or overwrite"]),
    ("nonsense=1", ["`nonsense`: unknown key", "torture_seconds"]),
    ("op_percent=95", ["'op_percent'", "0 to 90"]),
    ("probe_gib=-1", ["'probe_gib'"]),
    ("probe_gib=inf", ["'probe_gib'", "> 0"]),  # accepted once, failed after the erase
    ("probe_gib=nan", ["'probe_gib'", "> 0"]),
    ("probe_preset=hdtach", ["'probe_preset'", "as-ssd or fill"]),
    ("trim_idle_seconds=-5", ["'trim_idle_seconds'", "≥ 0"]),
    ("trim_idle_seconds=1.5", ["'trim_idle_seconds'", "whole number"]),
    ("steady_round_s=0", ["'steady_round_s'", "≥ 1"]),
    ("steady_round_s=7200", ["'steady_round_s'", "1 to 3600"]),
])
def test_bad_values_name_the_key_and_the_form(item: str, words: list[str]) -> None:
    with pytest.raises(ParamError) as info:
        build_params(sets=[item])
    for word in words:
        assert word in str(info.value)


def test_malformed_set() -> None:
    with pytest.raises(ParamError, match="key=value"):
        parse_set(["torture_seconds"])


def test_config_file_then_set(tmp_path: Path) -> None:
    cfg = tmp_path / "plan.toml"
    cfg.write_text('torture_seconds = 100\n[params]\nfill_passes = 2\nioengine = "io_uring"\n')
    p = build_params(cfg, ["torture_seconds=50"])
    assert (p.torture_seconds, p.fill_passes, p.ioengine) == (50, 2, "io_uring")
    cfg.write_text("torture_seconds = 'x'\n")
    with pytest.raises(ParamError, match=r"plan\.toml: key 'torture_seconds'"):
        build_params(cfg)
    cfg.write_text("torture_seconds = \n")
    with pytest.raises(ParamError, match="not valid TOML"):
        build_params(cfg)


def test_steady_start_must_be_inside_the_torture() -> None:
    with pytest.raises(ParamError, match="steady_start_s"):
        build_params(sets=["torture_seconds=100", "steady_start_s=200"])
