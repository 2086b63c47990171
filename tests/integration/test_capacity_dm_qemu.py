"""A fake built from real kernel parts (#32 item 5): in a QEMU guest (TCG, the host's Debian
kernel, qemu_helper.py), device-mapper tables over the emulated 32 MiB NVMe drive claim twice
its size: one maps the second half onto the first again (a wrap, "twice over"), the other
maps it to the zero target (writes vanish, reads give zeros: a drop). A second NVMe drive
is simdrive's counterfeit (--fake wrap, served over NBD from the host). The quick check
finds each for what it is, with the real capacity to the byte; the NVMe drive itself
passes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import require_root
from tests.integration.qemu_helper import run_guest
from tests.simknown import simulated_drive

GUEST_SCRIPT = Path(__file__).with_name("guest_capacity.py")
SSDBENCH = Path(sys.executable).with_name("ssdbench")
MIB = 2**20
NVME_MIB = 32
# a simulated counterfeit (scripts/simdrive --fake wrap): an odd IDEMA-like claim of 300,007
# sectors (153,603,584 bytes) wrapping onto 64 MiB
FAKE_SERIAL = "SIMFAKEWRAP01"
FAKE_CLAIM, FAKE_REAL = "300007s", 64 * 2**20
JOB = f"""
SSDBENCH={SSDBENCH}
export PYTHONDONTWRITEBYTECODE=1 DM_DISABLE_UDEV=1
modprobe dm-mod && modprobe dm-zero || exit 10
S=$(blockdev --getsz /dev/nvme0n1)
check() {{ {sys.executable} {GUEST_SCRIPT} "$1" "$2"; echo "check $2 rc=$?"; }}
check /dev/nvme0n1 genuine.json
# the grade plan on the emulated NVMe drive: its short self-test (refused by QEMU's
# controller: no device self-test), its counters graded
$SSDBENCH run /dev/nvme0n1 --plan grade --quiet --no-svg --results /run/out/grade \
    > grade.log 2>&1
echo "grade rc=$?"
printf '0 %s linear /dev/nvme0n1 0\\n%s %s linear /dev/nvme0n1 0\\n' $S $S $S \\
    | dmsetup create ssdbench-wrap || exit 11
blockdev --getsize64 /dev/mapper/ssdbench-wrap
check /dev/mapper/ssdbench-wrap wrap.json
# the intake plan on the fake (ssdbench run: check, grade, erase, record), as a bench runs it
$SSDBENCH run dm-0 --plan intake --destroy dm-0 \
    --erase-fallback discard --quiet --no-svg --results /run/out/intake \
    --set record_pdf=false > intake.log 2>&1
echo "intake rc=$?"
dmsetup remove ssdbench-wrap
printf '0 %s linear /dev/nvme0n1 0\\n%s %s zero\\n' $S $S $S | dmsetup create ssdbench-drop \\
    || exit 12
check /dev/mapper/ssdbench-drop drop.json
dmsetup remove ssdbench-drop
# the simulated counterfeit NVMe SSD (simdrive on the host, through QEMU's NBD client): the
# controller whose serial is the fake's
for c in /sys/class/nvme/nvme*; do
    [ "$(cat $c/serial | tr -d ' ')" = "{FAKE_SERIAL}" ] && fake=/dev/$(basename $c)n1
done
blockdev --getsize64 "$fake"
check "$fake" simfake.json
"""


def test_device_mapper_fakes_are_found_with_their_real_capacity(tmp_path: Path) -> None:
    require_root()
    with simulated_drive(tmp_path / "simfake", "enterprise", FAKE_CLAIM, 3000,
                         serial=FAKE_SERIAL, attach=False, fake="wrap",
                         real_size=str(FAKE_REAL)) as fake:
        run = run_guest(JOB, tmp_path / "vm", nvme_size_mib=NVME_MIB, timeout_s=300,
                        nbd_nvme=((str(fake.socket), FAKE_SERIAL),))
    log = run.read("job.log")
    assert run.returncode == 0, run.console[-2000:] + log[-3000:]
    for name in ("genuine", "wrap", "drop", "simfake"):
        assert f"check {name}.json rc=0" in log, log[-3000:]
    # the counterfeit simdrive as a guest sees an NVMe SSD: its claim, what it holds
    assert "153603584" in log, log[-3000:]
    simfake = json.loads(run.read("simfake.json"))
    assert (simfake["verdict"], simfake["claimed_bytes"], simfake["real_bytes"]) == (
        "wraps", 153_603_584, FAKE_REAL), simfake
    genuine = json.loads(run.read("genuine.json"))
    assert (genuine["verdict"], genuine["real_bytes"]) == ("genuine", NVME_MIB * MIB)
    wrap = json.loads(run.read("wrap.json"))
    assert wrap["claimed_bytes"] == 2 * NVME_MIB * MIB
    assert (wrap["verdict"], wrap["real_bytes"]) == ("wraps", NVME_MIB * MIB), wrap
    drop = json.loads(run.read("drop.json"))
    assert (drop["verdict"], drop["real_bytes"]) == ("drops", NVME_MIB * MIB), drop
    print(f"dm fakes: wrap {wrap['seconds']} s, drop {drop['seconds']} s, genuine "
          f"{genuine['seconds']} s; simdrive's counterfeit {simfake['seconds']} s (TCG)")
    # the grade plan on QEMU's NVMe drive: read-only, its self-test refused (recorded so),
    # its clean health log otherwise: reuse, with the one note that the self-test did not run
    assert "grade rc=0" in log, run.read("grade.log")[-3000:]
    [grade_run] = list((run.share_dir / "grade").rglob("grade/run.json"))
    graded = json.loads(grade_run.read_text())
    assert graded["self_test"]["ran"] is False, graded["self_test"]
    assert "nvme device-self-test refused" in graded["self_test"]["reason"]
    assert graded["grade"]["grade"] == "reuse, with a note", graded["grade"]
    reasons = [r["text"] for r in graded["grade"]["reasons"]]
    assert len(reasons) == 1 and reasons[0].startswith(
        "the self-test did not run: nvme device-self-test refused"), reasons
    # the intake plan on the wrapping fake: the check fails it with what it holds, the
    # erase still runs (a dm device: discarded, FAIL) and its record carries the check
    assert "intake rc=1" in log, run.read("intake.log")[-3000:]
    [auth] = list((run.share_dir / "intake").rglob("authenticity/run.json"))
    checked = json.loads(auth.read_text())["authenticity"]
    assert (checked["verdict"], checked["real_bytes"]) == ("wraps", NVME_MIB * MIB)
    [record] = list((run.share_dir / "intake").rglob("erase-record.json"))
    assert json.loads(record.read_text())["authenticity"]["verdict"] == "wraps"
