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
if [[ ! -x "$cache/bin/moto_server" ]]; then
    rm -rf "$cache"
    python3 -m venv "$cache" >&2
    "$cache/bin/pip" install --quiet "moto[server]==$version" >&2
fi
echo "$cache/bin/moto_server"
