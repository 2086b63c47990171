"""Pilot helpers: the app built by the same factory as the CLI, on replayed drives."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ssdbench.devices.bundle import load_bundle
from ssdbench.system import Host
from ssdbench.ui.app import SsdbenchApp, build_app
from ssdbench.ui.engine import Engine
from ssdbench.ui.messages import DestinationView

BUNDLES = Path(__file__).resolve().parent.parent / "data" / "bundles"
LOOP_BUNDLE = BUNDLES / "this-machine-virtio-loop"  # loop1 (free) + vda (boot, protected)


def replay_host(bundle: Path = LOOP_BUNDLE) -> Host:
    b = load_bundle(bundle)
    return Host(b.runner, b.fs)


def ram_destination(_host: Host) -> DestinationView:
    """A stick destination (no toast at start: snapshots stay stable); tests pass
    results_root for where files really go."""
    return DestinationView(Path("/nonexistent/ssdbench"), True, "stick (test)",
                           "test destination", Path("/nonexistent"))


def make_app(engine: Engine | None = None, host: Host | None = None,
             results_root: Path | None = None) -> SsdbenchApp:
    return build_app(host or replay_host(), engine, results_root=results_root,
                     poll_interval=None, destination_finder=ram_destination)


async def wait_for(pilot: object, condition: Callable[[], bool], timeout: float = 30.0,
                   what: str = "condition") -> None:
    """Let the app run until ``condition()`` holds (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)  # type: ignore[attr-defined]


@pytest.fixture
def app_factory() -> Callable[..., SsdbenchApp]:
    return make_app
