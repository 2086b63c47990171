"""The presets' expected answers: formulas (live) and the offline twin's figures.

`formula(preset, size, fob, op)` is computed; `twin(...)` runs the twin (seconds of CPU);
`describe_all()` is what `scripts/simdrive presets` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from simdrive import presets

REFERENCE_SIZE = 1_073_741_824  # the documented figures are at 1 GiB, FOB 4000
REFERENCE_FOB = 4000.0


@dataclass(frozen=True)
class Formula:
    """Research §2 answers for a preset at a size, FOB and extra-OP fraction."""

    alpha: float
    wa: float
    cliff_s: float
    steady_iops: float


def formula(preset: str, size: int = REFERENCE_SIZE, fob_iops: float = REFERENCE_FOB,
            op_fraction: float = 0.0) -> Formula:
    p = presets.get(preset)
    alpha = presets.alpha_for(p, size, op_fraction)
    return Formula(alpha, presets.wa_formula(alpha),
                   presets.cliff_seconds_formula(p, size, fob_iops, op_fraction),
                   presets.steady_iops_formula(p, fob_iops, alpha))


def describe_all(size: int = REFERENCE_SIZE, fob_iops: float = REFERENCE_FOB) -> str:
    lines = [f"# formula answers at size={size} fob_iops={fob_iops:g} "
             "(`simdrive twin` runs the model itself; docs/simdrive.md has the twin's figures)"]
    for name, p in presets.PRESETS.items():
        f0 = formula(name, size, fob_iops, 0.0)
        f25 = formula(name, size, fob_iops, 0.25)
        trim = "ineffective" if p.trim_eff < 0.5 else "effective"
        lines.append(
            f"{name}: {p.description}\n"
            f"  spare={p.spare:g} pages_per_block={p.pages_per_block} gc={p.gc} "
            f"trim_eff={p.trim_eff:g} read_after_trim={'zeros' if p.rzat else 'old data'}\n"
            f"  0% OP: cliff_s={f0.cliff_s:.1f} wa={f0.wa:.2f} steady_iops={f0.steady_iops:.0f}\n"
            f"  25% OP: cliff_s={f25.cliff_s:.1f} wa={f25.wa:.2f} "
            f"steady_iops={f25.steady_iops:.0f} ratio={f25.steady_iops / f0.steady_iops:.2f}\n"
            f"  TRIM verdict: {trim}")
    return "\n".join(lines)
