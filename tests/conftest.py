"""Shared test fixtures. Tiers: tests/unit, tests/ui, tests/integration (root, loop
devices), tests/e2e (the dev image in QEMU). Nothing is skipped: a test that lacks what it
needs fails and says what to install (`make test` installs it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test needs root (loop devices); run `make test` as root")
