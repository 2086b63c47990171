"""#46 "The operator's fields" in summary.csv (customer, asset_tag, lot, job and one
``field_<name>`` column per lab field, from run.json ``params``) and in fleet.csv (lot,
asset_tag): formula-safe and shown by the display rule, held against the published
schemas (1.1.0)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.cli import main
from ssdbench.lab import fleet
from ssdbench.report import render_index
from ssdbench.report.summary import SUMMARY_COLUMNS, operator_cells, summary_columns
from ssdbench.stages.params import build_params
from tests.conftest import DATA
from tests.schema_check import SchemaMismatch, check_csv, check_csv_text

from .synthetic import DriveSpec, write_drive_folder

RUN = DATA / "lab/results/20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001/trim/run.json"


def with_params(drive: Path, **values: Any) -> None:
    """Every run.json of ``drive`` with these plan values, as RunParams.as_record writes
    them (``field.<name>`` keys through --set)."""
    sets = [f"{k.replace('__', '.')}={v}" for k, v in values.items()]
    record = build_params(sets=sets).as_record()
    for path in drive.glob("*/run.json"):
        doc = json.loads(path.read_text())
        doc["params"] = {**doc.get("params", {}), **record}
        path.write_text(json.dumps(doc))


def read(root: Path) -> tuple[list[str], list[dict[str, str]]]:
    text = (root / "summary.csv").read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    return list(reader.fieldnames or []), list(reader)


def test_summary_csv_has_the_operators_fields_and_a_column_per_lab_field(
        tmp_path: Path) -> None:
    root = tmp_path / "ssdbench"
    a = write_drive_folder(root, DriveSpec(serial="SNA"), duration=300, runs=("trim",))
    b = write_drive_folder(root, DriveSpec(serial="SNB"), duration=300, runs=("trim",))
    write_drive_folder(root, DriveSpec(serial="SNC"), duration=300, runs=("trim",))
    with_params(a, lot="LOT-7", asset_tag="INV-1", customer="ACME", job="refurb-ssd",
                field__pallet="P-3", field__bay="12")
    with_params(b, lot="LOT-7", field__bay="4", field__ticket="T-9")
    render_index(root, svg=False)
    header, rows = read(root)
    assert header == [*SUMMARY_COLUMNS, "field_pallet", "field_bay", "field_ticket"]
    assert SUMMARY_COLUMNS[-4:] == ("customer", "asset_tag", "lot", "job")
    by = {r["serial"]: r for r in rows}
    assert {k: by["SNA"][k] for k in ("customer", "asset_tag", "lot", "job", "field_pallet",
                                       "field_bay", "field_ticket")} == {
        "customer": "ACME", "asset_tag": "INV-1", "lot": "LOT-7", "job": "refurb-ssd",
        "field_pallet": "P-3", "field_bay": "12", "field_ticket": ""}
    assert by["SNB"]["field_ticket"] == "T-9" and by["SNB"]["field_pallet"] == ""
    assert all(by["SNC"][k] == "" for k in header[-7:])  # a run from before: no values
    check_csv(root / "summary.csv")  # summary.csv.schema.json 1.1.0
    # index.html's "every column" table has them too
    assert "field_ticket" in (root / "index.html").read_text()


def test_a_folder_with_no_lab_field_has_no_field_column(tmp_path: Path) -> None:
    root = tmp_path / "ssdbench"
    with_params(write_drive_folder(root, duration=300, runs=("trim",)), lot="L1")
    render_index(root, svg=False)
    header, rows = read(root)
    assert header == list(SUMMARY_COLUMNS) and rows[0]["lot"] == "L1"
    check_csv(root / "summary.csv")


def test_hostile_values_are_formula_safe_and_shown_by_the_display_rule(tmp_path: Path) -> None:
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, DriveSpec(serial="=SN1"), duration=300, runs=("trim",))
    big = "B" * 10_000
    for path in drive.glob("*/run.json"):
        doc = json.loads(path.read_text())
        doc["params"].update(
            lot='=HYPERLINK("http://127.0.0.1:9","x")', asset_tag="+1+2", customer="@SUM(A1)",
            job="-2+3", extra_fields={"pallet": "LOT\u202e7\u200b\x1b[2J", "big": big,
                                      "neg": "-3.5", "Bad Name": "x", "ok": 7})
        path.write_text(json.dumps(doc))
    render_index(root, svg=False)
    header, rows = read(root)
    row = rows[0]
    assert row["serial"] == "'=SN1"  # what the code does for serials ...
    assert row["lot"] == "'=HYPERLINK(\"http://127.0.0.1:9\",\"x\")"  # ... it does here
    assert (row["asset_tag"], row["customer"], row["job"]) == ("'+1+2", "'@SUM(A1)", "'-2+3")
    assert row["field_pallet"] == "LOT?7??[2J" and row["field_neg"] == "-3.5"  # a number
    assert row["field_big"] == big
    # a name that is no lab field's name, or a value that is not text: no column, no cell
    assert "field_Bad Name" not in header and "field_ok" not in header
    check_csv(root / "summary.csv")


def test_operator_cells_read_run_json_as_untrusted() -> None:
    for meta in ({}, {"params": "x"}, {"params": {"lot": 7, "extra_fields": ["a", "b"]}},
                 {"params": {"extra_fields": {"../x": "1", "a" * 33: "2"}}}):
        cells = operator_cells(meta)
        assert cells == dict.fromkeys(("customer", "asset_tag", "lot", "job"), ""), meta
    assert summary_columns([{"a": "1"}, {"field_x": "1"}, {"field_y": "", "field_x": ""}]
                           ) == (*SUMMARY_COLUMNS, "field_x", "field_y")


def test_the_schema_takes_field_columns_only_after_every_column() -> None:
    base = ",".join(SUMMARY_COLUMNS)
    row = dict.fromkeys(SUMMARY_COLUMNS, "")
    row.update(drive_dir="d", run="trim", run_state="done")
    cells = ",".join(row.values())
    rows = check_csv_text(f"{base},field_pallet\n{cells},P-3\n", "summary.csv", "s")
    assert rows[0]["field_pallet"] == "P-3"
    for bad, why in ((f"{base},field_Pallet", r"unknown \['field_Pallet'\]"),
                     (f"{base},field_a,field_a", "header is not"),
                     (f"{base},pallet", r"unknown \['pallet'\]")):
        with pytest.raises(SchemaMismatch, match=why):
            check_csv_text(bad + "\n", "summary.csv", "s")
    # a file from before 1.1.0 ends at speed_corners: still the format, with no field columns
    old = SUMMARY_COLUMNS[:SUMMARY_COLUMNS.index("customer")]
    check_csv_text(",".join(old) + "\n", "summary.csv", "s")
    with pytest.raises(SchemaMismatch, match="header is not"):
        check_csv_text(",".join([*old, "field_pallet"]) + "\n", "summary.csv", "s")


def test_fleet_csv_carries_the_lot_and_the_asset_tag_from_run_json_params(
        tmp_path: Path) -> None:
    root = tmp_path / "lab1"
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"lot": "LOT-7", "asset_tag": "=INV-1"}, {}),
        ({}, {"lot": "OLD-LOT", "operator": {"asset_tag": "OLD-TAG"}}),  # older forms
        ({"lot": 7}, {})]
    for n, (params, top) in enumerate(cases):
        doc = json.loads(RUN.read_text())
        doc["params"] = {**doc.get("params", {}), **params}
        doc.update(top, started=f"2026-11-25T06:0{n}:00Z")
        doc["drive"]["serial"] = f"SN{n}"
        folder = root / "bench-0" / f"SN{n}" / "20261125T060000Z" / "trim"
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(doc))
    (root / "bench-0" / "status.json").write_text(json.dumps(
        {"bench": "bench-0", "state": "done", "time": "2026-11-25T07:59:00Z"}))
    out = tmp_path / "o"
    for _ in range(2):  # from the run.json files, then from the index
        assert main(["fleet", str(root), "-o", str(out)]) == 0
        rows = {r["serial"]: r for r in check_csv(out / "fleet.csv")}
        assert (rows["SN0"]["lot"], rows["SN0"]["asset_tag"]) == ("LOT-7", "'=INV-1")
        assert (rows["SN1"]["lot"], rows["SN1"]["asset_tag"]) == ("OLD-LOT", "OLD-TAG")
        assert (rows["SN2"]["lot"], rows["SN2"]["asset_tag"]) == ("", "")
    assert fleet.CSV_COLUMNS[-2:] == ("lot", "asset_tag")
    lots = "".join(p.read_text() for p in (out / "fleet-lots").rglob("*.html"))
    assert "LOT-7" in lots and "OLD-LOT" in lots


def test_an_erase_runs_report_lists_the_lot_the_job_and_the_fields() -> None:
    from ssdbench.report.answer import params_for

    params = build_params(sets=["lot=L1", "job=J-1", "field.pallet=P-3"]).as_record()
    shown = dict(params_for("erase", params))
    assert (shown["lot"], shown["job"], shown["extra_fields"]) == ("L1", "J-1", {"pallet": "P-3"})
    assert "lot" not in dict(params_for("trim", params))
