"""What a bench sent, for the fleet build (#46, docs/lab.md "S3 at a million runs"): the
uploader appends ``<rel>\\t<ETag>`` lines to ``<prefix>/_fleet/sent/<bench>/<day>.txt``; the
fleet build lists the benches and the sent files instead of every key, reads the sent files
whose ETag changed, and gives the same fleet.csv as a build that lists everything. A sent
file is untrusted: one that is not exactly what the uploader writes is refused whole with a
note and the bench listed instead. Against an in-memory store with S3's answers (ETags, a
listing with a delimiter, StartAfter); the real s3proxy: tests/integration/test_fleet_sent.py.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ssdbench.lab import fleet, fleetindex
from ssdbench.lab.config import StoreConfig, parse_store
from ssdbench.lab.sentfile import FLEET_FILES
from ssdbench.lab.store import StoreError
from ssdbench.lab.uploader import JOURNAL, StoreUploader
from tests.conftest import DATA

NOW = datetime(2026, 11, 25, 8, 0, 0, tzinfo=UTC)
RESULTS = DATA / "lab" / "results"


class MemoryS3:
    """An S3 bucket in memory: put answers the ETag (MD5, quoted) as S3 does; listings
    sorted, with StartAfter and a delimiter; ``gets`` counts the reads, ``listed`` the keys
    listed."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.fail_put: str | None = None  # a key prefix whose puts fail
        self.refuse_get: str | None = None  # ... whose reads are refused (a write-only key)
        self.gets = 0
        self.listed = 0

    def put(self, key: str, data: bytes, content_type: str = "") -> str:
        if self.fail_put is not None and key.startswith(self.fail_put):
            raise StoreError(f"sending {key}: the store answered 503")
        self.objects[key] = bytes(data)
        return f'"{hashlib.md5(data).hexdigest()}"'

    def get(self, key: str, limit: int | None = None) -> bytes:
        self.gets += 1
        if self.refuse_get is not None and key.startswith(self.refuse_get):
            raise StoreError(f"reading {key}: the store answered 403 AccessDenied",
                             refused=True)
        if key not in self.objects:
            raise StoreError(f"reading {key}: the store answered 404 NoSuchKey")
        return self.objects[key][:None if limit is None else limit + 1]

    def keys(self, prefix: str) -> list[str]:
        return sorted(self.tagged_keys(prefix))

    def tagged_keys(self, prefix: str, start_after: str | None = None) -> dict[str, str]:
        out = {k: f'"{hashlib.md5(v).hexdigest()}"' for k, v in sorted(self.objects.items())
               if k.startswith(prefix) and (start_after is None or k > start_after)}
        self.listed += len(out)
        return out

    def folders(self, prefix: str) -> list[str]:
        return sorted({prefix + k[len(prefix):].split("/", 1)[0] + "/"
                       for k in self.objects if k.startswith(prefix)
                       and "/" in k[len(prefix):]})


def s3_cfg(bench: str = "bench-07") -> StoreConfig:
    return parse_store({"kind": "s3", "endpoint": "http://127.0.0.1:9", "bucket": "lab",
                        "prefix": "lab1", "access_key": "k", "secret_key": "s",
                        "bench": bench}, Path("."))


def upload(store: MemoryS3, tmp_path: Path, bench: str = "bench-07") -> StoreUploader:
    root = tmp_path / bench / "ram"
    shutil.copytree(RESULTS, root)
    up = StoreUploader(store, s3_cfg(bench), root, bench, lambda _line: None)
    assert up.sync() > 0 and up.last_error is None
    return up


def build(store: MemoryS3, out: Path, **kw: object) -> fleetindex.Result:
    out.mkdir(parents=True, exist_ok=True)
    return fleetindex.build(fleetindex.StoreSource(store, "lab1"), out, now=NOW,
                            **kw)  # type: ignore[arg-type]


def rows(out: Path) -> list[dict[str, str]]:
    return sorted(csv.DictReader(io.StringIO((out / "fleet.csv").read_text())),
                  key=lambda r: (r["bench"], r["serial"], r["run"]))


def sent_lines(store: MemoryS3, bench: str = "bench-07") -> list[str]:
    return [line for k, v in sorted(store.objects.items())
            if k.startswith(f"lab1/_fleet/sent/{bench}/") for line in v.decode().splitlines()]


def test_the_uploader_writes_each_sent_key_with_its_etag() -> None:
    assert fleet.WANTED == FLEET_FILES  # the uploader writes what the build reads


def test_a_sent_file_has_every_wanted_key_with_the_etag_a_listing_gives(
        tmp_path: Path) -> None:
    store = MemoryS3()
    up = upload(store, tmp_path)
    lines = sent_lines(store)
    listed = store.tagged_keys("lab1/bench-07/")
    want = {k[len("lab1/bench-07/"):]: t for k, t in listed.items()
            if k.rpartition("/")[2] in fleet.WANTED}
    assert dict(line.split("\t") for line in lines) == want
    assert "DEMONVME0001/20261125T062239Z/trim/run.json" in want
    assert up.fleet_pending == [] and "fleet_pending" not in json.loads(
        (up.results_dir / JOURNAL).read_text())
    # status.json: once per upload day and process, appended to the same day's file
    assert up.send_status() and up.send_status()
    after = sent_lines(store)
    assert after[:len(lines)] == lines and [x.split("\t")[0] for x in after[len(lines):]] == [
        "status.json"]


def test_an_http_store_gets_no_sent_file(tmp_path: Path) -> None:
    store = MemoryS3()
    root = tmp_path / "ram"
    shutil.copytree(RESULTS, root)
    cfg = parse_store({"kind": "webdav", "endpoint": "http://127.0.0.1:9/dav",
                       "bench": "bench-07"}, Path("."))
    assert StoreUploader(store, cfg, root, "bench-07", print).sync() > 0
    assert not [k for k in store.objects if "/_fleet/" in k]


def test_a_failed_sent_file_put_keeps_the_lines_in_the_journal_for_the_next_pass(
        tmp_path: Path) -> None:
    store = MemoryS3()
    store.fail_put = "lab1/_fleet/"
    root = tmp_path / "ram"
    shutil.copytree(RESULTS, root)
    said: list[str] = []
    up = StoreUploader(store, s3_cfg(), root, "bench-07", said.append)
    up.sync()  # the results went, the sent file not: a store failure, not a crash
    assert up.last_error is not None and "503" in up.last_error and said
    pending = json.loads((root / JOURNAL).read_text())["fleet_pending"]
    assert pending and all(line.count("\t") == 1 for line in pending)
    assert not sent_lines(store)
    # a reboot: a new uploader from the journal; the store works again
    store.fail_put = None
    again = StoreUploader(store, s3_cfg(), root, "bench-07", said.append)
    assert again.fleet_pending == pending
    assert again.sync() == 0 and again.last_error is None
    assert sent_lines(store) == pending
    assert "fleet_pending" not in json.loads((root / JOURNAL).read_text())


def test_a_build_from_sent_files_equals_a_build_that_lists_everything(
        tmp_path: Path) -> None:
    store = MemoryS3()
    up = upload(store, tmp_path)
    up.send_status()
    first = build(store, tmp_path / "o")  # first seen: the bench listed whole, once
    assert first.runs == 2
    store.listed = 0
    again = build(store, tmp_path / "o")
    assert (again.runs, again.read) == (2, 0)
    assert store.listed < 5  # the sent files from the newest day on, not every key
    # a changed run sent again: its new line read, the run read again
    run = up.results_dir / "20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001" / "trim" / "run.json"
    doc = json.loads(run.read_text())
    doc["analysis"]["iops"]["steady"]["mean"] = 4242.0
    run.write_text(json.dumps(doc))
    assert up.sync() == 1
    inc = build(store, tmp_path / "o")
    assert inc.read == 1 and ",4242," in (tmp_path / "o" / "fleet.csv").read_text()
    full = build(store, tmp_path / "full", use_index=False)
    assert rows(tmp_path / "o") == rows(tmp_path / "full") and full.read == 2
    assert not inc.index_notes and not [n for n in full.index_notes if "sent" in n]


def test_a_bench_without_sent_files_is_listed_as_before(tmp_path: Path) -> None:
    store = MemoryS3()
    upload(store, tmp_path)
    # an older uploader's bench: the same files, no sent file
    for k, v in list(store.objects.items()):
        if k.startswith("lab1/bench-07/"):
            store.objects["lab1/bench-old/" + k[len("lab1/bench-07/"):]] = v
    build(store, tmp_path / "o")
    result = build(store, tmp_path / "o")
    assert {r["bench"] for r in rows(tmp_path / "o")} == {"bench-07", "bench-old"}
    assert result.runs == 4 and result.read == 0


HOSTILE = [
    ("../../etc/run.json\t\"x\"\n", "not <file below the bench>"),
    ("/abs/run.json\t\"x\"\n", "not <file below the bench>"),
    ("a/./run.json\t\"x\"\n", "not <file below the bench>"),
    ("a//run.json\t\"x\"\n", "not <file below the bench>"),
    ("a\\b/run.json\t\"x\"\n", "backslash"),
    ("a\x1b[31m/run.json\t\"x\"\n", "control"),
    ("a\u202e/run.json\t\"x\"\n", "control"),
    ("a/report.html\t\"x\"\n", "not <file below the bench>"),
    ("a/run.json\n", "not <file below the bench>"),
    ("a/run.json\t\"x\"\tmore\n", "not <file below the bench>"),
    ("a/run.json\t\"x\"", "not <file below the bench>"),  # no line end
    ("a/run.json\t\"x\"\r\n", "control"),
]


@pytest.mark.parametrize(("text", "why"), HOSTILE)
def test_a_hostile_sent_file_is_refused_whole(text: str, why: str) -> None:
    with pytest.raises(fleetindex.SentFileError, match=why):
        fleetindex.parse_sent(("good/run.json\t\"e\"\n" + text).encode())


def test_a_sent_file_not_utf8_or_too_large_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(fleetindex.SentFileError, match="UTF-8"):
        fleetindex.parse_sent(b"a/run.json\t\"\xff\"\n")
    monkeypatch.setattr(fleetindex, "SENT_LIMIT", 100)
    with pytest.raises(fleetindex.SentFileError, match="larger"):
        fleetindex.parse_sent(b"a/run.json\t\"e\"\n" * 10)


def test_a_later_line_wins() -> None:
    assert fleetindex.parse_sent(b"a/run.json\t\"1\"\nstatus.json\t\"s\"\na/run.json\t\"2\"\n"
                                 ) == {"a/run.json": '"2"', "status.json": '"s"'}


@pytest.mark.parametrize(("text", "why"), HOSTILE[:6])
def test_a_hostile_sent_file_in_the_store_is_refused_and_the_bench_listed(
        tmp_path: Path, text: str, why: str) -> None:
    store = MemoryS3()
    upload(store, tmp_path)
    build(store, tmp_path / "o")  # the bench's listing kept
    day = max(k for k in store.objects if k.startswith("lab1/_fleet/sent/bench-07/"))
    store.objects[day] += text.encode()
    result = build(store, tmp_path / "o")
    notes = [n for n in result.index_notes if "refused, listed instead" in n]
    assert len(notes) == 1 and notes[0].startswith("_fleet/sent/bench-07/2"), result.index_notes
    assert "\x1b" not in notes[0] and "\u202e" not in notes[0]
    assert any(n in result.fleet.skipped for n in notes)  # named on the page
    assert result.runs == 2 and {r["bench"] for r in rows(tmp_path / "o")} == {"bench-07"}
    assert (tmp_path / "o" / "fleet.csv").read_text().count("\n") == 3


def test_a_stray_key_in_a_sent_folder_refuses_it(tmp_path: Path) -> None:
    store = MemoryS3()
    upload(store, tmp_path)
    store.objects["lab1/_fleet/sent/bench-07/notes.md"] = b"hello"
    result = build(store, tmp_path / "o")
    assert any("notes.md: refused, listed instead" in n for n in result.index_notes)
    assert result.runs == 2


def test_a_damaged_kept_listing_is_made_again_by_listing_the_bench(tmp_path: Path) -> None:
    store = MemoryS3()
    upload(store, tmp_path)
    build(store, tmp_path / "o")
    kept = list((tmp_path / "o" / "_fleet/.cache/sent").glob("*.tsv"))
    assert len(kept) == 1
    kept[0].write_text("../x/run.json\t\"1\"\n")
    store.listed = 0
    result = build(store, tmp_path / "o")
    assert result.runs == 2 and result.read == 0 and store.listed > 5  # listed again
    assert any("the listing kept for bench-07 is refused" in n for n in result.index_notes)
    assert build(store, tmp_path / "o").index_notes == []  # made again


def test_a_bench_key_that_may_not_read_appends_to_what_its_journal_wrote(
        tmp_path: Path) -> None:
    """The documented bench policy may be s3:PutObject only: reading the day's sent file
    back is refused (S3 answers 403 for a missing key too). Not a failure: the bench
    appends to the file as it last wrote it (kept in its journal, across a reboot)."""
    store = MemoryS3()
    store.refuse_get = "lab1/_fleet/"
    said: list[str] = []
    root = tmp_path / "ram"
    shutil.copytree(RESULTS, root)
    up = StoreUploader(store, s3_cfg(), root, "bench-07", said.append,
                       status=lambda: {"state": "done"})
    assert up.sync() > 0 and up.last_error is None
    first = sent_lines(store)
    assert len(first) == 4 and not said  # a new day: nothing to read back, nothing said
    again = StoreUploader(store, s3_cfg(), root, "bench-07", said.append,
                          status=lambda: {"state": "done"})  # a reboot
    assert again.send_status() and again.last_error is None
    assert sent_lines(store)[:4] == first and sent_lines(store)[4].startswith("status.json\t")
    assert len(said) == 1 and "s3:GetObject" in said[0]
