"""Subcommands of the `ssdbench` command line, one module each.

Each module defines ``register(subparsers)`` that adds its parser and sets
``func=<callable(args) -> int>`` as a default.  Modules import the engine only: never
``ssdbench.ui`` (the TUI is started by cli.py when no subcommand is given).
"""
