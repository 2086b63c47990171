"""TRIM verdict from the three sequential-write probes (SPEC "TRIM validation").

``recovery = (after_trim - after_torture) / (clean - after_torture)``;
no real degradation (after_torture >= 90% of clean) -> "inconclusive";
recovery >= 0.9 -> "effective"; >= 0.5 -> "partial"; else "ineffective".
A missing, zero, negative or infinite probe -> "incomplete".

With the probes' per-second series, each ratio gets a 99% interval (the delta method on the
three means' standard errors, from the per-second noise pooled over the probes) and a
verdict is given only where the interval clears its line; else "inconclusive: within the
probes' noise (±x%)". Odd probe sets are named in ``anomalies``: a clean probe slower than
after TRIM (suspect), after TRIM slower than after the torture, a stalled probe.

Idle time is not TRIM. Background garbage collection during an idle can free a probe's worth
of blocks on its own, so the TRIM run gives the after-torture probe the same idle as the
after-TRIM probe (the "settle" stage, docs/plans.md). ``basis`` says what the two later probes
had: "same-idle" (the recovery is TRIM's), "idle-after-trim-only" (a run from before the settle
stage: part of the recovery may be idle time's), "no-idle", or "unknown" (not recorded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ssdbench.analysis.levels import stall_mask

DEGRADED_BELOW = 0.90  # after_torture must fall below 90% of clean to judge TRIM
EFFECTIVE_FROM = 0.90
PARTIAL_FROM = 0.50
EPSILON = 1e-9  # boundaries are inclusive despite binary floating point

Z = 2.576  # the verdict's interval: 99% (Student's t below 30 degrees of freedom)
MIN_WHOLE_S = 3  # a probe needs 3 whole seconds for a noise estimate ...
MIN_BLOCKS_PER_S = 8  # ... of 8 blocks or more each
SUSPECT_RATIO = 1.25  # after TRIM more than 25% faster than clean: the clean probe is suspect
TRIM_PHASES = ("clean", "after_torture", "after_trim")
LABELS = {"clean": "clean", "after_torture": "after-torture", "after_trim": "after-TRIM"}

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
class ProbeNoise:
    """What a probe's per-second series says about its mean: how many seconds, the
    standard error of the mean, and its stall seconds."""

    seconds: int
    stderr: float  # pooled relative noise x the probe's mean / sqrt(seconds)
    stall_seconds: int = 0  # seconds at 0 (or below 1% of the probe's median)
    stall_start_s: int | None = None  # where the first stall second is

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _t995(df: int) -> float:
    """The two-sided 99% quantile of Student's t with ``df`` degrees of freedom (the normal
    2.576 beyond 30): few seconds make a wide interval, not a confident one."""
    table = ((1, 63.657), (2, 9.925), (3, 5.841), (4, 4.604), (5, 4.032), (6, 3.707),
             (7, 3.499), (8, 3.355), (9, 3.250), (10, 3.169), (12, 3.055), (15, 2.947),
             (20, 2.845), (25, 2.787), (30, 2.750))
    for limit, t in table:
        if df <= limit:
            return t
    return Z


def whole_seconds(series: Any, seconds: float | None) -> np.ndarray[Any, Any]:
    """A probe's whole seconds: its per-second MiB/s without the last, partial second (the
    probe's duration from probes.csv, else the last row) and without missing ones."""
    arr = np.asarray(series, dtype=np.float64)
    keep = math.floor(seconds) if seconds is not None and math.isfinite(seconds) else arr.size - 1
    arr = arr[: max(0, min(arr.size, keep))]
    return arr[~np.isnan(arr)]


def probes_noise(series: Mapping[str, Any], means: Mapping[str, float], *,
                 seconds: Mapping[str, float | None] | None = None,
                 block_bytes: int | None = None,
                 phases: tuple[str, ...] = TRIM_PHASES) -> tuple[dict[str, ProbeNoise], int, str]:
    """Each probe's noise from its whole seconds (:func:`whole_seconds`), the degrees of
    freedom behind it, and why there is none. The relative per-second noise is pooled over
    the three probes (one drive, one workload; stall seconds left out). Every probe must be
    measurable: ``MIN_WHOLE_S`` whole seconds, each of ``MIN_BLOCKS_PER_S`` blocks or more
    on average (a second of one 16-MiB write is 16 or 0 MiB/s: lumps, not noise); else
    ``({}, 0, why)`` and the verdict is on the means alone. ``phases``: the probes written
    so far (a probe deciding whether to go on, :func:`extend_probe`)."""
    out: dict[str, np.ndarray[Any, Any]] = {}
    for ph in phases:
        if ph not in series or ph not in means:
            return {}, 0, "no per-second series for every probe"
        arr = whole_seconds(series[ph], (seconds or {}).get(ph))
        if arr.size < MIN_WHOLE_S:
            return {}, 0, (f"the {LABELS[ph]} probe has {arr.size} whole second(s), fewer "
                           f"than {MIN_WHOLE_S}")
        if block_bytes and means[ph] * 2**20 < MIN_BLOCKS_PER_S * block_bytes:
            return {}, 0, (f"the {LABELS[ph]} probe wrote {means[ph] * 2**20 / block_bytes:.1f} "
                           f"blocks of {block_bytes / 2**20:g} MiB a second, fewer than "
                           f"{MIN_BLOCKS_PER_S}: its seconds are lumps, not noise")
        out[ph] = arr
    squares, df = 0.0, 0
    stalls: dict[str, tuple[int, int | None]] = {}
    for ph, arr in out.items():
        stall = stall_mask(arr, float(np.median(arr)))
        stalls[ph] = (int(stall.sum()), int(np.flatnonzero(stall)[0]) if stall.any() else None)
        kept = arr[~stall]
        if kept.size >= 2 and kept.mean() > 0:
            squares += float(((kept / kept.mean() - 1) ** 2).sum())
            df += int(kept.size) - 1
    if df == 0:
        return {}, 0, "no probe has two seconds with throughput"
    rel = math.sqrt(squares / df)
    return {ph: ProbeNoise(int(arr.size), rel * means[ph] / math.sqrt(arr.size), *stalls[ph])
            for ph, arr in out.items()}, df, ""


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
    degradation_interval: tuple[float, float] | None = None  # 99% interval (per-second noise)
    recovery_interval: tuple[float, float] | None = None
    anomalies: tuple[str, ...] = ()  # odd probe sets, named
    noise: dict[str, ProbeNoise] | None = None  # by phase, when the series were given
    # inconclusive only because an interval straddles a line: more seconds could answer
    # (a TRIM probe goes on while this holds, stages/probe.py)
    within_noise: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["degradation_interval"] = (list(self.degradation_interval)
                                     if self.degradation_interval else None)
        d["recovery_interval"] = list(self.recovery_interval) if self.recovery_interval else None
        d["anomalies"] = list(self.anomalies)
        d["noise"] = {k: v.to_dict() for k, v in self.noise.items()} if self.noise else None
        return d


def _interval(value: float, grads: list[float], errs: list[float],
              z: float) -> tuple[float, float]:
    """``value`` ± z x its standard error by the delta method (independent probes)."""
    se = math.sqrt(sum((g * e) ** 2 for g, e in zip(grads, errs, strict=True)))
    return value - z * se, value + z * se


def trim_verdict(
    clean: float | None, after_torture: float | None, after_trim: float | None, *,
    settle_s: float | None = None, trim_idle_s: float | None = None,
    series: Mapping[str, Any] | None = None,
    seconds: Mapping[str, float | None] | None = None, block_bytes: int | None = None,
) -> TrimVerdict:
    """The verdict of the three probes (MiB/s); ``settle_s`` and ``trim_idle_s`` are the
    idles before the after-torture and the after-TRIM probe (run.json "settle" / "trim");
    ``series``: each probe's per-second MiB/s by phase (probe-<phase>.csv), for the noise
    margin and the stalls; ``seconds``: each probe's duration (probes.csv), so its last,
    partial second is left out; ``block_bytes``: the probes' block size (run.json). A
    verdict is given only where the 99% interval of its ratio clears the threshold
    (docs/analysis.md "TRIM verdict")."""
    basis, idle_text = idle_basis(settle_s, trim_idle_s)
    values = dict(zip(TRIM_PHASES, (clean, after_torture, after_trim), strict=True))
    given = {ph: v for ph, v in values.items()
             if v is not None and math.isfinite(v) and v > 0}
    noise, df, why_not = probes_noise(series or {}, given, seconds=seconds,
                                      block_bytes=block_bytes)
    z = _t995(df)
    anomalies: list[str] = []

    def verdict_of(degradation: float | None, recovery: float | None, verdict: str,
                   reason: str, *, d_int: tuple[float, float] | None = None,
                   r_int: tuple[float, float] | None = None,
                   undecided: bool = False) -> TrimVerdict:
        return TrimVerdict(clean, after_torture, after_trim, degradation, recovery, verdict,
                           reason, basis, settle_s, trim_idle_s, d_int, r_int,
                           tuple(anomalies), noise or None, undecided)

    missing = [name for name, v in values.items() if v is None or math.isnan(v)]
    if missing:
        return verdict_of(None, None, "incomplete", "missing probe: " + ", ".join(missing))
    assert clean is not None and after_torture is not None and after_trim is not None
    bad = [name for name, v in values.items() if v is not None and (math.isinf(v) or v < 0)]
    if bad:
        anomalies.append("invalid probe value: " + ", ".join(bad))
        return verdict_of(None, None, "incomplete",
                          "invalid (negative or infinite) probe value: " + ", ".join(bad))
    zero = [name for name, v in values.items() if v == 0]
    if zero:
        anomalies.append("probe measured no throughput: " + ", ".join(zero))
        return verdict_of(None, None, "incomplete", "the " + ", ".join(
            LABELS[z] for z in zero) + " probe measured no throughput (stalled)")
    for ph, nz in noise.items():
        if nz.stall_seconds:
            anomalies.append(f"the {LABELS[ph]} probe stalled {nz.stall_seconds} s (first "
                             f"at {nz.stall_start_s} s of the probe)")
    known = all(ph in noise for ph in TRIM_PHASES)
    errs = [noise[ph].stderr if known else 0.0 for ph in TRIM_PHASES]
    c, t, a = clean, after_torture, after_trim
    degradation = t / c
    d_int = _interval(degradation, [-t / c**2, 1 / c, 0.0], errs, z) if known else None
    d_lo, d_hi = d_int or (degradation, degradation)
    margin = "" if known else (f" The verdict has no noise margin: {why_not}.")
    if a > SUSPECT_RATIO * c and (not known or a - z * errs[2] > c + z * errs[0]):
        anomalies.append(f"clean probe slower than after TRIM ({a / c:.2f}x)")
        return verdict_of(degradation, None, "inconclusive", (
            f"The clean probe ({c:,.1f} MiB/s) is slower than the after-TRIM probe "
            f"({a:,.1f} MiB/s, {a / c:.2f}x): the clean probe is suspect (the drive was "
            "not clean, or something else ran), so TRIM cannot be judged." + margin),
            d_int=d_int)
    if d_lo >= DEGRADED_BELOW - EPSILON:
        if basis == "same-idle":
            reason = (f"No real degradation: after the torture and a {settle_s:g}-s idle the "
                      f"probe wrote at {degradation:.1%} of its clean speed (>= 90%). The "
                      "drive's idle-time garbage collection recovers it, so TRIM cannot be "
                      "judged this way.")
        else:
            reason = (f"No real degradation: after the torture the probe wrote at "
                      f"{degradation:.1%} of its clean speed (>= 90%), so TRIM cannot be judged.")
        return verdict_of(degradation, None, "inconclusive", reason + margin, d_int=d_int)
    if d_hi >= DEGRADED_BELOW - EPSILON:
        return verdict_of(degradation, None, "inconclusive", (
            f"Inconclusive: within the probes' noise. After the torture the probe wrote at "
            f"{degradation:.1%} of its clean speed (99% interval {d_lo:.1%}–{d_hi:.1%}), "
            "which does not clear the 90% line, so whether the torture degraded the drive "
            "cannot be told."), d_int=d_int, undecided=True)
    recovery = (a - t) / (c - t)
    r_int = _interval(recovery, [-(a - t) / (c - t) ** 2, (a - c) / (c - t) ** 2,
                                 1 / (c - t)], errs, z) if known else None
    r_lo, r_hi = r_int or (recovery, recovery)
    half = (r_hi - r_lo) / 2
    if r_hi < 0:
        anomalies.append(f"after TRIM slower than after the torture ({a:,.1f} < {t:,.1f} MiB/s)")
    if r_lo >= EFFECTIVE_FROM - EPSILON:
        verdict = "effective"
    elif r_hi < EFFECTIVE_FROM - EPSILON and r_lo >= PARTIAL_FROM - EPSILON:
        verdict = "partial"
    elif r_hi < PARTIAL_FROM - EPSILON:
        verdict = "ineffective"
    else:
        return verdict_of(degradation, recovery, "inconclusive", (
            f"Inconclusive: within the probes' noise (±{half:.0%}). TRIM won back "
            f"{recovery:.0%} of what the torture cost (99% interval {r_lo:.0%}–{r_hi:.0%}), "
            "which straddles a verdict's line (50% or 90%)." + _stall_text(anomalies)),
            d_int=d_int, r_int=r_int, undecided=True)
    if r_hi < 0:
        won = (f"after TRIM the probe was slower than after the torture ({a:,.1f} against "
               f"{t:,.1f} MiB/s): TRIM won back nothing")
    else:
        won = f"TRIM won back {recovery:.0%} of what the torture cost"
    within = f" (99% interval {r_lo:.0%}–{r_hi:.0%})" if r_int else ""
    return verdict_of(
        degradation, recovery, verdict,
        f"After the torture the probe wrote at {degradation:.1%} of its clean speed, after "
        f"TRIM at {a / c:.1%}: {won}{within}. {idle_text}{margin}{_stall_text(anomalies)}",
        d_int=d_int, r_int=r_int)


def _stall_text(anomalies: list[str]) -> str:
    stalls = [x for x in anomalies if "stalled" in x]
    return (" Stalls: " + "; ".join(stalls) + ".") if stalls else ""


# --- A probe that runs until it can answer (docs/analysis.md "TRIM verdict", docs/plans.md) --

CLEAN_PRECISION = 0.015  # the clean probe goes on until its mean's 99% interval is ±1.5%
EXTEND_STOPS = ("answered", "cap", "no-margin", "no-room")


def extend_probe(phase: str, means: Mapping[str, float], series: Mapping[str, Any], *,
                 seconds: Mapping[str, float | None] | None = None,
                 block_bytes: int | None = None) -> tuple[bool, str]:
    """Whether the probe of ``phase``, just written (with its extensions so far), should go
    on for another chunk, and why (a sentence for run.json and the report). ``means``,
    ``series``, ``seconds``: what the probes written so far measured (``phase`` and those
    before it), as for :func:`trim_verdict`.

    * **clean**: no verdict yet; it goes on while the 99% interval of its own mean is wider
      than ±``CLEAN_PRECISION`` (the recovery's interval is about twice the clean probe's
      relative one at a 50% degradation, and the clean probe cannot be written again).
    * **after_torture**: goes on while the degradation's interval straddles its 90% line.
    * **after_trim**: goes on while the verdict is inconclusive only because its interval
      straddles a line (:attr:`TrimVerdict.within_noise`).

    A probe without a noise estimate (too few seconds or blocks: the verdict is on the means)
    does not go on: its verdict is the means', whatever its length (docs/analysis.md)."""
    if phase not in TRIM_PHASES:
        raise ValueError(f"unknown probe phase {phase!r}")
    done = TRIM_PHASES[: TRIM_PHASES.index(phase) + 1]
    given = {ph: v for ph in done if (v := means.get(ph)) is not None
             and math.isfinite(v) and v > 0}
    if len(given) < len(done):
        return False, "no-margin: a probe measured no throughput"
    noise, df, why_not = probes_noise(series, given, seconds=seconds, block_bytes=block_bytes,
                                      phases=done)
    if not noise:
        return False, f"no-margin: {why_not}"
    z = _t995(df)
    if phase == "clean":
        half = z * noise["clean"].stderr / given["clean"]
        if half > CLEAN_PRECISION:
            return True, (f"the clean probe's mean is known to ±{half:.1%} (99%), wider than "
                          f"±{CLEAN_PRECISION:.1%}")
        return False, f"answered: the clean probe's mean is known to ±{half:.1%} (99%)"
    if phase == "after_torture":
        c, t = given["clean"], given["after_torture"]
        lo, hi = _interval(t / c, [-t / c**2, 1 / c],
                           [noise["clean"].stderr, noise["after_torture"].stderr], z)
        if lo < DEGRADED_BELOW - EPSILON <= hi:
            return True, (f"the degradation's 99% interval ({lo:.1%}–{hi:.1%}) straddles "
                          "the 90% line")
        return False, (f"answered: the degradation's 99% interval ({lo:.1%}–{hi:.1%}) "
                       "clears the 90% line")
    verdict = trim_verdict(given["clean"], given["after_torture"], given["after_trim"],
                           series=series, seconds=seconds, block_bytes=block_bytes)
    if verdict.within_noise:
        return True, "the verdict's interval straddles a line: " + verdict.reason
    return False, f"answered: {verdict.verdict}"
