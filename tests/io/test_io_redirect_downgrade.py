"""A redirect from https to plain http is not followed, on every path (issue 49).

A scheme change is an origin change, so no dataset header, user:password or S3
session token would go along anyway; but requests and reqwest would still read
the item over plain http, where anyone on the path can read and change it, for a
dataset that listed an https URL. We refuse the hop instead (``FetchError``, not
retried) and name the fix: list the http:// URL itself. The http server, on the
same host or another, receives nothing."""

from __future__ import annotations

import pytest
from rawserver import RawServer
from test_io_redirect_secrets import BODY, FAST, PASSWORD, SECRET, TOKEN, load

from dataloader_api.io import FetchError, HttpDataset, ObjectStoreDataset
from dataloader_api.io.loopback import LoopbackServer


def redirecting(location: str, code: int):
    reply = (
        b"HTTP/1.1 %d Moved\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        % (code, location.encode())
    )
    return lambda head: [reply]


def fields(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines if x)}


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_redirect_from_https_to_http_is_refused(io_mode, private_ca, monkeypatch, code, host):
    context, ca = private_ca
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    with LoopbackServer({"/b": BODY}) as plain:
        target = f"http://{host}:{plain.url.rpartition(':')[2]}/b"
        with RawServer(redirecting(f"{target}?access_token={TOKEN}", code), context) as origin:
            url = origin.url.replace("://", f"://u:{PASSWORD}@") + f"/a?access_token={TOKEN}"
            data = HttpDataset([url], headers={"X-Api-Key": SECRET}, retry=FAST)
            with pytest.raises(FetchError) as caught:
                load(data, io_mode)
        assert plain.headers_seen == []  # not one request reached the http server
    message = str(caught.value)
    assert f"refused a redirect from https to {target}: a downgrade" in message, message
    assert "list the http:// URL itself" in message and "(not retried)" in message
    assert not any(secret in message for secret in (SECRET, TOKEN, PASSWORD)), message
    assert caught.value.attempts == 1 and data.counters.redirects == 0
    (head,) = origin.heads  # the https origin had its secrets, once
    assert fields(head).get("x-api-key") == SECRET
    assert fields(head).get("authorization", "").startswith("Basic ")


def test_an_object_stores_redirect_from_https_to_http_is_refused(io_mode, private_ca, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing-session-token")
    context, ca = private_ca
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    with LoopbackServer({"/b/k0": BODY}) as plain:
        target = f"{plain.url}/b/k0"
        with RawServer(redirecting(target, 307), context) as origin:
            data = ObjectStoreDataset("s3://b", ["k0"], endpoint_url=origin.url, retry=FAST)
            with pytest.raises(FetchError, match="refused a redirect from https to") as caught:
                load(data, io_mode)
        assert plain.headers_seen == []
    assert "testing-session-token" not in str(caught.value)
    assert fields(origin.heads[0]).get("x-amz-security-token") == "testing-session-token"
    assert len(origin.heads) == 1  # not retried
