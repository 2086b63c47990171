"""Live status for the lab (``status.json``, docs/lab.md "Live status"): what each drive of
a bench is doing, fed by the same :class:`~ssdbench.progress.Progress` events as the
console, read by the uploader every ``status_seconds``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ssdbench.lab.config import StoreConfig
from ssdbench.lab.store import open_store
from ssdbench.lab.uploader import StoreUploader, bench_name, utc_now
from ssdbench.progress import Progress

MAX_ERRORS = 20


class LiveStatus:
    """A Progress sink (thread-safe) whose :meth:`snapshot` is the status.json document."""

    def __init__(self, bench: str, plan: str, serials: dict[str, str] | None = None, *,
                 host: Mapping[str, Any] | None = None,
                 controllers: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.bench = bench
        self.plan = plan
        self.serials = dict(serials or {})
        # the machine (devices/host.py Machine.to_json) and each drive's controller
        self.host = None if host is None else dict(host)
        self.controllers = {k: dict(v) for k, v in (controllers or {}).items()}
        self.state = "running"
        self.started = utc_now()
        self._lock = threading.Lock()
        self._latest: dict[str, Progress] = {}
        self._last_event = ""
        self._last_event_at = ""
        self._errors: list[str] = []

    def __call__(self, ev: Progress) -> None:
        with self._lock:
            self._latest[ev.drive] = ev
            if ev.state != "running" or ev.message == "started":
                # a run of one stage (the session's report) is named once, not twice
                what = ev.run if ev.stage == ev.run else f"{ev.run} {ev.stage}"
                self._last_event = f"{ev.drive} {what} {ev.state}"
                if ev.state == "failed" and ev.message:
                    self._last_event += f": {ev.message}"
                self._last_event_at = utc_now()
            if ev.state == "failed":
                self._errors = [*self._errors, f"{ev.drive} {ev.run} {ev.stage}: "
                                f"{ev.message or 'failed'}"][-MAX_ERRORS:]

    def finish(self, state: str) -> None:
        """The kiosk run ended: ``done`` or ``failed`` (or ``cancelled``)."""
        with self._lock:
            self.state = state

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            drives = []
            for name, ev in sorted(self._latest.items()):
                drives.append({
                    "drive": name, "serial": self.serials.get(name, ""), "run": ev.run,
                    "stage": ev.stage, "state": ev.state,
                    "percent": None if ev.fraction is None else round(ev.fraction * 100, 1),
                    "iops": None if ev.iops is None else round(ev.iops, 1),
                    "mib_s": None if ev.mib_s is None else round(ev.mib_s, 2),
                    "eta_s": None if ev.eta_s is None else round(ev.eta_s),
                    **({"controller": self.controllers[name]}
                       if name in self.controllers else {}),
                })
            return {"schema": 1, "bench": self.bench, "state": self.state, "plan": self.plan,
                    "started": self.started, "drives": drives,
                    "last_event": self._last_event, "last_event_at": self._last_event_at,
                    "errors": list(self._errors), "time": utc_now(),
                    **({} if self.host is None else {"host": self.host})}


def start_store(cfg: StoreConfig, results_dir: Path, plan: str, serials: dict[str, str],
                *, cmdline_bench: str | None, say: Callable[[str], None],
                host: Mapping[str, Any] | None = None,
                controllers: Mapping[str, Mapping[str, Any]] | None = None,
                ) -> tuple[StoreUploader, LiveStatus]:
    """The uploader (thread started) and the live status it sends, for a kiosk run
    (``host``, ``controllers``: the machine and the drives' controllers, devices/host.py)."""
    bench = bench_name(cfg, cmdline_bench)
    live = LiveStatus(bench, plan, serials, host=host, controllers=controllers)
    uploader = StoreUploader(open_store(cfg), cfg, results_dir, bench, say,
                             status=live.snapshot)
    uploader.start()
    uploader.request()
    return uploader, live
