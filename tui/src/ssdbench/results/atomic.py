"""Atomic, durable writes: a pulled plug leaves the old file or the new one, never half.

Every results file is written to a temporary name in the same directory, flushed and
fsynced, renamed over the final name, and the directory is fsynced. The temporary name is
the writer's own (``.NAME.tmp-PID-THREAD``): threads writing one file at once (the station's
erases announcing into kiosk.txt) never take each other's temporary file away. The
temporary file is created new (``O_EXCL``) and never through a link (``O_NOFOLLOW``): a
link planted under that name is removed, not written through.

Writers over a folder ssdbench did not make itself (``ssdbench report``, ``fleet``) give
``root``: the file's folder, links followed, must be ``root`` or inside it, and the file
itself must not be a link (:func:`inside`), else :class:`OutsideRoot` and nothing is
written. A results folder from another bench can hold any link or name.
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


class OutsideRoot(OSError):
    """A write refused: it would land outside the output folder or through a link."""


def inside(root: Path, path: Path) -> Path:
    """``path`` when a write to it stays in ``root``: its folder, every link followed (and
    ``..`` taken away), is ``root`` (links followed) or under it, its name is a name (not
    ``.``/``..``), and it is not a link itself. OutsideRoot otherwise."""
    path = Path(path)
    real_root = Path(os.path.realpath(root))
    folder = Path(os.path.realpath(path.parent))
    if path.name in ("", ".", "..") or not (folder == real_root
                                             or folder.is_relative_to(real_root)):
        raise OutsideRoot(f"{path}: outside {root}: not written")
    if path.is_symlink():
        raise OutsideRoot(f"{path}: a symbolic link: not written through")
    return path


def write_bytes(path: Path, data: bytes, *, root: Path | None = None) -> None:
    """``data`` into ``path`` atomically; with ``root``, only inside it (:func:`inside`)."""
    path = Path(path)
    if root is not None:
        inside(root, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if root is not None:
        inside(root, path)  # the folders made: checked again where they now lead
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.unlink(missing_ok=True)  # left by a crash (or planted): a link goes, not its target
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text(path: Path, text: str, *, root: Path | None = None) -> None:
    write_bytes(path, text.encode("utf-8"), root=root)


def write_json(path: Path, obj: Any, *, root: Path | None = None) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n",
               root=root)
