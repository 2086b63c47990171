"""Known answers of the speed plan on the host path (root): `ssdbench run --plan speed` on
simulated SSDs (tests/simknown.py: nbdkit model -> nbdfuse -> loop device), each corner's
figure within 10% of the model's service rate (simdrive/ftl.py: a read costs
``pages × read_cost / FOB`` seconds of the drive's one server, mapped or not, so the drive
needs no fill: docs/plans.md "Speed").

Two drives, because one rig cannot resolve all four corners at one rate: at a QD1 4 KiB
read the rig's own round trip (nbdkit, nbdfuse, the loop device: about 0.4 ms on a loaded
2-core host, 1.4 ms at a load of 7) adds to the model's service time, so that corner needs
a slow drive (FOB 10: 12.5 ms a read); the 1 MiB corners cost 256 pages a read, and fio's time-based figures lose
about one queue's worth of I/O (QD × latency) at the ramp's end, so those need a faster
drive (FOB 500: 64 ms a 1 MiB read). The slow drive's sequential corners are recorded,
not checked; the fast drive's QD1 4 KiB corner measures the rig's round trip (its model
time is 0.25 ms a read, the rest is the rig), and the slow drive's QD1 4 KiB corner is
judged in the model's own time plus that measured lag (#43: a known answer that cannot
flake when a loaded host stretches the rig's round trip)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simdrive import presets
from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import require_root
from tests.simknown import simulated_drive

pytestmark = [pytest.mark.root, pytest.mark.slow]

PRESET = "enterprise"
PAGE = 4096
TOLERANCE = 0.10
# the QD1 4 KiB corner's drive: 12.5 ms a read, so the rig's round trip (measured on the fast
# drive, and a loaded host's stretch of it between the two runs) is a small part of it
SLOW_FOB = 10


def expected_iops(fob_iops: float, block_bytes: int) -> float:
    """The model's service rate of reads of ``block_bytes`` (one server: queue depth and
    threads do not change it)."""
    return fob_iops / (block_bytes // PAGE * presets.get(PRESET).read_cost)


def speed_run(folder: Path, fob_iops: float, seconds: int) -> dict[str, dict[str, object]]:
    """The speed plan on a fresh simulated drive; its corners by key."""
    with simulated_drive(folder / "drive", PRESET, "131075s", fob_iops) as drive:
        assert drive.loop
        results = folder / "results"
        code = main(["run", drive.loop, "--plan", "speed", "--results", str(results),
                     "--quiet", "--no-svg", "--set", f"speed_seconds={seconds}",
                     "--set", "speed_ramp_seconds=1", "--set", "speed_gib=0.0625"])
        assert code == ExitCode.OK
    (run_dir,) = results.glob("*/speed")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done"
    return {c["key"]: c for c in record["speed"]["corners"]}


def check(corner: dict[str, object], fob_iops: float) -> tuple[str, float, float]:
    block = 2**20 if corner["block_size"] == "1m" else PAGE
    want = expected_iops(fob_iops, block)
    got = float(corner["iops"])  # type: ignore[arg-type]
    mb_s = float(corner["mb_s"])  # type: ignore[arg-type]
    assert abs(mb_s - got * block / 1e6) <= 0.01 * mb_s + 0.002, corner  # one figure, two units
    return str(corner["label"]), got, want


def rig_lag_s(corner: dict[str, object], fob_iops: float) -> float:
    """The rig's round trip per I/O at queue depth 1 (nbdkit, nbdfuse, the loop device, the
    host's scheduling): the corner's time per read beyond the model's service time."""
    got = float(corner["iops"])  # type: ignore[arg-type]
    return max(1.0 / got - 1.0 / expected_iops(fob_iops, PAGE), 0.0)


def test_speed_corners_match_the_models_service_rates(tmp_path: Path) -> None:
    require_root()
    fast = speed_run(tmp_path / "fast", 500, 8)
    slow = speed_run(tmp_path / "slow", SLOW_FOB, 4)
    found = [check(fast[k], 500) for k in ("seq1m_q8t1", "seq1m_q1t1", "rnd4k_q32t16")]
    lag = rig_lag_s(fast["rnd4k_q1t1"], 500)
    assert lag < 2e-3, f"the rig took {lag * 1e3:.2f} ms a read beyond the model (QD1)"
    label, got, model = check(slow["rnd4k_q1t1"], SLOW_FOB)
    # at queue depth 1 a read costs the model's service time plus the rig's round trip
    found.append((label, got, 1.0 / (1.0 / model + lag)))
    off = [(label, got, want) for label, got, want in found
           if abs(got - want) > TOLERANCE * want]
    assert not off, f"corners beyond 10% of the model's rate (label, IOPS, model): {found}"
