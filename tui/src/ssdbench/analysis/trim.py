"""TRIM verdict from the three sequential-write probes (SPEC "TRIM validation").

``recovery = (after_trim - after_torture) / (clean - after_torture)``;
no real degradation (after_torture >= 90% of clean) -> "inconclusive";
recovery >= 0.9 -> "effective"; >= 0.5 -> "partial"; else "ineffective".
A missing or non-positive probe -> "incomplete".
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


@dataclass(frozen=True)
class TrimVerdict:
    clean_mib_s: float | None
    after_torture_mib_s: float | None
    after_trim_mib_s: float | None
    degradation: float | None  # after_torture / clean
    recovery: float | None
    verdict: str  # one of VERDICTS
    reason: str  # one sentence a bench tester can read

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def trim_verdict(
    clean: float | None, after_torture: float | None, after_trim: float | None
) -> TrimVerdict:
    missing = [
        name
        for name, v in (("clean", clean), ("after_torture", after_torture),
                        ("after_trim", after_trim))
        if v is None or math.isnan(v)
    ]
    if missing:
        return TrimVerdict(clean, after_torture, after_trim, None, None, "incomplete",
                           "missing probe: " + ", ".join(missing))
    assert clean is not None and after_torture is not None and after_trim is not None
    if clean <= 0:
        return TrimVerdict(clean, after_torture, after_trim, None, None, "incomplete",
                           "the clean probe measured no throughput")
    degradation = after_torture / clean
    if after_torture >= DEGRADED_BELOW * clean - EPSILON * clean:
        return TrimVerdict(
            clean, after_torture, after_trim, degradation, None, "inconclusive",
            f"no real degradation: after torture {degradation:.0%} of clean (>= 90%)",
        )
    recovery = (after_trim - after_torture) / (clean - after_torture)
    if recovery >= EFFECTIVE_FROM - EPSILON:
        verdict = "effective"
    elif recovery >= PARTIAL_FROM - EPSILON:
        verdict = "partial"
    else:
        verdict = "ineffective"
    return TrimVerdict(
        clean, after_torture, after_trim, degradation, recovery, verdict,
        f"TRIM recovered {recovery:.2f} of the {1 - degradation:.0%} lost to the torture",
    )
