"""TRIM verdict from the three sequential-write probes (SPEC "TRIM validation").

``recovery = (after_trim - after_torture) / (clean - after_torture)``;
no real degradation (after_torture >= 90% of clean) -> "inconclusive";
recovery >= 0.9 -> "effective"; >= 0.5 -> "partial"; else "ineffective".
A missing or non-positive probe -> "incomplete".

Idle time is not TRIM. Background garbage collection during an idle can free a probe's worth
of blocks on its own, so the TRIM run gives the after-torture probe the same idle as the
after-TRIM probe (the "settle" stage, docs/plans.md). ``basis`` says what the two later probes
had: "same-idle" (the recovery is TRIM's), "idle-after-trim-only" (a run from before the settle
stage: part of the recovery may be idle time's), "no-idle", or "unknown" (not recorded).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

DEGRADED_BELOW = 0.90  # after_torture must fall below 90% of clean to judge TRIM
EFFECTIVE_FROM = 0.90
PARTIAL_FROM = 0.50
EPSILON = 1e-9  # boundaries are inclusive despite binary floating point

VERDICTS = ("effective", "partial", "ineffective", "inconclusive", "incomplete")
BASES = ("same-idle", "idle-after-trim-only", "no-idle", "unknown")


def idle_basis(settle_s: float | None, trim_idle_s: float | None) -> tuple[str, str]:
    """(basis, the sentence the verdict adds about idle time)."""
    settle = settle_s or 0.0
    after = trim_idle_s or 0.0
    if trim_idle_s is None:
        return "unknown", "The idle times of this run are not recorded."
    if settle_s is not None and settle == after:
        if after == 0:
            return "no-idle", "Neither later probe followed an idle."
        return "same-idle", (f"Both later probes followed the same {after:g}-s idle, so the "
                             "difference between them is TRIM's, not idle time's.")
    if settle_s is None or settle == 0:
        return "idle-after-trim-only", (
            f"Only the after-TRIM probe followed an idle ({after:g} s): background garbage "
            "collection during it may account for part of the recovery.")
    return "unknown", (f"The probes followed different idles ({settle:g} s after the torture, "
                       f"{after:g} s after the TRIM).")


@dataclass(frozen=True)
class TrimVerdict:
    clean_mib_s: float | None
    after_torture_mib_s: float | None
    after_trim_mib_s: float | None
    degradation: float | None  # after_torture / clean
    recovery: float | None
    verdict: str  # one of VERDICTS
    reason: str  # sentences a bench tester can read
    basis: str = "unknown"  # one of BASES: which idles the two later probes followed
    settle_s: float | None = None  # idle before the after-torture probe
    trim_idle_s: float | None = None  # idle between the TRIM and the after-TRIM probe

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def trim_verdict(
    clean: float | None, after_torture: float | None, after_trim: float | None, *,
    settle_s: float | None = None, trim_idle_s: float | None = None,
) -> TrimVerdict:
    """The verdict of the three probes (MiB/s); ``settle_s`` and ``trim_idle_s`` are the
    idles before the after-torture and the after-TRIM probe (run.json "settle" / "trim")."""
    basis, idle_text = idle_basis(settle_s, trim_idle_s)

    def verdict_of(degradation: float | None, recovery: float | None, verdict: str,
                   reason: str) -> TrimVerdict:
        return TrimVerdict(clean, after_torture, after_trim, degradation, recovery, verdict,
                           reason, basis, settle_s, trim_idle_s)

    missing = [
        name
        for name, v in (("clean", clean), ("after_torture", after_torture),
                        ("after_trim", after_trim))
        if v is None or math.isnan(v)
    ]
    if missing:
        return verdict_of(None, None, "incomplete", "missing probe: " + ", ".join(missing))
    assert clean is not None and after_torture is not None and after_trim is not None
    if clean <= 0:
        return verdict_of(None, None, "incomplete", "the clean probe measured no throughput")
    degradation = after_torture / clean
    if after_torture >= DEGRADED_BELOW * clean - EPSILON * clean:
        if basis == "same-idle":
            reason = (f"No real degradation: after the torture and a {settle_s:g}-s idle the "
                      f"probe wrote at {degradation:.0%} of its clean speed (>= 90%). The "
                      "drive's idle-time garbage collection recovers it, so TRIM cannot be "
                      "judged this way.")
        else:
            reason = (f"No real degradation: after the torture the probe wrote at "
                      f"{degradation:.0%} of its clean speed (>= 90%), so TRIM cannot be judged.")
        return verdict_of(degradation, None, "inconclusive", reason)
    recovery = (after_trim - after_torture) / (clean - after_torture)
    if recovery >= EFFECTIVE_FROM - EPSILON:
        verdict = "effective"
    elif recovery >= PARTIAL_FROM - EPSILON:
        verdict = "partial"
    else:
        verdict = "ineffective"
    return verdict_of(
        degradation, recovery, verdict,
        f"After the torture the probe wrote at {degradation:.0%} of its clean speed, after "
        f"TRIM at {after_trim / clean:.0%}: TRIM won back {recovery:.0%} of what the torture "
        f"cost. {idle_text}",
    )
