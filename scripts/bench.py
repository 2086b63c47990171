#!/usr/bin/env python3
"""`make bench`: run every scripts/bench/bench_*.py and print their name=value lines.

Each benchmark is its own process (clean peak RSS); it prints `name=value` lines on stdout
and explains itself on stderr. Goals live in docs/benchmarks.md, not in timed tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = 0
    for script in sorted((HERE / "bench").glob("bench_*.py")):
        print(f"# {script.name}", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, str(script)], check=False)
        if proc.returncode != 0:
            print(f"# {script.name} failed with exit code {proc.returncode}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
