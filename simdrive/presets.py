"""Drive personalities (presets) of the simulated SSD and their formula answers.

The measured known answers (cliff second, steady IOPS at 0% and 25% OP, TRIM probe ratios)
come from the offline twin (`simdrive.twin`), which runs the very same model; the formulas
here (docs/simdrive.md, research §2) are the second, looser check.
"""

from __future__ import annotations

import math

from simdrive.ftl import Personality

PRESETS: dict[str, Personality] = {
    p.name: p
    for p in (
        Personality(
            name="enterprise",
            description="S3700-like consistent drive: 42% spare, paced GC, narrow band",
            spare=0.42,
            pages_per_block=256,
            gc="credit",
            low=4,
            jitter=0.03,
            idle_reserve=0.06,
        ),
        Personality(
            name="consumer",
            description="client drive: 7% spare, sharp cliff, bursty GC, noisy steady state",
            spare=0.07,
            pages_per_block=64,
            gc="burst",
            low=4,
            burst_median=6.0,
            burst_sigma=1.3,
            burst_cap=400,
            jitter=0.15,
            idle_reserve=0.06,
        ),
        Personality(
            name="hostprio",
            description="SP610-like host-priority drive: full speed until the pool is empty, "
            "then multi-second GC bursts (zero-IOPS seconds); reads after TRIM return old data",
            spare=0.07,
            pages_per_block=256,
            gc="burst",
            low=1,
            burst_median=48.0,
            burst_sigma=0.0,
            burst_cap=48,
            jitter=0.02,
            idle_reserve=0.06,
            rzat=False,
        ),
        Personality(
            name="sandforce",
            description="SandForce-like drive: TRIM after incompressible torture mostly ignored",
            spare=0.07,
            pages_per_block=256,
            gc="credit",
            low=2,
            jitter=0.08,
            idle_reserve=0.015,
            idle_speedup=30.0,
            trim_eff=0.03,
        ),
        Personality(
            name="portable",
            description="DRAM-less client NVMe in a hot enclosure: a pseudo-SLC write cache "
            "(10% of the capacity at 3x speed after a sanitize) and thermal throttling "
            "(4x slower above 70 C until it cools below 60 C; thermal time constant 60 s)",
            spare=0.07,
            pages_per_block=64,
            gc="credit",
            low=4,
            jitter=0.05,
            idle_reserve=0.06,
            slc_fraction=0.10,
            slc_speedup=3.0,
            throttle_c=70.0,
            recover_c=60.0,
            ambient_c=35.0,
            full_load_c=85.0,
            thermal_tau_s=60.0,
            throttle_factor=4.0,
        ),
    )
}


def get(name: str) -> Personality:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None


# ---- formulas (research §2) ---------------------------------------------------------------


def lambert_w0(x: float) -> float:
    """Principal branch of Lambert W for x >= -1/e (Halley iterations)."""
    if x < -1.0 / math.e:
        raise ValueError("lambert_w0 needs x >= -1/e")
    if x == 0.0:
        return 0.0
    if x + 1.0 / math.e < 1e-15:
        return -1.0  # the branch point
    w = math.log1p(x) if x > -0.25 else -1.0 + math.sqrt(2.0 * (1.0 + math.e * x))
    for _ in range(100):
        ew = math.exp(w)
        f = w * ew - x
        if w == -1.0 or f == 0.0:
            return w
        wn = w - f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        if abs(wn - w) <= 1e-14 * (1.0 + abs(wn)):
            return wn
        w = wn
    return w


def victim_valid_fraction(alpha: float) -> float:
    """X0 solving X0 = exp(-alpha (1 - X0)): valid fraction of a cleaned block (FIFO/greedy)."""
    return -lambert_w0(-alpha * math.exp(-alpha)) / alpha


def wa_formula(alpha: float) -> float:
    """Write amplification of uniform 4K random overwrites, alpha = physical / used pages."""
    return 1.0 / (1.0 - victim_valid_fraction(alpha))


def steady_iops_formula(
    p: Personality, fob_iops: float, alpha: float
) -> float:
    """FOB / (WA + erase share): every host page costs WA programs plus its share of erases."""
    x0 = victim_valid_fraction(alpha)
    wa = 1.0 / (1.0 - x0)
    moves = wa - 1.0
    per_page = 1.0 + moves * p.move_cost + p.erase_cost / (p.pages_per_block * (1.0 - x0))
    return fob_iops / per_page


def alpha_for(p: Personality, size_bytes: int, op_fraction: float = 0.0) -> float:
    """Effective physical pages / pages in use when only (1 - op_fraction) of the LBAs are
    written. The GC reserve (`low` free blocks plus, on average, one block's worth of the
    two open frontiers) holds no data, so it is left out: it matters on small drives."""
    user = -(-size_bytes // 4096)
    blocks = math.ceil(user * (1.0 + p.spare) / p.pages_per_block)
    used = max(1, math.floor(user * (1.0 - op_fraction)))
    return (blocks - reserve_blocks(p)) * p.pages_per_block / used


def reserve_blocks(p: Personality) -> float:
    """Blocks the FTL keeps out of the data's reach: the free pool (about `low` + 0.5 for
    burst GC, `low` + 2 for credit GC, which starts two blocks early) and the two half-full
    open blocks (host and GC frontiers)."""
    return p.low + (3.0 if p.gc == "credit" else 1.5)


def cliff_seconds_formula(
    p: Personality, size_bytes: int, fob_iops: float, op_fraction: float = 0.0
) -> float:
    """Seconds of 4K random writes after a full fill before the spare runs out:
    (physical - used - reserve) / FOB, the reserve as in `reserve_blocks`."""
    user = -(-size_bytes // 4096)
    blocks = math.ceil(user * (1.0 + p.spare) / p.pages_per_block)
    used = max(1, math.floor(user * (1.0 - op_fraction)))
    reserve = reserve_blocks(p) * p.pages_per_block
    return max(0.0, (blocks * p.pages_per_block - used - reserve) / fob_iops)
