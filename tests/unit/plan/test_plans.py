from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ssdbench.plan.plans import (
    PRESETS,
    PlanError,
    build_plan,
    load_plan,
    parse_plan,
    plan_from_json,
    preset,
)


def test_presets_load_and_say_what_they_run() -> None:
    names = {p: [r.name for r in preset(p).runs] for p in PRESETS}
    assert names == {
        "review": ["consistency-default", "consistency-op25", "trim"],
        "quick": ["consistency-default", "consistency-op25", "trim"],
        "trim": ["trim"],
        "diagnose": ["diagnose"],
        "erase": ["erase"],
        "grade": ["grade"],
        "intake": ["authenticity", "erase"],
        "wsat": ["wsat"],
        "hir": ["hir"],
        "iops": ["iops"],
        "throughput": ["throughput"],
        "latency": ["latency"],
        "speed": ["speed"],
        "hdd": ["surface", "erase"],
    }
    assert preset("hdd").destructive  # the scan reads only; the erase needs consent
    assert preset("hdd").params.erase_fallback == "overwrite"  # a disk with no firmware erase
    assert all(preset(p).destructive for p in ("iops", "throughput", "latency"))
    assert not preset("diagnose").destructive and preset("trim").destructive
    assert not preset("grade").destructive  # read-only: no consent
    assert preset("intake").destructive  # writes tags across the drive, then erases it
    assert preset("erase").destructive  # needs --destroy SERIAL like any erase


def test_quick_is_minutes_and_covers_the_whole_span() -> None:
    quick = preset("quick").params
    assert quick.torture_seconds == 60 and quick.trim_torture_seconds == 60
    assert quick.probe_bytes <= 256 * 2**20
    assert preset("review").params.torture_seconds == 2000


def test_effective_op_per_run() -> None:
    plan = preset("review")
    assert [plan.params_for(r).op_percent for r in plan.runs] == [0, 25, 0]


@pytest.mark.parametrize(("doc", "key"), [
    ({"name": "x", "runs": [{"kind": "consistency"}], "colour": 1}, "`colour`"),
    ({"name": "x", "runs": []}, "`runs`"),
    ({"name": "x", "runs": [{"kind": "fast"}]}, "`runs[0].kind`"),
    ({"name": "x", "runs": [{"kind": "trim", "op_percent": 10}]}, "`runs[0].op_percent`"),
    ({"name": "x", "runs": [{"kind": "consistency", "op_percent": 95}]}, "`runs[0].op_percent`"),
    ({"name": "x", "runs": [{"kind": "consistency", "speed": 1}]}, "`runs[0].speed`"),
    ({"name": "x", "runs": [{"kind": "trim"}, {"kind": "trim"}]}, "appears twice"),
    ({"name": "x", "runs": [{"kind": "trim"}, {"kind": "diagnose"}]}, "read-only"),
    ({"name": "x", "runs": [{"kind": "trim"}], "params": {"torture_seconds": "soon"}},
     "'torture_seconds'"),
    ({"name": "x", "runs": [{"kind": "trim"}], "params": {"turbo": 1}}, "`turbo`"),
    ({"runs": [{"kind": "trim"}]}, "`name`"),
])
def test_bad_plans_name_the_key(doc: dict[str, object], key: str) -> None:
    with pytest.raises(PlanError, match=key.replace("[", r"\[").replace("]", r"\]")):
        parse_plan(doc, "test.toml")


def test_plan_file_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[params]\ntorture_seconds = 5\n'
                    '[[runs]]\nkind = "consistency"\n[[runs]]\nkind = "trim"\n')
    plan = build_plan(str(path), sets=["probe_gib=0.01"], overrides={"erase_fallback": "discard"})
    assert [r.name for r in plan.runs] == ["consistency-default", "trim"]
    assert plan.params.torture_seconds == 5 and plan.params.probe_gib == 0.01
    assert plan.params.erase_fallback == "discard"
    with pytest.raises(PlanError, match="unknown plan"):
        load_plan("fastest")
    with pytest.raises(PlanError, match="cannot read"):
        load_plan(str(tmp_path / "none.toml"))
    (tmp_path / "bad.toml").write_text("name = ")
    with pytest.raises(PlanError, match="not valid TOML"):
        load_plan(str(tmp_path / "bad.toml"))


def test_journal_round_trip_keeps_effective_values() -> None:
    plan = build_plan("quick", sets=["steady_start_s=10", "torture_seconds=30"])
    again = plan_from_json(plan.to_json())
    assert again.params == plan.params and again.runs == plan.runs
    plain = build_plan("quick")
    assert plan_from_json(plain.to_json()).params == plain.params


def test_shipped_files_are_plain_toml() -> None:
    import ssdbench

    folder = Path(ssdbench.__file__).parent / "plans"
    assert sorted(p.stem for p in folder.glob("*.toml")) == sorted(PRESETS)
    for p in folder.glob("*.toml"):
        assert tomllib.loads(p.read_text())["name"] == p.stem
