"""Analysis of measured series: statistics, steady window, levels and events (the cliff,
throttles, stalls, steps, declines), SNIA steady state, latency, fill and the TRIM verdict.

Pure functions on numpy arrays returning frozen dataclasses with ``to_dict()``; no files
are read here (``ssdbench.report`` loads the CSVs). Definitions: docs/analysis.md.
"""

from __future__ import annotations

from ssdbench.analysis.events import Event, Events, find_events
from ssdbench.analysis.fill import FillStats, fill_stats
from ssdbench.analysis.iops import (
    Cliff,
    IopsAnalysis,
    SeriesStats,
    SniaWindow,
    Stalls,
    SteadyState,
    analyse_iops,
    clean_series,
    default_steady_start,
    final_level,
    minute_rounds,
    rolling_mean,
    series_stats,
    snia_steady_state,
    spare_area_cliff,
    stalls,
    steady_window_start,
)
from ssdbench.analysis.latency import (
    LatencyHistogram,
    LatencySummary,
    latency_summary,
    pooled_percentiles,
)
from ssdbench.analysis.trim import VERDICTS, TrimVerdict, trim_verdict

__all__ = [
    "VERDICTS",
    "Cliff",
    "Event",
    "Events",
    "FillStats",
    "IopsAnalysis",
    "LatencyHistogram",
    "LatencySummary",
    "SeriesStats",
    "SniaWindow",
    "Stalls",
    "SteadyState",
    "TrimVerdict",
    "analyse_iops",
    "clean_series",
    "default_steady_start",
    "fill_stats",
    "final_level",
    "find_events",
    "latency_summary",
    "minute_rounds",
    "pooled_percentiles",
    "rolling_mean",
    "series_stats",
    "snia_steady_state",
    "spare_area_cliff",
    "stalls",
    "steady_window_start",
    "trim_verdict",
]
