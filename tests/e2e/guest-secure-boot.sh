# Runs inside the Secure Boot edition (copied to SSDRESULTS by tests/e2e/test_secure_boot.py,
# started with ssdbench.cmd="sh /mnt/ssdresults/guest-secure-boot.sh"). Prints sections the
# test parses: the firmware's and the kernel's Secure Boot state, a plan, and which drive
# tools still reach the drives under the kernel's lockdown. The drives are emulated ones the
# test made for this boot (the NVMe drive and the SATA drive of model "SB LOCKDOWN": the bystander is never touched).
section() { echo "--- $1 ---"; }
# "tool rc=N" and the tool's last lines: rc alone cannot tell a lockdown refusal (EPERM
# from the kernel) from the emulated drive rejecting a command it does not implement.
probe() {
    name=$1; shift
    out=$("$@" 2>&1); rc=$?
    echo "$name rc=$rc"
    printf '%s\n' "$out" | tail -n 3 | sed 's/^/    /'
}
# the drive whose model (ATA or SCSI sysfs, or NVMe) starts with $1
disk_by_model() {
    for d in /sys/block/*; do
        m=$(cat "$d/device/model" 2>/dev/null)
        case $m in "$1"*) echo "/dev/${d##*/}"; return 0 ;; esac
    done
    return 1
}
modprobe efivarfs
mountpoint -q /sys/firmware/efi/efivars || mount -t efivarfs efivarfs /sys/firmware/efi/efivars
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
section cmdline; cat /proc/cmdline
section secureboot-var
# EFI_GLOBAL_VARIABLE: 4 bytes of attributes, then the value: 1 = Secure Boot enforcing
od -An -tu1 /sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c | tr -s ' ' | sed 's/^ //'
section lockdown; cat /sys/kernel/security/lockdown
section kernel-log; dmesg | grep -iE 'secure ?boot|lockdown|module verification|tainted' | sed 's/^\[[ 0-9.]*\] //'
section tainted; cat /proc/sys/kernel/tainted
section modules; cut -d' ' -f1 /proc/modules | sort | tr '\n' ' '; echo
sata=$(disk_by_model "SB LOCKDOWN") || sata=
nvme_ctrl=/dev/nvme0
plan_drive=${nvme_ctrl}n1
section devices; echo "sata=$sata plan=$plan_drive nvme=$nvme_ctrl"
section plan
ssdbench run --plan diagnose --set random_read_seconds=5 --no-svg --quiet "$plan_drive"
echo "plan rc=$?"
section tools
probe "dev-mem-read" dd if=/dev/mem of=/dev/null bs=4096 count=1
probe "hdparm-identify" hdparm -I "$sata"
probe "hdparm-security-set-pass" hdparm --user-master u --security-set-pass ssdbench "$sata"
probe "hdparm-security-erase" hdparm --user-master u --security-erase ssdbench "$sata"
probe "smartctl-ata-sgio" smartctl -d sat -i "$sata"
probe "smartctl-nvme" smartctl -i "$nvme_ctrl"
probe "nvme-id-ctrl" nvme id-ctrl "$nvme_ctrl"
probe "nvme-format" nvme format "${nvme_ctrl}n1" --ses=1 --force
probe "nvme-sanitize" nvme sanitize "$nvme_ctrl" --sanact=2
probe "nvme-sanitize-log" nvme sanitize-log "$nvme_ctrl"
section lockdown-log; dmesg | grep -i 'lockdown' | sed 's/^\[[ 0-9.]*\] //'
section end
