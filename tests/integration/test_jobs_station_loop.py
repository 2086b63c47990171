"""Jobs and the operator's fields in station mode on the host (root): two loop devices, a
job file on an HTTP server on 127.0.0.1 giving each its own plan by serial, and a barcode
scanner's lines (typed on the kiosk's stdin) filling each drive's asset tag in turn; each
plan's run records the job and the asset tag."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, remove_loop_node, require_root, unplugged_loop_numbers
from tests.unit.kiosk.test_config_url import Server

MIB = 2**20


@pytest.fixture
def two_loops() -> Iterator[list[str]]:
    require_root()
    free = unplugged_loop_numbers(2)
    folder = Path(tempfile.mkdtemp(prefix="ssdbench-jobs-", dir="/dev/shm"))
    devs = []
    try:
        for n in free:
            image = folder / f"disk{n}.img"
            image.write_bytes(bytes([0xA7]) * 16 * MIB)
            subprocess.run(["losetup", f"/dev/loop{n}", str(image)], check=True)
            devs.append(f"loop{n}")
        yield devs
    finally:
        for d in devs:
            subprocess.run(["losetup", "-d", f"/dev/{d}"], check=False, capture_output=True)
        for n in free:
            remove_loop_node(n)
        shutil.rmtree(folder, ignore_errors=True)


def test_jobs_give_two_drives_two_plans_and_the_scanned_tags_reach_the_records(
        two_loops: list[str], tmp_path: Path) -> None:
    a, b = two_loops
    server = Server()
    try:
        server.files["/jobs.toml"] = (200, (
            f'[[job]]\nid = "J-ERASE"\nserial = "{a}"\nplan = "erase"\n'
            'params = {erase_fallback = "discard"}\nfields = {customer = "ACME"}\n'
            f'[[job]]\nid = "J-DIAG"\nserial = "{b}"\nplan = "diagnose"\n'
            'params = {random_read_seconds = 1}\n').encode())
        config = tmp_path / "ssdbench.toml"
        config.write_text(
            'plan = "erase"\n'
            f'select = ["serial:{a}", "serial:{b}"]\n'
            f'destroy = ["{a}"]\n'
            "svg = false\n"
            "[params]\n"
            "record_pdf = false\n"
            "[station]\n"
            "idle_minutes = 0.05\n"
            "[jobs]\n"
            f'url = "{server.url("/jobs.toml")}"\n'
            'no_job = "wait"\n'
            "[fields]\n"
            'ask = ["asset_tag"]\n')
        results = tmp_path / "results"
        proc = subprocess.Popen(
            [sys.executable, "-m", "ssdbench", "kiosk", "--config", str(config), "--results",
             str(results), "--include-all", "--no-power"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=REPO, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        assert proc.stdout is not None and proc.stdin is not None
        seen: list[str] = []
        asked: list[str] = []
        for line in proc.stdout:  # the scanner answers each prompt with that drive's tag
            seen.append(line)
            m = re.search(r"intake: (loop\d+) \(\1\): scan or type its asset_tag", line)
            if m:
                asked.append(m.group(1))
                proc.stdin.write(f"TAG-{m.group(1)}\r\n")  # a scanner's CR LF
                proc.stdin.flush()
            if len(asked) == 2:
                break
        rest, err = proc.communicate(timeout=300)
    finally:
        server.stop()
    out = "".join(seen) + rest
    assert sorted(asked) == sorted([a, b]), out + err
    assert "jobs: 2 jobs read from http://127.0.0.1" in out, out
    assert "found: running plan erase (job J-ERASE)" in out, out
    assert "found: running plan diagnose (job J-DIAG)" in out, out
    runs = {}
    for run_json in results.rglob("run.json"):
        data = json.loads(run_json.read_text())
        runs[run_json.parent.name] = (run_json, data)
    params = {name: data.get("params", {}) for name, (_p, data) in runs.items()}
    assert any(p.get("job") == "J-ERASE" and p.get("asset_tag") == f"TAG-{a}"
               and p.get("customer") == "ACME" for p in params.values()), params
    assert any(p.get("job") == "J-DIAG" and p.get("asset_tag") == f"TAG-{b}"
               for p in params.values()), params
    records = list(results.rglob("erase-record.json"))
    assert len(records) == 1, sorted(results.rglob("*"))
    record = json.loads(records[0].read_text())
    assert f"TAG-{a}" in json.dumps(record), record


def test_kiosk_mode_asks_the_fields_at_boot_and_a_drive_without_a_job_waits(
        two_loops: list[str], tmp_path: Path) -> None:
    a, b = two_loops
    server = Server()
    try:
        server.files["/jobs.toml"] = (200, (
            f'[[job]]\nid = "J-DIAG"\nserial = "{a}"\nplan = "diagnose"\n'
            'params = {random_read_seconds = 1}\nfields = {customer = "ACME"}\n').encode())
        config = tmp_path / "ssdbench.toml"
        config.write_text(
            'plan = "diagnose"\n'
            f'select = ["serial:{a}", "serial:{b}"]\n'
            "svg = false\n"
            "[jobs]\n"
            f'url = "{server.url("/jobs.toml")}"\n'
            'no_job = "wait"\n'
            "[fields]\n"
            'ask = ["asset_tag", "pallet"]\n'
            'names = ["pallet"]\n')
        results = tmp_path / "results"
        # the scanner's lines for both drives, in the order they are asked (a, then b)
        proc = subprocess.run(
            [sys.executable, "-m", "ssdbench", "kiosk", "--config", str(config), "--results",
             str(results), "--include-all", "--no-power"],
            input=f"TAG-{a}\nP-1\nTAG-{b}\nP-2\n", capture_output=True, text=True, cwd=REPO,
            env=dict(os.environ, PYTHONUNBUFFERED="1"), timeout=300, check=False)
    finally:
        server.stop()
    out = proc.stdout
    assert proc.returncode == 3, out + proc.stderr  # a drive not run: never exit 0
    assert f"intake: {a} ({a}): scan or type its asset_tag, then Enter" in out, out
    assert f"{a} (? {a}): plan diagnose (job J-DIAG)" in out, out
    assert f"{b} (? {b}) waiting: no job for it in http://127.0.0.1" in out, out
    assert "waiting: no job for it" in (results / "kiosk.txt").read_text()
    params = [json.loads(p.read_text()).get("params", {}) for p in results.rglob("run.json")]
    assert len(params) == 1, params
    assert params[0]["job"] == "J-DIAG" and params[0]["asset_tag"] == f"TAG-{a}"
    assert params[0]["customer"] == "ACME"
    assert params[0]["extra_fields"] == {"pallet": "P-1"}, params[0]
