"""Charts of a run and comparisons across drives (matplotlib, PNG + SVG).

matplotlib is imported lazily, inside the functions, and only through the object API
(``Figure`` + the Agg canvas attached explicitly): nothing global (pyplot's figure registry,
the default backend, rcParams) is touched, at import or at any time.

Every chart is 1200×700 px (100 dpi) or taller for comparisons; titles carry the drive
model, run and OP. Seconds with zero IOPS cannot sit on a log axis: they are drawn as red
triangles in a shaded band under the lowest decade, counted in the legend.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FloatArray = npt.NDArray[np.float64]

WIDTH_IN, HEIGHT_IN, DPI = 12.0, 7.0, 100
POINT = "#1f5fa8"
ZERO = "#d62728"
ZERO_BAND = "#fde3e1"
STEADY_SPAN = "#f2f2f2"
PHASE_COLOURS = {"clean": "#2ca02c", "after_torture": "#d62728", "after_trim": "#1f77b4"}
PHASE_LABELS = {"clean": "clean", "after_torture": "after torture", "after_trim": "after TRIM"}
NICE_STEPS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


@dataclass(frozen=True)
class Chart:
    name: str  # file stem, e.g. "iops-full-log"
    png: bytes
    svg: bytes | None


@dataclass(frozen=True)
class LogScale:
    """A log y range shared by charts: ``[zero_band, top]``; the decade under the lowest
    positive value ends at ``floor`` and the band under it holds the zero seconds."""

    floor: float
    top: float

    @property
    def bottom(self) -> float:
        return self.floor / 10**0.55

    @property
    def zero_y(self) -> float:
        return self.floor / 10**0.3


def nice_top(value: float) -> float:
    """The smallest "round" number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) >= value."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for step in NICE_STEPS:
        top = step * 10**exp
        if top >= value * (1 - 1e-12):
            return float(top)
    return float(10 ** (exp + 1))


def log_scale(*series: FloatArray) -> LogScale:
    pos = np.concatenate([s[np.isfinite(s) & (s > 0)] for s in series] or [np.empty(0)])
    if pos.size == 0:
        return LogScale(1.0, 10.0)
    lo, hi = float(pos.min()), float(pos.max())
    floor = 10 ** math.floor(math.log10(lo))
    top = 10 ** math.ceil(math.log10(hi))
    if top <= hi * 1.05:
        top *= 10**0.3
    return LogScale(floor, top)


def si(value: float, _pos: Any = None) -> str:
    """Tick label: 40000 -> 40K, 1500000 -> 1.5M."""
    for div, suffix in ((1e6, "M"), (1e3, "K")):
        if abs(value) >= div:
            text = f"{value / div:.1f}".rstrip("0").rstrip(".")
            return text + suffix
    return f"{value:g}"


def _figure(height_in: float = HEIGHT_IN, *, ncols: int = 1, nrows: int = 1,
            sharex: bool = False, sharey: bool = False,
            title_lines: int = 2, left_in: float = 0.9) -> tuple[Figure, Any]:
    """A figure with fixed margins (in inches; constrained layout costs a second a chart)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    top_in = 0.35 + 0.3 * title_lines
    fig.subplots_adjust(left=left_in / WIDTH_IN, right=1 - 0.25 / WIDTH_IN,
                        bottom=0.65 / height_in, top=1 - top_in / height_in,
                        wspace=0.18, hspace=0.32 * HEIGHT_IN / height_in * max(1, nrows) / 2)
    axes = fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey, squeeze=False)
    for ax in axes.flat:
        ax.tick_params(labelsize=11)
        ax.grid(True, which="major", color="#dddddd", linewidth=0.8)
        ax.set_axisbelow(True)
    return fig, axes


def _render(fig: Figure, name: str, svg: bool = True) -> Chart:
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=DPI)
    svg_bytes = None
    if svg:
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        svg_bytes = buf.getvalue()
    return Chart(name, png.getvalue(), svg_bytes)


def title_for(model: str, run: str, op_percent: float | None) -> str:
    op = "" if op_percent is None else f", {op_percent:g}% OP"
    return f"{model} — {run}{op}"


def _iops_points(ax: Axes, t: FloatArray, iops: FloatArray, scale: LogScale | None, *,
                 label: str = "IOPS per second", marker_size: float = 2.5) -> int:
    """Per-second IOPS as points; zero seconds as red triangles (band on log axes).

    Returns the number of zero seconds drawn."""
    pos = np.isfinite(iops) & (iops > 0)
    zero = iops == 0
    ax.plot(t[pos], iops[pos], linestyle="none", marker="o", markersize=marker_size,
            markeredgewidth=0, color=POINT, label=label, rasterized=True)
    n_zero = int(zero.sum())
    if scale is not None:
        ax.set_yscale("log")
        ax.set_ylim(scale.bottom, scale.top)
        ax.axhspan(scale.bottom, scale.floor / 10**0.08, color=ZERO_BAND, zorder=0, lw=0)
        zy = scale.zero_y
        ax.text(-0.006, zy, "0", transform=ax.get_yaxis_transform(), ha="right",
                va="center", fontsize=11, color=ZERO)
    else:
        zy = 0.0
    ax.plot(t[zero], np.full(n_zero, zy), linestyle="none", marker="v", markersize=6,
            color=ZERO, label=f"0 IOPS: {n_zero} s" + (" (red band)" if scale else ""),
            clip_on=False, zorder=5)
    ax.yaxis.set_major_formatter(si)
    return n_zero


def _legend(ax: Axes, loc: str = "upper right") -> None:
    ax.legend(loc=loc, fontsize=10, framealpha=0.9, markerscale=2)


def iops_charts(
    t: FloatArray, iops: FloatArray, *, title: str, steady_start_s: float,
    cliff_s: int | None = None, steady_state_s: int | None = None,
    steady_mean: float | None = None, scale: LogScale | None = None,
    linear_top: float | None = None, svg: bool = True,
) -> list[Chart]:
    """The AnandTech trio: ``iops-full-log``, ``iops-steady-log``, ``iops-steady-linear``."""
    scale = scale or log_scale(iops)
    charts = []
    end = float(t[-1] + 1) if t.size else 1.0

    fig, axes = _figure()
    ax = axes[0, 0]
    if steady_start_s < end:
        ax.axvspan(steady_start_s, end, color=STEADY_SPAN, zorder=0,
                   label=f"steady window (t ≥ {steady_start_s:g} s)")
    _iops_points(ax, t, iops, scale)
    if cliff_s is not None:
        ax.axvline(cliff_s, color="#ff7f0e", linestyle="--", linewidth=1.5,
                   label=f"spare-area cliff: {cliff_s} s")
    if steady_state_s is not None:
        ax.axvline(steady_state_s, color="#2ca02c", linestyle=":", linewidth=2,
                   label=f"SNIA steady state: {steady_state_s} s")
    ax.set_xlim(0, end)
    ax.set_title(f"{title}\n4 KiB random write QD32 — whole run, log scale", fontsize=15)
    ax.set_xlabel("Time (s)", fontsize=12)
    ax.set_ylabel("IOPS (log scale)", fontsize=12)
    _legend(ax)
    charts.append(_render(fig, "iops-full-log", svg))

    in_steady = t >= steady_start_s
    ts, ys = t[in_steady], iops[in_steady]
    for linear in (False, True):
        fig, axes = _figure()
        ax = axes[0, 0]
        _iops_points(ax, ts, ys, None if linear else scale, marker_size=3.5)
        if steady_mean is not None:
            ax.axhline(steady_mean, color="#444444", linestyle="--", linewidth=1.2,
                       label=f"steady mean: {si(round(steady_mean))} IOPS")
        if ts.size:
            ax.set_xlim(ts[0], ts[-1] + 1)
        if linear:
            finite = ys[np.isfinite(ys)]
            top = linear_top or nice_top(float(finite.max()) if finite.size else 1.0)
            ax.set_ylim(0, top)
        kind = "linear scale" if linear else "log scale"
        ax.set_title(f"{title}\n4 KiB random write QD32 — steady window "
                     f"(t ≥ {steady_start_s:g} s), {kind}", fontsize=15)
        ax.set_xlabel("Time (s)", fontsize=12)
        ax.set_ylabel(f"IOPS ({kind})", fontsize=12)
        _legend(ax)
        charts.append(_render(fig, "iops-steady-linear" if linear else "iops-steady-log", svg))
    return charts


def latency_chart(t: FloatArray, cols: dict[str, FloatArray], iops: FloatArray, *,
                  title: str, svg: bool = True) -> Chart:
    fig, axes = _figure()
    ax = axes[0, 0]
    styles = (("lat_max_us", "max", "#bbbbbb", 1.0), ("lat_p9999_us", "p99.99", "#ff7f0e", 1.0),
              ("lat_p99_us", "p99", "#d62728", 1.0), ("lat_mean_us", "mean", POINT, 1.4))
    stacked = [cols[k] for k, *_ in styles]
    scale = log_scale(*stacked)
    for key, label, colour, width in styles:
        ax.plot(t, cols[key], color=colour, linewidth=width, label=label)
    ax.set_yscale("log")
    ax.set_ylim(scale.bottom, scale.top)
    ax.axhspan(scale.bottom, scale.floor / 10**0.08, color=ZERO_BAND, zorder=0, lw=0)
    stall = iops == 0
    ax.plot(t[stall], np.full(int(stall.sum()), scale.zero_y), linestyle="none", marker="v",
            markersize=6, color=ZERO, clip_on=False,
            label=f"no I/O completed: {int(stall.sum())} s (red band)")
    ax.yaxis.set_major_formatter(_us)
    if t.size:
        ax.set_xlim(0, t[-1] + 1)
    ax.set_title(f"{title}\nwrite completion latency per second (from fio's histogram log)",
                 fontsize=15)
    ax.set_xlabel("Time (s)", fontsize=12)
    ax.set_ylabel("Latency (log scale)", fontsize=12)
    _legend(ax, "upper left")
    return _render(fig, "latency", svg)


def _us(value: float, _pos: Any = None) -> str:
    if value >= 1e6:
        return f"{value / 1e6:g} s"
    if value >= 1e3:
        return f"{value / 1e3:g} ms"
    return f"{value:g} µs"


def fill_chart(t: FloatArray, mib_s: FloatArray, gib: FloatArray, *, title: str,
               cliff_s: int | None, cliff_gib: float | None, mean_mib_s: float | None,
               svg: bool = True) -> Chart:
    fig, axes = _figure(ncols=2, sharey=True)
    top = nice_top(float(np.nanmax(mib_s)) * 1.05) if np.isfinite(mib_s).any() else 1.0
    for ax, x, xlabel in ((axes[0, 0], t, "Time (s)"), (axes[0, 1], gib, "GiB written")):
        ax.plot(x, mib_s, color=POINT, linewidth=1.0, label="MiB/s per second")
        if mean_mib_s is not None:
            ax.axhline(mean_mib_s, color="#444444", linestyle="--", linewidth=1.2,
                       label=f"mean: {mean_mib_s:.0f} MiB/s")
        at = cliff_s if x is t else cliff_gib
        if at is not None:
            unit = "s" if x is t else "GiB"
            ax.axvline(at, color="#ff7f0e", linestyle="--", linewidth=1.5,
                       label=f"cache cliff: {at:.4g} {unit}")
        ax.set_ylim(0, top)
        ax.set_xlabel(xlabel, fontsize=12)
        _legend(ax, "upper right")
    axes[0, 0].set_ylabel("Write throughput (MiB/s)", fontsize=12)
    fig.suptitle(f"{title}\nsequential fill, 128 KiB QD32, incompressible", fontsize=15)
    return _render(fig, "fill", svg)


def trim_chart(means: dict[str, float], series: dict[str, tuple[FloatArray, FloatArray]], *,
               title: str, verdict: str, recovery: float | None, svg: bool = True) -> Chart:
    fig, axes = _figure(ncols=2)
    ax = axes[0, 0]
    phases = [p for p in PHASE_LABELS if p in means]
    values = [means[p] for p in phases]
    bars = ax.bar([PHASE_LABELS[p] for p in phases], values,
                  color=[PHASE_COLOURS[p] for p in phases], width=0.6)
    ax.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize=12, padding=3)
    top = nice_top(max(values, default=1.0) * 1.12)
    ax.set_ylim(0, top)
    ax.set_ylabel("Mean write throughput (MiB/s)", fontsize=12)
    ax.set_title("probe means", fontsize=13)
    ax2 = axes[0, 1]
    for phase, (t, y) in series.items():
        # markers: a probe shorter than two seconds is one point, not an invisible line
        ax2.plot(t, y, color=PHASE_COLOURS.get(phase, "#333333"), linewidth=1.4,
                 marker="o", markersize=4 if len(t) < 30 else 0,
                 label=PHASE_LABELS.get(phase, phase))
    if not any(len(t) for t, _ in series.values()):
        ax2.text(0.5, 0.5, "no per-second samples\n(each probe took less than a second)",
                 transform=ax2.transAxes, ha="center", va="center", fontsize=12,
                 color="#555555")
    elif max(len(t) for t, _ in series.values()) < 2:
        ax2.set_xlim(-0.5, 1.5)
        ax2.text(0.5, 0.92, "each probe took under two seconds: one sample each",
                 transform=ax2.transAxes, ha="center", fontsize=11, color="#555555")
    ax2.set_ylim(0, top)
    ax2.set_xlabel("Time (s)", fontsize=12)
    ax2.set_ylabel("Write throughput (MiB/s)", fontsize=12)
    ax2.set_title("probes over time", fontsize=13)
    if series:
        _legend(ax2, "lower right")
    rec = "" if recovery is None else f", recovery {recovery:.2f}"
    fig.suptitle(f"{title}\nTRIM validation: sequential-write probe — verdict: {verdict}{rec}",
                 fontsize=15)
    return _render(fig, "trim-probes", svg)


@dataclass(frozen=True)
class DriveSeries:
    label: str  # drive model + serial
    t: FloatArray
    iops: FloatArray
    steady_start_s: float


def compare_iops_charts(run: str, drives: Sequence[DriveSeries], svg: bool = True) -> list[Chart]:
    """``compare-<run>-iops-{full-log,steady-log,steady-linear}``: one panel per drive, all
    on the same axes."""
    n = len(drives)
    if n == 0:
        return []
    scale = log_scale(*(d.iops for d in drives))
    steady_vals = [d.iops[(d.t >= d.steady_start_s) & np.isfinite(d.iops)] for d in drives]
    peak = max((float(v.max()) for v in steady_vals if v.size), default=1.0)
    linear_top = nice_top(peak)
    end = max((float(d.t[-1] + 1) for d in drives if d.t.size), default=1.0)
    height = max(HEIGHT_IN, 1.4 + 2.3 * n)
    charts = []
    for kind in ("full-log", "steady-log", "steady-linear"):
        fig, axes = _figure(height_in=height, nrows=n, sharex=True)
        steady_from = min(d.steady_start_s for d in drives)
        for ax, d in zip(axes[:, 0], drives, strict=True):
            sel = np.ones(d.t.size, bool) if kind == "full-log" else d.t >= d.steady_start_s
            _iops_points(ax, d.t[sel], d.iops[sel], None if kind == "steady-linear" else scale,
                         label="IOPS", marker_size=2.0)
            if kind == "steady-linear":
                ax.set_ylim(0, linear_top)
            ax.set_title(d.label, fontsize=12, loc="left")
            ax.set_ylabel("IOPS", fontsize=11)
            ax.legend(loc="upper right", fontsize=9, framealpha=0.9, markerscale=2)
        axes[-1, 0].set_xlim(0 if kind == "full-log" else steady_from, end)
        axes[-1, 0].set_xlabel("Time (s)", fontsize=12)
        what = {"full-log": "whole run, log scale", "steady-log": "steady window, log scale",
                "steady-linear": "steady window, linear scale"}[kind]
        fig.suptitle(f"{run} — 4 KiB random write QD32 — {what} (same scale for every drive)",
                     fontsize=15)
        charts.append(_render(fig, f"compare-{run}-iops-{kind}", svg))
    return charts


def compare_trim_chart(rows: Sequence[tuple[str, dict[str, float], str]],
                       svg: bool = True) -> Chart | None:
    """``compare-trim``: grouped bars (clean / after torture / after TRIM) per drive."""
    if not rows:
        return None
    fig, axes = _figure(height_in=max(HEIGHT_IN, 2 + 0.9 * len(rows)), title_lines=1,
                        left_in=3.4)
    ax = axes[0, 0]
    y = np.arange(len(rows), dtype=np.float64)
    h = 0.26
    peak = 1.0
    for k, phase in enumerate(PHASE_LABELS):
        vals = [r[1].get(phase, math.nan) for r in rows]
        peak = max([peak, *(v for v in vals if math.isfinite(v))])
        bars = ax.barh(y + (k - 1) * h, vals, height=h, color=PHASE_COLOURS[phase],
                       label=PHASE_LABELS[phase])
        ax.bar_label(bars, labels=[f"{v:.1f}" if math.isfinite(v) else "" for v in vals],
                     fontsize=10, padding=3)
    ax.set_yticks(y, [f"{label}\nverdict: {verdict}" for label, _, verdict in rows],
                  fontsize=11)
    ax.invert_yaxis()
    ax.set_xlim(0, nice_top(peak * 1.15))
    ax.set_xlabel("Mean sequential write throughput of the probe (MiB/s)", fontsize=12)
    ax.set_title("TRIM validation — every drive, same scale", fontsize=15)
    _legend(ax, "lower right")
    return _render(fig, "compare-trim", svg)
