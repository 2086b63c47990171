"""Intake in kiosk mode without [station] (kiosk/run.py `_take_in`, kiosk/intake.py): the
drives found at boot are asked their fields in turn on the console, then each gets its
plan from the lab's job file; a job file that cannot be read runs nothing."""

from __future__ import annotations

import io
import threading

from ssdbench.kiosk.config import parse_config
from ssdbench.kiosk.intake import Intake, JobSource
from ssdbench.kiosk.run import _take_in
from ssdbench.lab.jobs import JobsError
from ssdbench.plan.engine import DriveJob
from ssdbench.plan.plans import build_plan
from tests.unit.kiosk.test_station import drive

JOBS = (b'[[job]]\nid = "J-L"\nlot = "L-9"\nplan = "diagnose"\n'
        b'[[job]]\nid = "J-S"\nserial = "B1"\nplan = "grade"\nfields = {lot = "L-1"}\n')


def setup(fetch: object, **jobs: object) -> tuple[object, JobSource, list[str]]:
    cfg = parse_config({"plan": "erase", "destroy": ["A1", "B1"],
                        "jobs": {"url": "http://127.0.0.1:9/jobs.toml", **jobs},
                        "fields": {"ask": ["lot", "asset_tag"]}})
    lines: list[str] = []
    source = JobSource(cfg, fetch=fetch)  # type: ignore[arg-type]
    source.refresh(lines.append)
    return cfg, source, lines


def test_fields_typed_in_turn_then_a_lot_job_and_a_serial_job() -> None:
    cfg, source, lines = setup(lambda **kw: ("jobs.toml", JOBS))
    plan = build_plan("erase")
    jobs = [DriveJob(drive("sda", "A1"), "A1", plan), DriveJob(drive("sdb", "B1"), "B1", plan)]
    console = io.StringIO("L-9\nTAG-1\n\n-\nTAG-2\n")
    got, waited = _take_in(cfg, plan, jobs, source=source,  # type: ignore[arg-type]
                           say=lines.append, cancel=threading.Event(), inp=console,
                           typing=True)
    assert waited == []
    a, b = (j.plan for j in got)
    assert (a.name, a.params.job, a.params.lot, a.params.asset_tag) == \
        ("diagnose", "J-L", "L-9", "TAG-1")
    # the serial job wins over the lot; what was typed (empty, "-") wins over the job's field
    assert (b.name, b.params.job, b.params.lot, b.params.asset_tag) == \
        ("grade", "J-S", "", "TAG-2")
    assert "jobs: 2 jobs read from jobs.toml" in lines
    assert "intake: sda (A1): scan or type its lot, then Enter" in lines


def test_an_unreadable_job_file_runs_no_drive_whatever_no_job_says() -> None:
    def fail(**kw: object) -> tuple[str, bytes]:
        raise JobsError("job file http://127.0.0.1:9/jobs.toml: the server answered 404")

    cfg, source, lines = setup(fail, no_job="default")
    plan = build_plan("erase")
    jobs = [DriveJob(drive("sda", "A1"), "A1", plan)]
    got, waited = _take_in(cfg, plan, jobs, source=source,  # type: ignore[arg-type]
                           say=lines.append, cancel=threading.Event(),
                           inp=io.StringIO("L\nT\n"), typing=True)
    assert got == [] and len(waited) == 1
    text = "\n".join(lines)
    assert "no drive runs a plan until it can be read" in text
    assert "sda (QEMU NVMe Ctrl A1) waiting: the job file cannot be read" in text


def test_a_line_with_no_drive_waiting_is_not_used_and_the_console_ending_drops_the_rest(
        ) -> None:
    lines: list[str] = []
    done: list[dict[str, str]] = []
    intake = Intake(["asset_tag"], lines.append)
    intake.feed("stray\n")
    assert "intake: no drive waits for a field: 'stray' not used" in lines
    intake.add("k1", "sda (A1)", done.append)
    intake.close()
    assert done == [] and intake.waiting() == 0
    assert "intake: sda (A1): the console ended before its fields were in: not tested" in lines


def test_idle_is_set_only_after_the_drives_values_are_handed_over() -> None:
    """The kiosk waits on ``idle`` and then reads the values ``done`` stored: set before
    ``done`` ran, a QEMU netboot run read none and said "its fields were not entered"
    right after the tag was scanned."""
    from ssdbench.kiosk.intake import Intake

    seen: list[tuple[bool, dict[str, str]]] = []
    intake = Intake(["asset_tag"], lambda _line: None)
    intake.add("k", "nvme0n1 (S1)", lambda values: seen.append((intake.idle.is_set(), values)))
    assert not intake.idle.is_set()
    intake.feed("A-4477\r\n")
    assert seen == [(False, {"asset_tag": "A-4477"})]
    assert intake.idle.is_set()
