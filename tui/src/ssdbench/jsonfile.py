"""JSON from files ssdbench reads back (run.json, drive.json, the journals, a stick's
results): they may have been edited, damaged or made by someone else, so every way the
text is not usable JSON is a ValueError with the reason, never another exception (json's
parser recurses: a file nested 100,000 levels deep raises RecursionError; a 5,000-digit
number is Python's int-size ValueError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def loads(text: str | bytes) -> Any:
    """``json.loads``; ValueError (JSONDecodeError, UnicodeDecodeError, an over-long
    number, nesting too deep) for text that is not usable JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a results file") from None


def read(path: Path) -> Any:
    """The JSON in ``path`` (UTF-8); OSError when it cannot be read, ValueError (see
    :func:`loads`) when it is not usable JSON."""
    return loads(path.read_text(encoding="utf-8"))
