"""The e2e tier: the dev image booted in QEMU (TCG here, KVM where it works).

The dev image is built once per session (cached under build/dev-image/ across sessions;
rebuilt when an input changes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_root
from tests.e2e.rig import build_dev_image


@pytest.fixture(scope="session")
def dev_image() -> Path:
    require_root()
    return build_dev_image()
