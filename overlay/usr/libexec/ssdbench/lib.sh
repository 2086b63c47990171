# Shared by the init scripts (sourced, POSIX sh).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

RESULTS_MNT=/mnt/ssdresults
BOOT_DEVICE_FILE=/run/initramfs/ssdbench-boot-device

# Kernel command line -> shell variables, tokenized the way the kernel does it (double quotes
# group words and are removed: both ssdbench.cmd="a b" and "ssdbench.cmd=a b" work).
# ssdbench.foo.bar=x becomes ssdbench_foo_bar='x'; the last console= becomes cmdline_console.
load_cmdline() {
    eval "$(awk '
        function emit(tok,   k, v, i) {
            if (tok == "") return
            i = index(tok, "=")
            if (i == 0) { k = tok; v = "1" } else { k = substr(tok, 1, i - 1); v = substr(tok, i + 1) }
            if (k == "console") { k = "cmdline_console" }
            else if (k !~ /^ssdbench\.[A-Za-z0-9_.]+$/) return
            gsub(/\./, "_", k)
            gsub(/\047/, "\047\\\047\047", v)
            printf "%s=\047%s\047\n", k, v
        }
        {
            tok = ""; q = 0
            for (i = 1; i <= length($0); i++) {
                c = substr($0, i, 1)
                if (c == "\"") { q = !q; continue }
                if (!q && (c == " " || c == "\t")) { emit(tok); tok = ""; continue }
                tok = tok c
            }
            emit(tok)
        }' /proc/cmdline)"
}

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# A URL as the console may show it: no user, password, query or fragment (they may be secrets).
# The host is what follows the last "@" before the first "/": a "?" or "#" in a password goes too.
shown_url() {
    _rest=${1#*://}
    _auth=${_rest%%/*}
    _host=${_auth##*@}
    _path=${_rest#"$_auth"}
    printf '%s://%s%s\n' "${1%%://*}" "${_host%%[?#]*}" "${_path%%[?#]*}"
}

# The reason the network is wanted, or nothing (docs/lab.md "Network boot"): no results stick
# ($1 empty), a config URL ($2 = ssdbench.config), or a config on the stick ($3 = its mount
# point) that sends results to a lab's store.
network_reason() {
    _why=
    [ -z "$1" ] && _why="no results stick"
    case ${2:-ssdbench.toml} in
    [Hh][Tt][Tt][Pp]://* | [Hh][Tt][Tt][Pp][Ss]://*) _why="the config is $(shown_url "$2")" ;;
    /*) _cfg=$2 ;;
    *) _cfg=$3/${2:-ssdbench.toml} ;;
    esac
    if [ -n "$1" ] && [ -f "${_cfg:-}" ] && grep -q '^[[:space:]]*\[store\]' "$_cfg"; then
        _why="$_cfg has a [store]"
    fi
    # the lab's signing key fetched from its server (kiosk/labkey.py), never on the stick
    if [ -n "$1" ] && [ -f "${_cfg:-}" ] &&
        grep -qiE '^[[:space:]]*record_key[[:space:]]*=[[:space:]]*["'"'"'][[:space:]]*https?://' \
            "$_cfg"; then
        _why="$_cfg has a record_key URL"
    fi
    printf '%s\n' "$_why"
}

# Is there a UART behind ttyS0 (type 0 = none)?
have_serial() {
    [ -c /dev/ttyS0 ] && [ "$(cat /sys/class/tty/ttyS0/type 2>/dev/null || echo 0)" != 0 ]
}

# The serial console, when it is not already /dev/console.
serial_extra() {
    have_serial || return 1
    case ${cmdline_console:-} in ttyS0*) return 1 ;; esac
    return 0
}

# A boot message, with seconds since the kernel started, on the screen and on ttyS0.
# fsck.fat -a on the results partition ($1) before it is mounted, its words in $2; exits as
# fsck.fat does: 0 clean, 1 repaired, else not checked (docs/kiosk.md "Power loss": a power
# cut in the middle of a FAT rename leaves two names on one cluster chain, and the next rename
# over one of them frees the other's clusters).
check_results_fat() {
    command -v fsck.fat >/dev/null 2>&1 || { echo "no fsck.fat" >"$2"; return 127; }
    fsck.fat -a -w "$1" >"$2" 2>&1
}

log() {
    msg="[$(uptime_s)] ssdbench-init: $*"
    echo "$msg" >/dev/console 2>/dev/null
    if serial_extra; then echo "$msg" >/dev/ttyS0 2>/dev/null; fi
    echo "$msg" >>/run/ssdbench/boot.log 2>/dev/null
    return 0
}

# A line for the serial console only (markers the test rig waits for).
serial_line() {
    if have_serial; then echo "$*" >/dev/ttyS0 2>/dev/null; else echo "$*" >/dev/console; fi
}
