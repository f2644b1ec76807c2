"""A loopback TCP server that answers every request with bytes a test chooses
(a malformed reply, an endless header stream, a proxy's counting), for the
io tests of issue 49. Each connection runs on its own thread."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterable

Reply = Callable[[bytes], Iterable[bytes]]


class RawServer:
    """Reads a request's head, then sends what ``reply(head)`` yields, then closes.

    ``connections`` counts accepted connections, ``sent`` the bytes written."""

    def __init__(
        self, reply: Reply, context: ssl.SSLContext | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.reply, self.context = reply, context
        self.connections = 0
        self.sent = 0
        self.heads: list[bytes] = []
        self._lock = threading.Lock()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, 0), family=family)
        self.port = self._listener.getsockname()[1]
        scheme = "https" if context else "http"
        self.url = f"{scheme}://{f'[{host}]' if ':' in host else host}:{self.port}"
        self._listener.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(None)
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            if self.context is not None:
                connection = self.context.wrap_socket(connection, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                data = connection.recv(65536)
                if not data:
                    return
                head += data
            with self._lock:
                self.heads.append(head)
            for part in self.reply(head):
                connection.sendall(part)
                with self._lock:
                    self.sent += len(part)
        except OSError:
            pass  # the client gave up: what the endless replies wait for
        finally:
            connection.close()
