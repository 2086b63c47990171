"""The Buildroot checks need a Buildroot tree (tests/buildroot/brtree.py finds or unpacks one,
offline), the kernel fragment check needs linux-source-6.12. Where either is missing those
checks do not run: each reports XFAIL with the reason and the session ends with a loud
banner, so such a machine never passes these checks silently."""

from __future__ import annotations

import pytest

NOT_RUN: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not NOT_RUN:
        return
    terminalreporter.write_sep("!", "BUILDROOT CHECKS DID NOT RUN", red=True, bold=True)
    for reason in sorted(set(NOT_RUN)):
        terminalreporter.write_line(f"  {reason}", red=True)
    if any(not r.startswith("kernel fragment") for r in NOT_RUN):
        terminalreporter.write_line(
            "  The external tree, defconfig, check-package and package list were NOT verified.",
            red=True,
        )
