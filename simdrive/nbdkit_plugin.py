# nbdkit Python plugin serving the simulated SSD (run by `scripts/simdrive start`):
#   nbdkit --unix SOCK python simdrive/nbdkit_plugin.py preset=NAME size=BYTES fob=IOPS \
#       data=DIR/data.img truth=DIR/truth.jsonl [seed=N serial=S model=M sector_size=512]
# A counterfeit (fake=wrap|drop real_size=BYTES) claims size= but holds real_size: beyond it
# writes wrap onto offset mod real_size, or vanish (reads give zeros).
# The FTL state lives at module level behind one lock (multi-conn: open() runs per connection).
# Each request is charged to the model under the lock, then sleeps until its completion time
# (outside the lock), so several requests are in flight and the IOPS are the model's.
"""nbdkit plugin: the simulated SSD (see docs/simdrive.md)."""

from __future__ import annotations

import builtins
import ctypes
import errno
import json
import math
import os
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import nbdkit  # type: ignore[import-not-found]  # provided by nbdkit's python plugin

from simdrive.ftl import FTL, record
from simdrive.presets import get as get_preset

API_VERSION = 2



class _State:
    """The server's one drive (module level: every connection sees the same model)."""

    def __init__(self) -> None:
        self.cfg: dict[str, str] = {}
        self.ftl: FTL | None = None
        self.fd = -1
        self.truth: Any = None
        self.last_free = 0
        # byte ranges zeroed with MAY_TRIM since the last write (merged, sorted): when they
        # cover the drive, it was a whole-device zero (chunks may arrive in any order)
        self.zeroed: list[tuple[int, int]] = []
        self.fake = ""  # "" | "wrap" | "drop": a counterfeit (docs/simdrive.md)
        self.real = 0  # the bytes it holds (the FTL's size)


_st = _State()
_cfg = _st.cfg
_lock = threading.Lock()
_stop = threading.Event()
_libc = ctypes.CDLL(None, use_errno=True)
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02


def _punch(offset: int, length: int) -> None:
    if length <= 0:
        return
    rc = _libc.fallocate(
        ctypes.c_int(_st.fd), ctypes.c_int(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE),
        ctypes.c_long(offset), ctypes.c_long(length),
    )
    if rc != 0:  # no hole punching on this filesystem: write zeroes
        zeros = bytes(min(length, 1 << 20))
        pos = offset
        while pos < offset + length:
            n = min(len(zeros), offset + length - pos)
            os.pwrite(_st.fd, zeros[:n], pos)
            pos += n


def _emit(obj: dict[str, Any]) -> None:
    _st.truth.write(json.dumps(obj, separators=(",", ":")) + "\n")


def _flush_truth(everything: bool = False) -> float:
    """Write the finished seconds and the pending events (caller holds the lock); the epoch
    second before which the log now has every second (inf with ``everything``)."""
    assert _st.ftl is not None
    now = time.time()
    for ev in _st.ftl.events:
        _emit(ev)
    _st.ftl.events.clear()
    for sec, row in _st.ftl.final_bins(now, everything):
        line = record(sec, row, _st.last_free)
        _st.last_free = line["free_blocks"]
        _emit(line)
    _st.truth.flush()
    return math.inf if everything else math.floor(now)


def _say_complete(before: float) -> None:
    """DIR/truth.complete: the epoch second before which truth.jsonl has every second ("inf"
    once the drive stopped), rewritten on every tick: what a reader waits for."""
    path = os.path.join(os.path.dirname(os.path.abspath(_cfg["truth"])), "truth.complete")
    with builtins.open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{before}\n")
    os.replace(path + ".tmp", path)


def _ticker() -> None:
    """Every 0.5 s: write the finished seconds; serve a host-side sanitize request
    (`scripts/simdrive sanitize`: DIR/sanitize.request, removed when done)."""
    request = os.path.join(os.path.dirname(os.path.abspath(_cfg["data"])), "sanitize.request")
    while not _stop.wait(0.5):
        with _lock:
            if _st.ftl is None or _st.truth is None:
                continue
            if os.path.exists(request):
                now = time.time()
                _st.ftl.sanitize(now)
                _punch(0, _st.ftl.size)
                _st.ftl.events.append({"event": "sanitize", "time": now, "via": "host"})
                _st.zeroed = []
                os.unlink(request)
            # under the lock: cleanup's "inf" is never overwritten by a tick's second
            _say_complete(_flush_truth())



def config(key: str, value: str) -> None:
    known = ("preset", "size", "fob", "data", "truth", "seed", "serial", "model", "sector_size",
             "fake", "real_size")
    if key not in known:
        raise RuntimeError(f"simdrive: unknown parameter {key!r} (known: {', '.join(known)})")
    _cfg[key] = value


def config_complete() -> None:
    for key in ("preset", "size", "fob", "data", "truth"):
        if key not in _cfg:
            raise RuntimeError(f"simdrive: missing parameter {key}=")


def thread_model() -> int:
    return int(nbdkit.THREAD_MODEL_PARALLEL)


def get_ready() -> None:
    size = int(_cfg["size"])
    _st.fake = _cfg.get("fake", "")
    _st.real = int(_cfg.get("real_size", size)) if _st.fake else size
    _st.ftl = FTL(get_preset(_cfg["preset"]), _st.real, float(_cfg["fob"]),
                  int(_cfg.get("seed", "1")))
    _st.fd = os.open(_cfg["data"], os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(_st.fd, _st.real)
    _st.truth = builtins.open(_cfg["truth"], "a", encoding="utf-8")  # noqa: SIM115
    _st.last_free = _st.ftl.free_blocks
    _emit({
        "event": "start", "time": time.time(), "pid": os.getpid(), "preset": _cfg["preset"],
        "size": _st.real, "claimed_size": size, "fake": _st.fake,
        "sector_size": int(_cfg.get("sector_size", "512")),
        "serial": _cfg.get("serial", ""), "model": _cfg.get("model", ""),
        "personality": _st.ftl.p.as_dict(), "geometry": _st.ftl.geometry(),
    })
    _st.truth.flush()


def after_fork() -> None:
    threading.Thread(target=_ticker, name="simdrive-truth", daemon=True).start()


def cleanup() -> None:
    _stop.set()
    if _st.ftl is not None and _st.truth is not None:
        with _lock:
            _flush_truth(everything=True)
            _emit({"event": "stop", "time": time.time(), "totals": {
                "host_pages": _st.ftl.totals.host_pages, "nand_pages": _st.ftl.totals.nand_pages,
                "gc_moves": _st.ftl.totals.gc_moves, "erases": _st.ftl.totals.erases}})
            _st.truth.close()
            _say_complete(math.inf)


def open(readonly: bool) -> int:
    return 1


def get_size(h: int) -> int:
    return int(_cfg["size"])


def can_multi_conn(h: int) -> bool:
    return True  # one model, one clock: a flush on any connection covers every connection


def can_fua(h: int) -> int:
    return int(nbdkit.FUA_NATIVE)


def can_trim(h: int) -> bool:
    return True


def can_zero(h: int) -> bool:
    return True


def can_fast_zero(h: int) -> bool:
    return True


def can_flush(h: int) -> bool:
    return True


def _sleep_until(done: float) -> None:
    delay = done - time.time()
    if delay > 0:
        time.sleep(delay)


def _answer_write(done: float) -> None:
    """Reply to a host write at its completion time and log when the reply went out (the
    time is read under the lock: a truth flush never passes a reply)."""
    assert _st.ftl is not None
    _sleep_until(done)
    with _lock:
        _st.ftl.replied(time.time())


def _segments(offset: int, length: int) -> list[tuple[int, int | None, int]]:
    """(offset within the request, where it lands in the drive or None, length): one
    piece for a genuine drive; a counterfeit's request is cut where its real capacity ends
    (a wrap lands at offset mod real, a drop nowhere)."""
    if not _st.fake:
        return [(0, offset, length)]
    out: list[tuple[int, int | None, int]] = []
    pos, end = offset, offset + length
    while pos < end:
        if pos < _st.real:
            n = min(end, _st.real) - pos
            out.append((pos - offset, pos, n))
        elif _st.fake == "wrap":
            phys = pos % _st.real
            n = min(end - pos, _st.real - phys)
            out.append((pos - offset, phys, n))
        else:
            n = end - pos
            out.append((pos - offset, None, n))
        pos += n
    return out


def pread(h: int, buf: Any, offset: int, flags: int) -> None:
    assert _st.ftl is not None
    segs = _segments(offset, len(buf))
    with _lock:
        now = time.time()
        done = max((_st.ftl.read(now, phys, n) for _r, phys, n in segs if phys is not None),
                   default=now)
    view = memoryview(buf)
    for rel, phys, n in segs:
        piece = view[rel:rel + n]
        got = 0 if phys is None else os.preadv(_st.fd, [piece], phys)
        if got < n:
            piece[got:] = bytes(n - got)
    _sleep_until(done)


def pwrite(h: int, buf: Any, offset: int, flags: int) -> None:
    assert _st.ftl is not None
    segs = [(rel, phys, n) for rel, phys, n in _segments(offset, len(buf)) if phys is not None]
    if not segs:
        return  # a counterfeit's write past its capacity: acknowledged, kept nowhere
    view = memoryview(buf)
    with _lock:
        now = time.time()
        if _st.ftl.bins and min(_st.ftl.bins) < int(now):
            _flush_truth()
        done = now
        for rel, phys, n in segs:
            assert phys is not None
            done = max(done, _st.ftl.write(now, phys, n))
            os.pwrite(_st.fd, view[rel:rel + n], phys)
        _st.zeroed = []
    _answer_write(done)


def flush(h: int, flags: int) -> None:
    assert _st.ftl is not None
    with _lock:
        done = _st.ftl.flush(time.time())
    _sleep_until(done)


def trim(h: int, count: int, offset: int, flags: int) -> None:
    assert _st.ftl is not None
    if _st.fake:  # a counterfeit trims what it holds of the range (no whole-drive logic)
        for _rel, phys, n in _segments(offset, count):
            if phys is not None:
                _trim(phys, n)
        return
    _trim(offset, count)


def _trim(offset: int, count: int) -> None:
    assert _st.ftl is not None
    with _lock:
        now = time.time()
        done, mapped, gone = _st.ftl.trim(now, offset, count)
        if _st.ftl.p.rzat:
            _punch(offset, count)
        _st.ftl.events.append({"event": "trim", "time": now, "offset": offset, "length": count,
                            "mapped_pages": mapped, "invalidated_pages": gone})
    _sleep_until(done)


def _add_zeroed(offset: int, count: int) -> bool:
    """Record a MAY_TRIM zero; True when the zeroed ranges now cover the whole drive."""
    assert _st.ftl is not None
    spans = sorted([*_st.zeroed, (offset, offset + count)])
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    _st.zeroed = merged
    return merged[0][0] <= 0 and merged[0][1] >= _st.ftl.size


def zero(h: int, count: int, offset: int, flags: int) -> None:
    """A zero with MAY_TRIM deallocates its range (always effective, cheap: a Write Zeroes
    with deallocate, or one chunk of QEMU's Format NVM); when such zeros, in any order and
    with no write between them, have covered the whole drive it was a sanitize (FTL reset).
    A zero without MAY_TRIM (NO_HOLE) writes zero pages at the normal write cost."""
    assert _st.ftl is not None
    may_trim = bool(flags & nbdkit.FLAG_MAY_TRIM)
    if _st.fake:  # a counterfeit: its pieces, each as a zero of what it holds
        pieces = [(phys, n) for _rel, phys, n in _segments(offset, count) if phys is not None]
        if len(pieces) != 1 or pieces[0] != (offset, count):
            for phys, n in pieces:
                zero(h, n, phys, flags)
            return
    with _lock:
        now = time.time()
        if may_trim:
            _st.ftl.deallocate(offset, count)
            _punch(offset, count)
            if _add_zeroed(offset, count):
                done = _st.ftl.sanitize(now)
                _punch(0, _st.ftl.size)
                _st.ftl.events.append({"event": "sanitize", "time": now, "via": "zero"})
                _st.zeroed = []
            else:
                done = _st.ftl.flush(now)
                _st.ftl.events.append({"event": "zero", "time": now, "offset": offset,
                                       "length": count, "deallocated": True})
        else:
            if flags & nbdkit.FLAG_FAST_ZERO:
                nbdkit.set_error(errno.ENOTSUP)
                raise RuntimeError("simdrive: a zero without MAY_TRIM is a slow write")
            _st.zeroed = []
            done = _st.ftl.write(now, offset, count)
            _punch(offset, count)
            _st.ftl.events.append({"event": "zero", "time": now, "offset": offset,
                                   "length": count, "deallocated": False})
    if may_trim:
        _sleep_until(done)
    else:  # a host write, answered like pwrite's
        _answer_write(done)
