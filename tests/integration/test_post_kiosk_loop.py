"""`ssdbench kiosk` with `[post]` on two loop devices (root): each drive's erase record
reaches the reference receiver (tests/assetreceiver.py, 127.0.0.1) and validates; the
console ends with `posted 2 of 2 records`; the token is in no file written and not on the
console. A second boot on the same results posts nothing again (post-journal.json)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.assetreceiver import AssetReceiver
from tests.conftest import loop_device
from tests.integration.test_kiosk_loop import kiosk
from tests.schema_check import check_json

TOKEN = "Tk9-kiosk-post-token"

@pytest.fixture
def loops() -> Iterator[list[str]]:
    with loop_device(16, fill=0x5A, prefix="ssdbench-post-") as (a, _), \
            loop_device(16, fill=0x5B, prefix="ssdbench-post-") as (b, _):
        yield [a, b]


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[AssetReceiver]:
    r = AssetReceiver(tmp_path / "received", token=TOKEN)
    yield r
    r.close()


def test_each_record_of_a_kiosk_run_reaches_the_receiver_and_validates(
        loops: list[str], tmp_path: Path, receiver: AssetReceiver) -> None:
    names = [os.path.basename(d) for d in loops]
    config = tmp_path / "ssdbench.toml"
    config.write_text(
        'plan = "erase"\n'
        f"select = {json.dumps(['serial:' + n for n in names])}\n"
        f"destroy = {json.dumps(names)}\n"
        "svg = false\n"
        "[params]\n"
        'erase_fallback = "discard"\n'
        "record_pdf = false\n"
        "[post]\n"
        f'url = "{receiver.url}"\n'
        f'token = "{TOKEN}"\n')
    results = tmp_path / "results"
    done = kiosk(config, results)
    out = done.stdout + done.stderr
    records = sorted(results.rglob("erase-record.json"))
    assert len(records) == 2, out
    assert f"ssdbench: posted 2 of 2 records to {receiver.url}" in done.stdout, out
    filed = receiver.filed()
    assert sorted(f.read_bytes() for f in filed) == sorted(r.read_bytes() for r in records)
    for f in filed:
        check_json(f, "erase-record.json")
    assert {s.status for s in receiver.requests} == {201}
    assert "plain HTTP" in done.stdout  # a token over http:// is said

    again = kiosk(config, results)  # the next boot: the journal says both were acknowledged
    assert len(receiver.requests) == 2, again.stdout
    for path in [*results.rglob("*"), *receiver.folder.rglob("*")]:  # all but the config
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in out + again.stdout + again.stderr
