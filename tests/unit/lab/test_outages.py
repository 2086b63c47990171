"""A store outage stays in status.json after it healed (#21 item 6: "the status said so"):
``store.outages``, ``last_failure`` and ``last_failure_at``, and the fleet page shows it."""

from __future__ import annotations

import json
from pathlib import Path

from ssdbench.lab import fleet
from ssdbench.lab.config import parse_store
from ssdbench.lab.store import StoreError
from ssdbench.lab.uploader import StoreUploader


class FlakyStore:
    """A store whose network can be cut: put raises while ``down``."""

    def __init__(self) -> None:
        self.down = False
        self.objects: dict[str, bytes] = {}

    def put(self, key: str, data: bytes, content_type: str = "") -> None:
        if self.down:
            raise StoreError(f"sending {key}: EndpointConnectionError: could not connect")
        self.objects[key] = data

    def get(self, key: str) -> bytes:
        return self.objects[key]

    def keys(self, prefix: str) -> list[str]:
        return [k for k in self.objects if k.startswith(prefix)]


def test_an_outage_is_counted_and_kept_in_status_after_it_healed(tmp_path: Path) -> None:
    root = tmp_path / "ram"
    root.mkdir()
    (root / "state.json").write_text("{}\n")
    cfg = parse_store({"kind": "http", "endpoint": "http://127.0.0.1:9/dav", "prefix": "lab1"},
                      tmp_path)
    store = FlakyStore()
    lines: list[str] = []
    up = StoreUploader(store, cfg, root, "bench-07", lines.append,
                       status=lambda: {"state": "running"})
    assert up.send_status()
    first = json.loads(store.objects["lab1/bench-07/status.json"])["store"]
    assert first == {"sent_files": 0, "last_error": None, "outages": 0,
                     "last_failure": None, "last_failure_at": None}
    store.down = True
    (root / "kiosk.txt").write_text("x\n")
    assert up.sync() == 0 and not up.send_status()
    up.sync()  # the same outage: counted once
    # and said once, though each try's reason names another key (#28 item 10: a line a try)
    assert [line for line in lines if "results kept in RAM" in line] == [
        f"store {cfg.describe()}: sending lab1/bench-07/_bench/kiosk.txt: "
        f"EndpointConnectionError: could not connect; results kept in RAM ({root}), retrying"]
    store.down = False
    assert up.sync() == 2
    assert lines[-1] == f"store {cfg.describe()} reachable again"
    assert up.send_status()
    after = json.loads(store.objects["lab1/bench-07/status.json"])["store"]
    assert after["last_error"] is None and after["outages"] == 1
    assert "EndpointConnectionError" in after["last_failure"]
    assert after["last_failure_at"].endswith("Z")
    # the fleet page's store column says the bench had an outage, healed
    page = fleet.fleet_html(fleet.build({
        "lab1/bench-07/status.json": lambda: store.objects["lab1/bench-07/status.json"]}))
    assert "1 outage, healed" in page


def test_a_refused_status_is_kept_beside_the_results(tmp_path: Path) -> None:
    """Wrong keys: the store never gets status.json, so the bench keeps it next to its
    results (RAM, and the stick through the mirror) with the store's error, and never sends
    that copy as a result file."""
    from ssdbench.lab.uploader import STATUS_COPY

    root = tmp_path / "ram"
    root.mkdir()
    (root / "state.json").write_text("{}\n")
    cfg = parse_store({"kind": "http", "endpoint": "http://127.0.0.1:9/dav", "prefix": "lab1",
                       "password": "s3cr3t-pass", "username": "bench"}, tmp_path)
    store = FlakyStore()
    store.down = True
    up = StoreUploader(store, cfg, root, "bench-07", lambda _line: None,
                       status=lambda: {"state": "running"})
    assert not up.send_status()
    kept = json.loads((root / STATUS_COPY).read_text())
    assert kept["state"] == "running" and "could not connect" in kept["store"]["last_error"]
    assert "s3cr3t-pass" not in (root / STATUS_COPY).read_text()
    store.down = False
    assert up.sync() == 1  # state.json only: not the status copy
    assert up.send_status()
    assert json.loads((root / STATUS_COPY).read_text())["store"]["last_error"] is None
    assert "lab1/bench-07/status.json" in store.objects
