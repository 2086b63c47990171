"""The devices room's error for tool output it cannot understand (apart from the model, so
that every parser can import it without importing the model)."""

from __future__ import annotations


class ParseError(ValueError):
    """A tool's output could not be understood (names the tool and what was wrong)."""
