"""The engine, CLI commands and kiosk mode run without Textual loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ssdbench

CHECK = """
import importlib, sys
import ssdbench.cli
ssdbench.cli.build_parser()
for name in sys.argv[1:]:
    importlib.import_module(name)
bad = [m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'ssdbench.ui'))]
print(bad)
sys.exit(1 if bad else 0)
"""


def engine_modules() -> list[str]:
    root = Path(ssdbench.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        if "ui" in parts[1:2] or parts[-1] == "__main__":
            continue
        names.append(".".join(parts))
    return names


def test_engine_modules_do_not_load_textual() -> None:
    modules = engine_modules()
    assert "ssdbench.system" in modules
    proc = subprocess.run([sys.executable, "-c", CHECK, *modules], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_command_line_starts_without_numpy_or_matplotlib() -> None:
    """`ssdbench list`, `--help` and kiosk start without the heavy libraries: under QEMU's
    emulation importing numpy alone takes seconds (they load when a stage needs them)."""
    code = (
        "import sys, ssdbench.cli as c; c.build_parser();"
        "heavy = [m for m in ('numpy', 'matplotlib', 'textual') if m in sys.modules];"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
