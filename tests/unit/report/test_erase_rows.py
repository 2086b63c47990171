"""#45 E: report.html's erase section showed the steps as a raw JSON list and the overwrite
as a raw six-line dict; they are readable rows, and what run.json says stays escaped."""

from __future__ import annotations

from ssdbench.report.html import erase_rows, kv_table

ERASE = {
    "method": "overwrite", "verified": True,
    "steps": ["method overwrite", "one pass of random over 268436992 bytes <b>"],
    "overwrite": {"passes": 1, "pattern": "random", "seed": "a0e5", "bytes": 268436992,
                  "bytes_written": 268436992, "seconds": 0.309, "mb_s": 867.5,
                  "bad_blocks": 0, "bad_block_list": [],
                  "verification": {"percent": 1.0, "unit_bytes": 1048576, "units_checked": 5,
                                   "mismatches": 0, "passed": True}},
}


def test_steps_are_a_list_and_the_overwrite_one_readable_line() -> None:
    page = kv_table(erase_rows(ERASE))
    assert "<ol class=\"steps\"><li>method overwrite</li>" in page
    assert "&lt;b&gt;" in page and "<b>" not in page
    assert ("1 pass of random, 268,436,992 bytes at 867.5 MB/s, 0 bad blocks; verified 1% "
            "in 5 units, 0 mismatches: passed") in page
    assert "[&quot;" not in page and "{&quot;" not in page and "bad_block_list" not in page


def test_an_odd_overwrite_is_said_without_nonsense() -> None:
    page = kv_table(erase_rows({"overwrite": {"passes": "x", "mb_s": float("nan"),
                                              "verification": {"passed": "yes"}},
                                "steps": "not a list"}))
    assert "nan" not in page and "not a list" in page and "verified" in page
