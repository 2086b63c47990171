"""Station mode against drives whose identity lies (issue #42): two NVMe drives at boot that
report one serial (each in an NVM subsystem of its own: the kernel rejects a second
controller of one subsystem, and QEMU's default subsystem name holds the serial), a
serial-less drive hot-added, erased, pulled and replaced at the same kernel name, in the
same slot, by another serial-less drive of the same model and size (nothing tells the two
apart), and a drive with the hostile identity (simdrive/identity.py: markup, a line break
and U+202E in its serial) hot-added beside them.

Every drive is erased (Format NVM, verified), each on its own row of the session CSV and
in its own record; the two that share a serial name each other; the replacement is not
skipped as "already finished"; the station does not end while one of them still erases
(one of the pair is throttled to 2 I/Os a second, so it erases longest); the hostile serial
reaches the record as it was reported and every page, CSV line and console line a person
reads only in its escaped, visible form."""

from __future__ import annotations

import csv
import html
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ssdbench.untrusted import visible
from tests.e2e.rig import Boot, QmpAt, QmpCommand, boot_kiosk, nvme_hot_add, qmp
from tests.hostile import HOSTILE_SERIAL, HOSTILE_SHARED_SERIAL

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(1200)]

SHARED = HOSTILE_SHARED_SERIAL  # the pair's serial: a formula start and markup
DRIVE_BYTES = 16 * 1024 * 1024
IDLE_MINUTES = 0.1  # 6 s: only the throttled drive keeps the session open at the end
SLOW_IOPS = 2  # the second of the pair (QEMU's nvme1): it erases longest
CONFIG = f"""\
plan = "erase"
select = ["model:QEMU NVMe Ctrl"]
destroy = "all-eligible"
on_finish = "poweroff"
svg = false

[params]
operator = "E2E Operator"
record_pdf = false

[station]
idle_minutes = {IDLE_MINUTES}
"""
WAITING = r"ssdbench: station: waiting for drives"
# a serial-less drive's consent id is its kernel name: "station: nvme2n1 (nvme2n1) PASS"
SERIAL_LESS_PASS = r"ssdbench: station: (nvme\d+n1) \(\1\) PASS"
SERIAL_LESS_REMOVED = r"ssdbench: station: (nvme\d+n1) \(.*\1\) removed"
SAFE_PART = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Run:
    boot: Boot
    seconds: float
    records: dict[str, dict[str, Any]]  # by record file, relative to results/ssdbench


def _peripherals(sock: Path) -> set[str]:
    reply = qmp(sock, [{"execute": "qom-list", "arguments": {"path": "/machine/peripheral"}}])
    return {p["name"] for p in reply[0]["return"]}


@pytest.fixture(scope="module")
def station(dev_image: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    work = tmp_path_factory.mktemp("station-identity")
    images = {}
    for name in ("twin0", "twin1", "bare1", "bare2", "hostile"):
        images[name] = work / f"{name}.img"
        with images[name].open("wb") as fh:
            fh.truncate(DRIVE_BYTES)
    sock = work / "qemu" / "qmp.sock"

    def replace_bare(_m: re.Match[str], _serial: str) -> list[QmpCommand]:
        # the same slot: wait until QEMU let go of the pulled drive (the guest's hot-unplug)
        deadline = time.monotonic() + 60
        while "bare1" in _peripherals(sock) and time.monotonic() < deadline:
            time.sleep(0.5)
        return nvme_hot_add("bare2", images["bare2"], "", "hotplug0")

    slow = {"device": "nvme1-blk", "bps": 0, "bps_rd": 0, "bps_wr": 0,
            "iops": SLOW_IOPS, "iops_rd": 0, "iops_wr": 0}
    t0 = time.monotonic()
    b = boot_kiosk(
        work, CONFIG, hotplug_ports=2, direct=True, timeout_s=600,
        nvme=tuple(f"file={images[f'twin{i}']},serial={SHARED},subsys=nqn.2026-11.e2e:twin{i}"
                   for i in (0, 1)),
        qmp_at=(
            # once the pair's erases start (throttled from the boot, the drive held up the
            # guest's blkid past its 30-s limit): nvme1 of the pair at SLOW_IOPS
            QmpAt(r"ssdbench: nvme\d+n1 erase erase started",
                  ({"execute": "block_set_io_throttle", "arguments": slow},)),
            QmpAt(WAITING, nvme_hot_add("bare1", images["bare1"], "", "hotplug0")),
            # the hostile drive first (it takes the next free name), then pull the bare one
            QmpAt(SERIAL_LESS_PASS,
                  (*nvme_hot_add("hostile", images["hostile"], HOSTILE_SERIAL, "hotplug1"),
                   {"execute": "device_del", "arguments": {"id": "bare1"}})),
            QmpAt(SERIAL_LESS_REMOVED, replace_bare),
        ))
    seconds = time.monotonic() - t0
    root = b.results / "ssdbench"
    records = {str(p.relative_to(root)): json.loads(p.read_text())
               for p in sorted(root.rglob("erase-record.json"))}
    return Run(b, seconds, records)


def _by_serial(run: Run, serial: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in run.records.items() if r["drive"]["serial"] == serial}


def _pass_lines(b: Boot) -> list[str]:
    return [ln for ln in b.serial.splitlines()
            if re.search(r"ssdbench: station: nvme\d+n1 \(.*\) PASS", ln)]


def test_every_drive_was_plugged_and_erased_each_once(station: Run) -> None:
    b = station.boot
    print(f"station identity e2e: {station.seconds:.0f} s from QEMU start to power-off")
    assert [f.replies for f in b.qmp_fired] == [({"return": {}},),
                                                 ({"return": {}},) * 2,
                                                 ({"return": {}},) * 3,
                                                 ({"return": {}},) * 2], b.tail(80)
    assert b.returncode == 0 and "ssdbench: poweroff" in b.serial, b.tail(80)
    # five drives, five records, every one PASS
    assert len(station.records) == 5, (sorted(station.records), b.tail(80))
    assert {k: r["result"]["status"] for k, r in station.records.items()} == \
        dict.fromkeys(station.records, "PASS"), b.tail(80)
    assert all(r["verification"]["result"] == "passed" for r in station.records.values())
    assert len(_pass_lines(b)) == 5, "\n".join(_pass_lines(b))
    assert "already finished" not in b.serial, b.tail(80)
    assert b.bystander_sha_after == b.bystander_sha_before
    assert b.boot_partition_sha_after == b.boot_partition_sha_before


def test_two_drives_sharing_a_serial_are_two_rows_and_two_records_naming_each_other(
        station: Run) -> None:
    b = station.boot
    pair = _by_serial(station, SHARED)
    assert len(pair) == 2, (sorted(station.records), b.tail(80))
    devices = sorted(r["drive"]["device"] for r in pair.values())
    assert devices[0] != devices[1], devices
    assert len({r["record_id"] for r in pair.values()}) == 2
    assert len({Path(k).parts[0] for k in pair}) == 2, sorted(pair)  # a folder each
    for record in pair.values():
        other = next(d for d in devices if d != record["drive"]["device"]).removeprefix("/dev/")
        assert record["drive"]["serial_shared_with"] == [other], record["drive"]
        assert any(other in w for w in record["warnings"]), record["warnings"]
        line = next(ln for ln in _pass_lines(b) if record["drive"]["device"].removeprefix(
            "/dev/") + " (" in ln)
        assert f"serial shared with {other}" in line, line
    with _session_csv(b).open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if "SHARED" in r["serial"]]
    assert len(rows) == 2, rows
    # the formula start is neutralised in the CSV (a leading apostrophe), the markup kept
    assert {r["serial"] for r in rows} == {"'" + SHARED}, rows
    # each row names the other drive (its warnings: "serial ... was also reported by ...")
    names = [d.removeprefix("/dev/") for d in devices]
    assert sorted(next(n for n in names if f"also reported by {n}" in r["warnings"])
                  for r in rows) == names, [r["warnings"] for r in rows]


def test_the_station_did_not_end_while_one_still_erased(station: Run) -> None:
    b = station.boot
    ended = b.seconds_until(f"station: idle for {IDLE_MINUTES:g} min: the session ends")
    last = max(b.seconds_until(ln.partition("ssdbench: ")[2]) for ln in _pass_lines(b))
    assert ended > last, b.tail(80)
    # the pair's two erases overlapped (the throttled one went on after the other ended;
    # tracked as one drive, the first to end took the other's place with it)
    pair = sorted(r["drive"]["device"].removeprefix("/dev/") for r in _by_serial(
        station, SHARED).values())
    started = [b.seconds_until(f"{name} erase erase started") for name in pair]
    passed = [b.seconds_until(next(ln for ln in _pass_lines(b) if f" {name} (" in ln
                                   ).partition("ssdbench: ")[2]) for name in pair]
    assert max(started) < min(passed), (started, passed)


def test_a_serial_less_drive_replacing_another_at_its_kernel_name_is_erased(
        station: Run) -> None:
    b = station.boot
    bare = _by_serial(station, "")
    assert len(bare) == 2, (sorted(station.records), b.tail(80))
    devices = {r["drive"]["device"] for r in bare.values()}
    assert len(devices) == 1, devices  # the same kernel name
    name = devices.pop().removeprefix("/dev/")
    found = [float(ln.strip().split(" ", 1)[0]) for ln in b.serial_times.splitlines()
             if f"ssdbench: station: {name} (" in ln and "found: erasing" in ln]
    assert len(found) == 2, b.tail(80)
    removed = b.seconds_until(f"station: {name} ({name}) removed")
    assert found[0] < removed < found[1], (found, removed)
    assert "has this drive's identity, but it reports no serial and no WWN" in b.serial
    assert len({r["record_id"] for r in bare.values()}) == 2
    assert len({Path(k).parts[0] for k in bare}) == 2, sorted(bare)  # a folder each
    with _session_csv(b).open(newline="") as fh:
        assert sum(r["serial"] == "" for r in csv.DictReader(fh)) == 2


def _session_csv(b: Boot) -> Path:
    sessions = list((b.results / "ssdbench").glob("erase-session-*.csv"))
    assert len(sessions) == 1, sessions
    return sessions[0]


def test_the_hostile_identity_is_recorded_as_reported_and_shown_escaped(station: Run) -> None:
    """The record keeps the serial as the drive reported it (JSON is data); every page,
    CSV and text a person reads shows its visible form (docs/security.md "Untrusted
    strings": control and bidirectional characters as ``?``), HTML-escaped in HTML."""
    b = station.boot
    root = b.results / "ssdbench"
    hostile = _by_serial(station, HOSTILE_SERIAL)
    assert len(hostile) == 1, ({k: r["drive"]["serial"] for k, r in station.records.items()},
                               b.tail(80))
    key = next(iter(hostile))
    shown = visible(HOSTILE_SERIAL)
    assert shown == "[i]$x$??</style>"
    # the certificate: the escaped visible form, one style element (the page's own)
    page = (root / key).with_name("erase-certificate.html").read_text()
    assert html.escape(shown, quote=False) in page
    assert page.count("</style>") == 1
    # the session CSV: its visible form, on one line
    with _session_csv(b).open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if "$x$" in r["serial"]]
    assert [r["serial"] for r in rows] == [shown], rows
    # every page, CSV and text file of the results (the drive's report, the index,
    # kiosk.txt, summary.csv, ...): never the raw line break or U+202E
    readable = [p for p in sorted(root.rglob("*")) if p.suffix in (".html", ".csv", ".txt",
                                                                   ".svg", ".md")]
    assert len(readable) > 5, readable
    raw = [str(p.relative_to(root)) for p in readable
           if "\u202e" in (text := p.read_text(errors="replace")) or "$x$\n" in text]
    assert raw == [], f"the raw hostile serial (a line break, U+202E) is in {raw}"
    unescaped = [str(p.relative_to(root)) for p in readable if p.suffix == ".html"
                 and "$x$" in (text := p.read_text()) and html.escape(shown, quote=False)
                 not in text]
    assert unescaped == [], f"no escaped visible form of the serial in {unescaped}"
    # the console: every line naming it shows the visible form; never the raw bytes
    lines = [ln for ln in b.serial.splitlines() if "$x$" in ln]
    assert lines and all(shown in ln for ln in lines), lines
    assert "\u202e" not in b.serial
    # every file and folder name the stick holds is made of safe characters
    for path in b.results.rglob("*"):
        assert SAFE_PART.fullmatch(path.name), path
