"""`ssdbench verify-record FILE`: check an erase record's Ed25519 signature and that a key
the auditor trusts made it (``--key``, ``--trusted``, or a trusted-keys file);
`ssdbench verify-record --chain DIR`: every record under DIR, and their hash chain."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssdbench.exitcodes import ExitCode

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
            "trusted key was given; 2 when FILE or a key cannot be read. With --chain DIR: "
            "every erase-record.json under DIR (a bench's results folder) the same way, and "
            "the chain they form (each record holds the SHA-256 of the folder's record "
            "before it): a record missing, twice, changed or out of order is named; exit 0 "
            "only when every record is intact, trusted and in an unbroken chain."
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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ssdbench.record.sign import (
        SigningError,
        public_key_fingerprint,
        trusted_fingerprints,
        verify_record_bytes,
    )

    if (args.file is None) == (args.chain is None):
        print("ssdbench verify-record: give FILE or --chain DIR (one of them)", file=sys.stderr)
        return int(ExitCode.USAGE)
    data = b""
    if args.file is not None:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            print(f"ssdbench verify-record: {args.file}: {exc.strerror or exc}",
                  file=sys.stderr)
            return int(ExitCode.USAGE)
    elif not args.chain.is_dir():
        print(f"ssdbench verify-record: --chain {args.chain}: not a folder", file=sys.stderr)
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
    except (OSError, ValueError, SigningError) as exc:
        print(f"ssdbench verify-record: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    if args.chain is not None:
        return _chain(args.chain, anchors, anchor)
    verdict = verify_record_bytes(data)
    if verdict.summary:
        print(f"{args.file}: says: {verdict.summary}")
    if not verdict.ok:
        print(f"ssdbench verify-record: {args.file}: FAILED: {verdict.message}",
              file=sys.stderr)
        return int(ExitCode.FAILURE)
    if not anchors:
        print(f"ssdbench verify-record: {args.file}: signature intact (key "
              f"{verdict.fingerprint}) but the signer is NOT trusted: no --key, --trusted "
              "or trusted-keys file names a key (anyone can make a key and sign a record)",
              file=sys.stderr)
        return int(ExitCode.FAILURE)
    if verdict.fingerprint not in anchors:
        print(f"ssdbench verify-record: {args.file}: FAILED: signed by key "
              f"{verdict.fingerprint}, not by {anchor}", file=sys.stderr)
        return int(ExitCode.FAILURE)
    print(f"{args.file}: OK: {verdict.message}, a key of {anchor}")
    return int(ExitCode.OK)


def _chain(folder: Path, anchors: set[str], anchor: str) -> int:
    from ssdbench.record.chain import check_chain

    report = check_chain(folder, anchors or None)
    for line in report.lines:
        print(f"{folder}: {line}")
    if not report.ok:
        print(f"ssdbench verify-record: {folder}: FAILED: the records or their chain are not "
              "intact (above)", file=sys.stderr)
        return int(ExitCode.FAILURE)
    if not anchors:
        print(f"ssdbench verify-record: {folder}: records and chain intact but the signer is "
              "NOT trusted: no --key, --trusted or trusted-keys file names a key",
              file=sys.stderr)
        return int(ExitCode.FAILURE)
    print(f"{folder}: OK: every record intact, signed by a key of {anchor}, in an unbroken "
          "chain")
    return int(ExitCode.OK)
