"""TRIM verdict: the seed example, the boundaries, missing probes."""

from __future__ import annotations

import math

import pytest

from ssdbench.analysis import trim_verdict


def test_seed_example_intel_ssd_530_is_ineffective():
    v = trim_verdict(315.1, 183.3, 193.3)
    assert v.recovery == pytest.approx(0.0759, abs=1e-4)
    assert round(v.recovery or 0, 2) == 0.08
    assert v.verdict == "ineffective"
    assert v.degradation == pytest.approx(183.3 / 315.1)


@pytest.mark.parametrize(
    ("clean", "after_torture", "after_trim", "verdict"),
    [
        (200.0, 180.0, 100.0, "inconclusive"),  # exactly 90% of clean: no real degradation
        (200.0, 179.9, 179.9, "ineffective"),  # just below 90%: judged
        (200.0, 250.0, 100.0, "inconclusive"),  # faster after torture
        (200.0, 100.0, 190.0, "effective"),  # recovery exactly 0.9
        (200.0, 100.0, 189.9, "partial"),
        (200.0, 100.0, 150.0, "partial"),  # recovery exactly 0.5
        (200.0, 100.0, 149.9, "ineffective"),
        (200.0, 100.0, 240.0, "effective"),  # faster than clean after TRIM
        (200.0, 100.0, 50.0, "ineffective"),  # slower than after torture
        (315.1, 183.3, 302.12, "effective"),  # 0.9 on values with binary rounding
    ],
)
def test_verdict_boundaries(clean, after_torture, after_trim, verdict):
    assert trim_verdict(clean, after_torture, after_trim).verdict == verdict


def test_recovery_exact_values():
    assert trim_verdict(200.0, 100.0, 190.0).recovery == pytest.approx(0.9)
    assert trim_verdict(200.0, 100.0, 150.0).recovery == pytest.approx(0.5)
    assert trim_verdict(200.0, 180.0, 100.0).recovery is None  # inconclusive: not computed


@pytest.mark.parametrize(
    "probes",
    [(None, 100.0, 100.0), (200.0, None, 100.0), (200.0, 100.0, None),
     (math.nan, 100.0, 100.0), (0.0, 0.0, 0.0)],
)
def test_missing_probe_is_incomplete(probes):
    v = trim_verdict(*probes)
    assert v.verdict == "incomplete"
    assert v.recovery is None
    assert v.reason


def test_to_dict():
    d = trim_verdict(315.1, 183.3, 193.3).to_dict()
    assert d["verdict"] == "ineffective" and set(d) >= {"clean_mib_s", "recovery"}


def test_same_idle_before_both_probes_credits_trim():
    """Both later probes followed the same idle: the recovery is TRIM's (issue #20 item 3)."""
    v = trim_verdict(200.0, 100.0, 195.0, settle_s=60.0, trim_idle_s=60.0)
    assert v.verdict == "effective" and v.basis == "same-idle"
    assert "same 60-s idle" in v.reason and "TRIM's" in v.reason


def test_idle_after_trim_only_says_idle_may_be_the_cause():
    """An old run (no idle before the after-torture probe): an ignored TRIM plus 60 s of
    background GC can read "effective"; the verdict says which effect it cannot tell apart."""
    v = trim_verdict(200.0, 100.0, 195.0, settle_s=None, trim_idle_s=60.0)
    assert v.verdict == "effective" and v.basis == "idle-after-trim-only"
    assert "idle" in v.reason and "may" in v.reason
    assert trim_verdict(200.0, 100.0, 195.0).basis == "unknown"


def test_recovered_by_idle_alone_is_inconclusive_and_says_so():
    v = trim_verdict(200.0, 190.0, 199.0, settle_s=60.0, trim_idle_s=60.0)
    assert v.verdict == "inconclusive"
    assert "60-s idle" in v.reason and "garbage collection" in v.reason


def test_reason_reads_in_percent_of_clean():
    v = trim_verdict(200.0, 72.0, 198.0, settle_s=10.0, trim_idle_s=10.0)
    assert "36.0% of its clean speed" in v.reason and "99.0%" in v.reason
    assert v.settle_s == 10.0 and v.trim_idle_s == 10.0
    assert v.to_dict()["basis"] == "same-idle"
