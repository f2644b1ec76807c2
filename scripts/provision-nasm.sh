#!/usr/bin/env bash
# NASM for the rust backend's `simd` feature (libjpeg-turbo's SIMD kernels),
# from the machine's own Debian mirror, unpacked into a cache folder:
#
#     scripts/provision-nasm.sh    # prints the folder holding `nasm`
#
# Nothing is installed: apt reads a private source list and keeps its indexes
# in a temporary folder, and the package is only unpacked (dpkg-deb -x), so the
# machine's apt sources, lists and installed packages stay as they were.
set -euo pipefail

if command -v nasm >/dev/null 2>&1; then
    dirname "$(command -v nasm)"
    exit 0
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/dataloader-api/nasm"
if [[ -x "$cache/usr/bin/nasm" ]]; then
    echo "$cache/usr/bin"
    exit 0
fi
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
# shellcheck source=scripts/private-apt.sh
source "$(dirname "$0")/private-apt.sh"
if [[ -z "$codename" ]] || ! private_apt deb "$codename"; then
    echo "provision-nasm: no Debian release or mirror found; the rust backend builds without SIMD" >&2
    exit 1
fi
(cd "$work/download" && apt-get download -qq "${private[@]}" nasm >&2)
mkdir -p "$cache"
dpkg-deb -x "$work"/download/nasm_*.deb "$cache"
"$cache/usr/bin/nasm" -v >&2
echo "$cache/usr/bin"
