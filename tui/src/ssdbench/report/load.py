"""Reading a results folder (docs/results-format.md) into arrays and dicts.

Nothing here raises for a damaged folder: what cannot be read becomes a *problem* (a
sentence naming the file) and the rest is still reported. A results folder may come from
anywhere (a stick from another bench, a copy of a store): every file is read through
:func:`ssdbench.jsonfile.read_bytes` (a regular file, never through a link, at most a size),
and a folder that is a link is not a drive or run folder (it is named as left out).
"""

from __future__ import annotations

import csv
import importlib
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ssdbench import jsonfile
from ssdbench.analysis.trim import TRIM_PHASES

FloatArray = npt.NDArray[np.float64]

IOPS_COLUMNS = ("time_s", "iops", "mib_s", "lat_mean_us", "lat_p99_us", "lat_p9999_us",
                "lat_max_us")
FILL_COLUMNS = ("time_s", "mib_s", "gib_written")
PROBE_COLUMNS = ("time_s", "mib_s")
PROBES_COLUMNS = ("phase", "mib_s", "seconds", "bytes")
SENSORS_COLUMNS = ("second", "temperature_c")
RUN_ORDER = ("consistency-default", "consistency-op25", "trim", "diagnose", "grade")
MAX_SECONDS = 10 * 24 * 3600  # a time_s beyond 10 days is a damaged file, not a long run
CSV_LIMIT = 128 << 20  # bytes: 10 days of iops.csv is about 60 MB


class ResultsFileError(ValueError):
    """A results file that exists but cannot be read; the message names file and line."""


SURFACE_COLUMNS = ("region", "start_byte", "end_byte", "mb_s", "mean_ms", "max_ms",
                   "unreadable_blocks")


def read_columns(path: Path, required: tuple[str, ...]) -> dict[str, FloatArray]:
    """Numeric columns of a CSV by name (an empty field is NaN).

    Rows are placed by the first required column, whole seconds (``time_s``; ``second`` in
    sensors-<phase>.csv), 0-based: a missing second is NaN in every column, a repeated
    second keeps its last row. The result's ``time_s`` is ``0 … N-1``.
    """
    clock = required[0]
    rows = list(csv.reader(_csv_text(path)))
    if not rows:
        raise ResultsFileError(f"{path.name}: empty file (no header line)")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise ResultsFileError(f"{path.name}: missing column(s) {', '.join(missing)}")
    index = {c: header.index(c) for c in required}
    times: list[int] = []
    values: list[list[float]] = []
    for lineno, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        try:
            parsed = [_number(row[index[c]]) if index[c] < len(row) else math.nan
                      for c in required]
        except ValueError as exc:
            raise ResultsFileError(f"{path.name} line {lineno}: {exc}") from exc
        t = parsed[0]
        if math.isnan(t) or t < 0 or t > MAX_SECONDS or t != int(t):
            bad = row[index[clock]]
            raise ResultsFileError(f"{path.name} line {lineno}: bad {clock} {bad!r}")
        times.append(int(t))
        values.append(parsed)
    n = max(times) + 1 if times else 0
    out = {c: np.full(n, math.nan, dtype=np.float64) for c in required}
    if times:
        arr = np.asarray(values, dtype=np.float64)
        idx = np.asarray(times)
        for j, c in enumerate(required):
            out[c][idx] = arr[:, j]
    out[clock] = out["time_s"] = np.arange(n, dtype=np.float64)
    return out


def _csv_text(path: Path) -> io.StringIO:
    """A results CSV's text (:func:`ssdbench.jsonfile.read_bytes`: a regular file, no link,
    at most CSV_LIMIT bytes); ResultsFileError naming the file otherwise."""
    try:
        text = jsonfile.read_bytes(path, limit=CSV_LIMIT, follow=False).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"{path.name}: cannot read: {exc}") from exc
    return io.StringIO(text, newline="")


def there(path: Path) -> bool:
    """Something is at ``path`` (a file, a link, a FIFO: what is there is read, or named as
    unreadable; a folder is not a results file)."""
    return os.path.lexists(path) and not (path.is_dir() and not path.is_symlink())


def links(folder: Path) -> list[str]:
    """The names of the symbolic links to folders in ``folder``: a results folder holds
    none, they are not drive or run folders (left out, and named). A link to a file is
    named by the reader or writer that refuses it."""
    try:
        return sorted(p.name for p in Path(folder).iterdir() if p.is_symlink() and p.is_dir())
    except OSError:
        return []


def _number(cell: str) -> float:
    cell = cell.strip()
    if not cell:
        return math.nan
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(f"not a number: {cell!r}") from None
    if math.isinf(value):
        raise ValueError(f"not a finite number: {cell!r}")
    return value


@dataclass(frozen=True)
class Probe:
    phase: str
    mib_s: float
    seconds: float | None
    bytes: int | None


def read_probes(path: Path) -> dict[str, Probe]:
    rows = list(csv.DictReader(_csv_text(path)))
    out: dict[str, Probe] = {}
    for lineno, row in enumerate(rows, start=2):
        phase = (row.get("phase") or "").strip()
        if phase not in TRIM_PHASES:
            raise ResultsFileError(f"{path.name} line {lineno}: unknown phase {phase!r}")
        try:
            mib_s = _number(row.get("mib_s") or "")
            seconds = _number(row.get("seconds") or "")
            nbytes = _number(row.get("bytes") or "")
        except ValueError as exc:
            raise ResultsFileError(f"{path.name} line {lineno}: {exc}") from exc
        if math.isnan(mib_s):
            continue
        out[phase] = Probe(phase, mib_s, None if math.isnan(seconds) else seconds,
                           None if math.isnan(nbytes) else int(nbytes))
    return out


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = jsonfile.read(path, follow=False)
    except (OSError, ValueError) as exc:
        raise ResultsFileError(f"{path.name}: cannot read: {exc}") from exc
    if not isinstance(data, dict):
        raise ResultsFileError(f"{path.name}: not a JSON object")
    return data


@dataclass(frozen=True, eq=False)
class RunData:
    """Everything read from one run folder."""

    run_dir: Path
    name: str
    meta: dict[str, Any]  # run.json ({} when missing or unreadable)
    iops: dict[str, FloatArray] | None
    fill: dict[str, FloatArray] | None
    probes: dict[str, Probe]
    probe_series: dict[str, dict[str, FloatArray]]
    readscan: dict[str, FloatArray] | None
    problems: tuple[str, ...] = field(default=())
    unreadable: tuple[str, ...] = field(default=())  # files there but not readable
    # sensors-<phase>.csv by phase ("torture", "probe-clean", …): the drive's temperature
    sensors: dict[str, dict[str, FloatArray]] = field(default_factory=dict)
    # surface.csv (the surface scan): one row per region of the drive
    surface: dict[str, FloatArray] | None = None


    @property
    def kind(self) -> str:
        kind = self.meta.get("kind")
        if isinstance(kind, str) and kind:
            return kind
        for k in ("consistency", "trim", "diagnose", "grade", "erase"):
            if self.name.startswith(k):
                return k
        return "unknown"

    @property
    def state(self) -> str:
        """run.json ``state``; ``damaged`` when run.json is there but unreadable (a missing
        run.json, a run cut before it was written, is ``unknown``)."""
        if "run.json" in self.unreadable:
            return "damaged"
        state = self.meta.get("state")
        return state if isinstance(state, str) else "unknown"


def rebuild_csvs_from_fio_logs(run_dir: Path) -> str | None:
    """Let the fio room rebuild the CSVs from ``fio/*.log`` when both exist.

    Returns a problem sentence when the rebuild failed (the CSVs on disk are used then).
    """
    fio_dir = run_dir / "fio"
    if fio_dir.is_symlink():
        return "fio is a symbolic link: not read; the CSVs on disk are used"
    if not fio_dir.is_dir() or not any(fio_dir.glob("*.log")):
        return None
    for path in sorted(fio_dir.iterdir()):  # the fio room opens them: no FIFO, no link
        if path.is_symlink() or not path.is_file():
            return (f"fio/{path.name} is not a regular file: the CSVs are not rebuilt from "
                    "the fio logs; the CSVs on disk are used")
    try:
        logs = importlib.import_module("ssdbench.fio.logs")
    except ModuleNotFoundError as exc:
        if exc.name in ("ssdbench.fio.logs", "ssdbench.fio"):
            return None
        raise
    write_run_csvs = getattr(logs, "write_run_csvs", None)
    if write_run_csvs is None:
        return None
    try:
        write_run_csvs(run_dir)
    except Exception as exc:  # a damaged log must not stop the report
        return f"rebuilding the CSVs from the fio logs failed ({exc}); the CSVs on disk are used"
    return None


def load_run(run_dir: Path, *, rebuild: bool = True) -> RunData:
    run_dir = Path(run_dir)
    problems: list[str] = []
    unreadable: list[str] = []
    if rebuild:
        note = rebuild_csvs_from_fio_logs(run_dir)
        if note:
            problems.append(note)
    meta: dict[str, Any] = {}
    if there(run_dir / "run.json"):
        try:
            meta = read_json(run_dir / "run.json")
        except ResultsFileError as exc:
            problems.append(str(exc))
            unreadable.append("run.json")
    else:
        problems.append("run.json is missing")

    def columns(name: str, cols: tuple[str, ...]) -> dict[str, FloatArray] | None:
        path = run_dir / name
        if not there(path):
            return None
        try:
            return read_columns(path, cols)
        except ResultsFileError as exc:
            problems.append(str(exc))
            unreadable.append(name)
            return None

    iops = columns("iops.csv", IOPS_COLUMNS)
    fill = columns("fill.csv", FILL_COLUMNS)
    readscan = columns("readscan.csv", ("time_s", "offset_gib", "mib_s"))
    probes: dict[str, Probe] = {}
    if there(run_dir / "probes.csv"):
        try:
            probes = read_probes(run_dir / "probes.csv")
        except ResultsFileError as exc:
            problems.append(str(exc))
            unreadable.append("probes.csv")
    probe_series: dict[str, dict[str, FloatArray]] = {}
    for phase in TRIM_PHASES:
        series = columns(f"probe-{phase}.csv", PROBE_COLUMNS)
        if series is not None:
            probe_series[phase] = series
            if phase not in probes:  # probes.csv lost: the mean of the per-second values
                vals = series["mib_s"][~np.isnan(series["mib_s"])]
                if vals.size:
                    probes[phase] = Probe(phase, float(vals.mean()), float(vals.size), None)
    sensors: dict[str, dict[str, FloatArray]] = {}
    for path in sorted(run_dir.glob("sensors-*.csv")):
        series = columns(path.name, SENSORS_COLUMNS)
        if series is not None:
            sensors[path.stem.removeprefix("sensors-")] = series
    surface = columns("surface.csv", SURFACE_COLUMNS)
    return RunData(run_dir, run_dir.name, meta, iops, fill, probes, probe_series, readscan,
                   tuple(problems), tuple(unreadable), sensors, surface)


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and any(
        (path / f).is_file() for f in ("run.json", "iops.csv", "fill.csv", "probes.csv",
                                       "readscan.csv", "surface.csv")
    )


def run_dirs(drive_dir: Path) -> list[Path]:
    """The run folders of a drive folder, reviewer order first, then by name."""
    found = [p for p in Path(drive_dir).iterdir() if is_run_dir(p)]

    def key(p: Path) -> tuple[int, str]:
        return (RUN_ORDER.index(p.name) if p.name in RUN_ORDER else len(RUN_ORDER), p.name)

    return sorted(found, key=key)


def is_drive_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and (
        (path / "drive.json").is_file() or bool(run_dirs(path)))


def drive_dirs(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).iterdir() if not p.name.startswith(".")
                  and is_drive_dir(p))


def drive_identity(
    drive_dir: Path, runs: list[RunData]
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Identity of the drive (drive.json, else the first run.json's ``drive``) and the
    whole drive.json (for SMART and erase records); problems as sentences."""
    problems: list[str] = []
    doc: dict[str, Any] = {}
    path = Path(drive_dir) / "drive.json"
    if there(path):
        try:
            doc = read_json(path)
        except ResultsFileError as exc:
            problems.append(str(exc))
    else:
        problems.append("drive.json is missing")
    identity: dict[str, Any] = {}
    for key in ("drive", "identity"):
        if isinstance(doc.get(key), dict):
            identity = dict(doc[key])
            break
    else:
        if "model" in doc or "serial" in doc:
            identity = {k: v for k, v in doc.items() if not isinstance(v, dict | list)}
    if not identity:
        for run in runs:
            if isinstance(run.meta.get("drive"), dict):
                identity = dict(run.meta["drive"])
                break
    return identity, doc, problems
