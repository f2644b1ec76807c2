#!/usr/bin/env bash
# Build the free-threaded CPython 3.13.5t with pyenv, with no download beyond
# the package registries: Debian's source package python3.13 (trixie) carries
# the unchanged upstream tarball that pyenv's 3.13.5 definition verifies.
# The result lives in pyenv's versions folder; the tarball is cached under
# ${XDG_CACHE_HOME:-~/.cache}/dataloader-api so a later run is fast.
#
# Requirements: Debian (apt with deb-src access to its mirror), pyenv, a C
# toolchain and CPython's build dependencies. apt reads a private source list
# and index folder (scripts/private-apt.sh), so the machine's apt configuration
# is unchanged.
set -euo pipefail

# Earlier versions of this script left this source entry behind; it is ours.
rm -f /etc/apt/sources.list.d/dataloader-api-trixie-src.sources 2>/dev/null || true

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
    # shellcheck source=scripts/private-apt.sh
    source "$(dirname "$0")/private-apt.sh"
    private_apt deb-src trixie || { echo "provision: cannot fetch python3.13 sources" >&2; exit 1; }
    (cd "$work/download" && apt-get source --download-only -qq "${private[@]}" python3.13/trixie)
    orig=$(ls "$work"/download/python3.13_"$version".orig.tar.xz 2>/dev/null | head -n1 || true)
    if [[ -z "$orig" ]]; then
        echo "provision: trixie's python3.13 source package is not $version:" >&2
        ls "$work/download" >&2
        exit 1
    fi
    cp "$orig" "$tarball"
fi

# pyenv verifies the sha256 its definition expects before it builds.
PYTHON_BUILD_CACHE_PATH="$cache" MAKE_OPTS="-j$(nproc)" pyenv install --skip-existing "${version}t"
"$pyenv_root/versions/${version}t/bin/python3.13t" -c 'import sys; assert not sys._is_gil_enabled(); print("provision: free-threaded", sys.version)'
