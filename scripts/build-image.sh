#!/usr/bin/env bash
# Build the ssdbench release image with a pinned Buildroot release.
#
#   scripts/build-image.sh                 full build: build/ssdbench-<version>.img (+ .sha256,
#                                          .img.xz, .img.xz.sha256)
#   scripts/build-image.sh TARGET...       forward Buildroot targets (menuconfig, savedefconfig,
#                                          linux-menuconfig, show-info, legal-info, clean, ...)
#   scripts/build-image.sh --tree          only get the pinned Buildroot tree (download and
#                                          verify the release tarball if needed), print its path
#
# A full build always rebuilds python-ssdbench from tui/ (python-ssdbench-dirclean first):
# Buildroot copies a local source (rsync) only once, so a change in tui/ would otherwise
# not reach the image.
#
# Environment:
#   BUILDROOT_DIR=DIR   use this Buildroot tree instead of downloading the pinned release
#   BUILD_DIR=DIR       where everything goes (default: build/ in the repository)
#   SSDBENCH_VERSION=V  version in the image file name (default: tui/pyproject.toml's)
#
# The Buildroot output directory is $BUILD_DIR/buildroot-output, downloads are cached in
# $BUILD_DIR/dl (BR2_DL_DIR). See docs/buildroot.md.
set -euo pipefail
shopt -s inherit_errexit

BUILDROOT_VERSION=2026.05.1
BUILDROOT_TARBALL=buildroot-$BUILDROOT_VERSION.tar.xz
# sha256 of the release tarball; where it comes from and how to confirm it: docs/buildroot.md.
BUILDROOT_SHA256=ae7f706f087b9ae9083a10a587368dfbf53103c28bf81c2d690198dc4090cb58
BUILDROOT_URL=https://buildroot.org/downloads/$BUILDROOT_TARBALL
DEFCONFIG=ssdbench_x86_64_defconfig
IMAGE_IN_BINARIES=ssdbench.img   # what board/ssdbench/post-image.sh leaves in images/
MAX_COMPRESSED_BYTES=$((160 * 1000 * 1000))

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
external=$repo/buildroot-external
output=$build/buildroot-output
export BR2_DL_DIR=${BR2_DL_DIR:-$build/dl}

say() { printf 'build-image: %s\n' "$*" >&2; }
die() { printf 'build-image: error: %s\n' "$*" >&2; exit 1; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch_buildroot() {
    local dest=$build/buildroot-$BUILDROOT_VERSION tarball=$BR2_DL_DIR/$BUILDROOT_TARBALL
    [[ $BUILDROOT_SHA256 =~ ^[0-9a-f]{64}$ ]] ||
        die "BUILDROOT_SHA256 in $0 is not a sha256; fill in the published checksum"
    if [[ -f $dest/Makefile ]]; then
        printf '%s\n' "$dest"
        return
    fi
    mkdir -p "$BR2_DL_DIR"
    if [[ ! -f $tarball ]] || [[ $(sha256_of "$tarball") != "$BUILDROOT_SHA256" ]]; then
        say "downloading Buildroot $BUILDROOT_VERSION"
        rm -f "$tarball.part"
        if command -v curl >/dev/null; then
            curl -fL --connect-timeout 30 --retry 3 -o "$tarball.part" "$BUILDROOT_URL"
        else
            wget -O "$tarball.part" "$BUILDROOT_URL"
        fi || die "could not download $BUILDROOT_URL; without network, point BUILDROOT_DIR at a Buildroot $BUILDROOT_VERSION tree"
        local got
        got=$(sha256_of "$tarball.part")
        if [[ $got != "$BUILDROOT_SHA256" ]]; then
            rm -f "$tarball.part"
            die "$BUILDROOT_TARBALL: sha256 $got, expected $BUILDROOT_SHA256; refusing to use it"
        fi
        mv "$tarball.part" "$tarball"
    fi
    say "unpacking $BUILDROOT_TARBALL"
    local tmp
    tmp=$(mktemp -d "$build/.buildroot-unpack.XXXXXX")
    tar -xJf "$tarball" -C "$tmp"
    [[ -f $tmp/buildroot-$BUILDROOT_VERSION/Makefile ]] ||
        die "$BUILDROOT_TARBALL has no buildroot-$BUILDROOT_VERSION/ directory"
    mv "$tmp/buildroot-$BUILDROOT_VERSION" "$dest"
    rmdir "$tmp"
    printf '%s\n' "$dest"
}

tree_version() { sed -n 's/^export BR2_VERSION := //p' "$1/Makefile"; }

mkdir -p "$build"
if [[ ${1:-} == --tree ]]; then
    (($# == 1)) || die "--tree takes no other argument"
    if [[ -n ${BUILDROOT_DIR:-} ]]; then (cd "$BUILDROOT_DIR" && pwd); else fetch_buildroot; fi
    exit 0
fi
if [[ -n ${BUILDROOT_DIR:-} ]]; then
    br=$(cd "$BUILDROOT_DIR" && pwd) || die "BUILDROOT_DIR=$BUILDROOT_DIR does not exist"
    [[ -f $br/Makefile && -d $br/package ]] || die "BUILDROOT_DIR=$br is not a Buildroot tree"
    have=$(tree_version "$br")
    [[ $have == "$BUILDROOT_VERSION" ]] ||
        say "WARNING: BUILDROOT_DIR is Buildroot $have; the image is pinned to $BUILDROOT_VERSION"
else
    br=$(fetch_buildroot)
fi

brmake() {
    make -C "$br" --no-print-directory BR2_EXTERNAL="$external" O="$output" "$@"
}

# (Re)apply the defconfig when there is no configuration yet or the defconfig changed since.
defconfig_file=$external/configs/$DEFCONFIG
if [[ ! -f $output/.config || $defconfig_file -nt $output/.config ]]; then
    say "configuring with $DEFCONFIG"
    brmake "$DEFCONFIG" >&2
fi

if (($#)); then
    exec make -C "$br" --no-print-directory BR2_EXTERNAL="$external" O="$output" "$@"
fi

# The package's copy of tui/ is taken once; drop it so this build ships the current tui/.
say "python-ssdbench: dirclean (rebuilt from tui/ every time)"
brmake python-ssdbench-dirclean >&2
say "building (Buildroot $(tree_version "$br"), output in $output)"
brmake

version=${SSDBENCH_VERSION:-$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/tui/pyproject.toml")}
[[ -n $version ]] || die "no version in tui/pyproject.toml"
built=$output/images/$IMAGE_IN_BINARIES
[[ -f $built ]] || die "Buildroot finished but $built is missing (board/ssdbench/post-image.sh and genimage.cfg make it); images/ has: $(ls "$output/images")"

img=ssdbench-$version.img
cp --sparse=always "$built" "$build/$img"
say "compressing $img"
xz -T0 -6 -f -k "$build/$img"
(cd "$build" && sha256sum "$img" >"$img.sha256" && sha256sum "$img.xz" >"$img.xz.sha256")

size=$(stat -c %s "$build/$img")
xz_size=$(stat -c %s "$build/$img.xz")
say "$img: $size bytes; $img.xz: $xz_size bytes (budget $MAX_COMPRESSED_BYTES)"
((xz_size <= MAX_COMPRESSED_BYTES)) ||
    die "$img.xz is $xz_size bytes, over the $MAX_COMPRESSED_BYTES byte budget"
say "done: $build/$img ($build/$img.sha256)"
