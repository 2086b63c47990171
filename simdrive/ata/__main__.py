"""``python3 -m simdrive.ata create DIR ...`` (anywhere) and ``serve DIR`` (as root in the
guest: configfs, tcm_loop, then answer commands until the machine stops)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from simdrive.ata.drive import AtaDrive, Config
from simdrive.ata.nbd import NbdBackend
from simdrive.ata.sas import BLOCK_SIZES, SANITIZE_NAMES, SasTarget
from simdrive.ata.scsi import SatTarget
from simdrive.ata.tcmu import Ring, attach_loopback, create_backstore, find_block_device
from simdrive.identity import FIRMWARE_BYTES, IDENTITIES, MODEL_BYTES, SERIAL_BYTES, named


def find_generic_device(dev: str, timeout_s: float = 10.0) -> str:
    """The /dev/sgN of the SCSI device behind ``dev`` (/dev/sdX)."""
    where = Path("/sys/block") / Path(dev).name / "device/scsi_generic"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        names = sorted(p.name for p in where.glob("sg*")) if where.exists() else []
        if names:
            return f"/dev/{names[0]}"
        time.sleep(0.05)
    raise RuntimeError(f"no scsi_generic device under {where}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m simdrive.ata", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create", help="a new drive folder (config.json, sparse data.img)")
    c.add_argument("dir", type=Path)
    c.add_argument("--size-mib", type=int, default=16)
    c.add_argument("--identity", choices=tuple(IDENTITIES), default="ordinary",
                   help="model, serial and firmware from simdrive/identity.py (hostile: markup, "
                        "a line break, U+202E as raw bytes); --serial/--model/--firmware win")
    c.add_argument("--serial", default=None)
    c.add_argument("--no-serial", action="store_true",
                   help="report no serial (blanks in IDENTIFY and in the SCSI serial page)")
    c.add_argument("--model", default=None)
    c.add_argument("--firmware", default=None)
    c.add_argument("--frozen", action="store_true", help="security frozen at every power-on")
    c.add_argument("--no-sanitize", action="store_true",
                   help="no Sanitize feature set (IDENTIFY word 59; SANITIZE aborted); "
                        "SAS: no SANITIZE at all (not in REPORT SUPPORTED OPERATION CODES, "
                        "ILLEGAL REQUEST invalid opcode)")
    c.add_argument("--power-cut-after", choices=["", "set-pass"], default="",
                   help="cut the guest's power when SECURITY SET PASSWORD arrives")
    c.add_argument("--user-password", default=None,
                   help="start with this user password set (the drive powers on locked)")
    c.add_argument("--smart", choices=["healthy", "worn"], default="healthy",
                   help="the SMART profile: attributes, status and self-test results")
    c.add_argument("--self-test-seconds", type=float, default=12.0,
                   help="how long a short self-test runs (extended: four times as long)")
    c.add_argument("--personality", choices=["ata", "sas"], default="ata",
                   help="ata: a SATA SSD behind SAT (hdparm); sas: a SAS SSD answering SCSI "
                        "itself (sg3_utils, smartctl; simdrive/ata/sas.py)")
    c.add_argument("--block-size", type=int, choices=BLOCK_SIZES, default=512,
                   help="sas: the logical block size it starts with (520: as arrays format)")
    c.add_argument("--protection-type", type=int, choices=[0, 1, 2, 3], default=0,
                   help="sas: the protection type READ CAPACITY(16) reports")
    c.add_argument("--sanitize-seconds", type=float, default=8.0,
                   help="sas: how long a SANITIZE runs (progress in REQUEST SENSE)")
    c.add_argument("--format-seconds", type=float, default=6.0,
                   help="sas: how long a FORMAT UNIT runs")
    c.add_argument("--unsupported-sanitize", action="append", default=[],
                   choices=sorted(SANITIZE_NAMES.values()),
                   help="sas: a sanitize service action the drive lacks (repeatable)")
    c.add_argument("--failing-sanitize", action="append", default=[],
                   choices=sorted(SANITIZE_NAMES.values()),
                   help="sas: a sanitize that ends in sanitize failure mode (repeatable)")
    s = sub.add_parser("serve", help="attach the drive to this kernel and answer its commands")
    s.add_argument("dir", type=Path)
    s.add_argument("--ready", type=Path, required=True, help="write the /dev/sdX here when up")
    s.add_argument("--log", type=Path, required=True, help="one line per ATA command")
    s.add_argument("--nbd", default="", metavar="SOCKET",
                   help="keep the data in simdrive (scripts/simdrive start's DIR/nbd.sock) "
                   "instead of DIR/data.img")
    args = p.parse_args(argv)
    if args.cmd == "create":
        ident = named(args.identity)
        model = ident.model if args.model is None else args.model
        serial = "" if args.no_serial else ident.serial if args.serial is None else args.serial
        firmware = ident.firmware if args.firmware is None else args.firmware
        for name, value, limit in (("model", model, MODEL_BYTES), ("serial", serial, SERIAL_BYTES),
                                   ("firmware", firmware, FIRMWARE_BYTES)):
            if len(value.encode("utf-8")) > limit:
                p.error(f"--{name} {value!r}: an ATA {name} holds {limit} bytes")
        drive = AtaDrive.create(args.dir, Config(
            model=model, serial=serial, firmware=firmware, size_bytes=args.size_mib << 20,
            frozen_at_power_on=args.frozen, power_cut_after=args.power_cut_after,
            smart=args.smart, self_test_seconds=args.self_test_seconds,
            sanitize=not args.no_sanitize, personality=args.personality,
            block_size=args.block_size, protection_type=args.protection_type,
            sanitize_seconds=args.sanitize_seconds, format_seconds=args.format_seconds,
            unsupported_sanitize=args.unsupported_sanitize,
            failing_sanitize=args.failing_sanitize,
        ))
        if args.user_password is not None:
            drive.nv.user_password = args.user_password.encode().ljust(32, b"\0").hex()
            drive._save()
        return 0
    backend = None
    if args.nbd:
        backend = NbdBackend(args.nbd)
        cfg = json.loads((args.dir / "config.json").read_text())
        if backend.size != cfg["size_bytes"]:
            p.error(f"{args.nbd}: the NBD export has {backend.size} bytes, the drive "
                    f"{cfg['size_bytes']}")
    drive = AtaDrive(args.dir, backend)
    log = open(args.log, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives until power-off

    def emit(line: str) -> None:
        log.write(f"{time.strftime('%H:%M:%S')} {line}\n")
        log.flush()

    sas = drive.config.personality == "sas"
    target: SatTarget | SasTarget
    if sas:
        target = SasTarget(drive, emit)
        emit(f"power-on: SAS, {target.blocks} blocks of {target.block_size} bytes, protection "
             f"type {target.protection_type}")
    else:
        emit(f"power-on: security word 128 = {drive.security_word():#06x} "
             f"(enabled={drive.enabled} locked={drive.vol.locked} frozen={drive.vol.frozen})")
        target = SatTarget(drive, emit)
    uio = create_backstore("ataemu", drive.config.size_bytes)
    ring = Ring(uio)
    import threading

    threading.Thread(target=ring.serve, args=(target,), daemon=True).start()
    attach_loopback("ataemu")
    dev = find_block_device()
    if sas:  # a 520-byte drive has capacity 0 in sd: sg3_utils reach it through /dev/sgN
        subprocess.run(["modprobe", "sg"], check=False)
        sg = find_generic_device(dev)
        emit(f"attached as {dev} and {sg} ({uio})")
        args.ready.write_text(f"{dev}\n{sg}\n")
    else:
        emit(f"attached as {dev} ({uio})")
        args.ready.write_text(dev + "\n")
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
