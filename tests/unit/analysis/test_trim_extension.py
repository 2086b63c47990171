"""#43: a TRIM probe that runs until it can answer (analysis.trim.extend_probe). The probes
are simulated chunk by chunk as the stage writes them (stages/probe.py): a probe of 8 GiB,
then further 8-GiB chunks while its verdict's interval straddles its line, up to 4 in all;
each chunk's whole seconds join the probe's series."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ssdbench.analysis.trim import TRIM_PHASES, extend_probe, trim_verdict

BLOCK = 16 << 20  # the AS-SSD preset's block


def _run(seed: int, truth: tuple[float, float, float], *, cap: int, noise: float = 0.05,
         gib: float = 8.0) -> tuple[str, dict[str, int]]:
    """The verdict and each probe's chunks for one simulated TRIM run (per-second MiB/s
    with ``noise`` relative Gaussian noise; a chunk of ``gib`` lasts gib·1024/mean s)."""
    rng = np.random.default_rng(seed)
    series: dict[str, np.ndarray] = {}
    chunks: dict[str, int] = {}
    for phase, mean in zip(TRIM_PHASES, truth, strict=True):
        parts: list[np.ndarray] = []
        while True:
            parts.append(mean * rng.normal(1.0, noise, int(gib * 1024 / mean)))
            series[phase] = np.concatenate(parts)
            if len(parts) >= cap:
                break
            go, _why = extend_probe(
                phase, {p: float(v.mean()) for p, v in series.items()}, series,
                seconds={p: float(v.size) for p, v in series.items()}, block_bytes=BLOCK)
            if not go:
                break
        chunks[phase] = len(parts)
    v = trim_verdict(*(float(series[p].mean()) for p in TRIM_PHASES), series=series,
                     seconds={p: float(v.size) for p, v in series.items()}, block_bytes=BLOCK)
    return v.verdict, chunks


def test_a_drive_whose_trim_works_gets_its_answer_by_extending_the_probes() -> None:
    # the drive: 500/250/490 MiB/s (recovery 96%), 5% noise, 8-GiB probes (16 s):
    # without extension its 99% interval mostly straddles the 90% line
    without = Counter(_run(seed, (500, 250, 490), cap=1)[0] for seed in range(20))
    extended = Counter(_run(seed, (500, 250, 490), cap=4)[0] for seed in range(20))
    assert without["inconclusive"] >= 13, without  # measured: 15 of 20 (155 of 200)
    assert extended["effective"] >= 17 and extended.keys() <= {"effective", "inconclusive"}, \
        extended  # measured: 18 of 20 (176 of 200); 6x: 195 of 200
    wider = Counter(_run(seed, (500, 250, 490), cap=6)[0] for seed in range(20))
    assert wider["effective"] >= 19, wider


@pytest.mark.parametrize(("truth", "chunks"), [
    ((315.1, 183.3, 193.3), {"after_torture": 1, "after_trim": 1}),  # ineffective: clear
    ((500.0, 250.0, 500.0), {"after_torture": 1, "after_trim": 1}),  # effective: clear
])
def test_a_clear_verdict_does_not_lengthen_the_later_probes(
        truth: tuple[float, float, float], chunks: dict[str, int]) -> None:
    for seed in range(5):
        _, got = _run(seed, truth, cap=4, noise=0.01)
        assert {p: got[p] for p in chunks} == chunks
        assert got["clean"] == 1  # 1% noise: the clean mean is known to far better than 1.5%


def test_a_drive_on_the_line_stays_inconclusive_not_a_false_verdict() -> None:
    # recovery exactly 90%: extension must not turn noise into an answer
    verdicts = Counter(_run(seed, (500, 250, 475), cap=4)[0] for seed in range(40))
    assert verdicts["inconclusive"] >= 37, verdicts  # measured: 391 of 400


def test_a_probe_without_a_noise_margin_does_not_go_on() -> None:
    # one 16-MiB block a second (the simulated drives): lumps, not noise; the verdict is the
    # means' and extending would only lengthen the run
    one_block = {"clean": np.full(4, 16.0)}
    go, why = extend_probe("clean", {"clean": 16.0}, one_block, seconds={"clean": 4.0},
                           block_bytes=BLOCK)
    assert not go and why.startswith("no-margin")
    go, why = extend_probe("clean", {"clean": 500.0}, {"clean": np.full(2, 500.0)},
                           seconds={"clean": 2.5}, block_bytes=BLOCK)
    assert not go and "fewer than 3" in why


def test_the_degradation_line_decides_the_after_torture_probe() -> None:
    rng = np.random.default_rng(3)
    series = {"clean": 500 * rng.normal(1, 0.05, 16), "after_torture": 450 * rng.normal(1, 0.05, 16)}
    means = {p: float(v.mean()) for p, v in series.items()}
    go, why = extend_probe("after_torture", means, series, block_bytes=BLOCK)
    assert go and "straddles the 90% line" in why
    series["after_torture"] = 250 * rng.normal(1, 0.05, 32)
    means = {p: float(v.mean()) for p, v in series.items()}
    go, why = extend_probe("after_torture", means, series, block_bytes=BLOCK)
    assert not go and why.startswith("answered")
    with pytest.raises(ValueError):
        extend_probe("before_trim", means, series)
