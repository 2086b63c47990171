"""The quick plan, unattended, end to end: the Kiosk entry boots from the emulated stick with
a config on SSDRESULTS, tests an emulated NVMe drive (real `nvme format --ses=1`, verified)
and an emulated AHCI SATA drive (no ATA security in QEMU: discard fallback) at the same
time, leaves a patterned bystander drive alone and powers off. Everything is then checked
from outside, on the stick's copy of SSDRESULTS.

Both drives are simulated SSDs (scripts/simdrive, docs/simdrive.md) served to QEMU over NBD:
the NVMe drive a SandForce-like one (its TRIM is ineffective; the NVMe Format reaches the
model as a whole-device zero, a sanitize), the SATA drive a consumer one (sharp cliff,
effective TRIM, so the discard fallback resets it). Besides the appliance's own checks, the
results are held against the models' ground truth (tests/simknown.py): the two opposite
TRIM verdicts, fio's totals within 0.5% of the model's count, the steady IOPS ratio of the
25% OP run to the default run within 10% of the model's ratio over the same seconds, and a
sanitize per NVMe erase. This is the QEMU known-answer run of issue #12 (the host-path ones:
tests/integration/test_simdrive_known_answers.py).

The plan's stages are the real ones; only its durations are shrunk through [params] so the
boot + plan stay within a few minutes under TCG."""

from __future__ import annotations

import csv
import html
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_root
from tests.e2e.rig import Boot, boot_kiosk
from tests.hostile import HOSTILE_MODEL
from tests.schema_check import check_tree
from tests.simknown import SimDrive, fio_job, fit_start, iops_series, simulated_drive

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(1800)]

NVME_SERIAL = "E2EQNVME01"
SATA_SERIAL = "E2EQSATA01"
# the SATA drive reports the hostile model (issue #42, simdrive/identity.py: Rich and HTML
# markup, a LaTeX formula): strings only, the drives' timing is untouched; every page,
# CSV, chart and record of the plan is made against it
SATA_MODEL = HOSTILE_MODEL
# Simulated drives of real, odd capacities (IDEMA counts scaled down: 500118192 / 1024 and
# 976773168 / 4968, rounded to an odd sector count; the SandForce-like preset needs 229 MiB),
# at rates the TCG guest can drive. The NVMe drive's three fills of 229 MiB at its FOB rate
# were the plan's longest chain: at 2500 IOPS (1500 before) the guest's run took 240 s
# instead of 330 (alone on the host: OP ratios 4.86 and 4.70, the models' 4.87 and 4.70;
# 2026-11-28)
NVME_BYTES = 488397 * 512
SATA_BYTES = 196613 * 512
DRIVE_BYTES = {NVME_SERIAL: NVME_BYTES, SATA_SERIAL: SATA_BYTES}
FOB_IOPS = {NVME_SERIAL: 2500, SATA_SERIAL: 1200}
MIB = 1024 * 1024
# 24 s: the steady window (t >= 70%, 16 s) holds 7 whole seconds for the OP ratio; with 12 s
# it held 3, and one second binned differently from the model's moved the ratio by 20%
TORTURE_S = 24
# The TRIM run's torture as deep and its probes as small next to the drive as the known
# answer needs (docs/simdrive.md, "TRIM answers"): with 8 s and 64 MiB probes (27% of the
# SandForce-like drive) a CI run gave "partial" (5.8 / 1.6 / 4.0 MB/s, recovery 0.57): the
# after-torture probe's own rewrites had made its garbage collection cheaper for the next.
TRIM_TORTURE_S = 24
PROBE_MIB = 16
RUNS = ("consistency-default", "consistency-op25", "trim")
CONFIG = f"""\
plan = "quick"
select = ["serial:{NVME_SERIAL}", "serial:{SATA_SERIAL}"]
destroy = ["{NVME_SERIAL}", "{SATA_SERIAL}"]
on_finish = "poweroff"
svg = false  # PNG only: the report takes minutes under TCG

[params]
torture_seconds = {TORTURE_S}
trim_torture_seconds = {TRIM_TORTURE_S}
probe_gib = {PROBE_MIB / 1024}
erase_fallback = "discard"
"""


@pytest.fixture(scope="module")
def drives(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SimDrive]]:
    require_root()
    base = tmp_path_factory.mktemp("kiosk-quick-drives")
    with simulated_drive(base / "sandforce", "sandforce", f"{NVME_BYTES // 512}s",
                         FOB_IOPS[NVME_SERIAL], serial=NVME_SERIAL, attach=False) as nvme, \
            simulated_drive(base / "consumer", "consumer", f"{SATA_BYTES // 512}s",
                            FOB_IOPS[SATA_SERIAL], serial=SATA_SERIAL, attach=False) as sata:
        yield {NVME_SERIAL: nvme, SATA_SERIAL: sata}


@pytest.fixture(scope="module")
def quick(dev_image: Path, drives: dict[str, SimDrive],
          tmp_path_factory: pytest.TempPathFactory) -> Boot:
    return boot_kiosk(
        tmp_path_factory.mktemp("kiosk-quick"),
        CONFIG,
        nvme=(f"nbd={drives[NVME_SERIAL].socket},serial={NVME_SERIAL}",),
        sata=(f"nbd={drives[SATA_SERIAL].socket},serial={SATA_SERIAL},model={SATA_MODEL}",),
        timeout_s=1500,
        direct=True,  # the entry's kernel and command line without firmware and GRUB: their
        # 18 s are on the run's critical path here (test_kiosk_config.py boots through them)
    )


def _root(b: Boot) -> Path:
    return b.results / "ssdbench"


def _run_json(b: Boot, serial: str, run: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((b.drive_dir(serial) / run / "run.json").read_text())
    return data


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    assert len(data) > 10_000, f"{path} is only {len(data)} bytes"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_kiosk_ran_the_plan_and_powered_off(quick: Boot) -> None:
    assert quick.returncode == 0, f"QEMU did not power off (rc {quick.returncode}):\n{quick.tail()}"
    assert "mode=kiosk" in quick.serial and "plan quick" in quick.serial, quick.tail()
    for serial in (NVME_SERIAL, SATA_SERIAL):
        assert f"({serial}): done:" in quick.serial, quick.tail(80)
    assert "ssdbench: poweroff" in quick.serial, quick.tail()
    state = json.loads((_root(quick) / "state.json").read_text())
    drives = state["drives"]
    assert set(drives) == {NVME_SERIAL, SATA_SERIAL}
    for entry in drives.values():
        assert entry["state"] == "done"
        assert {r: v["state"] for r, v in entry["runs"].items()} == dict.fromkeys(RUNS, "done")


def test_kiosk_entry_runs_ssdbench_kiosk(quick: Boot) -> None:
    """The boot flow of the Kiosk entry's command line (firmware, GRUB and the entry picked
    through grubenv: test_kiosk_config.py): the config found on the stick, the kiosk started
    after "ssdbench ready" and powered off at the end. A config that selects no drive:
    tests/integration/test_kiosk_loop.py."""
    assert "ssdbench ready" in quick.serial and "mode=kiosk" in quick.serial, quick.tail()
    assert "ssdbench kiosk starting" in quick.serial, quick.tail()
    assert "config /mnt/ssdresults/ssdbench.toml: plan quick" in quick.serial, quick.tail()
    assert quick.seconds_until("ssdbench kiosk starting") > quick.seconds_until(
        "ssdbench ready")
    assert "ssdbench: poweroff" in quick.serial, quick.tail()


def test_bystander_and_boot_partition_left_alone(quick: Boot) -> None:
    assert quick.bystander_sha_after == quick.bystander_sha_before, "the bystander was written"
    assert quick.boot_partition_sha_after == quick.boot_partition_sha_before
    assert "E2EBYSTANDER" not in (_root(quick) / "summary.csv").read_text()
    assert not list(_root(quick).glob("*SSDBBYSTANDER*"))


def test_every_run_folder_with_its_series_and_charts(quick: Boot) -> None:
    for serial in (NVME_SERIAL, SATA_SERIAL):
        drive = quick.drive_dir(serial)
        assert (drive / "drive.json").is_file() and (drive / "report.html").is_file()
        for run in RUNS:
            run_dir = drive / run
            record = _run_json(quick, serial, run)
            assert record["state"] == "done" and record["error"] is None, record
            rows = _csv(run_dir / "iops.csv")
            want = TRIM_TORTURE_S if run == "trim" else TORTURE_S
            assert [int(r["time_s"]) for r in rows] == list(range(want)), run_dir
            # an empty field is a second fio logged nothing for (docs/results-format.md)
            assert sum(float(r["iops"]) for r in rows if r["iops"]) > 0
            pngs = sorted(run_dir.glob("*.png"))
            assert pngs, f"no charts in {run_dir}"
            for png in pngs:
                width, height = _png_size(png)
                # the temperature strips under the IOPS and probe charts are short
                low = 300 if png.name.startswith("temperature-") else 700
                assert width == 1200 and height >= low, (png, width, height)
    assert (_root(quick) / "index.html").is_file()


def test_the_drives_own_counters_and_temperature_are_recorded(quick: Boot) -> None:
    """Issue #20 item 5 in QEMU: QEMU's NVMe controller counts the data units each run wrote
    (nvme smart-log before / after), its 323 K composite temperature is sampled every second
    of each torture and probe and charted; QEMU's AHCI disk answers smartctl (exit bit 2:
    some -x logs missing) with its temperature."""
    for run in RUNS:
        run_dir = quick.drive_dir(NVME_SERIAL) / run
        health = _run_json(quick, NVME_SERIAL, run)["health"]
        assert health["tool"] == "nvme smart-log" and "unavailable" not in health, health
        span = _run_json(quick, NVME_SERIAL, run)["target"]["span_bytes"]
        assert health["delta"]["host_writes_bytes"] >= span  # at least the fill
        assert health["before"]["temperature_c"] == 50
        assert json.loads((run_dir / "smart" / "after.json").read_text())["data_units_written"]
        temps = {r["temperature_c"] for r in _csv(run_dir / "sensors-torture.csv")}
        assert temps == {"50"}, temps
        assert (run_dir / "temperature-torture.png").is_file()
    report = (quick.drive_dir(NVME_SERIAL) / "report.html").read_text()
    assert "Drive&#x27;s own counters" in report or "Drive's own counters" in report
    sata = _run_json(quick, SATA_SERIAL, "trim")["health"]
    assert sata["tool"] == "smartctl" and sata["before"]["temperature_c"] is not None, sata
    env = _run_json(quick, SATA_SERIAL, "trim")["environment"]
    assert env["io_scheduler"] and env["fio_version"].startswith("fio-")


def test_summary_has_one_done_row_per_run(quick: Boot) -> None:
    rows = _csv(_root(quick) / "summary.csv")
    got = sorted((r["serial"], r["run"]) for r in rows)
    assert got == sorted((s, r) for s in (NVME_SERIAL, SATA_SERIAL) for r in RUNS)
    assert {r["run_state"] for r in rows} == {"done"}
    for r in rows:
        if r["run"] == "trim":
            assert r["trim_verdict"], r
            assert r["trim_clean_mib_s"] and r["trim_after_trim_mib_s"], r
        else:
            assert float(r["iops_mean"]) > 0, r


def test_trim_run_has_three_probes_and_the_nvme_reads_back_zeros(quick: Boot) -> None:
    for serial in (NVME_SERIAL, SATA_SERIAL):
        trim_dir = quick.drive_dir(serial) / "trim"
        phases = [r["phase"] for r in _csv(trim_dir / "probes.csv")]
        assert phases == ["clean", "after_torture", "after_trim"]
        for phase in phases:
            assert _csv(trim_dir / f"probe-{phase}.csv"), phase
    nvme_trim = _run_json(quick, NVME_SERIAL, "trim")["trim"]
    assert nvme_trim["discard_sectors"] > 0
    readback = nvme_trim["zero_readback"]  # QEMU's NVMe reports DLFEAT 1
    assert readback["promised"] == "dlfeat"
    assert readback["checked"] == readback["zero"] == 64, readback
    # QEMU's AHCI disk promises nothing (no RZAT): no read-back
    assert _run_json(quick, SATA_SERIAL, "trim")["trim"]["zero_readback"] is None


def test_nvme_runs_are_formatted_and_verified_sata_runs_discarded(quick: Boot) -> None:
    for run in RUNS:
        erase = _run_json(quick, NVME_SERIAL, run)["erase"]
        assert erase["method"] == "nvme-format-user-data", erase
        assert erase["secure"] is True and erase["verified"] is True, erase
        sata = _run_json(quick, SATA_SERIAL, run)["erase"]
        assert sata["method"] == "discard" and sata["secure"] is False, sata


def test_op25_runs_on_a_partition_of_three_quarters(quick: Boot) -> None:
    for serial, suffix in ((NVME_SERIAL, "p1"), (SATA_SERIAL, "1")):
        record = _run_json(quick, serial, "consistency-op25")
        target = record["target"]
        disk = record["drive"]["path"]
        assert target["path"] == disk + suffix, target
        assert target["op_percent"] == 25
        assert record["drive"]["size_bytes"] == DRIVE_BYTES[serial]
        assert target["span_bytes"] == DRIVE_BYTES[serial] * 75 // 100 // MIB * MIB, target
        jobs = sorted((quick.drive_dir(serial) / "consistency-op25" / "jobs").glob("*.fio"))
        assert {j.stem for j in jobs} >= {"fill", "torture"}, jobs
        for job in jobs:
            names = [ln for ln in job.read_text().splitlines() if ln.startswith("filename=")]
            assert names and all(ln == f"filename={target['path']}" for ln in names), job
        default = _run_json(quick, serial, "consistency-default")["target"]
        assert default["path"] == disk and default["span_bytes"] == DRIVE_BYTES[serial]
        # the spare is discarded after every erase: NVMe was secure-erased, SATA was not
        spare = record["partition"]["spare_discard"]
        assert spare["after_secure_erase"] is (serial == NVME_SERIAL) and "error" not in spare
        assert spare["offset"] == MIB + target["span_bytes"], spare


# ---- known answers: the simulated drives' ground truth -------------------------------------


def test_known_answer_trim_verdicts_are_opposite(quick: Boot) -> None:
    rows = {(r["serial"], r["run"]): r for r in _csv(_root(quick) / "summary.csv")}

    def probes(serial: str) -> str:  # what a failure needs: the three probes' MiB/s, seconds
        return "; ".join(f"{r['phase']} {r['mib_s']} MiB/s in {r['seconds']} s" for r in
                         _csv(quick.drive_dir(serial) / "trim" / "probes.csv"))

    for serial, want in ((NVME_SERIAL, "ineffective"), (SATA_SERIAL, "effective")):
        got = rows[(serial, "trim")]["trim_verdict"]
        assert got == want, (serial, got, probes(serial))


def test_known_answer_every_nvme_format_sanitized_the_model(
        quick: Boot, drives: dict[str, SimDrive]) -> None:
    sanitized = drives[NVME_SERIAL].truth().events_of("sanitize")
    assert len(sanitized) == len(RUNS), sanitized
    # the SATA drive's discard fallback reached its model as TRIMs that unmapped everything
    trims = drives[SATA_SERIAL].truth().events_of("trim")
    assert trims and all(e["invalidated_pages"] == e["mapped_pages"] for e in trims)


def _model_view(quick: Boot, drive: SimDrive, serial: str, run: str
                ) -> tuple[list[float], list[float], float]:
    """(ssdbench's per-second IOPS, the model's over the same seconds, steady start)."""
    run_dir = quick.drive_dir(serial) / run
    series = iops_series(run_dir)  # NaN: a second fio logged nothing for
    truth = drive.truth()
    job = fio_job(run_dir)
    # the guest's clock is the host's to about a second (RTC at boot, no NTP)
    start = fit_start(truth, job, search_s=3.0)
    model_total = truth.writes_between(start, start + job.runtime_s + 0.05)
    assert abs(job.total_ios - model_total) <= 0.005 * model_total, (
        serial, run, job.total_ios, model_total)
    steady_from = float(_run_json(quick, serial, run)["params"]["steady_start_s"])
    return series, truth.resample(start, len(series)), steady_from


@pytest.mark.parametrize("serial", [NVME_SERIAL, SATA_SERIAL])
def test_known_answer_totals_and_op_ratio(quick: Boot, drives: dict[str, SimDrive],
                                          serial: str) -> None:
    ratios = []
    for source in ("ssdbench", "model"):
        means = []
        for run in ("consistency-default", "consistency-op25"):
            series, model, steady_from = _model_view(quick, drives[serial], serial, run)
            # the seconds ssdbench has a value for, in ssdbench's steady window, less the
            # last: fio's final window is partial and the model's last second holds only the
            # job's tail (measured: 13 and 337 IOPS in iops.csv where the model had 0)
            seconds = [i for i in range(int(steady_from), len(series) - 1)
                       if series[i] == series[i]]
            values = series if source == "ssdbench" else model
            means.append(sum(values[i] for i in seconds) / len(seconds))
        ratios.append(means[1] / means[0])
    got, want = ratios
    print(f"{serial}: OP ratio {got:.2f}, the model's {want:.2f} (needs over 1.5)")
    assert want > 1.5, f"the model shows no OP effect ({want:.2f}): the test proves nothing"
    assert abs(got - want) <= 0.10 * want, (serial, got, want)


def test_the_hostile_model_is_recorded_and_shown_escaped(quick: Boot) -> None:
    """The SATA drive's model (markup, a formula; what the kernel passed on of QEMU's
    40-character IDENTIFY model) is in drive.json as reported, its runs' charts were drawn
    (a formula in a title is text, never mathtext: test_every_run_folder_with_its_series_and_charts),
    and the pages hold it HTML-escaped only: no page gains a script or loses its style."""
    drive = quick.drive_dir(SATA_SERIAL)
    model = json.loads((drive / "drive.json").read_text())["drive"]["model"]
    assert len(model) >= 16 and SATA_MODEL.startswith(model.strip()), model
    assert "<script>" in model, model
    for page in (drive / "report.html", _root(quick) / "index.html"):
        text = page.read_text()
        assert html.escape(model.strip(), quote=False) in text, page
        assert "<script" not in text, page
        assert text.count("</style>") == 1, page
    rows = [r for r in _csv(_root(quick) / "summary.csv") if r["serial"] == SATA_SERIAL]
    assert rows and {r["model"].strip() for r in rows} == {model.strip()}, rows


def test_every_json_and_csv_file_follows_its_schema(quick: Boot) -> None:
    """Issue #46: every JSON and CSV file on the stick's copy of SSDRESULTS against its
    published schema (tui/src/ssdbench/schemas, index.json says which): a file the format
    does not know, a missing required field or a wrong type fails, naming the file and the
    field. At least the files the tests above read must be there."""
    n = len(RUNS) * 2
    counts = check_tree(quick.results, expect={
        "run.json.schema.json": n, "drive.json.schema.json": 2, "summary.csv.schema.json": 1,
        "iops.csv.schema.json": n, "fill.csv.schema.json": 1, "probes.csv.schema.json": 2,
        "probe.csv.schema.json": 6, "sensors.csv.schema.json": len(RUNS)})
    print(f"schema check: {counts}")
