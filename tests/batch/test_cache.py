"""The response cache in the batch, the clients and the CLI: a repeated batch sends nothing and returns the
same answers; a changed parameter misses; only successes are stored; no key in the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holysheep.batch import BatchResults, run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.cache import SQLiteCache
from holysheep.testing import FakeServer

from .._fakes import FakeClock, TimedStore
from .conftest import MODEL, async_client, chat_requests, sync_client

PROMPTS = [f"tell me about number {i}" for i in range(30)]


def test_repeated_batch_sends_nothing_and_returns_identical_answers(tmp_path: Path, server: FakeServer) -> None:
    cache = tmp_path / "c.db"
    with sync_client(server) as client:
        first = client.chat.completions.batch(PROMPTS, model=MODEL, max_tokens=6, cache=cache)
        sent = len(chat_requests(server))
        again = client.chat.completions.batch(PROMPTS, model=MODEL, max_tokens=6, cache=cache)
    assert sent == 30 and len(chat_requests(server)) == 30  # the second run sent nothing
    assert [r.response.model_dump() for r in again if r.response] == [r.response.model_dump() for r in first
                                                                        if r.response]
    assert all(r.response is not None and r.response.cached for r in again)
    assert not any(r.response is not None and r.response.cached for r in first)
    assert (first.stats.cached, again.stats.cached) == (0, 30)
    assert again.stats.requests == 0 and again.stats.cost_usd == 0.0
    assert again.stats.cache_saved_usd == pytest.approx(first.stats.cost_usd) and first.stats.cost_usd > 0
    assert again.summary().cached == 30 and "from the cache" in str(again.summary())


def test_a_changed_parameter_misses(tmp_path: Path, server: FakeServer) -> None:
    cache = tmp_path / "c.db"
    with sync_client(server) as client:
        client.chat.completions.batch(PROMPTS[:5], model=MODEL, max_tokens=6, cache=cache)
        other = client.chat.completions.batch(PROMPTS[:5], model=MODEL, max_tokens=6, temperature=0.5, cache=cache)
        assert other.stats.cached == 0 and len(chat_requests(server)) == 10
        mixed = client.chat.completions.batch([*PROMPTS[:5], "a new prompt"], model=MODEL, max_tokens=6, cache=cache)
    assert mixed.stats.cached == 5 and len(chat_requests(server)) == 11


async def test_async_batch_iter_and_the_cap_see_hits_as_free(tmp_path: Path, server: FakeServer) -> None:
    cache = tmp_path / "c.db"
    async with async_client(server) as client:
        await client.chat.completions.batch(PROMPTS[:10], model=MODEL, max_tokens=6, cache=cache)
        got = []
        async with client.chat.completions.batch_iter(PROMPTS[:10], model=MODEL, max_tokens=6, cache=cache,
                                                      max_cost_usd=1e-9) as it:  # nothing affordable, all cached
            async for result in it:
                got.append(result)
    assert len(got) == 10 and all(r.ok and r.response is not None and r.response.cached for r in got)
    assert len(chat_requests(server)) == 10 and it.stats.spent_usd == 0.0


def test_only_successes_are_stored(tmp_path: Path) -> None:
    cache = tmp_path / "c.db"
    with FakeServer(faults=["500"]) as server, sync_client(server, max_retries=0) as client:
        failed = client.chat.completions.batch(PROMPTS[:1], model=MODEL, max_tokens=6, cache=cache,
                                               max_retries=0)  # the batch's own policy would retry the 500
        assert not failed[0].ok
        assert SQLiteCache(cache).stats().entries == 0
        ok = client.chat.completions.batch(PROMPTS[:1], model=MODEL, max_tokens=6, cache=cache)
        assert ok[0].ok and not ok[0].response.cached  # type: ignore[union-attr]
    assert SQLiteCache(cache).stats().entries == 1
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("c.db"))
    assert server.api_key.encode() not in raw and b"uthorization" not in raw.lower()


def test_client_cache_on_create(tmp_path: Path, server: FakeServer, kind: str) -> None:
    cache = tmp_path / "c.db"
    messages = [{"role": "user", "content": "hello there"}]
    if kind == "sync":
        with sync_client(server, cache=cache) as client:
            a = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=5)
            b = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=5)
            c = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=6)
    else:
        import asyncio

        async def go() -> tuple[object, object, object]:
            async with async_client(server, cache=cache) as client:
                return (await client.chat.completions.create(model=MODEL, messages=messages, max_tokens=5),
                        await client.chat.completions.create(model=MODEL, messages=messages, max_tokens=5),
                        await client.chat.completions.create(model=MODEL, messages=messages, max_tokens=6))

        a, b, c = asyncio.run(go())
    assert len(chat_requests(server)) == 2
    assert (a.cached, b.cached, c.cached) == (False, True, False)  # type: ignore[attr-defined]
    assert b.model_dump() == a.model_dump() and b.request_id is None  # type: ignore[attr-defined]
    stats = SQLiteCache(cache).stats()
    assert stats.entries == 2 and stats.hits == 1


def test_jsonl_and_cli_cache(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"c{i}", "prompt": p}) + "\n" for i, p in enumerate(PROMPTS)))
    cache = tmp_path / "c.db"
    with sync_client(server) as client:
        run_jsonl(client, src, tmp_path / "a.jsonl", model=MODEL, max_tokens=6, cache=cache)
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    args = [str(src), "-o", str(tmp_path / "b.jsonl"), "--base-url", server.url, "--model", MODEL,
            "--max-tokens", "6", "--no-progress", "--cache", str(cache), "--json"]
    assert cli_main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["cached"] == 30 and report["summary"]["requests"] == 0
    assert len(chat_requests(server)) == 30
    first = [json.loads(x)["response"] for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    second = [json.loads(x)["response"] for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert first == second


def test_batch_cache_hits_elapsed_is_the_lookup_on_the_clients_clock(server: FakeServer, kind: str) -> None:
    """A batch answered from the cache: each hit's ``elapsed_s`` is its lookup's 0.125 s on the client's clock."""
    clock = FakeClock()
    store = TimedStore(clock)
    if kind == "sync":
        with sync_client(server, cache=store) as client:
            client._use_clock(clock)
            first = client.chat.completions.batch(PROMPTS[:4], model=MODEL, max_tokens=6)
            again = client.chat.completions.batch(PROMPTS[:4], model=MODEL, max_tokens=6)
    else:
        import asyncio

        async def go() -> tuple[BatchResults, BatchResults]:
            async with async_client(server, cache=store) as client:
                client._use_clock(clock)
                return (await client.chat.completions.batch(PROMPTS[:4], model=MODEL, max_tokens=6),
                        await client.chat.completions.batch(PROMPTS[:4], model=MODEL, max_tokens=6))

        first, again = asyncio.run(go())
    assert first.stats.cached == 0 and again.stats.cached == 4 and len(chat_requests(server)) == 4
    assert [(r.response.cached, r.response.elapsed_s) for r in again if r.response] == [(True, 0.125)] * 4
    assert clock.now == 8 * 0.125  # 4 misses, then 4 hits: every lookup on the client's clock
