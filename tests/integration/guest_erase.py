"""Runs INSIDE the QEMU guest (see qemu_helper.py): a real erase of the emulated NVMe drive.

    python guest_erase.py OUT_DIR [LBS]

Uses the live Runner, records every command (argv, exit code, stdout, stderr) into
OUT_DIR/recording/ (the replay format of tests/unit/erase/replay.py), erases
/dev/nvme0n1 with nvme-format-user-data and verification, and writes OUT_DIR/record.json.
Then a no-op check: markers written and checked without an erase must be caught.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ssdbench.devices.nvme import parse_id_ctrl_json, parse_id_ns_json
from ssdbench.erase import EraseOptions, EraseTarget, MemoryPasswordJournal, erase_drive
from ssdbench.erase.adapter import nvme_caps
from ssdbench.erase.model import VerificationFailed
from ssdbench.erase.verify import check_markers, write_markers
from ssdbench.system import CommandError, Host, LiveFS, Result, SystemRunner

NONCE = bytes.fromhex("5ca1ab1e0ddba110")


class RecordingRunner(SystemRunner):
    def __init__(self, out: Path, scratch: Path) -> None:
        super().__init__()
        self.out = out
        self.scratch = str(scratch)
        self.calls: list[dict[str, object]] = []
        out.mkdir(parents=True, exist_ok=True)

    def run(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        n = len(self.calls)
        entry: dict[str, object] = {
            "argv": [a.replace(self.scratch, "{SCRATCH}") for a in argv],
        }
        try:
            res = super().run(argv, ok_codes=range(256), timeout=timeout, env=env)
        finally:
            self.calls.append(entry)
        (self.out / f"{n:03d}.out").write_bytes(res.stdout)
        entry.update(
            returncode=res.returncode, stdout=f"{n:03d}.out", stderr=res.stderr_text
        )
        (self.out / "commands.json").write_text(json.dumps(self.calls, indent=1) + "\n")
        if res.returncode not in ok_codes:
            raise CommandError(
                res.argv, f"exit code {res.returncode}", returncode=res.returncode,
                stderr=res.stderr_text, stdout=res.stdout,
            )
        return res


def main() -> int:
    out = Path(sys.argv[1])
    scratch = out / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    runner = RecordingRunner(out / "recording", scratch)
    host = Host(runner, LiveFS())
    ctrl = parse_id_ctrl_json(runner.run(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"]).text)
    ns = parse_id_ns_json(runner.run(["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"]).text,
                          nsid=1, name="nvme0n1")
    assert ns.size_bytes is not None and ns.block_size is not None
    target = EraseTarget(
        path="/dev/nvme0n1", name="nvme0n1", transport="nvme", serial=ctrl.serial,
        model=ctrl.model, size_bytes=ns.size_bytes, logical_block_size=ns.block_size,
        nvme=nvme_caps(ctrl),
    )
    options = EraseOptions(nonce=NONCE)
    record = erase_drive(
        host, target, journal=MemoryPasswordJournal(), options=options, scratch=scratch
    )
    (out / "record.json").write_text(json.dumps(record.to_dict(), indent=1) + "\n")
    # No erase at all: the verification must catch it (on the real device).
    noop_host = Host(RecordingRunner(out / "recording-noop", scratch), LiveFS())
    markers = write_markers(noop_host, target, 4, nonce=NONCE, scratch=scratch)
    try:
        check_markers(noop_host, target, markers)
        noop = "not caught"
    except VerificationFailed as exc:
        noop = f"caught: {exc}"
    (out / "noop.txt").write_text(noop + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
