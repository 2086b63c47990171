"""Text for screens: sizes, durations, rates, bars and charts drawn with characters the
Linux console font has (CP437 glyphs: full and half blocks, shades), no emoji."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ssdbench.commands.list import human_size
from ssdbench.devices import Drive

FULL = "\u2588"  # █
LOWER_HALF = "\u2584"  # ▄
LIGHT = "\u2591"  # ░


def size(n: int | float | None) -> str:
    """Decimal units like drive labels (500.1 GB, 67.1 MB), the same text as `ssdbench
    list` (one unit system on every screen; the details add MiB and bytes)."""
    if n is None:
        return "-"
    return human_size(int(n))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def number(value: float | None, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return "-"
    text = f"{value:,.{digits}f}"
    return f"{text} {unit}".rstrip()


def bar(fraction: float | None, width: int) -> str:
    """A progress bar of full blocks over light shade; unknown: all shade."""
    width = max(1, width)
    if fraction is None:
        return LIGHT * width
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return FULL * filled + LIGHT * (width - filled)


def _resample(values: Sequence[float], width: int) -> list[float]:
    if len(values) <= width:
        return list(values)
    out: list[float] = []
    step = len(values) / width
    for i in range(width):
        chunk = values[int(i * step):max(int((i + 1) * step), int(i * step) + 1)]
        out.append(sum(chunk) / len(chunk))
    return out


def _stretch(values: Sequence[float], width: int) -> list[float]:
    if not values or len(values) >= width:
        return list(values)
    return [values[i * len(values) // width] for i in range(width)]


def chart(values: Sequence[float], width: int, height: int, *,
          stretch: bool = False) -> list[str]:
    """Column chart, newest on the right, ``height`` rows of full/half blocks, scaled to
    the maximum; each column the mean of its share of the points (``stretch``: fewer
    points than columns are widened to fill the width; missing seconds, NaN, are left out).
    Returns the rows, top first (always ``height`` rows of exactly ``width`` characters)."""
    width = max(1, width)
    height = max(1, height)
    values = [v for v in values if not math.isnan(v)]  # a missing second is not drawn
    cols = _resample(_stretch(values, width) if stretch else values, width)
    top = max(cols) if cols else 0.0
    levels = [0 if top <= 0 else round(v / top * height * 2) for v in cols]
    levels = [0] * (width - len(levels)) + levels
    rows = []
    for r in range(height):
        base = (height - 1 - r) * 2  # half-steps below this row
        line = []
        for lv in levels:
            if lv >= base + 2:
                line.append(FULL)
            elif lv == base + 1:
                line.append(LOWER_HALF)
            else:
                line.append(" ")
        rows.append("".join(line))
    return rows


def security(drive: Drive) -> str:
    sec = drive.ata_security
    if sec is None:
        return "-" if drive.nvme is None else "n/a"
    if not sec.supported:
        return "none"
    flags = [w for w, on in (("locked", sec.locked), ("frozen", sec.frozen),
                             ("enabled", sec.enabled)) if on]
    return ",".join(flags) or "ok"


def health(drive: Drive) -> str:
    smart = drive.smart
    if smart is None or smart.passed is None:
        return "-"
    return "PASSED" if smart.passed else "FAILED"


def temperature(drive: Drive) -> str:
    smart = drive.smart
    if smart is None or smart.temperature_c is None:
        return "-"
    return f"{smart.temperature_c}C"


ERASE_SHORT = {
    "ata-security-erase": "ata-se",
    "ata-security-erase-enhanced": "ata-se+",
    "ata-sanitize-block": "san-blk",
    "ata-sanitize-crypto": "san-cry",
    "nvme-format-user-data": "fmt",
    "nvme-format-crypto": "fmt-cry",
    "nvme-sanitize-block": "san-blk",
    "nvme-sanitize-crypto": "san-cry",
    "nvme-sanitize-overwrite": "san-ovw",
    "scsi-sanitize": "scsi-san",
    "scsi-sanitize-block": "san-blk",
    "scsi-sanitize-crypto": "san-cry",
    "scsi-sanitize-overwrite": "san-ovw",
    "scsi-format": "scsi-fmt",
}


def erase_short(drive: Drive) -> str:
    return ",".join(ERASE_SHORT.get(m, m) for m in drive.erase_methods) or "none"
