#!/usr/bin/env bash
# Make the USB stick image from a kernel and an initramfs (both builds run this).
#   post-image.sh BINARIES_DIR
# BINARIES_DIR holds bzImage and rootfs.cpio.zst (or .xz/.gz/.lz4), optionally image-id.
# Writes BINARIES_DIR/$SSDBENCH_IMAGE_NAME (default ssdbench.img).
# Environment: SSDBENCH_RESULTS_SIZE (FAT32 SSDRESULTS size, default 256M); Buildroot's
# HOST_DIR (grub-mkimage, genimage) and BUILD_DIR (grub2-*/build-{i386-pc,x86_64-efi}/grub-core)
# are used when set, else the host's tools and /usr/lib/grub (Debian grub-pc-bin,
# grub-efi-amd64-bin). Both builds make their GRUB core images here, from grub-early.cfg.
set -euo pipefail
bin=${1:?usage: post-image.sh BINARIES_DIR}
bin=$(cd "$bin" && pwd)
board=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$board/../.." && pwd)
name=${SSDBENCH_IMAGE_NAME:-ssdbench.img}
results_size=${SSDBENCH_RESULTS_SIZE:-256M}

die() { echo "post-image: error: $*" >&2; exit 1; }
pick() { for p in "$@"; do if [[ -e $p ]]; then echo "$p"; return 0; fi; done; return 1; }

host=${HOST_DIR:-/nonexistent}
mkimage=$(pick "$host/bin/grub-mkimage" /usr/bin/grub-mkimage) || die "grub-mkimage not found"
# Buildroot: the target GRUB's module directories (its host GRUB has no platform directory).
build=${BUILD_DIR:-/nonexistent}
pc_dir=$(pick "$build"/grub2-*/build-i386-pc/grub-core/boot.img "$host/lib/grub/i386-pc/boot.img" \
    /usr/lib/grub/i386-pc/boot.img) || die "GRUB i386-pc modules not found (grub-pc-bin)"
pc_dir=$(dirname "$pc_dir")
efi_dir=$(pick "$build"/grub2-*/build-x86_64-efi/grub-core/normal.mod \
    "$host/lib/grub/x86_64-efi/normal.mod" /usr/lib/grub/x86_64-efi/normal.mod) ||
    die "GRUB x86_64-efi modules not found (grub-efi-amd64-bin)"
efi_dir=$(dirname "$efi_dir")
genimage=$(pick "$host/bin/genimage" /usr/bin/genimage) || die "genimage not found"
[[ -f $bin/bzImage ]] || die "$bin/bzImage missing"
initrd=$(pick "$bin"/rootfs.cpio.{zst,xz,gz,lz4}) || die "no rootfs.cpio.{zst,xz,gz,lz4} in $bin"

work=$bin/ssdbench-image.tmp
rm -rf "$work"
mkdir -p "$work/in" "$work/tmp" "$work/root"
in=$work/in

# GRUB: the same early config and menu for BIOS and UEFI. Modules are linked into the core
# images, so the boot partition needs no GRUB module directory.
common=(part_msdos part_gpt fat search search_label search_fs_uuid configfile normal linux echo
        test loadenv serial terminal eval sleep halt reboot)
"$mkimage" -d "$pc_dir" -O i386-pc -o "$in/core.img" -c "$board/grub-early.cfg" \
    -p "(,msdos1)/boot/grub" biosdisk "${common[@]}"
"$mkimage" -d "$efi_dir" -O x86_64-efi -o "$in/bootx64.efi" -c "$board/grub-early.cfg" \
    -p /boot/grub efi_gop efi_uga "${common[@]}"
cp "$pc_dir/boot.img" "$in/boot.img"
core_size=$(stat -c %s "$in/core.img")
((core_size <= 1048576 - 512)) || die "core.img ($core_size bytes) does not fit before the first partition"

cp "$board/grub.cfg" "$in/grub.cfg"
{ printf '# GRUB Environment Block\n'; head -c 1000 /dev/zero | tr '\0' '#'; } | head -c 1024 >"$in/grubenv"
cp "$board/results-README.txt" "$in/results-README.txt"
cp "$repo/tui/src/ssdbench/data/ssdbench.toml.example" "$in/ssdbench.toml.example"
if [[ -f $bin/image-id ]]; then cp "$bin/image-id" "$in/image-id"; else date -u +%Y%m%dT%H%M%SZ >"$in/image-id"; fi
ln -sf "$bin/bzImage" "$in/bzImage"
ln -sf "$initrd" "$in/$(basename "$initrd")"

# Boot partition: its files plus 8 MiB, at least 40 MiB (FAT32 with 512-byte clusters).
files_kib=$(du -kLc "$in"/bootx64.efi "$in/bzImage" "$initrd" "$in/grub.cfg" | tail -1 | cut -f1)
boot_mib=$(((files_kib * 105 / 100 + 1023) / 1024 + 8))
((boot_mib >= 40)) || boot_mib=40

sed -e "s|@KERNEL@|bzImage|" -e "s|@INITRD@|$(basename "$initrd")|" \
    -e "s|@BOOT_SIZE@|${boot_mib}M|" -e "s|@RESULTS_SIZE@|$results_size|" \
    -e "s|@IMAGE_NAME@|$name|" "$board/genimage.cfg" >"$work/genimage.cfg"
"$genimage" --config "$work/genimage.cfg" --inputpath "$in" --outputpath "$work/out" \
    --tmppath "$work/tmp" --rootpath "$work/root" >"$work/genimage.log" 2>&1 ||
    { cat "$work/genimage.log" >&2; die "genimage failed"; }
mv "$work/out/$name" "$bin/$name"
rm -rf "$work"
echo "post-image: $bin/$name (boot partition ${boot_mib} MiB, SSDRESULTS $results_size)" >&2
