"""A generator of plausible ssdbench result folders (docs/results-format.md), for tests and
the report benchmark. Deterministic for a given seed.

The torture series looks like a real consumer SSD on AnandTech's consistency test:
fresh-out-of-box IOPS high and flat, a spare-area cliff, a noisy steady state with
garbage-collection dips, isolated zero-IOPS seconds and one long stall. The fill has an
SLC-cache cliff; the TRIM run has three probes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

GIB = 1 << 30


@dataclass(frozen=True)
class DriveSpec:
    model: str = "Synthetic SSD 530"
    serial: str = "SYN0001"
    firmware: str = "DC12"
    size_bytes: int = 240 * 1000**3
    fob_iops: float = 90_000.0
    steady_iops: float = 9_000.0
    cliff_s: int = 300  # default-capacity spare-area cliff
    stall_every_s: int = 97  # isolated zero-IOPS seconds
    long_stall_at_s: int = 1600
    long_stall_s: int = 15
    slc_gib: float = 20.0
    fill_fast_mib_s: float = 480.0
    fill_slow_mib_s: float = 180.0
    trim_mib_s: tuple[float, float, float] = (315.1, 183.3, 193.3)  # Intel SSD 530 seed
    started: str = "20261121T145300Z"
    # a two-level drive (docs/analysis.md "Two falls"): fresh out of box until fob_end_s,
    # then mid_iops until the cliff; None: one fall, at the cliff
    fob_end_s: int | None = None
    mid_iops: float | None = None


def torture_series(
    seed: int, duration: int, fob: float, steady: float, cliff_s: int,
    stall_every_s: int, long_stall_at_s: int, long_stall_s: int,
    fob_end_s: int | None = None, mid_iops: float | None = None,
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(duration, dtype=np.float64)
    before = fob if fob_end_s is None or mid_iops is None else mid_iops
    level = np.where(
        t < cliff_s, before, steady + (before * 0.35 - steady) * np.exp(-(t - cliff_s) / 60.0)
    )
    if fob_end_s is not None and mid_iops is not None:
        level[t < fob_end_s] = fob
    noise = rng.normal(1.0, 0.03, duration)
    after = t >= cliff_s
    noise[after] = rng.normal(1.0, 0.12, int(after.sum()))
    dips = after & (rng.random(duration) < 0.06)
    noise[dips] *= rng.uniform(0.15, 0.5, int(dips.sum()))
    iops = np.maximum(level * noise, 1.0).round()
    if stall_every_s > 0:
        iops[np.arange(cliff_s + stall_every_s // 2, duration, stall_every_s)] = 0.0
    if long_stall_s > 0 and long_stall_at_s + long_stall_s <= duration:
        iops[long_stall_at_s : long_stall_at_s + long_stall_s] = 0.0
    return iops


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_iops_csv(path: Path, iops: np.ndarray, seed: int = 0) -> None:
    rng = np.random.default_rng(seed + 1)
    lines = ["time_s,iops,mib_s,lat_mean_us,lat_p99_us,lat_p9999_us,lat_max_us"]
    for i, v in enumerate(iops):
        if v <= 0:
            lines.append(f"{i},0,0,,,,")
            continue
        mean = 32 / v * 1e6
        p99 = mean * rng.uniform(2.5, 4.0)
        p9999 = p99 * rng.uniform(3.0, 8.0)
        mx = p9999 * rng.uniform(1.2, 3.0)
        lines.append(
            f"{i},{v:.0f},{v * 4096 / 2**20:.3f},{mean:.1f},{p99:.1f},{p9999:.1f},{mx:.1f}"
        )
    _write(path, "\n".join(lines) + "\n")


def write_fill_csv(path: Path, span_bytes: int, spec: DriveSpec, seed: int = 0) -> int:
    rng = np.random.default_rng(seed + 2)
    rows = ["time_s,mib_s,gib_written"]
    written = 0.0
    total_gib = span_bytes / GIB
    t = 0
    while written < total_gib:
        base = spec.fill_fast_mib_s if written < spec.slc_gib else spec.fill_slow_mib_s
        rate = base * rng.normal(1.0, 0.04)
        rate = min(rate, (total_gib - written) * 1024)
        written += rate / 1024
        rows.append(f"{t},{rate:.3f},{min(written, total_gib):.6f}")
        t += 1
    _write(path, "\n".join(rows) + "\n")
    return t


COUNTERS_BEFORE: dict[str, Any] = {
    "temperature_c": 41, "host_writes_bytes": 1_000 * GIB, "host_reads_bytes": 2_000 * GIB,
    "nand_writes_bytes": 1_500 * GIB, "power_on_hours": 12, "power_cycles": 3,
    "unsafe_shutdowns": 1, "media_errors": 0, "percentage_used": 0, "available_spare": 100,
    "warning_temp_minutes": 0, "critical_temp_minutes": 0, "thermal_throttle_events": 0,
    "read_at": "2026-11-21T14:53:00Z"}


def health(host_written: int, nand_written: int | None, *, throttles: int = 0,
           tool: str = "nvme smart-log") -> dict[str, Any]:
    """run.json "health" as the engine writes it (docs/results-format.md): a drive that
    wrote ``host_written`` bytes for the host and ``nand_written`` to flash (None: the
    drive does not report NAND writes)."""
    before = dict(COUNTERS_BEFORE)
    if nand_written is None:
        before["nand_writes_bytes"] = None
    after = dict(before, temperature_c=58, power_on_hours=13, read_at="2026-11-21T15:40:00Z",
                 host_writes_bytes=before["host_writes_bytes"] + host_written,
                 host_reads_bytes=before["host_reads_bytes"] + 4096,
                 thermal_throttle_events=throttles, warning_temp_minutes=2 * throttles,
                 percentage_used=1)
    if nand_written is not None:
        after["nand_writes_bytes"] = before["nand_writes_bytes"] + nand_written
    delta = {k: after[k] - before[k] if before[k] is not None else None
             for k in ("host_writes_bytes", "nand_writes_bytes", "thermal_throttle_events",
                       "media_errors", "warning_temp_minutes", "critical_temp_minutes",
                       "percentage_used")}
    delta["write_amplification"] = (round(nand_written / host_written, 3)
                                     if nand_written is not None and host_written else None)
    return {"tool": tool, "before": before, "after": after, "delta": delta}


ENVIRONMENT = {"io_scheduler": "none", "write_cache": "write back", "apst": "on",
               "alpm": None, "fio_version": "fio-3.33", "kernel": "6.1.0-27-amd64"}


def write_sensors(path: Path, seconds: int, start_c: float = 40.0, rise_c: float = 18.0,
                  gaps: tuple[int, ...] = ()) -> None:
    """``sensors-<phase>.csv``: whole seconds from the phase's start, temperature in deg C,
    an empty cell where a read failed."""
    lines = ["second,temperature_c"]
    for i in range(seconds):
        temp = start_c + rise_c * (1 - np.exp(-i / max(seconds / 4, 1)))
        lines.append(f"{i}," if i in gaps else f"{i},{round(temp)}")
    _write(path, "\n".join(lines) + "\n")


def _write_smart(run_dir: Path) -> None:
    for when in ("before", "after"):
        _write(run_dir / "smart" / f"{when}.json",
               json.dumps({"critical_warning": 0, "temperature": 314,
                           "data_units_written": 2048000}))


def _stage(name: str, start: str, seconds: float, state: str = "done") -> dict[str, object]:
    return {"name": name, "state": state, "started": start, "finished": start,
            "duration_s": seconds, "error": None, "job": f"jobs/{name}.fio"}


def _run_json(spec: DriveSpec, run: str, kind: str, op: int, params: dict[str, Any],
              stages: list[dict[str, Any]], state: str = "done") -> dict[str, Any]:
    return {
        "schema": 1, "run": run, "kind": kind, "state": state,
        "error": None if state == "done" else "interrupted by the user",
        "started": "2026-11-21T14:53:00Z", "finished": "2026-11-21T15:40:00Z",
        "drive": {"name": "sda", "path": "/dev/sda", "model": spec.model,
                  "serial": spec.serial, "firmware": spec.firmware,
                  "size_bytes": spec.size_bytes},
        "target": {"path": "/dev/sda1", "span_bytes": spec.size_bytes * (100 - op) // 100,
                   "op_percent": op},
        "params": params,
        "tools": {"ssdbench": "0.1.0", "fio": "fio-3.33", "kernel": "6.1.0-27-amd64",
                  "ioengine": "libaio"},
        "erase": {"method": "ata-security-erase-enhanced", "secure": True, "verified": True,
                  "duration_s": 31.4, "detail": "hdparm --security-erase-enhanced"},
        "stages": stages,
        "trim": None,
        "analysis": {},
    }


def write_drive_folder(
    root: Path,
    spec: DriveSpec | None = None,
    *,
    seed: int = 1,
    duration: int = 2000,
    runs: tuple[str, ...] = ("consistency-default", "consistency-op25", "trim"),
    interrupted: tuple[str, ...] = (),
) -> Path:
    """Write one drive folder under ``root`` and return its path."""
    spec = spec or DriveSpec()
    name = f"{spec.started}_{spec.model}_{spec.serial}"
    name = "".join(c if c.isalnum() or c in ".-" else "_" for c in name)
    drive_dir = root / name
    drive_dir.mkdir(parents=True, exist_ok=True)
    drive = {"name": "sda", "path": "/dev/sda", "transport": "sata", "model": spec.model,
             "serial": spec.serial, "firmware": spec.firmware, "size_bytes": spec.size_bytes,
             "logical_block_size": 512, "physical_block_size": 4096, "rotational": False,
             "trim_supported": True}
    _write(drive_dir / "drive.json", json.dumps({"schema": 1, "drive": drive}, indent=2))
    _write(drive_dir / "log.txt", "2026-11-21T14:53:00Z rc=0 ok 0.010s $ lsblk --json\n")
    for k, run in enumerate(runs):
        run_dir = drive_dir / run
        state = "interrupted" if run in interrupted else "done"
        op = 25 if run.endswith("op25") else 0
        if run.startswith("consistency"):
            span = spec.size_bytes * (100 - op) // 100
            fill_s = write_fill_csv(run_dir / "fill.csv", span, spec, seed + k)
            cliff = int(spec.cliff_s * (1.6 if op else 1.0))
            steady = spec.steady_iops * (2.2 if op else 1.0)
            iops = torture_series(seed + k, duration, spec.fob_iops, steady, cliff,
                                  spec.stall_every_s * (3 if op else 1),
                                  spec.long_stall_at_s, 0 if op else spec.long_stall_s,
                                  spec.fob_end_s, spec.mid_iops)
            if state == "interrupted":
                iops = iops[: duration // 2]
            write_iops_csv(run_dir / "iops.csv", iops, seed + k)
            params = {"torture_seconds": duration, "steady_start_s": 1400 if duration == 2000
                      else 0.7 * duration, "fill_passes": 1, "op_percent": op,
                      "iodepth": 32, "ioengine": "libaio", "block_size_fill": "128k"}
            stages = [_stage("erase", "2026-11-21T14:53:00Z", 31.4),
                      _stage("fill", "2026-11-21T14:54:00Z", float(fill_s)),
                      _stage("torture", "2026-11-21T15:00:00Z", float(iops.size),
                             state if state != "done" else "done")]
            meta = _run_json(spec, run, "consistency", op, params, stages, state)
            write_sensors(run_dir / "sensors-torture.csv", int(iops.size), gaps=(7,))
            host = int(iops[np.isfinite(iops)].sum()) * 4096 + span
            meta["health"] = health(host, int(host * (2.5 if op == 0 else 1.6)))
        else:
            phases = ("clean", "after_torture", "after_trim")
            lines = ["phase,mib_s,seconds,bytes"]
            rng = np.random.default_rng(seed + 10)
            for phase, mean in zip(phases, spec.trim_mib_s, strict=True):
                seconds = 8 * 1024 / mean
                lines.append(f"{phase},{mean},{seconds:.3f},{8 * GIB}")
                n = int(np.ceil(seconds))
                vals = mean * rng.normal(1.0, 0.01, n)  # 1%: a clear verdict on 4-s probes
                _write(run_dir / f"probe-{phase}.csv", "time_s,mib_s\n" + "".join(
                    f"{i},{v:.3f}\n" for i, v in enumerate(vals)))
                write_sensors(run_dir / f"sensors-probe-{phase}.csv", n,
                              start_c=45.0 if phase != "clean" else 38.0, rise_c=6.0)
            _write(run_dir / "probes.csv", "\n".join(lines) + "\n")
            params = {"trim_torture_seconds": 3600, "probe_gib": 8, "op_percent": 0}
            stages = [_stage(s, "2026-11-21T16:00:00Z", 20.0) for s in
                      ("erase", "probe-clean", "fill", "torture", "settle", "probe-after_torture",
                       "trim", "probe-after_trim")]
            meta = _run_json(spec, run, "trim", 0, params, stages, state)
            meta["trim"] = {"discard_sectors": 2097152, "idle_s": 60, "idle_measured_s": 60.0,
                            "zero_readback": {"checked": 64, "zero": 64}}
            meta["settle"] = {"idle_s": 60, "idle_measured_s": 60.0}
            meta["health"] = health(3 * 8 * GIB + spec.size_bytes, None, throttles=2)
        meta["environment"] = ENVIRONMENT
        _write_smart(run_dir)
        _write(run_dir / "run.json", json.dumps(meta, indent=2))
        _write(run_dir / "jobs" / "torture.fio", "[torture]\nrw=randwrite\nbs=4k\n")
    return drive_dir
