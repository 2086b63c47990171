"""A real erase of a real (emulated) NVMe drive: QEMU's NVMe controller, the host's
nvme-cli and dd, ssdbench's erase_drive with verification — end to end in about a minute
(TCG, no KVM). The guest also checks that markers NOT erased are caught."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.integration.qemu_helper import run_guest

# The guest chroots into the host root, so the host's paths work as they are.
GUEST_SCRIPT = Path(__file__).with_name("guest_erase.py")
JOB = f"""
export PYTHONDONTWRITEBYTECODE=1
nvme id-ns /dev/nvme0n1 -o json > id-ns-before.json
{sys.executable} {GUEST_SCRIPT} /run/out/result
echo "guest_erase rc=$?"
nvme id-ns /dev/nvme0n1 -o json > id-ns-after.json
"""


def test_real_format_nvm_with_verification_in_qemu(tmp_path: Path) -> None:
    run = run_guest(
        JOB, tmp_path / "vm", nvme_size_mib=16, logical_block_size=4096, timeout_s=300
    )
    assert run.returncode == 0, run.console[-2000:] + run.read("job.log")[-3000:]
    log = run.read("job.log")
    assert "guest_erase rc=0" in log, log[-3000:]
    record = json.loads(run.read("result/record.json"))
    assert record["method"] == "nvme-format-user-data"
    assert record["secure"] is True and record["verified"] is True
    assert record["verification"]["markers"] == 16
    assert record["verification"]["survivors"] == []
    assert "nvme format --ses=1 --lbaf=4 returned success" in record["steps"]
    before = json.loads(run.read("id-ns-before.json"))
    after = json.loads(run.read("id-ns-after.json"))
    assert before["flbas"] == after["flbas"] == 4  # the 4Kn format was kept
    assert run.read("result/noop.txt").startswith("caught: ")
    commands = json.loads(run.read("result/recording/commands.json"))
    fmt = [c for c in commands if c["argv"][:2] == ["nvme", "format"]]
    assert len(fmt) == 1 and fmt[0]["returncode"] == 0
