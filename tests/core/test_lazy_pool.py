"""The SDK's HTTP client is created once, even when threads ask for it at the same time (issue 45: a sync client
with fallbacks runs a batch's attempts in threads; each made its own pool and one of them was never closed)."""

from __future__ import annotations

import threading
import time

from holysheep import Client, Fallback
from holysheep._transports.backends import LazyPool
from holysheep.testing import FakeServer


def test_threads_asking_at_once_share_one_client() -> None:
    made: list[object] = []
    release = threading.Event()

    def factory() -> object:
        made.append(object())
        release.wait(5)  # a slow build (TLS certificates): the other thread asks meanwhile
        return made[-1]

    pool: LazyPool[object] = LazyPool(None, factory)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(pool.get())) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    release.set()
    for t in threads:
        t.join(5)
    assert len(made) == 1
    assert got == [made[0]] * 4


def test_a_sync_batch_with_fallbacks_opens_one_pool_per_endpoint() -> None:
    with FakeServer() as primary, FakeServer() as backup:
        fb = Fallback(base_url=backup.url, api_key=backup.api_key, name="backup")
        with Client(api_key=primary.api_key, base_url=primary.url, fallbacks=[fb]) as client:
            results = client.chat.completions.batch([f"p{i}" for i in range(8)], model="m", check_quota=False,
                                                    concurrency=8)
    assert [r.ok for r in results] == [True] * 8
    assert len(primary.requests) == 8 and backup.requests == []
