# Runs inside the dev image (copied to SSDRESULTS by the e2e tests, started with
# ssdbench.cmd="sh /mnt/ssdresults/guest-probe.sh"). Prints sections the tests parse.
section() { echo "--- $1 ---"; }
section image-id; cat /etc/ssdbench-image-id
section kernel; uname -r
section hotplug; pidof mdev || echo 'no mdev daemon'; ls /proc/sys/kernel/hotplug 2>&1
section cmdline; cat /proc/cmdline
section efi; if [ -d /sys/firmware/efi ]; then echo uefi; else echo bios; fi
section boot-device; cat /run/initramfs/ssdbench-boot-device
section results-device; cat /run/ssdbench/results-device
section mounts; cat /proc/mounts
section boot-log; cat /run/ssdbench/boot.log
section lsblk; lsblk --json --bytes -o NAME,TYPE,TRAN,SERIAL,MODEL,SIZE,RM,LABEL,DISC-MAX
section blkid; blkid
section sysfs-serials
for d in /sys/block/*; do
    n=${d##*/}
    if [ -r "$d/device/serial" ]; then s=$(cat "$d/device/serial")
    elif [ -r "$d/device/vpd_pg80" ]; then s=$(tail -c +5 "$d/device/vpd_pg80" | tr -d '\000')
    else s=; fi
    echo "$n $s"
done
section python; python3 -c 'import sys, textual, matplotlib, numpy; print(sys.version.split()[0], textual.__version__, matplotlib.__version__, numpy.__version__)'
section tools; fio --version; nvme version | head -1; hdparm -V; smartctl --version | head -1
section python-start; s=$(cut -d' ' -f1 /proc/uptime); ssdbench --version; e=$(cut -d' ' -f1 /proc/uptime); echo "$s $e"
section ssdbench-list; ssdbench list --json; echo "rc=$?"
section end
