"""The hash chain of a results folder's erase records (#28 "Beyond the anchors",
record/chain.py): every record holds the SHA-256 of the one before it; `verify-record
--chain DIR` names a record missing, twice, changed or out of order."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from ssdbench.record.chain import CHAIN_FILE, check_chain, link_seal_write
from ssdbench.record.sign import public_key_fingerprint
from ssdbench.record.write import seal
from tests.unit.record.test_record import make_key, record


def write(root: Path, name: str, key: Path) -> Path:
    path = root / name / "erase" / "erase-record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    link_seal_write(root, path, record(), lambda r: seal(r, str(key)))
    return path


@pytest.fixture
def chained(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    key = make_key(tmp_path)
    root = tmp_path / "results"
    paths = [write(root, f"drive{i}", key) for i in range(1, 5)]
    return root, key, paths


def test_each_record_links_to_the_one_before(chained: tuple[Path, Path, list[Path]]) -> None:
    root, key, paths = chained
    links = [json.loads(p.read_text())["chain"] for p in paths]
    assert [c["seq"] for c in links] == [1, 2, 3, 4]
    assert len({c["id"] for c in links}) == 1
    assert links[0]["previous_sha256"] is None
    assert links[0]["started"] == "no earlier record in this results folder"
    import hashlib

    for before, link in zip(paths, links[1:], strict=False):
        assert link["previous_sha256"] == hashlib.sha256(before.read_bytes()).hexdigest()
        assert link["previous_record"] == str(before.relative_to(root))
    report = check_chain(root, {public_key_fingerprint(key)})
    assert report.ok, report.lines
    assert report.lines == (f"chain {links[0]['id'][:8]}: records 1..4, 4 file(s)",)


def test_a_missing_a_doubled_a_replaced_and_a_moved_record_are_named(
        chained: tuple[Path, Path, list[Path]], tmp_path: Path) -> None:
    root, key, paths = chained
    trusted = {public_key_fingerprint(key)}
    # the middle one deleted
    saved = paths[1].read_bytes()
    paths[1].unlink()
    report = check_chain(root, trusted)
    assert not report.ok and "record(s) 2 of 4 missing" in report.lines[0], report.lines
    paths[1].write_bytes(saved)
    # the last one deleted: no gap, record-chain.json names it
    last = paths[3].read_bytes()
    paths[3].unlink()
    report = check_chain(root, trusted)
    assert not report.ok
    assert any(line.startswith(f"{CHAIN_FILE} names record 4 of chain") and
               "record(s) 4 missing from its end" in line for line in report.lines), report.lines
    paths[3].write_bytes(last)
    # a copy of record 2 elsewhere in the folder: record 2 twice
    copy = root / "copy" / "erase-record.json"
    copy.parent.mkdir()
    shutil.copyfile(paths[1], copy)
    report = check_chain(root, trusted)
    assert any("record 2 twice" in line for line in report.lines), report.lines
    copy.unlink()
    copy.parent.rmdir()
    # record 3 replaced by another record 3 signed with the same key (another folder's
    # chain position 3 with the same id: the forger's best try)
    other = tmp_path / "other"
    shutil.copytree(root, other)
    (other / "drive3").rename(other / "gone")
    state = json.loads((other / CHAIN_FILE).read_text())
    state.update(seq=2, last_sha256="0" * 64)
    (other / CHAIN_FILE).write_text(json.dumps(state))
    forged = write(other, "drive3", key)
    assert json.loads(forged.read_text())["chain"]["seq"] == 3
    shutil.copyfile(forged, paths[2])
    report = check_chain(root, trusted)
    assert any(line.startswith("drive3/erase/erase-record.json: record 3 of chain") and
               "does not follow record 2" in line for line in report.lines), report.lines
    assert any(line.startswith("drive4/erase/erase-record.json: record 4") and
               "does not follow record 3" in line for line in report.lines), report.lines


def test_a_changed_byte_an_unchained_record_and_another_signer_fail(
        chained: tuple[Path, Path, list[Path]], tmp_path: Path) -> None:
    root, key, paths = chained
    data = paths[0].read_bytes()
    paths[0].write_bytes(data.replace(b"A. Tester", b"B. Tester"))
    report = check_chain(root, {public_key_fingerprint(key)})
    assert any(line.startswith("drive1/erase/erase-record.json: the signature does not match")
               for line in report.lines), report.lines
    paths[0].write_bytes(data)
    # a record sealed without a chain (before chains existed)
    lone = root / "old" / "erase-record.json"
    lone.parent.mkdir()
    from ssdbench.record.sign import dump_record

    lone.write_bytes(dump_record(seal(record(), str(key))))
    report = check_chain(root, {public_key_fingerprint(key)})
    assert any("not in a chain" in line for line in report.lines), report.lines
    lone.unlink()
    # signed by a key the auditor did not name
    report = check_chain(root, {public_key_fingerprint(make_key(tmp_path, "other.pem"))})
    assert not report.ok and sum("not a trusted key" in line for line in report.lines) == 4


def test_an_unreadable_chain_file_starts_a_new_chain_that_says_why(tmp_path: Path) -> None:
    key = make_key(tmp_path)
    root = tmp_path / "results"
    root.mkdir()
    for junk in (b"{not json", b'{"format": "ssdbench-record-chain", "seq": 1e999}',
                 b"[" * 100000):
        (root / CHAIN_FILE).write_bytes(junk)
        path = write(root, "d", key)
        link = json.loads(path.read_text())["chain"]
        assert link["seq"] == 1 and link["previous_sha256"] is None
        assert CHAIN_FILE in link["started"], link


def test_records_sealed_in_parallel_form_one_unbroken_chain(tmp_path: Path) -> None:
    """A station records several drives at once: each gets its own number."""
    key = make_key(tmp_path)
    root = tmp_path / "results"
    threads = [threading.Thread(target=write, args=(root, f"d{i}", key)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = check_chain(root, {public_key_fingerprint(key)})
    assert report.ok and report.lines[0].endswith("records 1..8, 8 file(s)"), report.lines


def test_verify_record_chain_on_the_command_line(
        chained: tuple[Path, Path, list[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    root, key, paths = chained
    assert main(["verify-record", "--chain", str(root), "--key", str(key)]) == ExitCode.OK
    assert "OK: every record intact" in capsys.readouterr().out
    assert main(["verify-record", "--chain", str(root), "--trusted",
                 str(root / "none")]) == ExitCode.USAGE
    capsys.readouterr()
    paths[2].unlink()
    assert main(["verify-record", "--chain", str(root), "--key", str(key)]) == ExitCode.FAILURE
    out = capsys.readouterr()
    assert "record(s) 3 of 4 missing" in out.out and "FAILED" in out.err
    assert main(["verify-record", "--chain", str(root / "nowhere")]) == ExitCode.USAGE
    assert main(["verify-record", str(paths[0]), "--chain", str(root)]) == ExitCode.USAGE


def test_a_forged_chain_number_or_chain_file_cannot_exhaust_memory(tmp_path: Path) -> None:
    """A record signed by ANY key with seq 10**12, or an (unsigned) record-chain.json saying
    999,999,999: named, in no time (both raised MemoryError through a range of that size)."""
    from ssdbench.record.sign import dump_record

    key = make_key(tmp_path, "other.pem")
    root = tmp_path / "results"
    path = write(root, "d1", key)
    forged = root / "d2" / "erase-record.json"
    forged.parent.mkdir()
    data = record() | {"chain": {"id": "a" * 32, "seq": 10**12, "previous_sha256": None}}
    forged.write_bytes(dump_record(seal(data, str(key))))
    report = check_chain(root)
    assert any("d2/erase/erase-record.json" in line or "d2/erase-record.json: not in a chain"
               in line for line in report.lines), report.lines
    state = json.loads((root / CHAIN_FILE).read_text())
    state["seq"] = 999_999_999
    (root / CHAIN_FILE).write_text(json.dumps(state))
    forged.unlink()
    report = check_chain(root)
    assert any("record(s) 2-999999999 missing from its end" in line
               for line in report.lines), report.lines
    assert path.exists()


def test_unsigned_records_are_unsigned_not_a_broken_chain(tmp_path: Path) -> None:
    """A bench with no lab key: every finding is an unsigned record (the fleet page says
    "unsigned", not "chain broken"); one real finding beside them and it is broken."""
    from ssdbench.record.chain import check_chain_blobs
    from ssdbench.record.sign import unsigned

    blob = json.dumps(unsigned(record(), "no lab key configured")).encode()
    report = check_chain_blobs([("a/erase-record.json", blob), ("b/erase-record.json", blob)],
                               None)
    assert not report.ok and report.unsigned_only, report.lines
    mixed = check_chain_blobs([("a/erase-record.json", blob),
                               ("b/erase-record.json", b"{not json")], None)
    assert not mixed.ok and not mixed.unsigned_only, mixed.lines
