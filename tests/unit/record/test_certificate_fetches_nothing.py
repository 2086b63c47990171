"""The erase certificate fetches nothing and shows a drive string the way every screen and
CSV does (#42 items 3 and 7). Before: a serial with a line break ended the CSS string of the
page footer in the certificate's <style>, and the rest became CSS rules: WeasyPrint fetched
an http:// URL from the bench and read a file:// image into the customer's PDF; U+202E and
U+200B went raw into the certificate and the CSVs while verify-record and the screens show
them as ``?``."""

from __future__ import annotations

import csv
import http.server
import io
import re
import struct
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssdbench.cli import main
from ssdbench.record import render, seal, write_record_files
from ssdbench.record.write import append_session_csv
from ssdbench.untrusted import shown
from tests.unit.record.test_record import make_key, record

# files this module's tests watch: every open() of a path under a folder named so is noted
# (an audit hook stays for the process: it only looks at these names)
WATCHED = "ssdbench-watched-e4b1"
_opened: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and args and WATCHED in str(args[0]):
        _opened.append(str(args[0]))


sys.addaudithook(_audit)


class _Server:
    """A real HTTP server on 127.0.0.1 that counts the requests it gets."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()
    s.thread.join(5)


def _png(path: Path) -> Path:
    """A real 1x1 PNG (what a file:// URL would pull into the PDF)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0,
                                                                       0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))
    return path


def _hostile(port: int, image: Path) -> dict[str, Any]:
    """A record of a drive whose serial closes the footer's CSS string and blocks and asks
    for a URL on the bench's network and a local image, and whose model is an <img>."""
    r = seal(record(), "")
    r["drive"]["serial"] = (f"S1\n}}}} body {{ background: url(http://127.0.0.1:{port}/x) }} "
                            f"header {{ background: url(file://{image}) }}")
    r["drive"]["model"] = f'<img src="file://{image}"><img src="http://127.0.0.1:{port}/m">'
    return r


def _style(html: str) -> str:
    match = re.search(r"<style>(.*?)</style>", html, re.S)
    assert match
    return match.group(1)


def test_a_hostile_serial_makes_a_pdf_that_fetched_nothing(tmp_path: Path,
                                                            server: _Server) -> None:
    pytest.importorskip("weasyprint")
    image = _png(tmp_path / WATCHED / "x.png")
    _opened.clear()
    files = write_record_files(tmp_path, _hostile(server.port, image))
    assert files["pdf"] is not None, files["pdf_problem"]
    assert server.paths == []  # before: ['/x']
    assert _opened == []  # before: the image was read ...
    assert b"/Subtype /Image" not in (tmp_path / files["pdf"]).read_bytes()  # ... into the PDF


def test_no_drive_string_reaches_the_style_and_a_browser_loads_nothing(tmp_path: Path) -> None:
    hostile = render.certificate_html(_hostile(1, tmp_path / "x.png"), record_sha256="0" * 64)
    plain = render.certificate_html(seal(record(), ""), record_sha256="0" * 64)
    assert _style(hostile) == _style(plain)  # the style sheet is a constant
    assert ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            'style-src \'unsafe-inline\'">') in hostile
    # the head holds the CSP before anything a browser could load
    assert hostile.index("Content-Security-Policy") < hostile.index("<title>")
    assert "<img" not in hostile and "&lt;img src=&quot;file://" in hostile


def test_the_page_footer_still_names_the_record_and_the_serial() -> None:
    weasyprint = pytest.importorskip("weasyprint")
    r = seal(record(), "")
    r["drive"]["serial"] = "AB\u202eCD\n}} x"
    html = render.certificate_html(r, record_sha256="0" * 64)
    page = weasyprint.HTML(string=html, url_fetcher=render.NoFetch()).render().pages[0]

    def texts(box: Any) -> Iterator[str]:
        if getattr(box, "text", None):
            yield box.text
        for child in getattr(box, "children", None) or []:
            yield from texts(child)

    footer = [t for b in page._page_box.children
              if getattr(b, "at_keyword", "") == "@bottom-center" for t in texts(b)]
    assert footer == [f"record {r['record_id']} · serial AB?CD?}}}} x · page 1 of 1"]


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/x", "https://127.0.0.1/x", "file:///etc/hostname", "FILE:///etc/passwd",
    "data:image/png;base64,iVBORw0KGgo=", "ftp://127.0.0.1/x", "x.png", "//127.0.0.1/x",
])
def test_the_fetcher_refuses_every_url(url: str, tmp_path: Path) -> None:
    fetcher = render.NoFetch()
    with pytest.raises(render.FetchRefused):
        fetcher(url)
    assert fetcher.asked == [url]


def test_a_page_that_asks_for_a_url_gets_no_pdf(tmp_path: Path, server: _Server) -> None:
    # as if markup got past the escaping: WeasyPrint asks, the fetcher refuses, no PDF
    pytest.importorskip("weasyprint")
    image = _png(tmp_path / WATCHED / "y.png")
    _opened.clear()
    html = (f'<html><body><img src="http://127.0.0.1:{server.port}/y">'
            f'<img src="file://{image}"></body></html>')
    problem = render.write_pdf(html, tmp_path / "c.pdf")
    assert problem is not None and "asked for http://127.0.0.1:" in problem
    assert "and 1 more URL(s)" in problem
    assert server.paths == [] and _opened == []
    assert not (tmp_path / "c.pdf").exists()


def test_bidi_and_zero_width_read_the_same_on_the_certificate_in_csvs_and_on_screen(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = record()
    r["drive"]["serial"] = "AB\u202eDC\u200bEF\ttab"
    r["drive"]["model"] = "Model\u2066X\u2069"
    key = make_key(tmp_path)
    sealed = seal(r, str(key))
    files = write_record_files(tmp_path, sealed)
    page = (tmp_path / files["html"]).read_text()
    assert not re.search("[\u200b-\u200f\u202a-\u202e\u2066-\u2069]", page)
    seen = "AB?DC?EF?tab"
    assert f'<td class="serial">{seen}</td>' in page and "<td>Model?X?</td>" in page
    rows = [next(csv.DictReader(io.StringIO(render.csv_text([sealed]))))]
    rows.append(next(csv.DictReader(append_session_csv(tmp_path, sealed).open())))
    assert [(row["serial"], row["model"]) for row in rows] == [(seen, "Model?X?")] * 2
    assert shown(sealed["drive"]["serial"]) == seen  # the screens
    assert main(["verify-record", "--key", str(key), str(tmp_path / files["json"])]) == 0
    assert f"serial {seen};" in capsys.readouterr().out  # verify-record


def test_every_csv_cell_shows_control_characters_as_the_screens_do() -> None:
    from ssdbench.untrusted import csv_row
    assert csv_row({"a": "S\u202eN\u200b1", "b": "\t=1+1", "c": "=1+1", "d": "-3.5", "e": 7}) == {
        "a": "S?N?1", "b": "?=1+1", "c": "'=1+1", "d": "-3.5", "e": 7}
