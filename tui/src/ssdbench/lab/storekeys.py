"""The store's keys by the operator's fields (``[fields] keys``, docs/lab.md "Keys by
field"): for each field named there and each run, a small object

    <prefix>/_keys/<field>=<value>/<bench>/<serial>/<run id>.json

naming the run's folder (``<prefix>/<bench>/<serial>/<run id>/``), so a lab opens
``_keys/lot=L42/`` in its bucket and finds every run of that lot, bench by bench. The run's
own keys do not change (the fleet build, the stick and a copy of the store read them as
before). The value is typed or scanned by an operator, or comes from the lab's job file:
untrusted, it is one path part as :func:`~ssdbench.untrusted.path_part` makes a serial one
(``distinct``: two values never share a folder); a run with no value (empty, missing, not
text) is under ``<field>=_none``, which no value is made into. Light on purpose: the
kiosk's uploader imports it, and none of the fleet page."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ssdbench.untrusted import path_part

KEYS_DIR = "_keys"
NONE = "_none"  # the value of a run without one
BUILTIN = ("asset_tag", "customer", "lot")  # run.json params; the lab's own: extra_fields


def segment(field: str, value: object) -> str:
    """``<field>=<value>`` as one path part: no ``/``, ``..``, control or invisible
    character, at most 64 characters after the ``=``; two values that differ (after the
    spaces around them, which intake strips too) never give the same part."""
    raw = value.strip() if isinstance(value, str) else ""
    if not raw:
        return f"{field}={NONE}"
    text = path_part(raw, distinct=True)
    if text == NONE:  # a lot really named "_none" is not a run without a lot
        text = NONE + "-h" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{field}={text}"


def run_fields(doc: object, names: Iterable[str]) -> dict[str, str | None]:
    """Each named field's value in a run.json: ``params.<name>`` for asset_tag, customer
    and lot, ``params.extra_fields.<name>`` for the lab's own; None when it is not text."""
    params = doc.get("params") if isinstance(doc, Mapping) else None
    params = params if isinstance(params, Mapping) else {}
    extra = params.get("extra_fields")
    extra = extra if isinstance(extra, Mapping) else {}
    out: dict[str, str | None] = {}
    for name in names:
        value = params.get(name) if name in BUILTIN else extra.get(name)
        out[name] = value if isinstance(value, str) else None
    return out


def pointers(run: tuple[str, str, str, str], doc: object, names: Iterable[str]
             ) -> dict[str, bytes]:
    """The objects of one run's fields, ``run`` = (prefix, bench, serial, run id), from
    its run.json ``doc``: key -> body (JSON: the field, its value as the run has it, the
    run's folder in the store)."""
    prefix, bench, serial, run_id = run
    folder = "/".join(p for p in run if p) + "/"
    out: dict[str, bytes] = {}
    for name, value in run_fields(doc, names).items():
        key = "/".join(p for p in (prefix, KEYS_DIR, segment(name, value), bench, serial,
                                   f"{run_id}.json") if p)
        body: dict[str, Any] = {"schema": 1, "field": name,
                                "value": value if value and value.strip() else None,
                                "run": folder}
        out[key] = (json.dumps(body, indent=1) + "\n").encode()
    return out
