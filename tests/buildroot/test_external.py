"""Checks of the BR2_EXTERNAL tree against the pinned Buildroot release, with no downloads:
kconfig keeps every symbol of the defconfig, the defconfig is savedefconfig output,
check-package is clean, and `make show-info` lists the packages (and versions) the
appliance needs, each download covered by a hash, matching docs/buildroot.md."""

from __future__ import annotations

import difflib
import importlib.metadata
import re
import shutil
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.buildroot import brtree
from tests.buildroot.conftest import NOT_RUN


@dataclass(frozen=True)
class Configured:
    tree: Path
    out: Path
    dotconfig: str


@pytest.fixture(scope="module")
def tree() -> Path:
    try:
        found = brtree.find_tree()
    except brtree.NoTree as exc:
        NOT_RUN.append(str(exc))
        pytest.xfail(f"Buildroot checks did not run: {exc}")
    return found


@pytest.fixture(scope="module")
def configured(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Configured]:
    out = tmp_path_factory.mktemp("br-output")
    result = brtree.brmake(tree, out, brtree.DEFCONFIG_NAME)
    assert result.returncode == 0, result.stdout + result.stderr
    yield Configured(tree, out, (out / ".config").read_text())
    shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def show_info_raw(configured: Configured) -> str:
    return brtree.show_info_of_configured(configured.tree, configured.out)


@pytest.fixture(scope="module")
def show_info(show_info_raw: str) -> dict[str, brtree.Package]:
    return {p.name: p for p in brtree.packages(show_info_raw)}


def test_tree_is_the_pinned_release(tree: Path) -> None:
    assert brtree.tree_version(tree) == brtree.pinned_version(), (
        f"{tree} is Buildroot {brtree.tree_version(tree)}, scripts/build-image.sh pins "
        f"{brtree.pinned_version()}"
    )


def test_dropped_symbols_are_reported() -> None:
    defconfig = 'BR2_FOO=y\nBR2_BAR="x"\n# BR2_BAZ is not set\nBR2_KEPT=y\n'
    dotconfig = 'BR2_BAR="y"\nBR2_BAZ=y\nBR2_KEPT=y\n# BR2_FOO is not set\n'
    assert brtree.dropped_symbols(defconfig, dotconfig) == [
        "BR2_FOO=y -> not set",
        'BR2_BAR="x" -> "y"',
        "# BR2_BAZ is not set -> BR2_BAZ=y",
    ]


def test_defconfig_keeps_every_symbol(configured: Configured) -> None:
    defconfig = brtree.DEFCONFIG.read_text()
    dropped = brtree.dropped_symbols(defconfig, configured.dotconfig)
    print(
        f"savedefconfig comparison: {len(brtree.symbols(defconfig))} symbols, "
        f"{len(dropped)} dropped"
    )
    assert not dropped, "kconfig dropped (unknown symbol or unmet dependency):\n" + "\n".join(
        dropped
    )


def test_defconfig_is_savedefconfig_output(configured: Configured) -> None:
    saved = configured.out / "saved_defconfig"
    result = brtree.brmake(
        configured.tree, configured.out, "savedefconfig", f"BR2_DEFCONFIG={saved}"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    ours = brtree.DEFCONFIG.read_text().splitlines()
    diff = list(
        difflib.unified_diff(
            ours, saved.read_text().splitlines(), "ours", "savedefconfig", lineterm=""
        )
    )
    assert not diff, "defconfig is not savedefconfig output:\n" + "\n".join(diff)


def test_check_package_is_clean(tree: Path) -> None:
    files = sorted(str(p) for p in brtree.EXTERNAL.rglob("*") if p.is_file())
    # check-package imports python3-magic and flake8 (Debian packages, system python).
    result = brtree.run(
        ["/usr/bin/python3", str(tree / "utils" / "check-package"), "--br2-external", *files],
        cwd=tree,
    )
    print(result.stdout + result.stderr)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 warnings generated" in result.stderr, result.stdout + result.stderr
    assert re.search(r"^[1-9]\d* lines processed", result.stderr, re.M), result.stderr


def test_host_has_what_the_build_needs(configured: Configured) -> None:
    """Buildroot's own host check (`make dependencies`: compilers, rsync, cpio, bc, file,
    unzip, ... for this configuration), so `make image` does not stop on a missing tool."""
    result = brtree.brmake(configured.tree, configured.out, "dependencies")
    assert result.returncode == 0, (
        result.stdout + result.stderr + "\n(see scripts/apt-packages.txt; `make deps`)"
    )


def test_busybox_fragment_names_real_options(tree: Path) -> None:
    """Every option of buildroot-external/busybox.fragment is one of the pinned BusyBox's
    (Buildroot's busybox.config lists them all, set or not)."""
    known = (tree / "package" / "busybox" / "busybox.config").read_text()
    names = set(re.findall(r"^(?:# )?(CONFIG_\w+)[= ]", known, re.M))
    fragment = (brtree.EXTERNAL / "busybox.fragment").read_text()
    ours = re.findall(r"^(CONFIG_\w+)=", fragment, re.M)
    assert ours, "busybox.fragment sets nothing"
    unknown = [n for n in ours if n not in names]
    assert not unknown, f"not BusyBox options of this Buildroot: {unknown}"


def _version(pkgs: dict[str, brtree.Package], name: str) -> Version:
    assert name in pkgs, f"{name} is not in the image (make show-info)"
    return Version(pkgs[name].version)


# What the appliance runs (docs/buildroot.md): package -> required version prefix or "".
IMAGE_PACKAGES = {
    "python3": "3.",
    "python-ssdbench": "",
    "python-textual": "8.",
    "python-rich": "15.",
    "python-matplotlib": "3.10.",
    "python-numpy": "",
    "python-linkify-it-py": "",
    "python-cryptography": "47.",
    "python-weasyprint": "68.",
    "python-boto3": "1.",  # results to an S3-compatible store (docs/lab.md)
    "ca-certificates": "",  # TLS to the lab's config server and store, verified
    "pango": "",
    "fio": "3.",
    "libaio": "",
    "hdparm": "",
    "nvme": "2.",
    "json-c": "",
    "smartmontools": "",
    "util-linux": "",
    "gptfdisk": "",
    "dosfstools": "",
    "exfatprogs": "",
    "kbd": "",
    "sedutil": "",
    "pciutils": "",
    "busybox": "",
    "linux": "6.18.",
    "grub2": "",
    "host-genimage": "",
    "host-dosfstools": "",
    "host-mtools": "",
    "rootfs-cpio": "",
}


def test_show_info_has_the_appliance_packages(show_info: dict[str, brtree.Package]) -> None:
    for line in (f"{p.name} {p.version}" for p in show_info.values()):
        print(line)
    missing = [n for n in IMAGE_PACKAGES if n not in show_info]
    assert not missing, f"not in the image: {missing}"
    wrong = {
        n: show_info[n].version
        for n, prefix in IMAGE_PACKAGES.items()
        if not show_info[n].version.startswith(prefix)
    }
    assert not wrong, f"unexpected versions (wanted prefixes {IMAGE_PACKAGES}): {wrong}"
    project = tomllib.loads((brtree.REPO / "tui" / "pyproject.toml").read_text())["project"]
    assert show_info["python-ssdbench"].version == project["version"]


def _buildroot_name(dist: str) -> str:
    name = canonicalize_name(dist)
    return name if name.startswith("python-") else f"python-{name}"


def test_python_dependency_closure_is_in_the_image(
    show_info: dict[str, brtree.Package],
) -> None:
    """Every runtime requirement of ssdbench, and of its requirements (with the extras they
    ask for), is a Buildroot package of the image; ssdbench's own pins hold there. The
    requirement lists are the dev venv's (no downloads here), followed where the venv and
    the image agree on the major version."""
    python = _version(show_info, "python3")
    env = {
        "python_version": f"{python.major}.{python.minor}",
        "python_full_version": str(python),
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "implementation_name": "cpython",
        "os_name": "posix",
    }
    project = tomllib.loads((brtree.REPO / "tui" / "pyproject.toml").read_text())["project"]
    direct = [Requirement(r) for r in project["dependencies"]]
    for req in direct:
        have = _version(show_info, _buildroot_name(req.name))
        assert req.specifier.contains(have), f"image has {req.name} {have}, ssdbench wants {req}"

    seen: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = [(r.name, frozenset(r.extras)) for r in direct]
    while todo:
        dist, extras = todo.pop()
        key = f"{canonicalize_name(dist)}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        image = _version(show_info, _buildroot_name(dist))
        # The requirement lists come from the dev venv's metadata; they stand for the image's
        # only while the major versions agree (e.g. dateutil 4 needs tzdata, 2.9 does not).
        dev = Version(importlib.metadata.version(dist))
        if dev.major != image.major:
            print(f"not followed: {dist} {dev} in the venv, {image} in the image")
            continue
        for text in importlib.metadata.requires(dist) or []:
            req = Requirement(text)
            wanted = req.marker is None or any(
                req.marker.evaluate({**env, "extra": e}) for e in (extras or {""})
            )
            if wanted:
                todo.append((req.name, frozenset(req.extras)))
    assert any(k.startswith("linkify-it-py") for k in seen), sorted(seen)


def test_every_download_is_hash_checked(show_info_raw: str, tree: Path) -> None:
    """BR2_DOWNLOAD_FORCE_CHECK_HASHES is on: every downloaded source needs a hash in one of
    the package's hash files, or the build stops at that package. Only SHA-2 counts here
    (Buildroot would also take md5 or sha1)."""
    import json

    unchecked = []
    for name, pkg in json.loads(show_info_raw).items():
        hash_files = [tree / h for h in pkg.get("hashes", [])]  # relative ones: in the tree
        hash_text = "".join(h.read_text() for h in hash_files if h.is_file())
        for dl in pkg.get("downloads", []):
            if any(uri.startswith("local+") for uri in dl["uris"]):
                continue
            source = dl["source"]
            strong = rf"^sha(224|256|384|512)\s+[0-9a-f]{{56,128}}\s+{re.escape(source)}\s*$"
            if not re.search(strong, hash_text, re.M):
                unchecked.append(f"{name}: {source}")
    assert not unchecked, "downloads without a SHA-2 hash:\n" + "\n".join(unchecked)


def test_docs_list_the_packages(show_info_raw: str, tree: Path) -> None:
    expected = brtree.docs_table(brtree.packages(show_info_raw), brtree.tree_version(tree))
    actual = brtree.docs_block(brtree.DOCS.read_text())
    assert actual is not None, f"{brtree.DOCS}: no package list markers"
    assert actual == expected, (
        "docs/buildroot.md package list is stale; run `python tests/buildroot/brtree.py docs`"
    )


def test_package_list_does_not_depend_on_host_tools(
    tree: Path, show_info: dict[str, brtree.Package]
) -> None:
    """Buildroot adds host-lzip, host-tar, ... only on hosts whose own tool is missing or too
    old; the list (and docs/buildroot.md) must be the same on every host."""
    overrides = brtree.host_tool_overrides(tree)
    assert "BR2_LZIP_HOST_DEPENDENCY=" in overrides, overrides
    assert "BR2_TAR_HOST_DEPENDENCY=" in overrides, overrides
    assert "host-lzip" not in show_info and "host-tar" not in show_info, sorted(show_info)


def test_wheel_is_built_from_tracked_sources_only(
    configured: Configured, tmp_path: Path
) -> None:
    """Buildroot's own rsync of the local python-ssdbench source (the command `make -n`
    prints for the package's rsync step, its source swapped for a copy of tui/), run on a
    copy holding a stale build/ tree
    and egg-info as a developer's `pip install tui/` leaves them: neither reaches the copy
    the wheel is built from, the package sources do."""
    src = tmp_path / "tui"
    shutil.copytree(
        brtree.REPO / "tui", src, ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    stale = src / "build" / "lib" / "ssdbench" / "stale_module.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("raise SystemExit('stale build/ tree shipped')\n")
    (src / "src" / "ssdbench.egg-info").mkdir()
    (src / "src" / "ssdbench.egg-info" / "SOURCES.txt").write_text("stale\n")
    version = tomllib.loads((src / "pyproject.toml").read_text())["project"]["version"]
    stamp = configured.out / "build" / f"python-ssdbench-{version}" / ".stamp_rsynced"
    dry = brtree.brmake(configured.tree, configured.out, "-n", str(stamp))
    assert dry.returncode == 0, dry.stdout + dry.stderr
    (rsync,) = [line for line in dry.stdout.splitlines() if line.startswith("rsync ")]
    site = f"{brtree.EXTERNAL}/../tui/ "
    assert site in rsync, rsync
    done = brtree.run(["sh", "-c", rsync.replace(site, f"{src}/ ")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    copy = stamp.parent
    assert (copy / "src" / "ssdbench" / "__init__.py").is_file()
    assert (copy / "pyproject.toml").is_file()
    assert not (copy / "build").exists(), "tui/build/ would go into the wheel"
    assert not list(copy.rglob("*.egg-info")), "stale egg-info would go into the wheel"


def test_full_build_rebuilds_python_ssdbench() -> None:
    """Buildroot rsyncs a local source once; scripts/build-image.sh must drop that copy
    (python-ssdbench-dirclean) before every full build, or a change in tui/ never reaches
    the image."""
    script = brtree.BUILD_SCRIPT.read_text()
    full_build = script[script.index('exec make -C "$br"') :]
    dirclean = full_build.find("brmake python-ssdbench-dirclean")
    build = full_build.find("\nbrmake\n")
    assert 0 <= dirclean < build, "build-image.sh does not dirclean python-ssdbench before brmake"


def test_image_busybox_has_the_mdev_daemon(tree: Path) -> None:
    """overlay/etc/init.d/rcS runs `mdev -d`: Buildroot's BusyBox config has the daemon and
    our fragment does not take it away."""
    config = (tree / "package" / "busybox" / "busybox.config").read_text()
    fragment = (brtree.EXTERNAL / "busybox.fragment").read_text()
    assert re.search(r"^CONFIG_FEATURE_MDEV_DAEMON=y$", config, re.M)
    assert not re.search(r"^(# )?CONFIG_FEATURE_MDEV_DAEMON( is not set|=n)", fragment, re.M)


def test_image_busybox_has_the_network_tools(tree: Path) -> None:
    """A bench booted from the network (docs/lab.md) brings its link up and asks DHCP with
    BusyBox's `ip` and `udhcpc`; Buildroot installs udhcpc's default script when udhcpc is
    configured, and our fragment takes none of them away."""
    config = (tree / "package" / "busybox" / "busybox.config").read_text()
    fragment = (brtree.EXTERNAL / "busybox.fragment").read_text()
    mk = (tree / "package" / "busybox" / "busybox.mk").read_text()
    for option in ("CONFIG_UDHCPC", "CONFIG_IP", "CONFIG_FEATURE_IP_LINK", "CONFIG_FEATURE_IP_ADDRESS",
                   "CONFIG_FEATURE_IP_ROUTE"):
        assert re.search(rf"^{option}=y$", config, re.M), f"{option} not in BusyBox's config"
        assert not re.search(rf"^(# )?{option}( is not set|=n)", fragment, re.M), option
    assert "usr/share/udhcpc/default.script" in mk


# Target Python packages of the image that the tests do not need pinned: ours, and build-time
# only ones Buildroot installs anyway (setuptools, pybind11's headers).
NOT_PINNED = {"python-ssdbench", "python-setuptools", "python-pybind"}


def test_image_pins_are_the_image_versions(show_info: dict[str, brtree.Package]) -> None:
    """scripts/image-pins.txt (the pinned-Python test tier, scripts/test-image-python.sh) is
    exactly the image's Python stack: every pin at the version Buildroot builds, every target
    Python package pinned, and the image's Python version."""
    text = (brtree.REPO / "scripts" / "image-pins.txt").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", text, re.M))
    wrong = {
        name: (version, show_info[_buildroot_name(name)].version if
               _buildroot_name(name) in show_info else "not in the image")
        for name, version in pins.items()
        if _buildroot_name(name) not in show_info
        or show_info[_buildroot_name(name)].version != version
    }
    assert not wrong, f"pin -> (pinned, image): {wrong}"
    pinned = {_buildroot_name(n) for n in pins}
    unpinned = sorted(
        p.name for p in show_info.values()
        if p.kind == "target" and p.name.startswith("python-")
        and p.name not in pinned | NOT_PINNED
    )
    assert not unpinned, f"image Python packages missing from image-pins.txt: {unpinned}"
    image_python = re.search(r"^# image python: (\S+)$", text, re.M)
    assert image_python, "image-pins.txt: no '# image python:' line"
    assert image_python.group(1) == show_info["python3"].version
