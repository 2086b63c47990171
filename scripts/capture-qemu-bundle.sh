#!/bin/sh
# Capture a support bundle (`ssdbench bundle`) inside a QEMU guest with emulated drives,
# as test data for tests/unit/devices/test_bundles.py.
#
#   scripts/capture-qemu-bundle.sh OUTDIR
#
# The guest boots this machine's Debian kernel (/boot/vmlinuz-*) with a BusyBox
# initramfs, mounts this machine's root read-only over 9p, chroots into it and runs the
# venv's `ssdbench bundle` with the real nvme-cli, hdparm, lsblk and smartctl.  Drives:
#   - NVMe (QEMU nvme, serial SSDBNVME0001), discard=unmap
#   - AHCI SATA disk (ide-hd model "SSDBENCH SATA DISK", serial SSDBSATA0001), discard=unmap
#   - virtio disk with ext4, mounted in the guest at /mnt      -> protected mounted:/mnt
#   - virtio disk used as swap                                 -> protected swap
#   - USB stick (usb-storage) with a FAT partition labelled SSDRESULTS, named as the boot
#     medium by ssdbench.boot=LABEL=SSDRESULTS on the kernel command line
# Nothing on this machine is written except OUTDIR and a temporary folder.
set -eu

out=${1:?usage: $0 OUTDIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
kver=${KVER:-$(ls /lib/modules | sort -V | tail -n 1)}
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || { echo "$0: no $kernel (install linux-image-amd64)" >&2; exit 1; }
[ ! -e "$out" ] || { echo "$0: $out exists" >&2; exit 1; }

work=$(mktemp -d /tmp/ssdbench-capture.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/initrd/bin" "$work/initrd/proc" "$work/initrd/sys" "$work/initrd/dev" \
    "$work/initrd/host" "$work/initrd/lib/modules" "$work/share"

# Modules (with their dependencies, in load order) from the host's kernel package.
: >"$work/initrd/modules.list"
for m in virtio_pci 9pnet_virtio 9p nvme ahci sd_mod virtio_blk xhci_pci usb-storage ext4; do
    modprobe -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | awk '!seen[$0]++' | while read -r ko; do
    base=$(basename "$ko")
    case "$ko" in
        *.ko.xz) xz -dc "$ko" >"$work/initrd/lib/modules/${base%.xz}"; base=${base%.xz} ;;
        *.ko.zst) zstd -qdc "$ko" >"$work/initrd/lib/modules/${base%.zst}"; base=${base%.zst} ;;
        *) cp "$ko" "$work/initrd/lib/modules/$base" ;;
    esac
    echo "$base" >>"$work/initrd/modules.list"
done
cp /bin/busybox "$work/initrd/bin/busybox"

cat >"$work/initrd/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do insmod "/lib/modules/$m" 2>/dev/null; done
# Wait (with a deadline) for the emulated drives to appear.
i=0
while [ $i -lt 300 ]; do
    n=$(ls /sys/block | grep -c -E '^(nvme0n1|sd[a-z]|vd[a-z])$')
    [ "$n" -ge 5 ] && break
    sleep 0.1; i=$((i + 1))
done
ls /sys/block
mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /host
mount -t 9p -o trans=virtio,version=9p2000.L out /host/tmp
for d in proc sys dev; do mount --bind /$d /host/$d; done
mount -t ext4 /dev/vda /host/mnt
swapon /dev/vdb
chroot /host /usr/bin/env PYTHONDONTWRITEBYTECODE=1 HOME=/root \
    @REPO@/.venv/bin/python -m ssdbench.commands.bundle /tmp/bundle
echo "capture exit status $?"
sync
poweroff -f
EOF
sed -i "s|@REPO@|$repo|" "$work/initrd/init"
chmod +x "$work/initrd/init"
(cd "$work/initrd" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

# Drives (sparse files; nothing but these files is ever written).
truncate -s 256M "$work/nvme.img" "$work/sata.img"
truncate -s 64M "$work/ext4.img" "$work/swap.img" "$work/usb.img"
mkfs.ext4 -q -F -L guestdata "$work/ext4.img"
mkswap -q "$work/swap.img" >/dev/null
printf 'label: dos\nstart=2048, type=c\n' | sfdisk -q "$work/usb.img"
mformat -i "$work/usb.img@@1M" -v SSDRESULTS -F ::

timeout 600 qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 1536 -smp 2 -nographic -no-reboot \
    -kernel "$kernel" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 panic=-1 ssdbench.boot=LABEL=SSDRESULTS" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs local,path="$work/share",mount_tag=out,security_model=none \
    -drive file="$work/nvme.img",if=none,id=drvnvme,format=raw,discard=unmap \
    -device nvme,serial=SSDBNVME0001,drive=drvnvme \
    -drive file="$work/sata.img",if=none,id=drvsata,format=raw,discard=unmap \
    -device ahci,id=ahci \
    -device ide-hd,bus=ahci.0,drive=drvsata,model="SSDBENCH SATA DISK",serial=SSDBSATA0001,discard_granularity=512 \
    -drive file="$work/ext4.img",if=virtio,format=raw,discard=unmap \
    -drive file="$work/swap.img",if=virtio,format=raw \
    -drive file="$work/usb.img",if=none,id=drvusb,format=raw \
    -device qemu-xhci -device usb-storage,drive=drvusb,serial=SSDBUSB00001 \
    </dev/null | tee "$work/console.log"

[ -f "$work/share/bundle/manifest.json" ] || {
    echo "$0: the guest wrote no bundle (console log above)" >&2; exit 1; }
cp -r "$work/share/bundle" "$out"
echo "bundle written to $out"
