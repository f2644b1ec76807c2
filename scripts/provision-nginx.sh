#!/usr/bin/env bash
# nginx for the HTTP benchmarks (issue 46): Debian's nginx 1.22 and its echo
# module (which holds each reply a given time), fetched with `apt-get download`
# and unpacked into a cache of their own, so nothing is installed system-wide
# and no root is needed to run it:
#
#     scripts/provision-nginx.sh    # prints the path of the `nginx` binary
#
# `benchmarks/nginx_server.py` writes its configuration and starts it, for the
# benchmarks (workload 10g) and for the tests (tests/nginx_sites.py).
set -euo pipefail

version="1.22.1"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/dataloader-api/nginx-$version"
# One provisioning at a time: test processes (pytest-xdist) may ask at once.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if [[ ! -x "$cache/root/usr/sbin/nginx" || ! -f "$cache/root/usr/lib/nginx/modules/ngx_http_echo_module.so" ]]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "provision-nginx: apt-get is needed (Debian's nginx and libnginx-mod-http-echo)" >&2
        exit 1
    fi
    rm -rf "$cache"
    mkdir -p "$cache/debs"
    # apt's sandbox user may not write into the cache: download in a temporary dir it may.
    work="$(mktemp -d)"
    chmod 777 "$work"
    (cd "$work" && apt-get download nginx nginx-common libnginx-mod-http-echo >&2)
    mv "$work"/*.deb "$cache/debs/"
    rmdir "$work"
    for deb in "$cache"/debs/*.deb; do
        dpkg-deb -x "$deb" "$cache/root"
    done
    case "$(ls "$cache"/debs/nginx_*.deb)" in
        *"nginx_$version"*) ;;
        *) echo "provision-nginx: apt gave another nginx than $version:" "$cache"/debs/nginx_*.deb >&2 ;;
    esac
fi
echo "$cache/root/usr/sbin/nginx"
