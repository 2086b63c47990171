#!/usr/bin/env bash
# The unit and UI tests (tests/unit, tests/ui) on the release image's Python stack: exactly the
# package versions of scripts/image-pins.txt (what Buildroot builds into the image) on the
# newest CPython this machine can get. Part of `make test`; alone: `make test-image-python`.
#
#   scripts/test-image-python.sh [PYTEST ARGS...]
#   scripts/test-image-python.sh --find    the interpreter it would take without building one
#                                          (exit 1: none, a run would build one first)
#
# The interpreter, for each series from the image's (scripts/image-pins.txt, "image python")
# down to 3.12, the first that works:
#   1. python3.X on PATH, or built by this script before (in the cache);
#   2. CPython 3.X built from Debian's source package (apt-get source --download-only from the
#      suites sid, forky and trixie of the Debian mirror this machine's apt already uses; apt
#      checks the signed index and the files' hashes), once, into the cache: about 5 minutes
#      on 2 cores.
# Where none works (a machine without Debian's apt) it falls back to the host's python3 and
# says so loudly. IMAGE_PYTHON=/path/to/python skips the search.
#
# Environment: SSDBENCH_CACHE (default ~/.cache/ssdbench): interpreters, apt lists, venvs.
# The venv is rebuilt when image-pins.txt or tui/pyproject.toml changes; the tests import
# ssdbench from this checkout's tui/src (PYTHONPATH). See docs/buildroot.md.
set -euo pipefail
shopt -s inherit_errexit nullglob

repo=$(cd "$(dirname "$0")/.." && pwd)
pins=$repo/scripts/image-pins.txt
cache=${SSDBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ssdbench}
suites=(sid forky trixie)

say() { printf 'test-image-python: %s\n' "$*" >&2; }
die() { printf 'test-image-python: error: %s\n' "$*" >&2; exit 1; }
loud() {
    printf '\n%s\n' "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    printf 'test-image-python: %s\n' "$@" >&2
    printf '%s\n\n' "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
}

image_python=$(sed -n 's/^# image python: *\([0-9.]*\)$/\1/p' "$pins")
[[ $image_python =~ ^3\.([0-9]+)\.[0-9]+$ ]] || die "$pins: no '# image python: 3.X.Y' line"
image_minor=${BASH_REMATCH[1]}

# --- CPython from Debian's source package --------------------------------------------------
apt_opts=()
apt_setup() {
    ((${#apt_opts[@]})) && return 0
    command -v apt-get >/dev/null || return 1
    local mirror dir=$cache/apt
    # the Debian mirror this machine's apt is configured with (not written into this script)
    # shellcheck disable=SC2016  # apt's own $(FIELD) format, not a shell expansion
    mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
        awk '$2 !~ /security/ && $1 ~ /\/debian\/?$/ {print $1; exit}')
    [[ -n $mirror ]] || return 1
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
    : >"$dir/sources.list"
    local suite
    for suite in "${suites[@]}"; do
        printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
            "$mirror" "$suite" >>"$dir/sources.list"
    done
    apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Dir::State::status=/dev/null
        -o APT::Sandbox::User=root)
    # the indexes are fetched again once a day (a newer series' source may have become available)
    local fresh=("$dir"/lists/*InRelease)
    if ((${#fresh[@]} == 0)) || [[ -n $(find "$dir/lists" -maxdepth 1 -name '*InRelease' -mmin +1440) ]]; then
        apt-get "${apt_opts[@]}" -qq update >&2 || { apt_opts=(); return 1; }
    fi
}

# build_cpython 3.X: prints the interpreter's path, or fails
build_cpython() {
    local series=$1 pkg=python$1
    apt_setup || return 1
    local versions version
    versions=$(apt-cache "${apt_opts[@]}" showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p' |
        sort -Vr | uniq) || return 1
    for version in $versions; do
        local upstream=${version%-*} work
        upstream=${upstream#*:}
        [[ $upstream =~ ^[0-9.]+$ ]] || continue
        local dest=$cache/cpython-$upstream
        if [[ -x $dest/bin/python$series ]]; then printf '%s\n' "$dest/bin/python$series"; return 0; fi
        work=$(mktemp -d "$cache/.cpython-build.XXXXXX")
        say "downloading Debian's $pkg $version source"
        if ! (cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "$pkg=$version" >&2); then
            say "$pkg $version: source not downloadable"
            rm -rf "$work"
            continue
        fi
        local orig=("$work"/*.orig.tar.*)
        ((${#orig[@]} == 1)) || { rm -rf "$work"; continue; }
        say "building CPython $upstream into $dest (once; about 5 minutes on 2 cores)"
        local log=$work/build.log
        if tar -xf "${orig[0]}" -C "$work" &&
            (cd "$work"/Python-"$upstream" &&
                ./configure --prefix="$dest.part" --with-ensurepip=install --disable-test-modules &&
                make -j"$(nproc)" && make install) >"$log" 2>&1 &&
            "$dest.part/bin/python$series" -c 'import ssl, zlib, bz2, lzma, ctypes, sqlite3' 2>>"$log"
        then
            rm -rf "$dest"
            mv "$dest.part" "$dest"
            # the prefix is baked into the scripts pip installed; they are not used (python -m)
            rm -rf "$work"
            printf '%s\n' "$dest/bin/python$series"
            return 0
        fi
        say "building CPython $upstream failed; the log's end:"
        tail -20 "$log" >&2
        rm -rf "$work" "$dest.part"
    done
    return 1
}

# find_python [nobuild]: prints the interpreter's path, or fails
find_python() {
    local minor candidate
    for ((minor = image_minor; minor >= 12; minor--)); do
        for candidate in "$(command -v "python3.$minor" || true)" "$cache"/cpython-3."$minor".*/bin/python3."$minor"; do
            # (a pyenv shim of a version not selected is on PATH but does not run)
            if [[ -n $candidate && -x $candidate ]] && "$candidate" -c '' 2>/dev/null; then
                printf '%s\n' "$candidate"
                return 0
            fi
        done
        if [[ ${1:-} != nobuild ]] && build_cpython "3.$minor"; then return 0; fi
    done
    return 1
}

if [[ ${1:-} == --find ]]; then  # scripts/run-tests.py: whether this run builds CPython first
    if [[ -n ${IMAGE_PYTHON:-} ]]; then printf '%s\n' "$IMAGE_PYTHON"; exit 0; fi
    find_python nobuild
    exit
fi
mkdir -p "$cache"
if [[ -n ${IMAGE_PYTHON:-} ]]; then
    python=$IMAGE_PYTHON
elif ! python=$(find_python); then
    python=$(command -v python3)
    loud "no CPython 3.$image_minor..3.12 here and none could be built from Debian's sources:" \
        "the image-pins tier runs on the host's $("$python" -V 2>&1) instead"
fi
version=$("$python" -c 'import platform; print(platform.python_version())')
if [[ $version != 3.$image_minor.* ]]; then
    loud "the image runs Python $image_python; this machine has no 3.$image_minor (neither" \
        "installable nor buildable from a downloadable source): the image-pins tier runs on" \
        "Python $version, the newest it could get"
fi

# --- the venv with the image's pins ------------------------------------------------------
# (ssdbench itself is not installed: the venv is shared by every checkout on the machine, each
# run imports its own tui/src through PYTHONPATH)
key=$({ echo venv-2; cat "$pins" "$repo/tui/pyproject.toml"; } | sha256sum | cut -c1-12)
venv=$cache/image-venv-$version-$key
if [[ ! -f $venv/.ready ]]; then
    say "creating $venv (Python $version, scripts/image-pins.txt)"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    mapfile -t test_tools < <("$venv/bin/python" - "$repo/tui/pyproject.toml" <<'EOF'
import sys, tomllib
extras = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["test"]
lint = ("ruff", "mypy", "import-linter")
print("\n".join(r for r in extras if not r.startswith(lint)))
EOF
    )
    pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
    "${pip[@]}" install -c "$pins" -r "$pins" "${test_tools[@]}"
    touch "$venv/.ready"
fi
# The pins hold (a test tool did not pull a newer textual or rich, nothing is broken).
"$venv/bin/python" - "$pins" <<'EOF'
import importlib.metadata as md, re, sys
wrong = []
for line in open(sys.argv[1]):
    m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)$", line.strip())
    if m and md.version(m.group(1)) != m.group(2):
        wrong.append(f"{m.group(1)} {md.version(m.group(1))} (pinned {m.group(2)})")
if wrong:
    sys.exit("test-image-python: not the image's versions: " + ", ".join(wrong))
EOF
"$venv/bin/python" -m pip --disable-pip-version-check check >&2
say "Python $version; $(grep -cE '^[A-Za-z0-9_.-]+==' "$pins") packages at the image's versions (textual $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("textual"))'))"
cd "$repo"
export PYTHONPATH=$repo/tui/src${PYTHONPATH:+:$PYTHONPATH}
# Left out here (they run in the main pass of `make test`): the two UI tests that drive a real
# fio run on a loop device (about 80 s together on 2 cores); their Textual and numpy side is
# covered by the other UI and report tests at the pinned versions.
exec "$venv/bin/python" -m pytest -p no:cacheprovider tests/unit tests/ui \
    --deselect tests/ui/test_tmux.py::test_quick_plan_in_tmux_at_80x25 \
    --deselect tests/ui/test_real_engine.py::test_quick_plan_on_a_loop_device_reaches_results \
    "$@"
