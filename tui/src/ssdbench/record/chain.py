"""A hash chain of a results folder's erase records (#28, #42; docs/erase.md "The record
chain").

Every record a results folder (a bench's stick) gets holds, inside what is signed, a
``chain`` member: the chain's id, its sequence number, and the SHA-256 of the folder's
previous record file (``previous_sha256``, None for the first) with its path; and a
``bench`` member: the folder's bench id (random, made with the folder's first record and
kept in record-chain.json) and the bench's name. A record deleted, replaced by another or
put out of order then shows: a gap in the numbers, a number twice, or a record whose
predecessor's bytes do not hash to what it holds; a record of another bench shows its
bench. The folder's ``record-chain.json`` remembers the last link (it is not signed: a
helper, not evidence; a missing or unreadable one starts a new chain, and the new chain's
first record says why). A record removed from the end of a chain leaves no gap: only the
lab store's copy of record-chain.json (the chain head, sent with every record) proves the
tail; with the stick alone :func:`check_chain` says that it cannot be proven.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench.record.sign import NotRegularFile, dump_record, read_regular, verify_record_bytes
from ssdbench.results import atomic
from ssdbench.untrusted import shown

CHAIN_FILE = "record-chain.json"
CHAIN_FORMAT = "ssdbench-record-chain"
# where the store keeps a results folder's own files, record-chain.json among them: the
# chain head (lab/uploader.py BENCH_FOLDER; ``<prefix>/<bench>/_bench/record-chain.json``)
STORE_FOLDER = "_bench"
HEAD = "the store's chain head"
MAX_RECORD_BYTES = 4 * 2**20
MAX_STATE_BYTES = 65536
_HEX64 = re.compile(r"[0-9a-f]{64}")
MAX_SEQ = 10**9  # a chain number beyond this is not one ssdbench wrote
_ID = re.compile(r"[0-9a-f]{32}")
_lock = threading.Lock()
# chain id -> number -> the records holding it: (name, SHA-256 of the file, its link)
Chains = dict[str, dict[int, list[tuple[str, str, dict[str, Any]]]]]


def _read_state(root: Path) -> tuple[dict[str, Any] | None, str, str | None]:
    """The last link of ``root``'s chain, or None and why a new chain starts; and the
    folder's bench id (kept from a damaged file when it still names one)."""
    path = root / CHAIN_FILE
    try:
        data = read_regular(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return None, "no earlier record in this results folder", None
    except OSError as exc:  # a FIFO put there must not hang the erase stage
        return None, f"{CHAIN_FILE} could not be read ({exc.strerror or exc})", None
    state = _parse_state(data)
    if state is None:
        return None, f"{CHAIN_FILE} is not a record chain ssdbench wrote", _bench_id_in(data)
    return state, "", state.get("bench_id")


def _json_of(data: bytes) -> Any:
    try:
        return json.loads(data[:MAX_STATE_BYTES].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _bench_id_in(data: bytes) -> str | None:
    doc = _json_of(data)
    found = doc.get("bench_id") if isinstance(doc, dict) else None
    return found if isinstance(found, str) and _ID.fullmatch(found) else None


def _parse_state(data: bytes) -> dict[str, Any] | None:
    state = _json_of(data)
    ok = (isinstance(state, dict) and state.get("format") == CHAIN_FORMAT
          and isinstance(state.get("id"), str) and _ID.fullmatch(state["id"])
          and type(state.get("seq")) is int and 1 <= state["seq"] < MAX_SEQ
          and isinstance(state.get("last_sha256"), str)
          and _HEX64.fullmatch(state["last_sha256"])
          and isinstance(state.get("last_record"), str)
          # written since #42; a file from before has neither
          and (state.get("bench_id") is None or (isinstance(state["bench_id"], str)
                                                 and _ID.fullmatch(state["bench_id"])))
          and isinstance(state.get("bench_name", ""), str))
    return state if ok else None


def parse_head(data: bytes) -> dict[str, Any] | None:
    """A chain head (record-chain.json, e.g. the store's copy) parsed, or None when it is
    not one ssdbench wrote."""
    return _parse_state(data)


def link_seal_write(root: Path, record_path: Path, record: Mapping[str, Any],
                    seal: Any, *, bench_name: str = "") -> tuple[dict[str, Any], bytes]:
    """``record`` with the folder's bench (its id, ``bench_name``) and the next link of
    ``root``'s chain, sealed (``seal(record)``: signed or marked unsigned), written to
    ``record_path`` and remembered in record-chain.json; one record at a time per process
    (a station records drives in parallel). Returns the sealed record and its file's
    bytes."""
    with _lock:
        state, why, bench_id = _read_state(root)
        bench = {"id": bench_id or uuid.uuid4().hex, "name": bench_name}
        if state is None:
            link: dict[str, Any] = {"id": uuid.uuid4().hex, "seq": 1, "previous_sha256": None,
                                    "previous_record": None, "started": why}
        else:
            link = {"id": state["id"], "seq": state["seq"] + 1,
                    "previous_sha256": state["last_sha256"],
                    "previous_record": state["last_record"]}
        sealed: dict[str, Any] = seal({**record, "bench": bench, "chain": link})
        data = dump_record(sealed)
        try:
            rel = str(record_path.relative_to(root))
        except ValueError:
            rel = record_path.name
        # the link first: a power cut between the two leaves a gap the checker reports
        # (the record was never written) rather than two records with one number
        atomic.write_text(root / CHAIN_FILE, json.dumps({
            "format": CHAIN_FORMAT, "id": link["id"], "seq": link["seq"],
            "last_sha256": hashlib.sha256(data).hexdigest(), "last_record": rel,
            "bench_id": bench["id"], "bench_name": bench_name}, indent=2) + "\n")
        atomic.write_bytes(record_path, data)
    return sealed, data


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    lines: tuple[str, ...]  # one per finding, then one per chain
    unsigned_only: bool = False  # every finding is an unsigned record: nothing to check
    # what is true but proves nothing wrong: the tail that cannot be proven, records that
    # name no bench (made before #42), records after the store's chain head
    notes: tuple[str, ...] = ()
    tail_proven: bool = False  # every record up to the store's chain head is here


def _link_of(record: Any) -> dict[str, Any] | None:
    link = record.get("chain") if isinstance(record, dict) else None
    if not (isinstance(link, dict) and isinstance(link.get("id"), str)
            and type(link.get("seq")) is int and 1 <= link["seq"] < MAX_SEQ):
        return None
    prev = link.get("previous_sha256")
    if prev is not None and not (isinstance(prev, str) and _HEX64.fullmatch(prev)):
        return None
    return link


def _bench_of(record: Any) -> dict[str, str] | str | None:
    """The record's bench ({id, name}), None when it has none (made before #42), or why
    its bench member is not one ssdbench writes."""
    bench = record.get("bench") if isinstance(record, dict) else None
    if bench is None:
        return None
    if not (isinstance(bench, dict) and set(bench) == {"id", "name"}
            and isinstance(bench["id"], str) and _ID.fullmatch(bench["id"])
            and isinstance(bench["name"], str)):
        return "its bench member is not what ssdbench writes"
    return bench


def _bench_words(name: object, bench_id: str) -> str:
    return f"bench {shown(name or '?', 64)} (id {shown(bench_id[:8])})"


def _read(path: Path) -> bytes | str:
    """A file's bytes (at most one more than a record may have), or why not."""
    try:
        return read_regular(path, MAX_RECORD_BYTES)
    except NotRegularFile as exc:
        return str(exc.strerror)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"


def check_chain(folder: Path, trusted: Iterable[str] | None = None,
                head: bytes | None = None) -> ChainReport:
    """Every ``erase-record.json`` under ``folder``: each intact (and, with ``trusted``
    fingerprints, signed by one of them), of the folder's bench, each chain without a gap,
    a number twice or a link that does not hash to the record before it; record-chain.json's
    last link among them. ``head``: the store's chain head (its copy of record-chain.json):
    every record up to it must be here. ``folder`` is a results folder (record-chain.json
    in it) or a copy of the store's ``<bench>/`` (the head in ``_bench/``). ``ok`` only
    when nothing is wrong and every record is in a chain."""
    files = sorted(p for p in folder.rglob("erase-record.json") if not p.is_dir())
    if not files:
        return ChainReport(False, (f"{shown(folder)}: no erase-record.json under it",))
    records = [(str(p.relative_to(folder)), _read(p)) for p in files]
    own, store_copy = folder / CHAIN_FILE, folder / STORE_FOLDER / CHAIN_FILE
    if not os.path.lexists(own) and os.path.lexists(store_copy):  # the store's layout
        return check_chain_blobs(records, _read(store_copy) if head is None else head,
                                 trusted)
    return check_chain_blobs(records, head, trusted, stick=True,
                             own=_read(own) if os.path.lexists(own) else None)


def check_chain_blobs(records: Iterable[tuple[str, bytes | str]], head: bytes | str | None,
                      trusted: Iterable[str] | None = None, *, stick: bool = False,
                      own: bytes | str | None = None) -> ChainReport:
    """:func:`check_chain` on records already read: (name, the file's bytes or why they
    could not be read); ``head``: the store's chain head (its record-chain.json: bytes, why
    it could not be read, or None: none) - the fleet page checks each bench's records from
    the store this way. ``stick``: the records are a results folder's, whose own
    record-chain.json is ``own`` (None: not there); it is written before each record, so a
    record after its last link means it was rewound."""
    anchors = set(trusted) if trusted is not None else None
    problems: list[str] = []
    notes: list[str] = []
    chains: Chains = {}
    benches: list[tuple[str, dict[str, str]]] = []
    count = unsigned = nameless = 0
    for raw_rel, data in records:
        rel = shown(raw_rel)
        count += 1
        if isinstance(data, str):
            problems.append(f"{rel}: {shown(data)}")
            continue
        if len(data) > MAX_RECORD_BYTES:
            problems.append(f"{rel}: larger than 4 MiB: not a record")
            continue
        verdict = verify_record_bytes(data)
        if not verdict.ok:
            problems.append(f"{rel}: {shown(verdict.message)}")
            unsigned += verdict.unsigned
            continue
        if anchors is not None and verdict.fingerprint not in anchors:
            problems.append(f"{rel}: signed by key {verdict.fingerprint}, not a trusted key")
        doc = json.loads(data)
        bench = _bench_of(doc)
        if isinstance(bench, str):
            problems.append(f"{rel}: {bench}")
        elif bench is None:
            nameless += 1
        else:
            benches.append((rel, bench))
        link = _link_of(doc)
        if link is None:
            problems.append(f"{rel}: not in a chain (no chain member: a record made before "
                            "chains, or one put here from elsewhere)")
            continue
        chains.setdefault(link["id"], {}).setdefault(link["seq"], []).append(
            (rel, hashlib.sha256(data).hexdigest(), link))
    if count and unsigned == count:  # no lab key on this bench: nothing else to check
        return ChainReport(False, tuple(problems), True)
    summary = _link_findings(chains, count, problems)
    mine = _parse_state(own) if isinstance(own, bytes) else None
    theirs = _parse_state(head) if isinstance(head, bytes) else None
    _file_findings(head, theirs, own, mine, stick=stick, problems=problems, notes=notes)
    _bench_findings(theirs, mine, benches, nameless, problems=problems, notes=notes)
    # the tail: the store's head proves it; the folder's own file only says where it ends
    tail_proven = False
    if theirs is not None:
        tail_proven = _tail(theirs, HEAD, chains, problems, notes, strict=False)
    if mine is not None:
        _tail(mine, CHAIN_FILE, chains, problems, notes, strict=True)
        if theirs is None:
            notes.append(f"records after record {mine['seq']} of chain {shown(mine['id'][:8])} "
                         "(the last here) cannot be proven present without the lab store's "
                         f"chain head: {CHAIN_FILE} is not signed, so the last records deleted "
                         "with it rewound leave no trace on the stick (verify-record --head: "
                         f"a copy of the store's <bench>/{STORE_FOLDER}/{CHAIN_FILE})")
    current = theirs or mine
    for cid, by_seq in sorted(chains.items()):
        if current is not None and cid != current["id"]:
            notes.append(f"chain {shown(cid[:8])} ends at record {max(by_seq)}; it is not the "
                         "chain the chain file names, so whether records came after it "
                         "cannot be proven")
    tail_proven = tail_proven and not problems
    if theirs is not None and tail_proven:
        notes.append(f"every record up to the store's chain head (record {theirs['seq']} "
                     f"of chain {shown(theirs['id'][:8])}) is here")
    return ChainReport(not problems, tuple(problems + summary),
                       bool(problems) and unsigned == len(problems), tuple(notes),
                       tail_proven)


def _link_findings(chains: Chains, count: int, problems: list[str]) -> list[str]:
    """Each chain's numbers and links: a number twice, a gap, a link that does not hash to
    the record before it. Returns one summary line per chain."""
    summary: list[str] = []
    for cid, by_seq in sorted(chains.items()):
        seqs = sorted(by_seq)
        name = shown(cid[:8])
        for seq in seqs:
            if len(by_seq[seq]) > 1:
                problems.append(f"chain {name}: record {seq} twice: "
                                + ", ".join(str(r) for r, _h, _l in by_seq[seq]))
        gaps = _gaps([0, *seqs])  # walked, never a range of a forged number's size
        if gaps:
            problems.append(f"chain {name}: record(s) {gaps} of {seqs[-1]} missing")
        for seq in seqs:
            for rel, _h, link in by_seq[seq]:
                before = by_seq.get(seq - 1, [])
                if seq == 1:
                    if link.get("previous_sha256") is not None:
                        problems.append(f"{rel}: record 1 of chain {name} names a "
                                        "record before it")
                elif before and link.get("previous_sha256") not in {h for _r, h, _l in before}:
                    problems.append(
                        f"{rel}: record {seq} of chain {name} does not follow record "
                        f"{seq - 1} ({before[0][0]}): that record was changed or replaced, "
                        "or this one was moved from another place in the chain")
        summary.append(f"chain {name}: records {seqs[0]}..{seqs[-1]}, {count} file(s)"
                       if len(chains) == 1 else
                       f"chain {name}: records {seqs[0]}..{seqs[-1]}")
    return summary


def _file_findings(head: bytes | str | None, theirs: dict[str, Any] | None,
                   own: bytes | str | None, mine: dict[str, Any] | None, *, stick: bool,
                   problems: list[str], notes: list[str]) -> None:
    """The chain files themselves: the store's head, the stick's own record-chain.json
    (missing or unreadable: the bench and the last record are unknown)."""
    if isinstance(head, str):
        problems.append(f"{HEAD}: {shown(head)}")
    elif head is not None and theirs is None:
        problems.append(f"{HEAD}: not a record chain ssdbench wrote")
    if not stick:
        if head is None:
            problems.append(f"no chain head ({STORE_FOLDER}/{CHAIN_FILE}): which bench these "
                            "records are of and which came last are unknown; records deleted "
                            "from the end cannot be proven present (or absent)")
    elif isinstance(own, str):
        problems.append(f"{CHAIN_FILE}: {shown(own)}")
    elif isinstance(own, bytes) and mine is None:
        problems.append(f"{CHAIN_FILE}: not a record chain ssdbench wrote")
    elif own is None:
        gone = (f"no {CHAIN_FILE}: which bench this folder is and which record came last "
                "are unknown here")
        if theirs is None:
            problems.append(f"{gone}; records deleted from the end cannot be proven "
                            "present (or absent) without the lab store's chain head "
                            "(--head)")
        else:
            notes.append(f"{gone}; {HEAD} stands for it")


def _bench_findings(theirs: dict[str, Any] | None, mine: dict[str, Any] | None,
                    benches: list[tuple[str, dict[str, str]]], nameless: int, *,
                    problems: list[str], notes: list[str]) -> None:
    """Every record of the folder's bench: the store head's, else record-chain.json's
    (neither names one: the records must not name two)."""
    if (theirs is not None and mine is not None and theirs.get("bench_id")
            and mine.get("bench_id") and theirs["bench_id"] != mine["bench_id"]):
        problems.append(f"{HEAD} is of another bench: "
                        f"{_bench_words(theirs.get('bench_name'), theirs['bench_id'])}, "
                        f"{CHAIN_FILE} here of "
                        f"{_bench_words(mine.get('bench_name'), mine['bench_id'])}")
    ref = theirs if theirs is not None and theirs.get("bench_id") else mine
    if ref is not None and ref.get("bench_id"):
        here = _bench_words(ref.get("bench_name"), ref["bench_id"])
        for rel, bench in benches:
            if bench["id"] != ref["bench_id"]:
                problems.append(f"{rel}: of another bench: "
                                f"{_bench_words(bench['name'], bench['id'])}, not this "
                                f"folder's {here} (a record from elsewhere, or an earlier "
                                "results folder of the same bench: a new stick, a network "
                                "boot)")
    else:
        seen = Counter(bench["id"] for _rel, bench in benches)
        if len(seen) > 1:
            names = {bench["id"]: bench["name"] for _rel, bench in benches}
            problems.append(f"records of {len(seen)} benches here and no chain file says "
                            "which is this folder's: " + ", ".join(
                                f"{_bench_words(names[b], b)}: {n}" for b, n in seen.items()))
    if nameless:
        notes.append(f"{nameless} record(s) name no bench (made before ssdbench recorded it "
                     "in the record): which bench made them is not proven")


def _tail(state: dict[str, Any], label: str, chains: Chains,
          problems: list[str], notes: list[str], *, strict: bool) -> bool:
    """The chain file ``state`` against the records: its last record here, with its digest;
    after it none (``strict``: the folder's own file, written before each record) or a note
    (the store's head, sent after the records). True when its last record is here."""
    n, name = state["seq"], shown(state["id"][:8])
    by_seq = chains.get(state["id"], {})
    seqs = sorted(by_seq)
    if not seqs or seqs[-1] < n:
        gone = ("no record of that chain is here" if not seqs else
                f"record(s) {_span(seqs[-1] + 1, n)} missing from its end")
        problems.append(f"{label} names record {n} of chain {name} "
                        f"({shown(state['last_record'])}): {gone}")
        return False
    at = by_seq.get(n, [])
    found = bool(at)
    if at and state["last_sha256"] not in {h for _r, h, _l in at}:
        problems.append(f"{label} names record {n} of chain {name} with another digest: not "
                        f"the record {n} here ({at[0][0]}): that record was replaced, or "
                        f"{label} was")
        found = False
    if seqs[-1] > n:
        after = _records(n + 1, seqs[-1])
        if strict:
            problems.append(f"{label} names record {n} of chain {name} as the last, but "
                            f"{after} {'is' if seqs[-1] == n + 1 else 'are'} here after the "
                            f"last one: {label} was rewound or put back from an older copy")
        else:
            notes.append(f"chain {name}: {after} came after {label} (sent after it, or not "
                         "sent yet): whether records came after them cannot be proven")
    return found


def _records(a: int, b: int) -> str:
    return f"record {a}" if a == b else f"records {a}-{b}"


def _span(a: int, b: int) -> str:
    return str(a) if a == b else f"{a}-{b}"


def _gaps(seqs: list[int]) -> str:
    """The numbers missing between consecutive ones of a sorted list, as "2, 5-9"."""
    return ", ".join(_span(a + 1, b - 1) for a, b in itertools.pairwise(seqs)
                     if b - a > 1)
