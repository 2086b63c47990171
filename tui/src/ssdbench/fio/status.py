"""fio's JSON output: the stream of status dumps and the final report, as frozen dataclasses.

With ``--output-format=json --status-interval=1`` fio prints one pretty-printed JSON object
per second on stdout, then the final one, one after another, with the odd non-JSON line
between them (``fio: terminating on signal 2``, warnings). :class:`JsonStreamSplitter`
splits that stream incrementally; :func:`parse_report` turns one object into a
:class:`FioReport`. Counters in the dumps are cumulative since the job started.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class FioOutputError(ValueError):
    """fio printed something that is not the JSON it should be."""


class JsonStreamSplitter:
    """Incremental splitter for concatenated top-level JSON objects with junk between them.

    fio prints each object starting with a line ``{`` and ending with a line ``}`` (nested
    objects are indented). Anything outside those lines is kept in :attr:`junk` (fio's
    messages). A line inside an object that breaks the JSON (a warning printed in the middle)
    is dropped and remembered in :attr:`junk` too.
    """

    def __init__(self) -> None:
        self._partial = ""
        self._lines: list[str] | None = None
        self.junk: list[str] = []
        self.texts: list[str] = []  # every complete object's text, in order

    def feed(self, data: bytes | str) -> list[dict[str, Any]]:
        """Add output; return the objects completed by it."""
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        text = self._partial + text
        *lines, self._partial = text.split("\n")
        done: list[dict[str, Any]] = []
        for line in lines:
            stripped = line.rstrip("\r")
            if self._lines is None:
                if stripped == "{":
                    self._lines = [stripped]
                elif stripped.strip():
                    self.junk.append(stripped)
                continue
            self._lines.append(stripped)
            if stripped == "}":
                obj = self._decode(self._lines)
                self._lines = None
                if obj is not None:
                    done.append(obj)
        return done

    def finish(self) -> list[dict[str, Any]]:
        """End of stream: a trailing line without newline may close the last object."""
        rest = self._partial
        self._partial = ""
        return self.feed(rest + "\n") if rest else []

    def _decode(self, lines: list[str]) -> dict[str, Any] | None:
        text = "\n".join(lines)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            kept = [ln for ln in lines if not ln.startswith("fio:")]
            self.junk += [ln for ln in lines if ln.startswith("fio:")]
            text = "\n".join(kept)
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                self.junk.append(f"(unparseable JSON object of {len(lines)} lines dropped)")
                return None
        if not isinstance(obj, dict):
            return None
        self.texts.append(text)
        return obj


@dataclass(frozen=True)
class DirStats:
    """One direction (read or write) of one job, cumulative since the job started."""

    io_bytes: int
    total_ios: int
    runtime_ms: int
    bw_kib_s: float
    iops: float
    # total latency (submission to completion) of the whole job, in microseconds, and the
    # completion latency's five-nines percentile (fio's own histogram, percentile_list); None
    # when fio reported none (no I/O in this direction, or not asked for)
    lat_mean_us: float | None = None
    lat_max_us: float | None = None
    clat_p99999_us: float | None = None
    # the completion-latency histogram (fio's json+ ``clat_ns.bins``): (bin value in ns, I/Os)
    # in ascending order; empty when fio printed plain JSON
    clat_bins: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, obj: object) -> DirStats:
        obj = obj or {}
        if not isinstance(obj, Mapping):
            raise FioOutputError(f"fio JSON: a direction is a {type(obj).__name__}, not an "
                                 "object")
        total_ios = _int(obj.get("total_ios", 0), "total_ios")
        lat = obj.get("lat_ns") if total_ios > 0 else None
        lat = lat if isinstance(lat, Mapping) else {}
        clat = obj.get("clat_ns") if total_ios > 0 else None
        pct = clat.get("percentile") if isinstance(clat, Mapping) else None
        pct = pct if isinstance(pct, Mapping) else {}
        return cls(
            io_bytes=_int(obj.get("io_bytes", 0), "io_bytes"),
            total_ios=total_ios,
            runtime_ms=_int(obj.get("runtime", 0), "runtime"),
            bw_kib_s=_float(obj.get("bw", 0.0), "bw"),
            iops=_float(obj.get("iops", 0.0), "iops"),
            lat_mean_us=_us(lat.get("mean"), "lat_ns.mean"),
            lat_max_us=_us(lat.get("max"), "lat_ns.max"),
            clat_p99999_us=_us(pct.get("99.999000"), "clat_ns.percentile.99.999000"),
            clat_bins=_bins(clat.get("bins") if isinstance(clat, Mapping) else None),
        )


def _bins(obj: object) -> tuple[tuple[int, int], ...]:
    """fio's json+ histogram ``{"<ns>": count, ...}`` as sorted (ns, count) pairs; a key or
    count that is not a whole number >= 0 is FioOutputError naming it."""
    if obj is None:
        return ()
    if not isinstance(obj, Mapping):
        raise FioOutputError(f"fio JSON: clat_ns.bins is a {type(obj).__name__}, not an object")
    out = []
    for key, count in obj.items():
        if not isinstance(key, str) or not key.isdigit() or len(key) > 20:
            raise FioOutputError(f"fio JSON: clat_ns.bins key {key!r} is not a latency in ns")
        n = _int(count, f"clat_ns.bins[{key}]")
        if n < 0:
            raise FioOutputError(f"fio JSON: clat_ns.bins[{key}] is {n}, below zero")
        out.append((int(key), n))
    return tuple(sorted(out))


def _us(value: object, what: str) -> float | None:
    """Nanoseconds from fio's JSON as microseconds; None when absent."""
    return None if value is None else _float(value, what) / 1000


def _float(value: object, what: str) -> float:
    """A finite number from fio's JSON (a number, or a number as text), else FioOutputError
    naming the key: fio's output is untrusted like any tool's."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise FioOutputError(f"fio JSON: {what} is {value!r}, not a number")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise FioOutputError(f"fio JSON: {what} is {value!r}, not a number") from None
    if not math.isfinite(number):
        raise FioOutputError(f"fio JSON: {what} is {value!r}, not a finite number")
    return number


def _int(value: object, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(_float(value, what))


@dataclass(frozen=True)
class FioJob:
    name: str
    error: int  # errno of the first error, 0 when none
    elapsed_s: int
    job_runtime_ms: int
    read: DirStats
    write: DirStats
    trim: DirStats
    planned_runtime_s: int | None = None  # time_based jobs: the runtime they were given
    offset_bytes: int | None = None  # the job's "offset" option in bytes (None: not given)
    # reads and writes as one direction (fio's unified_rw_reporting=both: "mixed"); None
    # when fio did not report it
    mixed: DirStats | None = None

    def direction(self, name: str) -> DirStats:
        return {"read": self.read, "write": self.write, "trim": self.trim}[name]


@dataclass(frozen=True)
class FioReport:
    """One JSON object fio printed (a status dump or the final report)."""

    version: str
    timestamp_ms: int
    jobs: tuple[FioJob, ...]

    def total(self, direction: str) -> tuple[int, int]:
        """(bytes, ios) summed over jobs."""
        stats = [j.direction(direction) for j in self.jobs]
        return sum(s.io_bytes for s in stats), sum(s.total_ios for s in stats)

    @property
    def errors(self) -> list[str]:
        return [f"job {j.name!r}: error {j.error}" for j in self.jobs if j.error]

    @property
    def planned_runtime_s(self) -> int | None:
        values = [j.planned_runtime_s for j in self.jobs if j.planned_runtime_s]
        return max(values) if values else None

    @property
    def runtime_ms(self) -> int:
        return max((j.job_runtime_ms for j in self.jobs), default=0)


def _planned_runtime(options: object) -> int | None:
    """``runtime`` of a time_based job from its "job options" ("3s", "3", "2m")."""
    if not isinstance(options, dict) or str(options.get("time_based", "0")) != "1":
        return None
    text = str(options.get("runtime", "")).strip().lower()
    units = {"s": 1, "m": 60, "h": 3600}
    scale = units.get(text[-1:]) if text else None
    number = text[:-1] if scale else text
    try:
        return int(float(number) * (scale or 1))
    except (ValueError, OverflowError):  # not a number, or infinite
        return None


def _offset(options: object) -> int | None:
    """``offset`` of a job from its "job options", when it is a plain byte count."""
    text = str(options.get("offset", "")).strip() if isinstance(options, dict) else ""
    return int(text) if text.isdigit() else None


def parse_report(obj: Mapping[str, Any]) -> FioReport:
    """Parse one fio JSON object (fio 3.33 … 3.42 layout); raise FioOutputError if not fio's."""
    if "jobs" not in obj or not isinstance(obj["jobs"], list):
        raise FioOutputError("fio JSON without a 'jobs' list")
    jobs = []
    for raw in obj["jobs"]:
        if not isinstance(raw, dict):
            raise FioOutputError("fio JSON 'jobs' entry is not an object")
        jobs.append(
            FioJob(
                name=str(raw.get("jobname", "")),
                error=_int(raw.get("error", 0) or 0, "error"),
                elapsed_s=_int(raw.get("elapsed", 0) or 0, "elapsed"),
                job_runtime_ms=_int(raw.get("job_runtime", 0) or 0, "job_runtime"),
                read=DirStats.parse(raw.get("read")),
                write=DirStats.parse(raw.get("write")),
                trim=DirStats.parse(raw.get("trim")),
                planned_runtime_s=_planned_runtime(raw.get("job options")),
                offset_bytes=_offset(raw.get("job options")),
                mixed=DirStats.parse(raw["mixed"]) if raw.get("mixed") is not None else None,
            )
        )
    return FioReport(
        version=str(obj.get("fio version", "")),
        timestamp_ms=_int(obj.get("timestamp_ms", 0) or 0, "timestamp_ms"),
        jobs=tuple(jobs),
    )
