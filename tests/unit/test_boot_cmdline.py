"""Every boot menu entry lets TRUSTED SEND/RECEIVE through to SATA drives
(libata.allow_tpm=1), so sedutil-cli can read a TCG drive's state and PSID revert it."""

from __future__ import annotations

import re
from pathlib import Path

GRUB = Path(__file__).resolve().parents[2] / "board" / "ssdbench" / "grub.cfg"


def test_every_menu_entry_has_libata_allow_tpm() -> None:
    text = GRUB.read_text(encoding="utf-8")
    base = re.search(r'set ssdbench_base="([^"]*)"', text)
    assert base is not None
    entries = re.findall(r"eval linux (.*)", text)
    assert len(entries) >= 5
    for line in entries:
        args = line.replace("$ssdbench_base", base.group(1)).split()
        assert "libata.allow_tpm=1" in args, line


def test_network_boot_gives_the_menu_s_kernel_arguments(tmp_path: Path) -> None:
    """scripts/netboot.sh's boot.ipxe boots with the stick menu's ssdbench_base (consoles,
    libata.allow_tpm=1): a bench booted from the network detects SEDs like one booted from a
    stick. Run on stand-in kernel/initramfs/iPXE files (the script only copies them)."""
    import subprocess

    for name in ("vmlinuz", "initrd.img", "undionly.kpxe", "ipxe.efi", "snponly.efi"):
        (tmp_path / name).write_bytes(b"stand-in")
    out = tmp_path / "out"
    done = subprocess.run(
        ["bash", str(GRUB.parents[2] / "scripts" / "netboot.sh"), "--out", str(out),
         "--kernel", str(tmp_path / "vmlinuz"), "--initrd", str(tmp_path / "initrd.img"),
         "--append", "ssdbench.bench=b1"],
        env={"PATH": "/usr/bin:/bin", "SSDBENCH_IPXE_DIR": str(tmp_path)},
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    kernel_line = next(ln for ln in (out / "boot.ipxe").read_text().splitlines()
                       if ln.startswith("kernel "))
    assert "libata.allow_tpm=1" in kernel_line.split()
    assert "console=ttyS0,115200n8" in kernel_line and kernel_line.endswith("ssdbench.bench=b1 || goto retry")
