"""The Secure Boot edition (issue #45): the dev image with Debian's signed shim, GRUB and kernel
on its EFI path, booted from the emulated USB stick by OVMF with Secure Boot enforcing and
Microsoft's keys enrolled (run-qemu.sh --secure-boot), as a PC ships; then a plan and the
drive tools under the kernel's lockdown. The second boot is the same firmware refusing the
same stick with the kernel's signature stripped, so the first boot's success is the
signatures' doing. docs/image.md "Secure Boot edition" has the table this test measures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ssdbench.system import SystemRunner
from tests.e2e.rig import (
    DEV_IMAGE_DIR,
    DEV_IMAGE_SB,
    Boot,
    QmpAt,
    boot,
    partitions,
)

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow]

GUEST = Path(__file__).with_name("guest-secure-boot.sh")
GUEST_CMD = "sh /mnt/ssdresults/guest-secure-boot.sh"
NVME_SERIAL = "E2ESBNVME01"
SATA_SERIAL = "E2ESBSATA01"
SATA_MODEL = "SB LOCKDOWN SSD"  # the guest script finds the drive by this model
# What shim's verifier in Debian's signed GRUB prints when the kernel is not signed by a key
# shim trusts, then what `initrd` says with no kernel loaded (measured 2026-11-28).
REFUSED = "bad shim signature"
NO_KERNEL = "you need to load the kernel first"
_PROBE = re.compile(r"^(\S+) rc=(\d+)$", re.M)


@pytest.fixture(scope="module")
def enforcing(dev_image: Path, tmp_path_factory: pytest.TempPathFactory) -> Boot:
    return boot(
        tmp_path_factory.mktemp("secure-boot"),
        secure_boot=True,
        image=DEV_IMAGE_SB,
        nvme=(f"256M,serial={NVME_SERIAL}",),
        sata=(f"64M,serial={SATA_SERIAL},model={SATA_MODEL}",),
        put=(GUEST,),
        cmd=GUEST_CMD,
    )


def _probes(b: Boot) -> dict[str, tuple[int, str]]:
    """The guest's ``name rc=N`` lines with the lines each tool printed."""
    text = b.section("tools")
    found = list(_PROBE.finditer(text))
    out = {}
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        out[m.group(1)] = (int(m.group(2)), text[m.end():end])
    return out


def test_boots_from_the_stick_with_secure_boot_enforcing(enforcing: Boot) -> None:
    b = enforcing
    assert b.returncode == 0, f"QEMU did not power off cleanly (rc {b.returncode}):\n{b.tail()}"
    assert b.ready, f"no 'ssdbench ready' on the serial console:\n{b.tail()}"
    assert b.cmd_rc == 0, b.cmd_output
    # The firmware said so to the kernel's EFI stub, and the variable says so in the guest:
    # attributes (4 bytes), then 1 = enforcing.
    assert "EFI stub: UEFI Secure Boot is enabled." in b.serial, b.tail()
    raw = b.section("secureboot-var").split()
    assert len(raw) == 5 and all(x.isdigit() for x in raw), b.cmd_output
    assert int(raw[-1]) == 1, raw
    assert "secureboot: Secure boot enabled" in b.section("kernel-log")
    lockdown = b.section("lockdown")
    assert "[integrity]" in lockdown or "[confidentiality]" in lockdown, lockdown
    # Through shim and GRUB from the stick (no -kernel), the image this build made.
    assert "BOOT_IMAGE=/boot/vmlinuz" in b.section("cmdline")
    assert "Welcome to GRUB!" in b.serial
    assert "(image " + (DEV_IMAGE_DIR / "image-id").read_text().strip() + "," in b.serial
    # Debian's modules are signed: they load under lockdown and nothing is tainted.
    assert b.section("tainted") == "0"
    assert {"nvme", "ahci", "usb_storage", "vfat"} <= set(b.section("modules").split())
    assert b.bystander_sha_after == b.bystander_sha_before
    assert b.boot_partition_sha_after == b.boot_partition_sha_before


def test_runs_a_plan_under_lockdown(enforcing: Boot) -> None:
    plan = enforcing.section("plan")
    assert "plan rc=0" in plan, plan
    assert "diagnose: done" in plan, plan
    # the plan's read scan and random reads ran through fio on the drive
    fio = enforcing.drive_dir(NVME_SERIAL) / "diagnose" / "fio"
    assert (fio / "readscan.json").is_file() and (fio / "randread.json").is_file(), \
        sorted(p.name for p in fio.parent.rglob("*"))


def test_drive_tools_reach_the_drives_under_lockdown(enforcing: Boot) -> None:
    probes = _probes(enforcing)
    # Lockdown is really on: /dev/mem is refused, and says why.
    rc, out = probes["dev-mem-read"]
    assert rc != 0 and "Operation not permitted" in out, out
    # SG_IO (ATA pass-through: hdparm, smartctl -d sat) and the NVMe admin ioctl (nvme-cli,
    # smartctl) are not restricted: each reached the drive.
    for name in ("hdparm-identify", "hdparm-security-set-pass", "hdparm-security-erase",
                 "smartctl-ata-sgio", "smartctl-nvme", "nvme-id-ctrl", "nvme-format"):
        rc, out = probes[name]
        assert rc == 0, (name, out)
    assert "Success formatting namespace:1" in probes["nvme-format"][1]
    # QEMU 7.2's NVMe controller has no Sanitize: the controller's own answer, not the kernel's.
    rc, out = probes["nvme-sanitize"]
    assert rc == 0 or "Invalid Command Opcode" in out, out
    for name, (_rc, out) in probes.items():
        if name != "dev-mem-read":
            assert "Operation not permitted" not in out, (name, out)
    # The kernel logged a lockdown refusal only for /dev/mem (and hibernation at boot).
    refused = [line for line in enforcing.section("lockdown-log").splitlines()
               if line.startswith("Lockdown:")]
    assert refused and all("/dev/mem" in line or "hibernation" in line for line in refused), refused


def test_same_firmware_refuses_an_unsigned_kernel(dev_image: Path, tmp_path: Path) -> None:
    """The stick with only the kernel's signature stripped: shim's verifier in GRUB refuses
    it and no kernel starts. QEMU is stopped at GRUB's message (no wait for a timeout)."""
    image = tmp_path / "unsigned-kernel.img"
    run = SystemRunner().run
    run(["cp", "--sparse=always", str(DEV_IMAGE_SB), str(image)], timeout=120)
    boot_off = partitions(image)[0].start_bytes
    kernel = tmp_path / "vmlinuz"
    env_stick = f"{image}@@{boot_off}"
    run(["mcopy", "-n", "-i", env_stick, "::/boot/vmlinuz", str(kernel)],
        env={"MTOOLS_SKIP_CHECK": "1"}, timeout=60)
    run(["sbattach", "--remove", str(kernel)], timeout=60)
    listed = run(["sbverify", "--list", str(kernel)], ok_codes=range(256), timeout=60)
    assert "No signature table" in listed.text + listed.stderr_text, listed.text
    run(["mcopy", "-o", "-i", env_stick, str(kernel), "::/boot/vmlinuz"],
        env={"MTOOLS_SKIP_CHECK": "1"}, timeout=60)
    b = boot(
        tmp_path / "qemu",
        secure_boot=True,
        image=image,
        entry="interactive",
        timeout_s=240,
        qmp_at=(QmpAt(re.escape(NO_KERNEL), [{"execute": "quit"}]),),
    )
    assert "Welcome to GRUB!" in b.serial, b.tail()
    assert REFUSED in b.serial, b.tail()
    assert NO_KERNEL in b.serial, b.tail()
    assert "EFI stub" not in b.serial and "Linux version" not in b.serial, b.tail()
    assert not b.ready
    assert b.qmp_fired, "QEMU was not stopped at GRUB's refusal"
