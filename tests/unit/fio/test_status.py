from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssdbench.fio.status import FioOutputError, JsonStreamSplitter, parse_report


def split(data: bytes, chunk: int) -> tuple[list[dict[str, object]], JsonStreamSplitter]:
    s = JsonStreamSplitter()
    objs = []
    for i in range(0, len(data), chunk):
        objs += s.feed(data[i : i + chunk])
    objs += s.finish()
    return objs, s


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_status_stream_splits_the_same_in_any_chunking(fio_data: Path, chunk: int) -> None:
    data = (fio_data / "torture-3s" / "stdout.txt").read_bytes()
    objs, _ = split(data, chunk)
    assert len(objs) == 4  # 3 status dumps + the final report
    reports = [parse_report(o) for o in objs]
    assert all(r.version == "fio-3.33" for r in reports)
    written = [r.total("write")[0] for r in reports]
    assert written == sorted(written) and written[0] > 0  # cumulative counters
    final = reports[-1]
    assert final.jobs[0].name == "torture" and final.jobs[0].error == 0
    assert 2900 <= final.runtime_ms <= 3100


def test_non_json_line_between_objects_is_kept_as_junk(fio_data: Path) -> None:
    data = (fio_data / "cancelled" / "stdout.txt").read_bytes()
    objs, s = split(data, 333)
    assert len(objs) == 3
    assert "fio: terminating on signal 2" in s.junk


def test_warning_inside_an_object_is_dropped_and_the_object_kept(fio_data: Path) -> None:
    text = (fio_data / "torture-3s" / "stdout.txt").read_text()
    lines = text.splitlines()
    lines.insert(5, "fio: file hash not empty on exit")
    objs, s = split("\n".join(lines).encode(), 100)
    assert len(objs) == 4
    assert "fio: file hash not empty on exit" in s.junk


def test_broken_object_is_skipped_not_fatal() -> None:
    s = JsonStreamSplitter()
    objs = s.feed('{\n  "jobs" : [ oops\n}\n{\n  "jobs" : []\n}\n')
    assert objs == [{"jobs": []}]
    assert any("unparseable" in j for j in s.junk)


def test_parse_report_rejects_non_fio_json() -> None:
    with pytest.raises(FioOutputError):
        parse_report({"hello": 1})
    report = parse_report(json.loads('{"jobs": [{"jobname": "x", "error": 5}]}'))
    assert report.errors == ["job 'x': error 5"]
