"""An S3-compatible server on loopback for the object-store tests: moto in server
mode, from $DATALOADER_S3_SERVER (nox sets it: scripts/provision-moto.sh) or PATH."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_s3_server() -> Iterator[str]:
    """Start the server, yield its endpoint URL, stop it."""
    command = os.environ.get("DATALOADER_S3_SERVER") or shutil.which("moto_server")
    if not command:
        message = (
            "no S3-compatible server: run scripts/provision-moto.sh and set "
            "DATALOADER_S3_SERVER to the path it prints"
        )
        if os.environ.get("CI"):
            pytest.fail(message)  # CI provisions it: its absence is a broken setup
        pytest.skip(message)
    port = _free_port()
    process = subprocess.Popen(
        [command, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{command} did not start: {process.stderr.read().decode()[-2000:]}"  # type: ignore[union-attr]
                    ) from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stderr.close()  # type: ignore[union-attr]
