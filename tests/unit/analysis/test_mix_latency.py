"""The five-nines of a mix is of all its I/Os (#43): from fio's merged histogram, never the
larger of the two directions' five-nines. Checked on a real fio 3.33 json+ capture
(tests/data/fio/pts-mix-round: fio's own "mixed" percentiles against the read and write bins
merged) and on a modelled drive with rare write stalls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.analysis.latency import merged_percentile
from ssdbench.fio.status import FioOutputError, parse_report
from ssdbench.stages.pts import figures, five_nines

DATA = Path(__file__).resolve().parents[2] / "data" / "fio" / "pts-mix-round"


def _raw() -> dict[str, Any]:
    return json.loads((DATA / "iops-r01.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("p", [99.0, 99.99, 99.999])
def test_merged_bins_give_fios_own_percentiles(p: float) -> None:
    """fio's rule on its own bins: each direction's bins give its percentiles, and the read
    and write bins summed give the "mixed" direction's."""
    job = parse_report(_raw()).jobs[0]
    key = f"{p:.6f}"
    raw = _raw()["jobs"][0]
    for d, name in ((job.read, "read"), (job.write, "write")):
        assert d.clat_bins and merged_percentile([d.clat_bins], p) == pytest.approx(
            raw[name]["clat_ns"]["percentile"][key] / 1000)
    assert job.mixed is not None and job.mixed.total_ios == raw["mixed"]["total_ios"]
    assert merged_percentile([job.read.clat_bins, job.write.clat_bins], p) == pytest.approx(
        raw["mixed"]["clat_ns"]["percentile"][key] / 1000)


def test_the_real_mix_takes_fios_mixed_five_nines() -> None:
    job = parse_report(_raw()).jobs[0]
    assert job.mixed is not None
    assert figures(job)["lat_p99999_us"] == job.mixed.clat_p99999_us


def _direction(ios: int, bins: dict[int, int]) -> dict[str, Any]:
    p = merged_percentile([sorted(bins.items())], 99.999)
    assert p is not None
    return {"total_ios": ios, "io_bytes": ios * 4096, "runtime": 60_000, "bw": 1.0,
            "iops": ios / 60, "lat_ns": {"mean": 200_000.0, "max": 10_000_000.0},
            "clat_ns": {"percentile": {"99.999000": p * 1000}, "bins": dict(
                (str(k), v) for k, v in bins.items())}}


@pytest.mark.parametrize(("reads", "writes", "stalls"), [
    (65_000, 35_000, 1), (650_000, 350_000, 7), (6_500_000, 3_500_000, 70)])
def test_rare_write_stalls_do_not_make_a_mixs_five_nines(reads: int, writes: int,
                                                        stalls: int) -> None:
    """2 stalls of 10 ms in 100,000 writes are 0.7 in 100,000 of a 65/35 mix's I/Os: the
    mix's five-nines is 220 µs, its writes' 10 ms. The larger of the two was 10 ms."""
    read_bins = {180_000: reads - reads // 100, 220_000: reads // 100}
    write_bins = {200_000: writes - stalls - writes // 100, 220_000: writes // 100,
                  10_000_000: stalls}
    obj: dict[str, Any] = {"jobs": [{"jobname": "rnd-4k-65_35",
                                     "read": _direction(reads, read_bins),
                                     "write": _direction(writes, write_bins)}]}
    job = parse_report(obj).jobs[0]
    assert job.write.clat_p99999_us == 10_000  # the writes' own five-nines is the stall
    assert job.mixed is None  # an older fio: no "mixed", the bins merged
    assert five_nines(job) == 220.0
    assert figures(job)["lat_p99999_us"] == 220.0
    # without bins nor "mixed" there is no five-nines of the mix, never the larger one
    for d in obj["jobs"][0]["read"], obj["jobs"][0]["write"]:
        del d["clat_ns"]["bins"]
    assert five_nines(parse_report(obj).jobs[0]) is None


@pytest.mark.parametrize("bins", [{"x": 1}, {"100": -1}, [1, 2], {"100": "many"}])
def test_damaged_bins_are_named(bins: Any) -> None:
    raw = _raw()
    raw["jobs"][0]["write"]["clat_ns"]["bins"] = bins
    with pytest.raises(FioOutputError, match=r"clat_ns\.bins"):
        parse_report(raw)


def test_no_io_has_no_percentile() -> None:
    assert merged_percentile([(), [(100, 0)]], 99.999) is None
