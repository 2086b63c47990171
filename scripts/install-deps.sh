#!/usr/bin/env bash
# Install the Debian packages listed in scripts/apt-packages.txt (and any extra lists given
# as arguments) that are not installed yet. As root it installs them; otherwise it names
# what is missing and fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# apt-packages-image.txt: building the dev image and booting it in QEMU (make dev-image, e2e)
lists=("$here/apt-packages.txt" "$here/apt-packages-image.txt" "$@")
wanted=$(cat "${lists[@]}" | sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u)
missing=()
for pkg in $wanted; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
    [[ $status == ii* ]] || missing+=("$pkg")
done
((${#missing[@]})) || exit 0
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "ssdbench: missing Debian packages: ${missing[*]}" >&2
    echo "  install them as root: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "ssdbench: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
