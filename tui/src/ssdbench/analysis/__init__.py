"""Analysis of measured series: statistics, steady window, stalls, SNIA steady state,
spare-area cliff, latency, fill and the TRIM verdict.

Pure functions on numpy arrays returning frozen dataclasses with ``to_dict()``; no files
are read here (``ssdbench.report`` loads the CSVs). Definitions: docs/analysis.md.
"""

from __future__ import annotations

from ssdbench.analysis.fill import FillStats, fill_stats
from ssdbench.analysis.iops import (
    Cliff,
    IopsAnalysis,
    SeriesStats,
    SniaWindow,
    Stalls,
    SteadyState,
    analyse_iops,
    default_steady_start,
    final_level,
    minute_rounds,
    rolling_mean,
    running_plateau,
    series_stats,
    snia_steady_state,
    spare_area_cliff,
    stalls,
    steady_window_start,
    sustained_drop,
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
    "default_steady_start",
    "fill_stats",
    "final_level",
    "latency_summary",
    "minute_rounds",
    "pooled_percentiles",
    "rolling_mean",
    "running_plateau",
    "series_stats",
    "snia_steady_state",
    "spare_area_cliff",
    "stalls",
    "steady_window_start",
    "sustained_drop",
    "trim_verdict",
]
