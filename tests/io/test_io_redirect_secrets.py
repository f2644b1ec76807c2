"""A redirect to another origin (scheme, host or port) takes none of a dataset's
secrets along: no dataset header, no Authorization, no Referer (it would carry the
URL's query), no S3 session token. The dataset's own origin keeps them. Every
backend, the reference's reads and the rust backend's native ones (issue 49)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset, ObjectStoreDataset, RetryPolicy
from dataloader_api.io.loopback import LoopbackServer, Redirect

FAST = RetryPolicy(max_retries=2, backoff=0.01, max_backoff=0.05)
BODY = bytes(range(256)) * 40
SECRET = "s3cr3t-header-value"
TOKEN = "s3cr3t-query-token"
PASSWORD = "s3cr3t-password"


def load(data, backend):
    workers = 0 if backend is None else 2
    return list(DataLoader(data, num_workers=workers, backend=backend, batch_size=None))


def leaked(headers: dict[str, str]) -> list[str]:
    """The headers of one request that carry a secret, or that should not be there."""
    secrets = (SECRET, TOKEN, PASSWORD, "testing-session-token")
    return [
        f"{name}: {value}"
        for name, value in headers.items()
        if name in ("x-api-key", "authorization", "referer", "x-amz-security-token")
        or any(secret in value for secret in secrets)
    ]


def with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://u:{PASSWORD}@")


@pytest.mark.parametrize("code", [302, 307])
def test_another_origin_gets_no_header_authorization_or_referer(io_mode, code):
    with LoopbackServer({"/b": BODY}) as other, LoopbackServer({}) as server:
        path = f"/a?access_token={TOKEN}"
        server.fail(path, Redirect(other.url + "/b", code))
        data = HttpDataset(
            [with_userinfo(server.url) + path], headers={"X-Api-Key": SECRET}, retry=FAST
        )
        assert load(data, io_mode) == [BODY]
        assert data.counters.redirects == 1
        first = server.headers_seen[0]
        assert first.get("x-api-key") == SECRET and first.get("authorization", "").startswith(
            "Basic "
        )
        assert len(other.headers_seen) == 1
        assert leaked(other.headers_seen[0]) == []


def test_another_host_on_the_same_port_is_another_origin(io_mode):
    # localhost and 127.0.0.1: the same server, two origins.
    with LoopbackServer({"/b": BODY}) as server:
        port = server.url.rpartition(":")[2]
        server.fail("/a", Redirect(f"http://localhost:{port}/b"))
        data = HttpDataset([server.url + "/a"], headers={"X-Api-Key": SECRET}, retry=FAST)
        assert load(data, io_mode) == [BODY]
        assert [h.get("x-api-key") for h in server.headers_seen] == [SECRET, None]
        assert leaked(server.headers_seen[1]) == []


def test_the_datasets_origin_keeps_its_headers_across_redirects(io_mode):
    # Within the origin, and back to it after another one, as the reference does.
    with LoopbackServer({"/b": BODY}) as other, LoopbackServer({"/d": BODY}) as server:
        server.fail("/a", Redirect("/c", 301))
        server.fail("/c", Redirect(other.url + "/b", 302))
        other.fail("/b", Redirect(server.url + "/d", 307))
        data = HttpDataset(
            [with_userinfo(server.url) + "/a"], headers={"X-Api-Key": SECRET}, retry=FAST
        )
        assert load(data, io_mode) == [BODY]
        assert data.counters.redirects == 3
        assert [h.get("x-api-key") for h in server.headers_seen] == [SECRET] * 3
        assert all(h.get("authorization", "").startswith("Basic ") for h in server.headers_seen)
        assert all("referer" not in h for h in server.headers_seen)
        assert [leaked(h) for h in other.headers_seen] == [[]]


def test_a_redirect_to_what_is_not_http_is_a_value_error(io_mode):
    with LoopbackServer({}) as server:
        server.fail("/a", Redirect("ftp://example.com/x?token=t", 302))
        data = HttpDataset([server.url + "/a"], headers={"X-Api-Key": SECRET}, retry=FAST)
        with pytest.raises(ValueError, match=r"ftp://example\.com/x.*not an http\(s\) URL"):
            load(data, io_mode)
        assert len(server.headers_seen) == 1


def test_an_object_stores_session_token_stays_with_its_endpoint(io_mode, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing-session-token")
    with LoopbackServer({"/b/k0": BODY}) as other, LoopbackServer({}) as server:
        server.fail("/b/k0", Redirect(other.url + "/b/k0", 307))
        data = ObjectStoreDataset("s3://b", ["k0"], endpoint_url=server.url, retry=FAST)
        assert load(data, io_mode) == [BODY]
        assert server.headers_seen[0].get("x-amz-security-token") == "testing-session-token"
        assert len(other.headers_seen) == 1
        assert leaked(other.headers_seen[0]) == []
        assert not any(name.startswith("x-amz-") for name in other.headers_seen[0])


def test_an_object_stores_own_origin_keeps_its_signature(io_mode, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing-session-token")
    with LoopbackServer({"/b/k1": BODY}) as server:
        server.fail("/b/k0", Redirect("/b/k1", 302))
        data = ObjectStoreDataset("s3://b", ["k0"], endpoint_url=server.url, retry=FAST)
        assert load(data, io_mode) == [BODY]
        assert [h.get("x-amz-security-token") for h in server.headers_seen] == [
            "testing-session-token"
        ] * 2
        assert all(h.get("authorization", "").startswith("AWS4-") for h in server.headers_seen)
        assert all("referer" not in h for h in server.headers_seen)


ORIGIN_CODES = [301, 302, 303, 307, 308]


@st.composite
def chains(draw):
    """Hops after the first request: each to the dataset's origin, another port,
    or another host on the origin's port, with any redirect code."""
    length = draw(st.integers(1, 6))
    targets = draw(st.lists(st.sampled_from(["origin", "other port", "other host"]),
                            min_size=length, max_size=length))  # fmt: skip
    codes = draw(st.lists(st.sampled_from(ORIGIN_CODES), min_size=length, max_size=length))
    return list(zip(targets, codes, strict=True))


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(chain=chains())
def test_no_secret_reaches_another_origin_on_any_redirect_chain(io_mode, chain):
    """The redirect rule as a property: whatever chain of origins Hypothesis draws,
    every request that is not to the dataset's origin carries no secret, and the
    item is read at the chain's end."""
    with LoopbackServer({}) as other, LoopbackServer({}) as server:
        port = server.url.rpartition(":")[2]
        bases = {
            "origin": server.url,
            "other port": other.url,
            "other host": f"http://localhost:{port}",
        }
        serving = {"origin": server, "other port": other, "other host": server}
        where, first = "origin", f"/h0?access_token={TOKEN}"
        for hop, (target, code) in enumerate(chain):
            path = first if hop == 0 else f"/h{hop}"
            serving[where].fail(path, Redirect(f"{bases[target]}/h{hop + 1}", code))
            where = target
        serving[where].objects[f"/h{len(chain)}"] = BODY
        data = HttpDataset(
            [with_userinfo(server.url) + first],
            headers={"X-Api-Key": SECRET},
            retry=FAST,
        )
        assert load(data, io_mode) == [BODY]
        assert data.counters.redirects == len(chain)
        origin_host = server.url.removeprefix("http://")
        elsewhere = [h for h in server.headers_seen if h.get("host") != origin_host]
        elsewhere += other.headers_seen
        assert [leaked(h) for h in elsewhere if leaked(h)] == []
        assert server.headers_seen[0].get("x-api-key") == SECRET  # the origin has them
