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
# The console font the TUI is drawn with (Unicode box drawing) when kbd ships one.
fonts=$target/usr/share/consolefonts
if [[ -d $fonts && ! -e $fonts/ssdbench.psf.gz ]]; then
    for f in Uni2-Terminus16.psf.gz Lat2-Terminus16.psf.gz Uni2-VGA16.psf.gz default8x16.psfu.gz; do
        if [[ -e $fonts/$f ]]; then ln -s "$f" "$fonts/ssdbench.psf.gz"; break; fi
    done
fi
