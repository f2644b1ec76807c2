"""Proxies from the environment, read as curl, requests and reqwest (the rust
backend's client) read them (issue 49): ``HTTP_PROXY`` for http URLs,
``HTTPS_PROXY`` for https ones, ``ALL_PROXY`` for either when the other is
unset (lower-case names too, and win), ``NO_PROXY`` hosts and domains
bypassing them; the parsing is the standard library's
(``urllib.request.getproxies_environment``, ``proxy_bypass_environment``).

An http URL through a proxy is one request in absolute form to the proxy; an
https URL is a ``CONNECT`` tunnel through it, TLS end to end with the origin.
The proxy's own ``user:password@`` is sent to the proxy only
(``Proxy-Authorization``), never to the origin."""

from __future__ import annotations

import asyncio
import base64
import ssl
import urllib.request
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from ._http_head import MalformedReply, read_head

__all__ = ["Proxies", "ProxyRefused"]

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ProxyRefused(ConnectionError):
    """A proxy answered a ``CONNECT`` with something else than 2xx."""


class Proxies:
    """The environment's proxies, read once (as reqwest reads them when a client is built)."""

    def __init__(self) -> None:
        self._proxies: dict[str, str] = urllib.request.getproxies_environment()

    def for_url(self, scheme: str, host: str, port: int) -> SplitResult | None:
        """The proxy for ``scheme://host:port``; ``None``: connect directly."""
        proxy = self._proxies.get(scheme) or self._proxies.get("all")
        if not proxy:
            return None
        if _bypass(f"{host}:{port}", self._proxies) or _bypass(host, self._proxies):
            return None
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return parts if parts.scheme == "http" and parts.hostname else None


# In the standard library since 3.4 (NO_PROXY's parsing), untyped in typeshed.
_bypass: Any = getattr(urllib.request, "proxy_bypass_environment")  # noqa: B009


def proxy_authorization(proxy: SplitResult) -> dict[str, str]:
    """The header that sends ``proxy``'s user:password to it, if it has them."""
    if proxy.username is None:
        return {}
    pair = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}"
    return {"Proxy-Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}


async def open_via(
    proxy: SplitResult, scheme: str, host: str, port: int, context: ssl.SSLContext | None
) -> Connection:
    """A connection to ``host:port`` through ``proxy``: for https a tunnel with TLS
    inside it, for http the proxy itself (requests then go in absolute form)."""
    reader, writer = await asyncio.open_connection(proxy.hostname, proxy.port or 80, limit=2**20)
    if scheme != "https":
        return reader, writer
    try:
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
        lines += [f"{k}: {v}" for k, v in proxy_authorization(proxy).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status_line, _ = await read_head(reader)
        code = status_line.split(b" ")[1:2]
        if not code or not code[0].startswith(b"2"):
            reply = status_line.decode("latin-1").strip() or "no reply"
            raise ProxyRefused(f"the proxy refused the tunnel: {reply[:80]}")
        await writer.start_tls(context or ssl.create_default_context(), server_hostname=host)
    except (MalformedReply, EOFError) as error:
        writer.transport.abort()
        raise ProxyRefused(f"the proxy's reply to CONNECT: {error}") from None
    except BaseException:
        writer.transport.abort()
        raise
    return reader, writer
