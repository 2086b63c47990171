"""The speed plan's corners and the lab's class table: what the figures are compared with.

CrystalDiskMark's four default corners (sequential 1 MiB at QD8 and QD1, random 4 KiB at
QD32 × 16 threads and QD1). The lab keeps a class table in its config (docs/plans.md
"Speed")::

    [speed.class."Samsung SSD 870 EVO.*"]   # a regular expression, the whole model
    seq1m_q8t1_read = 560                   # MB/s (10^6 bytes a second, CrystalDiskMark's)
    seq1m_q1t1_read = 540
    rnd4k_q32t16_read = 390
    rnd4k_q1t1_read = 45
    seq1m_q8t1_write = 530                  # writes: optional

The first class whose pattern matches the drive's whole model (case-insensitive) is its
class. Pure: no I/O, nothing of the engine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_CLASSES = 200
MAX_MODEL_CHARS = 200  # a drive's model is untrusted text; longer ones are not matched


@dataclass(frozen=True)
class Corner:
    key: str  # seq1m_q8t1
    label: str  # SEQ1M Q8T1 (CrystalDiskMark's name)
    block_size: str
    sequential: bool
    iodepth: int
    numjobs: int


CORNERS = (
    Corner("seq1m_q8t1", "SEQ1M Q8T1", "1m", True, 8, 1),
    Corner("seq1m_q1t1", "SEQ1M Q1T1", "1m", True, 1, 1),
    Corner("rnd4k_q32t16", "RND4K Q32T16", "4k", False, 32, 16),
    Corner("rnd4k_q1t1", "RND4K Q1T1", "4k", False, 1, 1),
)
DIRECTIONS = ("read", "write")
FIGURES = tuple(f"{c.key}_{d}" for d in DIRECTIONS for c in CORNERS)
READ_FIGURES = FIGURES[:len(CORNERS)]


class SpeedClassError(ValueError):
    """A class table that is not acceptable; the message names the key."""


@dataclass(frozen=True)
class SpeedClass:
    pattern: str  # a regular expression matched against the whole model
    figures: tuple[tuple[str, float], ...]  # (figure, MB/s); the four reads always

    def reference(self, figure: str) -> float | None:
        return dict(self.figures).get(figure)

    def matches(self, model: str) -> bool:
        if len(model) > MAX_MODEL_CHARS:
            return False
        return re.fullmatch(self.pattern, model.strip(), re.IGNORECASE) is not None


def parse_classes(table: object, source: str) -> tuple[SpeedClass, ...]:
    """``{pattern: {figure: MB/s}}`` (the TOML table ``[speed.class."PATTERN"]``, or
    run.json's record of it) → the classes in order; SpeedClassError naming the key."""
    if isinstance(table, tuple) and all(isinstance(c, SpeedClass) for c in table):
        return table
    if not isinstance(table, Mapping):
        raise SpeedClassError(f"{source}: `speed.class`: expected tables like "
                              f'[speed.class."MODEL REGEX"], got {table!r}')
    if len(table) > MAX_CLASSES:
        raise SpeedClassError(f"{source}: `speed.class`: at most {MAX_CLASSES} classes")
    classes = []
    for pattern, figures in table.items():
        key = f'speed.class."{pattern}"'
        if not isinstance(pattern, str) or not pattern.strip():
            raise SpeedClassError(f"{source}: `{key}`: expected a regular expression")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SpeedClassError(f"{source}: `{key}`: not a regular expression: {exc}"
                                  ) from None
        if not isinstance(figures, Mapping):
            raise SpeedClassError(f"{source}: `{key}`: expected a table of MB/s figures")
        unknown = sorted(set(figures) - set(FIGURES))
        if unknown:
            raise SpeedClassError(f"{source}: `{key}.{unknown[0]}`: unknown figure; the "
                                  f"figures are {', '.join(FIGURES)}")
        missing = [f for f in READ_FIGURES if f not in figures]
        if missing:
            raise SpeedClassError(f"{source}: `{key}.{missing[0]}`: missing; a class has "
                                  f"the four reads ({', '.join(READ_FIGURES)})")
        parsed = []
        for figure in FIGURES:
            if figure not in figures:
                continue
            value = figures[figure]
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not math.isfinite(value) or value <= 0):
                raise SpeedClassError(f"{source}: `{key}.{figure}`: expected MB/s > 0, "
                                      f"got {value!r}")
            parsed.append((figure, float(value)))
        classes.append(SpeedClass(pattern, tuple(parsed)))
    return tuple(classes)


def classes_record(classes: tuple[SpeedClass, ...]) -> dict[str, dict[str, float]]:
    """The TOML form again (run.json ``params.speed_classes``, the journal)."""
    return {c.pattern: dict(c.figures) for c in classes}


def find_class(classes: tuple[SpeedClass, ...], model: str | None) -> SpeedClass | None:
    if not model:
        return None
    return next((c for c in classes if c.matches(model)), None)


def corner_verdict(measured_mb_s: float | None, reference: float | None,
                   tolerance_percent: float) -> dict[str, Any]:
    """One figure against its class: ``{"verdict": "as fast" | "below" | "no reference" |
    "not measured", "ratio": measured / reference, "below_percent": N}``."""
    if reference is None:
        return {"verdict": "no reference", "reference_mb_s": None, "ratio": None,
                "below_percent": None}
    if measured_mb_s is None:
        return {"verdict": "not measured", "reference_mb_s": reference, "ratio": None,
                "below_percent": None}
    ratio = measured_mb_s / reference
    below = max(0.0, (1.0 - ratio) * 100.0)
    verdict = "as fast" if below <= tolerance_percent else "below"
    return {"verdict": verdict, "reference_mb_s": reference, "ratio": round(ratio, 4),
            "below_percent": round(below, 1)}


def overall_verdict(corners: list[dict[str, Any]], klass: SpeedClass | None,
                    tolerance_percent: float) -> dict[str, Any]:
    """The drive's verdict: ``as fast as its class`` when every figure with a reference is
    within the tolerance, else ``below its class`` by the worst figure's shortfall."""
    if klass is None:
        return {"verdict": "no reference", "text": "no reference for this model",
                "class": None, "tolerance_percent": tolerance_percent}
    compared = [c for c in corners if c["verdict"] in ("as fast", "below")]
    below = [c for c in compared if c["verdict"] == "below"]
    if not compared:
        return {"verdict": "no reference", "text": "no figure to compare",
                "class": klass.pattern, "tolerance_percent": tolerance_percent}
    if not below:
        return {"verdict": "as fast", "text": "as fast as its class", "class": klass.pattern,
                "tolerance_percent": tolerance_percent}
    worst = max(below, key=lambda c: c["below_percent"])
    return {"verdict": "below", "class": klass.pattern, "tolerance_percent": tolerance_percent,
            "text": f"below its class by {worst['below_percent']:.0f}% "
                    f"({worst['label']} {worst['direction']}); "
                    f"{len(below)} of {len(compared)} figures below",
            "worst": f"{worst['key']}_{worst['direction']}",
            "below_percent": worst["below_percent"]}
