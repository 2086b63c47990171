#!/usr/bin/env bash
# Install the Debian packages listed in scripts/apt-packages.txt (and any extra lists given
# as arguments) that are not installed yet. As root it installs them; otherwise it names
# what is missing and fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# apt-packages-image.txt: building the dev image and booting it in QEMU (make dev-image, e2e)
lists=("$here/apt-packages.txt" "$here/apt-packages-image.txt" "$@")
# the store tests' real servers (tests/integration/test_store.py, docs/lab.md): nginx with
# WebDAV PUT (and PROPFIND, dav-ext: the fleet page lists the store), and Java + Maven for
# s3proxy (fetched from Maven Central below)
lab=(nginx libnginx-mod-http-dav-ext default-jre-headless maven)
wanted=$( (cat "${lists[@]}"; printf '%s\n' "${lab[@]}") | sed -e 's/#.*//' -e 's/[[:space:]]//g' \
    | grep -v '^$' | sort -u)
missing=()
for pkg in $wanted; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
    [[ $status == ii* ]] || missing+=("$pkg")
done
s3proxy() {  # the S3-compatible server of the store tests, with its filesystem backend
    local version=2.4.1 dir="$here/../build/s3proxy"
    [[ -s $dir/s3proxy-$version-jar-with-dependencies.jar ]] && return 0
    mkdir -p "$dir"
    mvn -q -B dependency:copy -Dartifact="org.gaul:s3proxy:$version:jar:jar-with-dependencies" \
        -DoutputDirectory="$dir" >&2
}
if ((${#missing[@]} == 0)); then
    s3proxy
    exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "ssdbench: missing Debian packages: ${missing[*]}" >&2
    echo "  install them as root: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "ssdbench: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
s3proxy
