"""Plans: which runs a drive gets and with which parameters, kept as TOML data.

The presets live in ``ssdbench/plans/<name>.toml``; ``--plan FILE.toml`` loads a plan file
of the same form. Validation is strict: an unknown key, a bad kind, a bad parameter or a
plan that mixes read-only and destructive runs raises :class:`PlanError` naming the key::

    name = "quick"
    description = "..."
    [params]                    # plan parameters (docs/results-format.md), over the defaults
    torture_seconds = 60
    [[runs]]
    kind = "consistency"        # consistency | trim | diagnose | erase | grade | authenticity
                                # | wsat | hir | iops | throughput | latency | speed
    op_percent = 25             # consistency only; 0..90
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ssdbench.results.layout import run_name
from ssdbench.stages.params import ParamError, RunParams, load_config, parse_set

PRESETS = ("review", "quick", "trim", "diagnose", "erase", "grade", "intake", "wsat", "hir",
           "iops", "throughput", "latency", "speed", "hdd")
KINDS = ("consistency", "trim", "diagnose", "erase", "grade", "authenticity", "wsat", "hir",
         "iops", "throughput", "latency", "speed", "surface")
# never open the drive for writing (speed: unless its speed_writes is set, Plan.destructive)
READ_ONLY_KINDS = ("diagnose", "grade", "speed", "surface")
_PLAN_KEYS = {"name", "description", "params", "runs"}
_RUN_KEYS = {"kind", "op_percent"}


class PlanError(ValueError):
    """A plan that is not acceptable; the message names the source and the key."""


@dataclass(frozen=True)
class RunSpec:
    kind: str  # consistency | trim | diagnose | erase | grade | authenticity | wsat | hir
    # | iops | throughput | latency
    op_percent: int = 0

    @property
    def name(self) -> str:
        return run_name(self.kind, self.op_percent)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "op_percent": self.op_percent}


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    runs: tuple[RunSpec, ...]
    params: RunParams
    source: str = ""

    @property
    def destructive(self) -> bool:
        return any(r.kind not in READ_ONLY_KINDS
                   or (r.kind == "speed" and self.params.speed_writes) for r in self.runs)

    def params_for(self, run: RunSpec) -> RunParams:
        """The effective parameters of one run (its op_percent filled in)."""
        if run.op_percent == self.params.op_percent:
            return self.params
        return self.params.with_values({"op_percent": run.op_percent}, source=f"plan {self.name}")

    def with_params(self, values: Mapping[str, object], source: str) -> Plan:
        try:
            params = self.params.with_values(values, source=source)
        except ParamError as exc:
            raise PlanError(str(exc)) from None
        return Plan(self.name, self.description, self.runs, params, self.source)

    def to_json(self) -> dict[str, Any]:
        """What the journal keeps to resume exactly this plan."""
        return {"name": self.name, "description": self.description,
                "runs": [r.to_json() for r in self.runs], "params": self.params.as_record(),
                "source": self.source}


def _run(source: str, i: int, item: object) -> RunSpec:
    key = f"runs[{i}]"
    if not isinstance(item, dict):
        raise PlanError(f"{source}: `{key}`: expected a table ([[runs]] with kind = ...)")
    unknown = sorted(set(item) - _RUN_KEYS)
    if unknown:
        raise PlanError(f"{source}: `{key}.{unknown[0]}`: unknown key; the keys are "
                        f"{', '.join(sorted(_RUN_KEYS))}")
    kind = item.get("kind")
    if kind not in KINDS:
        raise PlanError(f"{source}: `{key}.kind`: expected one of {', '.join(KINDS)}, "
                        f"got {kind!r}")
    op = item.get("op_percent", 0)
    if isinstance(op, bool) or not isinstance(op, int) or not 0 <= op <= 90:
        raise PlanError(f"{source}: `{key}.op_percent`: expected a whole number from 0 to 90, "
                        f"got {op!r}")
    if op and kind != "consistency":
        raise PlanError(f"{source}: `{key}.op_percent`: only consistency runs take extra "
                        f"over-provisioning, got {op} for a {kind} run")
    return RunSpec(kind, op)


def parse_plan(data: Mapping[str, Any], source: str) -> Plan:
    """Validate a parsed plan document (module docstring)."""
    unknown = sorted(set(data) - _PLAN_KEYS)
    if unknown:
        raise PlanError(f"{source}: `{unknown[0]}`: unknown key; the keys are "
                        f"{', '.join(sorted(_PLAN_KEYS))}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise PlanError(f"{source}: `name`: expected a non-empty string, got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise PlanError(f"{source}: `description`: expected a string, got {description!r}")
    runs_raw = data.get("runs")
    if not isinstance(runs_raw, list) or not runs_raw:
        raise PlanError(f"{source}: `runs`: expected at least one [[runs]] table")
    runs = tuple(_run(source, i, item) for i, item in enumerate(runs_raw))
    names = [r.name for r in runs]
    for n in names:
        if names.count(n) > 1:
            raise PlanError(f"{source}: `runs`: run {n!r} appears twice")
    # A read-only plan stays read-only (no consent asked): diagnose, grade and speed runs do
    # not mix with destructive ones. The surface scan may come first in a destructive plan
    # (hdd: scan, then erase, as a disk tool does); it still only reads.
    kinds = {r.kind for r in runs} - {"surface"}
    if kinds & set(READ_ONLY_KINDS) and not kinds <= set(READ_ONLY_KINDS):
        raise PlanError(f"{source}: `runs`: a diagnose, grade or speed run is read-only and "
                        "cannot share a plan with destructive runs")
    params_raw = data.get("params", {})
    if not isinstance(params_raw, dict):
        raise PlanError(f"{source}: `params`: expected a table")
    if "op_percent" in params_raw:
        raise PlanError(f"{source}: `params.op_percent`: set op_percent on each [[runs]] table")
    try:
        params = RunParams().with_values(params_raw, source=f"{source} [params]")
    except ParamError as exc:
        raise PlanError(str(exc)) from None
    return Plan(name.strip(), description, runs, params, source)


def _read(source: str, text: str) -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{source}: not valid TOML: {exc}") from None
    return parse_plan(data, source)


def preset(name: str) -> Plan:
    """One of the shipped presets (``ssdbench/plans/<name>.toml``)."""
    if name not in PRESETS:
        raise PlanError(f"unknown plan {name!r}; the plans are {', '.join(PRESETS)} "
                        "(or a plan file ending in .toml)")
    text = resources.files("ssdbench").joinpath("plans", f"{name}.toml").read_text("utf-8")
    return _read(f"plan {name}", text)


def load_plan(spec: str) -> Plan:
    """A preset name, or the path of a plan file (``*.toml``)."""
    if spec in PRESETS:
        return preset(spec)
    if spec.endswith(".toml") or "/" in spec:
        path = Path(spec)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PlanError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}"
                            ) from None
        return _read(str(path), text)
    return preset(spec)


def build_plan(spec: str, *, config: Path | None = None, sets: Iterable[str] = (),
               overrides: Mapping[str, object] | None = None) -> Plan:
    """The plan, then a parameter file (``--config``), then ``--set``, then overrides."""
    plan = load_plan(spec)
    try:
        if config is not None:
            plan = plan.with_params(load_config(config), source=str(config))
        plan = plan.with_params(parse_set(sets), source="--set")
    except ParamError as exc:
        raise PlanError(str(exc)) from None
    if overrides:
        plan = plan.with_params(overrides, source="command line")
    return plan


def plan_from_json(data: Mapping[str, Any]) -> Plan:
    """The plan a journal recorded (Plan.to_json), re-validated."""
    params = dict(data.get("params") or {})
    # as_record() writes the effective steady start; keep it only when it was explicit
    params.pop("steady_start_s", None)
    doc = {"name": data.get("name"), "description": data.get("description", ""),
           "runs": data.get("runs"), "params": {k: v for k, v in params.items()
                                                if k != "op_percent"}}
    plan = parse_plan(doc, str(data.get("source") or "journal"))
    recorded = (data.get("params") or {}).get("steady_start_s")
    if recorded is not None and recorded != plan.params.effective_steady_start_s:
        plan = plan.with_params({"steady_start_s": recorded}, source="journal")
    return plan
