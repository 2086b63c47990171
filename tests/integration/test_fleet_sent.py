"""#46, docs/lab.md "S3 at a million runs": against a real s3proxy on 127.0.0.1 (the
fixtures of test_store.py), the uploader writes what it sent to
``<prefix>/_fleet/sent/<bench>/<day>.txt`` with the ETags a listing gives; the fleet build
takes each bench's listing from those files (listing only the benches and the sent files)
and gives the fleet.csv of a build that lists everything; a bench without sent files is
listed; a hostile sent file is refused with a note and its bench listed; a sent file that
could not be written stays in the journal and is written at the next pass."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from ssdbench.lab import fleet, fleetindex
from ssdbench.lab.store import open_store
from ssdbench.lab.uploader import JOURNAL, StoreUploader
from tests.integration.test_store import (
    S3Proxy,
    free_port,
    make_bucket,
    results_copy,
    s3,  # noqa: F401  (the module's s3proxy fixture)
    s3_config,
)

SENT = "lab1/_fleet/sent/bench-07/"


def today() -> str:
    return time.strftime("%Y%m%d", time.gmtime())


def build(store: object, out: Path, **kw: object) -> fleetindex.Result:
    out.mkdir(parents=True, exist_ok=True)
    return fleetindex.build(fleetindex.StoreSource(store, "lab1"), out, **kw)  # type: ignore[arg-type]


def counting(store: object) -> object:
    """The store with every key a listing returns counted (``listed``)."""
    class Counting:
        listed = 0

        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

        def tagged_keys(self, prefix: str, start_after: str | None = None
                        ) -> dict[str, str]:
            found: dict[str, str] = store.tagged_keys(prefix, start_after)  # type: ignore[attr-defined]
            Counting.listed += len(found)
            return found

    return Counting()


def test_sent_files_give_the_fleet_of_a_full_listing(
        s3: S3Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    make_bucket(s3, "fleet-sent")
    cfg = s3_config(s3, "fleet-sent")
    store = open_store(cfg)
    root = results_copy(tmp_path)
    up = StoreUploader(store, cfg, root, "bench-07", print,
                       status=lambda: {"bench": "bench-07", "state": "done"})
    assert up.sync() > 0 and up.send_status() and up.last_error is None
    # the day's sent file: every key the build reads, with the ETag a listing gives
    assert list(store.keys(SENT)) == [f"{SENT}{today()}.txt"]
    lines = store.get(f"{SENT}{today()}.txt").decode().splitlines()
    sent = dict(line.split("\t") for line in lines)
    listed = {k[len("lab1/bench-07/"):]: t for k, t in
              store.tagged_keys("lab1/bench-07/").items()  # type: ignore[attr-defined]
              if k.rpartition("/")[2] in fleet.WANTED}
    assert sent == listed and len(sent) == len(lines) == 5  # 2 drives, 2 runs, status
    assert sum(k.endswith("/run.json") for k in sent) == 2
    assert {k.split("/")[0] for k in sent if "/" in k} == {"DEMONVME0001", "DEMOSATA0001"}
    # a bench of an older uploader: its files, no sent file
    for key in store.keys("lab1/bench-07/"):
        if key.rpartition("/")[2] in fleet.WANTED:
            store.put("lab1/bench-old/" + key[len("lab1/bench-07/"):], store.get(key))
    out = tmp_path / "o"
    first = build(store, out)  # bench-07 seen for the first time: listed whole, once
    assert first.runs == 4 and not first.index_notes
    counted = counting(store)
    again = build(counted, out)
    assert (again.runs, again.read) == (4, 0)
    # bench-07 from its sent file (one listed), bench-old listed whole
    assert counted.listed == 1 + len(listed)  # type: ignore[attr-defined]
    # a run sent again with other content: read again through the sent file's new line
    run = root / "20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001" / "trim" / "run.json"
    doc = json.loads(run.read_text())
    doc["analysis"]["iops"]["steady"]["mean"] = 4242.0
    run.write_text(json.dumps(doc))
    assert up.sync() == 1
    inc = build(store, out)
    assert inc.read == 1 and ",4242," in (out / "fleet.csv").read_text()
    full = build(store, tmp_path / "full", use_index=False)
    assert full.read == 4
    assert (tmp_path / "full" / "fleet.csv").read_text() == (out / "fleet.csv").read_text()
    assert "\nbench-old," in (out / "fleet.csv").read_text()

    # a hostile sent file (a ../ key, a control character): refused, the bench listed
    key = f"{SENT}{today()}.txt"
    good = store.get(key)
    for hostile in ("../../bench-old/X/20261125T000000Z/trim/run.json\t\"e\"\n",
                     "DEMONVME0001/\x1b[2J/run.json\t\"e\"\n"):
        store.put(key, good + hostile.encode(), "text/plain")
        bad = build(store, out)
        notes = [n for n in bad.index_notes if "refused, listed instead" in n]
        assert len(notes) == 1 and notes[0].startswith(f"_fleet/sent/bench-07/{today()}.txt")
        assert "\x1b" not in notes[0] and notes[0] in bad.fleet.skipped
        assert bad.runs == 4
        assert (out / "fleet.csv").read_text() == (tmp_path / "full" / "fleet.csv").read_text()
    # one over the size limit: no more than the limit and a byte read (a Range), refused
    store.put(key, good + b"status.json\t\"x\"\n", "text/plain")
    monkeypatch.setattr(fleetindex, "SENT_LIMIT", 100)
    big = build(store, out)
    assert [n for n in big.index_notes if "larger than" in n and "listed instead" in n], \
        big.index_notes
    assert big.runs == 4


def test_a_sent_file_not_written_stays_pending_and_goes_at_the_next_pass(
        tmp_path: Path) -> None:
    """The store stopped after the results went and before the sent file did: the lines
    wait in the journal (the bench may reboot), and go when the store is back."""
    server = S3Proxy(tmp_path / "srv", free_port())
    server.start()
    try:
        make_bucket(server, "fleet-pending")
        cfg = s3_config(server, "fleet-pending")
        store = open_store(cfg)
        root = results_copy(tmp_path)
        up = StoreUploader(store, cfg, root, "bench-07", print,
                           backoff_s=0.05, backoff_max_s=0.2)
        real_put = up.store.put

        def put_then_stop(key: str, data: bytes, content_type: str = "") -> str | None:
            if "/_fleet/sent/" in key:
                server.stop()  # a real outage, at the sent file's put
            return real_put(key, data, content_type)

        up.store = type("Once", (), {"put": staticmethod(put_then_stop),
                                     "get": staticmethod(store.get)})()
        up.sync()  # the results went, then the store stopped: a failure, not a crash
        assert up.last_error is not None
        pending = json.loads((root / JOURNAL).read_text())["fleet_pending"]
        assert len(pending) == 4 and all(p.endswith('"') for p in pending)
        # a reboot, and the store back (the same folder): nothing sent again but the lines
        server.start()
        again = StoreUploader(open_store(cfg), cfg, root, "bench-07", print)
        assert again.fleet_pending == pending
        assert again.sync() == 0 and again.last_error is None
        text = again.store.get(f"{SENT}{today()}.txt").decode()
        assert text.splitlines() == pending
        assert "fleet_pending" not in json.loads((root / JOURNAL).read_text())
        tags = again.store.tagged_keys("lab1/bench-07/")  # type: ignore[attr-defined]
        assert all(tags["lab1/bench-07/" + p.split("\t")[0]] == p.split("\t")[1]
                   for p in pending)
    finally:
        server.stop()
        shutil.rmtree(tmp_path / "srv", ignore_errors=True)
