"""Typed messages: workers post them, the app's handlers change widgets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message

from ssdbench.devices import Drive
from ssdbench.progress import Progress
from ssdbench.ui.engine import DriveOutcome


@dataclass(frozen=True)
class DestinationView:
    """Where results go (ssdbench.results.destination.Destination, or the default)."""

    path: Path  # the results folder runs write into (<root>/ssdbench)
    on_stick: bool
    label: str  # short, for the top bar
    description: str  # one line: why RAM, which stick
    root: Path | None = None  # the destination root (mount point or RAM folder)


class DrivesDiscovered(Message):
    def __init__(self, drives: list[Drive]) -> None:
        super().__init__()
        self.drives = drives


class DiscoveryFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class BlockDevicesChanged(Message):
    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__()
        self.names = names


class DestinationFound(Message):
    def __init__(self, destination: DestinationView, copied: int = 0) -> None:
        super().__init__()
        self.destination = destination
        self.copied = copied  # files copied from RAM onto a stick that just appeared


class RunProgress(Message):
    def __init__(self, event: Progress) -> None:
        super().__init__()
        self.event = event


class RunCommand(Message):
    def __init__(self, drive: str, command: str) -> None:
        super().__init__()
        self.drive = drive
        self.command = command


class DriveFinished(Message):
    def __init__(self, outcome: DriveOutcome) -> None:
        super().__init__()
        self.outcome = outcome


class PlanFinished(Message):
    def __init__(self, notes: list[str]) -> None:
        super().__init__()
        self.notes = notes


class UnfinishedFound(Message):
    """The journal (state.json) lists plans that did not end (power loss, cancel)."""

    def __init__(self, entries: dict[str, dict[str, Any]], error: str | None = None) -> None:
        super().__init__()
        self.entries = entries  # consent_id → journal entry
        self.error = error
