"""The plan parameters of a run (docs/results-format.md "Plan parameters"), strictly parsed.

``--set key=value`` and ``--config FILE`` (TOML, the keys at the top level or in a
``[params]`` table) produce a frozen :class:`RunParams`. A bad value raises
:class:`ParamError` naming the key and the expected form; nothing runs.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssdbench.fio.jobs import IOENGINES, parse_block_size
from ssdbench.stages.speedclass import SpeedClass, SpeedClassError, classes_record, parse_classes
from ssdbench.untrusted import without_url_secrets

if TYPE_CHECKING:
    from ssdbench.grade.rules import Thresholds

PROBE_PRESETS = ("as-ssd", "fill")
PSID_GIVEN = "(given)"  # what as_record() writes for a PSID (run.json, the journal)


class ParamError(ValueError):
    """A plan value that is not acceptable; the message names the key and the form."""


@dataclass(frozen=True)
class RunParams:
    torture_seconds: int = 2000
    """Consistency torture duration (s)."""
    trim_torture_seconds: int = 3600
    """Torture before the "after torture" probe of a TRIM run (s)."""
    fill_passes: int = 1
    """Sequential fill passes over the span."""
    probe_gib: float = 1.0
    """Size of each TRIM probe, GiB (fractions allowed); each probe has its own window."""
    probe_preset: str = "as-ssd"
    """TRIM probe shape: as-ssd (16 MiB blocks, QD1) or fill (block_size_fill, iodepth)."""
    probe_max_multiple: int = 4
    """A TRIM probe goes on in chunks of probe_gib while its verdict's interval straddles a
    line, up to this many probe_gib in all (1 = never; docs/plans.md "TRIM probes")."""
    trim_idle_seconds: int = 60
    """Idle time between the TRIM pass and the "after TRIM" probe (s, 0 = none)."""
    op_percent: int = 0
    """Extra over-provisioning of the run (0 = default capacity)."""
    steady_start_s: int | None = None
    """Steady window start; None: 1400 s, or 70% of torture_seconds when it is not 2000."""
    wsat_capacity_multiple: float = 4.0
    """WSAT (SNIA PTS write saturation): 4 KiB random writes from the purge until this many
    times the span is written (the PTS: 4), unless wsat_seconds ends it first."""
    wsat_seconds: int = 86400
    """WSAT: the longest it runs, seconds (the PTS: 24 h); the run says which limit ended it."""
    hir_waits: str = "5,10,15,25,50"
    """HIR (SNIA PTS host idle recovery): the idle periods between bursts, seconds, in order
    (the PTS: 5, 10, 15, 25 and 50)."""
    hir_repetitions: int = 360
    """HIR: bursts after each idle period, and bursts of the return to the baseline after
    each (the PTS: 360; the full test then runs about 15.5 h after its preconditioning)."""
    hir_burst_seconds: int = 5
    """HIR: the length of each burst of 4 KiB random writes (the PTS: 5 s)."""
    pts_max_rounds: int = 25
    """SNIA PTS IOPS, throughput and latency tests: rounds at most before the measurement
    window is taken from the last five, marked not steady (the PTS: 25; 5 to 100)."""
    pts_block_sizes: str = "1m,128k,64k,32k,16k,8k,4k,512"
    """SNIA PTS IOPS and latency tests: the block sizes they run, from the PTS's 1m, 128k,
    64k, 32k, 16k, 8k, 4k and 512 (4k always: the tracking workload); the latency test runs
    those of its 8k, 4k and 512. Fewer: a shorter variant. (Throughput runs 1m and 128k.)"""
    pts_wipc_passes: int = 2
    """SNIA PTS: workload-independent preconditioning, passes of 128 KiB sequential writes
    over the span after the purge (the PTS: 2; 0: none, the report says so)."""
    steady_round_s: int = 60
    """SNIA steady state: the length of one round (s). 60 is the PTS's one minute; shorter
    rounds (tests, a quick look) reach a verdict sooner and the report names their length."""
    block_size_fill: str = "128k"
    """Fill block size (and the probes' with probe_preset = "fill")."""
    block_size_torture: str = "4k"
    """Torture block size."""
    iodepth: int = 32
    """Queue depth of every job but the as-ssd probes (QD1)."""
    ioengine: str = "libaio"
    """libaio or io_uring."""
    erase_fallback: str = "fail"
    """A drive with no firmware erase that works (a USB bridge, a drive that stays frozen, a
    hard disk, a virtual disk): fail; overwrite (a Clear by one pass over every block, then a
    sampled read-back: docs/erase.md); or discard (the result then says "not
    secure-erased")."""
    overwrite_pattern: str = "random"
    """Clear by overwrite: random (an AES-128-CTR stream from a seed kept in the record: a
    drive cannot compress it, and the read-back proves each sampled block was written) or
    zero (a fixed value, NIST's minimum; the read-back then only shows zeros)."""
    overwrite_verify_percent: float = 1.0
    """Clear by overwrite: the share of the drive read back and compared with the pattern,
    chosen at random in each of 64 parts of the drive (0.01 to 100; 100 reads it all)."""
    status_timeout_s: int = 60
    """fio without a status dump for this long is hung: the stage fails."""
    hist_coarseness: int = 3
    """fio log_hist_coarseness: 2**k of fio's 1856 latency bins per column (0..6)."""
    random_read_seconds: int = 60
    """Diagnose: duration of the 4 KiB random read."""
    speed_seconds: int = 12
    """Speed plan: seconds each corner is measured (after speed_ramp_seconds)."""
    speed_ramp_seconds: int = 3
    """Speed plan: seconds each corner runs before it is measured (not counted)."""
    speed_gib: float = 1.0
    """Speed plan: the region the corners read (and write), GiB from the drive's start
    (CrystalDiskMark's default test size: 1 GiB)."""
    speed_writes: bool = False
    """Speed plan: also the four write corners (destructive: the plan then needs consent)."""
    speed_tolerance_percent: int = 15
    """Speed plan: a figure this much below its class or less is "as fast as its class"."""
    speed_classes: tuple[SpeedClass, ...] = ()
    """Speed plan: the lab's class table (``[speed.class."MODEL REGEX"]`` in a config)."""
    surface_regions: int = 200
    """Surface scan: the regions the span is cut into (the chart's x axis, surface.csv's
    rows)."""
    surface_block_kib: int = 128
    """Surface scan: KiB read at a time and timed (128: 256 sectors, MHDD's block)."""
    chart_iops_top: int = 40000
    """Top of the steady linear IOPS chart (seconds above it are drawn at the edge)."""
    operator: str = ""
    """Erase record: the person sanitizing (docs/erase.md "The erase record")."""
    organisation: str = ""
    """Erase record: the organisation doing the sanitization."""
    customer: str = ""
    """Erase record: the customer (whose drives these are)."""
    asset_tag: str = ""
    """Erase record: the asset tag / property number."""
    lot: str = ""
    """Erase record: the lot the drive came in (the lab's batch of drives handed on together)."""
    extra_fields: tuple[tuple[str, str], ...] = ()
    """The lab's own fields (``[fields]`` in the kiosk config): (name, value) pairs typed at
    intake or given by a job, carried into the record, the certificate and summary.csv."""
    job: str = ""
    """The lab's job that chose this drive's plan (``[jobs]``: its id), empty: the bench's
    default plan."""
    record_key: str = ""
    """Erase record: the lab's Ed25519 private key: a PEM file not on the results stick, or an
    http(s) URL fetched into memory when the kiosk or `ssdbench run` starts (docs/security.md);
    empty: records are unsigned."""
    record_pdf: bool = True
    """Erase record: also render erase-certificate.pdf (WeasyPrint: about a minute a drive on a
    slow machine); false: the signed erase-record.json and the HTML certificate only."""
    restore_native_max: bool = False
    """Erase plan: restore an HPA's hidden sectors (hdparm -N p<native>) before the erase, so
    the erase covers the whole drive; setting it is the consent (docs/erase.md)."""
    scsi_reformat_512: bool = False
    """Erase plan, SAS: reformat a drive of 520/528-byte blocks (a storage array's; the kernel
    sees capacity 0) to 512 with sg_format before its SCSI sanitize; setting it is the consent,
    the record names both sizes (docs/erase.md "SAS and SCSI drives")."""
    self_test: str = "none"
    """Grade plan: the drive's own self-test first: none, short or extended."""
    capacity_check: str = "quick"
    """Authenticity run: quick (tagged blocks on a grid, about a minute) or full (then every
    block of the claimed span written and read back: the first bad LBA and where the write
    speed collapses; as long as writing and reading the whole drive)."""
    grade_reallocated_scrap: int = 100
    """Grade: ATA reallocated sectors (5) at or above this are scrap (> 0: a note)."""
    grade_reported_uncorrectable_scrap: int = 10
    """Grade: ATA reported uncorrectable errors (187) at or above this are scrap (> 0: a note)."""
    grade_media_errors_scrap: int = 10
    """Grade: NVMe media and data integrity errors at or above this are scrap (> 0: a note)."""
    grade_wear_note_percent: int = 80
    """Grade: rated life used (percent) from which the grade carries a note."""
    grade_wear_scrap_percent: int = 100
    """Grade: rated life used (percent) from which the drive is scrap."""
    grade_power_on_hours_note: int = 43800
    """Grade: power-on hours from which the grade carries a note (43,800: five years)."""
    psid: str = ""
    """Erase plan: PSID revert a locked self-encrypting drive first (the 32 characters on its
    label; typed twice in the TUI). Never written to run.json."""

    @property
    def effective_steady_start_s(self) -> int:
        if self.steady_start_s is not None:
            return self.steady_start_s
        if self.torture_seconds == 2000:
            return 1400
        return int(self.torture_seconds * 0.7)

    @property
    def hir_wait_list(self) -> tuple[int, ...]:
        """``hir_waits`` as seconds (validated when set)."""
        return parse_waits(self.hir_waits)

    @property
    def pts_block_size_list(self) -> tuple[str, ...]:
        """``pts_block_sizes`` as fio block sizes (validated when set)."""
        return parse_pts_block_sizes(self.pts_block_sizes)

    @property
    def probe_bytes(self) -> int:
        return int(self.probe_gib * 1024**3)

    def as_record(self) -> dict[str, Any]:
        """Every effective value, for run.json."""
        record = dataclasses.asdict(self)
        record["steady_start_s"] = self.effective_steady_start_s
        record["psid"] = PSID_GIVEN if self.psid else ""  # the PSID is a credential: not kept
        # a key URL's user and password (the lab's config server) are not kept either
        record["record_key"] = without_url_secrets(self.record_key)
        record["speed_classes"] = classes_record(self.speed_classes)
        # the lab's fields as an object, name -> value, in the lab's order (read back as is)
        record["extra_fields"] = dict(self.extra_fields)
        return record

    def grade_thresholds(self) -> Thresholds:
        from ssdbench.grade.rules import Thresholds

        return Thresholds(
            reallocated_scrap=self.grade_reallocated_scrap,
            reported_uncorrectable_scrap=self.grade_reported_uncorrectable_scrap,
            media_errors_scrap=self.grade_media_errors_scrap,
            wear_note_percent=self.grade_wear_note_percent,
            wear_scrap_percent=self.grade_wear_scrap_percent,
            power_on_hours_note=self.grade_power_on_hours_note)

    def with_values(self, values: Mapping[str, object], source: str = "--set") -> RunParams:
        """``values`` over these; a lab field comes as ``field.<name>`` (``--set``) or a
        ``field`` table (TOML ``field.pallet = "P-3"``) and replaces that one field, while
        ``extra_fields`` (a table, pairs) replaces them all."""
        changes: dict[str, Any] = {}
        one: dict[str, str] = {}
        for key, value in values.items():
            if key.startswith(FIELD_PREFIX):
                one.update(_convert_fields({key[len(FIELD_PREFIX):]: value}, source,
                                           key=key, pairs=False))
            elif key == "field" and isinstance(value, Mapping):
                one.update(_convert_fields(value, source, key="field", pairs=False))
            else:
                changes[key] = _convert(key, value, source)
        if one:
            mine = dict(changes.get("extra_fields", self.extra_fields))
            changes["extra_fields"] = tuple({**mine, **one}.items())
        params = dataclasses.replace(self, **changes)
        _check(params, source)
        return params


_FIELDS = {f.name: f for f in fields(RunParams)}
FIELD_PREFIX = "field."  # --set field.<name>=VALUE: one of the lab's fields
FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")  # the lab's field names ([fields] names)


def _convert_fields(value: object, source: str, *, key: str = "extra_fields",
                    pairs: bool = True) -> tuple[tuple[str, str], ...]:
    """The lab's fields from a table ``{name: value}`` (TOML, run.json) or, with ``pairs``,
    (name, value) pairs (the kiosk, the journal); each name ``[a-z][a-z0-9_]{0,31}``, once,
    each value a string."""
    form = ("a table of the lab's fields, name = \"value\" (names like pallet or "
            "bay_2: a-z, 0-9, _), or --set field.<name>=VALUE")
    items: list[tuple[object, object]]
    if isinstance(value, Mapping):
        items = list(value.items())
    elif pairs and isinstance(value, list | tuple) and all(
            isinstance(p, list | tuple) and len(p) == 2 for p in value):
        items = [(p[0], p[1]) for p in value]
    else:
        raise ParamError(f"{source}: key {key!r}: expected {form}, got {value!r}"[:400])
    out: dict[str, str] = {}
    for name, text in items:
        where = f"{FIELD_PREFIX}{name}" if isinstance(name, str) else key
        if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
            raise ParamError(f"{source}: key {where!r}: expected a field name of a-z, 0-9 "
                             f"and _ (a letter first, at most 32), got {name!r}"[:400])
        if name in out:
            raise ParamError(f"{source}: key {where!r}: the field is named twice")
        if not isinstance(text, str):
            raise ParamError(f"{source}: key {where!r}: expected a string, got {text!r}"[:400])
        out[name] = text.strip()
    return tuple(out.items())
_POSITIVE_INT = {"torture_seconds", "trim_torture_seconds", "fill_passes", "iodepth",
                 "probe_max_multiple",
                 "steady_round_s", "pts_max_rounds", "wsat_seconds", "hir_repetitions",
                 "hir_burst_seconds",
                 "status_timeout_s", "random_read_seconds", "chart_iops_top", "speed_seconds",
                 "surface_regions", "surface_block_kib",
                 "grade_reallocated_scrap", "grade_reported_uncorrectable_scrap",
                 "grade_media_errors_scrap", "grade_wear_note_percent",
                 "grade_wear_scrap_percent", "grade_power_on_hours_note"}
_BOOL = {"restore_native_max", "record_pdf", "speed_writes", "scsi_reformat_512"}


def _convert(key: str, value: object, source: str) -> object:
    if key not in _FIELDS:
        known = ", ".join(sorted(_FIELDS))
        raise ParamError(f"{source}: `{key}`: unknown key; the keys are {known}")

    def bad(form: str) -> ParamError:
        return ParamError(f"{source}: key {key!r}: expected {form}, got {value!r}")

    if key == "extra_fields":
        if isinstance(value, str):  # --set extra_fields=...: one field at a time instead
            raise bad("one --set field.<name>=VALUE per field (e.g. field.pallet=P-3)")
        return _convert_fields(value, source)
    if key == "speed_classes":
        try:
            return parse_classes(value, source)
        except SpeedClassError as exc:
            raise ParamError(str(exc)) from None
    if key in _POSITIVE_INT or key in ("op_percent", "hist_coarseness", "steady_start_s",
                                       "trim_idle_seconds", "pts_wipc_passes",
                                       "speed_ramp_seconds", "speed_tolerance_percent"):
        if isinstance(value, bool):
            raise bad("a whole number")
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise bad("a whole number") from None
        if not isinstance(value, int):
            raise bad("a whole number")
        if key in _POSITIVE_INT and value < 1:
            raise bad("a whole number ≥ 1")
        if key == "op_percent" and not 0 <= value <= 90:
            raise bad("a percentage from 0 to 90")
        if key == "steady_round_s" and value > 3600:
            raise bad("a whole number of seconds from 1 to 3600")
        if key == "pts_max_rounds" and not 5 <= value <= 100:
            raise bad("a whole number of rounds from 5 to 100")
        if key == "pts_wipc_passes" and not 0 <= value <= 10:
            raise bad("a whole number of passes from 0 to 10")
        if key == "hist_coarseness" and not 0 <= value <= 6:
            raise bad("a whole number from 0 to 6")
        if key == "probe_max_multiple" and value > 16:
            raise bad("a whole number of probe sizes from 1 to 16")
        if key == "surface_regions" and value > 10000:
            raise bad("a whole number of regions from 1 to 10000")
        if key == "surface_block_kib" and (value > 16384 or value & (value - 1)):
            raise bad("a power of two of KiB from 1 to 16384, e.g. 128")
        if key == "speed_seconds" and value > 3600:
            raise bad("a whole number of seconds from 1 to 3600")
        if key == "speed_ramp_seconds" and not 0 <= value <= 600:
            raise bad("a whole number of seconds from 0 to 600")
        if key == "speed_tolerance_percent" and not 0 <= value <= 90:
            raise bad("a percentage from 0 to 90")
        if key in ("steady_start_s", "trim_idle_seconds") and value < 0:
            raise bad("a whole number of seconds ≥ 0")
        return value
    if key in _BOOL:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "yes", "1", "on"):
            return True
        if text in ("false", "no", "0", "off", ""):
            return False
        raise bad("true or false")
    if key == "overwrite_verify_percent":
        number = _number(value)
        if number is None or not 0.01 <= number <= 100 or not math.isfinite(number):
            raise bad("a percentage from 0.01 to 100, e.g. 1 or 100")
        return number
    if key in ("wsat_capacity_multiple", "probe_gib", "speed_gib"):
        number = _number(value)
        top = 100.0 if key == "wsat_capacity_multiple" else math.inf
        if number is None or not 0 < number <= top or not math.isfinite(number):
            raise bad("a multiple of the span > 0 and at most 100, e.g. 4 or 0.5"
                      if key == "wsat_capacity_multiple" else "a size in GiB > 0, e.g. 8 or 0.5")
        return number
    if not isinstance(value, str):
        raise bad("a string")
    value = value.strip()
    if key.startswith("block_size_"):
        try:
            parse_block_size(value)
        except ValueError:
            raise bad("a block size like 4k, 128k or 1m (multiple of 512 bytes)") from None
        return value
    if key == "ioengine" and value not in IOENGINES:
        raise bad(" or ".join(IOENGINES))
    if key == "probe_preset" and value not in PROBE_PRESETS:
        raise bad(" or ".join(PROBE_PRESETS))
    if key == "erase_fallback" and value not in ("fail", "discard", "overwrite"):
        raise bad("fail, discard or overwrite")
    if key == "overwrite_pattern" and value not in ("random", "zero"):
        raise bad("random or zero")
    if key == "self_test" and value not in ("none", "short", "extended"):
        raise bad("none, short or extended")
    if key == "hir_waits":
        try:
            return ",".join(str(w) for w in parse_waits(value))
        except ValueError as exc:
            raise bad(f"idle periods in seconds separated by commas, e.g. 5,10,15,25,50 "
                      f"({exc})") from None
    if key == "pts_block_sizes":
        try:
            return ",".join(parse_pts_block_sizes(value))
        except ValueError as exc:
            raise bad(f"block sizes of the PTS separated by commas, e.g. 128k,4k ({exc})"
                      ) from None
    if key == "capacity_check" and value not in ("quick", "full"):
        raise bad("quick or full")
    if key == "psid" and value == PSID_GIVEN:
        return ""  # a plan read back from run.json / the journal: the PSID was not kept
    if key == "psid" and value:
        from ssdbench.erase.psid import normalize_psid

        try:
            return normalize_psid(value)
        except ValueError as exc:
            raise ParamError(f"{source}: key 'psid': {exc}") from None
    return value


PTS_LOOP_KINDS = ("iops", "latency", "throughput")  # the SNIA PTS tests run as round loops
PTS_BLOCK_SIZES = ("1m", "128k", "64k", "32k", "16k", "8k", "4k", "512")


def parse_pts_block_sizes(text: str) -> tuple[str, ...]:
    """"4k, 128K" -> ("128k", "4k"): the PTS's block sizes named (1m, 128k, 64k, 32k, 16k,
    8k, 4k, 512; "1024k" is 1m, "0.5k" and "512b" are 512), each once, in the PTS's order,
    4k among them."""
    aliases = {"1024k": "1m", "512b": "512", "0.5k": "512"}
    named = [aliases.get(p.strip().lower(), p.strip().lower()) for p in str(text).split(",")]
    unknown = [n for n in named if n not in PTS_BLOCK_SIZES]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not one of {', '.join(PTS_BLOCK_SIZES)}")
    if len(set(named)) != len(named):
        raise ValueError("a block size appears twice")
    if "4k" not in named:
        raise ValueError("4k is the tracking workload and must be among them")
    return tuple(bs for bs in PTS_BLOCK_SIZES if bs in named)


def parse_waits(text: str) -> tuple[int, ...]:
    """"5,10,15" -> (5, 10, 15): one to ten whole seconds from 2 to 3600, each once (a burst
    is told from the next by at least one second without writes)."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p.isdigit() for p in parts):
        raise ValueError("whole seconds only")
    waits = tuple(int(p) for p in parts)
    if not 1 <= len(waits) <= 10 or len(set(waits)) != len(waits):
        raise ValueError("one to ten of them, each once")
    if any(not 2 <= w <= 3600 for w in waits):
        raise ValueError("each from 2 to 3600 s")
    return waits


def _number(value: object) -> float | None:
    """A number from TOML or --set text; None for anything else (a bool included)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _check(params: RunParams, source: str) -> None:
    if params.grade_wear_note_percent > params.grade_wear_scrap_percent:
        raise ParamError(
            f"{source}: key 'grade_wear_note_percent': expected at most "
            f"grade_wear_scrap_percent ({params.grade_wear_scrap_percent}), got "
            f"{params.grade_wear_note_percent}")
    start = params.steady_start_s
    if start is not None and start >= params.torture_seconds:
        raise ParamError(
            f"{source}: key 'steady_start_s': expected less than torture_seconds "
            f"({params.torture_seconds}), got {start}"
        )


def parse_set(items: Iterable[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` → {"a": "1", "b": "x"}; raise ParamError for a malformed item."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParamError(f"--set: expected key=value, got {item!r}")
        out[key.strip()] = value
    return out


def load_config(path: Path) -> dict[str, object]:
    """A TOML plan file: parameter keys at the top level or in ``[params]``."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ParamError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ParamError(f"{path}: not valid TOML: {exc}") from None
    values: dict[str, object] = {}
    for key, value in data.items():
        if key == "speed":  # the lab's class table: [speed.class."MODEL REGEX"]
            if not isinstance(value, dict) or set(value) - {"class"}:
                raise ParamError(f"{path}: key 'speed': expected [speed.class.\"MODEL REGEX\"] "
                                 "tables only")
            values["speed_classes"] = value.get("class", {})
        elif key == "params":
            if not isinstance(value, dict):
                raise ParamError(f"{path}: key 'params': expected a table")
            values.update(value)
        else:
            values[key] = value
    return values


def build_params(
    config: Path | None = None, sets: Iterable[str] = (), base: RunParams | None = None,
) -> RunParams:
    """Defaults, then the config file, then ``--set`` (last wins)."""
    params = base or RunParams()
    if config is not None:
        params = params.with_values(load_config(config), source=str(config))
    return params.with_values(parse_set(sets), source="--set")
