"""A lab's benches in QEMU (#21 item 6, docs/lab.md): no stick; the dev image boots from the
network like a bench on a lab's PXE server: QEMU's user-mode network gives DHCP and, over its
TFTP, the iPXE script of `scripts/netboot.sh`; iPXE (Debian's ipxe-qemu ROM of the e1000 NIC)
loads the kernel and the initramfs over HTTP from a server of this test on 127.0.0.1 (the
guest sees the host's loopback as 10.0.2.2). The kiosk config comes over HTTP from the same
server (``ssdbench.config=http://...``) and the results go to s3proxy on 127.0.0.1.

* Bench 1 (named by QEMU's DHCP host name) runs the trim plan on an emulated NVMe drive;
  its link is cut (QMP ``set_link``) while a stage starts and restored once the console said
  the store is unreachable: every object in the bucket then parses and equals the file the
  guest wrote (the guest prints each results file's SHA-256 on the serial console at the
  end, ``ssdbench.manifest=1``), nothing is missing.
* Bench 2 (named by ``ssdbench.bench=``) runs the diagnose plan: a second bench in the same
  store; ``ssdbench fleet`` builds one page of both. Its config server is started only once
  the console said the kiosk waits for it (connection refused): the fetch retries.
* Jobs in, results out (#46): a job file in the store (`[jobs] store = "jobs.toml"`) gives
  the two benches' drives their plans by serial over the configs' `diagnose`: bench 1's the
  trim plan, bench 2's the erase plan with its record. Bench 2 asks each drive's asset tag
  (`[fields] ask`), typed on its serial console as a barcode scanner types (the code, CR
  LF) once the console asks; the tag is on the erase record, the certificate and in the
  fleet's fleet.csv. Both benches post to the reference asset receiver (tests/
  assetreceiver.py on 127.0.0.1, `[post] what = "runs"`), which validated every record
  and run.json it filed.
* Bench 3 boots by UEFI (OVMF; benches 1 and 2 by legacy BIOS PXE) and has a wrong secret
  key: a clear console line, results kept in RAM, nothing of it in the bucket (QEMU is
  stopped there: with no stick the bench would retry for ever).

No traffic goes anywhere but 127.0.0.1 and QEMU's user network: every URL the guest gets
names 10.0.2.2 (the host's loopback) by address."""

from __future__ import annotations

import csv
import functools
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ssdbench.lab.config import parse_store
from ssdbench.lab.store import open_store
from tests.assetreceiver import AssetReceiver
from tests.conftest import REPO, require_root
from tests.e2e.rig import (
    BOOT_TIMEOUT_S,
    BYSTANDER_BYTES,
    BYSTANDER_SERIAL,
    DEV_IMAGE_DIR,
    RUN_QEMU,
    QmpAt,
    QmpFired,
    _run_with_triggers,
    sha256_file,
    write_pattern,
)
from tests.integration.test_store import KEY, SECRET, S3Proxy, free_port, make_bucket

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(1800)]

NETBOOT = REPO / "scripts" / "netboot.sh"
GUEST_HOST = "10.0.2.2"  # the host's 127.0.0.1 as QEMU's user network shows it to the guest
BUCKET = "lab"
PREFIX = "lab1"
NVME_SERIAL = "E2ENETNVME01"
DIAG_SERIAL = "E2ENETNVME02"
BENCH1 = "rack1-bench01"  # QEMU's DHCP hands it out
BENCH2 = "rack1-bench02"  # ssdbench.bench=
BENCH3 = "rack1-bench03"
MANIFEST_BEGIN = "=== SSDBENCH-MANIFEST-BEGIN ==="
MANIFEST_END = "=== SSDBENCH-MANIFEST-END ==="
_RUN_DIR = re.compile(r"^(\d{8}T\d{6}Z)_.*_([A-Za-z0-9]+)$")
ASSET_TAG = "A-4477-NET"  # scanned on bench 2's console
RECEIVER_TOKEN = "netboot-receiver-token"
# the lab's jobs, by serial, over the configs' own plan (diagnose)
JOBS = f"""[[job]]
id = "J-NET-1"
serial = "{NVME_SERIAL}"
plan = "trim"

[[job]]
id = "J-NET-2"
serial = "{DIAG_SERIAL}"
plan = "erase"
params = {{record_pdf = false}}
fields = {{customer = "ACME Netboot", lot = "L-NET-7"}}
"""


def kiosk_config(plan: str, serial: str, s3_port: int, *, secret: str = SECRET,
                 bench: str = "", lab_systems: str = "") -> str:
    # the real stages, their durations shrunk for TCG (the plans themselves are checked in
    # test_kiosk_quick.py; here the network is)
    params = ('[params]\ntorture_seconds = 8\ntrim_torture_seconds = 8\n'
              'probe_gib = 0.015625\nerase_fallback = "discard"\ntrim_idle_seconds = 1\n'
              'random_read_seconds = 5\n\n')
    return (f'plan = "{plan}"\nselect = ["serial:{serial}"]\ndestroy = ["{serial}"]\n'
            # "stay": the session prints the manifest, then ssdbench.poweroff=1 powers off
            # (the kiosk's own power-off would come first)
            'on_finish = "stay"\nsvg = false\n\n' + params
            + f'[store]\nkind = "s3"\nendpoint = "http://{GUEST_HOST}:{s3_port}"\n'
            f'bucket = "{BUCKET}"\nprefix = "{PREFIX}"\naccess_key = "{KEY}"\n'
            f'secret_key = "{secret}"\nstatus_seconds = 2\n'
            + (f'bench = "{bench}"\n' if bench else "") + lab_systems)


def lab_systems(receiver_port: int, *, ask: bool = False) -> str:
    """[jobs] from the store, [post] to the receiver, and (``ask``) the asset tag asked."""
    return (f'\n[jobs]\nstore = "jobs.toml"\nno_job = "wait"\n'
            f'\n[post]\nurl = "http://{GUEST_HOST}:{receiver_port}/api/ssdbench"\n'
            f'token = "{RECEIVER_TOKEN}"\nwhat = "runs"\n'
            + ('\n[fields]\nask = ["asset_tag"]\n' if ask else ""))


class Http:
    """A static HTTP server of this test on 127.0.0.1 (kernel, initramfs, configs)."""

    def __init__(self, root: Path, port: int = 0) -> None:
        handler = functools.partial(_Quiet, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.1,),
                                       daemon=True)
        self.thread.start()

    def guest_url(self, path: str) -> str:
        return f"http://{GUEST_HOST}:{self.port}/{path}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, dev_image: Path) -> Iterator[dict[str, Any]]:
    require_root()
    base = tmp_path_factory.mktemp("lab")
    s3 = S3Proxy(base / "s3proxy", free_port())
    s3.start()
    make_bucket(s3, BUCKET)
    www = base / "www"
    www.mkdir()
    # a copy of the image's kernel and initramfs: another test may rebuild the image while
    # a bench here loads them
    image = base / "image"
    image.mkdir()
    for name in ("vmlinuz", "initrd.img", "image-id"):
        shutil.copyfile(DEV_IMAGE_DIR / name, image / name)
    http_server = Http(www)
    late: list[Any] = []  # servers a test starts while a guest waits (each has stop())
    try:
        yield {"base": base, "s3": s3, "www": www, "http": http_server, "late": late,
               "image": image}
    finally:
        for server in [http_server, *late]:
            server.stop()
        s3.stop()


def netboot(lab: dict[str, Any], name: str, config: str, *, append: str = "",
            hostname: str | None = None, nvme: tuple[str, ...] = (),
            qmp_at: tuple[QmpAt, ...] = (), config_port: int | None = None,
            uefi: bool = False, serial_input: Path | None = None,
            ) -> tuple[int, str, tuple[QmpFired, ...], Path]:
    """One bench booted from the network with ``config`` as its kiosk config over HTTP
    (from the server on ``config_port`` when given, else the boot server), by SeaBIOS's
    legacy PXE or, with ``uefi``, OVMF's; returns QEMU's exit code, the serial console,
    what the QMP triggers did, the workdir."""
    work = lab["base"] / name
    work.mkdir()
    www: Path = lab["www"]
    (www / f"{name}.toml").write_text(config)
    http_server: Http = lab["http"]
    tftp = www / name  # boot.ipxe for QEMU's TFTP; kernel and initramfs as links, over HTTP
    config_url = (http_server.guest_url(f"{name}.toml") if config_port is None
                  else f"http://{GUEST_HOST}:{config_port}/{name}.toml")
    # init_on_alloc=0: the TCG guest's kernel arguments run-qemu.sh adds to a stick's boot
    cmdline = (f"ssdbench.config={config_url} ssdbench.poweroff=1 "
               f"ssdbench.mirror=ttyS0 ssdbench.manifest=1 ssdbench.settle=3 init_on_alloc=0 "
               f"{append}").strip()
    from ssdbench.system import SystemRunner

    SystemRunner().run([str(NETBOOT), "--out", str(tftp), "--link",
                        "--kernel", str(lab["image"] / "vmlinuz"),
                        "--initrd", str(lab["image"] / "initrd.img"),
                        "--base-url", http_server.guest_url(name), "--append", cmdline],
                       timeout=60)
    bystander = work / "bystander.img"
    bystander_sha = write_pattern(bystander, BYSTANDER_BYTES)
    argv = [str(RUN_QEMU), "--batch", "--netboot", str(tftp), "--workdir", str(work / "qemu"),
            "--timeout", str(BOOT_TIMEOUT_S)]
    if uefi:
        argv.append("--uefi")
    if serial_input is not None:
        argv += ["--serial-input", str(serial_input)]
    if hostname:
        argv += ["--net-hostname", hostname]
    for spec in nvme:
        argv += ["--nvme", spec]
    argv += ["--sata", f"file={bystander},serial={BYSTANDER_SERIAL},model=ssdbench bystander"]
    rc, fired = _run_with_triggers(argv, work / "qemu", qmp_at, BOOT_TIMEOUT_S + 60)
    serial = (work / "qemu" / "serial.log").read_text(errors="replace")
    assert sha256_file(bystander) == bystander_sha, "the bystander drive was written"
    return rc, serial, fired, work


def manifest(serial: str) -> dict[str, str]:
    """The guest's results files (path in the results folder -> SHA-256)."""
    begin, end = serial.rfind(MANIFEST_BEGIN), serial.rfind(MANIFEST_END)
    assert 0 <= begin < end, f"no manifest on the serial console:\n{serial[-3000:]}"
    out = {}
    for line in serial[begin + len(MANIFEST_BEGIN):end].splitlines():
        m = re.fullmatch(r"([0-9a-f]{64})  \./(.+)", line.strip())
        if m:
            out[m.group(2)] = m.group(1)
    return out


def store_key(bench: str, rel: str) -> str:
    """docs/lab.md "Keys in the store": where a results file goes."""
    first, _, rest = rel.partition("/")
    m = _RUN_DIR.match(first)
    if not rest or m is None:
        return f"{PREFIX}/{bench}/_bench/{rel}"
    return f"{PREFIX}/{bench}/{m.group(2)}/{m.group(1)}/{rest}"


def store_of(lab: dict[str, Any]) -> Any:
    """The bucket through the product's own S3 client settings."""
    return open_store(parse_store({"kind": "s3", "endpoint": lab["s3"].endpoint,
                                   "bucket": BUCKET, "access_key": KEY, "secret_key": SECRET},
                                  Path(".")))


def bucket(lab: dict[str, Any]) -> dict[str, bytes]:
    """Every object in the bucket, read with the product's own S3 client settings."""
    store = store_of(lab)
    return {k: store.get(k) for k in store.keys("") if not k.endswith("/jobs.toml")}


def parses(key: str, data: bytes) -> None:
    """Each kind of results file is what its name says."""
    if key.endswith(".json"):
        json.loads(data)
    elif key.endswith(".csv"):
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
        assert rows and all(len(r) == len(rows[0]) for r in rows), key
    elif key.endswith(".html"):
        assert b"<html" in data[:2000].lower(), key
    elif key.endswith(".png"):
        assert data.startswith(b"\x89PNG"), key
    elif key.endswith(".pdf"):  # the batch page (#45), a certificate
        assert data.startswith(b"%PDF-"), key
    else:
        data.decode("utf-8")  # logs, job files, fio output: text


def assert_bench_arrived(objects: dict[str, bytes], bench: str, serial: str,
                         console: str) -> dict[str, str]:
    files = manifest(console)
    assert any(rel.endswith("/drive.json") for rel in files), files
    want = {store_key(bench, rel): sha for rel, sha in files.items()}
    got = {k: v for k, v in objects.items()
           if k.startswith(f"{PREFIX}/{bench}/") and k != f"{PREFIX}/{bench}/status.json"}
    assert sorted(got) == sorted(want), (sorted(set(want) - set(got)),
                                         sorted(set(got) - set(want)))
    for key, data in got.items():
        assert hashlib.sha256(data).hexdigest() == want[key], f"{key} differs from the guest's"
        parses(key, data)
    assert any(f"/{serial}/" in k for k in got), sorted(got)
    status = json.loads(objects[f"{PREFIX}/{bench}/status.json"])
    assert status["bench"] == bench and status["state"] == "done", status
    assert status["store"]["last_error"] is None, status
    return want


def test_benches_boot_from_the_network_and_fill_one_store(lab: dict[str, Any]) -> None:
    s3_port = lab["s3"].port
    receiver = AssetReceiver(lab["base"] / "received", token=RECEIVER_TOKEN)
    lab["late"].append(SimpleNamespace(stop=receiver.close))  # stopped with the servers
    store_of(lab).put(f"{PREFIX}/jobs.toml", JOBS.encode())
    drive = lab["base"] / "nvme-quick.img"
    drive.write_bytes(b"")
    drive_size = 160 * 1024 * 1024
    with drive.open("r+b") as f:
        f.truncate(drive_size)

    # -- bench 1: trim plan, named by DHCP, link cut mid-run and restored
    link = [{"execute": "set_link", "arguments": {"name": "nic0", "up": False}}]
    relink = [{"execute": "set_link", "arguments": {"name": "nic0", "up": True}}]
    rc, console, fired, _work = netboot(
        lab, "bench1", kiosk_config("diagnose", NVME_SERIAL, s3_port,
                                    lab_systems=lab_systems(receiver.port)),
        hostname=BENCH1,
        nvme=(f"file={drive},serial={NVME_SERIAL}",),
        qmp_at=(QmpAt(r"^ssdbench: nvme0n1 trim torture started", link),
                QmpAt(r"^ssdbench: store .*results kept in RAM .*retrying", relink)))
    tail = "\n".join(console.splitlines()[-60:])
    assert rc == 0, tail
    assert f"DHCP host name {BENCH1}" in console, tail
    assert "ssdbench: config fetched from http://10.0.2.2:" in console, tail
    assert f"as bench {BENCH1}" in console, tail
    assert [f.pattern for f in fired] == [
        r"^ssdbench: nvme0n1 trim torture started",
        r"^ssdbench: store .*results kept in RAM .*retrying"], (fired, tail)
    assert all("error" not in r for f in fired for r in f.replies), fired
    assert "ssdbench: store s3 http://10.0.2.2" in console and "reachable again" in console
    assert "ssdbench: all results sent to s3" in console, tail
    assert "nvme0n1 (E2ENETNVME01): done" in console, tail
    assert "J-NET-1" in console, tail  # the job chose the trim plan, and said so
    # the status said so: the outage stays in status.json after it healed
    status1 = json.loads(bucket(lab)[f"{PREFIX}/{BENCH1}/status.json"])["store"]
    assert status1["outages"] >= 1 and status1["last_error"] is None, status1
    assert "EndpointConnectionError" in status1["last_failure"], status1

    # -- bench 2: diagnose plan, named by ssdbench.bench=; its config server is not there
    # yet: the kiosk waits, says so, and the server starts when it did
    diag = lab["base"] / "nvme-diag.img"
    with diag.open("wb") as f:
        f.truncate(64 * 1024 * 1024)
    late_port = free_port()

    def start_config_server(_m: re.Match[str], _serial: str) -> list[dict[str, Any]]:
        lab["late"].append(Http(lab["www"], late_port))
        return []

    # bench 2's console input: a FIFO held open here, so QEMU's stdin never ends
    scanner = lab["base"] / "bench2-scanner.fifo"
    os.mkfifo(scanner)
    scanner_fd = os.open(scanner, os.O_RDWR)

    def scan_asset_tag(_m: re.Match[str], _serial: str) -> list[dict[str, Any]]:
        os.write(scanner_fd, f"{ASSET_TAG}\r\n".encode())  # a scanner: the code, CR LF
        return []

    try:
        rc2, console2, fired2, _w = netboot(
            lab, "bench2", kiosk_config("diagnose", DIAG_SERIAL, s3_port,
                                        lab_systems=lab_systems(receiver.port, ask=True)),
            append=f"ssdbench.bench={BENCH2} ssdbench.console=ttyS0",
            nvme=(f"file={diag},serial={DIAG_SERIAL}",), config_port=late_port,
            serial_input=scanner,
            qmp_at=(QmpAt(r"^ssdbench: config http://10\.0\.2\.2:\d+/bench2\.toml: waiting "
                          r"for the network \(network up \(default route\)\): "
                          r".*[Cc]onnection refused", start_config_server),
                    QmpAt(r"scan or type its asset_tag", scan_asset_tag)))
    finally:
        os.close(scanner_fd)
    assert rc2 == 0, console2[-3000:]
    assert len(fired2) == 2, (fired2, console2[-3000:])
    assert "J-NET-2" in console2, console2[-3000:]
    assert "ssdbench: config fetched from http://10.0.2.2:" in console2, console2[-3000:]
    assert f"as bench {BENCH2}" in console2, console2[-3000:]

    objects = bucket(lab)
    want1 = assert_bench_arrived(objects, BENCH1, NVME_SERIAL, console)
    assert any(k.endswith("/trim/run.json") for k in want1), sorted(want1)
    assert any(k.endswith("/trim/iops.csv") for k in want1), sorted(want1)
    want2 = assert_bench_arrived(objects, BENCH2, DIAG_SERIAL, console2)
    [record_key] = [k for k in want2 if k.endswith("/erase-record.json")]
    record = json.loads(objects[record_key])
    people = record["people"]
    assert people["asset_tag"] == ASSET_TAG and people["job"] == "J-NET-2", people
    assert people["lot"] == "L-NET-7" and people["customer"] == "ACME Netboot", people
    certificate = objects[record_key.replace("erase-record.json", "erase-certificate.html")]
    assert ASSET_TAG.encode() in certificate and b"J-NET-2" in certificate
    # the reference receiver: every record and finished run of both benches, validated
    filed = {p.relative_to(receiver.folder).parts[0]: p for p in receiver.filed()}
    records = list((receiver.folder / "records").rglob("*.json"))
    runs = [json.loads(p.read_bytes()) for p in (receiver.folder / "runs").rglob("*.json")]
    assert len(records) == 1 and json.loads(records[0].read_bytes()) == record, filed
    assert {(r["kind"], r["params"].get("job")) for r in runs} == {
        ("trim", "J-NET-1"), ("erase", "J-NET-2")}, runs
    assert all(s.status in (200, 201) for s in receiver.requests), receiver.requests
    assert "posted" in console and "posted" in console2, console2[-2000:]

    # -- one fleet page of both, built from the store
    host_config = lab["base"] / "fleet.toml"
    host_config.write_text(kiosk_config("diagnose", DIAG_SERIAL, s3_port).replace(
        f"http://{GUEST_HOST}:", "http://127.0.0.1:"))
    out = lab["base"] / "fleet"
    from ssdbench.system import SystemRunner

    SystemRunner().run([str(REPO / ".venv" / "bin" / "ssdbench"), "fleet", "store",
                        "--config", str(host_config), "-o", str(out)], timeout=120)
    rows = list(csv.DictReader(io.StringIO((out / "fleet.csv").read_text())))
    by_bench = {r.get("bench"): r for r in rows}
    assert {BENCH1, BENCH2} <= set(by_bench), rows
    assert {r.get("asset_tag") for r in rows if r.get("bench") == BENCH2} == {ASSET_TAG}, rows
    page = (out / "fleet.html").read_text()
    assert BENCH1 in page and BENCH2 in page and NVME_SERIAL in page and DIAG_SERIAL in page
    assert "outage, healed" in page or "outages, healed" in page  # bench 1's cut link

    # -- bench 3: a wrong secret key: said clearly, results kept, nothing in the bucket
    stop = [{"execute": "quit"}]
    _rc3, console3, fired3, _w3 = netboot(
        lab, "bench3", kiosk_config("diagnose", DIAG_SERIAL, s3_port, secret="wrong-secret",
                                    bench=BENCH3),
        nvme=(f"file={diag},serial={DIAG_SERIAL}",),
        qmp_at=(QmpAt(r"^ssdbench: store .*check the store's keys.*results kept in RAM", stop),),
        uefi=True)  # OVMF's network boot: the same ROM's EFI iPXE, the same boot.ipxe
    assert len(fired3) == 1, console3[-3000:]
    assert "firmware UEFI)" in console3 and "firmware BIOS)" in console, console3[:4000]
    line = fired3[0].line
    assert "403" in line and "results kept in RAM (/run/ssdbench/ram/ssdbench)" in line, line
    assert "wrong-secret" not in console3
    assert not [k for k in bucket(lab) if k.startswith(f"{PREFIX}/{BENCH3}/")]
