"""USB-attached drives and a hard disk in a QEMU guest (#44): QEMU's ``usb-storage`` (Bulk-Only) and
``usb-uas`` (UAS) bridges answer no ATA pass-through, as many real enclosures do. ssdbench
names the bridge for what it is (no firmware erase, no SMART, why) and, with
``erase_fallback = "overwrite"``, Clears the drive by overwrite: every block written through
the real kernel's usb-storage/uas drivers, a sample read back, a signed PASS record that says
Clear (overwrite) with NIST's note. Beside them a rotational SCSI disk (``scsi-hd`` with
``rotation_rate=7200`` on virtio-scsi) whose LBA 40960 does not read (QEMU's ``blkdebug``
answers EIO there): the surface scan reads it through the real kernel, names that sector by
LBA and draws the scan in its report. One boot of the minimal guest (tests/integration/
qemu_helper.py, Debian's kernel; about two minutes under TCG).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ssdbench.erase import overwrite as ow
from tests.integration.qemu_helper import GuestRun, run_guest

pytestmark = [pytest.mark.root, pytest.mark.slow]

PY = sys.executable
BOT_SERIAL = "USBBOT0001"
HDD_BYTES = 32 << 20
BAD_LBA = 40960  # 20 MiB in: blkdebug's EIO
BOT_BYTES = (16 << 20) + 7 * 512  # an odd size: the last write is cut short
UAS_BYTES = 24 << 20


def _drives(work: Path) -> tuple[str, ...]:
    bot, uas, hdd = work / "bot.img", work / "uas.img", work / "hdd.img"
    bot.write_bytes(b"\xa5" * BOT_BYTES)
    uas.write_bytes(b"\x5a" * UAS_BYTES)
    hdd.write_bytes(b"\x11" * HDD_BYTES)
    rules = work / "blkdebug.cfg"
    rules.write_text(f'[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "{BAD_LBA}"\n'
                     'once = "off"\n')
    return ("-device", "virtio-scsi-pci,id=vscsi",
            "-drive", f"file=blkdebug:{rules}:{hdd},if=none,id=hdd,format=raw,cache=none",
            "-device", "scsi-hd,bus=vscsi.0,drive=hdd,rotation_rate=7200,vendor=SEAGATE,"
                       "product=ST4000NM0023",
            "-device", "qemu-xhci,id=xhci",
            "-drive", f"file={bot},if=none,id=ubot,format=raw",
            "-device", f"usb-storage,bus=xhci.0,drive=ubot,serial={BOT_SERIAL}",
            "-device", "usb-uas,id=uas,bus=xhci.0",
            "-drive", f"file={uas},if=none,id=uuas,format=raw",
            "-device", "scsi-hd,bus=uas.0,scsi-id=0,lun=0,drive=uuas")


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> GuestRun:
    work = tmp_path_factory.mktemp("usb")
    extra = _drives(work)
    job = f"""
modprobe xhci_pci; modprobe usb_storage; modprobe uas; modprobe sd_mod; modprobe virtio_scsi
i=0; while [ $(ls /sys/block | grep -c '^sd') -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
{PY} -m ssdbench list --json > /run/out/list.json 2> /run/out/list.err; echo "list rc=$?"
bot=$({PY} -c "import json; print(next(d['path'] for d in json.load(open('/run/out/list.json')) if d['serial'] == '{BOT_SERIAL}'))")
{PY} -m ssdbench run "$bot" --plan erase --destroy {BOT_SERIAL} --erase-fallback overwrite \
  --quiet --results /run/out/results --set operator=E2E --set overwrite_verify_percent=5 \
  --set record_pdf=false > /run/out/run.out 2>&1; echo "run rc=$?"
{PY} -m ssdbench run "$bot" --plan erase --destroy {BOT_SERIAL} --quiet \
  --results /run/out/refused > /run/out/refused.out 2>&1; echo "refused rc=$?"
hdd=$({PY} -c "import json; print(next(d['path'] for d in json.load(open('/run/out/list.json')) if d['model'] == 'ST4000NM0023'))")
cat /sys/block/$(basename "$hdd")/queue/rotational > /run/out/rotational.txt
printf 'name = "scan"\n[[runs]]\nkind = "surface"\n' > /run/tmp/scan.toml
{PY} -m ssdbench run "$hdd" --plan /run/tmp/scan.toml --quiet --no-svg \
  --results /run/out/disk --set surface_regions=32 > /run/out/scan.out 2>&1; echo "scan rc=$?"
{PY} -m ssdbench report /run/out/disk --no-svg > /run/out/report.out 2>&1; echo "report rc=$?"
"""
    return run_guest(job, work, nvme_size_mib=0, timeout_s=600, extra_qemu=extra)


def _log(run: GuestRun) -> str:
    assert run.returncode == 0, run.console[-3000:]
    return run.read("job.log")


def _listed(run: GuestRun) -> dict[str, dict[str, Any]]:
    drives = json.loads(run.read("list.json"))
    return {d["transport"] + ":" + ("bot" if d["serial"] == BOT_SERIAL else "uas"): d
            for d in drives}


def test_a_bridge_without_ata_pass_through_is_named_as_such(guest: GuestRun) -> None:
    assert "list rc=0" in _log(guest)
    drives = _listed(guest)
    drives = {k: d for k, d in drives.items() if d["model"] != "ST4000NM0023"}  # the disk
    assert set(drives) == {"usb:bot", "usb:uas"}, sorted(drives)
    for d in drives.values():
        assert not d["protected"], d  # a data drive on USB is not the boot stick
        assert d["erase_methods"] == [] and "usb-bridge" in d["erase_refusal"], d
        assert d["ata_security"] is None and d["smart"] is None, d
        kinds = {p["kind"] for p in d["problems"]}
        assert "pass-through" in kinds, d["problems"]  # hdparm's empty IDENTIFY, said
    assert drives["usb:bot"]["size_bytes"] == BOT_BYTES


def test_without_the_fallback_the_erase_refuses_and_names_the_overwrite(guest: GuestRun) -> None:
    log = _log(guest)
    assert "refused rc=0" not in log, log
    out = guest.read("refused.out")
    assert "overwrite" in out, out[-2000:]


def test_the_bridge_drive_is_cleared_by_overwrite_with_a_pass_record(guest: GuestRun) -> None:
    log = _log(guest)
    assert "run rc=0" in log, guest.read("run.out")[-3000:]
    [path] = list((guest.share_dir / "results").rglob("erase-record.json"))
    record = json.loads(path.read_text())
    san = record["sanitization"]
    assert record["result"]["status"] == "PASS", record["result"]
    assert san["category"] == "Clear" and san["method"] == "overwrite", san
    over = san["overwrite"]
    assert over["bytes_written"] == over["bytes"] == BOT_BYTES and over["bad_blocks"] == 0
    assert record["verification"]["result"] == "passed"
    assert record["verification"]["percent"] == 5.0
    html = (path.parent / "erase-certificate.html").read_text()
    assert "Clear" in html and over["seed"] in html
    # every byte of the drive, as QEMU holds it, is the pattern of the recorded seed
    image = guest.share_dir.parent / "bot.img"
    pattern = ow.Pattern.new("random", bytes.fromhex(over["seed"]))
    assert image.read_bytes() == pattern.expected(0, BOT_BYTES)
    # the UAS drive beside it was not touched
    assert (guest.share_dir.parent / "uas.img").read_bytes() == b"\x5a" * UAS_BYTES


def test_a_hard_disks_unreadable_sector_is_found_by_lba_and_drawn(guest: GuestRun) -> None:
    log = _log(guest)
    assert guest.read("rotational.txt").strip() == "1"
    assert "scan rc=0" in log and "report rc=0" in log, guest.read("scan.out")[-3000:]
    [run_dir] = list((guest.share_dir / "disk").glob("*/surface"))
    sf = json.loads((run_dir / "run.json").read_text())["surface"]
    assert sf["verdict"] == "unreadable", sf
    assert sf["unreadable_blocks"] == 1 and sf["unreadable_sectors"] == 1, sf
    assert [u["lba"] for u in sf["unreadable_list"]] == [BAD_LBA], sf["unreadable_list"]
    assert sf["blocks"] == HDD_BYTES // (128 * 1024), sf
    assert (run_dir / "surface.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (run_dir.parent / "report.html").read_text()
    assert "Surface scan" in html and "surface: unreadable sectors" in html
    assert str(BAD_LBA) in html
    assert (guest.share_dir.parent / "hdd.img").read_bytes() == b"\x11" * HDD_BYTES  # read only
