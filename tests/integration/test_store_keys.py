"""#46, ``[fields] keys`` (docs/lab.md "Keys by field"), through real stores on 127.0.0.1 (the
s3proxy and nginx WebDAV of test_store.py): a kiosk config with ``keys = ["lot"]`` gives the
uploader its keys; each run sent lands at ``lab1/_keys/lot=<lot>/bench-07/<serial>/<run
id>.json`` naming its folder, the same keys in S3 and WebDAV; the fleet build (the sent
files, the listing, ``--no-index``) lists every run with its lot and takes ``_keys`` for no
bench (WebDAV: never PROPFINDs it); a hostile lot (``../x``, ``a/b``, control characters,
300 characters, a right-to-left override) is one safe folder under ``_keys`` and nothing
lands anywhere else."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ssdbench.kiosk.config import parse_config
from ssdbench.lab import fleetindex
from ssdbench.lab.config import StoreConfig
from ssdbench.lab.store import HttpStore, Store, open_store
from ssdbench.lab.storekeys import KEYS_DIR, segment
from ssdbench.lab.uploader import StoreUploader
from ssdbench.untrusted import visible
from tests.integration.test_store import (
    KEY,
    SECRET,
    Nginx,
    S3Proxy,
    dav,  # noqa: F401  (the module's nginx fixture)
    make_bucket,
    results_copy,
    s3,  # noqa: F401  (the module's s3proxy fixture)
)

RUN_ID = "20261125T062239Z"
SERIALS = ("DEMONVME0001", "DEMOSATA0001")
HOSTILE = {"dot-dot": "../x", "slash": "a/b", "control": "L\x1b[2J\x07\r42",
           "long": "L" * 300, "rtl": "\u202eL42"}


def kiosk_store(table: dict[str, Any], keys: list[str]) -> StoreConfig:
    """The [store] a kiosk config with ``[fields] keys`` gives (the path the kiosk takes)."""
    text = 'plan = "diagnose"\n[store]\n' + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    text += f"[fields]\nkeys = {json.dumps(keys)}\n"
    cfg = parse_config(tomllib.loads(text), base=Path("."))
    assert cfg.store is not None and cfg.store.keys == tuple(keys)
    return cfg.store


def s3_store(server: S3Proxy, bucket: str) -> StoreConfig:
    make_bucket(server, bucket)
    return kiosk_store({"kind": "s3", "endpoint": server.endpoint, "bucket": bucket,
                        "prefix": "lab1", "access_key": KEY, "secret_key": SECRET,
                        "bench": "bench-07"}, ["lot"])


def dav_store(server: Nginx) -> StoreConfig:
    return kiosk_store({"kind": "webdav", "endpoint": server.endpoint, "prefix": "lab1",
                        "username": "bench", "password": SECRET, "bench": "bench-07"},
                       ["lot"])


def send(cfg: StoreConfig, tmp_path: Path, lot: str) -> Store:
    """A copy of the lab's results, every run of lot ``lot``, sent to the store."""
    root = results_copy(tmp_path)
    for run in root.glob("*/*/run.json"):
        doc = json.loads(run.read_text())
        doc["params"]["lot"] = lot
        run.write_text(json.dumps(doc))
    store = open_store(cfg)
    up = StoreUploader(store, cfg, root, "bench-07", print)
    assert up.sync() > 0 and up.last_error is None
    up.send_status()
    assert up.last_error is None and up.unsent() == 0
    return store


def assert_keyed(store: Store, lot: str) -> None:
    want = {f"lab1/{KEYS_DIR}/{segment('lot', lot)}/bench-07/{s}/{RUN_ID}.json": s
            for s in SERIALS}
    assert sorted(k for k in store.keys("lab1/") if f"/{KEYS_DIR}/" in k) == sorted(want)
    for key, serial in want.items():
        doc = json.loads(store.get(key))
        assert doc == {"schema": 1, "field": "lot", "value": lot,
                       "run": f"lab1/bench-07/{serial}/{RUN_ID}/"}
        assert any(k.startswith(doc["run"]) and k.endswith("/run.json")
                   for k in store.keys(doc["run"]))
    # nothing outside the bench's folder, the fleet's and _keys
    assert all(k.startswith(("lab1/bench-07/", "lab1/_fleet/", f"lab1/{KEYS_DIR}/"))
               for k in store.keys(""))


def assert_fleet_lists(store: Store, tmp_path: Path, lot: str) -> None:
    for name, kw in (("o", {}), ("o", {}), ("full", {"use_index": False})):
        out = tmp_path / name
        out.mkdir(exist_ok=True)
        source = fleetindex.StoreSource(store, "lab1")
        result = fleetindex.build(source, out, **kw)  # type: ignore[arg-type]
        assert result.runs == 2 and KEYS_DIR not in result.fleet.benches, name
        assert KEYS_DIR not in source.listed_whole
        rows = {(r["bench"], r["serial"], r["lot"]) for r in result.fleet.rows} | {
            (r["bench"], r["serial"], r["lot"]) for r in _csv(out)}
        # the page and fleet.csv show a control or invisible character as ?
        assert rows == {("bench-07", s, visible(lot)) for s in SERIALS}, rows


def _csv(out: Path) -> list[dict[str, str]]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO((out / "fleet.csv").read_text())))


def test_s3_a_run_with_a_lot_lands_under_its_lot_and_the_fleet_lists_it(
        s3: S3Proxy, tmp_path: Path) -> None:  # noqa: F811
    store = send(s3_store(s3, "keys"), tmp_path, "L42")
    assert_keyed(store, "L42")
    assert f"lab1/{KEYS_DIR}/lot=L42/bench-07/DEMONVME0001/{RUN_ID}.json" in store.keys("lab1/")
    assert_fleet_lists(store, tmp_path, "L42")


def test_webdav_the_same_keys_and_the_fleet_never_lists_them(
        dav: Nginx, tmp_path: Path) -> None:  # noqa: F811
    store = send(dav_store(dav), tmp_path, "L42")
    on_disk = dav.workdir / "root" / "store" / "lab1" / KEYS_DIR / "lot=L42" / "bench-07"
    assert sorted(p.relative_to(on_disk).as_posix() for p in on_disk.rglob("*.json")) == [
        f"{s}/{RUN_ID}.json" for s in SERIALS]
    assert_keyed(store, "L42")
    # the fleet build lists the store folder by folder, but not _keys (nor _fleet)
    assert isinstance(store, HttpStore)
    asked: list[str] = []
    request = store._request

    def counted(method: str, path: str, *a: Any, **kw: Any) -> tuple[int, bytes]:
        asked.append(f"{method} {path}")
        return request(method, path, *a, **kw)

    store._request = counted  # type: ignore[method-assign]
    assert_fleet_lists(store, tmp_path, "L42")
    assert [a for a in asked if a.startswith("PROPFIND")]
    assert not [a for a in asked if a.startswith("PROPFIND") and f"/{KEYS_DIR}" in a]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_s3_a_hostile_lot_is_one_safe_folder(
        s3: S3Proxy, tmp_path: Path, name: str) -> None:  # noqa: F811
    store = send(s3_store(s3, f"hostile-{name}"), tmp_path, HOSTILE[name])
    assert_keyed(store, HOSTILE[name])
    assert_fleet_lists(store, tmp_path, HOSTILE[name])


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_webdav_a_hostile_lot_is_one_safe_folder(
        dav: Nginx, tmp_path: Path, name: str) -> None:  # noqa: F811
    store = send(dav_store(dav), tmp_path, HOSTILE[name])
    assert_keyed(store, HOSTILE[name])
    base = dav.workdir / "root" / "store"
    assert sorted(p.name for p in base.iterdir()) == ["lab1"]
    assert sorted(p.name for p in (base / "lab1").iterdir()) == [KEYS_DIR, "bench-07"]
    assert [p.name for p in (base / "lab1" / KEYS_DIR).iterdir()] == [
        segment("lot", HOSTILE[name])]
