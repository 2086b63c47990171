"""Load the real tool outputs in tests/data/fixtures (header lines stripped)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "fixtures"
BUNDLES = Path(__file__).resolve().parents[2] / "data" / "bundles"
END_OF_HEADER = "# --- end of header; verbatim content follows ---"


def fixture_text(relpath: str) -> str:
    """The verbatim tool output: everything after the end-of-header line."""
    text = (FIXTURES / relpath).read_text(encoding="utf-8")
    marker = text.index(END_OF_HEADER)
    return text[text.index("\n", marker) + 1 :]


def all_fixture_files() -> list[str]:
    return sorted(
        str(p.relative_to(FIXTURES))
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.name != "README.md"
    )
