"""The erase room's secure erase as a stage hook (the engine gives it to each run; the
erase record's stage asks again after a PSID revert). Here, below both, so that neither
imports the other: the engine imports the stages, the stages never import the engine."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ssdbench.devices.model import Drive
from ssdbench.stages.base import RunContext, SecureErase, StageFailed

ERASE_JOURNAL = "erase-journal.json"


def secure_erase_hook(drive: Drive, results_root: Path) -> SecureErase | None:
    """The erase room's secure erase for this drive, or None (then erase_fallback applies).
    Any exception inside it becomes StageFailed with the reason."""
    try:
        from ssdbench import erase
    except ImportError:
        return None
    if not set(drive.erase_methods or ()) & set(erase.SECURE_METHODS):
        return None
    hook = erase.stage_hook(
        erase.target_from_drive(drive),
        journal=erase.JsonPasswordJournal(results_root / ERASE_JOURNAL),
    )

    def run(ctx: RunContext) -> Mapping[str, Any]:
        try:
            return hook(ctx)
        except erase.EraseError as exc:
            raise StageFailed(f"secure erase failed: {exc}") from exc
        except StageFailed:
            raise
        except Exception as exc:
            raise StageFailed(f"secure erase failed: {type(exc).__name__}: {exc}") from exc

    return run
