"""WebDAV listings from a hostile or broken server (#28 item 7), against a real HTTP server
on 127.0.0.1: an answer that is not XML is a StoreError naming the folder (it was an
ElementTree ParseError out of the fleet command), and an endless folder tree is listed to
a bounded depth, each folder once (7,613 requests in 20 s before, for ever)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from ssdbench.lab.config import parse_store
from ssdbench.lab.store import LIST_MAX_DEPTH, Store, StoreError, open_store


class Dav(http.server.BaseHTTPRequestHandler):
    mode: ClassVar[list[str]] = ["endless"]
    paths: ClassVar[list[str]] = []

    def do_PROPFIND(self) -> None:
        self.paths.append(self.path)
        if self.mode[0] == "html":  # well-formed, but no DAV listing
            body = b"<html><body>Captive portal: log in first</body></html>"
        elif self.mode[0] == "text":  # not XML at all
            body = b"Captive portal <b>log in first"
        else:  # every folder holds a file and a folder of its own, and points back up
            base = self.path.rstrip("/")
            body = (f'<?xml version="1.0"?><D:multistatus xmlns:D="DAV:">'
                    f"<D:response><D:href>{base}/</D:href></D:response>"
                    f"<D:response><D:href>{base}/run.json</D:href></D:response>"
                    f"<D:response><D:href>{base}/x/</D:href></D:response>"
                    f"<D:response><D:href>/dav/lab1/</D:href></D:response>"
                    "</D:multistatus>").encode()
        self.send_response(207)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def dav() -> Iterator[tuple[str, type[Dav]]]:
    class Handler(Dav):
        mode: ClassVar[list[str]] = ["endless"]
        paths: ClassVar[list[str]] = []

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/dav", Handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def _store(endpoint: str) -> Store:
    return open_store(parse_store({"kind": "webdav", "endpoint": endpoint, "prefix": "lab1"},
                                  Path(".")))


def test_an_endless_tree_is_listed_to_a_bounded_depth_each_folder_once(
        dav: tuple[str, type[Dav]]) -> None:
    endpoint, handler = dav
    keys = _store(endpoint).keys("lab1")
    # lab1/ and x/ below it LIST_MAX_DEPTH times: one PROPFIND each, never again
    assert len(handler.paths) == LIST_MAX_DEPTH + 1, handler.paths
    assert len(set(handler.paths)) == len(handler.paths)
    assert keys[0] == "lab1/run.json" and len(keys) == LIST_MAX_DEPTH + 1
    assert max(k.count("/") for k in keys) == LIST_MAX_DEPTH + 1


@pytest.mark.parametrize("mode", ["text", "html"])
def test_an_answer_that_is_not_webdav_xml_is_a_store_error(
        dav: tuple[str, type[Dav]], mode: str) -> None:
    endpoint, handler = dav
    handler.mode[0] = mode
    with pytest.raises(StoreError, match=r"listing lab1: the answer is not WebDAV XML"):
        _store(endpoint).keys("lab1")
