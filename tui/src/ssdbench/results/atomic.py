"""Atomic, durable writes: a pulled plug leaves the old file or the new one, never half.

Every results file is written to a temporary name in the same directory, flushed and
fsynced, renamed over the final name, and the directory is fsynced. The temporary name is
the writer's own (``.NAME.tmp-PID-THREAD``): threads writing one file at once (the station's
erases announcing into kiosk.txt) never take each other's temporary file away.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def is_temp(name: str) -> bool:
    """A temporary file of :func:`write_bytes` (``.NAME.tmp-PID-THREAD``): never a result,
    torn when left behind."""
    return name.startswith(".") and ".tmp-" in name


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems (vfat on some kernels) refuse fsync on a directory
    finally:
        os.close(fd)


def write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
