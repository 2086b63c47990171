"""The drive's own counters around a run and its temperature during tortures and probes.

``DriveWatch`` reads the counters before the run's first stage and after its last
(``smart/before.json`` / ``smart/after.json``, run.json "health"), and, while a torture or a
probe runs, the temperature about once a second in a thread of its own
(``sensors-<stage>.csv``: ``second,temperature_c``, seconds from the stage's start). A drive
whose counters cannot be read (a loop device, a USB bridge without SAT) is recorded as
unavailable with the reason, and is not asked again during the run. Nothing here fails a
run: a read that fails leaves an empty cell.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssdbench.devices.counters import (
    DriveCounters,
    Unreadable,
    counters_argv,
    health_record,
    parse_counters,
    temperature_argv,
)
from ssdbench.devices.model import ParseError
from ssdbench.devices.smart import SMARTCTL_OK_CODES
from ssdbench.results import atomic
from ssdbench.system import CommandError, Host

SAMPLE_S = 1.0
READ_TIMEOUT_S = 30.0
# the stages whose temperature is charted (speed-...: each corner of the speed plan)
WATCHED = re.compile(r"^(torture|probe-.+|speed-.+)$")


class DriveWatch:
    def __init__(self, host: Host, transport: str, path: str) -> None:
        self.host = host
        self.transport = transport
        self.path = path
        self.unavailable: str | None = None  # why the counters cannot be read

    def _read(self, argv: list[str]) -> tuple[DriveCounters | None, str, str | None]:
        """(counters, raw output, why not)."""
        ok = SMARTCTL_OK_CODES if argv[0] == "smartctl" else (0,)
        try:
            text = self.host.runner.run(argv, ok_codes=ok, timeout=READ_TIMEOUT_S).text
        except CommandError as exc:
            return None, "", f"{argv[0]} failed: {exc}"
        try:
            return parse_counters(argv, text), text, None
        except Unreadable as exc:
            return None, text, str(exc)
        except (ParseError, ValueError) as exc:
            return None, text, f"{argv[0]} output not understood: {exc}"

    def read(self, raw_file: Path) -> DriveCounters | None:
        """One full reading; its raw output kept in ``raw_file``."""
        if self.unavailable is not None:
            return None
        counters, text, why = self._read(counters_argv(self.transport, self.path))
        if counters is not None:
            counters = dataclasses.replace(counters, read_at=datetime.now(UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"))
        if text:
            atomic.write_text(raw_file, text)
        self.unavailable = why
        return counters

    def temperature(self) -> int | None:
        counters, _text, _why = self._read(temperature_argv(self.transport, self.path))
        return counters.temperature_c if counters else None

    @contextlib.contextmanager
    def sample(self, stage: str, run_dir: Path) -> Iterator[list[tuple[int, int | None]]]:
        """Around a torture or probe stage: the temperature once a second, in a thread; yields
        the (second, deg C) rows as they are read."""
        rows: list[tuple[int, int | None]] = []
        if self.unavailable is not None or not WATCHED.match(stage):
            yield rows
            return
        stop = threading.Event()
        t0 = time.monotonic()

        def loop() -> None:
            while not stop.is_set():
                second = int(time.monotonic() - t0)
                rows.append((second, self.temperature()))
                stop.wait(max(0.0, SAMPLE_S * (second + 1) - (time.monotonic() - t0)))

        thread = threading.Thread(target=loop, name=f"sensors-{stage}", daemon=True)
        thread.start()
        try:
            yield rows
        finally:
            stop.set()
            thread.join(READ_TIMEOUT_S + 5)
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(["second", "temperature_c"])
            writer.writerows((s, "" if t is None else t) for s, t in rows)
            atomic.write_text(run_dir / f"sensors-{stage}.csv", out.getvalue())


def health(before: DriveCounters | None, after: DriveCounters | None,
           watch: DriveWatch) -> dict[str, Any]:
    record = health_record(before, after)
    if watch.unavailable is not None:
        record["unavailable"] = watch.unavailable
    return record


def environment_record(host: Host, transport: str, kernel_name: str,
                       tools: dict[str, Any]) -> dict[str, Any]:
    """What of the host shapes the numbers: I/O scheduler, write cache, power management,
    fio and kernel versions (run.json "environment")."""
    fs = host.fs
    queue = f"/sys/block/{kernel_name}/queue"
    scheduler = fs.read_text(f"{queue}/scheduler")
    if scheduler is not None:
        m = re.search(r"\[([^\]]+)\]", scheduler)
        scheduler = m.group(1) if m else scheduler.strip() or None
    cache = fs.read_text(f"{queue}/write_cache")
    apst = alpm = None
    if transport == "nvme":
        latency = fs.read_text("/sys/module/nvme_core/parameters/default_ps_max_latency_us")
        if latency is not None and latency.strip().isdigit():
            apst = ("off (nvme_core.default_ps_max_latency_us=0)" if int(latency) == 0 else
                    f"allowed where the drive has it (nvme_core.default_ps_max_latency_us="
                    f"{int(latency)})")
    else:
        link = fs.readlink(f"/sys/block/{kernel_name}") or ""
        if m := re.search(r"/(host\d+)/", link):
            policy = fs.read_text(f"/sys/class/scsi_host/{m.group(1)}/link_power_management_policy")
            alpm = policy.strip() if policy else None
    return {"io_scheduler": scheduler, "write_cache": cache.strip() if cache else None,
            "apst": apst, "alpm": alpm, "fio_version": tools.get("fio"),
            "kernel": tools.get("kernel")}
