#!/usr/bin/env bash
# The files a lab's boot server hands out to boot ssdbench over the network (docs/lab.md,
# "Network boot"): the kernel and initramfs (the whole system runs from RAM), an iPXE script
# that loads both over HTTP, and Debian's iPXE binaries to chain-load iPXE from a PC's own
# PXE firmware: undionly.kpxe (legacy BIOS), ipxe.efi and snponly.efi (UEFI).
#
#   scripts/netboot.sh [options]
#     --out DIR          where the files go (default build/netboot)
#     --kernel FILE      kernel (default build/dev-image/vmlinuz; the Buildroot image's is
#                        build/buildroot/images/bzImage)
#     --initrd FILE      initramfs (default build/dev-image/initrd.img; Buildroot's is
#                        images/rootfs.cpio.zst); both are copied as vmlinuz and initrd.img
#     --base-url URL     where the boot server's HTTP serves DIR (default
#                        http://${next-server}: iPXE puts in the DHCP/TFTP server's address)
#     --mode MODE        ssdbench.mode= of the boot: kiosk (default), interactive, diagnose
#     --append ARGS      more kernel arguments, e.g.
#                        "ssdbench.config=http://10.0.0.1/ssdbench.toml ssdbench.poweroff=1"
#     --link             symbolic links to the kernel and initramfs instead of copies
#
# DIR then holds: vmlinuz, initrd.img, boot.ipxe, undionly.kpxe, ipxe.efi, snponly.efi.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build/netboot
kernel=$repo/build/dev-image/vmlinuz
initrd=$repo/build/dev-image/initrd.img
# shellcheck disable=SC2016  # iPXE expands it, not the shell
base='http://${next-server}'
mode=kiosk append='' link=0
ipxe_dir=${SSDBENCH_IPXE_DIR:-/usr/lib/ipxe}

die() { echo "netboot: error: $*" >&2; exit 2; }

while (($#)); do
    case $1 in
    --out) out=$2; shift ;;
    --kernel) kernel=$2; shift ;;
    --initrd) initrd=$2; shift ;;
    --base-url) base=${2%/}; shift ;;
    --mode) mode=$2; shift ;;
    --append) append+=" $2"; shift ;;
    --link) link=1 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
case $mode in kiosk | interactive | diagnose) ;; *) die "--mode kiosk|interactive|diagnose" ;; esac
[[ -f $kernel ]] || die "no kernel $kernel (make dev-image)"
[[ -f $initrd ]] || die "no initramfs $initrd (make dev-image)"
for f in undionly.kpxe ipxe.efi snponly.efi; do
    [[ -f $ipxe_dir/$f ]] || die "no $ipxe_dir/$f: apt-get install ipxe"
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
put() {  # SRC NAME
    rm -f "$out/$2"
    if [[ $link -eq 1 ]]; then ln -s "$(readlink -f "$1")" "$out/$2"; else cp "$1" "$out/$2"; fi
}
put "$kernel" vmlinuz
put "$initrd" initrd.img
for f in undionly.kpxe ipxe.efi snponly.efi; do cp "$ipxe_dir/$f" "$out/$f"; done

# The command line the stick's boot menu gives, read from it (board/ssdbench/grub.cfg,
# ssdbench_base: consoles, libata.allow_tpm=1, ...) so the two never drift apart.
# initrd=initrd.img: UEFI's kernel stub finds the initramfs iPXE registered under that name.
grub_base=$(sed -n 's/^set ssdbench_base="\(.*\)"$/\1/p' "$repo/board/ssdbench/grub.cfg")
[[ -n $grub_base ]] || die "no ssdbench_base in board/ssdbench/grub.cfg"
cmdline="initrd=initrd.img ssdbench.mode=$mode $grub_base${append}"
image_id=$(cat "$(dirname "$initrd")/image-id" 2>/dev/null || echo unknown)
cat >"$out/boot.ipxe" <<IPXE
#!ipxe
# ssdbench network boot (docs/lab.md "Network boot"), written by scripts/netboot.sh for
# image $image_id. Kernel and initramfs come over HTTP (TFTP is far too slow for 100 MB).
# \${ssdbench-base} set before this script (e.g. in an embedded script) wins.
isset \${ssdbench-base} || set ssdbench-base $base
:load
echo ssdbench: loading \${ssdbench-base}/vmlinuz and initrd.img
kernel \${ssdbench-base}/vmlinuz $cmdline || goto retry
initrd --name initrd.img \${ssdbench-base}/initrd.img || goto retry
boot || goto retry
:retry
echo ssdbench: network boot failed; trying again in 10 s
sleep 10
goto load
IPXE
echo "netboot: $out: $(cd "$out" && echo *)" >&2
echo "netboot: kernel arguments: $cmdline" >&2
