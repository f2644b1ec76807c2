"""nginx as a benchmark server (issue 46): Debian's nginx 1.22 with its echo
module, provisioned by ``scripts/provision-nginx.sh``, serving the loopback
server's objects (``generated_object``) from a temporary directory.

Each server is one ``server`` block on a port of its own: ``/{i}`` is held
``latency`` seconds (``echo_sleep``), ``/tail/{i}`` ``tail`` seconds (a latency
tail: the caller picks which items go there), then the file; ``keepalive``
False closes every connection (``keepalive_timeout 0``), ``backlog`` sets the
listen backlog. ``/static/{name}`` serves the files put in ``Nginx.static`` as
nginx serves any file: byte ranges, an ETag made of the file's mtime (in
seconds) and length, Last-Modified.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dataloader_api.io.loopback import generated_object

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Site:
    latency: float = 0.020
    tail: float = 1.0
    keepalive: bool = True
    backlog: int = 511


def provision() -> Path:
    """The nginx binary (fetched and unpacked on first use)."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "provision-nginx.sh")],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return Path(done.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _block(site: Site, port: int, files: Path) -> str:
    keepalive = (
        "keepalive_timeout 75s; keepalive_requests 100000;"
        if site.keepalive
        else ("keepalive_timeout 0;")
    )
    return f"""
    server {{
        listen 127.0.0.1:{port} backlog={site.backlog};
        {keepalive}
        location ~ ^/tail/(\\d+)$ {{ echo_sleep {site.tail}; echo_exec /objects/$1; }}
        location ~ ^/(\\d+)$ {{ echo_sleep {site.latency}; echo_exec /objects/$1; }}
        location /objects/ {{ internal; alias {files}/; }}
        location /static/ {{ alias {files.parent}/static/; }}
    }}"""


class Nginx:
    """nginx serving ``objects`` objects of ``size`` bytes on one port per site."""

    def __init__(self, objects: int, size: int, sites: dict[str, Site], workers: int = 1) -> None:
        binary = provision()
        modules = binary.parent.parent / "lib" / "nginx" / "modules"
        self._dir = tempfile.TemporaryDirectory(prefix="dl-nginx-")
        base = Path(self._dir.name)
        base.chmod(0o755)  # nginx's workers run as another user when started as root
        files = base / "objects"
        files.mkdir()
        #: served as they are at ``/static/{name}`` (ranges, ETag, Last-Modified)
        self.static = base / "static"
        self.static.mkdir()
        for i in range(objects):
            (files / str(i)).write_bytes(generated_object(i, size))
        self.urls = {name: f"http://127.0.0.1:{_free_port()}" for name in sites}
        blocks = "".join(
            _block(site, int(self.urls[name].rsplit(":", 1)[1]), files)
            for name, site in sites.items()
        )
        (base / "nginx.conf").write_text(f"""
load_module {modules}/ngx_http_echo_module.so;
daemon off;
worker_processes {workers};
pid {base}/nginx.pid;
error_log {base}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nodelay on;
    client_body_temp_path {base}/tmp; proxy_temp_path {base}/tmp;
    fastcgi_temp_path {base}/tmp; uwsgi_temp_path {base}/tmp; scgi_temp_path {base}/tmp;
    types {{ }} default_type application/octet-stream;
    {blocks}
}}
""")
        (base / "tmp").mkdir()
        command = [str(binary), "-p", str(base), "-c", str(base / "nginx.conf")]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        for url in self.urls.values():
            self._wait(url)

    def _wait(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        for _ in range(500):
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.process.stderr.read()}")  # type: ignore[union-attr]
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
                return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError(f"nginx did not listen on {url}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self._dir.cleanup()
