"""Results out (#46): each finished record POSTed to an asset system, against the reference
receiver (tests/assetreceiver.py, a real HTTP server on 127.0.0.1 validating with jsonschema).
Every test ends by searching every file written (results, journal, the receiver's folder) and
every console line for the token and the password."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssdbench.lab.config import PostConfig, parse_post
from ssdbench.lab.post import JOURNAL, Poster, finish_post, schema_id, start_post
from ssdbench.record.sign import unsigned
from ssdbench.record.write import write_record_files
from ssdbench.untrusted import path_part
from tests.assetreceiver import AssetReceiver
from tests.conftest import DATA
from tests.schema_check import check_json
from tests.unit.lab.netservers import tls_server_context
from tests.unit.record.test_record import record as a_record

RUN_JSON = DATA / "lab" / "results" / "20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001" / "trim" / "run.json"
TOKEN = "Tk9-receiver-token"
PASSWORD = "Pw7-basic-password"
SECRETS = (TOKEN, PASSWORD)


def write_record(results: Path, serial: str, n: int, *,
                 change: Any = None) -> Path:
    """An unsigned erase record of drive ``serial`` in its drive folder, as the record stage
    writes it (``change``: a function that spoils it)."""
    rec = copy.deepcopy(a_record())
    rec["drive"]["serial"] = serial
    rec["record_id"] = f"00000000-0000-4000-8000-{n:012d}"
    if change is not None:
        change(rec)
    run_dir = results / f"2026112{n}T145833Z_{path_part(serial)}_nvme{n}n1" / "erase"
    run_dir.mkdir(parents=True)
    write_record_files(run_dir, unsigned(rec, "no lab key configured"), pdf=False)
    return run_dir / "erase-record.json"


def write_run(results: Path, record: Path, state: str) -> Path:
    """A real run.json (tests/data/lab) beside ``record``, in ``state``."""
    run = json.loads(RUN_JSON.read_text())
    run["state"] = state
    path = record.parent / "run.json"
    path.write_text(json.dumps(run, indent=1) + "\n")
    return path


class Console(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[AssetReceiver]:
    r = AssetReceiver(tmp_path / "received", token=TOKEN)
    yield r
    r.close()


def config(url: str, tmp_path: Path, **more: str) -> PostConfig:
    """[post] as a kiosk config gives it (parse_post)."""
    return parse_post({"url": url, "token": TOKEN, **more}, tmp_path)


def poster(cfg: PostConfig, results: Path, console: Console, **kw: Any) -> Poster:
    kw.setdefault("backoff_s", 0.05)
    kw.setdefault("backoff_max_s", 0.2)
    return Poster(cfg, results, console, **kw)


def no_secret_anywhere(tmp_path: Path, console: list[str]) -> None:
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret} written in {path}"
    for secret in SECRETS:
        assert secret not in "\n".join(console)


def test_each_record_is_posted_validated_and_filed(tmp_path: Path,
                                                   receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    records = [write_record(results, "SSDBNVME0001", 1), write_record(results, "SN/02", 2)]
    console = Console()
    p = start_post(config(receiver.url, tmp_path), results, console)
    p.request()  # a stage ended: never blocks
    outcome = finish_post(p, threading.Event(), console, wait_s=30)
    assert outcome.posted == [r.relative_to(results).as_posix() for r in records]
    assert console[-1] == f"posted 2 of 2 records to {receiver.url}"
    # the receiver validated each body (201) and filed its exact bytes
    assert [s.status for s in receiver.requests] == [201, 201]
    filed = receiver.filed()
    assert sorted(f.read_bytes() for f in filed) == sorted(r.read_bytes() for r in records)
    assert {f.relative_to(receiver.folder).as_posix() for f in filed} == {
        "records/SSDBNVME0001/00000000-0000-4000-8000-000000000001.json",
        "records/SN_02/00000000-0000-4000-8000-000000000002.json"}
    seen = receiver.requests[0].headers
    assert seen["Authorization"] == f"Bearer {TOKEN}"
    assert seen["Idempotency-Key"] == "00000000-0000-4000-8000-000000000001"
    # the $id of the schema the file follows, its version included
    assert seen["Ssdbench-Schema"] == schema_id("erase-record.json")
    assert schema_id("erase-record.json").startswith("urn:ssdbench:schema:erase-record.json:")
    assert seen["Content-Type"] == "application/json"
    for f in filed:
        check_json(f, "erase-record.json")

    # a reboot: the journal (on the stick) says both were acknowledged, nothing is resent
    again = Console()
    finish_post(start_post(config(receiver.url, tmp_path), results, again), threading.Event(),
                again, wait_s=30)
    assert len(receiver.requests) == 2
    assert again[-1] == f"posted 2 of 2 records to {receiver.url}"
    # without the journal they go again, and the receiver drops the duplicates (200)
    (results / JOURNAL).unlink()
    finish_post(start_post(config(receiver.url, tmp_path), results, again), threading.Event(),
                again, wait_s=30)
    assert [s.status for s in receiver.requests[2:]] == [200, 200]
    assert len(receiver.filed()) == 2
    no_secret_anywhere(tmp_path, console + again)


def test_finished_runs_too_when_asked(tmp_path: Path, receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    record = write_record(results, "SSDBNVME0001", 1)
    run = write_run(results, record, "running")
    console = Console()
    p = poster(config(receiver.url, tmp_path, what="runs"), results, console)
    assert p.send().posted == [record.relative_to(results).as_posix()]  # still running
    write_run(results, record, "done")
    out = p.send()
    assert out.posted == [record.relative_to(results).as_posix(),
                          run.relative_to(results).as_posix()]
    last = receiver.requests[-1]
    assert last.status == 201
    assert last.headers["Ssdbench-Schema"] == schema_id("run.json")
    assert last.headers["Idempotency-Key"].startswith("sha256:")
    assert p.summary()[0] == f"posted 2 of 2 records and runs to {receiver.url}"
    assert [f.relative_to(receiver.folder).parts[:2] for f in receiver.filed()] == [
        ("records", "SSDBNVME0001"), ("runs", "DEMONVME0001")]


def test_503_twice_then_posted(tmp_path: Path, receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    write_record(results, "SSDBNVME0001", 1)
    receiver.fail_first = 2
    console = Console()
    p = poster(config(receiver.url, tmp_path), results, console)
    p.start()
    outcome = p.close(wait_s=30)
    assert [s.status for s in receiver.requests] == [503, 503, 201]
    assert outcome.posted and not outcome.queued
    # one line for the outage, one when it answered again; the end says all went
    assert sum("503" in line and "retrying" in line for line in console) == 1
    assert any("answers again" in line for line in console)
    assert p.summary() == [f"posted 1 of 1 records to {receiver.url}"]
    no_secret_anywhere(tmp_path, console)


def test_a_hanging_receiver_never_blocks_the_bench(tmp_path: Path,
                                                   receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    rec = write_record(results, "SSDBNVME0001", 1)
    receiver.hang.set()
    console = Console()
    p = poster(config(receiver.url, tmp_path), results, console, timeout_s=0.5)
    p.start()
    assert receiver.arrived.wait(30)  # the receiver holds the POST, unanswered
    # the bench goes on meanwhile: a stage ends, the next drive's record is written
    p.request()
    write_record(results, "SSDBNVME0003", 3)
    assert receiver.requests[0].status == 0  # still unanswered
    outcome = p.close(wait_s=1.5)
    assert outcome.posted == []
    assert rec.relative_to(results).as_posix() in outcome.queued
    assert len(outcome.queued) == 2
    assert "no whole answer within" in (outcome.why_queued or "")
    summary = p.summary()
    assert summary[0] == f"posted 0 of 2 records to {receiver.url}"
    assert "still queued" in summary[1] and "next boot" in summary[1]

    # the next boot: the queue is what the journal does not list; the receiver answers now
    receiver.hang.clear()
    again = Console()
    out = finish_post(start_post(config(receiver.url, tmp_path), results, again),
                      threading.Event(), again, wait_s=30)
    assert len(out.posted) == 2 and again[-1].startswith("posted 2 of 2")
    no_secret_anywhere(tmp_path, console + again)


def test_an_invalid_record_is_given_up_and_named(tmp_path: Path,
                                                 receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    bad = write_record(results, "SSDBNVME0001", 1, change=lambda r: r.pop("health"))
    good = write_record(results, "SSDBNVME0002", 2)
    console = Console()
    p = poster(config(receiver.url, tmp_path), results, console)
    p.start()
    outcome = p.close(wait_s=30)
    bad_rel = bad.relative_to(results).as_posix()
    assert [s.status for s in receiver.requests] == [422, 201]
    assert outcome.posted == [good.relative_to(results).as_posix()]
    assert list(outcome.refused) == [bad_rel] and "422" in outcome.refused[bad_rel]
    line = next(x for x in console if "refused" in x)
    assert bad_rel in line and "422" in line and "'health' is a required property" in line
    assert p.summary()[0] == f"posted 1 of 2 records to {receiver.url}"
    assert bad_rel in p.summary()[1]
    # given up for good: the journal says so, a reboot does not send it again
    journal = json.loads((results / JOURNAL).read_text())
    assert journal["refused"][bad_rel]["status"] == 422
    finish_post(start_post(config(receiver.url, tmp_path), results, console),
                threading.Event(), console, wait_s=30)
    assert len(receiver.requests) == 2
    no_secret_anywhere(tmp_path, console)


def test_a_redirect_to_another_origin_does_not_carry_the_token(
        tmp_path: Path, receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    write_record(results, "SSDBNVME0001", 1)
    elsewhere = AssetReceiver(tmp_path / "elsewhere", token=TOKEN)
    try:
        receiver.redirect_to = elsewhere.url
        console = Console()
        p = poster(config(receiver.url, tmp_path), results, console)
        p.start()
        outcome = p.close(wait_s=30)
        assert receiver.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
        assert receiver.requests[0].status == 307
        # followed with the same body, but without the credentials: that origin says 401
        assert len(elsewhere.requests) == 1
        assert "Authorization" not in elsewhere.requests[0].headers
        assert elsewhere.requests[0].status == 401
        assert outcome.queued and "401" in (outcome.why_queued or "")
        assert any("401" in line and "token" in line for line in console)
        no_secret_anywhere(tmp_path, console)
    finally:
        elsewhere.close()


def test_https_with_the_lab_ca_and_never_down_to_http(tmp_path: Path) -> None:
    (tmp_path / "tls").mkdir()
    ctx, ca_file = tls_server_context(tmp_path / "tls")
    results = tmp_path / "results"
    write_record(results, "SSDBNVME0001", 1)
    secure = AssetReceiver(tmp_path / "received", token=TOKEN, tls=ctx)
    plain = AssetReceiver(tmp_path / "plain", token=None)
    try:
        cfg = config(secure.url, tmp_path, ca_file=str(ca_file))
        assert cfg.warning is None
        console = Console()
        secure.redirect_to = plain.url
        p = poster(cfg, results, console)
        p.start()
        outcome = p.close(wait_s=30)
        assert plain.requests == []  # never followed down to plain HTTP
        assert outcome.queued and "redirected from https to http" in (outcome.why_queued or "")
        secure.redirect_to = None
        out = finish_post(start_post(cfg, results, console), threading.Event(), console,
                          wait_s=30)
        assert out.posted and [s.status for s in secure.requests] == [307, 201]
        no_secret_anywhere(tmp_path, console)
    finally:
        secure.close()
        plain.close()


def test_basic_auth_and_a_plain_http_warning(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_record(results, "SSDBNVME0001", 1)
    open_receiver = AssetReceiver(tmp_path / "received", token=None)
    try:
        cfg = parse_post({"url": open_receiver.url, "username": "bench",
                          "password": PASSWORD}, tmp_path)
        console = Console()
        out = finish_post(start_post(cfg, results, console), threading.Event(), console,
                          wait_s=30)
        assert out.posted
        assert open_receiver.requests[0].headers["Authorization"].startswith("Basic ")
        assert "plain HTTP" in console[0]
        no_secret_anywhere(tmp_path, console)
    finally:
        open_receiver.close()


def test_a_cancel_ends_the_last_tries(tmp_path: Path, receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    write_record(results, "SSDBNVME0001", 1)
    receiver.fail_first = 1000
    console = Console()
    p = poster(config(receiver.url, tmp_path), results, console)
    p.start()
    cancel = threading.Event()
    cancel.set()  # the operator pressed cancel: the close does not wait its 600 s
    outcome = p.close(cancel, wait_s=600)
    assert outcome.queued


def test_a_file_that_is_no_record_is_named_not_posted(tmp_path: Path,
                                                     receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    good = write_record(results, "SSDBNVME0001", 1)
    broken = results / "20261123T145833Z_X_sda" / "erase" / "erase-record.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"record_id": ')
    console = Console()
    out = finish_post(start_post(config(receiver.url, tmp_path), results, console),
                      threading.Event(), console, wait_s=30)
    assert out.posted == [good.relative_to(results).as_posix()]
    rel = broken.relative_to(results).as_posix()
    assert sum(rel in line and "cannot be read as JSON" in line for line in console) == 2
    assert console[-2] == f"posted 1 of 1 records to {receiver.url}"


def test_a_record_written_later_is_found_without_being_asked(
        tmp_path: Path, receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    results.mkdir()
    console = Console()
    p = poster(config(receiver.url, tmp_path), results, console, poll_s=0.05)
    p.start()
    write_record(results, "SSDBNVME0001", 1)  # no request(): the poster looks by itself
    assert receiver.arrived.wait(30)
    assert p.close(wait_s=30).posted


def test_a_303_is_not_followed_and_nothing_given_up(tmp_path: Path,
                                                    receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    write_record(results, "SSDBNVME0001", 1)
    elsewhere = AssetReceiver(tmp_path / "elsewhere", token=TOKEN)
    try:
        receiver.redirect_to = elsewhere.url
        receiver.redirect_status = 303
        console = Console()
        p = poster(config(receiver.url, tmp_path), results, console)
        out = p.send()
        assert elsewhere.requests == [] and not out.refused and out.queued
        assert "303" in console[-1] and "check [post] url" in console[-1]
        assert not (results / JOURNAL).exists()
    finally:
        elsewhere.close()


def test_a_wrong_path_gives_up_nothing(tmp_path: Path, receiver: AssetReceiver) -> None:
    results = tmp_path / "results"
    write_record(results, "SSDBNVME0001", 1)
    write_record(results, "SSDBNVME0002", 2)
    console = Console()
    p = poster(config(receiver.url + "/typo", tmp_path), results, console)
    out = p.send()
    assert [s.status for s in receiver.requests] == [404]  # the second is not tried
    assert len(out.queued) == 2 and not out.refused and "404" in (out.why_queued or "")
