"""The Buildroot checks need a Buildroot tree (no downloads). Where there is none they do not
run: each test reports XFAIL with the reason and the session ends with a loud banner, so a
machine without the tree never passes these checks silently."""

from __future__ import annotations

import pytest

NOT_RUN: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not NOT_RUN:
        return
    terminalreporter.write_sep("!", "BUILDROOT CHECKS DID NOT RUN", red=True, bold=True)
    for reason in sorted(set(NOT_RUN)):
        terminalreporter.write_line(f"  {reason}", red=True)
    terminalreporter.write_line(
        "  The external tree, defconfig, check-package and package list were NOT verified.",
        red=True,
    )
