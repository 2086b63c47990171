"""The kiosk config's speed plan: read-only (no `destroy`) unless speed_writes, and the
lab's class table ([speed.class."MODEL REGEX"]) reaching the plan's parameters."""

from __future__ import annotations

import tomllib

import pytest

from ssdbench.kiosk.config import ConfigError, parse_config
from ssdbench.plan.plans import preset

TABLE = '''
[speed.class."Samsung SSD 870 EVO.*"]
seq1m_q8t1_read = 560
seq1m_q1t1_read = 540
rnd4k_q32t16_read = 390
rnd4k_q1t1_read = 45
'''


def test_speed_plan_needs_no_consent_and_carries_the_class_table() -> None:
    config = parse_config(tomllib.loads('plan = "speed"\n' + TABLE))
    assert not config.destructive
    assert config.consents("ANY-SERIAL")
    plan = preset("speed").with_params(dict(config.params), source="kiosk [params]")
    (klass,) = plan.params.speed_classes
    assert klass.pattern == "Samsung SSD 870 EVO.*"
    assert klass.reference("rnd4k_q1t1_read") == 45
    assert not plan.destructive


def test_speed_writes_need_destroy() -> None:
    text = 'plan = "speed"\n[params]\nspeed_writes = true\n'
    with pytest.raises(ConfigError, match="destroy"):
        parse_config(tomllib.loads(text))
    config = parse_config(tomllib.loads(
        'plan = "speed"\ndestroy = ["S1"]\n[params]\nspeed_writes = true\n'))
    assert config.destructive
    assert config.consents("S1") and not config.consents("S2")


@pytest.mark.parametrize(("text", "fragment"), [
    ('plan = "speed"\n[speed.class."A.*"]\nseq1m_q8t1_read = 1\n', "missing"),
    ('plan = "speed"\n[speed]\nclasses = 1\n', "speed.class"),
    ('plan = "speed"\n[speed.class."(["]\nseq1m_q8t1_read = 1\n', "regular expression"),
])
def test_bad_class_table_names_the_key(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match="speed") as err:
        parse_config(tomllib.loads(text))
    assert fragment in str(err.value)
