"""The erase plan: a preset of one "erase" run, its stage, and the kiosk's `plan = "erase"`
with the record's people and lab key as [params]."""

from __future__ import annotations

import tomllib

from ssdbench.kiosk.config import parse_config
from ssdbench.plan.plans import build_plan, preset
from ssdbench.record.stage import CertifiedEraseStage
from ssdbench.stages.plans import stages_for


def test_erase_preset_is_one_destructive_erase_run() -> None:
    plan = preset("erase")
    assert [r.kind for r in plan.runs] == ["erase"] and plan.destructive
    stages = stages_for("erase")
    assert [type(s) for s in stages] == [CertifiedEraseStage]  # no fill, no torture


def test_kiosk_erase_plan_takes_people_and_key_as_params() -> None:
    cfg = parse_config(tomllib.loads('''
plan = "erase"
select = ["serial:S1"]
destroy = ["S1"]
[params]
operator = "A. Tester"
organisation = "Lab"
customer = "ACME"
asset_tag = "INV-1"
record_key = "/media/key/lab-key.pem"
erase_fallback = "fail"
'''))
    plan = build_plan(cfg.plan).with_params(dict(cfg.params), source="kiosk [params]")
    p = plan.params
    assert (p.operator, p.organisation, p.customer, p.asset_tag, p.record_key) == (
        "A. Tester", "Lab", "ACME", "INV-1", "/media/key/lab-key.pem")
