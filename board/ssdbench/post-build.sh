#!/usr/bin/env bash
# Finish the root filesystem after the overlay is in place (both builds run this).
#   post-build.sh TARGET_DIR
set -euo pipefail
target=${1:?usage: post-build.sh TARGET_DIR}

mkdir -p "$target"/{proc,sys,dev,run,tmp,root,mnt/ssdresults,var/log}
chmod 1777 "$target/tmp"
chmod 700 "$target/root"
# BusyBox init is the system's init; the kernel starts /init (overlay), which execs it.
if [[ ! -e $target/sbin/init ]]; then ln -s /bin/busybox "$target/sbin/init"; fi
chmod 755 "$target/init" "$target"/etc/init.d/rcS "$target"/etc/init.d/rcK \
    "$target"/usr/libexec/ssdbench/*
# Accounts (Buildroot writes its own; the Debian-based dev image has none).
[[ -s $target/etc/passwd ]] || printf 'root::0:0:root:/root:/bin/sh\n' >"$target/etc/passwd"
[[ -s $target/etc/group ]] || printf 'root:x:0:\ndisk:x:6:\n' >"$target/etc/group"
[[ -s $target/etc/shadow ]] || { printf 'root::19000:0:99999:7:::\n' >"$target/etc/shadow"; chmod 600 "$target/etc/shadow"; }
# The console font the TUI is drawn with (Unicode box drawing), as one gzipped file rcS loads:
# /usr/share/consolefonts/ssdbench.psf.gz. The Buildroot image has kbd's fonts (kbd 2.9.0's
# names, e.g. Lat2-Terminus16.psfu, installed under share/kbd/consolefonts or
# share/consolefonts, gzipped or not); the Debian dev image has console-setup's
# (Uni2-Terminus16.psf.gz).
fonts=$target/usr/share/consolefonts
if [[ ! -e $fonts/ssdbench.psf.gz ]]; then
    for f in Lat2-Terminus16.psfu eurlatgr.psfu default8x16.psfu Uni2-Terminus16.psf Uni2-VGA16.psf; do
        for dir in usr/share/kbd/consolefonts usr/share/consolefonts; do
            src=
            if [[ -f $target/$dir/$f.gz ]]; then src=$dir/$f.gz; elif [[ -f $target/$dir/$f ]]; then src=$dir/$f; fi
            [[ -n $src ]] || continue
            mkdir -p "$fonts"
            if [[ $src == *.gz ]]; then ln -sfn "/$src" "$fonts/ssdbench.psf.gz"; else gzip -9nc "$target/$src" >"$fonts/ssdbench.psf.gz"; fi
            break 2
        done
    done
fi
# botocore/boto3 carry the models of every AWS service (28 MB, a fifth of the initramfs); a
# bench talks to S3 only (lab/store.py, docs/lab.md): keep the s3 models and the top-level
# endpoint/retry files.
for data in "$target"/usr/lib/python3*/*-packages/botocore/data \
            "$target"/usr/lib/python3*/*-packages/boto3/data; do
    [[ -d $data ]] && find "$data" -mindepth 1 -maxdepth 1 -type d ! -name s3 -exec rm -rf {} +
done
# /etc/ssdbench-image-id names the build in every log (rcS) and on the stick (post-image.sh).
# The dev image writes its own (a hash of all its inputs) before calling this script; the
# Buildroot image gets "<version>-<hash of the image's inputs from this repository>".
if [[ ! -s $target/etc/ssdbench-image-id ]]; then
    repo=$(cd "$(dirname "$0")/../.." && pwd)
    version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/tui/pyproject.toml")
    inputs=$(cd "$repo" && find overlay board/ssdbench buildroot-external tui/src tui/pyproject.toml \
        -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum |
        sha256sum | cut -c1-16)
    mkdir -p "$target/etc"
    printf '%s-%s\n' "$version" "$inputs" >"$target/etc/ssdbench-image-id"
fi
# post-image.sh copies $BINARIES_DIR/image-id onto the stick's boot partition.
if [[ -n ${BINARIES_DIR:-} ]]; then
    mkdir -p "$BINARIES_DIR"
    cp "$target/etc/ssdbench-image-id" "$BINARIES_DIR/image-id"
fi
