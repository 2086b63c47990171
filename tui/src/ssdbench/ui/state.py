"""What the run screen shows, accumulated from Progress events (no Textual here).

One :class:`DriveRunState` per drive: the stage list with states, the current stage's
fraction/ETA, the last minutes of IOPS and MiB/s, current and average values, the command
running, and a log.  Widgets render it; only the app's message handlers change it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ssdbench.progress import Progress

WRITE_BOUND = ("fill", "probe-")  # stages whose time is bytes / the drive's write speed
MEASURED_AFTER = 3  # seconds of a write-bound stage before its speed replaces the assumed
SERIES_SECONDS = 300  # the live chart shows the last 5 minutes (one point per event second)
LOG_LINES = 500
FINAL_STATES = ("done", "failed", "cancelled", "skipped")


@dataclass
class StageView:
    run: str
    name: str
    state: str = "pending"  # pending | running | done | failed | cancelled | skipped
    fraction: float | None = None
    eta_s: float | None = None
    elapsed_s: float = 0.0
    message: str = ""


@dataclass
class DriveRunState:
    drive: str
    stages: list[StageView] = field(default_factory=list)
    state: str = "waiting"  # waiting | running | done | failed | cancelled
    command: str = ""
    iops: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_SECONDS))
    mib_s: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_SECONDS))
    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    _sum_iops: float = 0.0
    _n_iops: int = 0
    _sum_mib: float = 0.0
    _n_mib: int = 0
    _last_elapsed: float | None = None
    series_stage: str | None = None  # the stage the chart's series belongs to
    # the plan's estimate per (run, stage) in seconds, and the write speed it assumed
    estimates: dict[tuple[str, str], float] = field(default_factory=dict)
    assumed_write_mib_s: float | None = None
    _write_samples: list[float] = field(default_factory=list)

    @classmethod
    def planned(cls, drive: str, stages: list[tuple[str, str]]) -> DriveRunState:
        return cls(drive, [StageView(run, name) for run, name in stages])

    # ---- queries ----

    @property
    def current(self) -> StageView | None:
        for s in self.stages:
            if s.state == "running":
                return s
        return None

    @property
    def last_iops(self) -> float | None:
        return self.iops[-1] if self.iops else None

    @property
    def last_mib_s(self) -> float | None:
        return self.mib_s[-1] if self.mib_s else None

    @property
    def avg_iops(self) -> float | None:
        return self._sum_iops / self._n_iops if self._n_iops else None

    @property
    def avg_mib_s(self) -> float | None:
        return self._sum_mib / self._n_mib if self._n_mib else None

    @property
    def measured_write_mib_s(self) -> float | None:
        """The mean write speed of the fill and probes so far (after a few seconds)."""
        if len(self._write_samples) < MEASURED_AFTER:
            return None
        return sum(self._write_samples) / len(self._write_samples)

    def _speed_factor(self) -> float:
        measured = self.measured_write_mib_s
        if not measured or not self.assumed_write_mib_s:
            return 1.0
        return self.assumed_write_mib_s / measured

    @property
    def plan_eta_s(self) -> float | None:
        """Seconds left in this drive's plan: the running stage's own ETA, then the plan's
        estimate of every stage still to come, its write-bound stages (fill, probes) scaled
        by the write speed measured so far over the one the estimate assumed."""
        if not self.estimates:
            return None
        factor = self._speed_factor()
        left = 0.0
        for st in self.stages:
            est = self.estimates.get((st.run, st.name), 0.0)
            if st.name.startswith(WRITE_BOUND):
                est *= factor
            if st.state == "pending":
                left += est
            elif st.state == "running":
                left += st.eta_s if st.eta_s is not None else max(0.0, est - st.elapsed_s)
        return left

    @property
    def plan_eta_basis(self) -> str:
        """How the plan ETA was made, in words."""
        measured = self.measured_write_mib_s
        if measured is not None:
            return f"writes {measured:,.1f} MiB/s measured"
        if self.assumed_write_mib_s:
            return f"writes {self.assumed_write_mib_s:,.0f} MiB/s assumed"
        return "the plan's estimate"

    def set_estimates(self, estimates: dict[tuple[str, str], float], *,
                      assumed_write_mib_s: float | None) -> None:
        self.estimates = dict(estimates)
        self.assumed_write_mib_s = assumed_write_mib_s

    @property
    def done_count(self) -> int:
        return sum(1 for s in self.stages if s.state in FINAL_STATES)

    # ---- changes ----

    def _stage(self, run: str, name: str) -> StageView:
        for s in self.stages:
            if s.run == run and s.name == name:
                return s
        view = StageView(run, name)
        # an unplanned stage (e.g. a skipped op-partition) goes before the run's pending ones
        index = len(self.stages)
        for i, s in enumerate(self.stages):
            if s.run == run and s.state == "pending":
                index = i
                break
        self.stages.insert(index, view)
        return view

    def apply(self, ev: Progress) -> None:
        stage = self._stage(ev.run, ev.stage)
        if stage.state != "running" and ev.state == "running":
            self._reset_series()
            self.series_stage = ev.stage
            self.log.append(f"{ev.run}/{ev.stage}: started")
        stage.state = ev.state
        if ev.fraction is not None:
            stage.fraction = max(0.0, min(1.0, ev.fraction))
        if ev.state == "done":
            stage.fraction = 1.0
        stage.eta_s = ev.eta_s if ev.state == "running" else None
        stage.elapsed_s = max(stage.elapsed_s, ev.elapsed_s)
        if ev.message and ev.message not in ("started", "done"):
            if ev.message != stage.message:  # a running stage repeats its part (a corner)
                self.log.append(f"{ev.run}/{ev.stage}: {ev.message}")
            stage.message = ev.message
        if ev.state in FINAL_STATES and ev.state != "done":
            self.log.append(f"{ev.run}/{ev.stage}: {ev.state}")
        elif ev.state == "done":
            self.log.append(f"{ev.run}/{ev.stage}: done")
        if ev.state == "running":
            self.state = "running"
            # one point per new second of the stage (fio reports once a second)
            if self._last_elapsed is None or ev.elapsed_s > self._last_elapsed:
                self._last_elapsed = ev.elapsed_s
                if ev.iops is not None:
                    self.iops.append(ev.iops)
                    self._sum_iops += ev.iops
                    self._n_iops += 1
                if ev.mib_s is not None:
                    self.mib_s.append(ev.mib_s)
                    self._sum_mib += ev.mib_s
                    self._n_mib += 1
                    if ev.stage.startswith(WRITE_BOUND) and ev.message != "result":
                        self._write_samples.append(ev.mib_s)

    def _reset_series(self) -> None:
        self.iops.clear()
        self.mib_s.clear()
        self._sum_iops = self._sum_mib = 0.0
        self._n_iops = self._n_mib = 0
        self._last_elapsed = None

    def command_started(self, command: str) -> None:
        self.command = command
        self.log.append(f"$ {command}")

    def finished(self, state: str, notes: tuple[str, ...] = ()) -> None:
        self.state = state
        for s in self.stages:
            if s.state == "running":
                s.state = state if state in ("failed", "cancelled") else "done"
            elif s.state == "pending":
                s.state = "skipped"
        self.command = ""
        self.log.extend(notes)
        self.log.append(f"finished: {state}")
