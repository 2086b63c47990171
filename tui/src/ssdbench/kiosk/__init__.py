"""Unattended kiosk mode: config, drive choice, full-screen progress (no Textual)."""
