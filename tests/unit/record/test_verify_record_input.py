"""#42 items 5 and 7: what `verify-record` reads is untrusted. A FIFO given as the record,
the key, the trusted-keys file, one of its lines, the chain head or the chain file hung it
(an open() that never returns); each is now refused at once. ESC, BEL and CR from a record,
record-chain.json or a folder name never reach the terminal."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from ssdbench.record.chain import CHAIN_FILE, link_seal_write
from ssdbench.record.sign import dump_record, unsigned
from ssdbench.record.write import seal
from tests.unit.record.test_record import make_key, record

# pytest-timeout's signal method: a regression fails here instead of hanging the run
pytestmark = pytest.mark.timeout(10)

HOSTILE = "\x1b]0;owned\x07\x1b[2J\rX"


def signed(tmp_path: Path) -> tuple[Path, Path]:
    key = make_key(tmp_path)
    root = tmp_path / "results"
    path = root / "d1" / "erase" / "erase-record.json"
    path.parent.mkdir(parents=True)
    link_seal_write(root, path, record(), lambda r: seal(r, str(key)), bench_name="b")
    return path, key


def fifo(tmp_path: Path, name: str = "fifo") -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def clean(out: pytest.CaptureFixture[str]) -> str:
    seen = out.readouterr()
    text = seen.out + seen.err
    for char in ("\x1b", "\x07", "\r"):
        assert char not in text, repr(text)
    return text


@pytest.mark.parametrize("where", ["record", "key", "trusted", "trusted-line", "head"])
def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, where: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path, key = signed(tmp_path)
    pipe = fifo(tmp_path)
    trusted = tmp_path / "trusted-keys"
    trusted.write_text("fifo\n")
    argv = {"record": [str(pipe), "--key", str(key)],
            "key": [str(path), "--key", str(pipe)],
            "trusted": [str(path), "--trusted", str(pipe)],
            "trusted-line": [str(path), "--trusted", str(trusted)],
            "head": ["--chain", str(path.parents[2]), "--key", str(key), "--head", str(pipe)],
            }[where]
    assert main(["verify-record", *argv]) == ExitCode.USAGE
    assert "not a regular file" in clean(capsys)


def test_a_fifo_in_the_chain_folder_is_named(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, key = signed(tmp_path)
    root = path.parents[2]
    (root / CHAIN_FILE).unlink()
    os.mkfifo(root / CHAIN_FILE)
    other = root / "d2" / "erase"
    other.mkdir(parents=True)
    os.mkfifo(other / "erase-record.json")
    assert main(["verify-record", "--chain", str(root), "--key", str(key)]) == ExitCode.FAILURE
    text = clean(capsys)
    assert "d2/erase/erase-record.json: not a regular file" in text, text
    assert f"{CHAIN_FILE}: not a regular file" in text, text


def test_escapes_from_files_and_folder_names_never_reach_the_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, key = signed(tmp_path)
    root = path.parents[2]
    # a folder name with escapes, holding a copy of the record (record 1 twice)
    odd = root / HOSTILE / "erase"
    odd.mkdir(parents=True)
    shutil.copyfile(path, odd / "erase-record.json")
    # record-chain.json naming a last record with escapes, and a record after it missing
    state = json.loads((root / CHAIN_FILE).read_text())
    state.update(seq=2, last_record=HOSTILE)
    (root / CHAIN_FILE).write_text(json.dumps(state))
    # a record signed by the lab key whose chain id, bench name and serial hold escapes
    data = {**record(), "chain": {"id": HOSTILE, "seq": 7, "previous_sha256": None},
            "bench": {"id": "f" * 32, "name": HOSTILE}}
    data["drive"] = {**data["drive"], "serial": HOSTILE}
    (root / "d3").mkdir()
    (root / "d3" / "erase-record.json").write_bytes(dump_record(seal(data, str(key))))
    assert main(["verify-record", "--chain", str(root), "--key", str(key)]) == ExitCode.FAILURE
    text = clean(capsys)
    assert "record 1 twice" in text and "of another bench" in text, text
    # one record: its summary and an unsigned record's reason
    lone = tmp_path / "lone.json"
    lone.write_bytes(dump_record(unsigned(data, HOSTILE)))
    assert main(["verify-record", str(lone), "--key", str(key)]) == ExitCode.FAILURE
    assert "UNSIGNED" in clean(capsys)
    lone.write_bytes(dump_record(seal(data, str(key))))
    assert main(["verify-record", str(lone), "--key", str(key)]) == ExitCode.OK
    assert "says: result" in clean(capsys)
    # a folder name given on the command line
    assert main(["verify-record", "--chain", str(root / HOSTILE), "--key", str(key)]) in (
        ExitCode.FAILURE, ExitCode.OK)
    clean(capsys)


def test_a_fifo_for_the_chain_file_or_the_key_does_not_hang_the_erase_stage(
        tmp_path: Path) -> None:
    """The stage reads record-chain.json and the record_key file before it signs: a FIFO
    there starts a new chain that says why, and an unsigned record that says why."""
    root = tmp_path / "results"
    root.mkdir()
    os.mkfifo(root / CHAIN_FILE)
    pipe = fifo(tmp_path, "key.pem")
    path = root / "d1" / "erase" / "erase-record.json"
    path.parent.mkdir(parents=True)
    sealed, _data = link_seal_write(root, path, record(), lambda r: seal(r, str(pipe)))
    assert "not a regular file" in sealed["chain"]["started"], sealed["chain"]
    assert sealed["signature"]["unsigned"] and "not a regular file" in sealed["signature"][
        "reason"], sealed["signature"]
    assert (root / CHAIN_FILE).is_file()  # the new chain's file replaced the FIFO
