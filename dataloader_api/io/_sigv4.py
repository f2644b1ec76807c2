"""AWS Signature Version 4 for S3 GET requests (the reference's object-store reads)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote, urlsplit

__all__ = ["EMPTY_SHA256", "Credentials", "sign_get"]

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    session_token: str | None = None

    def __repr__(self) -> str:  # never print a secret
        return f"Credentials(access_key={self.access_key[:4]}***)"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _encode(text: str) -> str:
    return quote(text, safe="-_.~")


def sign_get(
    url: str, region: str, credentials: Credentials, now: datetime | None = None
) -> dict[str, str]:
    """The headers that sign ``GET url`` for S3 in ``region`` (``host`` excluded)."""
    when = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    day = when[:8]
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    headers = {"x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": when}
    if credentials.session_token:
        headers["x-amz-security-token"] = credentials.session_token
    canonical_headers = {"host": host, **headers}
    names = sorted(canonical_headers)
    pairs = sorted(
        (_encode(k), _encode(v)) for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    canonical = "\n".join(
        [
            "GET",
            parts.path or "/",  # S3: the path as sent, encoded once
            "&".join(f"{k}={v}" for k, v in pairs),
            "".join(f"{n}:{canonical_headers[n]}\n" for n in names),
            ";".join(names),
            EMPTY_SHA256,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", when, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = _hmac(("AWS4" + credentials.secret_key).encode(), day)
    for part in (region, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return headers
