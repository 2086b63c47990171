"""Noticing drives that come and go without running a tool: a cheap poll of /sys/block that
the TUI and kiosk station mode run every few seconds, calling :func:`discover` only when it
changed."""

from __future__ import annotations

from ssdbench.system import Host


def block_devices_signature(host: Host) -> tuple[str, ...]:
    """What changes when a drive comes or goes: /sys/block names and sizes (a loop device
    being attached changes only its size; its name exists already)."""
    names = sorted(host.fs.listdir("/sys/block"))
    return tuple(f"{n}:{(host.fs.read_text(f'/sys/block/{n}/size') or '').strip()}"
                 for n in names)
