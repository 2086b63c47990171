"""The fuzz tier (#28): every parser of tool output, fed the real captures mutated by a
seeded mutator (bytes flipped, lines cut, dropped, doubled and swapped, numbers made huge,
negative or not numbers, JSON values swapped for other types, the text truncated), raises
only ParseError (or returns). Anything else would crash discovery, an erase or a run on a
drive whose tool prints something unexpected. Seeded: a failure replays exactly (the seed
and the mutation are in the message). About a minute in all."""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssdbench.devices import counters, hdparm, lsblk, nvme, safety, sed, smart
from ssdbench.devices.model import ParseError
from ssdbench.erase import hdparm as erase_hdparm
from ssdbench.erase import hidden
from ssdbench.fio import status
from ssdbench.grade.counters import parse_smartctl_grade
from ssdbench.grade.rules import grade_drive
from ssdbench.grade.scsi import parse_scsi_health
from ssdbench.grade.selftest import parse_nvme_self_test_log, parse_smartctl_capabilities

DATA = Path(__file__).resolve().parents[1] / "data"
ROUNDS = 1000  # mutations per capture (2000 found nothing more, 46 s)

Parser = Callable[[str], Any]
# what a parser may raise: the parse errors (and the erase room's "no IDENTIFY" answer)
EXPECTED = (ParseError, erase_hdparm.IdentifyUnavailable, status.FioOutputError)


def _files(*globs: str) -> list[Path]:
    found = sorted({p for g in globs for p in DATA.glob(g) if p.is_file()})
    assert found, globs
    return found


def _fio_stream(text: str) -> list[status.FioReport]:
    """fio's status stream as the engine reads it: split into objects, each parsed."""
    split = status.JsonStreamSplitter()
    objects = split.feed(text) + split.finish()
    return [status.parse_report(obj) for obj in objects]

def _json_body(parse: Parser) -> Parser:
    """``parse`` of a capture's tool output alone: the ``# source:`` header lines cut, so
    the mutations reach the JSON's values, not only a header that fails to load."""
    def body(text: str) -> Any:
        _, sep, rest = text.partition("# --- end of header; verbatim content follows ---")
        return parse(rest.partition("\n")[2] if sep else text)
    return body


PARSERS: dict[str, tuple[Parser, list[Path]]] = {
    "hdparm -I (devices)": (hdparm.parse_hdparm_identify, _files(
        "fixtures/hdparm/hdparm-I_*", "erase/hdparm/*hdparm-I_*")),
    "hdparm -I (erase)": (erase_hdparm.parse_identify, _files(
        "fixtures/hdparm/hdparm-I_*", "erase/hdparm/*hdparm-I_*")),
    "hdparm sanitize status": (erase_hdparm.parse_sanitize_status, _files(
        "erase/hdparm/*sanitize-status*")),
    "hdparm -N": (hidden.parse_hdparm_n, _files("erase/hidden/hdparm-N_*")),
    "hdparm --dco-identify": (hidden.parse_dco_identify, _files(
        "erase/hidden/hdparm-dco-identify_*")),
    "smartctl -j": (smart.parse_smartctl_json, _files("fixtures/smart/smartctl-*")),
    "smartctl counters": (counters.parse_smartctl_counters, _files(
        "fixtures/smart/smartctl-*")),
    "nvme smart-log": (counters.parse_nvme_smart_log, _files(
        "fixtures/smart/nvme-smart-log-json_*", "fixtures/nvme/nvme-smart-log-json_*")),
    "nvme id-ctrl -o json": (nvme.parse_id_ctrl_json, _files("erase/qemu-nvme-*/id-ctrl.json")),
    "nvme id-ctrl": (nvme.parse_id_ctrl_text, _files("fixtures/nvme/*nvme-id-ctrl*")),
    "nvme id-ns -o json": (lambda t: nvme.parse_id_ns_json(t, nsid=1, name="nvme0n1"), _files(
        "erase/qemu-nvme-*/id-ns*.json", "erase/nvme/DERIVED_id-ns-json_*")),
    "nvme list -o json": (nvme.parse_nvme_list_json, _files("fixtures/nvme/*nvme-list-json_*")),
    "nvme sanitize-log": (nvme.parse_sanitize_log_text, _files(
        "erase/nvme/nvme-sanitize-log*")),
    "nvme sanitize-log -o json": (nvme.parse_sanitize_log_json, _files(
        "erase/nvme/DERIVED_sanitize-log-json_*")),
    "lsblk --json": (lsblk.parse_lsblk_json, _files("fixtures/lsblk/lsblk-json*")),
    "sedutil-cli --query": (sed.parse_sedutil_query, _files("sed/sedutil-query_*")),
    "sedutil-cli --scan": (sed.parse_sedutil_scan, _files("sed/sedutil-scan_*")),
    "/proc/self/mountinfo": (safety.parse_mountinfo, _files(
        "bundles/*/fs/proc/self/mountinfo")),
    "fio --output-format=json stream": (_fio_stream, _files(
        "fio/*/stdout.txt", "fio/pts-*/*.json")),
    "smartctl grade": (parse_smartctl_grade, _files(
        "fixtures/smart/smartctl-*", "bundles/*/cmd/smartctl_-j_-x_*.out")),
    # #42 item 6: the captures' JSON itself, through the parsers and, for the grade, the
    # rules too (10^400 power-on hours once raised OverflowError in the rules)
    "smartctl -j (JSON)": (_json_body(smart.parse_smartctl_json), _files(
        "fixtures/smart/smartctl-*.json")),
    "smartctl counters (JSON)": (_json_body(counters.parse_smartctl_counters), _files(
        "fixtures/smart/smartctl-*.json")),
    "smartctl grade, graded (JSON)": (_json_body(lambda t: grade_drive(
        parse_smartctl_grade(t))), _files("fixtures/smart/smartctl-*.json")),
    # #44: the SAS/SCSI captures' log pages (grade/scsi.py), the one without a smartctl
    # member included
    "smartctl SCSI health (JSON)": (_json_body(lambda t: parse_scsi_health(
        nvme.load_json_object(t, "smartctl"))), _files(
        "fixtures/smart/smartctl-*scsi*.json", "fixtures/smart/smartctl-*sas-*.json")),
    "nvme self-test-log -o json": (parse_nvme_self_test_log, _files(
        "fixtures/selftest/nvme-self-test-log-json_*")),
    "smartctl -c": (parse_smartctl_capabilities, _files(
        "fixtures/smart/smartctl-*", "bundles/*/cmd/smartctl_-j_-x_dev_sda.out")),
}


_NUMBER = re.compile(rb"\d+")


def _json_swap(data: bytes, rng: random.Random) -> bytes:
    """One JSON value replaced by a value of another type (or a deep nest)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    paths: list[list[Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, [*path, k])
        elif isinstance(node, list):
            for i, v in enumerate(node[:20]):
                walk(v, [*path, i])

    walk(doc, [])
    path = rng.choice(paths)
    value: object = rng.choice([None, True, -1, 2**70, 1.5e308, "x", "", [], {}, [[[]]], "NaN",
                        {"a": [1, {"b": None}]}, -0.0, "9" * 50])
    if not path:
        return json.dumps(value).encode()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(doc).encode()


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    lines = data.split(b"\n")
    kind = rng.choice(["flip", "truncate", "drop-line", "dup-line", "swap-lines",
                       "number", "json", "json", "empty-lines", "insert-garbage"])
    if kind == "flip" and data:
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return kind, bytes(buf)
    if kind == "truncate":
        return kind, data[:rng.randrange(len(data) + 1)]
    if kind == "drop-line" and lines:
        del lines[rng.randrange(len(lines))]
    elif kind == "dup-line" and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == "swap-lines" and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "number":
        spots = list(_NUMBER.finditer(data))
        if spots:
            m = rng.choice(spots)
            new = rng.choice([b"0", b"-1", b"99999999999999999999999", b"x", b"", b"1e999",
                              b"-0", b"0x7f"])
            return kind, data[:m.start()] + new + data[m.end():]
    elif kind == "json":
        return kind, _json_swap(data, rng)
    elif kind == "empty-lines" and lines:
        i = rng.randrange(len(lines))
        lines[i] = re.sub(rb":.*", b":", lines[i])
    elif kind == "insert-garbage":
        lines.insert(rng.randrange(len(lines) + 1),
                     bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))))
    return kind, b"\n".join(lines)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_parser_raises_only_parse_error_on_mutated_captures(name: str) -> None:
    parse, files = PARSERS[name]
    problems: dict[str, str] = {}
    for path in files:
        original = path.read_bytes()
        with contextlib.suppress(*EXPECTED):  # a capture of an error answers with one
            parse(original.decode("utf-8", "replace"))
        rng = random.Random(f"{name}/{path.name}")
        for n in range(ROUNDS):
            kind, data = mutate(original, rng)
            try:
                parse(data.decode("utf-8", "replace"))
            except EXPECTED:
                pass
            except Exception as exc:  # what the fuzz tier exists to find
                key = f"{type(exc).__name__}: {str(exc)[:80]}"
                problems.setdefault(key, f"{path.name} round {n} ({kind})")
    assert problems == {}, "\n".join(f"{k}  <- {v}" for k, v in problems.items())


def test_the_smartctl_raw_value_decoder_raises_only_parse_error() -> None:
    """#42 item 6: every raw value smartctl can print decodes back to its format; random
    values with random strings (digits, fields, hex, huge, negative, not numbers) give a
    decoding or a ParseError, nothing else."""
    rng = random.Random("smartctl raw values")
    strings = ["", "0", "-1", "9" * 5000, "0x", "1 2", "1 2 3 4", "1/", "/1", "h+m",
               "NaN", "1e999", "12 (Average ", "36 (Min/Max 1/2 #", "\u0663", "0x" + "f" * 40]
    problems: dict[str, str] = {}
    for n in range(20000):
        value: Any = rng.choice([rng.getrandbits(rng.choice([8, 16, 24, 32, 48, 56, 64])),
                                 rng.choice([-1, 2**64, 2**70, 10**400, 1.5, float("inf"),
                                             "5", None, True])])
        fmt = rng.choice(sorted(smart._FORMATS))
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
            printed = smart.render_raw(fmt, value)
            got = smart.decode_raw(5, "x", value, printed)  # smartctl's own: always decoded
            if smart.render_raw(got.format, value) != printed:
                problems.setdefault("round trip", f"{fmt} {value}")
        string = rng.choice([*strings, smart.render_raw(fmt, rng.getrandbits(48))])
        try:
            smart.decode_raw(rng.choice([5, 188, 194]), "x", value, string)
        except ParseError:
            pass
        except Exception as exc:  # what the fuzz tier exists to find
            problems.setdefault(f"{type(exc).__name__}: {str(exc)[:80]}",
                                f"round {n}: {value!r:.40} {string!r:.40}")
    assert problems == {}, problems
