"""`ssdbench verify-record FILE`: check an erase record's Ed25519 signature and that a key
the auditor trusts made it (``--key``, ``--trusted``, or a trusted-keys file);
`ssdbench verify-record --chain DIR [--head FILE]`: every record under DIR, their bench and
their hash chain, its tail against the store's chain head.

Every file named here is opened without blocking and read only when it is a regular file
(a FIFO hung it); every line printed goes through :func:`ssdbench.untrusted.shown` (a
record, record-chain.json or a folder name may hold ESC, BEL or CR)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssdbench.exitcodes import ExitCode
from ssdbench.untrusted import shown

LINE_LIMIT = 4000  # a printed line is cut there (a forged record's fields are long)


def _say(text: str, err: bool = False) -> None:
    print(shown(text, LINE_LIMIT), file=sys.stderr if err else sys.stdout)

# where an auditor's trusted lab keys are looked for when neither --key nor --trusted is given
TRUSTED_KEYS = (Path("~/.config/ssdbench/trusted-keys"), Path("/etc/ssdbench/trusted-keys"))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify-record",
        help="check the signature of an erase record (erase-record.json)",
        description=(
            "Check an erase record written by the erase plan (erase-record.json): the file "
            "must be byte for byte as ssdbench wrote it, its Ed25519 signature must match "
            "its content, and the key that signed it must be one you trust: --key (the "
            "lab's public key), or a trusted-keys file (--trusted, else "
            "~/.config/ssdbench/trusted-keys or /etc/ssdbench/trusted-keys: one key "
            "fingerprint SHA256:... or PEM key file per line). A record signed by a key "
            "you did not name proves only that it was not changed after whoever made that "
            "key signed it. Prints what the record says (result, drive, serial, times) and "
            "the signer. Exit status 0 when the record is intact and signed by a trusted "
            "key; 1 when it was changed, is unsigned, was signed by another key or no "
            "trusted key was given; 2 when FILE, a key or the head cannot be read or is not "
            "a regular file (a FIFO is refused, never waited on). With --chain DIR: "
            "every erase-record.json under DIR (a bench's results folder) the same way, and "
            "the chain they form (each record holds the SHA-256 of the folder's record "
            "before it) and their bench (each record names the bench, by the results "
            "folder's random bench id and the bench's name): a record missing, twice, "
            "changed, out of order or of another bench is named; exit 0 only when every "
            "record is intact, trusted, of this folder's bench and in an unbroken chain. "
            "record-chain.json on a stick is not signed: the last records deleted together "
            "with it rewound leave no trace, and the output says that the tail cannot be "
            "proven; --head FILE (the lab store's copy, <bench>/_bench/record-chain.json, "
            "sent with every record) proves it: a record up to it missing exits 1. DIR may "
            "also be a copy of the store's <bench>/ folder (its head in _bench/)."
        ),
    )
    parser.add_argument("file", metavar="FILE", type=Path, nargs="?", help="erase-record.json")
    parser.add_argument("--chain", metavar="DIR", type=Path,
                        help="check every record under DIR and their hash chain")
    parser.add_argument("--key", metavar="PEM", type=Path,
                        help="the lab's public (or private) key: the record must be signed "
                             "by it")
    parser.add_argument("--trusted", metavar="FILE", type=Path,
                        help="a trusted-keys file: the record must be signed by one of them")
    parser.add_argument("--head", metavar="FILE", type=Path,
                        help="with --chain: the lab store's chain head (its copy of "
                             "record-chain.json, <bench>/_bench/record-chain.json): every "
                             "record up to it must be under DIR")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ssdbench.record.chain import MAX_RECORD_BYTES, MAX_STATE_BYTES, parse_head
    from ssdbench.record.sign import (
        SigningError,
        public_key_fingerprint,
        read_regular,
        trusted_fingerprints,
        verify_record_bytes,
    )

    if (args.file is None) == (args.chain is None):
        _say("ssdbench verify-record: give FILE or --chain DIR (one of them)", err=True)
        return int(ExitCode.USAGE)
    if args.head is not None and args.chain is None:
        _say("ssdbench verify-record: --head goes with --chain DIR", err=True)
        return int(ExitCode.USAGE)
    data = head = b""
    try:
        if args.file is not None:
            data = read_regular(args.file, MAX_RECORD_BYTES)
        if args.head is not None:
            head = read_regular(args.head, MAX_STATE_BYTES)
    except OSError as exc:
        _say(f"ssdbench verify-record: {exc.filename or args.file}: {exc.strerror or exc}",
             err=True)
        return int(ExitCode.USAGE)
    if args.head is not None and (len(head) > MAX_STATE_BYTES or parse_head(head) is None):
        _say(f"ssdbench verify-record: --head {args.head}: not a record chain ssdbench wrote "
             "(the store's <bench>/_bench/record-chain.json)", err=True)
        return int(ExitCode.USAGE)
    if args.chain is not None and not args.chain.is_dir():
        _say(f"ssdbench verify-record: --chain {args.chain}: not a folder", err=True)
        return int(ExitCode.USAGE)
    anchors: set[str] = set()
    anchor = ""
    try:
        if args.key is not None:
            anchors.add(public_key_fingerprint(args.key))
            anchor = f"--key {args.key}"
        trusted = args.trusted
        if trusted is None and args.key is None:  # the default place, when none is named
            trusted = next((p.expanduser() for p in TRUSTED_KEYS if p.expanduser().is_file()),
                           None)
        if trusted is not None:
            anchors |= trusted_fingerprints(trusted)
            anchor = anchor + (" and " if anchor else "") + f"the trusted keys in {trusted}"
    except OSError as exc:
        _say(f"ssdbench verify-record: {exc.filename or ''}: {exc.strerror or exc}", err=True)
        return int(ExitCode.USAGE)
    except (ValueError, SigningError) as exc:
        _say(f"ssdbench verify-record: {exc}", err=True)
        return int(ExitCode.USAGE)
    if args.chain is not None:
        return _chain(args.chain, anchors, anchor, head if args.head is not None else None)
    if len(data) > MAX_RECORD_BYTES:
        _say(f"ssdbench verify-record: {args.file}: FAILED: larger than 4 MiB: not a record",
             err=True)
        return int(ExitCode.FAILURE)
    verdict = verify_record_bytes(data)
    if verdict.summary:
        _say(f"{args.file}: says: {verdict.summary}")
    if not verdict.ok:
        _say(f"ssdbench verify-record: {args.file}: FAILED: {verdict.message}", err=True)
        return int(ExitCode.FAILURE)
    if not anchors:
        _say(f"ssdbench verify-record: {args.file}: signature intact (key "
             f"{verdict.fingerprint}) but the signer is NOT trusted: no --key, --trusted "
             "or trusted-keys file names a key (anyone can make a key and sign a record)",
             err=True)
        return int(ExitCode.FAILURE)
    if verdict.fingerprint not in anchors:
        _say(f"ssdbench verify-record: {args.file}: FAILED: signed by key "
             f"{verdict.fingerprint}, not by {anchor}", err=True)
        return int(ExitCode.FAILURE)
    _say(f"{args.file}: OK: {verdict.message}, a key of {anchor}")
    return int(ExitCode.OK)


def _chain(folder: Path, anchors: set[str], anchor: str, head: bytes | None) -> int:
    from ssdbench.record.chain import check_chain

    report = check_chain(folder, anchors or None, head)
    for line in report.lines:
        _say(f"{folder}: {line}")
    for line in report.notes:
        _say(f"{folder}: note: {line}")
    if not report.ok:
        _say(f"ssdbench verify-record: {folder}: FAILED: the records, their bench or their "
             "chain are not intact (above)", err=True)
        return int(ExitCode.FAILURE)
    if not anchors:
        _say(f"ssdbench verify-record: {folder}: records and chain intact but the signer is "
             "NOT trusted: no --key, --trusted or trusted-keys file names a key", err=True)
        return int(ExitCode.FAILURE)
    tail = ("every record up to the store's chain head present" if report.tail_proven else
            "its tail not proven (note above)")
    _say(f"{folder}: OK: every record intact, signed by a key of {anchor}, of this folder's "
         f"bench, in an unbroken chain, {tail}")
    return int(ExitCode.OK)
