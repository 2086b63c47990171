"""`ssdbench verify-record FILE`: check an erase record's Ed25519 signature (and, with
``--key``, that the lab's key made it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssdbench.exitcodes import ExitCode


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify-record",
        help="check the signature of an erase record (erase-record.json)",
        description=(
            "Check an erase record written by the erase plan (erase-record.json): the file "
            "must be byte for byte as ssdbench wrote it and its Ed25519 signature must match "
            "its content. Prints the signing key's fingerprint; compare it with the lab's "
            "published one, or pass --key. Exit status 0 when the record is intact and "
            "signed, 1 when it was changed, is unsigned or was signed by another key, 2 "
            "when FILE cannot be read."
        ),
    )
    parser.add_argument("file", metavar="FILE", type=Path, help="erase-record.json")
    parser.add_argument("--key", metavar="PEM", type=Path,
                        help="the lab's public (or private) key: the record must be signed "
                             "by it")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ssdbench.record.sign import SigningError, public_key_fingerprint, verify_record_bytes

    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"ssdbench verify-record: {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    expected = None
    if args.key is not None:
        try:
            expected = public_key_fingerprint(args.key)
        except (OSError, ValueError, SigningError) as exc:
            print(f"ssdbench verify-record: --key {args.key}: {exc}", file=sys.stderr)
            return int(ExitCode.USAGE)
    verdict = verify_record_bytes(data, expected_fingerprint=expected)
    if not verdict.ok:
        print(f"ssdbench verify-record: {args.file}: FAILED: {verdict.message}",
              file=sys.stderr)
        return int(ExitCode.FAILURE)
    print(f"{args.file}: OK: {verdict.message}")
    return int(ExitCode.OK)
