"""The store's keys by the operator's fields (#46, ``[fields] keys``, docs/lab.md "Keys by
field"): with ``keys = ["lot"]`` each run gets ``<prefix>/_keys/lot=<value>/<bench>/<serial>/
<run id>.json`` naming its folder; a run without a lot is under ``lot=_none``; a value typed
or scanned by an operator is untrusted (no ``/``, ``..``, control or invisible character,
never longer than a path part, two values never one folder); the fleet build neither takes
``_keys`` for a bench nor lists it. Before: ``keys`` was parsed and did nothing. Against the
in-memory S3 of test_fleet_sent.py; the real s3proxy and nginx:
tests/integration/test_store_keys.py."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from ssdbench.kiosk.config import ConfigError, parse_config
from ssdbench.lab import fleetindex
from ssdbench.lab.storekeys import KEYS_DIR, NONE, pointers, run_fields, segment
from ssdbench.lab.uploader import JOURNAL, StoreUploader
from tests.schema_check import check_data, check_tree
from tests.unit.lab.test_fleet_sent import NOW, RESULTS, MemoryS3, build, rows, s3_cfg

NVME = "20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001"
SATA = "20261125T062239Z_ssdbench_demo_consumer_SSD_DEMOSATA0001"
PART = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")  # what follows "lot="

HOSTILE = {
    "dot-dot": "../x",
    "slash": "a/b",
    "control": "L\x1b[2J\x07\r\n42",
    "long": "L" * 300,
    "rtl": "\u202eL42",
    "dots": "..",
    "nul": "L\x0042",
    "backslash": "..\\..\\x",
}


def results(tmp_path: Path, **params: object) -> Path:
    """A copy of the lab results with ``params`` set in every run.json."""
    root = tmp_path / "ram"
    shutil.copytree(RESULTS, root)
    for run in root.glob("*/*/run.json"):
        doc = json.loads(run.read_text())
        doc["params"].update(params)
        run.write_text(json.dumps(doc))
    return root


def uploader(store: MemoryS3, root: Path, keys: tuple[str, ...] = ("lot",)
             ) -> StoreUploader:
    cfg = dataclasses.replace(s3_cfg(), keys=keys)
    return StoreUploader(store, cfg, root, "bench-07", lambda _line: None)


def last_error(up: StoreUploader) -> str | None:
    return up.last_error  # read again after a pass (mypy keeps the narrowing of before)


def keyed(store: MemoryS3) -> dict[str, dict[str, object]]:
    return {k: json.loads(v) for k, v in sorted(store.objects.items())
            if k.startswith(f"lab1/{KEYS_DIR}/")}


# ---- one value, one path part ----

def test_a_clean_value_is_its_own_segment() -> None:
    assert segment("lot", "L42") == "lot=L42"
    assert segment("lot", "  L42 ") == "lot=L42"  # the spaces intake strips too
    assert segment("pallet", "P-3.1_a") == "pallet=P-3.1_a"


@pytest.mark.parametrize("value", [None, "", "   ", 42, ["L42"], {"v": 1}])
def test_no_value_is_the_none_segment(value: object) -> None:
    assert segment("lot", value) == f"lot={NONE}"


def test_a_value_spelled_like_none_is_not_a_run_without_one() -> None:
    assert segment("lot", "_none") != segment("lot", "")
    assert segment("lot", "_none").startswith("lot=_none-h")
    assert len({segment("lot", v) for v in ("_none", "", ".none", "_none-h0123456789ab")}) == 4


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_value_is_one_safe_path_part_and_stays_distinct(name: str) -> None:
    value = HOSTILE[name]
    seg = segment("lot", value)
    field, _, part = seg.partition("=")
    assert field == "lot" and PART.fullmatch(part), seg
    assert part not in (".", "..") and "/" not in seg and "\\" not in seg
    # a clean value it could be mistaken for is another folder
    lookalike = re.sub(r"[^A-Za-z0-9._-]", "_", value.strip())[:64]
    assert seg != segment("lot", lookalike) or lookalike == value.strip()
    assert seg != segment("lot", "") and seg != segment("lot", value + "x")


def test_two_long_values_that_differ_at_the_end_are_two_folders() -> None:
    a, b = "L" * 299 + "a", "L" * 299 + "b"
    assert segment("lot", a) != segment("lot", b)
    assert len(segment("lot", a)) <= len("lot=") + 64


def test_run_fields_reads_the_params_and_the_labs_own() -> None:
    doc = {"params": {"lot": "L42", "asset_tag": "", "customer": 7,
                      "extra_fields": {"pallet": "P-3"}}}
    assert run_fields(doc, ("lot", "asset_tag", "customer", "pallet", "bay")) == {
        "lot": "L42", "asset_tag": "", "customer": None, "pallet": "P-3", "bay": None}
    assert run_fields([], ("lot",)) == {"lot": None}
    assert run_fields({"params": {"extra_fields": ["x"]}}, ("pallet",)) == {"pallet": None}


def test_the_object_names_the_run_folder_and_escapes_the_raw_value() -> None:
    got = pointers(("lab1", "bench-07", "SN1", "20261125T062239Z"),
                   {"params": {"lot": "\u202eL42\x1b"}}, ("lot",))
    [(key, body)] = got.items()
    assert key.startswith("lab1/_keys/lot=") and key.endswith("/bench-07/SN1/20261125T062239Z.json")
    assert body.isascii()  # the RTL override and the escape are \u escapes, never raw
    doc = json.loads(body)
    assert doc == {"schema": 1, "field": "lot", "value": "\u202eL42\x1b",
                   "run": "lab1/bench-07/SN1/20261125T062239Z/"}


# ---- the uploader ----

def test_a_run_with_a_lot_is_found_under_its_lot(tmp_path: Path) -> None:
    store = MemoryS3()
    root = results(tmp_path, lot="L42", extra_fields={"pallet": "P-3"})
    up = uploader(store, root, ("lot", "pallet"))
    assert up.sync() > 0 and up.last_error is None
    got = keyed(store)
    assert sorted(got) == [
        "lab1/_keys/lot=L42/bench-07/DEMONVME0001/20261125T062239Z.json",
        "lab1/_keys/lot=L42/bench-07/DEMOSATA0001/20261125T062239Z.json",
        "lab1/_keys/pallet=P-3/bench-07/DEMONVME0001/20261125T062239Z.json",
        "lab1/_keys/pallet=P-3/bench-07/DEMOSATA0001/20261125T062239Z.json"]
    for doc in got.values():  # each names a run folder that is in the store
        assert any(k.startswith(str(doc["run"])) and k.endswith("/run.json")
                   for k in store.objects)
    # the run's own keys did not move, and the fleet's sent file names no _keys object
    assert "lab1/bench-07/DEMONVME0001/20261125T062239Z/trim/run.json" in store.objects
    assert not [v for k, v in store.objects.items() if "/_fleet/sent/" in k
                and b"_keys" in v]
    assert json.loads((root / JOURNAL).read_text())["keys_written"] == sorted(got)
    # a reboot (a fresh uploader from the journal) puts none of them again
    for k in got:
        del store.objects[k]
    assert uploader(store, root, ("lot", "pallet")).sync() == 0
    assert not keyed(store)


def test_a_run_without_its_field_is_under_none_never_dropped(tmp_path: Path) -> None:
    store = MemoryS3()
    root = results(tmp_path)  # the lab's results name no lot
    (root / SATA / "consistency-default" / "run.json").write_text("{not json")
    assert uploader(store, root).sync() > 0
    assert sorted(keyed(store)) == [
        "lab1/_keys/lot=_none/bench-07/DEMONVME0001/20261125T062239Z.json",
        "lab1/_keys/lot=_none/bench-07/DEMOSATA0001/20261125T062239Z.json"]
    assert {d["value"] for d in keyed(store).values()} == {None}
    for key in keyed(store):
        check_data(json.loads(store.objects[key]), "store-key.json.schema.json", key)


def test_no_keys_no_objects(tmp_path: Path) -> None:
    store = MemoryS3()
    assert uploader(store, results(tmp_path, lot="L42"), ()).sync() > 0
    assert not keyed(store)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_lot_lands_under_keys_and_nowhere_else(tmp_path: Path, name: str) -> None:
    store = MemoryS3()
    root = results(tmp_path, lot=HOSTILE[name])
    assert uploader(store, root).sync() > 0
    got = keyed(store)
    assert len(got) == 2
    for key, doc in got.items():
        parts = key.split("/")
        assert parts[:2] == ["lab1", KEYS_DIR] and len(parts) == 6, key
        assert parts[2] == segment("lot", HOSTILE[name]) and parts[3] == "bench-07"
        assert parts[5] == "20261125T062239Z.json"
        assert doc["value"] == HOSTILE[name]  # the raw value, JSON-escaped
        assert doc["run"] == f"lab1/bench-07/{parts[4]}/20261125T062239Z/"
        held = tmp_path / "copy" / key  # as a copy of the store has it
        held.parent.mkdir(parents=True, exist_ok=True)
        held.write_bytes(store.objects[key])
    # each object found through schemas/index.json and held to its schema
    assert check_tree(tmp_path / "copy") == {"store-key.json.schema.json": 2}
    assert all(k.startswith(("lab1/bench-07/", "lab1/_keys/", "lab1/_fleet/sent/bench-07/"))
               for k in store.objects)


def test_a_failed_put_stays_pending_and_goes_at_the_next_pass(tmp_path: Path) -> None:
    store = MemoryS3()
    store.fail_put = f"lab1/{KEYS_DIR}/"
    root = results(tmp_path, lot="L42")
    up = uploader(store, root)
    up.sync()
    assert up.last_error is not None and "503" in up.last_error
    assert len(up.keys_pending) == 2 and up.unsent() == 2 and not keyed(store)
    store.fail_put = None
    assert up.sync() == 0 and last_error(up) is None
    assert len(keyed(store)) == 2 and up.unsent() == 0
    # a reboot before they went: found again in the run.json files
    store2 = MemoryS3()
    store2.fail_put = f"lab1/{KEYS_DIR}/"
    root2 = results(tmp_path / "b", lot="L42")
    uploader(store2, root2).sync()
    store2.fail_put = None
    assert uploader(store2, root2).sync() == 0 and len(keyed(store2)) == 2


# ---- the fleet build ----

def test_the_fleet_build_lists_every_run_with_its_lot_and_no_keys_bench(
        tmp_path: Path) -> None:
    store = MemoryS3()
    up = uploader(store, results(tmp_path, lot="L42"))
    up.sync()
    up.send_status()
    assert keyed(store)
    for name, kw in (("sent", {}), ("again", {}), ("full", {"use_index": False})):
        out = tmp_path / ("o" if name != "full" else "full")
        result = build(store, out, **kw)
        assert result.runs == 2, name
        got = rows(out)
        assert {r["bench"] for r in got} == {"bench-07"}
        assert {r["lot"] for r in got} == {"L42"}
    assert not [k for k in store.objects if k.startswith("lab1/_fleet/_keys")]
    # _keys is no bench: never listed whole (a million runs' objects), not on the page
    source = fleetindex.StoreSource(store, "lab1")
    fleetindex.build(source, tmp_path / "o", now=NOW)
    assert source.listed_whole == [] and KEYS_DIR not in result.fleet.benches


def test_a_folder_copy_with_keys_is_built_alike(tmp_path: Path) -> None:
    store = MemoryS3()
    uploader(store, results(tmp_path, lot="L42")).sync()
    copy = tmp_path / "copy"
    for key, data in store.objects.items():
        path = copy / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert (copy / "lab1" / KEYS_DIR).is_dir()
    for kw in ({}, {"use_index": False}):
        out = tmp_path / f"o{len(kw)}"
        out.mkdir()
        result = fleetindex.build(fleetindex.FolderSource(copy / "lab1"), out,
                                  **kw)  # type: ignore[arg-type]
        assert result.runs == 2
        assert {r["bench"] for r in rows(out)} == {"bench-07"}
        assert {r["lot"] for r in rows(out)} == {"L42"}
    # _keys is no bench: not walked
    assert [b for b, _found in fleetindex.FolderSource(copy / "lab1").benches()] == ["bench-07"]


# ---- the kiosk config ----

def _config(_tmp_path: Path, text: str) -> dict[str, object]:
    return tomllib.loads(text)


STORE = """
[store]
kind = "webdav"
endpoint = "http://127.0.0.1:9/dav"
"""


def test_the_kiosk_config_gives_the_store_its_keys(tmp_path: Path) -> None:
    cfg = parse_config(_config(tmp_path, 'plan = "diagnose"\n' + STORE
                               + '[fields]\nnames = ["pallet"]\nkeys = ["lot", "pallet"]\n'))
    assert cfg.store is not None and cfg.store.keys == ("lot", "pallet")
    cfg = parse_config(_config(tmp_path, 'plan = "diagnose"\n' + STORE))
    assert cfg.store is not None and cfg.store.keys == ()


def test_keys_without_a_store_is_an_error_not_nothing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_config(tmp_path, 'plan = "diagnose"\n[fields]\nkeys = ["lot"]\n'))
    assert "fields.keys" in str(err.value) and "[store]" in str(err.value)
