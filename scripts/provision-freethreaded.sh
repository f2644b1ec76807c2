#!/usr/bin/env bash
# Build the free-threaded CPython 3.13.5t with pyenv, with no download beyond
# the package registries: Debian's source package python3.13 (trixie) carries
# the unchanged upstream tarball that pyenv's 3.13.5 definition verifies.
# The result lives in pyenv's versions folder; the tarball is cached under
# ${XDG_CACHE_HOME:-~/.cache}/dataloader-api so a later run is fast.
set -euo pipefail

version=3.13.5
pyenv_root=$(pyenv root)
if [[ -x "$pyenv_root/versions/${version}t/bin/python3.13t" ]]; then
    echo "provision: ${version}t already installed in $pyenv_root/versions"
    exit 0
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/dataloader-api/python-build"
tarball="$cache/Python-$version.tar.xz"
mkdir -p "$cache"

if [[ ! -s "$tarball" ]]; then
    # Reuse the mirror of the machine's own Debian sources; never name a host here.
    mirror=$(grep -hoE '^(URIs:|deb) *[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
        | grep -v -- '-security' | grep -oE '(https?|file)://[^ ]+/debian/?$' | head -n1 || true)
    if [[ -z "$mirror" ]]; then
        echo "provision: no Debian mirror found in /etc/apt/sources.list*; cannot fetch python3.13 sources" >&2
        exit 1
    fi
    src_list=/etc/apt/sources.list.d/dataloader-api-trixie-src.sources
    if [[ ! -f "$src_list" ]]; then
        cat > "$src_list" <<SRC
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    fi
    apt-get update -qq -o Dir::Etc::sourcelist="$src_list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    chmod 777 "$work"  # lets apt's sandbox user write there
    (cd "$work" && apt-get source --download-only -qq python3.13/trixie)
    orig=$(ls "$work"/python3.13_"$version".orig.tar.xz 2>/dev/null | head -n1 || true)
    if [[ -z "$orig" ]]; then
        echo "provision: trixie's python3.13 source package is not $version:" >&2
        ls "$work" >&2
        exit 1
    fi
    cp "$orig" "$tarball"
fi

# pyenv verifies the sha256 its definition expects before it builds.
PYTHON_BUILD_CACHE_PATH="$cache" MAKE_OPTS="-j$(nproc)" pyenv install --skip-existing "${version}t"
"$pyenv_root/versions/${version}t/bin/python3.13t" -c 'import sys; assert not sys._is_gil_enabled(); print("provision: free-threaded", sys.version)'
