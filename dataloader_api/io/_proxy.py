"""Proxies from the environment, taken as the rust backend's client (reqwest)
takes them (issue 49; the rules are ``_proxy_env``'s): ``HTTP_PROXY`` for http
URLs, ``HTTPS_PROXY`` for https ones, ``ALL_PROXY`` for either when the other
is unset, ``NO_PROXY`` hosts, domains and IP networks bypassing them.

An http URL through a proxy is one request in absolute form to the proxy; an
https URL is a ``CONNECT`` tunnel through it, TLS end to end with the origin.
An ``https://`` proxy is reached over TLS first (verified with the roots every
other connection trusts), then used the same way. The proxy's own
``user:password@`` is sent to the proxy only (``Proxy-Authorization``), never
to the origin."""

from __future__ import annotations

import asyncio
import base64
import ssl
from urllib.parse import SplitResult, unquote

from ._http_head import MalformedReply, read_head
from ._proxy_env import read_proxy_settings

__all__ = ["Proxies", "ProxyRefused"]

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ProxyRefused(ConnectionError):
    """A proxy answered a ``CONNECT`` with something else than 2xx."""


class Proxies:
    """The environment's proxies, read once (as reqwest reads them when a client is built)."""

    def __init__(self) -> None:
        self._settings = read_proxy_settings()

    def for_url(self, scheme: str, host: str, port: int) -> SplitResult | None:
        """The proxy for ``scheme://host:port``; ``None``: connect directly."""
        return self._settings.for_url(scheme, host)


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
    inside it, for http the proxy itself (requests then go in absolute form).
    ``context`` verifies an https proxy and an https origin alike."""
    tls = proxy.scheme == "https"
    if tls and context is None:
        context = ssl.create_default_context()
    reader, writer = await asyncio.open_connection(
        proxy.hostname,
        proxy.port or (443 if tls else 80),
        ssl=context if tls else None,
        limit=2**20,
    )
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
