"""A hash chain of a results folder's erase records (#28, docs/erase.md "The record chain").

Every record a results folder (a bench's stick) gets holds, inside what is signed, a
``chain`` member: the chain's id, its sequence number, and the SHA-256 of the folder's
previous record file (``previous_sha256``, None for the first) with its path. A record
deleted, replaced by another or put out of order then shows: a gap in the numbers, a
number twice, or a record whose predecessor's bytes do not hash to what it holds. The
folder's ``record-chain.json`` remembers the last link (it is not signed: a helper, not
evidence; a missing or unreadable one starts a new chain, and the new chain's first record
says why). A record removed from the end of a chain leaves no gap; record-chain.json, the
session CSV and the store's copies name it (:func:`check_chain` compares the first).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench.record.sign import dump_record, verify_record_bytes
from ssdbench.results import atomic

CHAIN_FILE = "record-chain.json"
CHAIN_FORMAT = "ssdbench-record-chain"
MAX_RECORD_BYTES = 4 * 2**20
_HEX64 = re.compile(r"[0-9a-f]{64}")
MAX_SEQ = 10**9  # a chain number beyond this is not one ssdbench wrote
_ID = re.compile(r"[0-9a-f]{32}")
_lock = threading.Lock()


def _read_state(root: Path) -> tuple[dict[str, Any] | None, str]:
    """The last link of ``root``'s chain, or None and why a new chain starts."""
    path = root / CHAIN_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "no earlier record in this results folder"
    except OSError as exc:
        return None, f"{CHAIN_FILE} could not be read ({exc.strerror or exc})"
    state = _parse_state(data)
    if state is None:
        return None, f"{CHAIN_FILE} is not a record chain ssdbench wrote"
    return state, ""


def _parse_state(data: bytes) -> dict[str, Any] | None:
    try:
        state = json.loads(data[:65536].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    ok = (isinstance(state, dict) and state.get("format") == CHAIN_FORMAT
          and isinstance(state.get("id"), str) and _ID.fullmatch(state["id"])
          and type(state.get("seq")) is int and 1 <= state["seq"] < MAX_SEQ
          and isinstance(state.get("last_sha256"), str)
          and _HEX64.fullmatch(state["last_sha256"])
          and isinstance(state.get("last_record"), str))
    return state if ok else None


def link_seal_write(root: Path, record_path: Path, record: Mapping[str, Any],
                    seal: Any) -> tuple[dict[str, Any], bytes]:
    """``record`` with the next link of ``root``'s chain, sealed (``seal(record)``: signed
    or marked unsigned), written to ``record_path`` and remembered in record-chain.json;
    one record at a time per process (a station records drives in parallel). Returns the
    sealed record and its file's bytes."""
    with _lock:
        state, why = _read_state(root)
        if state is None:
            link: dict[str, Any] = {"id": uuid.uuid4().hex, "seq": 1, "previous_sha256": None,
                                    "previous_record": None, "started": why}
        else:
            link = {"id": state["id"], "seq": state["seq"] + 1,
                    "previous_sha256": state["last_sha256"],
                    "previous_record": state["last_record"]}
        sealed: dict[str, Any] = seal({**record, "chain": link})
        data = dump_record(sealed)
        try:
            rel = str(record_path.relative_to(root))
        except ValueError:
            rel = record_path.name
        # the link first: a power cut between the two leaves a gap the checker reports
        # (the record was never written) rather than two records with one number
        atomic.write_text(root / CHAIN_FILE, json.dumps({
            "format": CHAIN_FORMAT, "id": link["id"], "seq": link["seq"],
            "last_sha256": hashlib.sha256(data).hexdigest(), "last_record": rel},
            indent=2) + "\n")
        atomic.write_bytes(record_path, data)
    return sealed, data


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    lines: tuple[str, ...]  # one per finding, then one per chain
    unsigned_only: bool = False  # every finding is an unsigned record: nothing to check


def _link_of(record: Any) -> dict[str, Any] | None:
    link = record.get("chain") if isinstance(record, dict) else None
    if not (isinstance(link, dict) and isinstance(link.get("id"), str)
            and type(link.get("seq")) is int and 1 <= link["seq"] < MAX_SEQ):
        return None
    prev = link.get("previous_sha256")
    if prev is not None and not (isinstance(prev, str) and _HEX64.fullmatch(prev)):
        return None
    return link


def check_chain(folder: Path, trusted: Iterable[str] | None = None) -> ChainReport:
    """Every ``erase-record.json`` under ``folder``: each intact (and, with ``trusted``
    fingerprints, signed by one of them), each chain without a gap, a number twice or a
    link that does not hash to the record before it; record-chain.json's last link among
    them. ``ok`` only when nothing is wrong and every record is in a chain."""
    files = sorted(p for p in folder.rglob("erase-record.json") if p.is_file())
    if not files:
        return ChainReport(False, (f"{folder}: no erase-record.json under it",))

    def read(path: Path) -> bytes | str:
        try:
            with path.open("rb") as fh:
                return fh.read(MAX_RECORD_BYTES + 1)
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"

    state = folder / CHAIN_FILE
    return check_chain_blobs([(str(p.relative_to(folder)), read(p)) for p in files],
                             read(state) if state.is_file() else None, trusted)


def check_chain_blobs(records: Iterable[tuple[str, bytes | str]], state: bytes | str | None,
                      trusted: Iterable[str] | None = None) -> ChainReport:
    """:func:`check_chain` on records already read: (name, the file's bytes or why they
    could not be read), and record-chain.json's bytes (None: not there) - the fleet page
    checks each bench's records from the store this way."""
    anchors = set(trusted) if trusted is not None else None
    problems: list[str] = []
    chains: dict[str, dict[int, list[tuple[str, str, dict[str, Any]]]]] = {}
    count = unsigned = 0
    for rel, data in records:
        count += 1
        if isinstance(data, str):
            problems.append(f"{rel}: {data}")
            continue
        if len(data) > MAX_RECORD_BYTES:
            problems.append(f"{rel}: larger than 4 MiB: not a record")
            continue
        verdict = verify_record_bytes(data)
        if not verdict.ok:
            problems.append(f"{rel}: {verdict.message}")
            unsigned += verdict.unsigned
            continue
        if anchors is not None and verdict.fingerprint not in anchors:
            problems.append(f"{rel}: signed by key {verdict.fingerprint}, not a trusted key")
        link = _link_of(json.loads(data))
        if link is None:
            problems.append(f"{rel}: not in a chain (no chain member: a record made before "
                            "chains, or one put here from elsewhere)")
            continue
        chains.setdefault(link["id"], {}).setdefault(link["seq"], []).append(
            (rel, hashlib.sha256(data).hexdigest(), link))
    summary: list[str] = []
    for cid, by_seq in sorted(chains.items()):
        seqs = sorted(by_seq)
        for seq in seqs:
            if len(by_seq[seq]) > 1:
                problems.append(f"chain {cid[:8]}: record {seq} twice: "
                                + ", ".join(str(r) for r, _h, _l in by_seq[seq]))
        gaps = _gaps([0, *seqs])  # walked, never a range of a forged number's size
        if gaps:
            problems.append(f"chain {cid[:8]}: record(s) {gaps} of {seqs[-1]} missing")
        for seq in seqs:
            for rel, _h, link in by_seq[seq]:
                before = by_seq.get(seq - 1, [])
                if seq == 1:
                    if link.get("previous_sha256") is not None:
                        problems.append(f"{rel}: record 1 of chain {cid[:8]} names a "
                                        "record before it")
                elif before and link.get("previous_sha256") not in {h for _r, h, _l in before}:
                    problems.append(
                        f"{rel}: record {seq} of chain {cid[:8]} does not follow record "
                        f"{seq - 1} ({before[0][0]}): that record was changed or replaced, "
                        "or this one was moved from another place in the chain")
        summary.append(f"chain {cid[:8]}: records {seqs[0]}..{seqs[-1]}, {count} file(s)"
                       if len(chains) == 1 else
                       f"chain {cid[:8]}: records {seqs[0]}..{seqs[-1]}")
    last = _parse_state(state) if isinstance(state, bytes) else None
    if last is not None:
        seqs = sorted(chains.get(last["id"], {}))
        if not seqs or seqs[-1] < last["seq"]:
            gone = ("no record of that chain is here" if not seqs else
                    f"record(s) {_span(seqs[-1] + 1, last['seq'])} missing from its end")
            problems.append(f"{CHAIN_FILE} names record {last['seq']} of chain "
                            f"{last['id'][:8]} ({last['last_record']}): {gone}")
    return ChainReport(not problems, tuple(problems + summary),
                       bool(problems) and unsigned == len(problems))


def _span(a: int, b: int) -> str:
    return str(a) if a == b else f"{a}-{b}"


def _gaps(seqs: list[int]) -> str:
    """The numbers missing between consecutive ones of a sorted list, as "2, 5-9"."""
    return ", ".join(_span(a + 1, b - 1) for a, b in itertools.pairwise(seqs)
                     if b - a > 1)
