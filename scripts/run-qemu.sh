#!/usr/bin/env bash
# Boot an ssdbench image (dev or Buildroot) in QEMU as a USB stick, with emulated drives.
#
#   scripts/run-qemu.sh [options]
#     --image IMG          disk image (default build/dev-image/ssdbench-dev.img); booted from a
#                          copy, WORKDIR/stick.img, so the image itself never changes
#     --workdir DIR        drives, stick copy, serial log, QMP socket, results (default build/qemu)
#     --uefi               OVMF instead of SeaBIOS (legacy BIOS)
#     --secure-boot        OVMF with Secure Boot enforcing and Microsoft's keys enrolled, as
#                          a PC ships (OVMF_CODE_4M.secboot.fd, a copy of OVMF_VARS_4M.ms.fd,
#                          SMM on); default image the Secure Boot edition,
#                          build/dev-image/ssdbench-dev-sb.img (docs/image.md)
#     --nvme SPEC          an NVMe drive; SPEC = SIZE|file=PATH|nbd=SOCKET [,serial=S]  (repeatable)
#                          [,subsys=NQN]: in an NVM subsystem of its own named NQN, so two
#                          drives can report one serial (QEMU's default NQN holds the serial,
#                          and the kernel rejects a second controller of a subsystem)
#     --sata SPEC          an AHCI SATA disk; SPEC = SIZE|file=PATH|nbd=SOCKET [,serial=S][,model=M]
#                          SIZE drives are new sparse files WORKDIR/nvme0.img, sata0.img, ...
#                          nbd=SOCKET (NVMe too): an NBD server's export on a unix socket,
#                          e.g. a simulated SSD (scripts/simdrive start); discard=unmap, so
#                          TRIM, Format NVM and write-zeroes reach the server
#     --entry ID           boot menu entry without a keystroke: interactive, kiosk, diagnose,
#                          serial, safe (written to the stick's grubenv; menu timeout 0)
#     --append ARGS        extra kernel arguments (through grubenv)
#     --cmd COMMAND        run COMMAND in the guest (ssdbench.cmd=), output between markers on
#                          the serial console, then power off (dev/test only; no " \ or $:
#                          put a script with --put and run `sh /mnt/ssdresults/NAME`)
#     --kiosk-config FILE  copy FILE to the stick's SSDRESULTS as ssdbench.toml before boot
#     --put FILE           copy FILE to the root of the stick's SSDRESULTS (repeatable)
#     --prepare-only       prepare WORKDIR/stick.img (grubenv, files) and stop; boot it later
#                          with --keep-stick
#     --results DIR        copy SSDRESULTS out here after power-off (default WORKDIR/results)
#     --timeout SECONDS    kill QEMU after this long (exit 124)
#     --batch              serial console to WORKDIR/serial.log only (default when stdin is
#                          not a terminal); WORKDIR/serial-times.log has seconds since start
#     --serial-input PATH  with --batch: the serial console's input from PATH (a FIFO a test
#                          writes to: a barcode scanner's lines typed on ttyS0)
#     --memory MIB (2048)  --smp N (2)  --accel auto|kvm|tcg (auto: KVM only if it works)
#     --keep-stick         boot the existing WORKDIR/stick.img again (e.g. after a power cut)
#     --nvme-hotplug       put each NVMe drive behind its own PCIe root port (nvmeN-port), so
#                          QMP device_del nvmeN unplugs it (on the root complex it cannot be)
#     --hotplug-ports N    N empty PCIe root ports (ids hotplug0, hotplug1, ...) for drives
#                          added later: QMP blockdev-add, then device_add nvme with
#                          bus=hotplugN (a PCIe device cannot be hot-added on the root complex)
#     --netboot DIR        no stick: boot from the network like a lab's bench (docs/lab.md)
#                          through QEMU's user-mode network: its DHCP and TFTP serve DIR
#                          (made by scripts/netboot.sh: boot.ipxe loads the kernel and
#                          initramfs over HTTP), an e1000 NIC (id nic0: QMP set_link cuts
#                          it) with Debian's iPXE ROM; kernel arguments are in DIR/boot.ipxe.
#                          The guest reaches the host's 127.0.0.1 as 10.0.2.2
#     --net-hostname NAME  the host name QEMU's DHCP gives the guest (with --netboot)
#     --net                a stick boot with a NIC on QEMU's user-mode network (e1000, id
#                          nic0; DHCP; the host's 127.0.0.1 is 10.0.2.2): a bench that
#                          fetches its lab key or sends its results to a store
#     --direct             start the stick's own kernel and initramfs with QEMU's -kernel and
#                          -initrd and the command line GRUB would give the stick's entry
#                          (grubenv: --entry, --append); no firmware, no GRUB: about 20 s
#                          less under TCG (tests; the default boots like a PC does). Leaves
#                          WORKDIR/direct-{vmlinuz,initrd.img,cmdline}, --prepare-only too
# QMP: WORKDIR/qmp.sock (e.g. device_del for hot-unplug tests; drives have ids nvme0, sata0).
# Exit code: QEMU's (0 after a guest power-off), 124 on timeout.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

image=$repo/build/dev-image/ssdbench-dev.img
work=$repo/build/qemu
uefi=0 secure_boot=0 image_given=0 entry= append= cmd= kiosk_config= results= timeout= batch= memory=2048 smp=2 serial_input=/dev/null
accel=${SSDBENCH_QEMU_ACCEL:-auto} keep_stick=0 verbose=0
netboot='' net_hostname='' user_net=0
nvme_specs=() sata_specs=() puts=() prepare_only=0 nvme_hotplug=0 direct=0 hotplug_ports=0

die() { echo "run-qemu: error: $*" >&2; exit 2; }
say() { echo "run-qemu: $*" >&2; }

while (($#)); do
    case $1 in
    --image) image=$2; image_given=1; shift ;;
    --workdir) work=$2; shift ;;
    --uefi) uefi=1 ;;
    --secure-boot) uefi=1; secure_boot=1 ;;
    --bios) uefi=0 ;;
    --nvme) nvme_specs+=("$2"); shift ;;
    --sata) sata_specs+=("$2"); shift ;;
    --entry) entry=$2; shift ;;
    --append) append+=" $2"; shift ;;
    --cmd) cmd=$2; shift ;;
    --kiosk-config) kiosk_config=$2; shift ;;
    --results) results=$2; shift ;;
    --put) puts+=("$2"); shift ;;
    --prepare-only) prepare_only=1 ;;
    --timeout) timeout=$2; shift ;;
    --batch) batch=1 ;;
    --serial-input) serial_input=$2; shift ;;
    --verbose) verbose=1 ;;
    --memory) memory=$2; shift ;;
    --smp) smp=$2; shift ;;
    --accel) accel=$2; shift ;;
    --keep-stick) keep_stick=1 ;;
    --nvme-hotplug) nvme_hotplug=1 ;;
    --direct) direct=1 ;;
    --netboot) netboot=$2; shift ;;
    --net-hostname) net_hostname=$2; shift ;;
    --net) user_net=1 ;;
    --hotplug-ports) hotplug_ports=$2; shift ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
if [[ $secure_boot -eq 1 ]]; then
    [[ $uefi -eq 1 ]] || die "--secure-boot is UEFI: not with --bios"
    [[ $image_given -eq 1 ]] || image=$repo/build/dev-image/ssdbench-dev-sb.img
fi
[[ -z $batch ]] && { [[ -t 0 ]] && batch=0 || batch=1; }
for tool in qemu-system-x86_64 mcopy sfdisk; do
    command -v "$tool" >/dev/null || die "missing $tool: scripts/install-deps.sh scripts/apt-packages-image.txt"
done
[[ -n $netboot || -f $image ]] || die "no image $image (make dev-image)"
case $entry in '' | interactive | kiosk | diagnose | serial | safe) ;; *) die "unknown --entry $entry" ;; esac
# GRUB's eval would expand $ and eat quotes/backslashes: longer scripts go in with --put.
[[ $cmd == *'"'* || $cmd == *\\* || $cmd == *'$'* ]] &&
    die "--cmd cannot contain \", \\ or \$ (put a script on the stick with --put and run it)"
mkdir -p "$work"
work=$(cd "$work" && pwd)
results=${results:-$work/results}

# Accelerator: KVM only where it really runs a kernel (/dev/kvm can exist, run the firmware
# and still hang once Linux starts); TCG otherwise. The probe boots a kernel with no root
# and waits up to 10 s for its first line on the serial port.
kvm_works() {
    [[ -r /dev/kvm && -w /dev/kvm ]] || return 1
    local kernel probe=$work/kvm-probe.log
    kernel=$(ls "$(dirname "$image")/vmlinuz" /boot/vmlinuz-* 2>/dev/null | head -1)
    [[ -n $kernel ]] || return 1
    rm -f "$probe"
    timeout 10 qemu-system-x86_64 -accel kvm -cpu host -machine q35 -nodefaults -display none \
        -m 256 -serial "file:$probe" -kernel "$kernel" -append "console=ttyS0 panic=-1" \
        -no-reboot >/dev/null 2>&1 &
    local pid=$! n=0
    while ((n < 50)); do
        if grep -q "Linux version" "$probe" 2>/dev/null; then
            kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2; n=$((n + 1))
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    return 1
}
case $accel in
auto) if kvm_works; then accel=kvm; else accel=tcg; fi ;;
kvm | tcg) ;;
*) die "--accel auto|kvm|tcg" ;;
esac

stick_dev=() net=() kernel_boot=()
if [[ -n $netboot ]]; then
    [[ -f $netboot/boot.ipxe ]] || die "--netboot: no $netboot/boot.ipxe (scripts/netboot.sh --out DIR)"
    [[ -z $entry$append$cmd$kiosk_config && ${#puts[@]} -eq 0 && $direct -eq 0 && $prepare_only -eq 0 ]] ||
        die "--netboot has no stick: no --entry, --append, --cmd, --kiosk-config, --put, --direct or --prepare-only (kernel arguments: scripts/netboot.sh --append)"
    netboot=$(cd "$netboot" && pwd)
    # e1000 with its iPXE ROM (Debian ipxe-qemu efi-e1000.rom: legacy and UEFI), -boot n
    netdev="user,id=net0,tftp=$netboot,bootfile=boot.ipxe${net_hostname:+,hostname=$net_hostname}"
    net=(-netdev "$netdev" -device "e1000,id=nic0,netdev=net0" -boot n)
else
    if [[ $user_net -eq 1 ]]; then
        net=(-netdev "user,id=net0${net_hostname:+,hostname=$net_hostname}"
            -device "e1000,id=nic0,netdev=net0")
    fi
    stick=$work/stick.img
    if [[ $keep_stick -eq 0 || ! -f $stick ]]; then
        cp --sparse=always "$image" "$stick"
    fi

    # Byte offset of partition N of a disk image.
    part_offset() {
        sfdisk --dump "$1" | awk -v n="$2" '
            /^\// { i++; if (i == n) { sub(/.*start= */, ""); sub(/,.*/, ""); print $0 * 512; exit } }'
    }
    boot_off=$(part_offset "$stick" 1)
    res_off=$(part_offset "$stick" 2)
    [[ -n $boot_off && -n $res_off ]] || die "$image has no boot + results partitions"
    export MTOOLS_SKIP_CHECK=1

    # GRUB environment: entry, no menu delay, extra kernel arguments.
    if [[ -n $cmd ]]; then append+=" ssdbench.cmd=\"$cmd\""; fi
    # Under TCG every page the guest kernel zeroes costs emulated stores: Debian's kernel
    # zeroes each page it allocates (init_on_alloc, a hardening default), about 3.5 s of
    # unpacking the 395 MB initramfs here (docs/testing.md). Emulation only: the image's own
    # boot entries keep the kernel's default. Only with an entry or arguments: a boot of the
    # same stick again (--keep-stick) keeps the grubenv its first run wrote.
    if [[ $accel == tcg && -n $entry$append ]]; then append+=" init_on_alloc=0"; fi
    if [[ -n $entry || -n $append ]]; then
        env_block=$work/grubenv
        {
            printf '# GRUB Environment Block\n'
            [[ -n $entry ]] && printf 'ssdbench_default=%s\nssdbench_timeout=0\n' "$entry"
            [[ -z $entry ]] && printf 'ssdbench_timeout=0\n'
            [[ -n $append ]] && printf 'ssdbench_append=%s\n' "${append# }"
        } >"$env_block"
        size=$(stat -c %s "$env_block")
        ((size <= 1024)) || die "kernel arguments too long for the GRUB environment block"
        head -c $((1024 - size)) /dev/zero | tr '\0' '#' >>"$env_block"
        mcopy -o -i "$stick@@$boot_off" "$env_block" ::/boot/grub/grubenv
    fi
    if [[ -n $kiosk_config ]]; then
        [[ -f $kiosk_config ]] || die "no kiosk config $kiosk_config"
        mcopy -o -i "$stick@@$res_off" "$kiosk_config" ::/ssdbench.toml
    fi
    for f in "${puts[@]}"; do
        [[ -f $f ]] || die "--put: no file $f"
        mcopy -o -i "$stick@@$res_off" "$f" "::/$(basename "$f")"
    done
    # --direct: the kernel, initramfs and command line of the entry the stick's GRUB would boot
    # (its grub.cfg with the grubenv that --entry/--append wrote, read back from the stick), as
    # WORKDIR/direct-vmlinuz, direct-initrd.img and direct-cmdline (also with --prepare-only:
    # tests that run QEMU themselves boot from those).
    kernel_boot=() stick_boot=,bootindex=0
    if [[ $direct -eq 1 ]]; then
        stick_boot=  # -kernel takes boot index 0 itself
        for f in boot/vmlinuz boot/initrd.img boot/grub/grub.cfg boot/grub/grubenv; do
            mcopy -o -n -i "$stick@@$boot_off" "::/$f" "$work/direct-$(basename "$f")" 2>/dev/null ||
                [[ $f == boot/grub/grubenv ]] || die "--direct: no /$f on the stick"
        done
        env_file=$work/direct-grubenv
        [[ -f $env_file ]] || : >"$env_file"
        id=$(sed -n 's/^ssdbench_default=//p' "$env_file")
        extra=$(sed -n 's/^ssdbench_append=//p' "$env_file")
        cmdline=$(awk -v id="${id:-interactive}" -v extra="$extra" '
            /^set ssdbench_base="/ { base = $0; sub(/^set ssdbench_base="/, "", base); sub(/"$/, "", base) }
            $0 ~ "--id " id " [{]" { inside = 1 }
            inside && /eval linux \/boot\/vmlinuz / {
                line = $0; sub(/.*eval linux \/boot\/vmlinuz /, "", line)
                gsub(/[$]ssdbench_base/, base, line); gsub(/[$]ssdbench_append/, extra, line)
                print line; exit
            }' "$work/direct-grub.cfg")
        [[ -n $cmdline ]] || die "--direct: no menu entry ${id:-interactive} in the stick's grub.cfg"
        printf '%s\n' "$cmdline" >"$work/direct-cmdline"
        kernel_boot=(-kernel "$work/direct-vmlinuz" -initrd "$work/direct-initrd.img" -append "$cmdline")
        say "direct kernel boot: $cmdline"
    fi

    if [[ $prepare_only -eq 1 ]]; then
        say "prepared $stick"
        exit 0
    fi
    stick_dev=(-drive "if=none,id=stick-blk,file=$stick,format=raw,cache=unsafe"
        -device "usb-storage,id=stick,bus=xhci.0,drive=stick-blk,removable=on$stick_boot")
fi

# Drives.
qemu_drives=()
add_drive() { # kind index spec
    local kind=$1 i=$2 spec=$3 size= file= nbd= serial= model= subsys= part
    IFS=, read -ra parts <<<"$spec"
    for part in "${parts[@]}"; do
        case $part in
        file=*) file=${part#file=} ;;
        nbd=*) nbd=${part#nbd=} ;;
        serial=*) serial=${part#serial=} ;;
        model=*) model=${part#model=} ;;
        subsys=*) [[ $kind == nvme ]] || die "--$kind: subsys= is for NVMe drives"; subsys=${part#subsys=} ;;
        *=*) die "--$kind: unknown key in $part" ;;
        *) size=$part ;;
        esac
    done
    local id=$kind$i
    if [[ -n $nbd ]]; then
        # The NBD server decides the size; QEMU's NBD client sends TRIM for discards and
        # write-zeroes without NO_HOLE only with discard=unmap (the default drops both).
        [[ -z $file && -z $size ]] || die "--$kind $spec: nbd= takes no SIZE or file="
        [[ -S $nbd ]] || die "--$kind: no NBD server socket $nbd"
        qemu_drives+=(-drive "if=none,id=$id-blk,driver=nbd,server.type=unix,server.path=$nbd,discard=unmap")
    else
        if [[ -z $file ]]; then
            [[ -n $size ]] || die "--$kind $spec: give a SIZE, file=PATH or nbd=SOCKET"
            file=$work/$kind$i.img
            rm -f "$file"
            truncate -s "$size" "$file"
        fi
        [[ -f $file ]] || die "--$kind: no file $file"
        qemu_drives+=(-drive "if=none,id=$id-blk,file=$file,format=raw,discard=unmap,cache=unsafe")
    fi
    case $kind in
    nvme)
        [[ -z $model ]] || die "--nvme: QEMU 7.2's NVMe controller has a fixed model (QEMU NVMe Ctrl)"
        local bus=
        if [[ $nvme_hotplug -eq 1 ]]; then
            qemu_drives+=(-device "pcie-root-port,id=$id-port,chassis=$((i + 1)),slot=$((i + 1))")
            bus=",bus=$id-port"
        fi
        serial=${serial:-SSDBNVME$(printf %04d "$i")}
        if [[ -n $subsys ]]; then  # a subsystem's namespace is a device of its own
            qemu_drives+=(-device "nvme-subsys,id=$id-subsys,nqn=$subsys"
                -device "nvme,id=$id$bus,serial=$serial,subsys=$id-subsys"
                -device "nvme-ns,id=$id-ns,drive=$id-blk,bus=$id,nsid=1")
        else
            qemu_drives+=(-device "nvme,id=$id,drive=$id-blk$bus,serial=$serial")
        fi ;;
    sata)
        ((i < 6)) || die "at most 6 SATA drives (the q35 AHCI controller's ports)"
        qemu_drives+=(-device "ide-hd,id=$id,drive=$id-blk,bus=ide.$i,serial=${serial:-SSDBSATA$(printf %04d "$i")},model=${model:-ssdbench virtual SATA SSD},rotation_rate=1") ;;
    esac
}
for i in "${!nvme_specs[@]}"; do add_drive nvme "$i" "${nvme_specs[$i]}"; done
for i in "${!sata_specs[@]}"; do add_drive sata "$i" "${sata_specs[$i]}"; done
[[ $hotplug_ports =~ ^[0-9]+$ ]] || die "--hotplug-ports N: a number, got $hotplug_ports"
for ((i = 0; i < hotplug_ports; i++)); do  # chassis apart from the --nvme-hotplug ports'
    qemu_drives+=(-device "pcie-root-port,id=hotplug$i,chassis=$((100 + i)),slot=$((100 + i))")
done

cpu=(); [[ $accel == kvm ]] && cpu=(-cpu host)
[[ $accel == tcg ]] && cpu=(-cpu max)

firmware=() machine=q35
if [[ $uefi -eq 1 ]]; then
    code= vars=
    pairs=(/usr/share/OVMF/OVMF_CODE_4M.fd:/usr/share/OVMF/OVMF_VARS_4M.fd
        /usr/share/OVMF/OVMF_CODE.fd:/usr/share/OVMF/OVMF_VARS.fd)
    # Secure Boot: the SMM build of OVMF (only SMM code may write the key variables, so the
    # flash must be "secure") with the variable store Debian's ovmf ships with Microsoft's
    # KEK and db enrolled and Secure Boot on.
    [[ $secure_boot -eq 1 ]] && pairs=(/usr/share/OVMF/OVMF_CODE_4M.secboot.fd:/usr/share/OVMF/OVMF_VARS_4M.ms.fd)
    for c in "${pairs[@]}"; do
        if [[ -f ${c%%:*} && -f ${c##*:} ]]; then code=${c%%:*}; vars=${c##*:}; break; fi
    done
    [[ -n $code ]] || die "OVMF not found: ${pairs[*]} (apt-get install ovmf)"
    cp "$vars" "$work/OVMF_VARS.fd"
    firmware=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$code"
        -drive "if=pflash,format=raw,unit=1,file=$work/OVMF_VARS.fd")
    if [[ $secure_boot -eq 1 ]]; then
        machine=q35,smm=on
        firmware+=(-global driver=cfi.pflash01,property=secure,value=on)
    fi
fi

rm -f "$work/qmp.sock" "$work/serial.log" "$work/serial-times.log"
qemu=(qemu-system-x86_64 -machine "$machine" -accel "$accel" "${cpu[@]}" -m "$memory" -smp "$smp"
    -nodefaults -no-reboot -vga std -nic none "${firmware[@]}"
    -qmp "unix:$work/qmp.sock,server=on,wait=off"
    -device qemu-xhci,id=xhci
    "${stick_dev[@]}" "${net[@]}" "${kernel_boot[@]}" "${qemu_drives[@]}")
booted=$(basename "$image")
[[ -z $netboot ]] || booted="from the network ($netboot)"
fw=BIOS; [[ $uefi -eq 1 ]] && fw=UEFI; [[ $secure_boot -eq 1 ]] && fw="UEFI Secure Boot"
say "booting $booted ($fw, $accel) in $work"
[[ $accel == tcg ]] && say "no working KVM: TCG emulation, a boot takes about a minute"

to=(); [[ -n $timeout ]] && to=(timeout --foreground -k 5 "$timeout")
set +e
if [[ $batch -eq 1 ]]; then
    start=${EPOCHREALTIME/./}
    "${to[@]}" "${qemu[@]}" -display none -monitor none -serial stdio <"$serial_input" 2>"$work/qemu.stderr" |
        while IFS= read -r line || [[ -n $line ]]; do
            line=${line%$'\r'}
            printf '%s\n' "$line" >>"$work/serial.log"
            ms=$(((${EPOCHREALTIME/./} - start) / 1000))
            printf '%5d.%03d %s\n' $((ms / 1000)) $((ms % 1000)) "$line" >>"$work/serial-times.log"
            [[ $verbose -eq 1 ]] && printf '%s\n' "$line" >&2
        done
    rc=${PIPESTATUS[0]}
else
    "${to[@]}" "${qemu[@]}" -display none \
        -chardev "stdio,id=ser0,mux=on,signal=off,logfile=$work/serial.log" \
        -serial chardev:ser0 -mon chardev=ser0,mode=readline
    rc=$?
fi
set -e
[[ $rc -eq 124 ]] && say "timeout after $timeout s: QEMU killed"
if [[ $rc -ne 0 && $rc -ne 124 && -s $work/qemu.stderr ]]; then cat "$work/qemu.stderr" >&2; fi

[[ -n $netboot ]] && exit "$rc"  # no stick, no results to copy
# Results out of the stick's SSDRESULTS partition.
rm -rf "$results"
mkdir -p "$results"
mcopy -s -n -i "$stick@@$res_off" '::*' "$results/" 2>/dev/null || true
say "serial log $work/serial.log; results copied to $results"
exit "$rc"
