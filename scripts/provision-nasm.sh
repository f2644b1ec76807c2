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
mirror=$(grep -hoE '^(URIs:|deb) *[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -v -- '-security' | grep -oE '(https?|file)://[^ ]+/debian/?$' | head -n1 || true)
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
if [[ -z "$mirror" || -z "$codename" ]] || ! command -v apt-get >/dev/null; then
    echo "provision-nasm: no Debian mirror or release found; the rust backend builds without SIMD" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # lets apt's sandbox user read there
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/deb"
chmod 777 "$work/deb"  # and write the download there
cat > "$work/binary.sources" <<SRC
Types: deb
URIs: $mirror
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
private=(-o Dir::Etc::sourcelist="$work/binary.sources" -o Dir::Etc::sourceparts=-
         -o Dir::State::Lists="$work/lists" -o Dir::Cache::archives="$work/archives"
         -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
apt-get update -qq "${private[@]}" >&2
(cd "$work/deb" && apt-get download -qq "${private[@]}" nasm >&2)
mkdir -p "$cache"
dpkg-deb -x "$work"/deb/nasm_*.deb "$cache"
"$cache/usr/bin/nasm" -v >&2
echo "$cache/usr/bin"
