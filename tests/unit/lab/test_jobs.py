"""The lab's job file (lab/jobs.py): its parser over malformed and hostile files, matching
and precedence, and its fetch from a real HTTP server on 127.0.0.1 and from a store."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.lab.config import StoreConfig
from ssdbench.lab.jobs import (
    MAX_JOBS_BYTES,
    AmbiguousJob,
    JobsError,
    fetch_jobs,
    parse_jobs,
)
from ssdbench.lab.store import StoreError
from ssdbench.plan.plans import PRESETS
from tests.unit.kiosk.test_config_url import Server

NAMES = ("asset_tag", "customer", "lot", "pallet")


def parse(text: str | bytes, plans: tuple[str, ...] = PRESETS) -> object:
    raw = text.encode() if isinstance(text, str) else text
    return parse_jobs(raw, "jobs.toml", plans=plans, field_names=NAMES)


GOOD = '''
[[job]]
id = "J-1001"
serial = "S3EVNX0K123"
plan = "erase"
params = {erase_fallback = "discard"}
fields = {asset_tag = "A-77", customer = "ACME", lot = "L-9", pallet = "P3"}

[[job]]
id = "J-lot"
lot = "L-9"
plan = "diagnose"

[[job]]
id = "J-model"
model = "Samsung SSD 8[56]0 .*"
plan = "grade"
'''


def test_a_good_file_gives_each_drive_its_job_serial_before_lot_before_model() -> None:
    jobs = parse(GOOD)
    job = jobs.find("S3EVNX0K123", "Samsung SSD 860 EVO", "L-9")  # type: ignore[attr-defined]
    assert job.id == "J-1001" and job.plan == "erase"
    assert dict(job.params) == {"erase_fallback": "discard"}
    assert dict(job.fields)["asset_tag"] == "A-77" and dict(job.fields)["pallet"] == "P3"
    assert jobs.find("OTHER", "Samsung SSD 860 EVO", "L-9").id == "J-lot"  # type: ignore[attr-defined]
    assert jobs.find("OTHER", "samsung ssd 850 PRO", "").id == "J-model"  # type: ignore[attr-defined]
    assert jobs.find("OTHER", "Crucial MX500", "") is None  # type: ignore[attr-defined]
    # the model expression matches the whole model, not a part of it
    assert jobs.find("OTHER", "xSamsung SSD 860 EVO", "") is None  # type: ignore[attr-defined]


def test_two_jobs_of_one_rank_for_a_drive_is_an_error_never_a_pick() -> None:
    jobs = parse('[[job]]\nid = "A"\nmodel = "Samsung.*"\nplan = "grade"\n'
                 '[[job]]\nid = "B"\nmodel = ".*860.*"\nplan = "erase"\n'
                 '[[job]]\nid = "C"\nserial = "S1"\nplan = "diagnose"\n')
    with pytest.raises(AmbiguousJob, match="A, B all match this drive by model"):
        jobs.find("S2", "Samsung SSD 860", "")  # type: ignore[attr-defined]
    assert jobs.find("S1", "Samsung SSD 860", "").id == "C"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "needle"), [
    ("[[job]\n", "not valid TOML"),
    ('jobs = 1\n', "`jobs`: unknown key"),
    ('job = "x"\n', "expected [[job]] tables"),
    ('[[job]]\nserial = "S"\nplan = "erase"\n', "job[0] `id`: every job needs an id"),
    ('[[job]]\nid = "A"\nplan = "erase"\n', "exactly one of serial, lot, model"),
    ('[[job]]\nid = "A"\nserial = "S"\nmodel = "M"\nplan = "erase"\n', "got serial, model"),
    ('[[job]]\nid = "A"\nserial = "S"\n', "every job names its plan"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "wipe-all"\n', "expected one of review"),
    ('[[job]]\nid = "A"\nmodel = "Samsung(["\nplan = "grade"\n', "not a regular expression"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\ncolour = "red"\n',
     "`colour`: unknown key"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\nparams = {psid = "X"}\n',
     "`params.psid`: not a job's"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\nparams = {record_key = "/k.pem"}\n',
     "`params.record_key`"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "quick"\nparams = {torture_seconds = "lots"}\n',
     "`params`:"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\nparams = {nope = 1}\n', "unknown key"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\nfields = {colour = "red"}\n',
     "`fields.colour`: unknown field"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\nfields = {asset_tag = 7}\n',
     "expected a string"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\n'
     '[[job]]\nid = "A"\nserial = "T"\nplan = "grade"\n', "is given twice"),
    ('[[job]]\nid = ""\nserial = "S"\nplan = "grade"\n', "non-empty"),
    ('[[job]]\nid = "A"\nserial = "S\\u001b[31m"\nplan = "grade"\n', "control"),
    ('[[job]]\nid = "A\\u202eevil"\nserial = "S"\nplan = "grade"\n', "control"),
    ('[[job]]\nid = "A"\nserial = "S"\nplan = "grade"\nfields = {lot = "L\\nX"}\n',
     "control"),
    (f'[[job]]\nid = "{"A" * 200}"\nserial = "S"\nplan = "grade"\n', "longer than 128"),
])
def test_a_bad_file_names_the_job_and_the_key_and_is_not_used(text: str, needle: str) -> None:
    with pytest.raises(JobsError, match=None) as caught:
        parse(text)
    assert needle in str(caught.value), str(caught.value)
    assert str(caught.value).startswith("jobs.toml: ")


def test_a_plan_the_config_does_not_allow_is_refused() -> None:
    with pytest.raises(JobsError, match=r"job\[0\] `plan`: expected one of diagnose, grade"):
        parse('[[job]]\nid = "A"\nserial = "S"\nplan = "erase"\n', plans=("diagnose", "grade"))


def test_hostile_bytes_are_errors_not_crashes() -> None:
    for raw in (b"\xff\xfe[[job]]", b"a = " + b"[" * 100_000 + b"]" * 100_000,
                b"[[job]]\n" * 20_000, b"x" * (MAX_JOBS_BYTES + 1)):
        with pytest.raises(JobsError):
            parse(raw)


def test_a_message_never_carries_markup_or_escapes_of_the_file() -> None:
    with pytest.raises(JobsError) as caught:
        parse('[[job]]\nid = "A"\nserial = "S"\nplan = "[bold red]x\\u001b[2J"\n')
    assert "\x1b" not in str(caught.value)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()


def test_fetched_from_a_url_whole_and_parsed(server: Server) -> None:
    server.files["/jobs.toml"] = (200, GOOD.encode())
    where, raw = fetch_jobs(url=server.url("/jobs.toml?token=SECRET"))
    assert "SECRET" not in where and where.endswith("/jobs.toml")
    assert raw == GOOD.encode()


def test_the_user_and_password_go_to_the_url_as_basic_auth(server: Server) -> None:
    server.files["/jobs.toml"] = (200, GOOD.encode())
    url = f"http://lab:pw-very-secret@127.0.0.1:{server.port}/jobs.toml"
    where, _raw = fetch_jobs(url=url)
    assert server.auth and server.auth[0].startswith("Basic ")
    assert "pw-very-secret" not in where


@pytest.mark.parametrize(("code", "body", "needle"), [
    (404, b"gone", "answered 404"),
    (500, b"oops", "answered 500"),
    pytest.param(200, b"x" * (MAX_JOBS_BYTES + 1), "larger than", id="too-big"),
])
def test_a_url_that_gives_no_job_file_is_a_clear_error(server: Server, code: int, body: bytes,
                                                       needle: str) -> None:
    server.files["/jobs.toml"] = (code, body)
    with pytest.raises(JobsError, match=needle):
        fetch_jobs(url=server.url("/jobs.toml"))


def test_a_server_that_never_answers_is_given_up_at_the_deadline() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
    try:
        with pytest.raises(JobsError, match="no whole answer"):
            fetch_jobs(url=f"http://127.0.0.1:{port}/jobs.toml", timeout_s=0.5)
    finally:
        for s in accepted:
            s.close()
        listener.close()


def test_nothing_listening_is_a_clear_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(JobsError, match=r"job file http://127\.0\.0\.1"):
        fetch_jobs(url=f"http://127.0.0.1:{port}/jobs.toml")


class FakeStore:
    def __init__(self, objects: dict[str, bytes], hang: threading.Event | None = None) -> None:
        self.objects = objects
        self.hang = hang
        self.asked: list[str] = []

    def get(self, key: str) -> bytes:
        self.asked.append(key)
        if self.hang is not None:
            self.hang.wait(30)
        if key not in self.objects:
            raise StoreError(f"reading {key}: the store answered 404")
        return self.objects[key]


def test_read_from_the_store_under_its_prefix(tmp_path: Path) -> None:
    cfg = StoreConfig(kind="http", endpoint="http://127.0.0.1:1/dav", prefix="lab3")
    store = FakeStore({"lab3/jobs.toml": GOOD.encode()})
    where, raw = fetch_jobs(store=cfg, key="jobs.toml", opener=lambda c: store)
    assert raw == GOOD.encode() and store.asked == ["lab3/jobs.toml"]
    assert "lab3/jobs.toml" in where
    with pytest.raises(JobsError, match="answered 404"):
        fetch_jobs(store=cfg, key="other.toml", opener=lambda c: store)


def test_a_store_that_does_not_answer_is_left_behind_at_the_deadline() -> None:
    cfg = StoreConfig(kind="s3", endpoint="http://127.0.0.1:1", bucket="b")
    hang = threading.Event()
    try:
        with pytest.raises(JobsError, match=r"no answer within 0\.2 s"):
            fetch_jobs(store=cfg, key="jobs.toml", timeout_s=0.2,
                       opener=lambda c: FakeStore({}, hang))
    finally:
        hang.set()


def test_read_from_a_real_http_store_with_its_own_credentials(server: Server) -> None:
    from ssdbench.lab.config import Secret

    server.files["/dav/lab3/jobs.toml"] = (200, GOOD.encode())
    cfg = StoreConfig(kind="http", endpoint=server.url("/dav"), prefix="lab3",
                      username="bench", password=Secret("store-pass-123"))
    where, raw = fetch_jobs(store=cfg, key="jobs.toml")
    assert raw == GOOD.encode()
    assert server.auth and server.auth[0].startswith("Basic ")
    assert "store-pass-123" not in where
    with pytest.raises(JobsError, match="answered 404"):
        fetch_jobs(store=cfg, key="missing.toml")
