"""The TRIM probes: their shape (preset) and the window of the span each one writes.

Each probe is a sequential incompressible write of ``probe_gib`` (docs/plans.md "TRIM
probes"). The three probes write three disjoint windows of the span, so the "after TRIM"
probe never overwrites the LBAs the "after torture" probe has just laid out sequentially:
rewriting those would empty whole flash blocks and make even an ignored TRIM look
effective (the probe-window confound).

A probe runs until it can answer: while the verdict's interval straddles its line
(``analysis.trim.extend_probe``), the probe goes on in further chunks of ``probe_gib`` each,
up to ``probe_max_multiple`` x ``probe_gib`` in all. A chunk is its own fio job
(``probe-<phase>-ext<k>``); its window is past the three probes' windows, disjoint from every
other probe's and chunk's, so the base windows (and a run that never extends) are laid out
as before. run.json ``probe_extension`` says, per probe, how much was written and why it
stopped (answered, cap, no-room, no-margin).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

from ssdbench.fio import jobs
from ssdbench.fio.jobs import JobFile, parse_block_size
from ssdbench.stages.base import RunContext, StageFailed
from ssdbench.stages.measure import FioStage, job_target
from ssdbench.stages.params import RunParams

KIB = 1024
MIB = 1024**2
AS_SSD_BLOCK = 16 * MIB  # AS-SSD "Seq" write: 16 MiB blocks, one at a time, 1 GB
AS_SSD_IODEPTH = 1
ALIGN = 4 * KIB  # probe sizes and blocks are multiples of 4 KiB (4Kn drives too)
WINDOWS = {"clean": 0, "after_torture": 1, "after_trim": 2}
RULE = ("window k of probe_bytes at offset k * probe_bytes: clean 0, after_torture 1, "
        "after_trim 2; a span smaller than 3 * probe_gib shrinks the probe to a third of it")
EXTENSION_RULE = ("extension j of probe k at window 3 + k * extensions + j - 1; extensions = "
                  "probe_max_multiple - 1, or what the span holds past the three windows")


@dataclass(frozen=True)
class ProbeLayout:
    """Shape and windows of the three probes of a TRIM run on one span."""

    preset: str
    block_bytes: int
    iodepth: int
    requested_bytes: int  # probe_gib
    probe_bytes: int  # what each probe writes (shrunk when three windows do not fit)
    span_bytes: int
    max_multiple: int = 1  # probe_max_multiple: the cap on a probe and its extensions
    extensions: int = 0  # further chunks each probe may write (the cap, or what fits)

    @property
    def shrunk(self) -> bool:
        return self.probe_bytes < self.requested_bytes

    def offset(self, phase: str, chunk: int = 0) -> int:
        """Where chunk ``chunk`` of a probe starts: 0 is the probe itself in its window;
        extension ``j`` of probe ``k`` is window ``3 + k * extensions + j - 1``."""
        if chunk == 0:
            return WINDOWS[phase] * self.probe_bytes
        if not 1 <= chunk <= self.extensions:
            raise ValueError(f"probe {phase} has no extension {chunk} "
                             f"(at most {self.extensions})")
        window = len(WINDOWS) + WINDOWS[phase] * self.extensions + chunk - 1
        return window * self.probe_bytes

    def to_dict(self) -> dict[str, Any]:
        """run.json "probes"."""
        return {
            "preset": self.preset, "block_bytes": self.block_bytes, "iodepth": self.iodepth,
            "requested_bytes": self.requested_bytes, "probe_bytes": self.probe_bytes,
            "shrunk": self.shrunk, "rule": RULE,
            "offsets": {phase: self.offset(phase) for phase in WINDOWS},
            "max_multiple": self.max_multiple, "extensions": self.extensions,
            "extension_rule": EXTENSION_RULE,
        }


def probe_layout(span_bytes: int, params: RunParams) -> ProbeLayout:
    """The probes of ``params`` on a span: a window of ``min(probe_gib, span / 3)`` each,
    rounded down to whole blocks. The block is the preset's (16 MiB for as-ssd,
    ``block_size_fill`` for fill), or the probe itself when the probe is smaller (tests)."""
    if params.probe_preset == "as-ssd":
        block, depth = AS_SSD_BLOCK, AS_SSD_IODEPTH
    else:
        block, depth = parse_block_size(params.block_size_fill), params.iodepth
    requested = params.probe_bytes
    size = min(requested, span_bytes // len(WINDOWS))
    size -= size % ALIGN
    block = min(block, size)
    if block <= 0:
        raise StageFailed(f"the span ({span_bytes} bytes) is too small for three TRIM probe "
                          f"windows of at least {ALIGN} bytes")
    size -= size % block
    cap = params.probe_max_multiple
    room = (span_bytes // size - len(WINDOWS)) // len(WINDOWS)
    extensions = 0 if size < requested else max(0, min(cap - 1, room))
    return ProbeLayout(params.probe_preset, block, depth, requested, size, span_bytes, cap,
                       extensions)


def fio_size(nbytes: int) -> str:
    """16777216 → "16m", 131072 → "128k", 6144 → "6k" (fio's binary units)."""
    for unit, scale in (("g", 1024**3), ("m", MIB), ("k", KIB)):
        if nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


@dataclass
class ProbeStage:
    """The probe of ``phase`` in its own window, then its extensions while the verdict
    cannot answer (module docstring); run.json "probes" records the layout and
    "probe_extension" what each probe wrote and why it stopped."""

    phase: str
    name: str = field(init=False)

    def __post_init__(self) -> None:
        if self.phase not in WINDOWS:
            raise ValueError(f"unknown probe phase {self.phase!r} "
                             f"(known: {', '.join(WINDOWS)})")
        self.name = f"probe-{self.phase}"

    def make_job(self, ctx: RunContext) -> JobFile:
        """The probe's own job (its window); records the layout in run.json "probes"."""
        layout = probe_layout(ctx.target.span_bytes, ctx.params)
        ctx.record.set("probes", layout.to_dict())
        return self._job(ctx, layout, 0)

    def execute(self, ctx: RunContext) -> None:
        layout = probe_layout(ctx.target.span_bytes, ctx.params)
        # a resumed run writes the probe again: an earlier attempt's chunks are not its own
        for folder in (ctx.run_dir / "fio", ctx.run_dir / "jobs"):
            for stale in folder.glob(f"{self.name}-ext*"):
                stale.unlink()
        FioStage(self.name, self.make_job).execute(ctx)
        chunks = 1
        while True:
            go, why = self._go_on(ctx, layout)
            if not go:
                stopped = why.split(":", 1)[0]
                break
            if chunks > layout.extensions:
                stopped = "cap" if chunks >= layout.max_multiple else "no-room"
                break
            ctx.emit(self.name, "running", f"extension {chunks}: {why}")
            FioStage(self.name, functools.partial(self._job, layout=layout, chunk=chunks),
                     record_start=False).execute(ctx)
            chunks += 1
        ctx.record.set_entry("probe_extension", self.phase, {
            "chunks": chunks, "bytes": chunks * layout.probe_bytes,
            "planned_bytes": layout.probe_bytes,
            "cap_bytes": layout.max_multiple * layout.probe_bytes,
            "stopped": stopped, "why": why})

    def _job(self, ctx: RunContext, layout: ProbeLayout, chunk: int) -> JobFile:
        target = dataclasses.replace(job_target(ctx), iodepth=layout.iodepth)
        return jobs.probe_job(target, phase=self.phase if chunk == 0 else
                              f"{self.phase}-ext{chunk}", probe_bytes=layout.probe_bytes,
                              block_size=fio_size(layout.block_bytes),
                              offset=layout.offset(self.phase, chunk))

    def _go_on(self, ctx: RunContext, layout: ProbeLayout) -> tuple[bool, str]:
        """What the probes written so far say (analysis.trim.extend_probe)."""
        # imported here: numpy is loaded once a stage needs it (ssdbench list stays quick)
        from ssdbench.analysis.trim import TRIM_PHASES, extend_probe
        from ssdbench.fio.logs import probe_series, probe_totals

        fio_dir = ctx.run_dir / "fio"
        means: dict[str, float] = {}
        series: dict[str, Any] = {}
        seconds: dict[str, float | None] = {}
        for ph in TRIM_PHASES[: TRIM_PHASES.index(self.phase) + 1]:
            totals = probe_totals(fio_dir, ph)
            if totals is None:
                return False, f"no-margin: the {ph} probe has no fio report"
            nbytes, secs, _ = totals
            means[ph] = nbytes / secs / MIB if secs > 0 else 0.0
            seconds[ph] = secs
            series[ph] = probe_series(fio_dir, ph)[0]
        return extend_probe(self.phase, means, series, seconds=seconds,
                            block_bytes=layout.block_bytes)


def probe_stage(phase: str) -> ProbeStage:
    """The probe of ``phase`` (:class:`ProbeStage`)."""
    return ProbeStage(phase)
