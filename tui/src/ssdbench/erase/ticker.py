"""Progress for the erase stage: one place that builds events, and a ticker thread that
keeps them coming (at least once a second) while a blocking command runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from ssdbench.erase.model import Clock
from ssdbench.progress import Progress, ProgressCallback


class Reporter:
    """Sends erase-stage Progress events for one drive."""

    def __init__(self, progress: ProgressCallback, drive: str, run: str, clock: Clock) -> None:
        self._progress = progress
        self.drive = drive
        self.run = run
        self.clock = clock
        self.t0 = clock.monotonic()

    def elapsed(self) -> float:
        return self.clock.monotonic() - self.t0

    def send(
        self,
        message: str,
        *,
        fraction: float | None = None,
        eta_s: float | None = None,
        state: str = "running",
        elapsed_s: float | None = None,
    ) -> None:
        if fraction is not None:
            fraction = min(1.0, max(0.0, fraction))
        event = Progress(
            drive=self.drive,
            run=self.run,
            stage="erase",
            state=state,
            fraction=fraction,
            elapsed_s=self.elapsed() if elapsed_s is None else elapsed_s,
            eta_s=eta_s,
            message=message,
        )
        try:
            self._progress(event)
        except Exception:  # a front end's bug must not break an erase in progress
            pass


class Ticker:
    """While a blocking command runs, tick an estimate from elapsed vs expected time.

    ``expected_s`` None: the fraction stays unknown and only the elapsed time moves.
    The fraction never reaches 1 on its own (the command decides when it is done).
    """

    def __init__(
        self,
        reporter: Reporter,
        message: str,
        expected_s: float | None,
        *,
        interval_s: float = 1.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reporter = reporter
        self.message = message
        self.expected_s = expected_s
        self.interval_s = interval_s
        self._now = now
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="erase-ticker", daemon=True)
        self._start = now()
        self.ticks = 0

    def estimate(self, elapsed: float) -> tuple[float | None, float | None]:
        if not self.expected_s or self.expected_s <= 0:
            return None, None
        fraction = min(0.99, elapsed / self.expected_s)
        return fraction, max(0.0, self.expected_s - elapsed)

    def _tick(self) -> None:
        elapsed = self._now() - self._start
        fraction, eta = self.estimate(elapsed)
        self.reporter.send(self.message, fraction=fraction, eta_s=eta)
        self.ticks += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._tick()

    def __enter__(self) -> Ticker:
        self._start = self._now()
        self._tick()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
