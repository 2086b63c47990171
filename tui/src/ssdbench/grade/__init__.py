"""Grading a drive by its own counters (docs/grading.md)."""
