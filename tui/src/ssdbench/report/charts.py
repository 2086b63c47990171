"""Charts of a run and comparisons across drives (matplotlib, PNG + SVG).

matplotlib is imported lazily, inside the functions, and only through the object API
(``Figure`` + the Agg canvas attached explicitly): nothing global (pyplot's figure registry,
the default backend, rcParams) is touched, at import or at any time.

Every chart is 1200×700 px (100 dpi) or taller for comparisons. The rules (docs/analysis.md
"Charts"):

* titles carry the drive model, run, OP and the run's own block size and queue depth;
* the steady linear IOPS chart runs from 0 to the plan's ``chart_iops_top`` (40K by
  default), raised per run to a round number over the bulk of the run's own steady
  seconds when they do not fit; a second above it is drawn as a marker on the top edge and
  counted in the legend ("N s above 40K"), never silently cut;
* log scales are whole decades around the bulk of the seconds (0.5th to 99.5th
  percentile): one odd second cannot move them; seconds outside are markers on the edge,
  counted in the legend;
* charts that are compared share their scale: the runs of one drive (Default and 25% OP)
  share their log decades, and the comparison charts of the results folder share one log
  scale for every drive and run and one linear top per run;
* legends sit above the axes, never over the data; no panel's y range cuts a series;
* seconds with zero IOPS cannot sit on a log axis: they are red triangles in a shaded band
  under the lowest decade, counted in the legend.

Each chart has a ``*_figure(s)`` function returning the matplotlib ``Figure`` (tests inspect
it) and a ``*_chart(s)`` function rendering it to PNG (+ SVG).

Text on a chart is never mathtext: a drive model ``$\\frac{a}{$`` is drawn as written. Every
title, panel label, legend entry and tick label that can carry a string from a drive or a
results file goes through :func:`plain` (each ``$`` escaped; matplotlib's ``parse_math``
is left alone so that nothing global is touched), and a name from a file that becomes a
chart's file name through :func:`file_part`.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ssdbench.units import binary_size
from ssdbench.untrusted import path_part, visible

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FloatArray = npt.NDArray[np.float64]

WIDTH_IN, HEIGHT_IN, DPI = 12.0, 7.0, 100
POINT = "#1f5fa8"
ZERO = "#d62728"
ZERO_BAND = "#fde3e1"
CLIP = "#8c2d04"
STEADY_SPAN = "#f2f2f2"
PHASE_COLOURS = {"clean": "#2ca02c", "after_torture": "#d62728", "after_trim": "#1f77b4"}
PHASE_LABELS = {"clean": "clean", "after_torture": "after torture", "after_trim": "after TRIM"}
# probe phases drawn over each other: shrinking sizes, so that equal values all stay visible
PHASE_MARKER_SIZES = {"clean": 9.0, "after_torture": 6.5, "after_trim": 4.0}
PHASE_LINE_WIDTHS = {"clean": 5.0, "after_torture": 3.0, "after_trim": 1.4}
NICE_STEPS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
MB_PER_MIB = 1.048576  # 2^20 / 10^6: reviews print MB/s
DEFAULT_IOPS_TOP = 40000.0  # RunParams.chart_iops_top, for run.json files without it

# Layout in inches (fixed margins: constrained layout costs a second a chart)
TITLE_LINE_IN = 0.27  # one suptitle line at 15 pt
TITLE_PAD_IN = 0.12  # figure top edge to the suptitle
ROW_IN = 0.3  # one legend / panel-header row at 10-12 pt
GAP_PX = 8.0  # legend / panel label above the axes: clear of markers on the top edge
BOTTOM_IN, RIGHT_IN, LEFT_IN = 0.65, 0.25, 0.9
MID = 0.5  # a per-second value (time_s = the second's start) is drawn mid-second


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


@dataclass(frozen=True)
class Workload:
    """Block sizes and queue depths of a run, from its run.json (for titles)."""

    torture_bs: str = "4k"
    fill_bs: str = "128k"
    iodepth: int = 32
    probe_bs: str = "128k"
    probe_iodepth: int = 32
    probe_bytes: int | None = None
    iops_top: float = DEFAULT_IOPS_TOP

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Workload:
        """From run.json ``params`` (and ``probes``, the probe shape the TRIM run used).
        Tolerant of old or hand-edited files: a missing or bad value keeps the default of
        the plan at the time (a run.json without ``probe_preset`` probed with the fill's
        block size and queue depth)."""
        raw = meta.get("params")
        p: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        raw = meta.get("probes")
        probes: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}

        def text(key: str, default: str) -> str:
            v = p.get(key)
            return v.strip() if isinstance(v, str) and v.strip() else default

        def whole(d: Mapping[str, Any], key: str, default: int | None) -> int | None:
            v = d.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else default

        fill_bs = text("block_size_fill", "128k")
        iodepth = whole(p, "iodepth", 32) or 32
        probe_bs, probe_qd = fill_bs, iodepth
        if p.get("probe_preset") == "as-ssd":
            probe_bs, probe_qd = "16m", 1
        block = whole(probes, "block_bytes", None)
        if block is not None:
            probe_bs = str(block)
        probe_qd = whole(probes, "iodepth", probe_qd) or probe_qd
        probe_bytes = whole(probes, "probe_bytes", None)
        gib = p.get("probe_gib")
        if probe_bytes is None and isinstance(gib, int | float) and not isinstance(gib, bool) \
                and gib > 0:
            probe_bytes = int(gib * 2**30)
        top = p.get("chart_iops_top")
        return cls(
            torture_bs=text("block_size_torture", "4k"), fill_bs=fill_bs, iodepth=iodepth,
            probe_bs=probe_bs, probe_iodepth=probe_qd, probe_bytes=probe_bytes,
            iops_top=float(top) if isinstance(top, int | float) and not isinstance(top, bool)
            and math.isfinite(top) and top > 0 else DEFAULT_IOPS_TOP)

    @property
    def torture(self) -> str:
        return f"{size_text(self.torture_bs)} random write QD{self.iodepth}"

    @property
    def fill(self) -> str:
        return f"sequential fill, {size_text(self.fill_bs)} QD{self.iodepth}, incompressible"

    @property
    def probe_shape(self) -> str:
        """The probe in a few words: "probe: 16 MiB, 16 MiB blocks, QD1"."""
        size = "" if self.probe_bytes is None else f"{binary_size(self.probe_bytes)}, "
        return f"probe: {size}{size_text(self.probe_bs)} blocks, QD{self.probe_iodepth}"

    @property
    def probe(self) -> str:
        size = "" if self.probe_bytes is None else f"{binary_size(self.probe_bytes)} in "
        return (f"sequential-write probe, {size}{size_text(self.probe_bs)} blocks "
                f"QD{self.probe_iodepth}")


def size_text(block_size: str) -> str:
    """fio's ``4k`` → ``4 KiB``, ``16m`` → ``16 MiB``; an unparsable text is kept as is."""
    from ssdbench.fio.jobs import parse_block_size

    try:
        n = int(block_size) if block_size.isdigit() else parse_block_size(block_size)
    except ValueError:
        return block_size
    return binary_size(n)


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


BULK_SHARE_PCT = 0.5  # a scale may leave out this share (%) of a series' seconds at each end
BULK_MIN_SECONDS = 20  # a shorter series keeps its extremes


def bulk_range(values: FloatArray) -> tuple[float, float] | None:
    """The range of a series' positive seconds without its rarest 0.5% at either end (the
    0.5th and 99.5th percentiles, taken on values that occur; at least the one lowest and
    the one highest second are left out), so that one odd second cannot move a scale.
    A series of under 20 positive seconds keeps its extremes. None without positive
    seconds."""
    v = values[np.isfinite(values) & (values > 0)]
    if v.size == 0:
        return None
    if v.size < BULK_MIN_SECONDS:
        return float(v.min()), float(v.max())
    return (float(np.percentile(v, BULK_SHARE_PCT, method="higher")),
            float(np.percentile(v, 100 - BULK_SHARE_PCT, method="lower")))


def log_scale(*series: FloatArray, robust: bool = True) -> LogScale:
    """Whole decades around the bulk (:func:`bulk_range`) of every series, the union over
    the series (one shared scale): each series' bulk fits, whatever the others hold.
    Seconds outside are drawn on the edges and counted (:func:`_iops_points`).
    ``robust=False``: around every value (the latency chart, where the worst second is
    what one reads). The top gets x2 (0.3 decade) more when the highest value is within
    5% of a decade."""
    ranges = []
    for s in series:
        if robust:
            r = bulk_range(s)
        else:
            pos = s[np.isfinite(s) & (s > 0)]
            r = (float(pos.min()), float(pos.max())) if pos.size else None
        if r is not None:
            ranges.append(r)
    if not ranges:
        return LogScale(1.0, 10.0)
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    floor = 10 ** math.floor(math.log10(lo))
    top = 10 ** math.ceil(math.log10(hi))
    if top <= hi * 1.05:
        top *= 10**0.3
    return LogScale(floor, top)


def steady_linear_top(steady_iops: FloatArray, plan_top: float = DEFAULT_IOPS_TOP) -> float:
    """The top of a run's steady linear chart: the plan's ``chart_iops_top`` (40K, as the
    reviews), raised to the next round number over the bulk of the run's own steady seconds
    when they do not fit under it (AnandTech: 40K at default capacity, 50K at 25% OP). One
    second cannot raise it (:func:`bulk_range`); seconds above are drawn on the top edge."""
    r = bulk_range(steady_iops)
    if r is None or r[1] <= plan_top:
        return float(plan_top)
    return nice_top(r[1])


def si(value: float, _pos: Any = None) -> str:
    """Tick label: 40000 -> 40K, 1500000 -> 1.5M."""
    for div, suffix in ((1e6, "M"), (1e3, "K")):
        if abs(value) >= div:
            text = f"{value / div:.1f}".rstrip("0").rstrip(".")
            return text + suffix
    return f"{value:g}"


def mb_s(mib_s: float) -> float:
    """MiB/s (2^20 bytes) → MB/s (10^6 bytes), as reviews print."""
    return mib_s * MB_PER_MIB


def _figure(height_in: float = HEIGHT_IN, *, ncols: int = 1, nrows: int = 1,
            sharex: bool = False, sharey: bool = False, title_lines: int = 2,
            header_rows: int = 1, panel_gap_in: float = 0.0,
            left_in: float = LEFT_IN) -> tuple[Figure, Any]:
    """A figure with fixed margins in inches: the suptitle, then ``header_rows`` rows for
    legends (and panel labels) above the axes, ``panel_gap_in`` between rows of panels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    top_in = TITLE_PAD_IN + TITLE_LINE_IN * title_lines + 0.1 + ROW_IN * header_rows
    plot_h = height_in - top_in - BOTTOM_IN
    panel_h = (plot_h - panel_gap_in * (nrows - 1)) / nrows
    fig.subplots_adjust(left=left_in / WIDTH_IN, right=1 - RIGHT_IN / WIDTH_IN,
                        bottom=BOTTOM_IN / height_in, top=1 - top_in / height_in,
                        wspace=0.2, hspace=panel_gap_in / panel_h if nrows > 1 else 0.0)
    axes = fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey, squeeze=False)
    for ax in axes.flat:
        ax.tick_params(labelsize=11)
        ax.grid(True, which="major", color="#dddddd", linewidth=0.8)
        ax.set_axisbelow(True)
    return fig, axes


def plain(text: object) -> str:
    """``text`` for a matplotlib Text that must not be mathtext: every ``$`` escaped (a
    string with an even number of unescaped ``$`` is parsed as TeX, and a bad formula such
    as ``$\\frac{a}{$`` stops the chart; an escaped one is drawn as ``$``), and control and
    invisible characters as ``?`` on each line (untrusted.visible: a serial reads on a chart
    as everywhere else; the line breaks of ssdbench's own two-line titles stay)."""
    return "\n".join(visible(line) for line in str(text).split("\n")).replace("$", r"\$")


def file_part(name: str) -> str:
    """A name from a results file (a run, a PTS loop) inside a chart's file name:
    :func:`ssdbench.untrusted.path_part`, distinct."""
    return path_part(name, distinct=True)


def _suptitle(fig: Figure, text: str) -> None:
    height_in = fig.get_figheight()
    fig.suptitle(plain(text), fontsize=15, y=1 - TITLE_PAD_IN / height_in, va="top")


def _fig(ax: Axes) -> Figure:
    from matplotlib.figure import Figure

    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure)
    return fig


def _above(ax: Axes) -> float:
    """The y (in axes fraction) ``GAP_PX`` above the top of the axes."""
    fig = _fig(ax)
    height_px = ax.get_position().height * fig.get_figheight() * DPI
    return 1 + GAP_PX / height_px


def _panel_label(ax: Axes, text: str, fontsize: float = 12) -> Artist:
    """A panel's name, left-aligned just above its axes (the legend goes on the right)."""
    return ax.text(0.0, _above(ax), plain(text), transform=ax.transAxes, ha="left",
                   va="bottom", fontsize=fontsize)


def _legend_above(ax: Axes, *, handles: Sequence[Any] | None = None,
                  labels: Sequence[str] | None = None, reserve_px: float = 0.0,
                  span_px: float | None = None, adjust: bool = True) -> int:
    """The legend in one row right-aligned just above the axes (outside them, so it never
    covers a point); when that row would be wider than the axes (less ``reserve_px`` kept
    for a panel label, or ``span_px`` when the legend may span several panels) it wraps into
    rows and (``adjust``) the axes move down to make room. Returns the number of rows."""
    if handles is None or labels is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return 0
    labels = [plain(label) for label in labels]
    fig = _fig(ax)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width = span_px if span_px is not None else ax.get_window_extent(renderer).width
    width -= reserve_px
    legend = None
    ncol = len(handles)
    for ncol in range(len(handles), 0, -1):
        if legend is not None:
            legend.remove()
        legend = ax.legend(handles, labels, loc="lower right",
                           bbox_to_anchor=(1.0, _above(ax)), borderaxespad=0.0,
                           ncol=ncol, fontsize=10, frameon=False, markerscale=1.5,
                           handlelength=1.6, columnspacing=1.2, handletextpad=0.5)
        if legend.get_window_extent(renderer).width <= width:
            break
    assert legend is not None
    rows = math.ceil(len(handles) / ncol)
    if rows > 1 and adjust:
        fig.subplots_adjust(top=fig.subplotpars.top - (rows - 1) * 0.22 / fig.get_figheight())
    return rows


def _log_y(ax: Axes, scale: LogScale) -> None:
    """A log y axis over the scale: its major ticks at the decades in view, and its minor
    ticks (2..9 between them, never labelled on these scales of 1.5 decades or more) as one
    line of tick marks. matplotlib makes five artists for each minor tick of every decade
    around the view (56 ticks on a latency chart, most never drawn); making them was a fifth
    of a report's time."""
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKLEFT, MarkerStyle
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_yscale("log")
    ax.set_ylim(scale.bottom, scale.top)
    lo, hi = math.floor(math.log10(scale.bottom)), math.ceil(math.log10(scale.top))
    major = [10.0**d for d in range(lo, hi + 1) if scale.bottom <= 10.0**d <= scale.top]
    minor = [k * 10.0**d for d in range(lo, hi + 1) for k in range(2, 10)
             if scale.bottom <= k * 10.0**d <= scale.top]
    ax.yaxis.set_major_locator(FixedLocator(major))
    ax.yaxis.set_minor_locator(NullLocator())
    rc = matplotlib_rc()
    ax.add_artist(Line2D(
        np.zeros(len(minor)), minor, transform=ax.get_yaxis_transform(), linestyle="none",
        marker=MarkerStyle(TICKLEFT), markersize=rc["ytick.minor.size"],
        markeredgewidth=rc["ytick.minor.width"], color=rc["ytick.color"], clip_on=False,
        label="_minor ticks", gid="minor-ticks"))


def matplotlib_rc() -> Any:
    import matplotlib

    return matplotlib.rcParams


def _render(fig: Figure, name: str, svg: bool = True) -> Chart:
    from PIL import Image

    # drawn once on the figure's own canvas (DPI), saved as RGB (the figure is opaque white:
    # no alpha channel to compress) at zlib level 1: half the time of savefig's RGBA at
    # PIL's default level, for files about a fifth larger
    canvas: Any = fig.canvas
    canvas.draw()
    rgba = canvas.buffer_rgba()
    png = io.BytesIO()
    Image.frombuffer("RGBA", (rgba.shape[1], rgba.shape[0]), rgba, "raw", "RGBA", 0, 1) \
        .convert("RGB").save(png, format="png", compress_level=1)
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
                 linear_top: float | None = None, label: str = "IOPS per second",
                 marker_size: float = 2.5) -> tuple[int, int]:
    """Per-second IOPS as points; zero seconds as red triangles (band on log axes); seconds
    above the top (the linear top, or the log scale's) as markers on the top edge, positive
    seconds under a log scale's floor as markers on its bottom edge, each counted in the
    legend. ``t`` is the start of each second; it is drawn at the middle of its second
    (never on a spine).

    Returns (zero seconds, seconds above the top)."""
    t = t + MID
    zero = iops == 0
    above = np.isfinite(iops) & (iops > linear_top) if linear_top is not None \
        else np.zeros(iops.size, bool)
    pos = np.isfinite(iops) & (iops > 0) & ~above
    below = np.zeros(iops.size, bool)
    n_zero = int(zero.sum())
    if scale is not None:
        above |= np.isfinite(iops) & (iops > scale.top)
        below = pos & (iops < scale.floor)
        pos &= ~above & ~below
        _log_y(ax, scale)
        ax.axhspan(scale.bottom, scale.floor / 10**0.08, color=ZERO_BAND, zorder=0, lw=0)
        zy = scale.zero_y
        ax.text(-0.006, zy, "0", transform=ax.get_yaxis_transform(), ha="right",
                va="center", fontsize=11, color=ZERO)
        top = scale.top
    else:
        zy = 0.0
        top = linear_top if linear_top is not None else nice_top(
            float(np.nanmax(iops)) if np.isfinite(iops).any() else 1.0)
        ax.set_ylim(0, top)
    ax.plot(t[pos], iops[pos], linestyle="none", marker="o", markersize=marker_size,
            markeredgewidth=0, color=POINT, label=label, rasterized=True, gid="iops")
    ax.plot(t[zero], np.full(n_zero, zy), linestyle="none", marker="v", markersize=6,
            color=ZERO, label=f"0 IOPS: {n_zero} s" + (" (red band)" if scale else ""),
            clip_on=False, zorder=5, gid="zero")
    n_above = int(above.sum())
    if n_above:
        ax.plot(t[above], np.full(n_above, top), linestyle="none", marker="^",
                markersize=6, color=CLIP, clip_on=False, zorder=5, gid="clip",
                label=f"{n_above} s above {si(top)} (drawn on the top edge)")
    n_below = int(below.sum())
    if n_below and scale is not None:
        ax.plot(t[below], np.full(n_below, scale.floor), linestyle="none", marker="v",
                markersize=6, color=CLIP, clip_on=False, zorder=5, gid="below",
                label=f"{n_below} s below {si(scale.floor)} (drawn on the bottom edge)")
    ax.yaxis.set_major_formatter(si)
    return n_zero, n_above


EVENT_STYLE = {  # kind: (colour, label); throttles and stalls are spans, the rest lines
    "throttle": ("#d62728", "throttle"),
    "stall": ("#9467bd", "stall (no I/O)"),
    "step": ("#8c564b", "step (not the cliff)"),
    "late-fall": ("#e377c2", "late fall (last minutes)"),
    "decline": ("#7f7f7f", "gradual decline"),
}


STALL_SPAN_MIN_S = 5


def _event_marks(ax: Any, events: Sequence[tuple[str, int, int]]) -> None:
    """Throttles as red hatched spans, stalls of STALL_SPAN_MIN_S or more as purple spans,
    steps, late falls and declines as dotted lines at their start; one legend entry per
    kind, with its count."""
    for kind, (colour, label) in EVENT_STYLE.items():
        # a stall under STALL_SPAN_MIN_S is already on the chart as its zero-IOPS markers
        found = [(at, dur) for k, at, dur in events
                 if k == kind and (k != "stall" or dur >= STALL_SPAN_MIN_S)]
        if not found:
            continue
        name = f"{label}: {len(found)}" if len(found) > 1 else f"{label}: {found[0][0]} s"
        for n, (at, dur) in enumerate(found):
            tag = name if n == 0 else None
            if kind in ("throttle", "stall"):
                ax.axvspan(at, at + max(dur, 1), facecolor=colour,
                           alpha=0.18 if kind == "throttle" else 0.35,
                           hatch="//" if kind == "throttle" else None, edgecolor=colour,
                           linewidth=0, zorder=0.5, label=tag, gid=f"event-{kind}")
            else:
                ax.axvline(at, color=colour, linestyle=":", linewidth=1.5, label=tag,
                           gid=f"event-{kind}")


FOB_END = "#9467bd"  # the end of fresh-out-of-box: purple dash-dot, beside the orange cliff


def _fob_end_line(ax: Axes, at: float, label: str) -> None:
    ax.axvline(at, color=FOB_END, linestyle="-.", linewidth=1.5, label=label, gid="fob-end")


def iops_figures(
    t: FloatArray, iops: FloatArray, *, title: str, steady_start_s: float,
    cliff_s: int | None = None, steady_state_s: int | None = None,
    steady_mean: float | None = None, scale: LogScale | None = None,
    fob_end_s: int | None = None,
    linear_top: float = DEFAULT_IOPS_TOP, workload: Workload | None = None,
    events: Sequence[tuple[str, int, int]] = (),
) -> list[tuple[str, Figure]]:
    """The AnandTech trio: ``iops-full-log``, ``iops-steady-log``, ``iops-steady-linear``.

    ``events``: (kind, at_s, duration_s) of the run's throttles, stalls, steps and late
    falls (:mod:`ssdbench.analysis.events`), each kind drawn its own way on the whole-run
    chart, so a throttle is never read as the cliff. ``fob_end_s``: the end of
    fresh-out-of-box (docs/analysis.md "Two falls"), drawn as its own line (purple,
    dash-dot) when it is not the cliff's second; the cliff is then "the fall into steady
    state".

    ``scale`` is the log scale shared with the other runs of the drive; ``linear_top`` the
    run's top of the linear chart (:func:`steady_linear_top`)."""
    scale = scale or log_scale(iops)
    what = (workload or Workload()).torture
    out = []
    end = float(t[-1] + 1) if t.size else 1.0

    fig, axes = _figure()
    ax = axes[0, 0]
    if steady_start_s < end:
        ax.axvspan(steady_start_s, end, color=STEADY_SPAN, zorder=0,
                   label=f"steady window (t ≥ {steady_start_s:g} s)")
    _iops_points(ax, t, iops, scale)
    two = fob_end_s is not None and fob_end_s != cliff_s
    # the step that ends fresh-out-of-box is drawn once: as the end of FOB
    _event_marks(ax, [e for e in events if not (two and e[0] == "step" and e[1] == fob_end_s)])
    if two and fob_end_s is not None:
        _fob_end_line(ax, fob_end_s, f"end of FOB: {fob_end_s} s")
    if cliff_s is not None:
        ax.axvline(cliff_s, color="#ff7f0e", linestyle="--", linewidth=1.5,
                   label=(f"spare-area cliff (fall into steady state): {cliff_s} s" if two
                          else f"spare-area cliff: {cliff_s} s"))
    if steady_state_s is not None:
        ax.axvline(steady_state_s, color="#2ca02c", linestyle=":", linewidth=2,
                   label=f"SNIA steady state: {steady_state_s} s")
    ax.set_xlim(0, end)
    _suptitle(fig, f"{title}\n{what} — whole run, log scale")
    ax.set_xlabel("Time (s)", fontsize=12)
    ax.set_ylabel("IOPS (log scale)", fontsize=12)
    _legend_above(ax)
    out.append(("iops-full-log", fig))

    in_steady = t >= steady_start_s
    ts, ys = t[in_steady], iops[in_steady]
    for linear in (False, True):
        fig, axes = _figure()
        ax = axes[0, 0]
        _iops_points(ax, ts, ys, None if linear else scale,
                     linear_top=linear_top if linear else None, marker_size=3.5)
        if steady_mean is not None:
            label = f"steady mean: {si(round(steady_mean))} IOPS"
            if linear and steady_mean > linear_top:  # named in the legend, not drawn
                ax.plot([], [], color="#444444", linestyle="--", linewidth=1.2,
                        label=label + " (above the chart)")
            else:
                ax.axhline(steady_mean, color="#444444", linestyle="--", linewidth=1.2,
                           label=label)
        if ts.size:
            ax.set_xlim(ts[0], ts[-1] + 1)
        kind = f"linear scale, 0–{si(linear_top)}" if linear else "log scale"
        _suptitle(fig, f"{title}\n{what} — steady window (t ≥ {steady_start_s:g} s), {kind}")
        ax.set_xlabel("Time (s)", fontsize=12)
        ax.set_ylabel(f"IOPS ({'linear' if linear else 'log'} scale)", fontsize=12)
        _legend_above(ax)
        out.append(("iops-steady-linear" if linear else "iops-steady-log", fig))
    return out


def iops_charts(t: FloatArray, iops: FloatArray, *, svg: bool = True,
                **kwargs: Any) -> list[Chart]:
    """:func:`iops_figures` rendered."""
    return [_render(fig, name, svg) for name, fig in iops_figures(t, iops, **kwargs)]


LATENCY_STYLES = (("lat_max_us", "max", "#bbbbbb", 1.0),
                  ("lat_p9999_us", "p99.99", "#ff7f0e", 1.0),
                  ("lat_p99_us", "p99", "#d62728", 1.0), ("lat_mean_us", "mean", POINT, 1.4))


def wsat_figure(written_gb: FloatArray, iops: FloatArray, *, io_bytes: int, span_gb: float,
                title: str, cliff_gb: float | None = None, final_iops: float | None = None,
                scale: LogScale | None = None, workload: Workload | None = None,
                fob_end_gb: float | None = None) -> Figure:
    """SNIA PTS write saturation: every second's IOPS against the total gigabytes written
    from the purge on (each point at the middle of its second's writes), log scale; dotted
    lines at each whole capacity written, the end of fresh-out-of-box (``fob_end_gb``, when
    it is not the cliff), the cliff and the final level."""
    scale = scale or log_scale(iops)
    fig, axes = _figure()
    ax = axes[0, 0]
    done = np.where(np.isfinite(iops), iops, 0.0) * io_bytes / 1e9
    x = written_gb - done / 2  # _iops_points adds half a unit back
    _iops_points(ax, x - MID, iops, scale)
    end = float(written_gb[-1]) if written_gb.size else 0.0
    ax.set_xlim(0, max(end, span_gb / 10, 1e-9))
    whole = int(end / span_gb) if span_gb > 0 else 0
    step = next(k for k in (1, 2, 5, 10, 20, 50, 100, 10**9) if whole / k <= 10)
    for k in range(step, whole + 1, step):  # at most ten lines, at whole capacities
        ax.axvline(k * span_gb, color="#999999", linestyle=":", linewidth=1.2, zorder=1)
        ax.text(k * span_gb, 1.0, f" {k}×", transform=ax.get_xaxis_transform(), ha="left",
                va="top", fontsize=10, color="#555555")
    two = fob_end_gb is not None and fob_end_gb != cliff_gb
    if fob_end_gb is not None and two:
        _fob_end_line(ax, fob_end_gb, f"end of FOB at {fob_end_gb:,.2f} GB "
                                      f"({fob_end_gb / span_gb:.2f} × capacity)")
    if cliff_gb is not None:
        ax.axvline(cliff_gb, color="#ff7f0e", linestyle="--", linewidth=1.5,
                   label=(f"cliff{' (fall into steady state)' if two else ''} at "
                          f"{cliff_gb:,.2f} GB ({cliff_gb / span_gb:.2f} × capacity)"))
    if final_iops is not None:
        ax.axhline(final_iops, color="#444444", linestyle="--", linewidth=1.2,
                   label=f"final level: {si(round(final_iops))} IOPS")
    what = (workload or Workload()).torture
    _suptitle(fig, f"{title}\nSNIA PTS write saturation: {what} from the purge, log scale")
    ax.set_xlabel(f"Total gigabytes written from the purge (GB; dotted: whole capacities of "
                  f"{span_gb:,.2f} GB)", fontsize=12)
    ax.set_ylabel("IOPS (log scale)", fontsize=12)
    _legend_above(ax)
    return fig


def wsat_chart(written_gb: FloatArray, iops: FloatArray, *, svg: bool = True,
               **kwargs: Any) -> Chart:
    return _render(wsat_figure(written_gb, iops, **kwargs), "wsat-tgbw", svg)


HIR_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
               "#7f7f7f", "#d62728", "#ff7f0e")


def hir_figure(parts: Sequence[tuple[int, FloatArray, FloatArray]], *, title: str,
               burst_iops: Mapping[int, float | None], baseline: float | None,
               base_iops: Mapping[int, float | None] | None = None,
               scale: LogScale | None = None, workload: Workload | None = None) -> Figure:
    """SNIA PTS host idle recovery: left, every second of the idle periods and the returns
    to the baseline one after the other (each idle period's bursts in its own colour, the
    returns grey), log scale; right, each idle period's burst IOPS against the level before
    the idle periods (the WSAT's final level) and the mean of its return to the baseline."""
    scale = scale or log_scale(*(p[1] for p in parts), *(p[2] for p in parts))
    fig, axes = _figure(ncols=2)
    ax = axes[0, 0]
    at = 0.0
    for i, (wait, idle, base) in enumerate(parts):
        colour = HIR_COLOURS[i % len(HIR_COLOURS)]
        for series, label, c in ((idle, f"{wait} s idle", colour), (base, None, "#999999")):
            t = at + np.arange(series.size, dtype=np.float64) + MID
            pos = np.isfinite(series) & (series > 0)
            ax.plot(t[pos], np.clip(series[pos], scale.floor, scale.top), linestyle="none",
                    marker="o", markersize=3.0, markeredgewidth=0, color=c, rasterized=True,
                    label=label)
            at += series.size
    _log_y(ax, scale)
    ax.set_xlim(0, max(at, 1.0))
    ax.set_xlabel("Time since the first idle period (s; grey: back to the baseline)",
                  fontsize=12)
    ax.set_ylabel("IOPS (log scale; seconds without writes not drawn)", fontsize=11)
    ax.yaxis.set_major_formatter(si)
    _legend_above(ax)
    ax2 = axes[0, 1]
    waits = [w for w, _, _ in parts]
    values = [burst_iops.get(w) or 0.0 for w in waits]
    bars = ax2.bar([f"{w} s" for w in waits], values, width=0.6,
                   color=[HIR_COLOURS[i % len(HIR_COLOURS)] for i in range(len(waits))])
    ax2.bar_label(bars, labels=[si(round(v)) if v else "—" for v in values], fontsize=10,
                  padding=3)
    returns = [(i, v) for i, w in enumerate(waits) if (v := (base_iops or {}).get(w))]
    top = nice_top(max([*values, *(v for _, v in returns), baseline or 0.0, 1.0]) * 1.2)
    ax2.set_ylim(0, top)
    if returns:
        ax2.plot([i for i, _ in returns], [v for _, v in returns], linestyle="none",
                 marker="_", markersize=40, markeredgewidth=3, color="#777777")
        ax2.plot([], [], color="#777777", linewidth=3,  # the legend's entry, a short line
                 label="its return to the baseline (mean)")
    if baseline:
        ax2.axhline(baseline, color="#444444", linestyle="--", linewidth=1.2,
                    label=f"before the idle periods: {si(round(baseline))} IOPS")
    if returns or baseline:
        _legend_above(ax2)
    ax2.set_xlabel("Idle period before each burst", fontsize=12)
    ax2.set_ylabel("IOPS in the bursts", fontsize=12)
    ax2.yaxis.set_major_formatter(si)
    what = (workload or Workload()).torture
    _suptitle(fig, f"{title}\nSNIA PTS host idle recovery: bursts of {what} after idle periods")
    return fig


def hir_chart(parts: Sequence[tuple[int, FloatArray, FloatArray]], *, svg: bool = True,
              **kwargs: Any) -> Chart:
    return _render(hir_figure(parts, **kwargs), "hir", svg)


def latency_scale(*runs: Mapping[str, FloatArray]) -> LogScale:
    """One log scale for the latency charts of several runs (every column of every run)."""
    return log_scale(*(cols[k] for cols in runs for k, *_ in LATENCY_STYLES if k in cols),
                     robust=False)


def latency_figure(t: FloatArray, cols: Mapping[str, FloatArray], iops: FloatArray, *,
                   title: str, scale: LogScale | None = None,
                   workload: Workload | None = None) -> Figure:
    fig, axes = _figure()
    ax = axes[0, 0]
    scale = scale or latency_scale(cols)
    for key, label, colour, width in LATENCY_STYLES:
        ax.plot(t + MID, cols[key], color=colour, linewidth=width, label=label)
    _log_y(ax, scale)
    ax.axhspan(scale.bottom, scale.floor / 10**0.08, color=ZERO_BAND, zorder=0, lw=0)
    stall = iops == 0
    ax.plot(t[stall] + MID, np.full(int(stall.sum()), scale.zero_y), linestyle="none",
            marker="v",
            markersize=6, color=ZERO, clip_on=False, gid="zero",
            label=f"no I/O completed: {int(stall.sum())} s (red band)")
    ax.yaxis.set_major_formatter(_us)
    if t.size:
        ax.set_xlim(0, t[-1] + 1)
    what = (workload or Workload()).torture
    _suptitle(fig, f"{title}\n{what}: completion latency per second "
                   "(from fio's histogram log)")
    ax.set_xlabel("Time (s)", fontsize=12)
    ax.set_ylabel("Latency (log scale)", fontsize=12)
    _legend_above(ax)
    return fig


def latency_chart(t: FloatArray, cols: Mapping[str, FloatArray], iops: FloatArray, *,
                  svg: bool = True, **kwargs: Any) -> Chart:
    return _render(latency_figure(t, cols, iops, **kwargs), "latency", svg)


def _us(value: float, _pos: Any = None) -> str:
    if value >= 1e6:
        return f"{value / 1e6:g} s"
    if value >= 1e3:
        return f"{value / 1e3:g} ms"
    return f"{value:g} µs"


def fill_top(*mib_s: FloatArray) -> float:
    """The y top of the fill charts of several runs (the highest second, rounded up)."""
    peak = max((float(np.nanmax(a)) for a in mib_s if np.isfinite(a).any()), default=0.0)
    return nice_top(peak * 1.05) if peak > 0 else 1.0


def fill_figure(t: FloatArray, mib_s: FloatArray, gib: FloatArray, *, title: str,
                cliff_s: int | None, cliff_gib: float | None, mean_mib_s: float | None,
                top: float | None = None, workload: Workload | None = None,
                events: Sequence[tuple[str, int, int]] = ()) -> Figure:
    from matplotlib.ticker import MaxNLocator

    fig, axes = _figure(ncols=2, sharey=True)
    top = max(top or 0.0, fill_top(mib_s))
    # a fill of a few seconds (a small drive): markers, or one second would be invisible;
    # the x ranges hold every point (none on a spine)
    short = t.size < 30
    for ax, x, xlabel in ((axes[0, 0], t + MID, "Time (s)"),
                          (axes[0, 1], gib, "GiB written")):
        ax.plot(x, mib_s, color=POINT, linewidth=1.0, marker="o",
                markersize=4 if short else 0, label="MiB/s per second")
        finite = x[np.isfinite(x)]
        hi = float(finite.max()) if finite.size else 0.0
        if ax is axes[0, 0]:
            ax.set_xlim(0, hi + MID)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            _event_marks(ax, events)  # the fill's stalls and throttles, on its time axis
        else:
            ax.set_xlim(0, hi * 1.05 or 1.0)
        if mean_mib_s is not None:
            ax.axhline(mean_mib_s, color="#444444", linestyle="--", linewidth=1.2,
                       label=f"mean: {mean_mib_s:.0f} MiB/s ({mb_s(mean_mib_s):.0f} MB/s)")
        at = cliff_s if ax is axes[0, 0] else cliff_gib
        if at is not None:
            ax.axvline(at, color="#ff7f0e", linestyle="--", linewidth=1.5,
                       label="cache cliff")
        ax.set_ylim(0, top)
        ax.set_xlabel(xlabel, fontsize=12)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if cliff_s is not None and cliff_gib is not None:
        labels = [f"SLC-cache cliff: {cliff_s} s = {cliff_gib:.4g} GiB written"
                  if lab == "cache cliff" else lab for lab in labels]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    span = (axes[0, 1].get_window_extent(renderer).x1
            - axes[0, 0].get_window_extent(renderer).x0)
    _legend_above(axes[0, 1], handles=handles, labels=labels, span_px=span)
    axes[0, 0].set_ylabel("Write throughput (MiB/s)", fontsize=12)
    _suptitle(fig, f"{title}\n{(workload or Workload()).fill}")
    return fig


def fill_chart(t: FloatArray, mib_s: FloatArray, gib: FloatArray, *, svg: bool = True,
               **kwargs: Any) -> Chart:
    return _render(fill_figure(t, mib_s, gib, **kwargs), "fill", svg)


def trim_figure(means: Mapping[str, float],
                series: Mapping[str, tuple[FloatArray, FloatArray]], *, title: str,
                verdict: str, recovery: float | None,
                workload: Workload | None = None) -> Figure:
    """Probe means as bars (MiB/s and MB/s) and the probes over time; both panels share a
    y range that holds every per-second value."""
    from matplotlib.ticker import MaxNLocator

    fig, axes = _figure(ncols=2)
    ax = axes[0, 0]
    phases = [p for p in PHASE_LABELS if p in means]
    values = [means[p] for p in phases]
    bars = ax.bar([PHASE_LABELS[p] for p in phases], values,
                  color=[PHASE_COLOURS[p] for p in phases], width=0.6)
    ax.bar_label(bars, labels=[f"{v:.1f} MiB/s\n{mb_s(v):.1f} MB/s" for v in values],
                 fontsize=11, padding=3)
    peak = max([*values, *(float(np.nanmax(y)) for _, y in series.values()
                           if np.isfinite(y).any())], default=1.0)
    top = nice_top(max(peak * 1.05, max(values, default=0.0) * 1.25))
    ax.set_ylim(0, top)
    ax.set_ylabel("Mean write throughput (MiB/s)", fontsize=12)
    _panel_label(ax, "probe means", fontsize=13)
    ax2 = axes[0, 1]
    for phase, (t, y) in series.items():
        # markers: a probe shorter than two seconds is one point, not an invisible line;
        # shrinking sizes, so that equal values of two phases both stay visible
        size = PHASE_MARKER_SIZES.get(phase, 4.0)
        ax2.plot(t + MID, y, color=PHASE_COLOURS.get(phase, "#333333"), linewidth=1.4,
                 marker="o", markersize=size if len(t) < 30 else 0,
                 label=PHASE_LABELS.get(phase, phase))
    end = max((float(t[-1]) + 1 for t, _ in series.values() if len(t)), default=0.0)
    if end == 0:
        ax2.text(0.5, 0.5, "no per-second samples\n(each probe took less than a second)",
                 transform=ax2.transAxes, ha="center", va="center", fontsize=12,
                 color="#555555")
    else:
        ax2.set_xlim(0, end)
    if 0 < end < 2:
        ax2.text(0.5, 0.04, "each probe took under two seconds: one sample each",
                 transform=ax2.transAxes, ha="center", fontsize=11, color="#555555")
    ax2.set_ylim(0, top)
    ax2.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole seconds, even for one
    ax2.set_xlabel("Time (s)", fontsize=12)
    ax2.set_ylabel("Write throughput (MiB/s)", fontsize=12)
    label = _panel_label(ax2, "probes over time", fontsize=13)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    _legend_above(ax2, reserve_px=label.get_window_extent(renderer).width + 20)
    rec = "" if recovery is None else f", recovery {recovery:.2f}"
    _suptitle(fig, f"{title}\nTRIM validation: {(workload or Workload()).probe} — "
                   f"verdict: {verdict}{rec}")
    return fig


def trim_chart(means: Mapping[str, float],
               series: Mapping[str, tuple[FloatArray, FloatArray]], *, svg: bool = True,
               **kwargs: Any) -> Chart:
    return _render(trim_figure(means, series, **kwargs), "trim-probes", svg)


@dataclass(frozen=True)
class DriveSeries:
    label: str  # drive model + serial
    t: FloatArray
    iops: FloatArray
    steady_start_s: float
    workload: Workload = Workload()
    note: str = ""  # e.g. "cancelled after 100 s": a run that did not finish

    @property
    def name(self) -> str:
        """The panel's name: the label, and the note of a run that did not finish."""
        return f"{self.label} — {self.note}" if self.note else self.label

    @property
    def has_steady(self) -> bool:
        """A second with a value in the steady window (a run cancelled before it has none)."""
        return bool(np.isfinite(self.iops[self.t >= self.steady_start_s]).any())


def compare_iops_figures(run: str, drives: Sequence[DriveSeries], *,
                         scale: LogScale | None = None,
                         linear_top: float | None = None) -> list[tuple[str, Figure]]:
    """``compare-<run>-iops-{full-log,steady-log,steady-linear}``: one panel per drive, all
    on the same axes. ``scale`` is shared with the other runs of the results folder
    (default: from these drives alone); the linear top (default) is the highest of these
    drives' :func:`steady_linear_top` for this run."""
    n = len(drives)
    if n == 0:
        return []
    scale = scale or log_scale(*(d.iops for d in drives))
    top = linear_top or max(
        steady_linear_top(d.iops[d.t >= d.steady_start_s], d.workload.iops_top)
        for d in drives)
    end = max((float(d.t[-1] + 1) for d in drives if d.t.size), default=1.0)
    loads = {d.workload.torture for d in drives}
    common = next(iter(loads)) if len(loads) == 1 else "per-drive workload in each panel"
    steady = [d for d in drives if d.has_steady]
    steady_from = min((d.steady_start_s for d in steady), default=0.0)
    every = drives
    out = []
    for kind in ("full-log", "steady-log", "steady-linear"):
        # a run stopped before its steady window has no steady panel (named in the title)
        drives = every if kind == "full-log" else steady
        left_out = [] if kind == "full-log" else [d.name for d in every if not d.has_steady]
        n = len(drives)
        if n == 0:
            continue
        rows = 1
        while True:  # a legend that wraps beside a long panel name: redo with taller gaps
            gap = ROW_IN * rows + 0.15
            height = max(HEIGHT_IN, 1.5 + ROW_IN * rows + 2.3 * n + gap * (n - 1))
            fig, axes = _figure(height_in=height, nrows=n, sharex=True, header_rows=rows,
                                panel_gap_in=gap, title_lines=3 if left_out else 2)
            renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
            need = 1
            for ax, d in zip(axes[:, 0], drives, strict=True):
                sel = np.ones(d.t.size, bool) if kind == "full-log" \
                    else d.t >= d.steady_start_s
                linear = kind == "steady-linear"
                _iops_points(ax, d.t[sel], d.iops[sel], None if linear else scale,
                             linear_top=top if linear else None, label="IOPS",
                             marker_size=2.0)
                text = d.name if len(loads) == 1 else f"{d.name} — {d.workload.torture}"
                label = _panel_label(ax, text)
                ax.set_ylabel("IOPS", fontsize=11)
                need = max(need, _legend_above(
                    ax, reserve_px=label.get_window_extent(renderer).width + 20,
                    adjust=False))
            if need <= rows:
                break
            rows = need
        axes[-1, 0].set_xlim(0 if kind == "full-log" else steady_from, end)
        axes[-1, 0].set_xlabel("Time (s)", fontsize=12)
        what = {"full-log": "whole run, log scale", "steady-log": "steady window, log scale",
                "steady-linear": f"steady window, linear scale 0–{si(top)}"}[kind]
        title = f"{run} — {common}\n{what} — the same scale for every drive"
        if left_out:
            title += "\nwithout a steady window: " + "; ".join(left_out)
        _suptitle(fig, title)
        out.append((f"compare-{file_part(run)}-iops-{kind}", fig))
    return out


def compare_iops_charts(run: str, drives: Sequence[DriveSeries], svg: bool = True,
                        **kwargs: Any) -> list[Chart]:
    return [_render(fig, name, svg) for name, fig in compare_iops_figures(run, drives, **kwargs)]


TrimRow = tuple[str, Mapping[str, float], str, str]  # label, MiB/s by phase, verdict, probe


def compare_trim_figure(rows: Sequence[TrimRow]) -> Figure | None:
    """``compare-trim``: grouped bars (clean / after torture / after TRIM) per drive, the
    values in MiB/s and MB/s; each drive's label says its verdict and the probe shape it
    used (drives probed differently are not compared like for like)."""
    if not rows:
        return None
    fig, axes = _figure(height_in=max(HEIGHT_IN, 2.2 + 1.1 * len(rows)), title_lines=1,
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
        ax.bar_label(bars, labels=[f"{v:.1f} MiB/s ({mb_s(v):.1f} MB/s)"
                                   if math.isfinite(v) else "" for v in vals],
                     fontsize=10, padding=3)
    # the labels' column is 3.4 in wide: a long drive name wraps instead of being cut off
    ax.set_yticks(y, [plain(f"{textwrap.fill(label, 34)}\n{textwrap.fill(probe, 34)}\n"
                            f"verdict: {verdict}") for label, _, verdict, probe in rows],
                  fontsize=11)
    ax.invert_yaxis()
    ax.set_xlim(0, nice_top(peak * 1.5))
    ax.set_xlabel("Mean sequential write throughput of the probe (MiB/s)", fontsize=12)
    _suptitle(fig, "TRIM validation — every drive, same scale")
    _legend_above(ax)
    return fig


def compare_trim_chart(rows: Sequence[TrimRow],
                       svg: bool = True) -> Chart | None:
    fig = compare_trim_figure(rows)
    return None if fig is None else _render(fig, "compare-trim", svg)


TEMPERATURE_HEIGHT_IN = 3.2
TEMPERATURE = "#b03a2e"


def temperature_figure(series: Mapping[str, tuple[FloatArray, FloatArray]], *, title: str,
                       end: float, name: str, steady_start_s: float | None = None,
                       probes: bool = False) -> Figure:
    """The drive's own temperature (sensors-<phase>.csv, deg C, about once a second) drawn
    under the chart whose clock it shares: under ``iops-full-log`` (one series, the
    torture; x from 0 to ``end`` as that chart, the steady window shaded), or under
    ``trim-probes`` (``probes``: one line per probe phase in the right panel, aligned with
    "probes over time"; the left panel the peak of each probe, as the bars above it). The
    plot area has the IOPS charts' fixed margins, so the time axes line up on the page. An
    empty cell (a failed read) is a gap in the line."""
    from matplotlib.ticker import MaxNLocator

    fig, axes = _figure(TEMPERATURE_HEIGHT_IN, ncols=2 if probes else 1, title_lines=2)
    ax = axes[0, -1]
    values = np.concatenate([y[np.isfinite(y)] for _, y in series.values()] or [np.empty(0)])
    lo = float(values.min()) if values.size else 20.0
    hi = float(values.max()) if values.size else 60.0
    ax.set_ylim(math.floor((lo - 3) / 10) * 10, math.ceil((hi + 3) / 10) * 10)
    if steady_start_s is not None and steady_start_s < end:
        ax.axvspan(steady_start_s, end, color=STEADY_SPAN, zorder=0,
                   label=f"steady window (t ≥ {steady_start_s:g} s)")
    for phase, (t, y) in series.items():
        key = phase.removeprefix("probe-")
        colour = PHASE_COLOURS.get(key, TEMPERATURE) if probes else TEMPERATURE
        short = np.isfinite(y).sum() < 30
        ax.plot(t + MID, y, color=colour, gid=f"temperature-{key}"
                if probes else "temperature", marker="o",
                linewidth=PHASE_LINE_WIDTHS.get(key, 1.4) if probes else 1.4,
                markersize=(PHASE_MARKER_SIZES.get(key, 4.0) if probes else 4.0)
                if short else 0,
                label=PHASE_LABELS.get(key, key) if probes else "drive temperature")
    ax.set_xlim(0, end)
    if probes:  # the ticks of the chart above: whole seconds under the probes panel
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("Time (s)", fontsize=12)
    ax.set_ylabel("°C", fontsize=12)
    if probes:
        left = axes[0, 0]
        phases = [p for p in series if np.isfinite(series[p][1]).any()]
        peaks = [float(np.nanmax(series[p][1])) for p in phases]
        keys = [p.removeprefix("probe-") for p in phases]
        bars = left.bar([PHASE_LABELS.get(k, k) for k in keys], peaks, width=0.6,
                        color=[PHASE_COLOURS.get(k, TEMPERATURE) for k in keys])
        left.bar_label(bars, labels=[f"{v:.0f} °C" for v in peaks], fontsize=11, padding=3)
        left.set_ylim(0, ax.get_ylim()[1] + 10)
        left.set_ylabel("Peak °C", fontsize=12)
        _panel_label(left, "peak per probe", fontsize=13)
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        label = _panel_label(ax, "temperature over time", fontsize=13)
        _legend_above(ax, reserve_px=label.get_window_extent(renderer).width + 20)
        what = "during each probe"
    else:
        _legend_above(ax)
        what = "during the torture"
    _suptitle(fig, f"{title}\nDrive temperature {what} (its own sensor, °C)")
    return fig


def temperature_chart(series: Mapping[str, tuple[FloatArray, FloatArray]], *,
                      svg: bool = True, **kwargs: Any) -> Chart:
    return _render(temperature_figure(series, **kwargs), kwargs["name"], svg)


PTS_METRIC_LABEL = {"iops": "IOPS", "mib_s": "MB/s", "lat_mean_us": "mean latency (µs)"}


def pts_convergence_figure(loop: Any, *, title: str) -> Figure:
    """A SNIA PTS loop's steady-state convergence: the tracking variable of every round
    (MB/s in decimal units), the measurement window shaded, its mean, and
    dotted lines at ±10% of it (the PTS's range limit is 20% of the mean)."""
    from matplotlib.ticker import MaxNLocator

    fig, axes = _figure()
    ax = axes[0, 0]
    scale = MB_PER_MIB if loop.metric == "mib_s" else 1.0
    values = [np.nan if v is None else v * scale for v in loop.tracked()]
    rounds = np.arange(1, len(values) + 1)
    ax.plot(rounds, values, marker="o", markersize=6, linewidth=1.5, color=POINT,
            label=f"{loop.tracking} per round")
    if loop.window is not None:
        a, b = loop.window
        ax.axvspan(a - 0.5, b + 0.5, color="#2ca02c" if loop.reached else "#d62728",
                   alpha=0.10, label="measurement window" + ("" if loop.reached
                                                             else " (NOT steady)"))
        inside = [v for v in values[a - 1:b] if np.isfinite(v)]
        if inside:
            mean = float(np.mean(inside))
            ax.hlines(mean, a - 0.5, b + 0.5, color="#444444", linewidth=1.5,
                      label=f"window mean {si(mean)}")
            for k, style in ((1.1, ":"), (0.9, ":")):
                ax.hlines(mean * k, a - 0.5, b + 0.5, color="#777777", linestyle=style,
                          linewidth=1.0)
    ax.set_xlim(0.5, max(len(values), 5) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    finite = [v for v in values if np.isfinite(v)]
    ax.set_ylim(0, nice_top(max(finite) * 1.15) if finite else 1.0)
    ax.yaxis.set_major_formatter(si)
    ax.set_xlabel(f"Round ({loop.round_s} s of each workload; at most {loop.max_rounds})",
                  fontsize=12)
    ax.set_ylabel(plain(PTS_METRIC_LABEL.get(loop.metric, loop.metric)), fontsize=12)
    _suptitle(fig, f"{title}\nSNIA PTS {loop.name}: steady-state convergence of "
                   f"{loop.tracking} (dotted: the window mean ±10%)")
    _legend_above(ax)
    return fig


def pts_convergence_chart(loop: Any, *, svg: bool = True, **kwargs: Any) -> Chart:
    return _render(pts_convergence_figure(loop, **kwargs),
                   f"pts-{file_part(loop.name)}-convergence", svg)


def pts_iops_figure(loop: Any, *, title: str) -> Figure:
    """The PTS IOPS matrix in 2D: IOPS against block size (log scales), a line per R/W mix,
    from the measurement window's means."""
    fig, axes = _figure()
    ax = axes[0, 0]
    figs = loop.window_figures
    sizes = list(dict.fromkeys(w.block_size for w in loop.workloads))
    mixes = list(dict.fromkeys(w.read_percent for w in loop.workloads))
    x = {bs: i for i, bs in enumerate(reversed(sizes))}  # smallest block on the left
    drawn = [v for f in figs.values() if (v := f.get("iops"))]
    _log_y(ax, log_scale(np.asarray(drawn or [1.0], dtype=np.float64), robust=False))
    for i, read in enumerate(mixes):
        pts = [(x[w.block_size], figs.get(w.name, {}).get("iops")) for w in loop.workloads
               if w.read_percent == read]
        pts = sorted((a, b) for a, b in pts if b)
        if pts:
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", markersize=5,
                    linewidth=1.5, color=HIR_COLOURS[i % len(HIR_COLOURS)],
                    label=f"{read}/{100 - read}")
    ax.set_xticks(list(x.values()), [plain(size_text(bs)) for bs in x])
    ax.set_xlabel("Block size", fontsize=12)
    ax.set_ylabel("IOPS (log scale)", fontsize=12)
    state = "steady" if loop.reached else "NOT steady"
    where = (f"rounds {loop.window[0]}–{loop.window[1]}, {state}" if loop.window
             else "no measurement window")
    _suptitle(fig, f"{title}\nSNIA PTS IOPS by block size and R/W mix (read/write %; {where})")
    _legend_above(ax)
    return fig


def pts_iops_chart(loop: Any, *, svg: bool = True, **kwargs: Any) -> Chart:
    return _render(pts_iops_figure(loop, **kwargs), f"pts-{file_part(loop.name)}-matrix", svg)


# MHDD's colours for its read-time bands (grey to red), unreadable in black
SURFACE_BAND_COLOURS = ("#9e9e9e", "#5b8fd6", "#2ca02c", "#e6b800", "#ff7f0e", "#d62728")
SURFACE_BAND_LABELS = ("< 5 ms", "< 20 ms", "< 50 ms", "< 150 ms", "< 500 ms", "≥ 500 ms")


def surface_figure(regions: Mapping[str, FloatArray], *, title: str,
                   bands: Sequence[int], unreadable: int) -> Figure:
    """The surface scan (stages/surface.py): per region of the drive (x: where it starts,
    GB from LBA 0), its read speed above, its mean and slowest read below (log scale, with
    MHDD's band edges), unreadable regions marked; the blocks per band in the legend."""
    fig, axes = _figure(HEIGHT_IN * 1.25, nrows=2, sharex=True, panel_gap_in=0.35,
                        header_rows=2)
    speed, lat = axes[0, 0], axes[1, 0]
    x = regions["start_byte"] / 1e9
    speed.plot(x, regions["mb_s"], color=POINT, linewidth=1.2, marker="o",
               markersize=3 if x.size < 60 else 0, label="read speed per region (MB/s)")
    top = float(np.nanmax(regions["mb_s"])) if np.isfinite(regions["mb_s"]).any() else 1.0
    speed.set_ylim(0, nice_top(top * 1.1) if top > 0 else 1.0)
    speed.set_ylabel("MB/s", fontsize=12)
    mean_ms = np.where(regions["mean_ms"] > 0, regions["mean_ms"], np.nan)
    max_ms = np.where(regions["max_ms"] > 0, regions["max_ms"], np.nan)
    lat.plot(x, max_ms, color="#d62728", linewidth=1.0, label="slowest read in the region")
    lat.plot(x, mean_ms, color=POINT, linewidth=1.0, label="mean read")
    lat.set_yscale("log")
    finite = np.concatenate([v[np.isfinite(v)] for v in (mean_ms, max_ms)])
    lo = min(0.1, float(finite.min()) / 2) if finite.size else 0.1
    hi = max(1000.0, float(finite.max()) * 2) if finite.size else 1000.0
    lat.set_ylim(lo, hi)
    for edge, colour in zip((5, 20, 50, 150, 500), SURFACE_BAND_COLOURS[1:], strict=True):
        lat.axhline(edge, color=colour, linestyle=":", linewidth=1.0)
    bad = regions["unreadable_blocks"] > 0
    if bad.any():
        lat.plot(x[bad], np.full(int(bad.sum()), hi / 1.5), linestyle="none", marker="X",
                 markersize=9, color="black", label="unreadable blocks here")
    lat.set_ylabel("Read time (ms)", fontsize=12)
    lat.set_xlabel("Position on the drive (GB from LBA 0)", fontsize=12)
    end = float(regions["end_byte"][-1]) / 1e9 if regions["end_byte"].size else 1.0
    lat.set_xlim(0, end)
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(color=c) for c in (*SURFACE_BAND_COLOURS, "black")]
    labels = [f"{label}: {n:,}" for label, n in zip(SURFACE_BAND_LABELS, bands, strict=True)]
    labels[0] = f"blocks {labels[0]}"
    labels.append(f"unreadable: {unreadable:,}")
    _legend_above(speed, handles=handles, labels=labels)
    bands_legend = speed.get_legend()
    speed.legend(loc="lower left", fontsize=9, framealpha=0.9)
    speed.add_artist(bands_legend)  # an axes keeps one legend: the bands' is kept as an artist
    lat.legend(loc="lower right", fontsize=9, framealpha=0.9)
    _suptitle(fig, f"{title}\nSurface scan: every block read once; blocks by read time")
    return fig


def surface_chart(regions: Mapping[str, FloatArray], *, svg: bool = True,
                  **kwargs: Any) -> Chart:
    return _render(surface_figure(regions, **kwargs), "surface", svg)
