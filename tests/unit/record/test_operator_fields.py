"""#46 "The operator's fields": the lot, the lab's own fields and the lab's job that chose the
plan reach the plan parameters (``--set``, a config, run.json read back), the signed erase
record and its certificate; hostile values are shown by the display rule, never as markup."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ssdbench.cli import main
from ssdbench.record import render, seal, write_record_files
from ssdbench.record.build import people_block, people_of
from ssdbench.record.sign import verify_record_bytes
from ssdbench.stages.params import ParamError, RunParams, build_params
from tests.schema_check import check_data, check_json
from tests.unit.record.test_record import make_key, record

HOSTILE = {
    "markup": '<img src="http://127.0.0.1:9/x"><script>alert(1)</script>',
    "style": "</style><style>body{background:url(http://127.0.0.1:9/y)}",
    "controls": "P\x1b[2J\x07-3\r\n",
    "bidi": "LOT\u202e7\u200b",
    "formula": "=HYPERLINK(\"http://127.0.0.1:9\")",
}
BIG = "A" * 10_000 + "<b>"


def lab_params(**fields: str) -> RunParams:
    return build_params(sets=["operator=A. Tester", "asset_tag=INV-0042", "lot= LOT-7 ",
                              "job=refurb-ssd", *(f"field.{k}={v}" for k, v in fields.items())])


# ---- the plan parameters ---------------------------------------------------------------------


def test_set_lot_job_and_the_labs_fields_and_read_them_back_from_run_json() -> None:
    p = lab_params(pallet="P-3", bay_2="left")
    assert (p.lot, p.job) == ("LOT-7", "refurb-ssd")
    assert p.extra_fields == (("pallet", "P-3"), ("bay_2", "left"))  # the order given
    record = p.as_record()
    assert record["extra_fields"] == {"pallet": "P-3", "bay_2": "left"}
    assert json.loads(json.dumps(record))["lot"] == "LOT-7"
    # run.json and the journal are read back through with_values
    back = RunParams().with_values(json.loads(json.dumps(record)), source="run.json")
    assert (back.lot, back.job, back.extra_fields) == (p.lot, p.job, p.extra_fields)
    # one field replaced, the others kept; a TOML `field.x = ".."` is a table
    again = p.with_values({"field.pallet": "P-4"})
    assert again.extra_fields == (("pallet", "P-4"), ("bay_2", "left"))
    assert p.with_values({"field": {"dock": "D1"}}).extra_fields[-1] == ("dock", "D1")
    # the kiosk's pairs, and a TOML table, replace them all
    assert RunParams().with_values({"extra_fields": [("a", "1")]}).extra_fields == (("a", "1"),)
    assert RunParams().with_values({"extra_fields": {"b": "2"}}).extra_fields == (("b", "2"),)


def test_a_config_file_names_the_labs_fields(tmp_path: Path) -> None:
    config = tmp_path / "plan.toml"
    config.write_text('lot = "L1"\nfield.pallet = "P-3"\n[params.extra_fields]\nbay = "2"\n')
    p = build_params(config=config)
    assert p.lot == "L1" and dict(p.extra_fields) == {"pallet": "P-3", "bay": "2"}


@pytest.mark.parametrize(("sets", "message"), [
    (["extra_fields=pallet=P-3"], r"'extra_fields': expected one --set field\.<name>=VALUE"),
    (["field.Pallet=P-3"], r"'field\.Pallet': expected a field name of a-z, 0-9 and _"),
    (["field.=x"], r"'field\.': expected a field name"),
    (["field.1st=x"], r"'field\.1st': expected a field name"),
    ([f"field.{'a' * 33}=x"], r"expected a field name"),
    (["fields.pallet=x"], r"`fields\.pallet`: unknown key"),
])
def test_a_bad_lab_field_is_refused_naming_the_key(sets: list[str], message: str) -> None:
    with pytest.raises(ParamError, match=message):
        build_params(sets=sets)


def test_extra_fields_that_are_not_name_value_text_are_refused() -> None:
    for value, message in (({"a": 1}, r"'field\.a': expected a string, got 1"),
                           ([("a", "1"), ("a", "2")], "the field is named twice"),
                           (["a=1"], "expected a table of the lab's fields"),
                           (7, "expected a table of the lab's fields")):
        with pytest.raises(ParamError, match=message):
            RunParams().with_values({"extra_fields": value}, source="plan.toml")


@pytest.mark.parametrize("which", [{"plan": "erase", "run": None},
                                   {"plan": None, "run": "consistency"}])
def test_ssdbench_run_takes_set_lot_and_the_fields_and_refuses_a_bad_field(
        which: dict[str, Any]) -> None:
    """`ssdbench run --set lot=... --set field.pallet=...`, a plan or a --run."""
    from ssdbench.commands.run import _plan
    from ssdbench.plan.plans import PlanError

    def args(*sets: str) -> argparse.Namespace:
        return argparse.Namespace(**which, op=None, config=None, sets=list(sets),
                                  erase_fallback=None)

    plan = _plan(args("lot=LOT-7", "field.pallet=P-3", "job=refurb-ssd"))
    assert (plan.params.lot, plan.params.job) == ("LOT-7", "refurb-ssd")
    assert plan.params.extra_fields == (("pallet", "P-3"),)
    with pytest.raises(PlanError, match=r"field\.Bad"):
        _plan(args("field.Bad=1"))


# ---- the record -------------------------------------------------------------------------------


def lab_record(people: dict[str, Any]) -> dict[str, Any]:
    r = record()
    r["people"] = people_block(people)
    return r


def test_the_record_carries_the_lot_the_job_and_the_fields_signed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    people = people_of(lab_params(pallet="P-3", bay_2="left"))
    r = lab_record(people)
    assert r["people"] == {"operator": "A. Tester", "organisation": "", "customer": "",
                           "asset_tag": "INV-0042", "lot": "LOT-7", "job": "refurb-ssd",
                           "fields": {"bay_2": "left", "pallet": "P-3"}}
    key = make_key(tmp_path)
    files = write_record_files(tmp_path, seal(r, str(key)))
    path = tmp_path / files["json"]
    data = check_json(path)  # erase-record.json.schema.json, 1.1.0
    assert list(data["people"]["fields"]) == ["bay_2", "pallet"]  # sorted, as in memory
    assert list(r["people"]["fields"]) == ["bay_2", "pallet"]
    assert verify_record_bytes(path.read_bytes()).ok
    assert main(["verify-record", str(path), "--key", str(key)]) == 0
    capsys.readouterr()
    # each new field is signed: one changed is a changed record
    for old, new in ((b'"LOT-7"', b'"LOT-8"'), (b'"P-3"', b'"P-4"'),
                     (b'"refurb-ssd"', b'"refurb-hdd"')):
        raw = path.read_bytes()
        assert raw.count(old) == 1
        tampered = tmp_path / "tampered.json"
        tampered.write_bytes(raw.replace(old, new))
        assert main(["verify-record", str(tampered), "--key", str(key)]) == 1
        assert "changed after it was signed" in capsys.readouterr().err


def test_a_record_without_the_new_fields_still_renders_and_follows_the_schema() -> None:
    old = record()
    for k in ("lot", "job", "fields"):
        del old["people"][k]  # a record written before schema 1.1.0
    check_data(seal(old, ""), "erase-record.json", "old record")
    html = render.certificate_html(seal(old, ""), record_sha256="0" * 64)
    assert "INV-0042" in html and ">Lot<" not in html
    # a wrong type in the new members is named by the schema
    bad = lab_record({"lot": "L", "fields": {"pallet": "P"}})
    bad["people"]["fields"] = {"Pallet!": "P"}
    with pytest.raises(AssertionError, match=r"people\.fields"):
        check_data(seal(bad, ""), "erase-record.json", "record")


# ---- the certificate --------------------------------------------------------------------------


def _style(html: str) -> str:
    match = re.search(r"<style>(.*?)</style>", html, re.S)
    assert match
    return match.group(1)


def test_the_certificate_shows_lot_job_and_fields() -> None:
    r = seal(lab_record(people_of(lab_params(pallet="P-3"))), "")
    html = render.certificate_html(r, record_sha256="0" * 64)
    for label, value in (("Lot", "LOT-7"), ("Lab job (chose the plan)", "refurb-ssd"),
                         ("pallet", "P-3"), ("Asset tag / property number", "INV-0042")):
        assert f"<td>{label}</td><td>{value}</td>" in html, label
    # no job, no job line; the lot is always named (an empty one as a dash)
    plain = render.certificate_html(seal(lab_record({"operator": "A"}), ""),
                                    record_sha256="0" * 64)
    assert "Lab job" not in plain and "<td>Lot</td><td>—</td>" in plain


def test_hostile_values_are_shown_never_markup_never_in_the_style() -> None:
    people = {"lot": HOSTILE["style"], "job": HOSTILE["markup"], "customer": HOSTILE["bidi"],
              "fields": {**{k: v for k, v in HOSTILE.items()}, "big": BIG}}
    r = seal(lab_record(people), "")
    html = render.certificate_html(r, record_sha256="0" * 64)
    plain = render.certificate_html(seal(record(), ""), record_sha256="0" * 64)
    assert _style(html) == _style(plain)  # the style sheet is a constant
    assert html.count("</style>") == 1 and "<script" not in html and "<img" not in html
    for raw in ("\u202e", "\u200b", "\x1b", "\x07", "\r"):
        assert raw not in html, repr(raw)
    assert "&lt;/style&gt;&lt;style&gt;body{background:url(http://127.0.0.1:9/y)}" in html
    assert "<td>P?[2J?-3??</td>" in html  # the display rule: one ? per character
    assert "<td>LOT?7?</td>" in html
    assert "A" * 10_000 + "&lt;b&gt;" in html  # a 10 kB value whole, as text


def test_a_record_file_with_odd_people_still_renders() -> None:
    """A record is read back as untrusted (verify-record, a batch): fields that are not a
    table, or values that are not text, are shown as what they are, never a traceback."""
    for fields in ("pallet=P-3", ["pallet", "P-3"], None, {"x": {"y": 1}}, {"n": 7}):
        r = seal(record(), "")
        r["people"]["fields"] = fields
        html = render.certificate_html(r, record_sha256="0" * 64)
        assert "Certificate of Sanitization" in html


def test_the_certificate_with_every_field_stays_one_a4_page_and_a_huge_one_fetches_nothing(
        tmp_path: Path) -> None:
    weasyprint = pytest.importorskip("weasyprint")
    people = people_of(build_params(sets=[
        "operator=A. Tester", "organisation=Refurb Lab GmbH", "customer=ACME Leasing",
        "asset_tag=INV-0042", "lot=LOT-2026-11-28-A", "job=refurb-ssd",
        "field.pallet=P-3", "field.bay=12", "field.ticket=T-20261128-0042",
        "field.po_number=PO-77"]))
    hidden = {"nvme": {"warnings": ["other namespaces on this controller: nvme0n2; ..."],
                       "notes": []}}
    r = record(hidden=hidden)
    r["people"] = people_block(people)
    r |= {"grade": {"grade": "scrap", "reasons": ["a", "b", "c", "d"]}}
    html = render.certificate_html(seal(r, ""), record_sha256="0" * 64)
    assert len(weasyprint.HTML(string=html, url_fetcher=render.NoFetch()).render().pages) == 1
    # a hostile 10 kB field: a PDF (longer), nothing fetched
    r["people"] = people_block({**people, "fields": {"big": BIG, **HOSTILE}})
    files = write_record_files(tmp_path, seal(r, ""))
    assert files["pdf"] is not None, files["pdf_problem"]
    assert (tmp_path / files["pdf"]).read_bytes()[:5] == b"%PDF-"
