#!/usr/bin/env python3
"""The fleet at scale (#46): `ssdbench fleet` over a synthetic store of FLEET_RUNS runs
(default 1,000,000: 100 benches x 2,500 drives x 4 runs, each run.json a real one, the
trim run of tests/data/lab, 9.5 KB, its drive, serial, steady IOPS, lot and asset tag
changed), then the same after FLEET_NEW new runs (default 10,000) were added.
BENCH_SMOKE=1: 2,000 runs and 200 new ones (make test checks the benchmark still runs).

The store is a folder (a copy of the prefix, as `aws s3 sync` leaves it): generating it is
not timed. Each build runs in a fresh process and prints from it:

    fleet_scale_runs=…                 runs in fleet.csv after the cold build
    fleet_scale_cold_seconds=…         wall time of a build with no index (reads every run.json)
    fleet_scale_cold_peak_rss_mb=…
    fleet_scale_incremental_seconds=…  wall time after FLEET_NEW new runs (goal <= 30)
    fleet_scale_incremental_peak_rss_mb=…   (goal <= 500)
    fleet_scale_incremental_read=…     run.json files read by the incremental build
    fleet_scale_incremental_cpu_seconds=…   user + system CPU of it (the machine shared)
    fleet_scale_incremental_all=…      every incremental build's seconds/CPU/MB (FLEET_REPEAT)
    fleet_scale_html_mb=…              fleet.html (summaries and the newest 500 runs)

The incremental build starts from the output folder the cold build left (its index, its
cache: docs/lab.md); FLEET_REPEAT=n (default 1) measures it n times, each from a copy of
that folder, and prints the slowest (the machine may be shared: the spread is printed too).
FLEET_DIR=path keeps the store there (not deleted: generate once, measure again with
FLEET_REUSE=1).

FLEET_STORE=s3: the same over an S3 store, a real s3proxy on 127.0.0.1 (filesystem backend,
`make deps`), built with `ssdbench fleet store --config` (docs/lab.md "S3 at a million
runs"). Seeding is not timed: the runs are written straight into s3proxy's folder (each
file's MD5 in the extended attribute s3proxy reads its ETag from) with each bench's sent
file, ``_fleet/sent/<bench>/<day>.txt``, as the uploader writes it; the cold build runs
over that folder (a store class of this script's reading it directly: a million GETs
through s3proxy take hours here), writing the index and the output folder a build over
s3proxy would. Then FLEET_NEW new runs and their day's sent file are added the same way and
the incremental build runs over s3proxy; it prints the same figures as
``fleet_scale_s3_*`` and ``fleet_scale_s3_listed_keys`` (keys s3proxy listed for it).
With FLEET_DIR the seeded store and the cold build's output folder stay: FLEET_REUSE=1
then measures the incremental build again straight away (seeding a million runs and
their cold build take about half an hour here). FLEET_PROFILE=file: the first incremental
build runs under cProfile, its statistics written to that file (``python -m pstats``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVE = REPO / "tests/data/lab/results/20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001"
BENCHES = 100
RUNS = ("intake", "consistency-default", "trim", "speed")
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
TOTAL = 2000 if SMOKE else int(os.environ.get("FLEET_RUNS", "1000000"))
NEW = 200 if SMOKE else int(os.environ.get("FLEET_NEW", "10000"))
MODELS = [(f"Vendor{m % 7} SSD {m * 128} GB", p) for m, p in enumerate(
    ("S4EV", "PHKS", "WD-W", "2004", "BTYF", "5002", "S5GX", "CT10", "TW0X", "A1B2",
     "HBSE", "S3Z9", "Y7K3", "M0Q8", "J9R2", "D4U6", "NX71", "KP33", "G8L5", "E2W4"), 1)]

CHILD = r"""
import resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from ssdbench.cli import main
rc = main(["fleet", sys.argv[1], "-o", sys.argv[2], "--silent-after", "1e12"])
seconds = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
rss_mb = usage.ru_maxrss / 1024
assert rc == 0, rc
print(f"seconds={seconds:.2f}")
print(f"cpu_seconds={usage.ru_utime + usage.ru_stime:.2f}")
print(f"rc={rc}")
print(f"peak_rss_mb={rss_mb:.1f}")
"""


def _templates() -> tuple[str, str]:
    run = json.loads((DRIVE / "trim" / "run.json").read_text())
    drive = json.loads((DRIVE / "drive.json").read_text())
    run.update(run="@RUN@", started="@STARTED@", finished="@STARTED@", lot="@LOT@",
               asset_tag="@TAG@")
    run["drive"].update(model="@MODEL@", serial="@SERIAL@")
    run["analysis"]["iops"]["steady"]["mean"] = 123456789.5
    drive["drive"].update(model="@MODEL@", serial="@SERIAL@")
    return json.dumps(run), json.dumps(drive)


ETAG_XATTR = "user.user.content-md5"  # where s3proxy's filesystem backend keeps an ETag


def _write(path: Path, text: str, sent: dict[str, list[str]] | None, root: Path) -> None:
    """A file; with ``sent``, as s3proxy would hold it (its MD5 as its ETag) and its line
    for the bench's sent file (``<rel below the bench>\\t"<md5>"``)."""
    data = text.encode()
    path.write_bytes(data)
    if sent is not None:
        md5 = hashlib.md5(data)
        os.setxattr(path, ETAG_XATTR, md5.digest())
        bench, _, rel = path.relative_to(root).as_posix().partition("/")
        sent.setdefault(bench, []).append(f'{rel}\t"{md5.hexdigest()}"')


def write_runs(root: Path, first_drive: int, drives: int, day: int,
               sent: dict[str, list[str]] | None = None) -> int:
    """``drives`` drives (numbered from ``first_drive``) of 4 runs each, spread over the
    benches; returns the runs written. With ``sent``, each bench's sent lines too."""
    run_t, drive_t = _templates()
    rnd = random.Random(first_drive)
    n = 0
    for i in range(first_drive, first_drive + drives):
        b = i % BENCHES
        model, prefix = MODELS[(i * 7) % len(MODELS)]
        serial = f"{prefix}{(i * 7919) % 10 ** 8:08d}"
        hour, minute = divmod(i % 1440, 60)
        run_id = f"2026{11 - day // 28:02d}{1 + day % 28:02d}T{hour:02d}{minute:02d}00Z"
        session = root / f"bench-{b:03d}" / serial / run_id
        session.mkdir(parents=True, exist_ok=True)
        sub = {"@MODEL@": model, "@SERIAL@": serial}
        text = drive_t
        for k, v in sub.items():
            text = text.replace(k, v)
        _write(session / "drive.json", text, sent, root)
        for j, run in enumerate(RUNS):
            started = f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T{hour:02d}:{minute:02d}:{j:02d}Z"
            text = run_t.replace("@RUN@", run).replace("@STARTED@", started).replace(
                "@LOT@", f"LOT-{i // 5000:04d}").replace("@TAG@", f"AT{i:07d}").replace(
                "123456789.5", f"{rnd.gauss(20000 + 3000 * (i % 5), 3000):.1f}")
            for k, v in sub.items():
                text = text.replace(k, v)
            (session / run).mkdir(exist_ok=True)
            _write(session / run / "run.json", text, sent, root)
            n += 1
    for b in range(BENCHES):
        bench = root / f"bench-{b:03d}"
        if bench.is_dir():
            _write(bench / "status.json", json.dumps({
                "bench": bench.name, "state": "done", "plan": "intake",
                "time": "2026-11-25T07:00:00Z", "drives": [], "last_event": "", "errors": []}),
                sent, root)
    return n


def measure(root: Path, out: Path) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root), str(out)], check=True,
                          capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-2000:])
    return dict(line.split("=", 1) for line in proc.stdout.split() if "=" in line)


def _lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))


# ---- FLEET_STORE=s3 ----

S3PROXY = REPO / "build/s3proxy/s3proxy-2.4.1-jar-with-dependencies.jar"
BUCKET = "fleet-scale"
KEY, SECRET = "bench-key", "bench-secret-value"


class DirectStore:
    """s3proxy's folder read and written directly, as s3proxy answers (ETags from the
    extended attribute): the seeding build's store (not timed)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _tag(self, path: Path) -> str:
        try:
            return f'"{os.getxattr(path, ETAG_XATTR).hex()}"'
        except OSError:
            return f'"{hashlib.md5(path.read_bytes()).hexdigest()}"'

    def put(self, key: str, data: bytes, content_type: str = "") -> str:
        path = self.folder / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.setxattr(path, ETAG_XATTR, hashlib.md5(data).digest())
        return self._tag(path)

    def get(self, key: str, limit: int | None = None) -> bytes:
        from ssdbench.lab.store import StoreError

        try:
            return (self.folder / key).read_bytes()[:None if limit is None else limit + 1]
        except FileNotFoundError:
            raise StoreError(f"reading {key}: the store answered 404 NoSuchKey") from None

    def tagged_keys(self, prefix: str, start_after: str | None = None) -> dict[str, str]:
        out = {}
        top = self.folder / prefix
        for dirpath, _dirs, files in os.walk(top):
            for name in files:
                path = Path(dirpath) / name
                key = path.relative_to(self.folder).as_posix()
                if start_after is None or key > start_after:
                    out[key] = self._tag(path)
        return dict(sorted(out.items()))

    def keys(self, prefix: str) -> list[str]:
        return list(self.tagged_keys(prefix))

    def folders(self, prefix: str) -> list[str]:
        top = self.folder / prefix
        if not top.is_dir():
            return []
        return sorted(f"{prefix}{e.name}/" for e in os.scandir(top) if e.is_dir())


def _write_sent(root: Path, sent: dict[str, list[str]], day: str) -> None:
    for bench, lines in sent.items():
        path = root / "_fleet/sent" / bench / f"{day}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{line}\n" for line in lines))
        os.setxattr(path, ETAG_XATTR, hashlib.md5(path.read_bytes()).digest())


CHILD_S3 = r"""
import resource, sys, time
t0 = time.perf_counter()
from ssdbench.cli import main
from ssdbench.lab import store
listed = [0]
real = store.S3Store.tagged_keys
def counted(self, prefix, start_after=None):
    found = real(self, prefix, start_after)
    listed[0] += len(found)
    return found
store.S3Store.tagged_keys = counted
argv = ["fleet", "store", "--config", sys.argv[1], "-o", sys.argv[2], "--silent-after", "1e12"]
if len(sys.argv) > 3:  # FLEET_PROFILE
    import cProfile
    prof = cProfile.Profile()
    rc = prof.runcall(main, argv)
    prof.dump_stats(sys.argv[3])
else:
    rc = main(argv)
seconds = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
assert rc == 0, rc
# this process's own peak (VmHWM): ru_maxrss keeps the parent's from before the exec, and
# the parent here has just made the cold build
with open("/proc/self/status") as f:
    hwm = [int(line.split()[1]) for line in f if line.startswith("VmHWM:")]
print(f"seconds={seconds:.2f}")
print(f"cpu_seconds={usage.ru_utime + usage.ru_stime:.2f}")
print(f"peak_rss_mb={(hwm[0] if hwm else usage.ru_maxrss) / 1024:.1f}")
print(f"ru_maxrss_mb={usage.ru_maxrss / 1024:.1f}")
print(f"listed={listed[0]}")
"""


def main_s3(tmp: Path, keep: bool) -> int:
    import socket
    import time

    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    data = tmp / "s3data"
    data.mkdir(parents=True, exist_ok=True)
    (tmp / "s3proxy.conf").write_text(
        f"s3proxy.endpoint={endpoint}\ns3proxy.authorization=aws-v2-or-v4\n"
        f"s3proxy.identity={KEY}\ns3proxy.credential={SECRET}\n"
        f"jclouds.provider=filesystem\njclouds.filesystem.basedir={data}\n")
    proc = subprocess.Popen(["java", "-XX:TieredStopAtLevel=1", "-jar", str(S3PROXY),
                             "--properties", str(tmp / "s3proxy.conf")],
                            stdout=(tmp / "s3proxy.log").open("ab"),
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("s3proxy did not start: " +
                                     (tmp / "s3proxy.log").read_text()[-2000:]) from None
                time.sleep(0.2)  # waiting for a server process to listen
        client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=KEY,
            aws_secret_access_key=SECRET, config=Config(
                s3={"addressing_style": "path"},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required"))
        if not (data / BUCKET).is_dir():
            client.create_bucket(Bucket=BUCKET)
        root = data / BUCKET / "lab1"
        out = tmp / "out"
        base = tmp / "out.cold"  # the cold build's output: each incremental build's start
        seeded_file = tmp / "seeded.json"  # what FLEET_REUSE=1 can start from
        drives = TOTAL // len(RUNS)
        seeded: dict[str, float] = {}
        if os.environ.get("FLEET_REUSE") == "1" and seeded_file.is_file():
            seeded = json.loads(seeded_file.read_text())
            if (seeded.get("runs"), seeded.get("new")) != (TOTAL, NEW) or not base.is_dir():
                seeded = {}
        reused = bool(seeded)
        if not reused:
            seeded_file.unlink(missing_ok=True)
            t0 = time.perf_counter()
            shutil.rmtree(root, ignore_errors=True)
            print(f"# writing {TOTAL} runs into {root}", file=sys.stderr, flush=True)
            sent: dict[str, list[str]] = {}
            write_runs(root, 0, drives, day=0, sent=sent)
            _write_sent(root, sent, "20261101")
            seed_s = time.perf_counter() - t0
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            print("# seeding build (direct, not timed through s3proxy)", file=sys.stderr,
                  flush=True)
            from ssdbench.lab import fleetindex

            t0 = time.perf_counter()
            cold = fleetindex.build(fleetindex.StoreSource(DirectStore(data / BUCKET), "lab1"),
                                    out, silent_after_s=1e12)
            seeded = {"runs": TOTAL, "new": NEW, "seed_s": seed_s,
                      "cold_s": time.perf_counter() - t0, "cold_read": cold.read,
                      "rows": _lines(out / "fleet.csv") - 1}
            shutil.rmtree(base, ignore_errors=True)
            shutil.copytree(out, base, symlinks=True)
            sent = {}
            write_runs(root, drives, NEW // len(RUNS), day=1, sent=sent)
            _write_sent(root, sent, "20261102")
            if keep:
                seeded_file.write_text(json.dumps(seeded))
        rows = int(seeded["rows"])
        config = tmp / "ssdbench.toml"
        config.write_text(
            'plan = "quick"\nselect = ["serial:X"]\ndestroy = "all-eligible"\n'
            f'[store]\nkind = "s3"\nendpoint = "{endpoint}"\nbucket = "{BUCKET}"\n'
            f'prefix = "lab1"\naccess_key = "{KEY}"\nsecret_key = "{SECRET}"\n')
        profile = os.environ.get("FLEET_PROFILE")
        runs: list[dict[str, str]] = []
        for i in range(max(1, int(os.environ.get("FLEET_REPEAT", "1")))):
            if i or reused:
                shutil.rmtree(out, ignore_errors=True)
                shutil.copytree(base, out, symlinks=True)
                # the index an incremental build wrote back goes: the same work again
                for p in (root / "_fleet").glob("bench-*/20261102.csv.gz"):
                    p.unlink()
            argv = [sys.executable, "-c", CHILD_S3, str(config), str(out)]
            if profile and not i:
                argv.append(profile)
            proc_run = subprocess.run(argv, check=True, capture_output=True, text=True)
            sys.stderr.write(proc_run.stderr[-2000:])
            runs.append(dict(line.split("=", 1) for line in proc_run.stdout.split()
                             if "=" in line))
        warm = max(runs, key=lambda r: float(r["seconds"]))
        after = _lines(out / "fleet.csv") - 1
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
        print(f"fleet_scale_s3_runs={rows}")
        print(f"fleet_scale_s3_seed_seconds={seeded['seed_s']:.1f}"
              + ("  # reused" if reused else ""))
        print(f"fleet_scale_s3_seed_build_seconds={seeded['cold_s']:.1f}  "
              "# direct, not through s3proxy")
        print(f"fleet_scale_s3_cold_read={seeded['cold_read']}")
        print(f"fleet_scale_s3_incremental_seconds={warm['seconds']}")
        print(f"fleet_scale_s3_incremental_peak_rss_mb={warm['peak_rss_mb']}")
        print(f"fleet_scale_s3_incremental_cpu_seconds={warm['cpu_seconds']}")
        print(f"fleet_scale_s3_incremental_read={after - rows}")
        print(f"fleet_scale_s3_listed_keys={warm['listed']}")
        print("fleet_scale_s3_incremental_all=" + ",".join(
            f"{r['seconds']}s/{r['cpu_seconds']}cpu/{r['peak_rss_mb']}MB/{r['listed']}keys"
            for r in runs))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return 0


def main() -> int:
    if os.environ.get("FLEET_STORE") == "s3":
        keep = os.environ.get("FLEET_DIR")
        tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-fleet-s3-"))
        try:
            return main_s3(tmp, bool(keep))
        finally:
            if not keep:
                shutil.rmtree(tmp, ignore_errors=True)
    keep = os.environ.get("FLEET_DIR")
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-fleet-scale-"))
    try:
        root, out = tmp / "lab1", tmp / "out"
        drives = TOTAL // len(RUNS)
        if not (keep and os.environ.get("FLEET_REUSE") == "1"):
            shutil.rmtree(root, ignore_errors=True)
            print(f"# writing {TOTAL} runs into {root}", file=sys.stderr, flush=True)
            write_runs(root, 0, drives, day=0)
        shutil.rmtree(root / "_fleet", ignore_errors=True)  # cold: no index
        shutil.rmtree(out, ignore_errors=True)
        cold = measure(root, out)
        rows = _lines(out / "fleet.csv") - 1
        base = tmp / "out.cold"
        shutil.rmtree(base, ignore_errors=True)
        shutil.copytree(out, base, symlinks=True)  # each incremental build starts here
        write_runs(root, drives, NEW // len(RUNS), day=1)
        runs: list[dict[str, str]] = []
        for i in range(max(1, int(os.environ.get("FLEET_REPEAT", "1")))):
            if i:
                shutil.rmtree(out)
                shutil.copytree(base, out, symlinks=True)
            runs.append(measure(root, out))
        warm = max(runs, key=lambda r: float(r["seconds"]))
        after = _lines(out / "fleet.csv") - 1
        read = after - rows  # every other row came from the index
        shutil.rmtree(base, ignore_errors=True)
        print(f"fleet_scale_runs={rows}")
        print(f"fleet_scale_cold_seconds={cold['seconds']}")
        print(f"fleet_scale_cold_peak_rss_mb={cold['peak_rss_mb']}")
        print(f"fleet_scale_cold_cpu_seconds={cold['cpu_seconds']}")
        print(f"fleet_scale_incremental_seconds={warm['seconds']}")
        print(f"fleet_scale_incremental_peak_rss_mb={warm['peak_rss_mb']}")
        print(f"fleet_scale_incremental_cpu_seconds={warm['cpu_seconds']}")
        print(f"fleet_scale_incremental_read={read}")
        print("fleet_scale_incremental_all=" + ",".join(
            f"{r['seconds']}s/{r['cpu_seconds']}cpu/{r['peak_rss_mb']}MB" for r in runs))
        print(f"fleet_scale_html_mb={(out / 'fleet.html').stat().st_size / 2**20:.1f}")
        print("# goals: fleet_scale_incremental_seconds <= 30, "
              "fleet_scale_incremental_peak_rss_mb <= 500", file=sys.stderr)
        if keep:  # the next run starts from this store
            shutil.rmtree(root / "_fleet", ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
