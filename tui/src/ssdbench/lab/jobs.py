"""The lab's job file (``[jobs]`` in the kiosk config; docs/lab.md "Jobs"): per drive, by
serial, lot or model, which plan to run and with which parameters, and the fields (asset
tag, customer, lot, the lab's own) the job gives the drive.

Form (TOML)::

    [[job]]
    id = "J-1001"                  # the job's name: on the screen and in the record
    serial = "S3EVNX0K123"         # exactly one of: serial (exact), lot (exact), model
    plan = "erase"                 #   (a regular expression over the whole model, any case)
    params = {erase_fallback = "discard"}
    fields = {asset_tag = "A-77", customer = "ACME", lot = "L-9"}

A drive's job is the one whose serial is the drive's; else the one whose lot is the drive's
lot (typed at intake, or given by its serial's job); else the one whose model expression
matches. Two jobs of one rank for one drive is an error (:class:`AmbiguousJob`), never a
silent pick. The file is untrusted: every string is checked (no control characters, at most
:data:`MAX_VALUE` characters), ids are unique, a model expression must compile, the plan must
be one the config allows and its parameters must be valid for it; the first problem is a
:class:`JobsError` naming the job and the key, and the whole file is not used.

:func:`fetch_jobs` reads the file from a URL (the one fetch, lab/fetch.py: a deadline, the
user and password to their own origin only, whole or not at all) or from a key of the lab
store (its own credentials), never more than :data:`MAX_JOBS_BYTES`.
"""

from __future__ import annotations

import re
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ssdbench.lab.config import StoreConfig
from ssdbench.lab.fetch import FetchError, UrlError, get, parse_url
from ssdbench.lab.fetch import shown as shown_url
from ssdbench.plan.plans import PlanError, build_plan
from ssdbench.untrusted import shown

MAX_JOBS_BYTES = 1024 * 1024
MAX_JOBS = 10_000
MAX_VALUE = 128  # characters of an id, serial, lot, model expression or field value
JOBS_TIMEOUT_S = 10.0  # the whole fetch of the job file (connect, TLS, answer)
FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
BUILTIN_FIELDS = ("asset_tag", "customer", "lot")
JOB_KEYS = ("id", "serial", "lot", "model", "plan", "params", "fields")
MATCHERS = ("serial", "lot", "model")  # also the precedence, first wins
# parameters a job may not set: the drive's fields go in `fields`; a PSID or the lab's key
# belong to the bench's own config (a job file never widens what the bench may do)
NOT_JOB_PARAMS = ("psid", "record_key", "asset_tag", "customer", "lot", "extra_fields", "job",
                  "speed_classes")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")

Kind = Literal["serial", "lot", "model"]


class JobsError(ValueError):
    """A job file that cannot be used (malformed, too big, unreachable): the message names
    the file (without a URL's secrets) and, when it is the content, the job and the key."""


class AmbiguousJob(JobsError):
    """Two jobs of the same rank match one drive: the drive waits, named on the screen."""


def check_value(value: object) -> str | None:
    """Why ``value`` cannot be a job's or a field's string, or None: a string of 1 to
    MAX_VALUE characters, none of them a control or invisible formatting character."""
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    if not value.strip():
        return "expected a non-empty string"
    if len(value) > MAX_VALUE:
        return f"longer than {MAX_VALUE} characters"
    if _CONTROL.search(value):
        return "a control or invisible character in it"
    return None


def check_field_name(name: object) -> str | None:
    """Why ``name`` cannot be a field's name, or None ([a-z][a-z0-9_]{0,31})."""
    if not isinstance(name, str) or FIELD_NAME.fullmatch(name) is None:
        return f"expected a name like pallet_bay ([a-z][a-z0-9_]{{0,31}}), got {_q(name)}"
    return None


def _q(value: object) -> str:
    """A value of the file as a message quotes it: one line, cut, no escapes."""
    return shown(repr(value), limit=80)


@dataclass(frozen=True)
class Job:
    id: str
    kind: Kind
    pattern: str  # the serial, the lot, or the model's regular expression
    plan: str
    params: tuple[tuple[str, object], ...] = ()
    fields: tuple[tuple[str, str], ...] = ()  # (name, value), the names the config knows

    def matches(self, serial: str, model: str, lot: str) -> bool:
        if self.kind == "serial":
            return bool(serial) and serial == self.pattern
        if self.kind == "lot":
            return bool(lot) and lot == self.pattern
        return re.fullmatch(self.pattern, model or "", re.IGNORECASE) is not None

    @property
    def described(self) -> str:
        """``job J-1001 (serial S3EV...)``: how the screen and the console name it."""
        return shown(f"job {self.id} ({self.kind} {self.pattern})", limit=200)


@dataclass(frozen=True)
class JobFile:
    source: str  # the URL (no secrets) or the store key it came from
    jobs: tuple[Job, ...] = ()

    def find(self, serial: str, model: str, lot: str = "") -> Job | None:
        """The drive's job (serial, then lot, then model), or None; AmbiguousJob when two
        jobs of the first rank that matches both match."""
        for kind in MATCHERS:
            found = [j for j in self.jobs if j.kind == kind and j.matches(serial, model, lot)]
            if len(found) > 1:
                raise AmbiguousJob(shown(
                    f"{self.source}: jobs {', '.join(j.id for j in found[:5])} all match this "
                    f"drive by {kind}: the job file must give it one", limit=400))
            if found:
                return found[0]
        return None


def parse_jobs(raw: bytes, source: str, *, plans: Sequence[str],
               field_names: Sequence[str]) -> JobFile:
    """The job file ``raw`` (see the module docstring); ``plans``: the plans a job may name;
    ``field_names``: the fields it may give (asset_tag, customer, lot and the config's
    ``[fields] names``). Any problem is a JobsError naming the job and the key."""
    if len(raw) > MAX_JOBS_BYTES:
        raise JobsError(f"{source}: larger than {MAX_JOBS_BYTES >> 10} KiB: not a job file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise JobsError(f"{source}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise JobsError(f"{source}: not valid TOML: {shown(str(exc), limit=200)}") from None
    except RecursionError:
        raise JobsError(f"{source}: nested too deeply to be a job file") from None
    unknown = sorted(set(data) - {"job"})
    if unknown:
        raise JobsError(f"{source}: `{shown(unknown[0], limit=40)}`: unknown key; a job file "
                        "holds [[job]] tables only")
    table = data.get("job", [])
    if not isinstance(table, list) or not all(isinstance(t, dict) for t in table):
        raise JobsError(f"{source}: `job`: expected [[job]] tables")
    if len(table) > MAX_JOBS:
        raise JobsError(f"{source}: more than {MAX_JOBS} jobs")
    jobs: list[Job] = []
    ids: set[str] = set()
    for i, item in enumerate(table):
        job = _job(source, i, item, plans, field_names)
        if job.id in ids:
            raise JobsError(f"{source}: job[{i}] `id`: {_q(job.id)} is given twice: each "
                            "job needs its own id")
        ids.add(job.id)
        jobs.append(job)
    return JobFile(source, tuple(jobs))


def _job(source: str, i: int, item: Mapping[str, Any], plans: Sequence[str],
         field_names: Sequence[str]) -> Job:
    def bad(key: str, problem: str) -> JobsError:
        return JobsError(f"{source}: job[{i}] `{key}`: {problem}")

    unknown = sorted(set(item) - set(JOB_KEYS))
    if unknown:
        raise bad(shown(unknown[0], limit=40), f"unknown key; the keys are {', '.join(JOB_KEYS)}")
    for key in ("id", "plan", *MATCHERS):
        if key in item:
            why = check_value(item[key])
            if why:
                raise bad(key, why)
    if "id" not in item:
        raise bad("id", "every job needs an id (its name on the screen and in the record)")
    matchers = [k for k in MATCHERS if k in item]
    if len(matchers) != 1:
        raise bad("serial", "expected exactly one of serial, lot, model (which drives the job "
                  f"is for), got {', '.join(matchers) or 'none'}")
    kind: Kind = matchers[0]  # type: ignore[assignment]
    pattern = item[kind].strip()
    if kind == "model":
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as exc:
            raise bad("model", f"not a regular expression: {shown(str(exc), limit=120)}") \
                from None
    plan = item.get("plan")
    if plan is None:
        raise bad("plan", f"every job names its plan: one of {', '.join(plans)}")
    if plan not in plans:
        raise bad("plan", f"expected one of {', '.join(plans)} (the plans the config's "
                  f"[jobs] allows), got {_q(plan)}")
    params = item.get("params", {})
    if not isinstance(params, dict):
        raise bad("params", "expected a table: params = {key = value, ...}")
    for key, value in params.items():
        if key in NOT_JOB_PARAMS:
            raise bad(f"params.{shown(key, limit=40)}",
                      "not a job's: a drive's fields go in `fields`, a PSID and the lab's key "
                      "in the bench's own config")
        if not isinstance(value, str | int | float | bool):
            raise bad(f"params.{shown(key, limit=40)}",
                      f"expected a number, string or boolean, got {_q(value)}")
        if isinstance(value, str) and check_value(value) and value != "":
            raise bad(f"params.{shown(key, limit=40)}", check_value(value) or "")
    try:
        build_plan(plan).with_params(dict(params), source=f"job[{i}] params")
    except PlanError as exc:
        raise bad("params", shown(str(exc), limit=300)) from None
    fields = item.get("fields", {})
    if not isinstance(fields, dict):
        raise bad("fields", 'expected a table: fields = {asset_tag = "A-77", ...}')
    given: list[tuple[str, str]] = []
    for name, value in fields.items():
        if name not in field_names:
            raise bad(f"fields.{shown(name, limit=40)}",
                      f"unknown field; the fields are {', '.join(field_names)}")
        why = check_value(value)
        if why:
            raise bad(f"fields.{name}", why)
        given.append((name, value.strip()))
    return Job(item["id"].strip(), kind, pattern, plan, tuple(params.items()), tuple(given))


def fetch_jobs(*, url: str | None = None, store: StoreConfig | None = None,
               key: str | None = None, timeout_s: float = JOBS_TIMEOUT_S,
               opener: Callable[[StoreConfig], Any] | None = None) -> tuple[str, bytes]:
    """(where, bytes) of the job file: from ``url`` through the one fetch, or from ``key``
    in the lab ``store``; whole, within ``timeout_s``, at most MAX_JOBS_BYTES, or a
    JobsError saying why (naming no secret)."""
    if url is not None:
        named = shown_url(url)
        try:
            answer = get(parse_url(url), timeout_s=timeout_s, limit=MAX_JOBS_BYTES)
        except UrlError as exc:
            raise JobsError(f"job file: {exc}") from None
        except FetchError as exc:
            raise JobsError(f"job file {named}: {exc}") from None
        if not 200 <= answer.status < 300:
            raise JobsError(f"job file {named}: the server answered {answer.status} "
                            f"{shown(answer.reason, limit=80)}")
        return named, answer.body
    assert store is not None and key is not None
    return _from_store(store, key, timeout_s, opener)


def _from_store(cfg: StoreConfig, key: str, timeout_s: float,
                opener: Callable[[StoreConfig], Any] | None) -> tuple[str, bytes]:
    """``key`` (under the store's prefix) read in a thread of its own: a store that does not
    answer within ``timeout_s`` is left behind (boto3 keeps no deadline of its own)."""
    from ssdbench.lab.store import StoreError, open_store

    full = "/".join(p for p in (cfg.prefix.strip("/"), key) if p)
    named = shown(f"job file {full} in {cfg.describe()}", limit=400)
    result: list[bytes | Exception] = []

    def read() -> None:
        try:
            store = (opener or open_store)(cfg)
            stop_by = getattr(store, "stop_by", None)
            if stop_by is not None:
                stop_by(time.monotonic() + timeout_s)
            result.append(store.get(full))
        except Exception as exc:  # StoreError, or a bug in a store: either way not read
            result.append(exc)

    thread = threading.Thread(target=read, daemon=True, name="ssdbench-jobs")
    thread.start()
    thread.join(timeout_s)
    if not result:
        raise JobsError(f"{named}: no answer within {timeout_s:g} s")
    got = result[0]
    if isinstance(got, StoreError):
        raise JobsError(f"{named}: {got}")
    if isinstance(got, Exception):
        raise JobsError(f"{named}: {type(got).__name__}: {shown(str(got), limit=200)}")
    if len(got) > MAX_JOBS_BYTES:
        raise JobsError(f"{named}: larger than {MAX_JOBS_BYTES >> 10} KiB: not a job file")
    return named, got
