"""Where the emulated ATA drive keeps its data: a sparse file, or simdrive over NBD.

:class:`NbdBackend` is a minimal NBD client (stdlib only; fixed newstyle handshake,
NBD_OPT_GO, simple replies; the protocol is doc/proto.md of the NBD project) for
``scripts/simdrive start``'s unix socket. An erase becomes one WRITE_ZEROES without
NO_HOLE over the whole drive: simdrive deallocates it and, since it covers the drive,
resets its FTL (the ``sanitize`` event in truth.jsonl), as a real drive's erase does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import socket
import struct
import threading
from pathlib import Path
from typing import Protocol

NBDMAGIC, IHAVEOPT = 0x4E42444D41474943, 0x49484156454F5054
REPLY_MAGIC_OPT = 0x3E889045565A9
REQUEST_MAGIC, SIMPLE_REPLY_MAGIC = 0x25609513, 0x67446698
FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2
OPT_GO, REP_ACK, REP_INFO, INFO_EXPORT = 7, 1, 3, 0
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM, CMD_WRITE_ZEROES = 0, 1, 2, 3, 4, 6
MAX_REQUEST = 32 << 20


class Backend(Protocol):
    def read(self, offset: int, length: int) -> bytes: ...
    def write(self, offset: int, data: bytes) -> None: ...
    def trim(self, offset: int, length: int) -> None: ...
    def erase_all(self) -> None: ...
    def flush(self) -> None: ...


class FileBackend:
    """The sparse data.img: a hole reads back as zeros."""

    def __init__(self, path: Path, size: int) -> None:
        self.size = size
        if not path.exists():
            with open(path, "wb") as f:
                f.truncate(size)
        self.fd = os.open(path, os.O_RDWR)

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self.fd, length, offset).ljust(length, b"\0")

    def write(self, offset: int, data: bytes) -> None:
        os.pwrite(self.fd, data, offset)

    def trim(self, offset: int, length: int) -> None:
        length = max(0, min(length, self.size - offset))
        if not length:
            return
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        keep_size, punch_hole = 0x01, 0x02
        rc = libc.fallocate(self.fd, keep_size | punch_hole,
                            ctypes.c_long(offset), ctypes.c_long(length))
        if rc != 0:  # a filesystem without hole punching (9p): write zeros
            zeros = bytes(1 << 20)
            end = offset + length
            while offset < end:
                n = min(len(zeros), end - offset)
                os.pwrite(self.fd, zeros[:n], offset)
                offset += n

    def erase_all(self) -> None:
        self.trim(0, self.size)

    def flush(self) -> None:
        os.fsync(self.fd)


class NbdError(OSError):
    pass


class NbdBackend:
    """One NBD connection to a unix socket; requests one at a time (the ring is serial)."""

    def __init__(self, path: str, export: str = "") -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self._lock = threading.Lock()
        self._handle = 0
        magic, opt, _flags = struct.unpack(">QQH", self._recv(18))
        if magic != NBDMAGIC or opt != IHAVEOPT:
            raise NbdError(f"{path}: not a newstyle NBD server")
        self.sock.sendall(struct.pack(">I", FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
        name = export.encode()
        data = struct.pack(">I", len(name)) + name + struct.pack(">H", 0)
        self.sock.sendall(struct.pack(">QII", IHAVEOPT, OPT_GO, len(data)) + data)
        self.size = -1
        while True:
            rmagic, _opt, rtype, rlen = struct.unpack(">QIII", self._recv(20))
            body = self._recv(rlen)
            if rmagic != REPLY_MAGIC_OPT:
                raise NbdError("bad option reply magic")
            if rtype == REP_INFO and struct.unpack_from(">H", body)[0] == INFO_EXPORT:
                self.size = struct.unpack_from(">Q", body, 2)[0]
            elif rtype == REP_ACK:
                break
            elif rtype & 0x80000000:
                raise NbdError(f"NBD_OPT_GO refused: {rtype:#x} {body!r}")

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise NbdError("NBD server closed the connection")
            buf.extend(chunk)
        return bytes(buf)

    def _request(self, cmd: int, offset: int, length: int, payload: bytes = b"",
                 flags: int = 0) -> bytes:
        with self._lock:
            self._handle += 1
            self.sock.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, flags, cmd, self._handle,
                                          offset, length) + payload)
            magic, error, handle = struct.unpack(">IIQ", self._recv(16))
            if magic != SIMPLE_REPLY_MAGIC or handle != self._handle:
                raise NbdError("bad NBD reply")
            data = self._recv(length) if cmd == CMD_READ and not error else b""
        if error:
            raise NbdError(error, f"NBD command {cmd} at {offset}+{length}: error {error}")
        return data

    def _chunks(self, offset: int, length: int) -> list[tuple[int, int]]:
        return [(o, min(MAX_REQUEST, offset + length - o))
                for o in range(offset, offset + length, MAX_REQUEST)]

    def read(self, offset: int, length: int) -> bytes:
        return b"".join(self._request(CMD_READ, o, n) for o, n in self._chunks(offset, length))

    def write(self, offset: int, data: bytes) -> None:
        for o, n in self._chunks(offset, len(data)):
            self._request(CMD_WRITE, o, n, data[o - offset : o - offset + n])

    def trim(self, offset: int, length: int) -> None:
        for o, n in self._chunks(offset, max(0, min(length, self.size - offset))):
            self._request(CMD_TRIM, o, n)

    def erase_all(self) -> None:
        # WRITE_ZEROES without NBD_CMD_FLAG_NO_HOLE: the server may deallocate (MAY_TRIM).
        for o, n in self._chunks(0, self.size):
            self._request(CMD_WRITE_ZEROES, o, n)

    def flush(self) -> None:
        self._request(CMD_FLUSH, 0, 0)
