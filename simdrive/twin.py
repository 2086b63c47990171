"""The offline twin: the very FTL of the simulated drive on a virtual clock, no I/O.

It replays what ssdbench does to a drive (sanitize, sequential fill, QD32 4 KiB uniform random
writes, sequential TRIM probes in disjoint windows, a whole-span TRIM and an idle wait) with
a saturated queue (each request arrives when the previous one completes, as at QD32) and
seeded uniform random LBAs, and reads the answers off the per-second bins. Same model, same
costs: its curves are what the served drive produces, up to the random draws and the host's
idle gaps between stages.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from simdrive import presets
from simdrive.ftl import F_HOST_PAGES, F_HOST_WRITES, FTL, PAGE, Personality

T0 = 1_000_000.0  # virtual epoch of the twin's clock (any whole second)
FILL_BLOCK = 128 * 1024
PROBE_BLOCK = 16 * 1024 * 1024
CLIFF_FRACTION = 0.8  # cliff: first second whose 3-s mean < 0.8 x FOB


@dataclass(frozen=True)
class TortureRun:
    """A consistency run on the twin: fill, then `seconds` of 4K random writes."""

    preset: str
    size: int
    fob_iops: float
    op_fraction: float
    span_bytes: int
    fill_seconds: float
    iops: tuple[int, ...]  # host writes completed per torture second
    wa: float  # NAND page programs / host pages during the torture
    zero_seconds: int
    longest_stall: int
    fill_mib_s: tuple[float, ...] = ()  # host MiB/s per second of the fill (from its start)
    # the model's events ("slc_full", "throttle", "unthrottle", ...) with "at_s": seconds
    # from the fill's start (stage "fill") or from the torture's start (stage "torture")
    events: tuple[dict[str, object], ...] = ()

    @property
    def cliff_s(self) -> int | None:
        """First torture second whose 3-s mean is below 0.8 x FOB (None: no cliff)."""
        return cliff_second(self.iops, self.fob_iops)

    def steady(self, last_s: int = 60) -> tuple[float, float]:
        """(mean, sd) of the last `last_s` seconds."""
        tail = self.iops[-last_s:]
        return statistics.fmean(tail), statistics.pstdev(tail)


def cliff_second(iops: tuple[int, ...] | list[int], fob: float) -> int | None:
    for i in range(len(iops)):
        window = iops[i:i + 3]
        if len(window) == 3 and sum(window) / 3.0 < CLIFF_FRACTION * fob:
            return i
    return None


def _personality(preset: str | Personality) -> Personality:
    return preset if isinstance(preset, Personality) else presets.get(preset)


def _span(size: int, op_fraction: float) -> int:
    span = math.floor(size * (1.0 - op_fraction))
    return span - span % PAGE


def _sequential(ftl: FTL, t: float, offset: int, length: int, block: int) -> float:
    end = offset + length
    while offset < end:
        n = min(block, end - offset)
        t = ftl.write(t, offset, n)
        offset += n
    return t


def _fill_rate(ftl: FTL, t0: float, t1: float) -> list[float]:
    return [ftl.bins.get(s, [0.0] * (F_HOST_PAGES + 1))[F_HOST_PAGES] * PAGE / 2**20
            for s in range(math.floor(t0), math.ceil(t1))]


def _staged(events: list[dict[str, object]], fill_t0: float,
            torture_t0: float) -> tuple[dict[str, object], ...]:
    out = []
    for e in events:
        t = float(e.get("time", 0.0))  # type: ignore[arg-type]
        stage, t0 = ("fill", fill_t0) if t < torture_t0 else ("torture", torture_t0)
        out.append({**e, "stage": stage, "at_s": t - t0})
    return tuple(out)


def _per_second(ftl: FTL, t0: float, t1: float) -> list[int]:
    return [int(ftl.bins.get(s, [0.0] * (F_HOST_WRITES + 1))[F_HOST_WRITES])
            for s in range(math.floor(t0), math.floor(t1))]


def torture(
    preset: str | Personality, size: int, *, fob_iops: float = 4000.0, op_fraction: float = 0.0,
    seconds: float = 240.0, seed: int = 1,
) -> TortureRun:
    """Sanitized drive, sequential fill of the span (1 - op_fraction of the LBAs), then
    `seconds` of uniform 4 KiB random writes over the span at a saturated queue."""
    ftl = FTL(_personality(preset), size, fob_iops, seed)
    span = _span(size, op_fraction)
    t = _sequential(ftl, T0, 0, span, FILL_BLOCK)
    fill_s = t - T0
    t_start = float(math.ceil(t))  # the torture starts on a whole second, the drive idle
    host0, nand0 = ftl.totals.host_pages, ftl.totals.nand_pages
    rng = random.Random(seed * 7919 + 1)
    pages = span // PAGE
    t = t_start
    t_end = t_start + seconds
    while t < t_end:
        t = ftl.write(t, rng.randrange(pages) * PAGE, PAGE)
    iops = _per_second(ftl, t_start, t_end)
    host = ftl.totals.host_pages - host0
    zero = [i for i, n in enumerate(iops) if n == 0]
    longest = run = 0
    for n in iops:
        run = run + 1 if n == 0 else 0
        longest = max(longest, run)
    wa = (ftl.totals.nand_pages - nand0) / host if host else 0.0
    return TortureRun(_personality(preset).name, size, float(fob_iops), op_fraction, span,
                      fill_s, tuple(iops), wa, len(zero), longest,
                      tuple(_fill_rate(ftl, T0, T0 + fill_s)),
                      _staged(ftl.events, T0, t_start))


@dataclass(frozen=True)
class TrimRun:
    """A TRIM run on the twin: MB/s of the three probes (AS-SSD-like 16 MiB sequential)."""

    preset: str
    size: int
    probe_bytes: int
    clean_mbs: float
    after_torture_mbs: float
    after_trim_mbs: float
    free_blocks_before_probe: tuple[int, int, int]

    @property
    def scaled(self) -> tuple[float, float, float]:
        """The three probes scaled to clean = 315 (the SandForce review's table)."""
        k = 315.0 / self.clean_mbs
        return 315.0, self.after_torture_mbs * k, self.after_trim_mbs * k


def trim_run(
    preset: str | Personality, size: int, *, fob_iops: float = 4000.0,
    probe_bytes: int | None = None, torture_s: float = 60.0, gap_s: float = 1.0,
    idle_s: float = 10.0, seed: int = 1, settle_s: float | None = None,
) -> TrimRun:
    """ssdbench's TRIM run (stages/plans.py): sanitize, probe clean (window 0), fill,
    torture, the settle idle (`settle_s`, by default `idle_s`: ssdbench idles
    trim_idle_seconds there too), probe after_torture (window 1), TRIM of the span, `idle_s`
    idle, probe after_trim (window 2); `gap_s` between the other stages. A probe is
    min(probe_bytes, span/3), whole 16 MiB blocks when it is that large."""
    ftl = FTL(_personality(preset), size, fob_iops, seed)
    span = _span(size, 0.0)
    probe = min(probe_bytes or span // 3, span // 3)
    probe -= probe % PAGE
    block = min(PROBE_BLOCK, probe)
    probe -= probe % block
    free: list[int] = []

    def run_probe(t: float, window: int) -> tuple[float, float]:
        ftl.idle(t)
        free.append(ftl.free_blocks)
        start = t
        t = _sequential(ftl, t, window * probe, probe, block)
        return t, probe / (t - start) / 1e6

    t, clean = run_probe(T0, 0)
    t = _sequential(ftl, t + 1.0, 0, span, FILL_BLOCK)
    rng = random.Random(seed * 7919 + 1)
    pages = span // PAGE
    t_end = t + 1.0 + torture_s
    t += 1.0
    while t < t_end:
        t = ftl.write(t, rng.randrange(pages) * PAGE, PAGE)
    t, tortured = run_probe(t + gap_s + (idle_s if settle_s is None else settle_s), 1)
    t, _, _ = ftl.trim(t + gap_s, 0, span)
    t, after = run_probe(t + idle_s, 2)
    return TrimRun(_personality(preset).name, size, probe, clean, tortured, after,
                   (free[0], free[1], free[2]))


def describe_run(preset: str, size: int, *, fob_iops: float, op_fraction: float,
                 seconds: float, seed: int) -> str:
    p = presets.get(preset)
    run = torture(preset, size, fob_iops=fob_iops, op_fraction=op_fraction, seconds=seconds,
                  seed=seed)
    mean, sd = run.steady(min(60, max(1, int(seconds) // 4)))
    alpha = presets.alpha_for(p, size, op_fraction)
    lines = [
        f"preset={preset} size={size} fob_iops={fob_iops:g} op={op_fraction * 100:g}% "
        f"span={run.span_bytes}",
        f"fill_seconds={run.fill_seconds:.1f}",
        f"cliff_s={run.cliff_s} formula_cliff_s="
        f"{presets.cliff_seconds_formula(p, size, fob_iops, op_fraction):.1f}",
        f"steady_iops={mean:.0f} steady_sd={sd:.0f} (last {min(60, max(1, int(seconds) // 4))} s)"
        f" formula_steady_iops={presets.steady_iops_formula(p, fob_iops, alpha):.0f}",
        f"wa={run.wa:.2f} formula_wa={presets.wa_formula(alpha):.2f} alpha={alpha:.3f}",
        f"zero_seconds={run.zero_seconds} longest_stall_s={run.longest_stall}",
    ]
    return "\n".join(lines)
