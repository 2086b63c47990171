"""Runs INSIDE the QEMU guest (test_sas_emu_qemu.py): ssdbench's erase of the emulated SAS
drive (simdrive/ata's SAS personality behind tcm_loop) with the real sg3_utils.

    python guest_sas_erase.py OUT_DIR SERIAL METHOD [REFORMAT_TO]

Discovery as ``ssdbench list`` runs it (a 520-byte drive has capacity 0 and is listed with
its problem line), the drive found by its serial, then ``erase_drive`` with METHOD
(scsi-sanitize, scsi-sanitize-block, ...) and, with REFORMAT_TO, the reformat the plan's
``scsi_reformat_512`` allows; every command in OUT_DIR/log.txt.
Writes OUT_DIR/record.json on success, OUT_DIR/error.txt on an EraseError.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ssdbench.devices import discover, find_drive
from ssdbench.erase import EraseError, EraseOptions, MemoryPasswordJournal, erase_drive
from ssdbench.erase.adapter import target_from_drive
from tests.integration.guest_common import guest_host

NONCE = bytes.fromhex("a7a5ec0de0000044")


def main() -> int:
    out, serial, method = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    reformat = int(sys.argv[4]) if len(sys.argv) > 4 else None
    host, scratch = guest_host(out)
    drive = find_drive(discover(host, ata_passthrough=set()), serial)
    (out / "drive.json").write_text(json.dumps(drive.to_json(), indent=1) + "\n")
    progress: list[str] = []
    try:
        record = erase_drive(
            host, target_from_drive(drive), method=method, journal=MemoryPasswordJournal(),
            progress=lambda p: progress.append(f"{p.fraction} {p.message}"),
            options=EraseOptions(nonce=NONCE, poll_interval_s=0.5), scratch=scratch,
            scsi_reformat_to=reformat,
        )
    except EraseError as exc:
        (out / "error.txt").write_text(f"{type(exc).__name__}: {exc}\n")
        return 0
    finally:
        (out / "progress.txt").write_text("\n".join(progress) + "\n")
    (out / "record.json").write_text(json.dumps(record.to_dict(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
