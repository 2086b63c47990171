#!/usr/bin/env bash
# Build the dev image: the release image's layout (board/ssdbench), overlay (overlay/) and
# Python package (tui/), with the kernel, modules, BusyBox and userland taken from Debian
# packages and Textual/matplotlib/numpy from PyPI. See docs/image.md.
#
#   scripts/build-dev-image.sh            build (or reuse) build/dev-image/ssdbench-dev.img
#   scripts/build-dev-image.sh --force    rebuild the root filesystem and image
#
# Output (build/dev-image/): ssdbench-dev.img (disk image for a USB stick),
# ssdbench-dev-sb.img (its Secure Boot edition: Debian's signed shim and GRUB on the EFI path;
# scripts/build-secure-boot-stick.sh), vmlinuz,
# initrd.img (zstd cpio), image-id (hash of every input; also /etc/ssdbench-image-id inside).
# Downloaded .debs and the Python dependencies are cached there, so a second build with the
# same inputs does nothing and a rebuild after an overlay/tui change takes about a minute.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${SSDBENCH_DEV_IMAGE_DIR:-$repo/build/dev-image}
board=$repo/board/ssdbench
force=0
[[ ${1:-} == --force ]] && force=1

say() { printf 'build-dev-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (the initramfs needs device nodes and root-owned files)"
for tool in apt-get dpkg-deb grub-mkimage genimage mkfs.vfat mcopy zstd cpio depmod sbverify; do
    command -v "$tool" >/dev/null || die "missing $tool: run scripts/install-deps.sh scripts/apt-packages-image.txt"
done

mkdir -p "$out/debs" "$out/apt"
# One build at a time: `make test` may ask for the image from two jobs at once (scripts/run-tests.py);
# the second waits and then finds it up to date.
exec 9>"$out/.lock"
flock 9
# Resolve the dependency closure of the image's packages against an empty dpkg status, so
# packages installed on the host are not left out; the mirror is whatever the host's apt
# sources name (nothing here names one).
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$board/dev-image-packages.txt" | grep -v '^$')
: >"$out/apt/empty-status"
apt_opts=(-o "Dir::State::status=$out/apt/empty-status" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
resolve() {
    apt-get "${apt_opts[@]}" install --print-uris -qq --no-install-recommends "${wanted[@]}"
}
if ! uris=$(resolve 2>"$out/apt/resolve.err"); then
    say "apt could not resolve the image packages; updating the package lists once"
    apt-get update -q >/dev/null
    uris=$(resolve) || die "apt cannot resolve: ${wanted[*]} (see $out/apt/resolve.err)"
fi
# Lines: 'URI' FILE SIZE HASH. Package names are the file names up to the first '_'.
mapfile -t debfiles < <(awk '{print $2}' <<<"$uris" | sort)
((${#debfiles[@]} > 20)) || die "dependency closure looks wrong (${#debfiles[@]} packages)"
missing=()
for f in "${debfiles[@]}"; do [[ -s $out/debs/$f ]] || missing+=("$f"); done
if ((${#missing[@]})); then
    say "downloading ${#missing[@]} of ${#debfiles[@]} Debian packages"
    specs=()
    for f in "${missing[@]}"; do
        name=${f%%_*}; ver=${f#*_}; ver=${ver%_*}; ver=${ver//%3a/:}
        specs+=("$name=$ver")
    done
    (cd "$out/debs" && apt-get "${apt_opts[@]}" download -q "${specs[@]}" >/dev/null)
    for f in "${missing[@]}"; do [[ -s $out/debs/$f ]] || die "download failed: $f"; done
fi

# Python dependencies from PyPI for the image's Python (Debian bookworm: 3.11), whatever the
# host runs: the target's version, ABI and platforms are given explicitly.
py_ver=$(printf '%s\n' "${debfiles[@]}" | sed -n 's/^python3\.\([0-9]*\)-minimal_.*/3.\1/p' | head -1)
[[ -n $py_ver ]] || die "no python3.X-minimal in the closure"
pip=$repo/.venv/bin/pip
[[ -x $pip ]] || pip="python3 -m pip"
py_reqs=$(python3 - "$repo/tui/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))
EOF
)
py_key=$(printf '%s\n%s\n' "$py_ver" "$py_reqs" | sha256sum | cut -c1-16)
pydeps=$out/pydeps-$py_key
if [[ ! -f $pydeps/.done ]]; then
    say "installing Python dependencies for Python $py_ver: $(tr '\n' ' ' <<<"$py_reqs")"
    rm -rf "$pydeps"
    abi=cp${py_ver/./}
    mapfile -t reqs <<<"$py_reqs"
    $pip install --quiet --disable-pip-version-check --no-compile --target "$pydeps" \
        --python-version "$py_ver" --implementation cp --abi "$abi" --only-binary=:all: \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 "${reqs[@]}"
    touch "$pydeps/.done"
fi

# Everything that goes into the image, hashed: a changed input rebuilds, nothing else does.
image_id=$(
    {
        printf '%s\n' "${debfiles[@]}" "$py_key"
        cd "$repo"
        find overlay board/ssdbench tui/src scripts/build-dev-image.sh -type f \
            ! -name '*.pyc' ! -path '*/__pycache__/*' ! -name linux.fragment -print0 |
            sort -z | xargs -0 sha256sum
    } | sha256sum | cut -c1-16
)
# The Secure Boot edition: a copy of the image with the signed boot chain (seconds; redone
# when the image or that script changed).
secure_boot_edition() {
    local sb=$out/ssdbench-dev-sb.img script=$repo/scripts/build-secure-boot-stick.sh
    [[ -f $sb && $sb -nt $out/ssdbench-dev.img && $sb -nt $script ]] && return 0
    "$script" "$out/ssdbench-dev.img" "$sb"
}
if [[ $force -eq 0 && -f $out/image-id && $(cat "$out/image-id") == "$image_id" && -f $out/ssdbench-dev.img ]]; then
    secure_boot_edition
    say "up to date (image id $image_id)"
    ls -l "$out/ssdbench-dev.img" "$out/initrd.img" "$out/vmlinuz" >&2
    exit 0
fi

say "assembling the root filesystem (image id $image_id)"
t0=$SECONDS
root=$out/rootfs
umount "$root/dev/shm" 2>/dev/null || true
rm -rf "$root"
mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64"
# merged /usr, as Debian bookworm installs it
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
# Packages whose files the running appliance never uses (package management, perl, the
# host-side initramfs generator, udev: BusyBox mdev and a modalias scan replace it).
skip='^(perl|perl-base|perl-modules-.*|libperl.*|dpkg|debconf|initramfs-tools.*|klibc-utils|libklibc|linux-base|usrmerge|adduser|passwd|udev|init-system-helpers|lib.*-perl|libfile-find-rule-perl|sysvinit-utils|logsave|xkb-data|keyboard-configuration)$'
for f in "${debfiles[@]}"; do
    name=${f%%_*}
    case $name in
    linux-image-[0-9]*)
        # unpacked once per kernel package (the slowest .deb to unpack)
        kern=$out/kernel-${f%.deb}
        if [[ ! -f $kern/.done ]]; then
            rm -rf "$out"/kernel-*
            mkdir -p "$kern"
            dpkg-deb --fsys-tarfile "$out/debs/$f" | tar -x -C "$kern"
            touch "$kern/.done"
        fi ;;
    *) [[ $name =~ $skip ]] && continue
       dpkg-deb --fsys-tarfile "$out/debs/$f" | tar -x --keep-directory-symlink -C "$root" ;;
    esac
done
[[ -n ${kern:-} ]] || die "no linux-image package in the closure"

# Kernel and the modules the appliance loads (storage, USB, input, FAT), with their deps.
kver=$(ls "$kern/lib/modules")
cp "$kern/boot/vmlinuz-$kver" "$out/vmlinuz"
depmod -b "$kern" "$kver"  # the package leaves modules.dep to its postinst
python3 - "$kern/lib/modules/$kver" "$root/usr/lib/modules/$kver" <<'EOF'
import shutil, sys
from pathlib import Path
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
dirs = ("kernel/drivers/ata/", "kernel/drivers/nvme/host/nvme.ko", "kernel/drivers/usb/host/",
        "kernel/drivers/usb/storage/", "kernel/drivers/usb/common/", "kernel/drivers/usb/core/",
        "kernel/drivers/hid/", "kernel/drivers/input/keyboard/", "kernel/drivers/input/serio/",
        "kernel/drivers/input/evdev", "kernel/fs/fat/", "kernel/fs/exfat/",
        "kernel/fs/nls/", "kernel/fs/efivarfs/", "kernel/drivers/scsi/sd_mod", "kernel/drivers/scsi/sg.",
        "kernel/drivers/scsi/scsi_mod", "kernel/drivers/block/loop", "kernel/drivers/scsi/virtio",
        "kernel/drivers/block/virtio", "kernel/drivers/virtio/", "kernel/drivers/char/nvram",
        # wired NICs for network boot and the lab's store (docs/lab.md): QEMU's virtio and
        # e1000, the Intel, Realtek and Broadcom ones of desktop boards, USB Ethernet
        # adapters (not the server NICs: ice, i40e, ixgbe are 4 MB)
        "kernel/drivers/net/virtio_net", "kernel/drivers/net/ethernet/intel/e1000",
        "kernel/drivers/net/ethernet/intel/igb/", "kernel/drivers/net/ethernet/intel/igc/",
        "kernel/drivers/net/ethernet/realtek/", "kernel/drivers/net/ethernet/broadcom/tg3",
        "kernel/drivers/net/usb/")
deps = {}
for line in (src / "modules.dep").read_text().splitlines():
    mod, _, rest = line.partition(":")
    deps[mod] = rest.split()
todo = [m for m in deps if m.startswith(dirs) and "/hid/hid-" not in m or m.endswith(
    ("/hid-generic.ko", "/hid-generic.ko.xz"))]
seen = set()
while todo:
    m = todo.pop()
    if m in seen:
        continue
    seen.add(m)
    todo.extend(deps[m])
for m in seen:
    (dst / m).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / m, dst / m)
for f in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
    shutil.copy2(src / f, dst / f)
print(f"build-dev-image: {len(seen)} kernel modules", file=sys.stderr)
EOF
depmod -b "$root" "$kver"

# Python dependencies and the ssdbench package itself (source tree, as in the Buildroot image).
site=$root/usr/lib/python3/dist-packages
mkdir -p "$site"
cp -a "$pydeps/." "$site/"
rm -f "$site/.done"
rm -rf "${site:?}/bin"
cp -a "$repo/tui/src/ssdbench" "$site/"
cat >"$root/usr/bin/ssdbench" <<'EOF'
#!/usr/bin/python3
import sys

from ssdbench.cli import main

sys.exit(main())
EOF
chmod 755 "$root/usr/bin/ssdbench"

# BusyBox applets for what Debian's packages do not provide (real tools win).
"$root/usr/bin/busybox" --list-full | while read -r applet; do
    [[ -e $root/$applet || -L $root/$applet ]] || ln -s /usr/bin/busybox "$root/$applet"
done

# The overlay and the board's post-build step, shared with the Buildroot build.
cp -a "$repo/overlay/." "$root/"
rm -f "$root/README.md"
echo "$image_id" >"$root/etc/ssdbench-image-id"
TARGET_DIR=$root "$board/post-build.sh" "$root"

# Strip what the appliance never reads.
rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,bug,menu,bash-completion,zsh,common-licenses} \
    "$root"/usr/include "$root"/usr/lib/python3.*/{test,idlelib,tkinter,turtledemo,ensurepip,lib2to3,pydoc_data} \
    "$root"/usr/lib/x86_64-linux-gnu/perl* "$root"/var/cache/* "$root"/var/lib/dpkg \
    "$site"/*/tests "$site"/*/testing/tests "$site"/matplotlib/mpl-data/sample_data \
    "$site"/numpy/*/tests "$site"/numpy/_core/include "$site"/numpy/core/include \
    "$root"/usr/share/keyboard "$root"/etc/console-setup
# fio links librados (its rbd engine): keep libceph-common, drop ceph's plugins
find "$root/usr/lib/x86_64-linux-gnu/ceph" -mindepth 1 -type d -prune -exec rm -rf {} +
# glibc's character set converters: only what Python and the tools use.
find "$root/usr/lib/x86_64-linux-gnu/gconv" -name '*.so' ! -name 'UTF-*' ! -name 'UNICODE.so' \
    ! -name 'ISO8859-1.so' ! -name 'IBM437.so' -delete 2>/dev/null || true
# console fonts: the 16-pixel Terminus and VGA ones (the TUI's; see post-build.sh)
find "$root/usr/share/consolefonts" -type f ! -name 'Uni2-Terminus16.psf.gz' \
    ! -name 'Lat2-Terminus16.psf.gz' ! -name 'Uni2-VGA16.psf.gz' -delete 2>/dev/null || true
find "$root" \( -name __pycache__ -o -name '*.pyc' -o -name '*.a' -o -name '*.pyi' \) \
    -prune -exec rm -rf {} +
# Byte-compile once with the image's own interpreter (a TCG boot compiling the stdlib and
# Textual on every start costs seconds); unchecked-hash pycs do not depend on mtimes.
mkdir -p "$root/dev/shm"
mount -t tmpfs -o size=64m ssdbench-build "$root/dev/shm" # multiprocessing needs it
trap 'umount "$root/dev/shm" 2>/dev/null || true' EXIT
chroot "$root" /usr/bin/python3 -m compileall -q -j 0 --invalidation-mode unchecked-hash \
    /usr/lib/python3.* /usr/lib/python3/dist-packages >/dev/null ||
    die "byte-compiling in the staged root failed"
# matplotlib's font cache, built once here: otherwise every boot rebuilds it ("building
# the font cache"), which costs tens of seconds under QEMU's emulation. The overlay points
# MPLCONFIGDIR here (a Buildroot image builds it on first use instead).
chroot "$root" /usr/bin/env MPLCONFIGDIR=/var/cache/ssdbench/matplotlib HOME=/root \
    /usr/bin/python3 -c 'import matplotlib.font_manager' ||
    die "building matplotlib's font cache in the staged root failed"
umount "$root/dev/shm"
trap - EXIT
# Every tool the appliance runs must find its shared libraries after the stripping above.
for tool in fio nvme hdparm smartctl python3 lsblk blkid sfdisk sgdisk mkfs.vfat setfont kmod \
    blkdiscard wipefs busybox; do
    path=$(cd "$root" && ls usr/bin/$tool usr/sbin/$tool 2>/dev/null | head -1 || true)
    [[ -n $path ]] || die "$tool missing from the root filesystem"
    if chroot "$root" /lib64/ld-linux-x86-64.so.2 --list "/$path" 2>&1 | grep -q 'not found'; then
        chroot "$root" /lib64/ld-linux-x86-64.so.2 --list "/$path" | grep 'not found' >&2
        die "/$path: shared libraries missing"
    fi
done
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
mknod -m 666 "$root/dev/null" c 1 3 2>/dev/null || true

say "packing the initramfs"
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) |
    zstd -q -T0 -${SSDBENCH_ZSTD_LEVEL:-12} -f -o "$out/initrd.img"

# The disk image: the same post-image script and genimage config as the Buildroot build.
bin=$out/binaries
rm -rf "$bin"
mkdir -p "$bin"
cp "$out/vmlinuz" "$bin/bzImage"
cp "$out/initrd.img" "$bin/rootfs.cpio.zst"
echo "$image_id" >"$bin/image-id"
SSDBENCH_IMAGE_NAME=ssdbench-dev.img "$board/post-image.sh" "$bin"
mv "$bin/ssdbench-dev.img" "$out/ssdbench-dev.img"
echo "$image_id" >"$out/image-id"
secure_boot_edition
say "built in $((SECONDS - t0)) s"
du -sh "$root" | awk '{print "build-dev-image: root filesystem " $1}' >&2
ls -l "$out/vmlinuz" "$out/initrd.img" "$out/ssdbench-dev.img" >&2
