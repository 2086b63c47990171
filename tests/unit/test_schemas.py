"""The results format's published schemas (tui/src/ssdbench/schemas, issue #46): valid JSON
Schema 2020-12, versioned with their changelog, in step with the writers' column lists and
with the docs (docs/results-format.md, docs/lab.md), and strict enough that a wrong type or
a missing required field is refused with a message naming the field. The real files are
checked where tests make them (tests/schema_check.py: check_tree in the loop-device and
QEMU tests, check_csv in the report and fleet tests)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from ssdbench.lab import fleet
from ssdbench.record.build import build_record
from ssdbench.record.render import CSV_COLUMNS as SESSION_COLUMNS
from ssdbench.record.sign import unsigned
from ssdbench.report.summary import SUMMARY_COLUMNS
from ssdbench.results.layout import RunRecord
from tests.conftest import REPO
from tests.schema_check import (
    SCHEMAS,
    SchemaMismatch,
    check_csv_text,
    check_data,
    check_json,
    check_tree,
    columns,
    schema,
    schema_for,
)

DOC = (REPO / "docs" / "results-format.md").read_text(encoding="utf-8")
LAB_DOC = (REPO / "docs" / "lab.md").read_text(encoding="utf-8")
SCHEMA_FILES = sorted(p.name for p in SCHEMAS.iterdir() if p.name.endswith(".schema.json"))
INDEX = json.loads((SCHEMAS / "index.json").read_text(encoding="utf-8"))
CHANGELOG = (SCHEMAS / "CHANGELOG.md").read_text(encoding="utf-8")


def changelog_version() -> str:
    found = re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})$", CHANGELOG, re.M)
    assert found, "CHANGELOG.md has no '## X.Y.Z — YYYY-MM-DD' heading"
    assert found[-1] == ("1.0.0", "2026-11-28"), found  # the first published contract
    return str(found[0][0])  # the newest is on top


# ---- the schemas themselves --------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_each_schema_is_a_valid_2020_12_schema_with_the_changelogs_version(name: str) -> None:
    s = schema(name)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(s)
    described = name.removesuffix(".schema.json")
    assert s["$id"] == f"urn:ssdbench:schema:{described}:{changelog_version()}", s["$id"]
    assert s.get("title") and s.get("description"), name
    if described.endswith(".csv"):
        cols, optional = columns(name)
        assert cols == list(s["properties"]) and s["additionalProperties"] is False
        assert set(s["required"]) == set(cols) - set(optional)
    else:  # JSON files are extensible: new optional members are minor versions
        assert s.get("additionalProperties") is True, name


def test_index_names_every_schema_and_only_schemas_that_exist() -> None:
    assert INDEX["version"] == changelog_version()
    named = {e["schema"] for e in INDEX["files"] if e["schema"]}
    assert named == set(SCHEMA_FILES)
    for entry in INDEX["files"]:
        re.compile(entry["pattern"])
        assert entry["schema"] or entry.get("why"), entry  # no contract: say whose it is
    for rel, want in {
        "ssdbench/20261121T145300Z_M_S/trim/run.json": "run.json.schema.json",
        "ssdbench/20261121T145300Z_M_S/drive.json": "drive.json.schema.json",
        "ssdbench/20261121T145300Z_M_S/erase/erase-record.json": "erase-record.json.schema.json",
        "ssdbench/20261121T145300Z_M_S/trim/fio/torture_blockstat.json":
            "blockstat.json.schema.json",
        "ssdbench/20261121T145300Z_M_S/trim/fio/torture.json": None,
        "ssdbench/20261121T145300Z_M_S/trim/probe-after_trim.csv": "probe.csv.schema.json",
        "ssdbench/20261121T145300Z_M_S/trim/probes.csv": "probes.csv.schema.json",
        "ssdbench/erase-session-20261121T145300Z.csv": "erase-session.csv.schema.json",
        "lab1/bench-07/status.json": "status.json.schema.json",
        "fleet.csv": "fleet.csv.schema.json",
    }.items():
        assert schema_for(rel) == (True, want), rel
    assert schema_for("ssdbench/x/trim/mystery.csv") == (False, None)


def test_the_writers_column_lists_are_the_schemas() -> None:
    """A column added to a writer without its schema (and a minor version) fails here."""
    assert list(SUMMARY_COLUMNS) == columns("summary.csv")[0]
    assert list(fleet.CSV_COLUMNS) == columns("fleet.csv")[0]
    assert list(SESSION_COLUMNS) == columns("erase-session.csv")[0]


# ---- a wrong file is refused, naming the field ------------------------------------------


def real_run_json(tmp_path: Path) -> Path:
    RunRecord.create(
        tmp_path, run="trim", kind="trim",
        drive={"name": "loop0", "path": "/dev/loop0", "model": "M", "serial": "S",
               "firmware": "F", "size_bytes": 2**24},
        target={"path": "/dev/loop0", "kind": "disk", "span_bytes": 2**24, "op_percent": 0},
        params={"torture_seconds": 2}, tools={"ssdbench": "0.1.0", "fio": "fio-3.33"})
    return tmp_path / "run.json"


def real_erase_record() -> dict[str, Any]:
    record = build_record(
        drive={"model": "M", "serial": "S", "firmware": "F", "transport": "loop",
               "path": "/dev/loop0", "size_bytes": 2**24, "logical_block_size": 512,
               "serial_shared_with": ["loop1"]},
        erase={"method": "discard", "secure": False, "detail": "blkdiscard"}, error=None,
        hidden={}, tools={"ssdbench": "0.1.0"}, people={"operator": "A"},
        health_before=None, health_after=None, started="2026-11-28T10:00:00Z",
        finished="2026-11-28T10:00:01Z", duration_s=1.0)
    return unsigned(record, "no lab key")


def test_a_real_run_json_passes_and_a_wrong_type_or_missing_field_is_named(
        tmp_path: Path) -> None:
    path = real_run_json(tmp_path)
    data = check_json(path)
    bad = {**data, "drive": {**data["drive"], "size_bytes": "16 MiB"}}
    with pytest.raises(SchemaMismatch, match=r"\$\.drive\.size_bytes: '16 MiB' is not of type"):
        check_data(bad, "run.json", "run.json")
    missing = {k: v for k, v in data.items() if k != "state"}
    with pytest.raises(SchemaMismatch, match=r"'state' is a required property"):
        check_data(missing, "run.json", "run.json")
    with pytest.raises(SchemaMismatch, match=r"\$\.state: 'finished' is not one of"):
        check_data({**data, "state": "finished"}, "run.json", "run.json")
    # an unknown member is fine (a minor version adds them), a wrong stage state is not
    check_data({**data, "new_member": {"x": 1}}, "run.json", "run.json")
    stages = [{"name": "fill", "state": "maybe"}]
    with pytest.raises(SchemaMismatch, match=r"\$\.stages\[0\]\.state"):
        check_data({**data, "stages": stages}, "run.json", "run.json")


def test_a_real_erase_record_passes_and_a_broken_one_is_named() -> None:
    record = real_erase_record()
    check_data(record, "erase-record.json", "erase-record.json")
    result = {k: v for k, v in record["result"].items() if k != "status"}
    with pytest.raises(SchemaMismatch, match=r"\$\.result: 'status' is a required property"):
        check_data({**record, "result": result}, "erase-record.json", "record")
    with pytest.raises(SchemaMismatch, match=r"\$\.drive\.capacity_bytes"):
        check_data({**record, "drive": {**record["drive"], "capacity_bytes": 1.5}},
                   "erase-record.json", "record")
    with pytest.raises(SchemaMismatch, match=r"\$\.signature"):
        check_data({**record, "signature": {"algorithm": "Ed25519"}}, "erase-record.json",
                   "record")
    # the members being added by other work stay optional
    bare = {k: v for k, v in record.items() if k not in ("bench", "chain")}
    check_data(bare, "erase-record.json", "record")


def summary_text(**cells: str) -> str:
    row = dict.fromkeys(SUMMARY_COLUMNS, "")
    row.update(drive_dir="20261121T145300Z_M_S", run="trim", run_state="done")
    row.update(cells)
    return ",".join(SUMMARY_COLUMNS) + "\n" + ",".join(row.values()) + "\n"


def test_a_csv_with_a_wrong_cell_or_header_is_refused_naming_the_column() -> None:
    rows = check_csv_text(summary_text(capacity_bytes="1000204886016", iops_mean="1834.5"),
                          "summary.csv", "summary.csv")
    assert rows[0]["iops_mean"] == "1834.5"
    with pytest.raises(SchemaMismatch, match=r"row 2 .*\n  \$\.capacity_bytes: 'lots'"):
        check_csv_text(summary_text(capacity_bytes="lots"), "summary.csv", "summary.csv")
    with pytest.raises(SchemaMismatch, match=r"\$\.run_state: 'fine' is not one of"):
        check_csv_text(summary_text(run_state="fine"), "summary.csv", "summary.csv")
    swapped = ["model", "drive_dir", *SUMMARY_COLUMNS[2:]]
    with pytest.raises(SchemaMismatch, match="header is not"):
        check_csv_text(",".join(swapped) + "\n", "summary.csv", "summary.csv")
    with pytest.raises(SchemaMismatch, match=r"unknown \['extra'\]"):
        check_csv_text(",".join([*SUMMARY_COLUMNS, "extra"]) + "\n", "summary.csv", "x")
    # a quoted cell with a line break (a drive's model is untrusted text) is one cell
    rows = check_csv_text(summary_text(model='"A\nB\u2028C"'), "summary.csv", "summary.csv")
    assert rows[0]["model"] == "A\nB\u2028C"
    with pytest.raises(SchemaMismatch, match="row 3 has 1 cells, the header 2"):
        check_csv_text("time_s,mib_s\n0,1\n1\n", "probe.csv", "probe-clean.csv")
    # probes.csv from before offset_bytes existed is still the format
    old = "phase,mib_s,seconds,bytes\nclean,12.5,1.0,13107200\n"
    assert check_csv_text(old, "probes.csv", "probes.csv")[0]["phase"] == "clean"
    with pytest.raises(SchemaMismatch, match=r"\$\.time_s"):
        check_csv_text("time_s,mib_s\n1.5,3\n", "probe.csv", "probe-clean.csv")


# ---- the docs say what the schemas say ------------------------------------------------------


def doc_columns(text: str, item: str) -> list[str]:
    """The first backticked comma-separated list in the doc's bullet for ``item``."""
    m = re.search(r"^\* `" + re.escape(item) + r"`(.*?)(?=^\* |^#|\Z)", text, re.S | re.M)
    assert m, f"docs: no bullet for {item}"
    for span in re.findall(r"`([^`]*)`", m.group(1)):
        if "," in span:
            return [c.strip() for c in span.split(",")]
    raise AssertionError(f"docs: no column list for {item}")


@pytest.mark.parametrize(("item", "name"), [
    ("summary.csv", "summary.csv"), ("iops.csv", "iops.csv"), ("fill.csv", "fill.csv"),
    ("probe-<phase>.csv", "probe.csv"), ("probes.csv", "probes.csv"),
    ("readscan.csv", "readscan.csv"), ("sensors-<phase>.csv", "sensors.csv")])
def test_the_docs_csv_columns_are_the_schemas(item: str, name: str) -> None:
    assert doc_columns(DOC, item) == columns(name)[0]


def test_the_docs_erase_session_and_fleet_columns_are_the_schemas() -> None:
    m = re.search(r"one row per erase record of the\s+session.*?: `([^`]*)`", DOC, re.S)
    assert m and [c.strip() for c in m.group(1).split(",")] == columns("erase-session.csv")[0]
    m = re.search(r"the CSV's columns:\s*`([^`]*)`", LAB_DOC)
    assert m and [c.strip() for c in m.group(1).split(",")] == columns("fleet.csv")[0]


def test_the_docs_run_json_example_has_the_schemas_members() -> None:
    """Every member of the doc's run.json example is in the schema, and every member the
    schema requires is in the example."""
    block = re.search(r"## run\.json\n\n```json\n(.*?)```", DOC, re.S)
    assert block
    example = json.loads("\n".join(re.sub(r"//.*$", "", line)
                                   for line in block.group(1).splitlines()))
    s = schema("run.json")
    assert set(example) <= set(s["properties"]), set(example) - set(s["properties"])
    assert set(s["required"]) <= set(example), set(s["required"]) - set(example)


def test_the_docs_erase_record_table_is_the_schemas_members() -> None:
    section = DOC.split("## Erase record", 1)[1]
    table = re.search(r"^\| key \| content \|\n\|---\|---\|\n((?:\|.*\n)+)", section, re.M)
    assert table
    keys = {k for row in table.group(1).splitlines()
            for k in re.findall(r"`([^`]+)`", row.split("|")[1])}
    assert keys == set(schema("erase-record.json")["properties"])


def test_the_docs_drive_json_table_is_the_schemas_members() -> None:
    section = DOC.split("## drive.json", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert set(rows) == set(schema("drive.json")["properties"])
    listed = set(re.findall(r"`(\w+)`", section.split("| `drive` |", 1)[1].split("\n")[0]))
    assert set(schema("drive.json")["properties"]["drive"]["required"]) <= listed


def test_the_docs_status_json_example_has_the_schemas_members() -> None:
    block = re.search(r"^    \{\"schema\": 1, \"bench\".*?(?=\n\n)", LAB_DOC, re.S | re.M)
    assert block
    keys = set(re.findall(r"^ {4,5}\"?\{?\"(\w+)\":", block.group(0), re.M))
    keys |= set(re.findall(r"[{,] \"(\w+)\":", block.group(0)))
    s = schema("status.json")
    assert set(s["required"]) <= keys, set(s["required"]) - keys


def test_the_docs_name_every_schema_and_the_changelog() -> None:
    section = DOC.split("## The contract", 1)[1].split("\n## ", 1)[0]
    for name in SCHEMA_FILES:
        assert f"`{name}`" in section, name
    assert "CHANGELOG.md" in section and changelog_version() in section


def test_check_tree_fails_on_an_unknown_file_a_wrong_file_or_too_few_files(
        tmp_path: Path) -> None:
    """What the loop-device and QEMU tests call on a whole results folder."""
    run_dir = tmp_path / "ssdbench" / "20261121T145300Z_M_S" / "trim"
    run_dir.mkdir(parents=True)
    path = real_run_json(run_dir)
    (run_dir / "fio").mkdir()
    (run_dir / "fio" / "torture.json").write_text('{"fio version": "fio-3.33"}')  # fio's own
    (tmp_path / "ssdbench" / "summary.csv").write_text(summary_text())
    assert check_tree(tmp_path, expect={"run.json.schema.json": 1}) == {
        "run.json.schema.json": 1, "(no contract)": 1, "summary.csv.schema.json": 1}
    with pytest.raises(SchemaMismatch, match="fewer files than expected"):
        check_tree(tmp_path, expect={"drive.json.schema.json": 1})
    (run_dir / "mystery.csv").write_text("a,b\n1,2\n")
    with pytest.raises(SchemaMismatch, match=r"mystery\.csv: a \.csv file the format does not"):
        check_tree(tmp_path)
    (run_dir / "mystery.csv").unlink()
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "stages": "fill"}))
    with pytest.raises(SchemaMismatch, match=r"trim/run\.json does not follow .*\n  \$\.stages"):
        check_tree(tmp_path)
