"""board/ssdbench/linux.fragment merged on x86_64_defconfig by the kernel's own kconfig
(merge_config.sh + olddefconfig), the way Buildroot applies it: every option of the fragment
must survive (no misspelt symbol, no unmet dependency).

The image pins Linux 6.18; its source cannot be downloaded here, so this runs the Kconfig of
Debian's linux-source-6.12 (the previous LTS series), which only the Kconfig, Makefile and
scripts files are unpacked from (about 45 s)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.buildroot.brtree import REPO

LINUX_SOURCE = Path("/usr/src/linux-source-6.12.tar.xz")
FRAGMENT = REPO / "board" / "ssdbench" / "linux.fragment"
_LINE = re.compile(r"^(CONFIG_\w+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_\w+) is not set$")


def options(text: str) -> dict[str, str]:
    """CONFIG_ options of a fragment / .config; `# X is not set` and `X=n` read as "n"."""
    found = {}
    for line in text.splitlines():
        if m := _LINE.match(line):
            found[m.group(1)] = m.group(2)
        elif m := _UNSET.match(line):
            found[m.group(1)] = "n"
    return found


def lost_options(fragment: str, dotconfig: str) -> list[str]:
    have = options(dotconfig)
    return [
        f"{name}={value} -> {have.get(name, 'absent')}"
        for name, value in options(fragment).items()
        if have.get(name, "n" if value == "n" else "absent") != value
    ]


def test_lost_options_are_reported() -> None:
    fragment = 'CONFIG_A=y\nCONFIG_B=n\nCONFIG_C=""\nCONFIG_D=y\n'
    dotconfig = "# CONFIG_A is not set\nCONFIG_B=y\nCONFIG_D=y\n"
    assert lost_options(fragment, dotconfig) == [
        "CONFIG_A=y -> n",
        "CONFIG_B=n -> y",
        'CONFIG_C="" -> absent',
    ]


def _unpack_kconfig_tree(tarball: Path, dest: Path) -> Path:
    patterns = ["*/scripts/*", "*Kconfig*", "*Makefile*", "*Kbuild*", "*/arch/x86/configs/*"]
    done = subprocess.run(
        ["tar", "-xJf", str(tarball), "-C", str(dest), "--wildcards", *patterns],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (top,) = dest.iterdir()
    return top


def test_fragment_survives_kconfig(tmp_path: Path) -> None:
    if not LINUX_SOURCE.is_file():
        pytest.fail(f"{LINUX_SOURCE} missing: apt-get install linux-source-6.12 (make deps)")
    for tool in ("flex", "bison", "gcc", "make"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} missing: apt-get install {tool} (make deps)")
    src = _unpack_kconfig_tree(LINUX_SOURCE, tmp_path)
    steps = [
        ["make", "-s", "x86_64_defconfig"],
        ["./scripts/kconfig/merge_config.sh", "-m", ".config", str(FRAGMENT)],
        ["make", "-s", "olddefconfig"],
    ]
    for argv in steps:
        done = subprocess.run(argv, cwd=src, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
    lost = lost_options(FRAGMENT.read_text(), (src / ".config").read_text())
    print(f"{len(options(FRAGMENT.read_text()))} fragment options, {len(lost)} lost")
    assert not lost, "linux.fragment options kconfig did not keep:\n" + "\n".join(lost)
