"""The TRIM probes: their shape (preset) and the window of the span each one writes.

Each probe is a sequential incompressible write of ``probe_gib`` (docs/plans.md "TRIM
probes"). The three probes write three disjoint windows of the span, so the "after TRIM"
probe never overwrites the LBAs the "after torture" probe has just laid out sequentially:
rewriting those would empty whole flash blocks and make even an ignored TRIM look
effective (the probe-window confound).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ProbeLayout:
    """Shape and windows of the three probes of a TRIM run on one span."""

    preset: str
    block_bytes: int
    iodepth: int
    requested_bytes: int  # probe_gib
    probe_bytes: int  # what each probe writes (shrunk when three windows do not fit)
    span_bytes: int

    @property
    def shrunk(self) -> bool:
        return self.probe_bytes < self.requested_bytes

    def offset(self, phase: str) -> int:
        return WINDOWS[phase] * self.probe_bytes

    def to_dict(self) -> dict[str, Any]:
        """run.json "probes"."""
        return {
            "preset": self.preset, "block_bytes": self.block_bytes, "iodepth": self.iodepth,
            "requested_bytes": self.requested_bytes, "probe_bytes": self.probe_bytes,
            "shrunk": self.shrunk, "rule": RULE,
            "offsets": {phase: self.offset(phase) for phase in WINDOWS},
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
    return ProbeLayout(params.probe_preset, block, depth, requested, size, span_bytes)


def fio_size(nbytes: int) -> str:
    """16777216 → "16m", 131072 → "128k", 6144 → "6k" (fio's binary units)."""
    for unit, scale in (("g", 1024**3), ("m", MIB), ("k", KIB)):
        if nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


def probe_stage(phase: str) -> FioStage:
    """The probe of ``phase`` in its own window; run.json "probes" records the layout."""
    if phase not in WINDOWS:
        raise ValueError(f"unknown probe phase {phase!r} (known: {', '.join(WINDOWS)})")

    def make(ctx: RunContext) -> JobFile:
        layout = probe_layout(ctx.target.span_bytes, ctx.params)
        ctx.record.set("probes", layout.to_dict())
        target = dataclasses.replace(job_target(ctx), iodepth=layout.iodepth)
        return jobs.probe_job(target, phase=phase, probe_bytes=layout.probe_bytes,
                              block_size=fio_size(layout.block_bytes),
                              offset=layout.offset(phase))

    return FioStage(f"probe-{phase}", make)
