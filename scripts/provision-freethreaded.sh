#!/usr/bin/env bash
# Build the free-threaded CPython 3.13.5t with pyenv, with no download beyond
# the package registries: Debian's source package python3.13 (trixie) carries
# the unchanged upstream tarball that pyenv's 3.13.5 definition verifies.
# The result lives in pyenv's versions folder; the tarball is cached under
# ${XDG_CACHE_HOME:-~/.cache}/dataloader-api so a later run is fast.
#
# Requirements: Debian (apt with deb-src access to its mirror), pyenv, a C
# toolchain and CPython's build dependencies. apt reads a private source list
# and index folder (see below), so the machine's apt configuration is unchanged.
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
    # Reuse the mirror of the machine's own Debian sources; never name a host here.
    mirror=$(grep -hoE '^(URIs:|deb) *[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
        | grep -v -- '-security' | grep -oE '(https?|file)://[^ ]+/debian/?$' | head -n1 || true)
    if [[ -z "$mirror" ]]; then
        echo "provision: no Debian mirror found in /etc/apt/sources.list*; cannot fetch python3.13 sources" >&2
        exit 1
    fi
    # apt reads a private source list and keeps its indexes in a temporary
    # folder: the machine's apt sources and lists stay as they were.
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    chmod 755 "$work"  # lets apt's sandbox user read there
    mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/src"
    chmod 777 "$work/src"  # and write the download there
    cat > "$work/trixie-src.sources" <<SRC
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    private=(-o Dir::Etc::sourcelist="$work/trixie-src.sources" -o Dir::Etc::sourceparts=-
             -o Dir::State::Lists="$work/lists" -o Dir::Cache::archives="$work/archives"
             -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
    apt-get update -qq "${private[@]}"
    (cd "$work/src" && apt-get source --download-only -qq "${private[@]}" python3.13/trixie)
    orig=$(ls "$work"/src/python3.13_"$version".orig.tar.xz 2>/dev/null | head -n1 || true)
    if [[ -z "$orig" ]]; then
        echo "provision: trixie's python3.13 source package is not $version:" >&2
        ls "$work/src" >&2
        exit 1
    fi
    cp "$orig" "$tarball"
fi

# pyenv verifies the sha256 its definition expects before it builds.
PYTHON_BUILD_CACHE_PATH="$cache" MAKE_OPTS="-j$(nproc)" pyenv install --skip-existing "${version}t"
"$pyenv_root/versions/${version}t/bin/python3.13t" -c 'import sys; assert not sys._is_gil_enabled(); print("provision: free-threaded", sys.version)'
