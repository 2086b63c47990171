"""#42 item 5: a chain tied to its bench, and honest about its tail (record/chain.py,
`verify-record --chain`). Each signed record names its bench (the results folder's random
bench id and the bench's name); a record of another bench is named. Deleting the last
records together with record-chain.json, or rewinding it, is reported: on a stick alone as
"cannot be proven", against the store's chain head (``--head``) as records missing."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from ssdbench.record.chain import CHAIN_FILE, check_chain, link_seal_write
from ssdbench.record.sign import dump_record, public_key_fingerprint
from ssdbench.record.write import seal
from tests.unit.record.test_record import make_key, record


def write(root: Path, name: str, key: Path, bench: str = "bench-a") -> Path:
    path = root / name / "erase" / "erase-record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    link_seal_write(root, path, record(), lambda r: seal(r, str(key)), bench_name=bench)
    return path


def chained(tmp_path: Path, n: int = 4, bench: str = "bench-a",
            key: Path | None = None) -> tuple[Path, Path, list[Path]]:
    key = key or make_key(tmp_path)
    root = tmp_path / bench
    return root, key, [write(root, f"drive{i}", key, bench) for i in range(1, n + 1)]


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["verify-record", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_each_signed_record_names_its_bench(tmp_path: Path) -> None:
    root, _key, paths = chained(tmp_path)
    (tmp_path / "x").mkdir()
    state = json.loads((root / CHAIN_FILE).read_text())
    assert re.fullmatch(r"[0-9a-f]{32}", state["bench_id"]), state
    for path in paths:
        bench = json.loads(path.read_text())["bench"]
        assert bench == {"id": state["bench_id"], "name": "bench-a"}
    # another results folder is another bench, even with the same name
    other, _k, others = chained(tmp_path / "x", 1, key=_key)
    assert json.loads(others[0].read_text())["bench"]["id"] != state["bench_id"]
    assert other != root


def test_a_record_of_another_bench_dropped_in_is_named_and_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Records of another bench's chain, signed with the same lab key, passed: their own
    chain was whole."""
    root, key, _paths = chained(tmp_path)
    other, _k, theirs = chained(tmp_path, 2, bench="bench-b", key=key)
    for path in theirs:
        dest = root / ("b-" + path.parent.parent.name) / "erase" / "erase-record.json"
        dest.parent.mkdir(parents=True)
        shutil.copyfile(path, dest)
    report = check_chain(root, {public_key_fingerprint(key)})
    assert not report.ok
    foreign = [line for line in report.lines if "of another bench" in line]
    assert len(foreign) == 2, report.lines
    assert all("bench-b" in line for line in foreign), foreign
    assert any(line.startswith("b-drive1/erase/erase-record.json") for line in foreign)
    code, out, err = verify(capsys, "--chain", str(root), "--key", str(key))
    assert code == ExitCode.FAILURE and "of another bench" in out and "FAILED" in err
    # the other bench's own folder is fine
    assert verify(capsys, "--chain", str(other), "--key", str(key))[0] == ExitCode.OK


def test_deleting_the_last_records_and_the_chain_file_is_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, key, paths = chained(tmp_path)
    paths[3].unlink()
    paths[2].unlink()
    (root / CHAIN_FILE).unlink()
    code, out, err = verify(capsys, "--chain", str(root), "--key", str(key))
    assert code == ExitCode.FAILURE, (out, err)
    assert f"no {CHAIN_FILE}" in out and "cannot be proven" in out


def test_a_rewound_chain_file_on_the_stick_alone_cannot_prove_the_tail(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The last record deleted and record-chain.json rewound to the one before: nothing on
    the stick shows it. The verifier says so, and the store's chain head finds it."""
    root, key, paths = chained(tmp_path)
    head = tmp_path / "store-head.json"  # what the uploader sent to <bench>/_bench/
    shutil.copyfile(root / CHAIN_FILE, head)
    state = json.loads((root / CHAIN_FILE).read_text())
    paths[3].unlink()
    state.update(seq=3, last_sha256=hashlib.sha256(paths[2].read_bytes()).hexdigest(),
                 last_record=str(paths[2].relative_to(root)))
    (root / CHAIN_FILE).write_text(json.dumps(state, indent=2) + "\n")
    code, out, _err = verify(capsys, "--chain", str(root), "--key", str(key))
    assert code == ExitCode.OK
    assert ("records after record 3 of chain" in out and
            "cannot be proven present without the lab store's chain head" in out), out
    code, out, err = verify(capsys, "--chain", str(root), "--key", str(key), "--head", str(head))
    assert code == ExitCode.FAILURE, (out, err)
    assert "record(s) 4 missing from its end" in out and "chain head" in out, out
    # the whole chain against its head: proven
    fresh, _k, _p = chained(tmp_path / "fresh", key=key)
    shutil.copyfile(fresh / CHAIN_FILE, head)
    code, out, _err = verify(capsys, "--chain", str(fresh), "--key", str(key), "--head",
                             str(head))
    assert code == ExitCode.OK and "cannot be proven" not in out, out
    assert "every record up to the store's chain head" in out, out


def test_a_chain_file_rewound_while_the_records_stay_is_named(tmp_path: Path) -> None:
    root, key, _paths = chained(tmp_path)
    state = json.loads((root / CHAIN_FILE).read_text())
    state["seq"] = 3  # the number rewound, its digest left: the file contradicts itself
    (root / CHAIN_FILE).write_text(json.dumps(state))
    report = check_chain(root, {public_key_fingerprint(key)})
    assert not report.ok
    assert any("record 4" in line and "after the last one" in line
               for line in report.lines), report.lines
    state.update(seq=4, last_sha256="0" * 64)
    (root / CHAIN_FILE).write_text(json.dumps(state))
    report = check_chain(root, {public_key_fingerprint(key)})
    assert any("not the record 4 here" in line for line in report.lines), report.lines


def test_the_store_layout_finds_its_chain_head_under_bench(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of the store's <bench>/ (record-chain.json under _bench/, as the uploader
    sends it): a deleted record at the end is found there too."""
    root, key, paths = chained(tmp_path)
    (root / "_bench").mkdir()
    (root / CHAIN_FILE).rename(root / "_bench" / CHAIN_FILE)
    code, out, _err = verify(capsys, "--chain", str(root), "--key", str(key))
    assert code == ExitCode.OK, out
    paths[3].unlink()
    code, out, _err = verify(capsys, "--chain", str(root), "--key", str(key))
    assert code == ExitCode.FAILURE and "record(s) 4 missing from its end" in out, out


def test_a_head_of_another_bench_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, key, _paths = chained(tmp_path)
    other, _k, _p = chained(tmp_path, 2, bench="bench-b", key=key)
    code, out, _err = verify(capsys, "--chain", str(root), "--key", str(key), "--head",
                             str(other / CHAIN_FILE))
    assert code == ExitCode.FAILURE and "another bench" in out, out
    (tmp_path / "junk.json").write_text("{not json")
    code, _out, err = verify(capsys, "--chain", str(root), "--key", str(key), "--head",
                             str(tmp_path / "junk.json"))
    assert code == ExitCode.USAGE and "not a record chain" in err, err


def test_records_made_before_bench_identity_still_verify_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Records written before #42 have a chain but no bench, and so has their chain file."""
    key = make_key(tmp_path)
    root = tmp_path / "old"
    prev = None
    for seq in (1, 2):
        path = root / f"d{seq}" / "erase" / "erase-record.json"
        path.parent.mkdir(parents=True)
        link = {"id": "c" * 32, "seq": seq, "previous_sha256": prev,
                "previous_record": None if prev is None else "d1/erase/erase-record.json"}
        data = dump_record(seal({**record(), "chain": link}, str(key)))
        path.write_bytes(data)
        prev = hashlib.sha256(data).hexdigest()
    (root / CHAIN_FILE).write_text(json.dumps({
        "format": "ssdbench-record-chain", "id": "c" * 32, "seq": 2, "last_sha256": prev,
        "last_record": "d2/erase/erase-record.json"}))
    new = write(root, "d3", key)
    assert json.loads(new.read_text())["chain"]["seq"] == 3
    code, out, _err = verify(capsys, "--chain", str(root), "--key", str(key))
    assert code == ExitCode.OK, out
    assert "2 record(s) name no bench" in out, out


def test_the_stage_names_the_bench_as_the_uploader_does() -> None:
    """ssdbench.bench= on the kernel command line, else DHCP's host name, else the MAC,
    else the host name; in the store-key form (escapes and slashes never pass)."""
    from ssdbench.record.stage import bench_name
    from ssdbench.system import Host
    from tests.unit.erase.replay import FakeFS, ScriptedRunner

    def named(files: dict[str, str]) -> str:
        return bench_name(Host(ScriptedRunner(), FakeFS(files)), hostname="fallback")

    assert named({"/proc/cmdline": "quiet ssdbench.bench=room2 ssdbench.bench=room3\n",
                  "/run/ssdbench/dhcp-hostname": "dhcp1\n"}) == "room3"
    assert named({"/proc/cmdline": "quiet\n", "/run/ssdbench/dhcp-hostname": "dhcp1\n"}) == "dhcp1"
    assert named({"/run/ssdbench/mac": "52:54:00:12:34:56\n"}) == "52-54-00-12-34-56"
    assert named({}) == "fallback"
    assert named({"/run/ssdbench/dhcp-hostname": "../\x1b[2Jx\n"}) == "_.___2Jx"


def test_the_head_the_real_uploader_sends_proves_the_sticks_tail(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The uploader sends record-chain.json (the chain head) with every record, to
    <bench>/_bench/. The stick's last record deleted and its record-chain.json rewound: the
    stick alone cannot show it, the store's head and the store's copy of the records do."""
    from ssdbench.lab.config import parse_store
    from ssdbench.lab.uploader import StoreUploader
    from tests.unit.lab.test_fleet import FolderStore

    key = make_key(tmp_path)
    stick = tmp_path / "stick"
    bucket = tmp_path / "bucket"
    cfg = parse_store({"kind": "http", "endpoint": "http://127.0.0.1:1", "prefix": "lab1"},
                      Path("."))
    up = StoreUploader(FolderStore(bucket), cfg, stick, "bench-a", print)
    paths = []
    for i in range(3):
        drive_dir = stick / f"20261125T07{i}000Z_QEMU_SER{i}"
        drive_dir.mkdir(parents=True)
        (drive_dir / "drive.json").write_text(json.dumps({"drive": {"serial": f"SER{i}"}}))
        paths.append(write(stick, drive_dir.name, key))
        assert up.sync() > 0  # a pass at the stage's end
    store_copy = bucket / "lab1" / "bench-a"
    head = store_copy / "_bench" / CHAIN_FILE
    assert json.loads(head.read_text())["seq"] == 3
    # the tail deleted on the stick, its record-chain.json rewound to record 2
    state = json.loads((stick / CHAIN_FILE).read_text())
    paths[2].unlink()
    state.update(seq=2, last_sha256=hashlib.sha256(paths[1].read_bytes()).hexdigest(),
                 last_record=str(paths[1].relative_to(stick)))
    (stick / CHAIN_FILE).write_text(json.dumps(state, indent=2) + "\n")
    code, out, _err = verify(capsys, "--chain", str(stick), "--key", str(key))
    assert code == ExitCode.OK and "cannot be proven present" in out, out
    code, out, _err = verify(capsys, "--chain", str(stick), "--key", str(key), "--head", str(head))
    assert code == ExitCode.FAILURE and "record(s) 3 missing from its end" in out, out
    # the store's own copy: every record up to its head is there
    code, out, _err = verify(capsys, "--chain", str(store_copy), "--key", str(key))
    assert code == ExitCode.OK and "every record up to the store's chain head" in out, out
