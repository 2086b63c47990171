"""The Kiosk entry with a bad ssdbench.toml on the stick: the serial console names the key,
the kiosk ends with exit code 2, and nothing was written to any drive or to the stick's
results (no run folder, no journal). This boot takes the Kiosk entry's whole path: firmware,
GRUB and the entry picked through grubenv (the kiosk quick plan's boot starts the entry's
kernel directly: its minutes under TCG are the run's critical path, issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.rig import Boot, boot_kiosk, sha256_file
from tests.e2e.scenarios import make_drive

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow]

SERIAL = "E2EBADCONF01"


def test_bad_kiosk_config_names_the_key_and_writes_nothing(dev_image: Path,
                                                          tmp_path: Path) -> None:
    drive, sha_before = make_drive(tmp_path / "nvme.img", SERIAL, pattern=True)
    # Selected and consented: a valid config would erase this drive. One key is misspelt.
    b: Boot = boot_kiosk(
        tmp_path,
        f'plan = "trim"\nselect = ["serial:{SERIAL}"]\ndestroy = ["{SERIAL}"]\n'
        'on_finish = "poweroff"\n\n[params]\ntorture_secondz = 5\n',
        nvme=(f"file={drive.path},serial={SERIAL}",),
        timeout_s=300,
    )
    assert b.returncode == 0, b.tail()
    # the Kiosk entry's boot flow: firmware, GRUB, the entry from grubenv, the config on the
    # stick read once the system was ready
    assert "--direct" not in b.qemu_argv  # through firmware and GRUB, not -kernel
    assert "firmware BIOS)" in b.serial, b.serial[:4000]
    assert "mode=kiosk" in b.serial, b.tail()
    assert b.seconds_until("ssdbench kiosk starting") > b.seconds_until("ssdbench ready")
    lines = [ln for ln in b.serial.splitlines() if ln.startswith("ssdbench kiosk:")]
    assert any("/mnt/ssdresults/ssdbench.toml [params]: `torture_secondz`: unknown key" in ln
               for ln in lines), b.tail()
    assert any("nothing was erased or written" in ln for ln in lines), b.tail()
    assert "ssdbench kiosk finished rc=2" in b.serial, b.tail()
    # nothing started: no stage line, no drive chosen
    assert f"{SERIAL}" not in "\n".join(
        ln for ln in b.serial.splitlines() if ln.startswith("ssdbench: ")), b.tail()
    # nothing written: the drive, the bystander, the boot partition, the results partition
    assert sha_before is not None
    assert sha256_file(drive.path) == sha_before, "the selected drive was written"
    assert b.bystander_sha_after == b.bystander_sha_before, "the bystander drive was written"
    assert b.boot_partition_sha_after == b.boot_partition_sha_before
    on_stick = sorted(p.name for p in b.results.iterdir())
    assert "ssdbench" not in on_stick and "state.json" not in on_stick, on_stick
    assert (b.results / "ssdbench.toml").read_text() == (tmp_path / "ssdbench.toml").read_text()
