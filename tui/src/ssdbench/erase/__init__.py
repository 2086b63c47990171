"""Secure erase (ATA security erase / sanitize, NVMe sanitize / format) and its verification.

Entry points: :func:`erase_drive`, :func:`choose_method`, :func:`target_from_drive`,
:func:`recover_leftover_password` (run at boot for drives the journal says still carry a
temporary password). See docs/erase.md.
"""

from __future__ import annotations

from ssdbench.erase.adapter import target_from_drive
from ssdbench.erase.ata import erase_timeout_s, recover_leftover_password
from ssdbench.erase.core import available_methods, choose_method, erase_drive, stage_hook
from ssdbench.erase.journal import (
    JsonPasswordJournal,
    MemoryPasswordJournal,
    PasswordEntry,
    PasswordJournal,
)
from ssdbench.erase.model import (
    ALL_METHODS,
    DISCARD,
    OVERWRITE,
    SECURE_METHODS,
    AtaSecurityState,
    Clock,
    EraseError,
    EraseOptions,
    EraseRecord,
    EraseTarget,
    NoEraseMethod,
    NvmeCaps,
    SystemClock,
    Verification,
    VerificationFailed,
)

__all__ = [
    "ALL_METHODS",
    "DISCARD",
    "OVERWRITE",
    "SECURE_METHODS",
    "AtaSecurityState",
    "Clock",
    "EraseError",
    "EraseOptions",
    "EraseRecord",
    "EraseTarget",
    "JsonPasswordJournal",
    "MemoryPasswordJournal",
    "NoEraseMethod",
    "NvmeCaps",
    "PasswordEntry",
    "PasswordJournal",
    "SystemClock",
    "Verification",
    "VerificationFailed",
    "available_methods",
    "choose_method",
    "erase_drive",
    "erase_timeout_s",
    "recover_leftover_password",
    "stage_hook",
    "target_from_drive",
]
