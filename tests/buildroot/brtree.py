"""Helpers for the Buildroot external-tree checks: find the pinned Buildroot tree, run its
kconfig / check-package / show-info without downloading anything, and render the package
list kept in docs/buildroot.md.

`python tests/buildroot/brtree.py docs` rewrites that list from `make show-info`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
EXTERNAL = REPO / "buildroot-external"
DEFCONFIG_NAME = "ssdbench_x86_64_defconfig"
DEFCONFIG = EXTERNAL / "configs" / DEFCONFIG_NAME
BUILD_SCRIPT = REPO / "scripts" / "build-image.sh"
DOCS = REPO / "docs" / "buildroot.md"
# Where the checks look for a Buildroot tree when BUILDROOT_DIR is not set (docs/buildroot.md).
DEFAULT_TREES = (Path("/work/buildroot"),)
DOCS_BEGIN = "<!-- show-info packages: begin (python tests/buildroot/brtree.py docs) -->"
DOCS_END = "<!-- show-info packages: end -->"

_SYMBOL_SET = re.compile(r"^(BR2_\w+)=(.*)$")
_SYMBOL_UNSET = re.compile(r"^# (BR2_\w+) is not set$")


class NoTree(Exception):
    """No Buildroot tree to run the checks against."""


def pinned_version() -> str:
    match = re.search(r"^BUILDROOT_VERSION=(\S+)$", BUILD_SCRIPT.read_text(), re.M)
    if match is None:
        raise AssertionError(f"{BUILD_SCRIPT}: no BUILDROOT_VERSION= line")
    return match.group(1)


def tree_version(tree: Path) -> str:
    match = re.search(r"^export BR2_VERSION := (\S+)$", (tree / "Makefile").read_text(), re.M)
    if match is None:
        raise AssertionError(f"{tree}/Makefile: no BR2_VERSION")
    return match.group(1)


def candidate_trees() -> list[Path]:
    env = os.environ.get("BUILDROOT_DIR")
    if env:
        return [Path(env)]
    return [*DEFAULT_TREES, REPO / "build" / f"buildroot-{pinned_version()}"]


def find_tree() -> Path:
    """The Buildroot tree to check against; raises NoTree naming where it looked."""
    looked = candidate_trees()
    for tree in looked:
        if (tree / "Makefile").is_file() and (tree / "utils" / "check-package").is_file():
            return tree
    raise NoTree(
        "no Buildroot tree at "
        + ", ".join(str(t) for t in looked)
        + f"; set BUILDROOT_DIR to a Buildroot {pinned_version()} tree (docs/buildroot.md)"
    )


def run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def brmake(tree: Path, out: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    return run(
        ["make", "-s", "--no-print-directory", f"BR2_EXTERNAL={EXTERNAL}", f"O={out}", *targets],
        cwd=tree,
    )


def symbols(text: str) -> dict[str, str | None]:
    """BR2_ symbols of a defconfig / .config: value, or None for `# X is not set`."""
    found: dict[str, str | None] = {}
    for line in text.splitlines():
        if m := _SYMBOL_SET.match(line):
            found[m.group(1)] = m.group(2)
        elif m := _SYMBOL_UNSET.match(line):
            found[m.group(1)] = None
    return found


def dropped_symbols(defconfig: str, dotconfig: str) -> list[str]:
    """Lines of `defconfig` that the resolved `.config` does not honour (unknown symbol or
    unmet dependency), each with what .config has instead."""
    have = symbols(dotconfig)
    problems = []
    for name, value in symbols(defconfig).items():
        got = have.get(name, "<absent>")
        if value is None:
            if got not in (None, "<absent>"):
                problems.append(f"# {name} is not set -> {name}={got}")
        elif got != value:
            problems.append(f"{name}={value} -> {got if got is not None else 'not set'}")
    return problems


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    kind: str  # "target", "host" or "rootfs"/"toolchain"...


def packages(show_info: str) -> list[Package]:
    info = json.loads(show_info)
    return sorted(
        (
            Package(name, str(v.get("version", "")), str(v.get("type", "")))
            for name, v in info.items()
        ),
        key=lambda p: (p.kind != "target", p.name),
    )


def docs_table(pkgs: list[Package], version: str) -> str:
    rows = [
        DOCS_BEGIN,
        f"Buildroot {version}, `make show-info` of `{DEFCONFIG_NAME}` ({len(pkgs)} entries):",
        "",
        "| package | version | type |",
        "|---|---|---|",
    ]
    rows += [f"| {p.name} | {p.version or '-'} | {p.kind} |" for p in pkgs]
    rows.append(DOCS_END)
    return "\n".join(rows)


def docs_block(text: str) -> str | None:
    start, end = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(DOCS_END)]


def show_info(tree: Path, out: Path) -> str:
    configured = brmake(tree, out, DEFCONFIG_NAME)
    if configured.returncode:
        raise AssertionError(configured.stdout + configured.stderr)
    result = brmake(tree, out, "show-info")
    if result.returncode:
        raise AssertionError(result.stdout + result.stderr)
    return result.stdout


def main(argv: list[str]) -> int:
    if argv != ["docs"]:
        print("usage: brtree.py docs   (rewrite the package list in docs/buildroot.md)")
        return 2
    import tempfile

    tree = find_tree()
    with tempfile.TemporaryDirectory(prefix="ssdbench-br-") as tmp:
        info = show_info(tree, Path(tmp))
    table = docs_table(packages(info), tree_version(tree))
    text = DOCS.read_text()
    old = docs_block(text)
    if old is None:
        print(f"{DOCS}: markers not found", file=sys.stderr)
        return 1
    DOCS.write_text(text.replace(old, table))
    print(f"{DOCS}: package list rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
