"""The kiosk config (`ssdbench.toml`): typed, strictly validated, one search order.

Search order (the first that exists wins):

1. the path given with ``--config`` (``ssdbench kiosk --config FILE``);
2. ``ssdbench.config=PATH`` on the kernel command line (absolute, or relative to the
   results partition's mount point), or ``ssdbench.config=http(s)://...`` (the scheme in
   any case): fetched from a lab's server (:func:`fetch_url`: retried until the network is
   up, the console saying what it waits for; TLS verified against the system's CA bundle;
   docs/lab.md);
3. ``ssdbench.toml`` at the root of the results partition (``SSDRESULTS``).

A config that fails validation raises :class:`ConfigError` naming the key and the expected
form; nothing destructive runs then.  Example (shipped as ``ssdbench.toml.example``)::

    plan = "quick"                 # review | quick | trim | diagnose | speed | ...
    select = "all-eligible"        # or ["serial:S4EVNX0R123456", "model:Samsung SSD 870*"]
    destroy = "all-eligible"       # or ["S4EVNX0R123456"]: consent, by serial
    on_finish = "poweroff"         # poweroff | reboot | stay
    svg = true                     # charts also as SVG (false: PNG only, a faster report)

    [params]                       # plan parameters (docs/results-format.md)
    torture_seconds = 600

    [station]                      # erase plan: keep running, erase drives plugged in later
    idle_minutes = 10              # end after this long with nothing running or plugged in
    drives = 20                    # (optional) end after this many drives were finished

    [store]                        # results also to a lab's store (docs/lab.md)
    kind = "s3"
    endpoint = "https://s3.lab.example"
    bucket = "ssdbench"
    credentials_file = "store.ini"

    [jobs]                         # the lab's job file: per drive plan, params and fields
    url = "https://lab.example/jobs.toml"   # or store = "jobs.toml" (a key in [store])
    no_job = "default"             # or "wait": a drive without a job is not run

    [fields]                       # the operator's fields, typed or scanned per drive
    ask = ["asset_tag", "lot"]
    names = ["pallet"]             # the lab's own fields beside asset_tag, customer, lot
"""

from __future__ import annotations

import fnmatch
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ssdbench.lab.config import (
    PostConfig,
    StoreConfig,
    StoreConfigError,
    parse_post,
    parse_store,
)
from ssdbench.lab.fetch import FetchError, UrlError, get, looks_like_url, parse_url, shown
from ssdbench.lab.jobs import BUILTIN_FIELDS, check_field_name
from ssdbench.plan.plans import PRESETS
from ssdbench.stages.speedclass import SpeedClass, SpeedClassError, parse_classes
from ssdbench.untrusted import shown as shown_text

PLANS = PRESETS  # the shipped presets (plan/plans.py); a kiosk names one
# no `destroy` needed: nothing is written (speed: unless [params] speed_writes = true)
READ_ONLY_PLANS = ("diagnose", "grade", "speed")
ON_FINISH = ("poweroff", "reboot", "stay")
ALL_ELIGIBLE = "all-eligible"
CONFIG_NAME = "ssdbench.toml"

Scalar = str | int | float | bool


class ConfigError(ValueError):
    """A bad kiosk config: names the file, the key and the expected form."""

    def __init__(self, source: str, key: str, problem: str) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        super().__init__(f"{source}: `{key}`: {problem}")


@dataclass(frozen=True)
class Selector:
    """One entry of `select`: a serial (exact) or a model glob (case-insensitive)."""

    kind: Literal["serial", "model"]
    pattern: str

    def matches(self, serial: str, model: str) -> bool:
        if self.kind == "serial":
            return serial == self.pattern
        return fnmatch.fnmatch(model.casefold(), self.pattern.casefold())

    def __str__(self) -> str:
        return f"{self.kind}:{self.pattern}"


@dataclass(frozen=True)
class StationConfig:
    """`[station]`: the session stays up after the drives present at boot are done, and
    erases drives plugged in later (docs/kiosk.md "Station mode")."""

    idle_minutes: float = 10.0  # ends after this long with no drive running or arriving
    drives: int | None = None  # ends once this many drives were finished (PASS or FAIL)


@dataclass(frozen=True)
class KioskConfig:
    source: str
    plan: str = "quick"
    select_all: bool = True
    selectors: tuple[Selector, ...] = ()
    destroy_all: bool = False
    destroy_serials: tuple[str, ...] = ()
    on_finish: str = "stay"
    # [params], and the [speed.class."MODEL REGEX"] table as params["speed_classes"]
    params: Mapping[str, object] = field(default_factory=dict)
    svg: bool = True
    store: StoreConfig | None = None  # [store]: results also to a lab's store (docs/lab.md)
    station: StationConfig | None = None  # [station]: erase drives plugged in later
    post: PostConfig | None = None  # [post]: each finished record to an asset system
    jobs: JobsConfig | None = None  # [jobs]: the lab's job file (per drive plan and params)
    fields: FieldsConfig | None = None  # [fields]: asked at intake, the lab's own fields

    @property
    def destructive(self) -> bool:
        return self.plan not in READ_ONLY_PLANS or (
            self.plan == "speed" and _true(self.params.get("speed_writes", False)))

    def selects(self, serial: str, model: str) -> bool:
        """Whether a drive (that is not protected) is chosen by `select`."""
        if self.select_all:
            return True
        return any(s.matches(serial, model) for s in self.selectors)

    def consents(self, serial: str) -> bool:
        """Whether `destroy` names this drive (consent to write to it)."""
        if not self.destructive:
            return True
        return self.destroy_names(serial)

    def destroy_names(self, serial: str) -> bool:
        """Whether `destroy` names this drive, whatever the plan (a job's plan that writes
        needs it as much as the config's own: a job file never widens consent)."""
        if self.destroy_all:
            return True
        return bool(serial) and serial in self.destroy_serials


@dataclass(frozen=True)
class JobsConfig:
    """`[jobs]`: where the lab's job file is (lab/jobs.py; docs/lab.md "Jobs")."""

    url: str | None = None  # an http(s) URL, fetched like the config (lab/fetch.py)
    store: str | None = None  # or a key in the lab store (`[store]`, its credentials)
    no_job: str = "default"  # a drive without a job: "default" (the config's plan) or "wait"
    plans: tuple[str, ...] = PLANS  # the plans a job may name

    def describe(self) -> str:
        return shown(self.url) if self.url is not None else f"the store's {self.store}"


@dataclass(frozen=True)
class FieldsConfig:
    """`[fields]`: the operator's fields (docs/kiosk.md "The operator's fields")."""

    ask: tuple[str, ...] = ()  # asked per drive at intake, in this order (a barcode scanner)
    names: tuple[str, ...] = ()  # the lab's own fields, beside asset_tag, customer and lot
    keys: tuple[str, ...] = ()  # fields that go into the store's keys

    @property
    def known(self) -> tuple[str, ...]:
        return (*BUILTIN_FIELDS, *self.names)


# every top-level key the validator accepts (docs/kiosk.md "Config keys" lists each)
KEYS = ("plan", "select", "destroy", "on_finish", "svg", "params", "store", "station", "speed",
        "jobs", "fields", "post")
STATION_KEYS = ("idle_minutes", "drives")
JOBS_KEYS = ("url", "store", "no_job", "plans")
NO_JOB = ("default", "wait")
FIELDS_KEYS = ("ask", "names", "keys")


def _string_list(source: str, key: str, value: object, form: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ConfigError(source, key, f"expected {form}, got {value!r}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(source, f"{key}[{i}]", f"expected a non-empty string, got {item!r}")
        out.append(item.strip())
    return out


def parse_config(data: Mapping[str, Any], source: str = "ssdbench.toml",
                 base: Path | None = None) -> KioskConfig:
    """Validate a parsed TOML document (see the module docstring for the form). Relative
    file names in it are relative to ``base`` (default: the folder of ``source``)."""
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(
            source, unknown[0], f"unknown key; the keys are {', '.join(sorted(KEYS))}"
        )

    plan = data.get("plan", "quick")
    if plan not in PLANS:
        raise ConfigError(source, "plan", f"expected one of {', '.join(PLANS)}, got {plan!r}")

    select = data.get("select", ALL_ELIGIBLE)
    selectors: list[Selector] = []
    select_all = select == ALL_ELIGIBLE
    if not select_all:
        form = f'"{ALL_ELIGIBLE}" or a list like ["serial:S4EV...", "model:Samsung*"]'
        if isinstance(select, str):
            raise ConfigError(source, "select", f"expected {form}, got {select!r}")
        for i, item in enumerate(_string_list(source, "select", select, form)):
            kind, sep, pattern = item.partition(":")
            if not sep or kind not in ("serial", "model") or not pattern.strip():
                raise ConfigError(
                    source, f"select[{i}]",
                    f'expected "serial:SERIAL" or "model:GLOB", got {item!r}',
                )
            selectors.append(Selector(kind, pattern.strip()))  # type: ignore[arg-type]

    destroy = data.get("destroy")
    destroy_all = destroy == ALL_ELIGIBLE
    destroy_serials: list[str] = []
    if destroy is not None and not destroy_all:
        form = f'"{ALL_ELIGIBLE}" or a list of serials like ["S4EVNX0R123456"]'
        if isinstance(destroy, str):
            raise ConfigError(source, "destroy", f"expected {form}, got {destroy!r}")
        destroy_serials = _string_list(source, "destroy", destroy, form)
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise ConfigError(source, "params", "expected a table: [params] with key = value lines")
    for key, value in params.items():
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(
                source, f"params.{key}", f"expected a number, string or boolean, got {value!r}"
            )
    params = dict(params)
    if "speed" in data:  # the lab's speed class table (docs/kiosk.md "Speed classes")
        params["speed_classes"] = _speed_classes(source, data["speed"])
    writes = plan == "speed" and _true(params.get("speed_writes", False))
    if (plan not in READ_ONLY_PLANS or writes) and destroy is None:
        raise ConfigError(
            source, "destroy",
            f'plan "{plan}" erases and writes drives: say which with '
            f'destroy = ["SERIAL", ...] or destroy = "{ALL_ELIGIBLE}"',
        )

    on_finish = data.get("on_finish", "stay")
    if on_finish not in ON_FINISH:
        raise ConfigError(
            source, "on_finish", f"expected one of {', '.join(ON_FINISH)}, got {on_finish!r}"
        )

    svg = data.get("svg", True)
    if not isinstance(svg, bool):
        raise ConfigError(source, "svg", f"expected true or false, got {svg!r}")

    store = None
    if "store" in data:
        try:
            store = parse_store(data["store"], base or Path(source).parent)
        except StoreConfigError as exc:
            raise ConfigError(source, exc.key, exc.problem) from None

    station = _station(source, data["station"], plan) if "station" in data else None
    jobs = _jobs(source, data["jobs"], store) if "jobs" in data else None
    fields = _fields(source, data["fields"]) if "fields" in data else None
    if fields is not None and fields.keys:  # the store's keys by field (docs/lab.md)
        if store is None:
            raise ConfigError(source, "fields.keys",
                              "needs a [store]: the keys are the lab store's (docs/lab.md "
                              '"Keys by field")')
        store = replace(store, keys=fields.keys)

    post = None
    if "post" in data:  # each finished record POSTed to an asset system (docs/lab.md)
        try:
            post = parse_post(data["post"], base or Path(source).parent)
        except StoreConfigError as exc:
            raise ConfigError(source, exc.key, exc.problem) from None

    return KioskConfig(
        source=source,
        plan=plan,
        select_all=select_all,
        selectors=tuple(selectors),
        destroy_all=destroy_all,
        destroy_serials=tuple(destroy_serials),
        on_finish=on_finish,
        params=params,
        svg=svg,
        store=store,
        station=station,
        post=post,
        jobs=jobs,
        fields=fields,
    )


def _true(value: object) -> bool:
    """speed_writes as RunParams reads it (true, yes, 1, on)."""
    return value is True or str(value).strip().lower() in ("true", "yes", "1", "on")


def _speed_classes(source: str, table: object) -> tuple[SpeedClass, ...]:
    if not isinstance(table, dict) or set(table) - {"class"}:
        raise ConfigError(source, "speed", 'expected [speed.class."MODEL REGEX"] tables only')
    try:
        return parse_classes(table.get("class", {}), source)
    except SpeedClassError as exc:
        raise ConfigError(source, "speed.class", str(exc).split(": ", 1)[-1]) from None


def _station(source: str, table: object, plan: str) -> StationConfig:
    if not isinstance(table, dict):
        raise ConfigError(source, "station", "expected a table: [station] with idle_minutes = N")
    unknown = sorted(set(table) - set(STATION_KEYS))
    if unknown:
        raise ConfigError(source, f"station.{unknown[0]}",
                          f"unknown key; the keys are {', '.join(STATION_KEYS)}")
    if plan != "erase":
        raise ConfigError(source, "station",
                          f'station mode erases drive after drive: it needs plan = "erase", '
                          f"got {plan!r}")
    idle = table.get("idle_minutes", StationConfig.idle_minutes)
    if isinstance(idle, bool) or not isinstance(idle, int | float) or not idle > 0:
        raise ConfigError(source, "station.idle_minutes",
                          f"expected a number of minutes above 0 (e.g. 10 or 0.5), got {idle!r}")
    drives = table.get("drives")
    if drives is not None and (isinstance(drives, bool) or not isinstance(drives, int)
                               or drives < 1):
        raise ConfigError(source, "station.drives",
                          f"expected a whole number of drives, 1 or more, got {drives!r}")
    return StationConfig(idle_minutes=float(idle), drives=drives)


def _jobs(source: str, table: object, store: StoreConfig | None) -> JobsConfig:
    if not isinstance(table, dict):
        raise ConfigError(source, "jobs", 'expected a table: [jobs] with url = "https://..." '
                          'or store = "jobs.toml"')
    unknown = sorted(set(table) - set(JOBS_KEYS))
    if unknown:
        raise ConfigError(source, f"jobs.{unknown[0]}",
                          f"unknown key; the keys are {', '.join(JOBS_KEYS)}")
    url, key = table.get("url"), table.get("store")
    if (url is None) == (key is None):
        raise ConfigError(source, "jobs", 'expected one of url = "https://lab/jobs.toml" or '
                          'store = "jobs.toml" (a key in the lab store)')
    if url is not None:
        if not isinstance(url, str) or not is_url(url):
            raise ConfigError(source, "jobs.url", f"expected an http(s) URL, got {url!r}")
        try:
            parse_url(url)
        except UrlError as exc:
            raise ConfigError(source, "jobs.url", str(exc)) from None
    else:
        if store is None:
            raise ConfigError(source, "jobs.store", "a job file in the store needs [store]")
        if (not isinstance(key, str) or not key.strip() or key.startswith("/")
                or any(part in ("", ".", "..") for part in key.split("/"))
                or any(ord(c) < 0x20 or c == "\x7f" for c in key)):
            raise ConfigError(source, "jobs.store", "expected a key in the store like "
                              f'"jobs.toml" or "jobs/bench-3.toml", got {key!r}')
    no_job = table.get("no_job", "default")
    if no_job not in NO_JOB:
        raise ConfigError(source, "jobs.no_job",
                          f'expected "default" (the config\'s plan) or "wait", got {no_job!r}')
    plans: tuple[str, ...] = PLANS
    if "plans" in table:
        listed = _string_list(source, "jobs.plans", table["plans"], 'a list like ["erase"]')
        for i, name in enumerate(listed):
            if name not in PLANS:
                raise ConfigError(source, f"jobs.plans[{i}]",
                                  f"expected one of {', '.join(PLANS)}, got {name!r}")
        plans = tuple(listed)
    return JobsConfig(url=url, store=key, no_job=no_job, plans=plans)


def _fields(source: str, table: object) -> FieldsConfig:
    if not isinstance(table, dict):
        raise ConfigError(source, "fields", 'expected a table: [fields] with ask = ["asset_tag"]')
    unknown = sorted(set(table) - set(FIELDS_KEYS))
    if unknown:
        raise ConfigError(source, f"fields.{unknown[0]}",
                          f"unknown key; the keys are {', '.join(FIELDS_KEYS)}")
    lists: dict[str, list[str]] = {}
    for key in FIELDS_KEYS:
        value = table.get(key, [])
        if not isinstance(value, list):
            raise ConfigError(source, f"fields.{key}",
                              f'expected a list of field names like ["asset_tag"], got {value!r}')
        for i, name in enumerate(value):
            why = check_field_name(name)
            if why:
                raise ConfigError(source, f"fields.{key}[{i}]", why)
        if len(set(value)) != len(value):
            raise ConfigError(source, f"fields.{key}", "a field is named twice")
        lists[key] = value
    for i, name in enumerate(lists["names"]):
        if name in BUILTIN_FIELDS:
            raise ConfigError(source, f"fields.names[{i}]",
                              f"{name} is a field already (asset_tag, customer, lot): name the "
                              "lab's own fields only")
    known = (*BUILTIN_FIELDS, *lists["names"])
    for key in ("ask", "keys"):
        for i, name in enumerate(lists[key]):
            if name not in known:
                raise ConfigError(source, f"fields.{key}[{i}]",
                                  f"unknown field {name!r}; the fields are {', '.join(known)} "
                                  "(the lab's own go in `names`)")
    return FieldsConfig(ask=tuple(lists["ask"]), names=tuple(lists["names"]),
                        keys=tuple(lists["keys"]))


def is_url(text: str) -> bool:
    """Whether ``text`` is meant as a URL (lab/fetch.py :func:`looks_like_url`: the scheme in
    any case, white space around it ignored); it is then never a file name."""
    return looks_like_url(text)


def shown_url(url: str) -> str:
    """``url`` as messages name it: no user, password, query or fragment (tokens). Never
    raises: a URL that does not parse is named without everything before its last ``@``."""
    return shown(url)


def default_route() -> str:
    """What the network is doing, for the waiting line: from /proc/net/route."""
    try:
        lines = Path("/proc/net/route").read_text().splitlines()[1:]
    except OSError:
        return "no routing table"
    if any(line.split()[1:2] == ["00000000"] for line in lines):
        return "network up (default route)"
    return "no DHCP lease yet (no default route)"


MAX_CONFIG_BYTES = 1024 * 1024
FETCH_TIMEOUT_S = 15.0  # for the whole transfer of one try: connect, TLS, headers, body
BACKOFF_MAX_S = 30.0
PLAIN_HTTP = "plain HTTP: anyone on this network could read it"


def fetch_url(url: str, say: Callable[[str], None], *,
              wait: Callable[[float], None] = time.sleep,
              net_state: Callable[[], str] = default_route,
              what: str = "config", limit: int = MAX_CONFIG_BYTES,
              config: str | None = None, key: str = "(url)") -> bytes:
    """The config's bytes from ``url`` (or, with ``what``, another file a bench fetches at
    its start: the lab's key; ``config`` and ``key`` then name the config and its key in
    errors), through the one fetch (lab/fetch.py: the scheme in any case, a deadline of
    FETCH_TIMEOUT_S for each try's whole transfer, the user and password to their own
    origin only, never from https to http). The network not being there yet (no lease, no
    route, refused, DNS, the deadline, an HTTP 5xx, 408 or 429) is waited for, retrying
    1 s doubling to 30 s, each try said with what it waits for; an answer that will not
    change (another 4xx, a TLS certificate that does not verify, a redirect to plain HTTP,
    more than ``limit`` bytes) is a ConfigError. A body shorter than its Content-Length,
    or a chunked one cut mid-chunk, is never used: it is fetched again."""
    named = shown_url(url)
    source = config or named
    at = "" if config is None else named + ": "
    try:
        parsed = parse_url(url)
    except UrlError as exc:
        raise ConfigError(source, key, str(exc)) from None
    plain = f" ({PLAIN_HTTP})" if parsed.plain else ""
    delay = 1.0
    attempt = 0
    while True:
        attempt += 1
        try:
            answer = get(parsed, timeout_s=FETCH_TIMEOUT_S, limit=limit)
        except FetchError as exc:
            if exc.tls:
                raise ConfigError(source, "(tls)" if config is None else key,
                                  f"{at}{exc}") from None
            if exc.too_large:
                raise ConfigError(source, key, f"{'' if config is None else named + ' '}"
                                  f"{exc}: not a {what}") from None
            if exc.final:
                raise ConfigError(source, key, f"{at}{exc}") from None
            why = str(exc)  # a body cut mid-transfer is never used: the keys after the cut
            # would take their defaults (an erase plan's `select` every eligible drive)
        else:
            code = answer.status
            if 200 <= code < 300:
                say(f"{what} fetched from {named} ({len(answer.body)} bytes){plain}")
                return answer.body
            why = f"the server answered {code} {shown_text(answer.reason, 80)}"
            if code < 500 and code not in (408, 429):
                raise ConfigError(source, key, f"{at}{why}")
        say(f"{what} {named}: waiting for the network ({net_state()}): {why}; "
            f"try {attempt + 1} in {delay:g} s")
        wait(delay)
        delay = min(delay * 2, BACKOFF_MAX_S)


def load_config(path: Path | str, *, say: Callable[[str], None] | None = None,
                base: Path | None = None,
                wait: Callable[[float], None] = time.sleep,
                net_state: Callable[[], str] = default_route) -> KioskConfig:
    """Read and validate a config file, or fetch it from an http(s) URL (:func:`fetch_url`;
    ``say`` gets its waiting lines; ``base`` is the folder a URL config's relative file
    names are in: the results stick, else /; a file's are in its own folder); every
    problem is a ConfigError naming the key."""
    if isinstance(path, str) and is_url(path):
        source = shown_url(path)
        raw = fetch_url(path, say or (lambda _line: None), wait=wait, net_state=net_state)
        base = base or Path("/")
    else:
        source = str(path)
        base = None
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(source, "(file)",
                              f"cannot be read: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(source, "(file)", "is not UTF-8 text") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, "(syntax)", f"not valid TOML: {exc}") from exc
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(source, "(syntax)", "nested too deeply to be a config") from None
    return parse_config(data, source, base)


def kernel_cmdline_value(cmdline: str, key: str) -> str | None:
    """The value of `key=` on a kernel command line (last one wins), or None."""
    value = None
    for word in cmdline.split():
        name, sep, rest = word.partition("=")
        if sep and name == key:
            value = rest
    return value


def find_config(
    explicit: Path | None, cmdline: str, results_root: Path | None
) -> Path | str | None:
    """The config to use, per the search order in the module docstring: a path, or an
    http(s) URL (a ``str``) for :func:`load_config` to fetch."""
    if explicit is not None:
        return explicit
    from_cmdline = kernel_cmdline_value(cmdline, "ssdbench.config")
    if from_cmdline and is_url(from_cmdline):
        return from_cmdline
    if from_cmdline:
        path = Path(from_cmdline)
        if not path.is_absolute() and results_root is not None:
            path = results_root / path
        return path
    if results_root is not None and (results_root / CONFIG_NAME).is_file():
        return results_root / CONFIG_NAME
    return None


def choose_drives(
    config: KioskConfig, drives: Sequence[tuple[str, str, bool]]
) -> tuple[list[int], list[tuple[int, str]]]:
    """Split drives (serial, model, protected) into chosen indices and skipped (index, why)."""
    chosen: list[int] = []
    skipped: list[tuple[int, str]] = []
    for i, (serial, model, protected) in enumerate(drives):
        if protected:
            skipped.append((i, "protected"))
        elif not config.selects(serial, model):
            skipped.append((i, "not selected by `select`"))
        elif config.jobs is None and not config.consents(serial):
            # with [jobs], consent is checked on each drive's own plan (kiosk/intake.py)
            skipped.append((i, "not named in `destroy` (no consent to erase it)"))
        else:
            chosen.append(i)
    return chosen, skipped


def unmatched_selectors(
    config: KioskConfig, drives: Sequence[tuple[str, str, bool]]
) -> list[Selector]:
    """The `select` entries that match none of the drives (serial, model, protected) found:
    a typo or a drive not plugged in, which an unattended bench must not call a success."""
    return [s for s in config.selectors
            if not any(s.matches(serial, model) for serial, model, _p in drives)]
