# An nbdkit python plugin (API 2): a counterfeit drive for tests/integration/
# test_capacity_fakes.py, which serves it through nbdfuse as a loop device.
#
#   nbdkit --unix SOCK python nbdkit_capacity_fake.py data=FILE size=CLAIMED real=REAL \
#       mode=genuine|wrap|drop cache=BYTES
#
# It claims ``size`` bytes and holds ``real`` in FILE (sparse): beyond that, writes wrap
# (byte x is byte x mod real) or vanish (reads give zeros). ``cache``: the last ``cache``
# bytes written (by 4 KiB page of the claimed address, least recently written out first)
# are held in front of that, and a flush request does not write them out: a caching fake
# reads back its last writes, whatever it holds behind them.

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

import nbdkit  # type: ignore[import-not-found]

API_VERSION = 2
PAGE = 4096
SECTOR = 512
_cfg: dict[str, str] = {}
_lock = threading.Lock()
_cache: OrderedDict[int, bytes] = OrderedDict()
_state = {"fd": -1}


def config(key: str, value: str) -> None:
    _cfg[key] = value


def config_complete() -> None:
    size, real = int(_cfg["size"]), int(_cfg.get("real", _cfg["size"]))
    if _cfg.get("mode", "genuine") not in ("genuine", "wrap", "drop") or not 0 < real <= size \
            or real % SECTOR or size % SECTOR:
        raise RuntimeError("size, real (sectors) and mode genuine|wrap|drop, please")
    _state["fd"] = os.open(_cfg["data"], os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(_state["fd"], real)


def thread_model() -> int:
    return int(nbdkit.THREAD_MODEL_SERIALIZE_ALL_REQUESTS)


def open(readonly: bool) -> int:  # nbdkit's name for it
    return 1


def get_size(h: int) -> int:
    return int(_cfg["size"])


def can_flush(h: int) -> bool:
    return True


def can_trim(h: int) -> bool:
    return True


def _where(offset: int) -> int | None:
    real = int(_cfg.get("real", _cfg["size"]))
    if offset < real or _cfg.get("mode", "genuine") == "genuine":
        return offset
    return offset % real if _cfg["mode"] == "wrap" else None


def _put(offset: int, data: bytes) -> None:
    """Onto the medium, sector by sector (a sector beyond a drop's real size vanishes)."""
    start = _where(offset)
    if start is not None and _where(offset + len(data) - SECTOR) == start + len(data) - SECTOR:
        os.pwrite(_state["fd"], data, start)
        return
    for s in range(0, len(data), SECTOR):
        where = _where(offset + s)
        if where is not None:
            os.pwrite(_state["fd"], data[s:s + SECTOR], where)


def _get(offset: int, length: int) -> bytes:
    start = _where(offset)
    if start is not None and _where(offset + length - SECTOR) == start + length - SECTOR:
        return os.pread(_state["fd"], length, start).ljust(length, b"\0")
    out = bytearray()
    for s in range(0, length, SECTOR):
        where = _where(offset + s)
        out += bytes(SECTOR) if where is None else os.pread(_state["fd"], SECTOR, where).ljust(
            SECTOR, b"\0")
    return bytes(out)


def pread(h: int, buf: Any, offset: int, flags: int) -> None:
    with _lock:
        out = bytearray()
        pos, end = offset, offset + len(buf)
        while pos < end:
            page = pos - pos % PAGE
            n = min(end - pos, page + PAGE - pos)
            held = _cache.get(page)
            out += held[pos - page:pos - page + n] if held is not None else _get(pos, n)
            pos += n
        buf[:] = out


def pwrite(h: int, buf: Any, offset: int, flags: int) -> None:
    data = bytes(buf)
    limit = int(_cfg.get("cache", "0")) // PAGE
    with _lock:
        if not limit:
            _put(offset, data)
            return
        pos = 0
        while pos < len(data):
            at = offset + pos
            page = at - at % PAGE
            n = min(len(data) - pos, page + PAGE - at)
            old = _cache.get(page)
            if old is None and n < PAGE:
                old = _get(page, PAGE)
            whole = data[pos:pos + n] if n == PAGE else (
                old[:at - page] + data[pos:pos + n] + old[at - page + n:])  # type: ignore[index]
            _cache[page] = whole
            _cache.move_to_end(page)
            while len(_cache) > limit:
                _put(*_cache.popitem(last=False))
            pos += n


def flush(h: int, flags: int) -> None:
    pass  # the caching fake keeps its cache; the medium is a file the kernel flushes


def trim(h: int, count: int, offset: int, flags: int) -> None:
    """Reads as zeros afterwards (written as zeros, 1 MiB at a time)."""
    with _lock:
        for page in [p for p in _cache if offset <= p < offset + count]:
            _cache.pop(page)
        for at in range(offset, offset + count, 1 << 20):
            _put(at, bytes(min(1 << 20, offset + count - at)))
