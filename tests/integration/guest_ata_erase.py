"""Runs INSIDE the QEMU guest (test_ata_emu_qemu.py): ssdbench's erase of the emulated ATA
drive (simdrive/ata behind tcm_loop) with the real hdparm.

    python guest_ata_erase.py OUT_DIR DEVICE [METHOD [FALLBACK]]

Discovery with the drive's ATA pass-through opt-in, then ``erase_drive`` with the password
journal in OUT_DIR/journal.json (kept across boots) and every command in OUT_DIR/log.txt.
Writes OUT_DIR/record.json on success, OUT_DIR/error.txt on an EraseError.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ssdbench.devices import discover
from ssdbench.erase import EraseError, EraseOptions, erase_drive
from ssdbench.erase.adapter import target_from_drive
from ssdbench.erase.journal import JsonPasswordJournal
from tests.integration.guest_common import guest_host

NONCE = bytes.fromhex("a7a5ec0de0000001")


def main() -> int:
    out, device = Path(sys.argv[1]), sys.argv[2]
    method = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    fallback = sys.argv[4] if len(sys.argv) > 4 else "fail"  # erase_fallback: "overwrite"
    host, scratch = guest_host(out)
    drives = {d.path: d for d in discover(host, ata_passthrough={device})}
    drive = drives[device]
    (out / "drive.json").write_text(json.dumps(drive.to_json(), indent=1) + "\n")
    target = target_from_drive(drive)
    try:
        record = erase_drive(
            host, target, method=method, journal=JsonPasswordJournal(out / "journal.json"),
            options=EraseOptions(nonce=NONCE, poll_interval_s=0.2, erase_fallback=fallback,
                                 overwrite_verify_percent=10.0), scratch=scratch,
        )
    except EraseError as exc:
        (out / "error.txt").write_text(f"{type(exc).__name__}: {exc}\n")
        return 0
    (out / "record.json").write_text(json.dumps(record.to_dict(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
