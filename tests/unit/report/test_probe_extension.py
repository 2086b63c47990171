"""#43: report.html's TRIM table says how much each probe wrote and why it stopped (run.json
``probe_extension``, docs/plans.md "TRIM probes"); a malformed entry is named, never shown
as a number or markup."""

from __future__ import annotations

from ssdbench.report.html import _extension_rows, kv_table

GIB = 2**30


def test_each_probe_says_what_it_wrote_and_why_it_stopped() -> None:
    rows = dict(_extension_rows({
        "clean": {"chunks": 4, "bytes": 4 * GIB, "planned_bytes": GIB, "stopped": "cap"},
        "after_trim": {"chunks": 2, "bytes": 2 * GIB, "planned_bytes": GIB,
                       "stopped": "answered"}}))
    assert rows["probe clean written"].startswith("4.00 GiB of 1.00 GiB planned (4 chunks)")
    assert "the cap (probe_max_multiple) reached" in rows["probe clean written"]
    assert rows["probe after TRIM written"].endswith("stopped: it could answer")
    assert "probe after torture written" not in rows


def test_a_malformed_record_is_named_not_shown() -> None:
    assert _extension_rows(None) == [] and _extension_rows(["x"]) == []
    rows = dict(_extension_rows({
        "clean": {"chunks": True, "bytes": "<b>9</b>", "planned_bytes": -1},
        "after_torture": "<script>", "after_trim": {"chunks": 1, "bytes": GIB,
                                                    "planned_bytes": GIB, "stopped": "<i>"}}))
    assert rows["probe clean written"] == "not readable in run.json"
    assert rows["probe after torture written"] == "not readable in run.json"
    assert rows["probe after TRIM written"].endswith("stopped: not recorded")
    html = kv_table(list(rows.items()))
    assert "<script>" not in html and "<i>" not in html and "<b>" not in html
