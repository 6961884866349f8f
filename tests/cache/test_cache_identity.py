"""Issue 45, item 10: the cache key says who asked and which endpoint answered, and a cache file another user can
write is not used. Tenant B, and a revoked key, never get tenant A's answer; a fallback's answer is never served
as the primary's; a planted 0666 cache file (or one in a folder others may write) is refused with a warning and
its answer is not served."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import httpx
import pytest
import respx

from holysheep import AsyncClient, AuthenticationError, CircuitBreaker, Client, Fallback
from holysheep.cache import MemoryCache, ResponseCache, SQLiteCache, credential_identity, open_cache
from holysheep.testing import FakeServer, Fault

from ..core.conftest import BASE, COMPLETION

URL = f"{BASE}/chat/completions"
MESSAGES = [{"role": "user", "content": "what is my balance?"}]
TENANTS = {"hs_TenantAKey0123456789abcdefAAAA": "A", "hs_TenantBKey0123456789abcdefBBBB": "B"}
KEY_A, KEY_B = TENANTS
REVOKED = "hs_RevokedKey0123456789abcdefRRRR"


def _per_tenant(request: httpx.Request) -> httpx.Response:
    """A server that answers each tenant with its own data, and refuses any other key (401)."""
    key = request.headers.get("api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
    tenant = TENANTS.get(key)
    if tenant is None:
        return httpx.Response(401, json={"error": {"message": "invalid or revoked key", "type": "auth_error"}})
    body = {**COMPLETION, "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": f"balance of {tenant}"}}]}
    return httpx.Response(200, json=body)


def _ask(client: Client) -> tuple[str | None, bool]:
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    return reply.choices[0].message.content, reply.cached


def test_another_tenant_and_a_revoked_key_never_get_tenant_as_answer(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(URL).mock(side_effect=_per_tenant)
    shared = ResponseCache(MemoryCache())  # one cache for every client of the process
    with Client(api_key=KEY_A, cache=shared) as a, Client(api_key=KEY_B, cache=shared) as b, \
            Client(api_key=REVOKED, cache=shared) as revoked:
        assert _ask(a) == ("balance of A", False)
        assert _ask(b) == ("balance of B", False)
        with pytest.raises(AuthenticationError):
            _ask(revoked)
        assert _ask(a) == ("balance of A", True) and _ask(b) == ("balance of B", True)
        tenant_b = a.with_options(api_key=KEY_B)  # a copy for another tenant shares the cache, not the answers
        assert _ask(tenant_b) == ("balance of B", True)
    assert route.call_count == 3 and shared.hits == 3


def test_a_key_carried_by_a_header_is_who_asks_too(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(URL).mock(side_effect=_per_tenant)
    shared = ResponseCache(MemoryCache())
    with Client(api_key=REVOKED, default_headers={"api-key": KEY_A}, cache=shared) as a, \
            Client(api_key=REVOKED, default_headers={"api-key": KEY_B}, cache=shared) as b:
        assert [_ask(a), _ask(b), _ask(a), _ask(b)] == [("balance of A", False), ("balance of B", False),
                                                        ("balance of A", True), ("balance of B", True)]
    assert route.call_count == 2


def test_the_identity_is_a_hash_never_the_key() -> None:
    ident = credential_identity(KEY_A)
    assert len(ident) == 64 and KEY_A not in ident and ident != credential_identity(KEY_B)
    assert credential_identity(None) == "" and credential_identity(KEY_A, {"X-Request-Note": "n"}) == ident
    assert credential_identity(None, {"Authorization": f"Bearer {KEY_A}"}) not in ("", ident)


def _fallback_client(primary: FakeServer, backup: FakeServer, cache: ResponseCache) -> Client:
    return Client(api_key=primary.api_key, base_url=primary.url, max_retries=0, cache=cache,
                  fallbacks=[Fallback(base_url=backup.url, api_key=backup.api_key, name="backup")],
                  circuit_breaker=CircuitBreaker(failure_threshold=5))


def test_a_fallbacks_answer_is_never_served_as_the_primarys() -> None:
    cache = ResponseCache(MemoryCache())
    with FakeServer() as primary, FakeServer() as backup, _fallback_client(primary, backup, cache) as client:
        primary.set_faults([Fault.status(503)])  # the primary is down for one request
        first = client.chat.completions.create(model="m", messages=MESSAGES)
        assert (first.served_by, first.cached) == ("backup", False)
        second = client.chat.completions.create(model="m", messages=MESSAGES)  # the primary is back
        assert (second.served_by, second.cached) == ("primary", False)
        third = client.chat.completions.create(model="m", messages=MESSAGES)
        assert third.cached and cache.hits == 1
    assert len(primary.requests) == 2 and len(backup.requests) == 1


def test_the_async_client_keeps_a_fallbacks_answer_apart_too() -> None:
    cache = ResponseCache(MemoryCache())

    async def go(primary: FakeServer, backup: FakeServer) -> list[tuple[str, bool]]:
        async with AsyncClient(api_key=primary.api_key, base_url=primary.url, max_retries=0, cache=cache,
                               fallbacks=[Fallback(base_url=backup.url, api_key=backup.api_key, name="backup")],
                               circuit_breaker=CircuitBreaker(failure_threshold=5)) as client:
            replies = [await client.chat.completions.create(model="m", messages=MESSAGES) for _ in range(3)]
        return [(r.served_by, r.cached) for r in replies]

    with FakeServer() as primary, FakeServer() as backup:
        primary.set_faults([Fault.status(503)])
        assert asyncio.run(go(primary, backup)) == [("backup", False), ("primary", False), ("cache", True)]


def test_a_batch_stores_a_fallbacks_answer_under_the_fallback() -> None:
    cache = ResponseCache(MemoryCache())
    items = [{"custom_id": "q", "messages": MESSAGES}]
    with FakeServer() as primary, FakeServer() as backup, _fallback_client(primary, backup, cache) as client:
        primary.set_faults([Fault.status(503)])
        first = client.chat.completions.batch(items, model="m", cache=cache, check_quota=False)
        assert first[0].response is not None and first[0].response.served_by == "backup"
        again = client.chat.completions.batch(items, model="m", cache=cache, check_quota=False)
        assert again[0].response is not None and again[0].response.served_by == "primary"
    chats = [r for r in primary.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 2 and cache.hits == 0


def _stored_answer(path: Path, server: FakeServer) -> None:
    """An answer in the cache file at ``path``, as if another user had put it there for this request."""
    with Client(api_key=server.api_key, base_url=server.url, cache=path) as client:
        client.chat.completions.create(model="m", messages=MESSAGES)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("planted", ["file-0666", "wal-0666", "folder-0777", "folder-0770"])
def test_a_cache_others_can_write_is_refused_with_a_warning_and_not_served(
        planted: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    path = folder / "responses.db"
    with FakeServer() as server:
        _stored_answer(path, server)
        if planted == "file-0666":
            os.chmod(path, 0o666)
        elif planted == "wal-0666":
            wal = path.with_name(path.name + "-wal")
            wal.write_bytes(b"")
            os.chmod(wal, 0o666)
        else:
            os.chmod(folder, int(planted[-4:], 8))
        with caplog.at_level(logging.WARNING, logger="holysheep.cache"), \
                Client(api_key=server.api_key, base_url=server.url, cache=path) as client:
            reply = client.chat.completions.create(model="m", messages=MESSAGES)
            assert not reply.cached and client.cache is not None and client.cache.off is not None
        assert len(server.requests) == 2  # asked again: the stored answer was not served
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "can be written by other users" in warnings[0], warnings
    assert "go on uncached" in warnings[0] and str(path) in warnings[0]


def test_a_private_cache_file_is_used(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "responses.db"
    with FakeServer() as server:
        _stored_answer(path, server)
        assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
        with Client(api_key=server.api_key, base_url=server.url, cache=path) as client:
            assert client.chat.completions.create(model="m", messages=MESSAGES).cached
        store = SQLiteCache(path)
        try:
            assert open_cache(store).off is None
        finally:
            store.close()
