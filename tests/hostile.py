"""Drive strings written by a counterfeiter (#28 items 5 and 6): a replayed bundle of the
QEMU drives with the SATA disk's model and serial replaced by markup, control characters and
a formula, for the TUI, `ssdbench list`, the station screen and the CSVs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from simdrive.identity import HOSTILE

BUNDLE = Path(__file__).resolve().parent / "data" / "bundles" / "qemu-nvme-ahci-usb"
# markup that closed a tag that was never opened (MarkupError), ESC [2J (clears a terminal),
# BEL, CR, and a formula for a spreadsheet
EVIL_MODEL = "=HYPERLINK(\"x\")[/]\x1b[2J\x07\rEVIL"
# italic markup around another drive's serial: rendered as markup it showed SSDBNVME0001
EVIL_SERIAL = "[i]SSDBNVME0001[/i]"
MODEL, SERIAL = "SSDBENCH SATA DISK", "SSDBSATA0001"


def hostile_bundle(dest: Path) -> Path:
    """A copy of the QEMU bundle whose SATA disk reports EVIL_MODEL and EVIL_SERIAL."""
    shutil.copytree(BUNDLE, dest)
    for path in (dest / "cmd").iterdir():
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if path.suffix == ".out" and text.lstrip().startswith(("{", "[")):
            model, serial = json.dumps(EVIL_MODEL)[1:-1], json.dumps(EVIL_SERIAL)[1:-1]
        else:
            model, serial = EVIL_MODEL, EVIL_SERIAL
        path.write_text(text.replace(MODEL, model).replace(SERIAL, serial), encoding="utf-8",
                        errors="surrogateescape")
    return dest

# The hostile drive identity of issue #42 (simdrive/identity.py holds it, for the simulated
# drive and the emulated ATA drive too; the station QEMU test hot-adds an NVMe drive with it):
# markup for Rich, HTML and LaTeX, a line break and a right-to-left override in the serial.
HOSTILE_MODEL = HOSTILE.model
HOSTILE_SERIAL = HOSTILE.serial
HOSTILE_FIRMWARE = HOSTILE.firmware
# what a --nvme/--sata SPEC of scripts/run-qemu.sh can carry (one line, no comma): a formula
# start for a spreadsheet, markup; the station test's two drives share it
HOSTILE_SHARED_SERIAL = HOSTILE.shared_serial


# ---- a hostile results folder (#42): what a stick from another bench or a copy of a store
# can hold, for every reader of results (report, fleet, verify-record, run --resume) ----

# a drive model that is a broken TeX formula (matplotlib's mathtext stopped the charts)
MATH_MODEL = r"$\frac{a}{$"
# a PTS loop's name (a key of run.json "pts") that climbs out of the run folder
TRAVERSAL_LOOP = "x/../../../../outside/pwned"
# a workload name that is a formula and holds a comma (a column more in a joined CSV)
FORMULA_WORKLOAD = '=HYPERLINK("http://x"),1'
OUTSIDE = ("outside", "victim")  # folders beside the results folder it points at
NESTED = "[" * 100_000 + "]" * 100_000  # json recurses: RecursionError
HUGE = 32 << 20  # bytes: over the JSON reader's limit (a sparse file: no disk)


def _put(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _fifo(path: Path) -> Path:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _huge(path: Path, size: int) -> Path:
    """A sparse file of ``size`` bytes that starts like JSON (costs no disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.write(b'{"model": "')
        f.truncate(size)
    return path


def _iops_csv(seconds: int = 120) -> str:
    lines = ["time_s,iops,mib_s,lat_mean_us,lat_p99_us,lat_p9999_us,lat_max_us"]
    lines += [f"{i},{9000 + (i % 7) * 100},{35.1:.1f},110.0,300.0,900.0,1500.0"
              for i in range(seconds)]
    return "\n".join(lines) + "\n"


def _pts_entry(name: str) -> dict[str, Any]:
    """A PTS loop record that parses (analysis.pts.pts_loop), with a hostile workload name."""
    wl = [{"name": name, "read_percent": 0, "block_size": "4k$x$", "sequential": False},
          {"name": "rnd-4k-100_0", "read_percent": 100, "block_size": "4k",
           "sequential": False}]
    rounds = [{"round": i + 1, "workloads": {
        w["name"]: {"iops": 2000.0 + i, "mib_s": 8.0, "lat_mean_us": 200.0,
                    "lat_p99999_us": 1500.0, "lat_max_us": 2000.0} for w in wl}}
        for i in range(6)]
    return {"test": "iops", "round_s": 60, "max_rounds": 25, "tracking": name,
            "metric": "iops", "workloads": wl, "rounds": rounds,
            "steady": {"reached": True, "first_round": 2, "last_round": 6, "mean": 2003.0,
                       "range": 4.0, "slope_excursion": 1.0}}


def _run_json(**extra: Any) -> str:
    doc: dict[str, Any] = {"schema": 1, "run": "consistency-default", "kind": "consistency",
                           "state": "done", "params": {"torture_seconds": 120}}
    doc.update(extra)
    return json.dumps(doc)


def hostile_results_folder(dest: Path) -> Path:
    """A results folder (``dest``: the ``ssdbench/`` root) made to break its readers, and
    beside it (``dest.parent``) ``victim/``, a folder its links point into. Nothing a
    reader does with it may write outside ``dest``, hang, or crash:

    * ``*_traversal``: run.json ``pts`` keyed ``x/../../../../outside/pwned`` (the report
      wrote ``dest.parent/outside/pwned.csv``), a workload name that is a formula with a
      comma, a block size with ``$``; the drive's model :data:`MATH_MODEL` and serial
      ``SN/0001``;
    * ``*_linked_runs``: a run folder that is a link to ``victim/run``; ``*_linked``, a
      drive folder that is a link to ``victim/drive``; ``summary.csv`` a link to
      ``victim/secret.txt``; a drive's ``report.html`` a link to ``victim/report.html``;
    * ``*_fifos``: FIFOs as drive.json, a run's run.json, a HIR run's hir-idle-5.csv,
      sensors-torture.csv and a fio log (a reader that opens one blocks for ever);
    * ``*_huge``: a drive.json and a run.json just over the JSON reader's limit (sparse);
      a run.json nested 100,000 deep; ``*_types``: every field of the wrong type, NaN and
      Infinity where numbers go;
    * ``lab/`` (a copy of a store): a FIFO as status.json, a run.json that is a link to
      ``victim/secret.txt``, one over the limit, one nested too deeply, a record-chain.json
      nested too deeply, a status.json with NaN and wrong types;
    * ``state.json``: an unfinished journal entry whose ``drive_dir`` is ``../outside``.
    """
    victim = dest.parent / "victim"
    _put(victim / "secret.txt", "not for the report\n")
    _put(victim / "run" / "iops.csv", _iops_csv())
    _put(victim / "run" / "run.json", _run_json())
    _put(victim / "drive" / "drive.json", json.dumps({"drive": {"model": "V", "serial": "V"}}))
    _put(victim / "drive" / "consistency-default" / "iops.csv", _iops_csv())
    _put(victim / "drive" / "consistency-default" / "run.json", _run_json())

    drive = dest / "20261127T000000Z_traversal"
    _put(drive / "drive.json", json.dumps({"schema": 1, "drive": {
        "model": MATH_MODEL, "serial": "SN/0001", "firmware": "$1$", "size_bytes": 10**9}}))
    run = drive / "consistency-default"
    _put(run / "iops.csv", _iops_csv())
    _put(run / "run.json", _run_json(
        pts={TRAVERSAL_LOOP: _pts_entry(FORMULA_WORKLOAD), "../..": _pts_entry("a")},
        target={"op_percent": float("nan")}, params={"block_size_torture": "$4k$"},
        warnings=[{"message": MATH_MODEL}]))
    _put(drive / "consistency-op25" / "iops.csv", _iops_csv(90))
    _put(drive / "consistency-op25" / "run.json", _run_json(run="consistency-op25"))

    linked = dest / "20261127T000000Z_linked_runs"
    _put(linked / "drive.json", json.dumps({"drive": {"model": "M", "serial": "SN 0001"}}))
    (linked / "consistency-default").symlink_to(victim / "run")
    _put(linked / "trim" / "iops.csv", _iops_csv(30))
    (linked / "report.html").symlink_to(victim / "report.html")
    (dest / "20261127T000000Z_linked").symlink_to(victim / "drive")
    (dest / "summary.csv").symlink_to(victim / "secret.txt")

    fifos = dest / "20261127T000000Z_fifos"
    _fifo(fifos / "drive.json")
    hir = fifos / "hir"
    _put(hir / "iops.csv", _iops_csv(60))
    _put(hir / "run.json", _run_json(run="hir", kind="hir",
                                     params={"hir_waits": "5", "hir_burst_seconds": 5}))
    _fifo(hir / "hir-idle-5.csv")
    _put(hir / "hir-base-5.csv", "time_s,iops\n0,1\n")
    _fifo(hir / "sensors-torture.csv")
    _fifo(fifos / "trim" / "run.json")
    _put(fifos / "trim" / "probes.csv", "phase,mib_s,seconds,bytes\nclean,300,4,1024\n")
    _put(fifos / "consistency-op25" / "iops.csv", _iops_csv(30))
    _fifo(fifos / "consistency-op25" / "fio" / "torture_iops.1.log")

    huge = dest / "20261127T000000Z_huge"
    _huge(huge / "drive.json", HUGE)
    _put(huge / "consistency-default" / "iops.csv", _iops_csv(30))
    _huge(huge / "consistency-default" / "run.json", HUGE)
    _put(huge / "trim" / "probes.csv", "phase,mib_s,seconds,bytes\nclean,300,4,1024\n")
    _put(huge / "trim" / "run.json", NESTED)

    types = dest / "20261127T000000Z_types"
    _put(types / "drive.json", json.dumps({"drive": ["model", "serial"]}))
    _put(types / "consistency-default" / "iops.csv", _iops_csv(30))
    _put(types / "consistency-default" / "run.json", json.dumps({
        "kind": 5, "state": [], "params": "x", "target": [], "pts": [1], "analysis": "x",
        "warnings": {"a": 1}, "drive": "x", "erase": 3, "grade": [], "authenticity": 7}))
    _put(types / "consistency-op25" / "iops.csv", _iops_csv(30))
    _put(types / "consistency-op25" / "run.json", _run_json(
        target={"op_percent": float("nan"), "span_bytes": float("inf")},
        params={"torture_seconds": float("inf"), "steady_round_s": float("nan")}))
    _put(types / "trim" / "run.json", json.dumps({"pts": {"p": "not an object"},
                                                  "probes": "x", "trim": [1]}))
    _put(types / "trim" / "probes.csv", "phase,mib_s,seconds,bytes\nclean,NaN,inf,x\n")

    lab = dest / "lab"
    _fifo(lab / "bench1" / "status.json")
    run_id = lab / "bench1" / "SN0001" / "20261127T000000Z"
    run_id.mkdir(parents=True)
    (run_id / "run.json").symlink_to(victim / "secret.txt")
    _huge(lab / "bench1" / "SN0002" / "20261127T000000Z" / "run.json", HUGE)
    _put(lab / "bench1" / "SN0003" / "20261127T000000Z" / "run.json", NESTED)
    _put(lab / "bench1" / "_bench" / "record-chain.json", NESTED)
    _put(lab / "bench2" / "status.json", json.dumps({"state": float("nan"),
                                                     "drives": {"x": 1}}))

    _put(dest / "state.json", json.dumps({"schema": 1, "drives": {"SN0001": {
        "consent_id": "SN0001", "drive": "sda", "model": "M", "serial": "SN0001",
        "drive_dir": "../outside", "plan": {"name": "x", "runs": []}, "state": "running",
        "runs": {}}}}))
    return dest
