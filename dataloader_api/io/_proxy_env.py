"""The environment's proxy settings, read by the rules of the rust backend's
client (reqwest 0.12, whose rules are hyper-util's ``client::proxy::matcher``),
so that the reference and the rust backend take the same way to every URL
(issue 49). Where those rules surprise a curl or requests user, or where
reqwest would do something else than proxying, we say so: a warning that names
the fix, or a ``ValueError`` (see the user guide's proxy section).

- ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY``, upper case
  first: the first of a pair that is *set* (even empty) is the one read.
- A proxy is ``http://``, ``https://`` (TLS to the proxy) or has no scheme
  (http); a value that is empty falls back to ``ALL_PROXY``.
- With ``REQUEST_METHOD`` set (a CGI process, "httpoxy") no proxy is used.
- ``NO_PROXY`` entries, comma-separated: an IP address or network
  (``10.0.0.0/8``, ``fd00::/8``) matches hosts written as IP addresses only; a
  name matches itself and its subdomains (``.example.com`` the same), ASCII
  case-insensitively; ``*`` matches every host *name* (not IP addresses).
  Nothing is resolved: ``localhost`` is not ``127.0.0.1``. A host is read as
  reqwest's URL parser reads it (``127.1`` is ``127.0.0.1``, a non-ASCII name
  is compared in punycode)."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

__all__ = ["NoProxy", "ProxySettings", "read_proxy_settings"]

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_SCHEMES = ("http", "https")
# "host:port" or "[v6]:port": reqwest compares no ports, so such an entry never matches.
_WITH_PORT = re.compile(r"^(\[[^\]]*\]|[^:\[\]]+):\d+$")
# The shorthand, octal and hex IPv4 forms a URL parser reads as addresses.
_NUMERIC_V4 = re.compile(r"^(0[xX][0-9a-fA-F]*|\d+)(\.(0[xX][0-9a-fA-F]*|\d+)){0,3}\.?$")


@dataclass(frozen=True)
class NoProxy:
    """``NO_PROXY``'s entries: networks (a single address is a /32 or /128) and names."""

    networks: tuple[IpNetwork, ...] = ()
    names: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> NoProxy:
        networks: list[IpNetwork] = []
        names: list[str] = []
        for entry in (part.strip() for part in text.split(",")):
            network = _network(entry)
            if network is not None:
                networks.append(network)
            elif entry:
                _warn_unmatched(entry)
                names.append(entry)
        return cls(tuple(networks), tuple(names))

    def bypasses(self, host: str) -> bool:
        """Whether ``host`` (a name, or an IP address with or without brackets)
        goes direct."""
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        address = _address(host)
        if address is None:
            return any(_name_matches(name, _ascii(host)) for name in self.names)
        return any(address in network for network in self.networks)


@dataclass(frozen=True)
class ProxySettings:
    """The proxy for each scheme of URL (``None``: direct), and who bypasses it."""

    http: SplitResult | None = None
    https: SplitResult | None = None
    no_proxy: NoProxy = field(default_factory=NoProxy)

    def for_url(self, scheme: str, host: str) -> SplitResult | None:
        proxy = self.https if scheme == "https" else self.http
        if proxy is None or self.no_proxy.bypasses(host):
            return None
        return proxy


def read_proxy_settings(environ: Mapping[str, str] = os.environ) -> ProxySettings:
    """The settings in ``environ``, as reqwest reads them when a client is built;
    a proxy neither path can use is a ``ValueError`` naming its variable."""
    if "REQUEST_METHOD" in environ:
        return ProxySettings()
    every = _proxy(environ, "ALL_PROXY")
    return ProxySettings(
        http=_proxy(environ, "HTTP_PROXY") or every,
        https=_proxy(environ, "HTTPS_PROXY") or every,
        no_proxy=NoProxy.parse(_first(environ, "NO_PROXY")[1]),
    )


def shown_proxy(proxy: SplitResult) -> str:
    """A proxy's URL for a message: without its user:password."""
    host = proxy.netloc.rpartition("@")[2]
    return f"{proxy.scheme}://{host}"


def _first(environ: Mapping[str, str], upper: str) -> tuple[str, str]:
    """The variable read of ``upper`` and its lower-case twin, and its value."""
    lower = upper.lower()
    if upper in environ and lower in environ and environ[upper] != environ[lower]:
        warnings.warn(
            f"{upper} and {lower} differ: {upper} is used, as the rust backend's "
            f"client (reqwest) reads them (curl and requests read {lower}); "
            "unset one of them",
            RuntimeWarning,
            stacklevel=4,
        )
    name = upper if upper in environ else lower
    return name, environ.get(name, "")


def _proxy(environ: Mapping[str, str], upper: str) -> SplitResult | None:
    name, value = _first(environ, upper)
    if not value:
        return None  # reqwest: an empty value is no proxy (ALL_PROXY's then)
    if value != value.strip():  # reqwest would take no proxy, silently
        raise ValueError(f"{name} has spaces around its value: remove them")
    parts = urlsplit(value if "://" in value else f"http://{value}")
    if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
        shown = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.scheme else "?"
        raise ValueError(
            f"{name}={shown!r} is not a proxy this library can use: give an "
            "http://host:port or https://host:port proxy (socks is not supported)"
        )
    try:
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise ValueError(f"{name}={shown_proxy(parts)!r}: the port is not a number") from None
    return parts._replace(scheme=parts.scheme.lower())


def _network(entry: str) -> IpNetwork | None:
    """An address or ``address/prefix`` (a prefix length, as reqwest parses it)."""
    address, slash, prefix = entry.partition("/")
    if slash and not (prefix.isascii() and prefix.isdigit()):
        return None
    try:
        return ipaddress.ip_network(f"{address}/{prefix}" if slash else address, strict=False)
    except ValueError:
        return None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address, read as reqwest's URL parser reads it (WHATWG):
    ``127.1`` and ``0x7f.0.0.1`` are ``127.0.0.1`` too."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not _NUMERIC_V4.match(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host.removesuffix(".")))
    except OSError:
        return None


def _ascii(host: str) -> str:
    """A name as reqwest's URL parser leaves it: non-ASCII labels in punycode."""
    try:
        return host if host.isascii() else host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _name_matches(name: str, host: str) -> bool:
    """hyper-util's ``DomainMatcher::contains``, for one entry."""
    name, host = name.lower(), host.lower()
    if name in (host, f".{host}"):
        return True
    if host.endswith(name):
        return name.startswith(".") or host[-len(name) - 1] == "."
    return name == "*"


def _warn_unmatched(entry: str) -> None:
    """An entry that looks meant but never matches under reqwest's rules."""
    fix = None
    if _WITH_PORT.match(entry):
        fix = f"ports are not compared: write {entry.rpartition(':')[0].strip('[]')!r}"
    elif entry.startswith("*."):
        fix = f"'*' is no wildcard inside a name: write {entry[1:]!r}"
    elif entry.startswith("[") and entry.endswith("]"):
        fix = f"write the address without brackets, {entry[1:-1]!r}"
    elif "/" in entry:
        fix = "write a network as address/prefix-length, e.g. '10.0.0.0/8'"
    elif entry == "*":
        warnings.warn(
            "NO_PROXY '*' bypasses the proxy for host names but not for IP addresses "
            "(as the rust backend's client, reqwest, reads it): add '0.0.0.0/0,::/0' "
            "to bypass it for those too",
            RuntimeWarning,
            stacklevel=5,
        )
    if fix is not None:
        warnings.warn(
            f"NO_PROXY entry {entry!r} never matches: {fix}", RuntimeWarning, stacklevel=5
        )
