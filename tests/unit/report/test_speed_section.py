"""report.html's speed section: the verdict first, then each corner with its temperature and
its class's figure; run.json read back is untrusted (markup escaped, odd values a dash)."""

from __future__ import annotations

from ssdbench.report.html import speed_html


def _corner(label: str, **values: object) -> dict[str, object]:
    return {"label": label, "direction": "read", "mb_s": 550.0, "iops": 524.5,
            "mean_latency_us": 15210.0, "temperature_start_c": 38, "temperature_end_c": 41,
            "reference_mb_s": 560.0, "verdict": "as fast", "below_percent": 1.8, **values}


def test_speed_section_lists_the_corners_and_the_class() -> None:
    meta = {"speed": {"seconds": 12, "ramp_seconds": 3, "region_bytes": 2**30,
                      "writes": False,
                      "corners": [_corner("SEQ1M Q8T1"),
                                  _corner("RND4K Q1T1", verdict="below", below_percent=23.4,
                                          temperature_start_c=None, temperature_end_c=None)],
                      "verdict": {"verdict": "below", "text": "below its class by 23% (RND4K "
                                  "Q1T1 read); 1 of 2 figures below", "class": "Samsung.*",
                                  "tolerance_percent": 15}}}
    out = speed_html(meta)
    # the verdict is the run's answer just above the section: not said again (#45 B)
    assert "below its class by 23%" not in out
    assert "38 → 41 °C" in out and "below by 23%" in out and "as fast" in out
    assert "1.00 GiB" in out and "nothing was written" in out
    assert "class Samsung.*, tolerance 15%" in out


def test_speed_section_escapes_what_run_json_says_and_skips_nonsense() -> None:
    meta = {"speed": {"corners": [_corner("<script>x</script>", mb_s="fast", iops=float("nan"),
                                          temperature_start_c=True, verdict="<b>")],
                      "verdict": {"text": "<img src=x>", "class": "<i>"}}}
    out = speed_html(meta)
    assert "<script>" not in out and "<img" not in out and "<i>" not in out
    assert "&lt;script&gt;" in out and ">fast<" not in out and "nan" not in out
    assert speed_html({}) == "" and speed_html({"speed": {"corners": "x"}}) == ""
