"""The erase room's secure erase as a stage hook (the engine gives it to each run; the
erase record's stage asks again after a PSID revert). Here, below both, so that neither
imports the other: the engine imports the stages, the stages never import the engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench.devices.model import Drive
from ssdbench.stages.base import RunContext, SecureErase, StageFailed

ERASE_JOURNAL = "erase-journal.json"


@dataclass(frozen=True)
class EraseHook:
    """The erase room's erase as a ``RunContext.secure_erase``. ``fallback_only``: the drive
    has no firmware erase, so the hook only serves a plan with ``erase_fallback =
    "overwrite"`` (the erase stage handles "fail" and "discard" itself)."""

    hook: Callable[[Any], Mapping[str, Any]]
    fallback_only: bool = False

    def __call__(self, ctx: RunContext) -> Mapping[str, Any]:
        from ssdbench import erase

        try:
            return self.hook(ctx)
        except erase.EraseError as exc:
            raise StageFailed(f"secure erase failed: {exc}") from exc
        except StageFailed:
            raise
        except Exception as exc:
            raise StageFailed(f"secure erase failed: {type(exc).__name__}: {exc}") from exc

    def serves(self, ctx: RunContext) -> bool:
        return not self.fallback_only or ctx.params.erase_fallback == "overwrite"


def secure_erase_hook(drive: Drive, results_root: Path) -> SecureErase | None:
    """The erase room's erase for this drive, or None (then erase_fallback applies).
    A drive with no firmware erase gets a ``fallback_only`` hook: the Clear by overwrite
    when the plan allows it. Any exception inside it becomes StageFailed with the reason."""
    try:
        from ssdbench import erase
    except ImportError:
        return None
    secure = bool(set(drive.erase_methods or ()) & set(erase.SECURE_METHODS))
    hook = erase.stage_hook(
        erase.target_from_drive(drive),
        journal=erase.JsonPasswordJournal(results_root / ERASE_JOURNAL),
    )
    return EraseHook(hook, fallback_only=not secure)


def serves(hook: SecureErase | None, ctx: RunContext) -> bool:
    """Whether the erase stage should call ``hook`` (a fallback-only hook serves only a plan
    with ``erase_fallback = "overwrite"``)."""
    if hook is None:
        return False
    check = getattr(hook, "serves", None)
    return bool(check(ctx)) if callable(check) else True
