"""Reading the simulated drive's ground-truth log (DIR/truth.jsonl).

One JSON object per line: per-second records `{"t": epoch second, "host_writes": ...}`
(CLOCK_REALTIME, 1-s bins, a second is written once it is over) and event lines
`{"event": "start"|"trim"|"zero"|"sanitize"|"idle_gc"|"stop", "time": epoch float, ...}`.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Second:
    """One second of the drive's life (epoch second `t`)."""

    t: int
    host_writes: int  # host write requests completed in this second
    host_pages: int  # 4 KiB pages those requests wrote
    host_reads: int
    read_pages: int
    nand_pages: int  # page programs: host pages + GC moves
    gc_moves: int
    erases: int
    trims: int
    free_blocks: int  # free pool at the end of the second
    busy_ms: float  # device time spent serving requests
    stall_ms: float  # of which foreground GC (host writes waiting)
    zero_second: bool  # busy all second, no host write completed
    w10ms: tuple[int, ...] = ()  # host writes completed per 10 ms of the second (empty: none)
    r10ms: tuple[int, ...] = ()  # the server's replies to host writes per 10 ms (served only)
    rd10ms: tuple[int, ...] = ()  # host reads of one 4 KiB page done per 10 ms (empty: none)
    solo10ms: tuple[int, ...] = ()  # ... of which solo: no other request overlapped them


@dataclass(frozen=True)
class Truth:
    seconds: tuple[Second, ...]
    events: tuple[dict[str, Any], ...]

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    @property
    def start(self) -> dict[str, Any]:
        starts = self.events_of("start")
        if not starts:
            raise ValueError("truth log has no start event")
        return starts[-1]

    def window(self, t0: float, t1: float) -> list[Second]:
        """Seconds s with t0 <= s < t1 (epoch)."""
        return [s for s in self.seconds if t0 <= s.t < t1]

    def iops(self, t0: float = float("-inf"), t1: float = float("inf")) -> dict[int, int]:
        """Host write requests completed per epoch second, seconds without records as 0
        between the first and the last record in the window."""
        secs = self.window(t0, t1)
        if not secs:
            return {}
        got = {s.t: s.host_writes for s in secs}
        return {t: got.get(t, 0) for t in range(secs[0].t, secs[-1].t + 1)}

    def _prefix_of(self, slots_of: str) -> tuple[int, list[int]]:
        """(first 10-ms slot, cumulative count at each slot boundary) of one 10-ms field."""
        if not self.seconds:
            return 0, [0]
        first = self.seconds[0].t * 100
        slots = [0] * ((self.seconds[-1].t + 1) * 100 - first)
        for s in self.seconds:
            base = s.t * 100 - first
            for i, n in enumerate(getattr(s, slots_of)):
                slots[base + i] += n
        return first, [0, *itertools.accumulate(slots)]

    @functools.cached_property
    def _done_prefix(self) -> tuple[int, list[int]]:
        return self._prefix_of("w10ms")

    @functools.cached_property
    def _reply_prefix(self) -> tuple[int, list[int]]:
        return self._prefix_of("r10ms")

    @functools.cached_property
    def _read_prefix(self) -> tuple[int, list[int]]:
        return self._prefix_of("rd10ms")

    @functools.cached_property
    def _solo_prefix(self) -> tuple[int, list[int]]:
        return self._prefix_of("solo10ms")

    def _cum(self, t: float, replied: bool) -> float:
        return self._cum_of(self._reply_prefix if replied else self._done_prefix, t)

    @staticmethod
    def _cum_of(prefix: tuple[int, list[int]], t: float) -> float:
        first, cum = prefix
        x = t * 100.0 - first
        if x <= 0:
            return 0.0
        if x >= len(cum) - 1:
            return float(cum[-1])
        i = math.floor(x)
        return cum[i] + (cum[i + 1] - cum[i]) * (x - i)

    def writes_between(self, t0: float, t1: float, replied: bool = False) -> float:
        """Host writes completed within the epoch interval [t0, t1) (10-ms resolution,
        linear within a slot): by the model's completion times, or with `replied` by when
        the server sent the replies (served drives only: what the host could see)."""
        return self._cum(t1, replied) - self._cum(t0, replied)

    def page_reads_between(self, t0: float, t1: float, solo: bool = False) -> float:
        """Host reads of one 4 KiB page the model completed within the epoch interval
        [t0, t1) (10-ms resolution, linear within a slot); with ``solo`` only those no
        other request overlapped (arrived while the drive was idle, done before the next
        arrival): a QD1 job's reads less any another process slipped in beside them."""
        prefix = self._solo_prefix if solo else self._read_prefix
        return self._cum_of(prefix, t1) - self._cum_of(prefix, t0)

    def last_page_read_end(self, before: float = math.inf) -> float | None:
        """The end (epoch s) of the last 10-ms slot starting before ``before`` in which a
        one-page host read completed: where a 4 KiB read job's last I/O ended, to a slot
        (None: none)."""
        for s in reversed(self.seconds):
            for i in range(len(s.rd10ms) - 1, -1, -1):
                if s.rd10ms[i] and s.t + i / 100.0 < before:
                    return s.t + (i + 1) / 100.0
        return None

    def reply_lag(self, t: float) -> float:
        """Writes the model had completed by epoch `t` that the server had not yet answered
        (served drives; 10-ms resolution, so a few hundredths either way is the slot's
        interpolation): how late a loaded host ran the server at that moment."""
        return self._cum(t, False) - self._cum(t, True)

    def resample(self, start: float, n: int, replied: bool = False) -> list[float]:
        """Host writes per second in the n one-second windows from epoch `start` (a fio
        log's seconds, say, whatever their phase against the epoch)."""
        return [self.writes_between(start + i, start + i + 1, replied) for i in range(n)]

    def align(self, iops: Sequence[float], near: float, search_s: float = 5.0) -> float:
        """The epoch time at which a per-second series (e.g. ssdbench's iops.csv) starts:
        the 10-ms step within `near` +- `search_s` where it matches the log best (least
        absolute difference summed over its seconds)."""
        best, best_err = near, math.inf
        steps = int(search_s * 100)
        for k in range(-steps, steps + 1):
            start = near + k / 100.0
            err = sum(abs(a - b) for a, b in zip(iops, self.resample(start, len(iops)),
                                                  strict=True))
            if err < best_err:
                best, best_err = start, err
        return best

    def fio_windows(self, rows: Sequence[tuple[float, float]], start: float
                    ) -> list[tuple[float, float, float]]:
        """fio's own per-second log against the model: `rows` are (time_ms, iops) lines of
        a `write_iops_log` with `log_avg_msec=1000` (fio/<stage>_iops.1.log), `start` the
        epoch of fio's time 0. fio closes a window only when an I/O completes, so windows
        are irregular (a stall stretches one); each row covers (previous time, time] and
        its value is I/Os / window. Returns (time_ms, fio I/Os, model writes) per row."""
        out = []
        prev = 0.0
        for t_ms, iops in rows:
            n = iops * (t_ms - prev) / 1000.0
            out.append((t_ms, n, self.writes_between(start + prev / 1000.0,
                                                     start + t_ms / 1000.0)))
            prev = t_ms
        return out

    def align_fio(self, rows: Sequence[tuple[float, float]], near: float,
                  search_s: float = 2.0) -> float:
        """The epoch of fio's time 0 (10-ms steps within `near` +- `search_s`) where its
        log's windows match the model best. `near`: e.g. fio JSON `timestamp_ms` minus
        the job's `job_runtime`, / 1000."""
        best, best_err = near, math.inf
        for k in range(-int(search_s * 100), int(search_s * 100) + 1):
            start = near + k / 100.0
            err = sum(abs(a - b) for _, a, b in self.fio_windows(rows, start))
            if err < best_err:
                best, best_err = start, err
        return best

    def zero_seconds(self, t0: float = float("-inf"), t1: float = float("inf")) -> list[int]:
        return [s.t for s in self.window(t0, t1) if s.zero_second]

    def longest_stall(self, t0: float = float("-inf"), t1: float = float("inf")) -> int:
        """Longest run of consecutive zero seconds (in seconds)."""
        best = run = 0
        prev = None
        for t in self.zero_seconds(t0, t1):
            run = run + 1 if prev is not None and t == prev + 1 else 1
            best = max(best, run)
            prev = t
        return best


def parse(text: str) -> Truth:
    seconds: list[Second] = []
    events: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"truth log line {n}: not JSON ({exc})") from None
        if "event" in obj:
            events.append(obj)
        else:
            obj["w10ms"] = tuple(obj.get("w10ms", ()))
            obj["r10ms"] = tuple(obj.get("r10ms", ()))
            obj["rd10ms"] = tuple(obj.get("rd10ms", ()))
            obj["solo10ms"] = tuple(obj.get("solo10ms", ()))
            seconds.append(Second(**obj))
    seconds.sort(key=lambda s: s.t)
    return Truth(tuple(seconds), tuple(events))


def load(path: str | Path) -> Truth:
    return parse(Path(path).read_text(encoding="utf-8"))
