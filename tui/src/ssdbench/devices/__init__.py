"""Drive discovery, safety classification and support bundles.

Public entry points: :func:`discover` (host → drives), :func:`find_drive` (spec → drive),
:class:`Drive`; record/replay in :mod:`ssdbench.devices.bundle`.
"""

from __future__ import annotations

from ssdbench.devices.discover import DriveNotFound, discover, find_drive
from ssdbench.devices.hotplug import block_devices_signature
from ssdbench.devices.model import (
    ERASE_METHODS,
    AtaIdentify,
    AtaSanitize,
    AtaSecurity,
    Drive,
    NvmeController,
    NvmeInfo,
    NvmeNamespace,
    ParseError,
    SmartSnapshot,
    ToolProblem,
)

__all__ = [
    "ERASE_METHODS",
    "AtaIdentify",
    "AtaSanitize",
    "AtaSecurity",
    "Drive",
    "DriveNotFound",
    "NvmeController",
    "NvmeInfo",
    "NvmeNamespace",
    "ParseError",
    "SmartSnapshot",
    "ToolProblem",
    "block_devices_signature",
    "discover",
    "find_drive",
]
