"""The emulated drive's SAS personality (simdrive/ata/sas.py) in a QEMU guest, driven by the
real sg3_utils and smartctl through the real kernel (LIO TCMU + tcm_loop, docs/ata-emulator.md).

One boot: a SAS SSD formatted at 520 bytes a block (as storage arrays leave them) is seen by
sd with capacity 0; sg_inq, sg_vpd, sg_readcap and smartctl read it through /dev/sgN;
`ssdbench list` shows it with its problem line and ``scsi-sanitize``; the product path,
`ssdbench run DEV --plan erase --set scsi_reformat_512=true`, reformats it to 512 and
sanitizes it with verification into a PASS record that says Purge and both sizes; smartctl's
self-test by hand (started, in progress with REQUEST SENSE's progress, logged, an extended one
aborted) and the grade plan's self-test (`ssdbench run DEV --plan grade --set
self_test=short`: ran, passed, graded reuse); sg_format and sg_sanitize by hand show REQUEST SENSE's progress, a read refused meanwhile,
the data gone after, and sanitize failure mode. Then a second drive in the same guest, an
older worn SAS drive with no SANITIZE (guest_sas_second.py): `ssdbench list` offers it
``scsi-format``, `ssdbench run DEV --plan erase` erases it by FORMAT UNIT into a PASS record
that says Clear (not Purge) and why, none of the markers left, and `--plan grade` grades it
scrap for what the worn profile reports. With SSDBENCH_SAVE_SAS_CAPTURES=1 the tools'
outputs and a support bundle of the 520-byte drive are copied to tests/data/sas-emu/ (the
parser and discovery tests' captures).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from simdrive.ata.drive import AtaDrive, Config
from ssdbench.grade.selftest import parse_scsi_self_test_log
from tests.integration.qemu_helper import GuestRun, run_guest
from tests.schema_check import check_json

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
SERIAL = "SASEMU0044"
SIZE = 16 << 20
CAPTURES = REPO / "tests/data/sas-emu"
# the whole drive read back in the guest: the markers left and its three commonest bytes
READBACK = REPO / "tests/integration/guest_sas_readback.py"
GUEST = REPO / "tests/integration/guest_sas_erase.py"
SECOND = REPO / "tests/integration/guest_sas_second.py"
# the second drive: an older, worn SAS drive without SANITIZE (FORMAT UNIT is its erase)
SERIAL2 = "SASEMU0045"
SIZE2 = 8 << 20



@pytest.fixture(autouse=True)
def sg3_utils() -> None:
    """Never a skip: `make test` installs sg3-utils (scripts/apt-packages.txt)."""
    if shutil.which("sg_inq") is None:
        pytest.fail("sg3-utils is not installed: run `make deps` (scripts/apt-packages.txt)")


def boot(work: Path, body: str, timeout_s: float = 600.0) -> GuestRun:
    """Start the emulator in the guest, wait for its /dev/sdX ($dev) and /dev/sgN ($sg)."""
    job = f"""
export PYTHONPATH={REPO} PYTHONDONTWRITEBYTECODE=1
rm -f /run/out/ready
{PY} -m simdrive.ata serve /run/out/drive --ready /run/out/ready --log /run/out/emu.log \
  > /run/out/serve.out 2>&1 &
i=0; while [ ! -s /run/out/ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
dev=$(sed -n 1p /run/out/ready); sg=$(sed -n 2p /run/out/ready); name=${{dev#/dev/}}
{body}
"""
    return run_guest(job, work, nvme_size_mib=0, timeout_s=timeout_s)


def poll(tool: str, out: str) -> str:
    """REQUEST SENSE's progress once a second until the drive reports none (at most 60; with
    one REQUEST SENSE, sg_requests prints nothing when there is no progress indication),
    a read through sd tried each time (refused while the drive works)."""
    return (f'n=0; while [ $n -lt 60 ]; do sg_requests --progress "$sg" > poll.txt 2>&1; '
            f'cat poll.txt >> {out}; grep -q "Progress indication" poll.txt || break; '
            f'dd if="$dev" of=/dev/null bs=4096 count=1 iflag=direct status=none '
            f'2>> {tool}-read.txt; sleep 1; n=$((n+1)); done; echo "polls=$n" >> {out}')


def sanitize(kind: str, *options: str) -> str:
    marker = f"MARKER-{kind}"
    return "\n".join([
        # a marker in three places, then the sanitize and its progress
        *(f'printf "{marker}" | dd of="$dev" bs=4096 seek={s} conv=notrunc,fsync status=none'
          for s in (0, 1000, 4000)),
        f'sg_sanitize --{kind} {" ".join(options)} --quick --early "$sg" > sanitize-{kind}.txt'
        f' 2>&1; echo "sanitize-{kind} rc=$?"',
        poll(f"sanitize-{kind}", f"progress-{kind}.txt"),
        f'{PY} {READBACK} "$dev" {marker} > readback-{kind}.json',
    ])


def erase(out: str, method: str, reformat: str = "") -> str:
    """ssdbench's erase_drive of the drive `ssdbench list` finds (guest_sas_erase.py)."""
    return f'{PY} {GUEST} /run/out/{out} {SERIAL} {method} {reformat}; echo "{out} rc=$?"'


def plan_erase(out: str, *params: str, dev: str = "$dev", serial: str = SERIAL) -> str:
    """The product path: `ssdbench run DEV --plan erase` (discovery, consent, the erase
    stage, the signed record; no PDF: WeasyPrint takes about a minute under TCG)."""
    sets = " ".join(f"--set {p}" for p in ("record_pdf=false", *params))
    return (f'{PY} -m ssdbench run "{dev}" --plan erase --destroy {serial} '
            f'--results /run/out/{out} {sets} > {out}.txt 2>&1; echo "{out} rc=$?"')


def self_test_by_hand() -> list[str]:
    """smartctl -t short (SEND DIAGNOSTIC) and its log (LOG SENSE 10h) before, while it runs
    (with sg_requests --progress) and after; then -t long aborted by -X."""
    return [
        'smartctl -j -l selftest "$sg" > smartctl-selftest-before.json 2>&1',
        'smartctl -j -t short "$sg" > smartctl-t-short.json 2>&1; echo "selftest-t rc=$?"',
        'smartctl -j -l selftest "$sg" > smartctl-selftest-running.json 2>&1',
        'smartctl -l selftest "$sg" > smartctl-selftest-running.txt 2>&1',
        'sg_requests --progress "$sg" > sg_requests-selftest.txt 2>&1',
        'n=0; while [ $n -lt 60 ] && smartctl -j -l selftest "$sg" | grep -q \'"value": 15\';'
        ' do sleep 1; n=$((n+1)); done; echo "selftest polls=$n"',
        'smartctl -j -l selftest "$sg" > smartctl-selftest-after.json 2>&1',
        'smartctl -j -t long "$sg" > smartctl-t-long.json 2>&1',
        'smartctl -j -X "$sg" > smartctl-X.json 2>&1; echo "selftest-X rc=$?"',
        'smartctl -j -l selftest "$sg" > smartctl-selftest-aborted.json 2>&1',
    ]


def plan_grade(out: str, *params: str, dev: str = "$dev") -> str:
    """The product path, read-only: `ssdbench run DEV --plan grade` (no consent needed)."""
    sets = " ".join(f"--set {p}" for p in params)
    return (f'{PY} -m ssdbench run "{dev}" --plan grade --results /run/out/{out} {sets}'
            f' > {out}.txt 2>&1; echo "{out} rc=$?"')


def second_drive() -> list[str]:
    """The worn drive without SANITIZE beside the first ($dev2, $sg2): its opcodes, a
    SANITIZE refused, smartctl -x of both drives, `ssdbench list`; three markers by hand,
    the erase plan (FORMAT UNIT), the whole drive read back; the grade plan (its short
    self-test fails, as the worn profile's do)."""
    marker = "MARKER-format"
    return [
        f'{PY} {SECOND} /run/out/drive2 /run/out/ready2 /run/out/emu2.log "$dev"'
        ' > /run/out/serve2.out 2>&1 &',
        'i=0; while [ ! -s /run/out/ready2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done',
        'dev2=$(sed -n 1p /run/out/ready2); sg2=$(sed -n 2p /run/out/ready2)',
        'sg_opcodes "$sg2" > sg_opcodes-no-sanitize.txt 2>&1',
        'sg_sanitize --block --quick --early "$sg2" > sanitize-none.txt 2>&1;'
        ' echo "sanitize-none rc=$?"',
        'smartctl -j -x "$sg" > smartctl-x.json 2>&1',
        'smartctl -j -x "$sg2" > smartctl-x-worn.json 2>&1',
        f'{PY} -m ssdbench list --json > list-2.json 2> list-2.err',
        *(f'printf "{marker}" | dd of="$dev2" bs=4096 seek={s} conv=notrunc,fsync status=none'
          for s in (0, 1000, SIZE2 // 4096 - 1)),
        plan_erase("plan2", dev="$dev2", serial=SERIAL2),
        f'{PY} {READBACK} "$dev2" {marker} > readback-format.json',
        plan_grade("grade2", dev="$dev2"),
    ]


def plan_file(run: GuestRun, out: str, name: str) -> Path:
    found = list((run.share_dir / out).rglob(name))
    assert len(found) == 1, (name, run.read(f"{out}.txt")[-3000:])
    return found[0]


def test_sas_drive_reformatted_520_to_512_and_sanitized_with_progress(tmp_path: Path) -> None:
    """One boot, in order: the tools read the 520-byte drive; `ssdbench list` shows it (capacity
    0, its problem line, scsi-sanitize) and a support bundle records it; ssdbench refuses it
    without the plan's reformat, then `ssdbench run --plan erase --set
    scsi_reformat_512=true` reformats it to 512 and sanitizes (block erase, chosen from
    REPORT SUPPORTED OPERATION CODES) with markers verified, into a PASS record that says
    Purge and both sizes; a short self-test by hand (12 s: running, its progress in REQUEST
    SENSE, then logged Completed) and an extended one aborted with smartctl -X; the grade plan's
    short self-test ran and passed and the healthy drive is graded reuse with no reason;
    sg_format takes it to 4096 by hand;
    a block erase by sg_sanitize with its progress; an overwrite that fails (the drive is
    made so) leaves failure mode, which sg_sanitize --fail ends (AUSE); ssdbench's overwrite
    fails the same way and says so, its next erase is refused naming failure mode, a crypto
    erase by hand ends it and ssdbench's crypto erase verifies. Then the second, worn drive
    without SANITIZE (check_second_drive): scsi-format offered, the erase plan's FORMAT UNIT
    into a Clear PASS record, the grade plan's scrap."""
    work = tmp_path / "vm"
    share = work / "share"
    share.mkdir(parents=True)
    AtaDrive.create(share / "drive", Config(
        serial=SERIAL, model="SSDBENCH SAS EMU", firmware="S044", size_bytes=SIZE,
        personality="sas", block_size=520, sanitize_seconds=4.0, format_seconds=3.0,
        self_test_seconds=12.0, failing_sanitize=["overwrite"]))
    AtaDrive.create(share / "drive2", Config(
        serial=SERIAL2, model="SSDBENCH SAS OLD", firmware="S045", size_bytes=SIZE2,
        personality="sas", sanitize=False, smart="worn", format_seconds=3.0,
        self_test_seconds=2.0))
    run = boot(work, timeout_s=900.0, body="\n".join([
        'cat /sys/block/$name/size > size-520.txt',
        'dmesg | grep -i "sector size" > dmesg-520.txt',
        'sg_inq "$sg" > sg_inq.txt 2>&1',
        'sg_vpd -p sn "$sg" > sg_vpd-sn.txt 2>&1',
        'sg_vpd -p di "$sg" > sg_vpd-di.txt 2>&1',
        'sg_vpd -p bl "$sg" > sg_vpd-bl.txt 2>&1',
        'sg_vpd -p bdc "$sg" > sg_vpd-bdc.txt 2>&1',
        'sg_readcap -l "$sg" > sg_readcap-520.txt 2>&1',
        'sg_opcodes "$sg" > sg_opcodes.txt 2>&1',
        'sg_requests --progress "$sg" > sg_requests-progress-idle.txt 2>&1',
        'sg_requests "$sg" > sg_requests-idle.txt 2>&1',
        'smartctl -j -a "$sg" > smartctl-a.json 2>&1; echo "smartctl rc=$?"',
        'smartctl -a "$sg" > smartctl-a.txt 2>&1',
        'smartctl -t short "$sg" > smartctl-t.txt 2>&1; echo "smartctl -t rc=$?"',
        # `ssdbench list` and a support bundle of the 520-byte drive (capacity 0)
        f'{PY} -m ssdbench list --json > list-520.json 2> list-520.err',
        f'{PY} -m ssdbench.commands.bundle /run/out/bundle-520 2> bundle-520.err',
        # ssdbench: refused without the reformat, then the erase plan reformats and sanitizes
        erase("norefmt", "scsi-sanitize"),
        plan_erase("plan", "scsi_reformat_512=true"),
        'cat /sys/block/$name/size > size-512.txt',
        'cat /sys/block/$name/queue/logical_block_size > lbs-512.txt',
        'sg_readcap -l "$sg" > sg_readcap-512.txt 2>&1',
        # the self-test by hand (#44): smartctl's SCSI JSON before, as it starts, while it
        # runs (and REQUEST SENSE's progress), after; an extended one aborted with -X
        *self_test_by_hand(),
        # the product path: the grade plan with a short self-test
        plan_grade("grade", "self_test=short"),
        # sg_format by hand: 512 -> 4096, its progress in REQUEST SENSE, then the rescan
        'sg_format --format --size=4096 --quick --early "$sg" > sg_format.txt 2>&1;'
        ' echo "sg_format rc=$?"',
        poll("format", "progress-format.txt"),
        'echo 1 > /sys/block/$name/device/rescan',
        'cat /sys/block/$name/size > size-4096.txt',
        'cat /sys/block/$name/queue/logical_block_size > lbs-4096.txt',
        sanitize("block"),
        # an overwrite that fails (failing_sanitize), allowed to exit failure mode (AUSE)
        'sg_sanitize --overwrite --zero --ause --quick --early "$sg" > sanitize-ow.txt 2>&1;'
        ' echo "sanitize-ow rc=$?"',
        poll("ow", "progress-ow.txt"),
        'sg_requests "$sg" > sg_requests-failed.txt 2>&1',
        'dd if="$dev" of=/dev/null bs=4096 count=1 iflag=direct 2> read-failed.txt;'
        ' echo "read-failed rc=$?"',
        'sg_sanitize --fail --quick --early "$sg" > sanitize-fail.txt 2>&1;'
        ' echo "exit-failure rc=$?"',
        'sg_requests "$sg" > sg_requests-after-exit.txt 2>&1',
        # ssdbench's overwrite fails the same way (no AUSE): failure mode until a sanitize works
        erase("ow", "scsi-sanitize-overwrite"),
        erase("inmode", "scsi-sanitize-crypto"),
        'sg_sanitize --crypto --quick --early "$sg" > sanitize-crypto-hand.txt 2>&1;'
        ' echo "crypto-hand rc=$?"',
        poll("crypto-hand", "progress-crypto-hand.txt"),
        erase("crypto", "scsi-sanitize-crypto"),
        'smartctl -j -a "$sg" > smartctl-after.json 2>&1',
        *second_drive(),
    ]))
    log = run.read("job.log")
    assert run.returncode == 0, run.console[-2000:] + log[-3000:]
    emu = run.read("emu.log")
    # what sd makes of a 520-byte drive: capacity 0; the tools reach it through /dev/sgN
    assert run.read("size-520.txt").strip() == "0", emu[-2000:]
    assert "Unsupported sector size 520" in run.read("dmesg-520.txt")
    inq = run.read("sg_inq.txt")
    assert "Vendor identification: SSDBENCH" in inq and "SSDBENCH SAS EMU" in inq, inq
    assert SERIAL in run.read("sg_vpd-sn.txt")
    assert re.search(r"0x5000c5[0-9a-f]{10}", run.read("sg_vpd-di.txt")), run.read("sg_vpd-di.txt")
    assert "Non-rotating medium" in run.read("sg_vpd-bdc.txt")
    assert "Logical block length=520 bytes" in run.read("sg_readcap-520.txt")
    smart = json.loads(run.read("smartctl-a.json"))
    assert smart["smart_status"]["passed"] is True, smart
    assert smart["scsi_percentage_used_endurance_indicator"] == 2
    assert smart["scsi_grown_defect_list"] == 0
    assert smart["rotation_rate"] == 0  # solid state
    # ssdbench without the plan's consent: refused, naming it
    error = run.read("norefmt/error.txt")
    assert "520-byte blocks" in error and "scsi_reformat_512" in error, error
    # `ssdbench list`: the drive the kernel shows with capacity 0, with its problem line and
    # the sanitize REPORT SUPPORTED OPERATION CODES offers
    listed = [d for d in json.loads(run.read("list-520.json")) if d["serial"] == SERIAL]
    assert len(listed) == 1, run.read("list-520.json")[-3000:] + run.read("list-520.err")
    (seen,) = listed
    assert (seen["transport"], seen["size_bytes"], seen["scsi_block_size"]) == ("scsi", 0, 520)
    assert seen["erase_methods"][0] == "scsi-sanitize" and seen["erase_refusal"] == [], seen
    assert any(p["message"].startswith("520-byte sectors: reformat to 512 with the erase "
                                       "plan's scsi_reformat_512") for p in seen["problems"])
    # the erase plan with scsi_reformat_512: 520 -> 512, then the block erase REPORT
    # SUPPORTED OPERATION CODES offers, verified, in a PASS record that says Purge
    assert "plan rc=0" in log, run.read("plan.txt")[-3000:]
    rec = check_json(plan_file(run, "plan", "erase-record.json"))  # the schema
    san = rec["sanitization"]
    assert rec["result"]["status"] == "PASS", rec["result"]
    assert (san["method"], san["category"]) == ("scsi-sanitize-block", "Purge"), san
    assert "SCSI SANITIZE, BLOCK ERASE" in san["technique"]
    assert "version" in (rec["tools"].get("sg3_utils") or ""), rec["tools"]  # its tools' own
    refmt = san["scsi_reformat"]
    assert refmt["result"] == "done", refmt
    assert refmt["before"] == {"block_size": 520, "blocks": 32263, "size_bytes": 32263 * 520,
                               "protection_type": 0}, refmt
    assert refmt["after"] == {"block_size": 512, "blocks": SIZE // 512, "size_bytes": SIZE,
                              "protection_type": 0}, refmt
    assert (rec["drive"]["capacity_bytes"], rec["drive"]["logical_block_size"]) == (SIZE, 512)
    assert rec["verification"]["result"] == "passed" and rec["verification"]["sampled"] == 16
    steps = "\n".join(san["steps"])
    assert "(520 bytes a block, 32263 blocks, protection type 0)" in steps, steps
    assert "reformatted: 512 bytes a block, 32768 blocks" in steps, steps
    commands = plan_file(run, "plan", "log.txt").read_text()
    for tool in ("sg_opcodes", "sg_format --format --size=512 --quick --early",
                 "sg_requests --progress", "sg_sanitize --block --quick --early"):
        assert tool in commands, commands[-3000:]
    assert "FORMAT UNIT: 520 -> 512" in emu and "SANITIZE BLOCK: started" in emu
    assert run.read("size-512.txt").strip() == str(SIZE // 512)
    assert run.read("lbs-512.txt").strip() == "512"
    # the self-test by hand: started (SEND DIAGNOSTIC), in progress in the log with
    # REQUEST SENSE's progress, then a new entry that passed; an extended one aborted by -X
    assert "selftest-t rc=0" in log, run.read("smartctl-t-short.json")
    before = parse_scsi_self_test_log(run.read("smartctl-selftest-before.json"))
    running = parse_scsi_self_test_log(run.read("smartctl-selftest-running.json"))
    after = parse_scsi_self_test_log(run.read("smartctl-selftest-after.json"))
    assert running.running and running.entries[0].kind == "short", running
    assert "Progress indication" in run.read("sg_requests-selftest.txt")
    assert not after.running and after.signature != before.signature, (before, after)
    assert after.latest is not None and after.latest.passed is True, after
    assert "selftest-X rc=0" in log, run.read("smartctl-X.json")
    aborted = parse_scsi_self_test_log(run.read("smartctl-selftest-aborted.json"))
    assert (aborted.entries[0].kind, aborted.entries[0].result) == ("extended", 1), aborted
    # the grade plan's self-test: run, passed, and the grade says nothing against it
    assert "grade rc=0" in log, run.read("grade.txt")[-3000:]
    graded = json.loads(plan_file(run, "grade", "run.json").read_text())
    st = graded["self_test"]
    assert st["ran"] is True and st["kind"] == "short", st
    # polled every 5 s: the log's entry in progress and REQUEST SENSE's percentage
    assert re.search(r"self-test running +\d+\.\d% eta ", run.read("grade.txt")), \
        run.read("grade.txt")
    assert "sg_requests --progress" in plan_file(run, "grade", "log.txt").read_text()
    assert st["result"]["passed"] is True and st["result"]["status"] == "Completed", st
    assert graded["grade"]["grade"] == "reuse", graded["grade"]
    assert not [r for r in graded["grade"]["reasons"] if r["counter"] == "self_test"], graded
    assert graded["grade"]["inputs"]["self_test"]["passed"] is True, graded["grade"]["inputs"]
    # sg_format by hand to 4096, with progress
    assert "sg_format rc=0" in log, run.read("sg_format.txt")
    assert "Progress indication" in run.read("progress-format.txt")
    assert run.read("lbs-4096.txt").strip() == "4096"
    assert run.read("size-4096.txt").strip() == str(SIZE // 512)
    # sg_sanitize --block with progress; a read meanwhile is NOT READY, SANITIZE IN PROGRESS,
    # which sd retries until the drive is done (dd waits, then reads zeros)
    assert "sanitize-block rc=0" in log, run.read("sanitize-block.txt")
    assert "Progress indication" in run.read("progress-block.txt")
    assert "SCSI 28 -> CHECK CONDITION key 0x2 04/1b" in emu, emu[-3000:]
    seen = json.loads(run.read("readback-block.json"))
    assert seen == {"markers": 0, "bytes": SIZE, "common": [[0, SIZE]]}, seen
    # the failed overwrite: failure mode, reads refused, EXIT FAILURE MODE (AUSE) ends it
    assert "Sanitize command failed" in run.read("sg_requests-failed.txt")
    assert "read-failed rc=1" in log
    assert "exit-failure rc=0" in log, run.read("sanitize-fail.txt")
    assert "No additional sense" in run.read("sg_requests-after-exit.txt")
    error = run.read("ow/error.txt")
    assert "the sanitize failed" in error and "Sanitize command failed" in error, error
    error = run.read("inmode/error.txt")
    assert "sanitize failure mode" in error and "sg_sanitize --crypto" in error, error
    assert "crypto-hand rc=0" in log, run.read("sanitize-crypto-hand.txt")
    rec = run.erase_record("crypto")
    assert rec["method"] == "scsi-sanitize-crypto" and rec["verified"] is True, rec
    assert "4096 bytes a block, 4096 blocks" in "\n".join(rec["steps"]), rec["steps"]
    after = json.loads(run.read("smartctl-after.json"))
    assert after["scsi_self_test_0"]["result"]["value"] == 0, after  # the short test passed
    check_second_drive(run)
    keep = ("sg_inq.txt", "sg_vpd-sn.txt", "sg_vpd-di.txt", "sg_vpd-bl.txt", "sg_vpd-bdc.txt",
            "sg_readcap-520.txt", "sg_readcap-512.txt", "sg_opcodes.txt",
            "sg_requests-progress-idle.txt", "sg_requests-idle.txt", "sg_requests-failed.txt",
            "sg_requests-after-exit.txt", "smartctl-a.json", "smartctl-a.txt",
            "smartctl-after.json", "sg_format.txt", "progress-format.txt", "progress-block.txt",
            "sanitize-block.txt", "smartctl-selftest-before.json", "smartctl-t-short.json",
            "smartctl-selftest-running.json", "smartctl-selftest-running.txt",
            "sg_requests-selftest.txt", "smartctl-selftest-after.json", "smartctl-t-long.json",
            "smartctl-X.json", "smartctl-selftest-aborted.json", "sg_opcodes-no-sanitize.txt",
            "smartctl-x.json", "smartctl-x-worn.json")
    if os.environ.get("SSDBENCH_SAVE_SAS_CAPTURES"):  # refresh tests/data/sas-emu/
        CAPTURES.mkdir(parents=True, exist_ok=True)
        for name in keep:
            shutil.copy(run.share_dir / name, CAPTURES / name)
        shutil.rmtree(CAPTURES / "bundle-520", ignore_errors=True)
        shutil.copytree(run.share_dir / "bundle-520", CAPTURES / "bundle-520")


def check_second_drive(run: GuestRun) -> None:
    """The worn drive without SANITIZE: REPORT SUPPORTED OPERATION CODES lists none and the
    opcode is refused; smartctl -x reads both drives without its exit bit 2 (log page 15h,
    background scan results, answered); `ssdbench list` offers scsi-format; the erase plan
    formats it (FORMAT UNIT, the block size kept) into a PASS record that says Clear and
    why, with none of the markers left; the grade plan grades it scrap."""
    log = run.read("job.log")
    emu2 = run.read("emu2.log")
    assert "attached as" in emu2, run.read("serve2.out")[-2000:]
    opcodes = run.read("sg_opcodes-no-sanitize.txt")
    assert "Format Unit" in opcodes and "Sanitize" not in opcodes, opcodes
    # sg3_utils exit status 9: INVALID COMMAND OPERATION CODE (5 is another ILLEGAL REQUEST)
    assert "sanitize-none rc=9" in log, run.read("sanitize-none.txt")
    assert "SCSI 48 -> CHECK CONDITION key 0x5 20/00" in emu2, emu2[-2000:]
    for name, hours in (("smartctl-x.json", 1234), ("smartctl-x-worn.json", 46000)):
        x = json.loads(run.read(name))
        assert x["smartctl"]["exit_status"] & 4 == 0, (name, x["smartctl"])
        assert x["power_on_time"]["hours"] == hours, (name, x.get("power_on_time"))
        assert "scsi_background_scan" in x, name
    worn = json.loads(run.read("smartctl-x-worn.json"))
    assert worn["smart_status"]["passed"] is False  # IE 5Dh/00h: FAILURE PREDICTION
    listed = [d for d in json.loads(run.read("list-2.json")) if d["serial"] == SERIAL2]
    assert len(listed) == 1, run.read("list-2.json")[-3000:] + run.read("list-2.err")
    (seen,) = listed
    assert seen["erase_methods"] == ["scsi-format"] and seen["erase_refusal"] == [], seen
    # the erase plan: FORMAT UNIT, the markers written before and none left after, PASS
    # recorded as Clear with the reason it is not Purge
    assert "plan2 rc=0" in log, run.read("plan2.txt")[-3000:]
    rec = check_json(plan_file(run, "plan2", "erase-record.json"))
    san = rec["sanitization"]
    assert rec["result"]["status"] == "PASS", rec["result"]
    assert rec["result"]["reason"].startswith("Clear by SCSI FORMAT UNIT"), rec["result"]
    assert (san["method"], san["category"]) == ("scsi-format", "Clear"), san
    assert "FORMAT UNIT" in san["technique"] and "not Purge" in san["note"], san
    assert rec["verification"]["result"] == "passed" and rec["verification"]["sampled"] == 16
    steps = "\n".join(san["steps"])
    assert "no SANITIZE service action" in steps, steps
    assert "FORMAT UNIT started, keeping 512 bytes a block, 16384 blocks" in steps, steps
    assert "512 bytes a block, 16384 blocks, protection type 0, as before" in steps, steps
    commands = plan_file(run, "plan2", "log.txt").read_text()
    assert "sg_format --format --size=512 --fmtpinfo=0 --quick --early" in commands, commands
    assert not re.search(r"sg_sanitize --(block|crypto|overwrite)", commands), commands
    assert "FORMAT UNIT: 512 -> 512 bytes a block" in emu2, emu2[-2000:]
    seen = json.loads(run.read("readback-format.json"))
    assert seen == {"markers": 0, "bytes": SIZE2, "common": [[0, SIZE2]]}, seen
    # the grade plan: the worn drive is scrap, for what its log pages and self-test say
    assert "grade2 rc=0" in log, run.read("grade2.txt")[-3000:]
    graded = json.loads(plan_file(run, "grade2", "run.json").read_text())
    grade = graded["grade"]
    assert grade["grade"] == "scrap", grade
    counters = {r["counter"] for r in grade["reasons"]}
    assert {"smart_status", "uncorrected_errors", "grown_defects", "self_test",
            "power_on_hours", "percentage_used"} <= counters, grade["reasons"]
    assert graded["self_test"]["ran"] is True and graded["self_test"]["result"]["passed"] is False
