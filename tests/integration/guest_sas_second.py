"""INSIDE the QEMU guest, as root: a second emulated SAS drive beside the one `python3 -m
simdrive.ata serve` attached, for a test that needs two drives in one boot. The same
SasTarget and TCMU ring as `serve`, on its own backstore (user_1/ataemu2), tcm_loop target
and nexus; once sd has it, writes its /dev/sdX and /dev/sgN to READY and answers until the
guest powers off.

    python3 tests/integration/guest_sas_second.py DRIVE_DIR READY LOG FIRST_DEV
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from simdrive.ata.__main__ import find_generic_device
from simdrive.ata.drive import AtaDrive
from simdrive.ata.sas import SasTarget
from simdrive.ata.tcmu import TARGET, Ring, create_backstore

NAME, HBA = "ataemu2", 1
WWN, NEXUS = "naa.5001405000000a2a", "naa.5001405000000b2b"  # serve's: ...a1a, ...b1b


def attach() -> None:
    """tcm_loop target ``WWN`` with its own nexus and the backstore as LUN 0 (as
    simdrive.ata.tcmu.attach_loopback does for the first drive)."""
    tpg = TARGET / "loopback" / WWN / "tpgt_1"
    tpg.mkdir(parents=True)
    (tpg / "nexus").write_text(NEXUS, encoding="ascii")
    lun = tpg / "lun" / "lun_0"
    lun.mkdir(parents=True)
    os.symlink(TARGET / "core" / f"user_{HBA}" / NAME, lun / NAME)


def second_disk(first: str, timeout_s: float = 20.0) -> str:
    """The /dev/sdX on a tcm_loop host that is not ``first``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for blk in sorted(Path("/sys/block").glob("sd*")):
            if (f"/dev/{blk.name}" != first
                    and "/tcm_loop" in os.path.realpath(blk / "device")):
                return f"/dev/{blk.name}"
        time.sleep(0.05)
    raise RuntimeError("no second /dev/sdX on a tcm_loop host appeared")


def main(argv: list[str]) -> int:
    folder, ready, log_path, first = Path(argv[1]), Path(argv[2]), Path(argv[3]), argv[4]
    drive = AtaDrive(folder)
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - until power-off

    def emit(line: str) -> None:
        log.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    target = SasTarget(drive, emit)
    uio = create_backstore(NAME, drive.config.size_bytes, hba=HBA)
    threading.Thread(target=Ring(uio).serve, args=(target,), daemon=True).start()
    attach()
    dev = second_disk(first)
    subprocess.run(["modprobe", "sg"], check=False)
    sg = find_generic_device(dev)
    emit(f"attached as {dev} and {sg} ({uio})")
    ready.write_text(f"{dev}\n{sg}\n", encoding="utf-8")
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
