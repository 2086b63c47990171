"""ATA security erase and sanitize against a device: the emulated SATA SSD of simdrive/ata
(LIO TCMU + tcm_loop in the QEMU guest, docs/ata-emulator.md), driven by the real hdparm
through the real kernel, erased by ssdbench's erase_drive with read-back verification.

The drive's state (passwords, data) lives in the share, so a power cut (the guest cut off
by sysrq 'o' right after SECURITY SET PASSWORD) and the next boot find it as a real drive
would. Each boot takes about 15-25 s under TCG.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from simdrive.ata.drive import AtaDrive, Config
from ssdbench.record.nist import sanitization_for
from tests.integration.qemu_helper import GuestRun, run_guest

GUEST = Path(__file__).with_name("guest_ata_erase.py")
REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
SERIAL = "ATAEMU0023"


def make_drive(share: Path, **config: object) -> AtaDrive:
    share.mkdir(parents=True, exist_ok=True)
    return AtaDrive.create(share / "drive", Config(serial=SERIAL, **config))  # type: ignore[arg-type]


def boot(work: Path, body: str, timeout_s: float = 600.0, simdrive: str = "") -> GuestRun:
    """Start the emulator in the guest, wait for its /dev/sdX ($dev), run ``body``.

    ``simdrive``: a preset; the data then lives in simdrive (nbdkit in the guest, its
    truth.jsonl copied to the share at the end) instead of the share's data.img."""
    size = json.loads((work / "share/drive/config.json").read_text())["size_bytes"]
    sim = f"""sh {REPO}/scripts/simdrive start --preset {simdrive} --size {size} \
  --fob-iops 1000 --dir /run/tmp/sim > /run/out/simdrive.out 2>&1 || exit 3
nbd="--nbd /run/tmp/sim/nbd.sock"
""" if simdrive else 'nbd=""\n'
    stop = f"""sh {REPO}/scripts/simdrive stop --dir /run/tmp/sim --keep-data >> /run/out/simdrive.out 2>&1
cp /run/tmp/sim/truth.jsonl /run/out/truth.jsonl
""" if simdrive else ""
    job = f"""
export PYTHONPATH={REPO} PYTHONDONTWRITEBYTECODE=1
rm -f /run/out/ready
{sim}{PY} -m simdrive.ata serve /run/out/drive --ready /run/out/ready --log /run/out/emu.log \
  $nbd > /run/out/serve.out 2>&1 &
i=0; while [ ! -s /run/out/ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
dev=$(cat /run/out/ready)
{body}
{stop}"""
    return run_guest(job, work, nvme_size_mib=0, timeout_s=timeout_s)


def erase(out: str, method: str = "") -> str:
    return f'{PY} {GUEST} /run/out/{out} "$dev" {method}; echo "{out} rc=$?"'


def ok(run: GuestRun) -> str:
    assert run.returncode == 0, run.console[-2000:] + run.read("job.log")[-3000:]
    return run.read("job.log")


def emu_log(run: GuestRun) -> str:
    return run.read("emu.log")


def test_security_erase_normal_and_enhanced_verified_then_frozen(tmp_path: Path) -> None:
    """One boot: two verified erases, then the real `hdparm --security-freeze` (what a
    BIOS sends at power-on): an explicit security erase is refused naming allow_suspend,
    the automatic choice falls back to SANITIZE BLOCK ERASE, verified. The data lives in
    simdrive: each erase resets its FTL (a 'sanitize' in its truth.jsonl)."""
    work = tmp_path / "vm"
    make_drive(work / "share", size_bytes=64 << 20)  # simdrive enterprise: 58 MiB at least
    run = boot(work, "\n".join([
        erase("normal", "ata-security-erase"), erase("enhanced", "ata-security-erase-enhanced"),
        'hdparm --security-freeze "$dev" > freeze.txt 2>&1',
        erase("explicit", "ata-security-erase"), erase("auto"), erase("crypto", "ata-sanitize-crypto"),
        # TRIM: DATA SET MANAGEMENT from hdparm, UNMAP from blkdiscard
        'dd if=/dev/urandom of="$dev" bs=4096 count=2 seek=100 oflag=direct status=none',
        'hdparm --please-destroy-my-drive --trim-sector-ranges 800:8 "$dev" > trim.txt 2>&1',
        'blkdiscard -o 413696 -l 4096 "$dev"; echo "blkdiscard rc=$?"',
        'dd if="$dev" bs=4096 count=2 skip=100 iflag=direct status=none | od -An -v | sort -u'
        ' > trimmed.txt',
    ]), simdrive="enterprise")
    log = ok(run)
    assert "normal rc=0" in log and "enhanced rc=0" in log, log[-3000:]
    for out, label in (("normal", "normal"), ("enhanced", "enhanced")):
        rec = run.erase_record(out)
        assert rec["method"] == f"ata-security-erase{'-enhanced' if out == 'enhanced' else ''}"
        assert rec["secure"] is True and rec["verified"] is True, rec
        verification = rec["verification"]
        assert isinstance(verification, dict)
        assert verification["markers"] == 16 and verification["survivors"] == []
        assert f"ERASE UNIT ({label}): all user data erased" in emu_log(run)
        drive = json.loads(run.read(f"{out}/drive.json"))
        assert drive["transport"] == "scsi" and drive["ata_passthrough"] is True
        commands = run.read(f"{out}/log.txt")
        assert "hdparm --user-master u --security-set-pass" in commands
    state = json.loads((run.share_dir / "drive/state.json").read_text())
    assert state["user_password"] is None and state["erase_count"] == 2
    assert "FREEZE LOCK: frozen" in emu_log(run)
    error = run.read("explicit/error.txt")
    assert "frozen" in error and "allow_suspend" in error and "hot-plugging" in error, error
    rec = run.erase_record("auto")
    assert rec["method"] == "ata-sanitize-block" and rec["verified"] is True, rec
    after_freeze = emu_log(run).split("FREEZE LOCK: frozen", 1)[1]
    assert "SANITIZE BLOCK ERASE: done" in after_freeze and "SET PASSWORD" not in after_freeze
    rec = run.erase_record("crypto")
    assert rec["method"] == "ata-sanitize-crypto" and rec["verified"] is True, rec
    assert "SANITIZE CRYPTO SCRAMBLE: done" in emu_log(run)
    assert "TRIM: 1 ranges" in emu_log(run) and "UNMAP 1 ranges, 8 blocks" in emu_log(run)
    assert "blkdiscard rc=0" in log
    assert set(run.read("trimmed.txt").split()) == {"000000"}  # both 4 KiB blocks read 0
    events = [json.loads(line).get("event") for line in run.read("truth.jsonl").splitlines()]
    assert events.count("sanitize") == 4, events  # normal, enhanced, block, crypto
    assert events.count("trim") == 2, events
    # the markers went to simdrive, not to the share's data.img
    assert (run.share_dir / "drive/data.img").read_bytes().count(0) == 64 << 20


def test_power_cut_after_set_password_is_recovered_next_boot(tmp_path: Path) -> None:
    work = tmp_path / "vm"
    drive = make_drive(work / "share", power_cut_after="set-pass")
    first = boot(work, erase("result", "ata-security-erase"))
    assert first.returncode is None  # the guest lost power inside the erase
    assert (first.share_dir / "drive/power-cut").exists()
    journal = json.loads((first.share_dir / "result/journal.json").read_text())
    [entry] = journal["ata_password_entries"]  # known by the drive's identity (issue #42)
    assert entry["serial"] == SERIAL and entry["identity"]["serial"] == SERIAL
    password = entry["password"]
    state = json.loads((first.share_dir / "drive/state.json").read_text())
    assert state["user_password"] == password.encode().ljust(32, b"\0").hex()
    # The same drive boots again (no second power cut): locked with that password.
    cfg = json.loads((drive.folder / "config.json").read_text())
    (drive.folder / "config.json").write_text(json.dumps({**cfg, "power_cut_after": ""}))
    second = boot(work, erase("result", "ata-security-erase"))
    ok(second)
    rec = second.erase_record("result")
    steps = rec["steps"]
    assert isinstance(steps, list)
    assert any("journal holds a password from an earlier run" in s for s in steps), steps
    assert rec["verified"] is True
    assert "power-on: security word 128 = 0x0027" in emu_log(second)  # enabled + locked
    assert "ata_password_entries" not in json.loads(
        (second.share_dir / "result/journal.json").read_text())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_locked_unknown_password_refused_untouched_then_expired(tmp_path: Path) -> None:
    """A drive locked with a password nobody recorded: refused, not one write reaches it;
    after five wrong `hdparm --security-unlock`: expired, refused with power-cycle advice."""
    work = tmp_path / "vm"
    drive = make_drive(work / "share")
    drive.write(0, b"user data".ljust(512, b"\0"))
    drive.nv.user_password = b"not-ours".ljust(32, b"\0").hex()
    drive._save()
    before = _sha(drive.data_path)
    wrong = "\n".join(
        f'hdparm --user-master u --security-unlock wrong{n} "$dev" > unlock{n}.txt 2>&1'
        for n in range(5)
    )
    run = boot(work, "\n".join([erase("locked"), wrong, erase("expired")]))
    ok(run)
    error = run.read("locked/error.txt")
    assert "locked" in error and "does not know" in error, error
    assert _sha(drive.data_path) == before
    assert "WRITE" not in emu_log(run)
    error = run.read("expired/error.txt")
    assert "expired" in error and "power-cycle" in error, error
    assert "attempt counter expired" in emu_log(run)
    assert "Input/output error" in run.read("unlock0.txt")


def plan_erase(out: str, *params: str) -> str:
    """ssdbench's erase plan (the product path: discovery with the pass-through opt-in, the
    erase plan's stage with its HPA check, the signed record) on the emulated drive."""
    sets = " ".join(f"--set {p}" for p in params)
    return (f'{PY} -m ssdbench --ata-passthrough "$dev" run "$dev" --plan erase '
            f'--destroy {SERIAL} --results /run/out/{out} --quiet {sets} > {out}.txt 2>&1; '
            f'echo "{out} rc=$?"')


def plan_record(run: GuestRun, out: str) -> dict[str, Any]:
    records = list((run.share_dir / out).rglob("erase-record.json"))
    assert len(records) == 1, run.read(f"{out}.txt")[-3000:]
    data: dict[str, Any] = json.loads(records[0].read_text())
    return data


HPA_VISIBLE = 30000  # of the 16 MiB drive's 32768 sectors


def test_hpa_set_by_hdparm_warned_then_native_max_restored_and_erased(tmp_path: Path) -> None:
    """Boot 1: the real `hdparm -N p30000` hides the drive's end (non-volatile). The erase
    plan without restore_native_max: the record warns that 2768 sectors may not be covered.
    With it: the drive refuses a second non-volatile SET MAX in the same power cycle, the
    record says failed and why. Boot 2 (a power cycle; the HPA persisted): the restore is
    done, the kernel sees the whole drive and the verification samples reach the formerly
    hidden end."""
    work = tmp_path / "vm"
    drive = make_drive(work / "share")
    native = drive.sectors
    hidden_lba = HPA_VISIBLE + 100
    drive.write(hidden_lba * 512, b"HIDDEN DATA".ljust(512, b"\0"))
    name = '"${dev#/dev/}"'
    first = boot(work, "\n".join([
        f'hdparm -N p{HPA_VISIBLE} --yes-i-know-what-i-am-doing "$dev" > setmax.txt 2>&1',
        f'echo 1 > /sys/block/{name}/device/rescan; cat /sys/block/{name}/size > size1.txt',
        # no PDF but for the last record: WeasyPrint takes about a minute a record under TCG
        plan_erase("plain", "record_pdf=false"),
        plan_erase("restore1", "restore_native_max=true", "record_pdf=false"),
        'hdparm -N "$dev" > hpa-after-boot1.txt 2>&1',
    ]))
    ok(first)
    assert f"max sectors   = {HPA_VISIBLE}/{native}, HPA is enabled" in first.read("setmax.txt")
    assert first.read("size1.txt").strip() == str(HPA_VISIBLE)
    rec = plan_record(first, "plain")
    hpa = rec["hidden_areas"]["ata"]["hpa"]
    assert hpa == {"enabled": True, "current_sectors": HPA_VISIBLE, "native_sectors": native,
                   "hidden_sectors": native - HPA_VISIBLE}, rec["hidden_areas"]
    assert any("HPA enabled" in w and "may not be covered" in w for w in rec["warnings"])
    assert "native_max_restore" not in rec["hidden_areas"]["ata"]
    rec = plan_record(first, "restore1")
    restore = rec["hidden_areas"]["ata"]["native_max_restore"]
    assert restore["result"] == "failed", restore
    assert any("native max restore failed" in w for w in rec["warnings"]), rec["warnings"]
    assert "one non-volatile change per power cycle" in emu_log(first)
    assert f"{HPA_VISIBLE}/{native}, HPA is enabled" in first.read("hpa-after-boot1.txt")
    assert json.loads((drive.folder / "state.json").read_text())["max_sectors"] == HPA_VISIBLE

    drive.write(hidden_lba * 512, b"HIDDEN DATA".ljust(512, b"\0"))  # the erases zeroed it
    second = boot(work, "\n".join([
        'hdparm -N "$dev" > hpa-boot2.txt 2>&1',
        plan_erase("restore2", "restore_native_max=true"),
        f'cat /sys/block/{name}/size > size2.txt',
    ]))
    ok(second)
    assert f"{HPA_VISIBLE}/{native}, HPA is enabled" in second.read("hpa-boot2.txt")
    rec = plan_record(second, "restore2")
    restore = rec["hidden_areas"]["ata"]["native_max_restore"]
    assert restore["result"] == "done", restore
    assert (restore["before_sectors"], restore["after_sectors"]) == (HPA_VISIBLE, native)
    assert restore["command"] == f"hdparm -N p{native} /dev/sda"
    assert rec["hidden_areas"]["ata"]["hpa"]["hidden_sectors"] == 0
    assert not any("HPA" in w for w in rec["warnings"]), rec["warnings"]
    assert rec["result"]["status"] == "PASS", rec["result"]
    # the healthy profile's counters, read through smartctl and SAT before the erase: reuse
    # (simdrive/ata/smart.py; the worn one is graded scrap below)
    assert rec["grade"] == {"grade": "reuse", "reasons": []}, rec["grade"]
    assert second.read("size2.txt").strip() == str(native)
    offsets = rec["verification"]["offsets"]
    assert max(offsets) >= HPA_VISIBLE * 512, offsets  # the samples reach the restored end
    assert "SET MAX ADDRESS EXT (non-volatile): max 32768 of 32768" in emu_log(second)
    assert json.loads((drive.folder / "state.json").read_text())["max_sectors"] is None
    assert drive.read(hidden_lba * 512, 512) == bytes(512)


def test_worn_drive_graded_scrap_its_self_test_run_with_progress(tmp_path: Path) -> None:
    """One boot: the worn emulated SSD (simdrive/ata/smart.py: reallocated and pending
    sectors, 3% life left, a self-test that fails at a read element) through the real
    smartctl and the kernel's SAT: `ssdbench run --plan grade` runs its short self-test
    with the drive's own progress, then grades it scrap with each reason; `smartctl -x`'s
    own verdict and log are kept for the parser tests (tests/data/fixtures/selftest)."""
    work = tmp_path / "vm"
    make_drive(work / "share", smart="worn", self_test_seconds=15.0)
    run = boot(work, "\n".join([
        f'{PY} -m ssdbench --ata-passthrough "$dev" run "$dev" --plan grade --no-svg '
        f'--results /run/out/grade > grade.out 2> grade.err; echo "grade rc=$?"',
        'smartctl -x "$dev" > smartctl-x.txt 2>&1; echo "smartctl rc=$?"',
        'smartctl -j -x "$dev" > smartctl-x.json 2>&1; echo "smartctl -j rc=$?"',
    ]))
    log = ok(run)
    assert "grade rc=0" in log, run.read("grade.err")[-3000:]
    [graded_run] = list((run.share_dir / "grade").rglob("grade/run.json"))
    graded = json.loads(graded_run.read_text())
    # the self-test ran, with the drive's countdown as progress, and failed
    st = graded["self_test"]
    assert st["ran"] is True and st["result"]["passed"] is False, st
    assert st["result"]["kind"] == "short" and "read" in st["result"]["status"], st
    progress = [line for line in run.read("grade.err").splitlines()
                if " self-test running " in line and "%" in line]
    assert len(progress) >= 2, run.read("grade.err")[-3000:]  # polled every 5 s of 15
    assert "SMART short self-test started (15 s)" in emu_log(run)
    # the grade: scrap, each reason from the drive's own counters
    grade = graded["grade"]
    assert grade["grade"] == "scrap", grade
    reasons = {r["counter"]: r for r in grade["reasons"]}
    assert reasons["smart_status"]["grade"] == "scrap"
    assert reasons["Reallocated_Sector_Ct"]["value"] == "now"  # at its own threshold
    assert reasons["self_test"]["grade"] == "scrap"
    for counter, value in (("pending_sectors", 48), ("offline_uncorrectable", 48),
                           ("reallocated", 1520), ("reported_uncorrectable", 212),
                           ("power_on_hours", 46000)):
        assert reasons[counter]["value"] == value, (counter, grade["reasons"])
    assert any("97% of its rated life used" in r["text"] for r in grade["reasons"]), grade
    # smartctl's own words: the overall assessment FAILED and the self-test log entry
    # its exit status: 8 (failing) + 16 (a pre-failure attribute at its threshold) + 128
    # (the self-test log has an error); none of bits 0-2 (it read everything it asked for)
    assert "smartctl rc=152" in log and "smartctl -j rc=152" in log, log[-2000:]
    text = run.read("smartctl-x.txt")
    assert "SMART overall-health self-assessment test result: FAILED!" in text, text[-3000:]
    assert "Short offline       Completed: read failure" in text, text[-3000:]


def test_a_frozen_drive_without_sanitize_is_cleared_by_overwrite_when_the_plan_allows(
        tmp_path: Path) -> None:
    """#44: the BIOS froze the drive (FREEZE LOCK at power-on) and it has no Sanitize feature
    set, so no firmware erase can run. Without the fallback the erase refuses and names the
    overwrite; with ``erase_fallback = "overwrite"`` every block is written through the real
    kernel and checked by sampling, and the record says Clear (overwrite)."""
    work = tmp_path / "vm"
    make_drive(work / "share", size_bytes=(16 << 20) + 7 * 512, frozen_at_power_on=True,
               sanitize=False)  # an odd size: the last write is cut short
    run = boot(work, "\n".join([
        'dd if=/dev/urandom of="$dev" bs=1M count=4 oflag=direct status=none',
        erase("refused"),
        f'{PY} {GUEST} /run/out/fallback "$dev" "" overwrite; echo "fallback rc=$?"',
    ]))
    log = ok(run)
    assert "fallback rc=0" in log, log[-3000:]
    error = run.read("refused/error.txt")
    assert "no secure erase possible" in error and "overwrite" in error, error
    rec = run.erase_record("fallback")
    assert rec["method"] == "overwrite" and rec["verified"] is True, rec
    over = rec["overwrite"]
    assert isinstance(over, dict) and over["bytes_written"] == (16 << 20) + 7 * 512, over
    assert over["bad_blocks"] == 0 and over["verification"]["passed"] is True, over
    assert "no firmware erase: security is frozen" in str(rec["steps"]), rec["steps"]
    # what the signed record will say of it (record/nist.py): Clear, with NIST's note on flash
    san = sanitization_for(str(rec["method"]), "flash memory")
    assert san.category == "Clear" and "flash" in san.note, san
    tried = [line for line in emu_log(run).splitlines()
             if re.search(r"SANITIZE (BLOCK|CRYPTO|OVERWRITE)|ERASE (PREPARE|UNIT)|SET PASS", line)]
    assert not tried, tried  # no firmware erase was attempted: the overwrite's writes only
    data = (run.share_dir / "drive/data.img").read_bytes()
    assert len(data) == (16 << 20) + 7 * 512
    assert data.count(0) < len(data) // 100  # the random pattern everywhere, no zeros left
