"""Helpers for the Buildroot external-tree checks: find the pinned Buildroot tree, run its
kconfig / check-package / show-info without downloading anything, and render the package
list kept in docs/buildroot.md.

`python tests/buildroot/brtree.py docs` rewrites that list from `make show-info`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
EXTERNAL = REPO / "buildroot-external"
DEFCONFIG_NAME = "ssdbench_x86_64_defconfig"
DEFCONFIG = EXTERNAL / "configs" / DEFCONFIG_NAME
BUILD_SCRIPT = REPO / "scripts" / "build-image.sh"
DOCS = REPO / "docs" / "buildroot.md"
DOCS_BEGIN = "<!-- show-info packages: begin (python tests/buildroot/brtree.py docs) -->"
DOCS_END = "<!-- show-info packages: end -->"
# The offline tree for the checks: `git archive --prefix=buildroot-<version>/ <version>` of
# Buildroot's repository, kept beside the project (../shared/buildroot/, on CI and the
# developers' machines). NOT the release tarball (its checksum differs): it only serves these
# checks and is unpacked into build/buildroot-<version>-git/, never used by `make image`.
# Its sha256 is pinned here (copied from the .sha256 file published with it).
ARCHIVE_ENV = "SSDBENCH_BUILDROOT_ARCHIVE"
ARCHIVE_SHA256 = "b54bad1fe4018d88d23a7ed2e4f9bddf74320a8d0fa109783404e8302467338d"

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


def build_dir() -> Path:
    return Path(os.environ.get("BUILD_DIR") or REPO / "build")


def archive_path() -> Path:
    """The git-archive tarball: $SSDBENCH_BUILDROOT_ARCHIVE, else shared/buildroot/ beside
    the repository's top directory."""
    env = os.environ.get(ARCHIVE_ENV)
    if env:
        return Path(env)
    return REPO.parent / "shared" / "buildroot" / f"buildroot-{pinned_version()}-git.tar.xz"


def is_tree(path: Path) -> bool:
    return (path / "Makefile").is_file() and (path / "utils" / "check-package").is_file()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack_archive(archive: Path, dest: Path) -> Path:
    """Verify `archive` against ARCHIVE_SHA256 and unpack it to `dest` (atomically: a
    half-unpacked tree is never left where find_tree looks)."""
    got = sha256_of(archive)
    if got != ARCHIVE_SHA256:
        raise NoTree(f"{archive}: sha256 {got}, pinned {ARCHIVE_SHA256}; not using it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".buildroot-unpack.", dir=dest.parent))
    try:
        done = run(["tar", "-xJf", str(archive), "-C", str(tmp)], cwd=tmp)
        if done.returncode:
            raise NoTree(f"{archive}: tar failed: {done.stderr.strip()}")
        top = tmp / f"buildroot-{pinned_version()}"
        if not is_tree(top):
            raise NoTree(f"{archive} has no Buildroot tree buildroot-{pinned_version()}/")
        top.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def fetch_release_tree() -> Path:
    """The release tarball `make image` downloads and verifies (needs network the first
    time; the download is cached in build/dl/)."""
    done = run(["bash", str(BUILD_SCRIPT), "--tree"], cwd=REPO, timeout=900)
    path = Path(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None
    if done.returncode or path is None or not is_tree(path):
        raise NoTree(
            f"scripts/build-image.sh --tree could not get the release tarball: "
            f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
        )
    return path


def find_tree() -> Path:
    """The Buildroot tree to check against, in this order: $BUILDROOT_DIR; a tree already
    unpacked in build/ (the release's, or the git archive's); the git archive, verified and
    unpacked into build/; the release tarball `make image` downloads and verifies. Raises
    NoTree naming everything it tried."""
    env = os.environ.get("BUILDROOT_DIR")
    if env:
        if is_tree(Path(env)):
            return Path(env)
        raise NoTree(f"BUILDROOT_DIR={env} is not a Buildroot tree")
    version = pinned_version()
    release_tree = build_dir() / f"buildroot-{version}"
    archive_tree = build_dir() / f"buildroot-{version}-git"
    for tree in (release_tree, archive_tree):
        if is_tree(tree):
            return tree
    tried = [f"no tree in {release_tree} or {archive_tree}"]
    archive = archive_path()
    if archive.is_file():
        try:
            return unpack_archive(archive, archive_tree)
        except NoTree as exc:
            tried.append(str(exc))
    else:
        tried.append(f"no {archive} (set {ARCHIVE_ENV})")
    try:
        return fetch_release_tree()
    except NoTree as exc:
        tried.append(str(exc))
    raise NoTree(
        "; ".join(tried) + f"; set BUILDROOT_DIR to a Buildroot {version} tree (docs/buildroot.md)"
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


def host_tool_overrides(tree: Path) -> list[str]:
    """`BR2_<TOOL>_HOST_DEPENDENCY=` for every host tool Buildroot builds itself only when the
    host's is missing or too old (support/dependencies/check-host-*.mk: host-lzip on a host
    without lzip, host-tar with tar < 1.35, ...). Given on the command line they win over
    those checks, so show-info lists what the configuration needs on any host."""
    names: set[str] = set()
    for mk in (tree / "support" / "dependencies").glob("check-host-*.mk"):
        names.update(re.findall(r"^\s*(BR2_\w+_HOST_DEPENDENCY)\s*=", mk.read_text(), re.M))
    if not names:
        raise AssertionError(f"{tree}/support/dependencies: no BR2_*_HOST_DEPENDENCY")
    return [f"{name}=" for name in sorted(names)]


def show_info_of_configured(tree: Path, out: Path) -> str:
    """`make show-info` of a configured output directory, independent of the host's tools."""
    result = brmake(tree, out, "show-info", *host_tool_overrides(tree))
    if result.returncode:
        raise AssertionError(result.stdout + result.stderr)
    return result.stdout


def show_info(tree: Path, out: Path) -> str:
    configured = brmake(tree, out, DEFCONFIG_NAME)
    if configured.returncode:
        raise AssertionError(configured.stdout + configured.stderr)
    return show_info_of_configured(tree, out)


def main(argv: list[str]) -> int:
    if argv != ["docs"]:
        print("usage: brtree.py docs   (rewrite the package list in docs/buildroot.md)")
        return 2
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
