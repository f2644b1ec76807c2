#!/usr/bin/env bash
# An S3-compatible server for the object-store tests: moto in server mode, in a
# venv of its own (cached), so that it runs on a GIL build whatever interpreter
# the tests run on (moto's dependencies have no free-threaded wheels):
#
#     scripts/provision-moto.sh    # prints the path of `moto_server`
#
# The tests start it on 127.0.0.1 (tests/s3_server.py) and stop it.
set -euo pipefail

version="5.2.5"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/dataloader-api/moto-$version"
# Inside a nox session `python3` is the session's interpreter, which may be the
# free-threaded one: look for a GIL build, the system's first.
gil_python=""
for candidate in /usr/bin/python3 python3 python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c \
        'import sys, sysconfig; sys.exit(1 if sysconfig.get_config_var("Py_GIL_DISABLED") else 0)' \
        2>/dev/null; then
        gil_python="$(command -v "$candidate")"
        break
    fi
done
if [[ -z "$gil_python" ]]; then
    echo "provision-moto: no GIL build of CPython 3 found for moto's venv" >&2
    exit 1
fi
if [[ ! -x "$cache/bin/moto_server" ]]; then
    rm -rf "$cache"
    "$gil_python" -m venv "$cache" >&2
    "$cache/bin/pip" install --quiet "moto[server]==$version" >&2
fi
echo "$cache/bin/moto_server"
