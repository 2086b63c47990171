"""Files ssdbench reads back (run.json, drive.json, the journals, a stick's results, a copy
of a store): they may have been edited, damaged or made by someone else.

* :func:`read_bytes` is the one way such a file is opened: a regular file only (a FIFO
  would block the reader for ever, a device or ``/proc`` file never ends), at most
  ``limit`` bytes (a 200 MB run.json is not a run's), and, with ``follow=False`` (the
  report, the fleet page), never through a symbolic link (a results folder's link points
  wherever its maker chose). Each of these is an OSError naming the file.
* :func:`read` and :func:`loads`: every way the text is not usable JSON is a ValueError with
  the reason, never another exception (json's parser recurses: a file nested 100,000
  levels deep raises RecursionError; a 5,000-digit number is Python's int-size ValueError).
  NaN and Infinity are read (ssdbench's own files may hold them); readers check numbers.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

JSON_LIMIT = 16 << 20  # bytes: the largest run.json of a PTS run is about 1 MB
_CHUNK = 1 << 20


class UnusableFile(OSError):
    """A file that is there but is not read: not a regular file, a link where none is
    followed, or larger than the reader's limit. The message names the file."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: Path, *, limit: int = JSON_LIMIT, follow: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them. UnusableFile (an
    OSError) for a FIFO, a device, a socket or a folder (opened without blocking, then
    checked: a FIFO without a writer never hangs the reader), for a symbolic link when
    ``follow`` is False, and for a file over ``limit`` bytes; OSError when it cannot be
    read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise UnusableFile(f"{path}: a symbolic link, not followed") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnusableFile(f"{path}: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise UnusableFile(f"{path}: {st.st_size:,} bytes, over the limit of "
                               f"{limit:,}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # a file that grows while it is read is cut here, not used
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UnusableFile(f"{path}: more than {limit:,} bytes, over the limit")
        return b"".join(chunks)
    finally:
        os.close(fd)


def loads(text: str | bytes) -> Any:
    """``json.loads``; ValueError (JSONDecodeError, UnicodeDecodeError, an over-long
    number, nesting too deep) for text that is not usable JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a results file") from None


def read(path: Path, *, limit: int = JSON_LIMIT, follow: bool = True) -> Any:
    """The JSON in ``path`` (UTF-8); OSError when it cannot be read or is not a regular
    file of at most ``limit`` bytes (:func:`read_bytes`), ValueError (see :func:`loads`)
    when it is not usable JSON."""
    data = read_bytes(path, limit=limit, follow=follow)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc}") from None
    return loads(text)
