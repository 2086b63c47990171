"""Station mode end to end: the kiosk boots with no drive to erase and waits
(`[station]`); two NVMe drives are then plugged in with QMP (`blockdev-add`, `device_add`
into empty PCIe root ports, run-qemu.sh --hotplug-ports). The first is discovered, erased
(a real Format NVM, verified by read-back), recorded (a signed record that
`ssdbench verify-record` accepts; a row in the session CSV) and announced. The second is
plugged in before it, its I/O throttled to a few operations a second so that its erase
lasts, and pulled with `device_del` when the first one's erase starts: both are erasing
then; the pulled one's record says FAIL with the reason, the other goes on to PASS. Nothing is plugged in
for `idle_minutes`, so the session ends by itself and powers off.

The lab's signing key is not on the stick: the config's `record_key` is a URL on this test's
HTTP server on 127.0.0.1 (10.0.2.2 on QEMU's user network), with a user and password; the
kiosk fetches it into memory at the start (kiosk/labkey.py), and no byte of it reaches the
stick, the results or the console (docs/security.md "The lab's key")."""

from __future__ import annotations

import base64
import csv
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.e2e.rig import Boot, QmpAt, boot_kiosk, nvme_hot_add
from tests.unit.kiosk.test_config_url import Server

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(1200)]

KEPT = "E2ESTATIONOK1"
PULLED = "E2ESTATIONPULL1"
DRIVE_BYTES = 64 * 1024 * 1024
IDLE_MINUTES = 0.5
KEY_PASSWORD = "St4tion-key-pw"
CONFIG = f"""\
plan = "erase"
select = ["serial:{KEPT}", "serial:{PULLED}"]
destroy = ["{KEPT}", "{PULLED}"]
on_finish = "poweroff"
svg = false

[params]
operator = "E2E Operator"
organisation = "ssdbench e2e lab"
record_key = "http://lab:{KEY_PASSWORD}@10.0.2.2:{{port}}/keys/station.pem"

[station]
idle_minutes = {IDLE_MINUTES}
"""
# the drive to pull is plugged in alone (the only NVMe drive: nvme0n1), the other once the
# station found it (nvme1n1); the pull comes when nvme1n1's erase starts
WAITING = r"ssdbench: station: waiting for drives"
PLUG_KEPT_AT = rf"ssdbench: station: nvme0n1 \(QEMU NVMe Ctrl {PULLED}\) found: erasing"
PULL_AT = r"ssdbench: nvme1n1 erase erase started"


@dataclass
class LabKey:
    """The lab's key, served by this test's HTTP server on 127.0.0.1 only."""

    private: Ed25519PrivateKey
    server: Server

    @property
    def pem(self) -> bytes:
        return self.private.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())

    @property
    def secrets(self) -> list[bytes]:
        """The key as PEM, as the PEM's base64 body, as its 32 raw bytes."""
        raw = self.private.private_bytes(serialization.Encoding.Raw,
                                         serialization.PrivateFormat.Raw,
                                         serialization.NoEncryption())
        return [self.pem, b"".join(self.pem.splitlines()[1:-1]), raw]


@pytest.fixture(scope="module")
def lab_key() -> Iterator[LabKey]:
    key = LabKey(Ed25519PrivateKey.generate(), Server())
    key.server.files["/keys/station.pem"] = (200, key.pem)
    yield key
    key.server.stop()


@pytest.fixture(scope="module")
def station(dev_image: Path, lab_key: LabKey,
            tmp_path_factory: pytest.TempPathFactory) -> tuple[Boot, Path, float]:
    work = tmp_path_factory.mktemp("station")
    public = work / "lab-key.pub.pem"
    public.write_bytes(lab_key.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    images = []
    for serial in (KEPT, PULLED):
        image = work / f"{serial}.img"
        with image.open("wb") as fh:
            fh.truncate(DRIVE_BYTES)
        images.append(image)
    t0 = time.monotonic()
    b = _boot(work, lab_key.server, images)
    return b, public, time.monotonic() - t0


def _boot(work: Path, server: Server, images: list[Path]) -> Boot:
    pull = {"execute": "device_del", "arguments": {"id": "hotpulled"}}
    return boot_kiosk(
        work, CONFIG.format(port=server.port), hotplug_ports=2, net=True,
        qmp_at=(QmpAt(WAITING, nvme_hot_add("hotpulled", images[1], PULLED, "hotplug1",
                                            iops=4)),
                QmpAt(PLUG_KEPT_AT, nvme_hot_add("hotkept", images[0], KEPT, "hotplug0")),
                QmpAt(PULL_AT, (pull,))),
        timeout_s=600, direct=True)


def _drive_dir(b: Boot, serial: str) -> Path:
    return b.drive_dir(serial)


def _record(b: Boot, serial: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (_drive_dir(b, serial) / "erase" / "erase-record.json").read_text())
    return data


def test_both_drives_were_plugged_in_and_one_pulled_mid_erase(
        station: tuple[Boot, Path, float]) -> None:
    b, _pub, seconds = station
    print(f"station e2e: {seconds:.0f} s from QEMU start to power-off")
    assert [f.replies for f in b.qmp_fired] == [({"return": {}},) * 3,
                                                 ({"return": {}},) * 2,
                                                 ({"return": {}},)], b.tail(80)
    assert f"station: nvme1n1 (QEMU NVMe Ctrl {KEPT}) found: erasing" in b.serial
    # the pull came while the station was erasing both: the pulled one FAILs, the other
    # had started before and PASSes after
    kept_started = b.seconds_until("nvme1n1 erase erase started")
    assert kept_started < b.seconds_until(f"({PULLED}) FAIL"), b.tail(80)
    assert f"({KEPT}) PASS" in b.serial, b.tail(80)
    assert b.seconds_until("nvme0n1 erase erase started") < b.qmp_fired[2].at_s
    assert f"({PULLED}) removed (FAIL)" in b.serial, b.tail(80)


def test_the_plugged_in_drive_is_erased_verified_and_recorded(
        station: tuple[Boot, Path, float]) -> None:
    b, public, _s = station
    record = _record(b, KEPT)
    assert record["result"]["status"] == "PASS", record["result"]
    assert record["sanitization"]["category"] == "Purge"
    assert record["sanitization"]["method"] == "nvme-format-user-data"
    assert record["drive"]["serial"] == KEPT
    assert record["people"]["operator"] == "E2E Operator"
    assert "ssdbench image " in record["tools"]["image"]  # /etc/ssdbench-image-id
    assert record["verification"]["result"] == "passed"
    assert record["verification"]["sampled"] == 16 and record["verification"]["survivors"] == []
    entry = Path(sys.executable).with_name("ssdbench")
    path = _drive_dir(b, KEPT) / "erase" / "erase-record.json"
    checked = subprocess.run([str(entry), "verify-record", str(path), "--key", str(public)],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert record["signature"]["fingerprint"] in checked.stdout
    # one changed byte of the real record (a digit of the serial) fails the check
    data = path.read_bytes()
    at = data.index(KEPT.encode()) + len(KEPT) - 1
    tampered = path.with_name("tampered.json")
    tampered.write_bytes(data[:at] + (b"2" if data[at:at + 1] != b"2" else b"3") + data[at + 1:])
    refused = subprocess.run([str(entry), "verify-record", str(tampered), "--key", str(public)],
                             capture_output=True, text=True, check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    # the printable certificate beside it, in both formats (WeasyPrint runs in the image)
    pdf = (path.parent / "erase-certificate.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 5000
    assert KEPT in (path.parent / "erase-certificate.html").read_text()
    # graded from its own counters before the erase (#32): QEMU's NVMe health log is clean
    assert record["grade"] == {"grade": "reuse", "reasons": []}, record["grade"]
    assert "Drive health — grade: reuse" in (path.parent / "erase-certificate.html").read_text()
    # the record's place in the results folder's chain (#28): one chain, both drives
    chain = subprocess.run([str(entry), "verify-record", "--chain", str(b.results / "ssdbench"),
                            "--key", str(public)], capture_output=True, text=True, check=False)
    assert chain.returncode == 0, chain.stdout + chain.stderr
    assert "records 1..2, 2 file(s)" in chain.stdout, chain.stdout
    line = next(ln for ln in b.serial.splitlines() if f"nvme1n1 ({KEPT}) PASS" in ln)
    assert "Purge, nvme-format-user-data, signed" in line, line


def test_the_pulled_drive_fails_cleanly_with_the_reason(
        station: tuple[Boot, Path, float]) -> None:
    b, _pub, _s = station
    run = json.loads((_drive_dir(b, PULLED) / "erase" / "run.json").read_text())
    assert run["state"] == "failed", run
    record = _record(b, PULLED)
    assert record["result"]["status"] == "FAIL"
    reason = record["result"]["reason"]
    print(f"pulled drive's record reason: {reason}")
    assert "the drive disappeared during the erase (/dev/nvme0n1 is gone)" in reason, reason
    assert record["drive"]["serial"] == PULLED
    assert run["error"].startswith("stage erase: erase record FAIL"), run["error"]


def test_session_csv_kiosk_txt_and_the_end(station: tuple[Boot, Path, float]) -> None:
    b, _pub, _s = station
    root = b.results / "ssdbench"
    sessions = list(root.glob("erase-session-*.csv"))
    assert len(sessions) == 1, sorted(p.name for p in root.iterdir())
    with sessions[0].open(newline="") as fh:
        rows = {r["serial"]: r["result"] for r in csv.DictReader(fh)}
    assert rows == {KEPT: "PASS", PULLED: "FAIL"}
    kiosk = (root / "kiosk.txt").read_text().splitlines()
    assert any(f"{KEPT}) PASS:" in ln for ln in kiosk), kiosk
    assert any(f"{PULLED}) FAIL, removed:" in ln for ln in kiosk), kiosk
    assert f"ssdbench: station: idle for {IDLE_MINUTES:g} min: the session ends" in b.serial
    assert "ssdbench: poweroff" in b.serial, b.tail()
    assert b.returncode == 0, b.tail()
    state = json.loads((root / "state.json").read_text())
    assert state["drives"][KEPT]["state"] == "done"
    assert state["drives"][PULLED]["state"] == "failed"
    assert b.bystander_sha_after == b.bystander_sha_before
    assert b.boot_partition_sha_after == b.boot_partition_sha_before


def _holding(data: Path, secrets: list[bytes]) -> list[bytes]:
    """The secrets found anywhere in the file ``data`` (read in overlapping pieces)."""
    found: set[bytes] = set()
    overlap = max(len(x) for x in secrets)
    tail = b""
    with data.open("rb") as fh:
        while piece := fh.read(16 * 2**20):
            window = tail + piece
            found.update(x for x in secrets if x in window)
            tail = window[-overlap:]
    return sorted(found)


def test_the_lab_key_came_from_the_network_and_nothing_written_holds_it(
        station: tuple[Boot, Path, float], lab_key: LabKey) -> None:
    """The key was fetched with the URL's user and password into memory only: not one
    form of it (PEM, its base64 body, its 32 raw bytes) is anywhere on the stick's image,
    in a results file or on the console; the records it signed verify (above)."""
    b, _pub, _s = station
    shown = f"http://10.0.2.2:{lab_key.server.port}/keys/station.pem"
    assert f"ssdbench: lab key {shown}: SHA256:" in b.serial, b.tail(120)
    assert "held in memory only" in b.serial
    assert "network wanted (" in b.serial and "has a record_key URL" in b.serial
    auth = "Basic " + base64.b64encode(f"lab:{KEY_PASSWORD}".encode()).decode()
    assert lab_key.server.auth == [auth]  # once, at the start: the key stays in memory
    assert _holding(b.workdir / "stick.img", lab_key.secrets) == []
    assert _holding(b.workdir / "serial.log", [*lab_key.secrets, KEY_PASSWORD.encode()]) == []
    # every file of the results partition but the config the test put there (its key URL
    # carries the password: docs/security.md says what holding the stick allows)
    written = [p for p in b.results.rglob("*") if p.is_file() and p.name != "ssdbench.toml"]
    assert len(written) > 10, written
    assert [p for p in written
            if _holding(p, [*lab_key.secrets, KEY_PASSWORD.encode()])] == []
