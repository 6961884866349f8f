"""Rate limits against a token-bucket server: an unknown limit learned from 429s, an announced burst used.

    python benchmarks/rate_limits.py [--only unknown|counted|announced] [--no-save]

The server (a thread with its own event loop, HTTP/1.1 keep-alive, answers at once) keeps one token bucket:

- ``unknown``: 2 requests/s, a burst of 2, **no** rate-limit headers; a refused request gets 429 with
  ``Retry-After: 1``. 120 items at the batch's defaults but ``concurrency=64``. Ideal: 60 s (2 a second).
  Targets: every item succeeds, at most 10 % of the requests in the second half of the run are 429, wall at
  most 1.1x the ideal.
- ``counted``: the same, and each 429 also takes a token (the level may fall to minus the burst), as
  providers that count refused requests against the limit do.
- ``announced``: 3,000 RPM (50/s) holding 100 (2 s of burst), OpenAI's ``x-ratelimit-*-requests`` headers on
  every reply (limit, what remains, time to full). 400 items at the defaults. Ideal: 100 at once + 300 at
  50/s = 6.0 s. Targets: wall at most 1.05x the ideal, no 429.

Wall time is the real clock (noisy on a shared machine; the exact schedules are in
tests/engine/test_learned_rate.py). Results are printed as JSON and merged into benchmarks/results.json
under "rate_limits".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from typing import Any

from _common import save_results

KEY = "hs_bench0123456789abcdefABCDEF"
REPLY = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
REFUSED = json.dumps({"error": {"message": "Rate limit reached", "type": "requests",
                                "code": "rate_limit_exceeded"}}).encode()
CASES = {"unknown": dict(rate=2.0, burst=2.0, counted=False, announce=False, n=120, concurrency=64, ideal=60.0),
         "counted": dict(rate=2.0, burst=2.0, counted=True, announce=False, n=120, concurrency=64, ideal=60.0),
         "announced": dict(rate=50.0, burst=100.0, counted=False, announce=True, n=400, concurrency=None, ideal=6.0)}


class BucketServer:
    """A token bucket behind a minimal HTTP server; ``log`` holds (time, status) per chat request."""

    def __init__(self, rate: float, burst: float, counted: bool, announce: bool) -> None:
        self.rate, self.burst, self.counted, self.announce = rate, burst, counted, announce
        self.level, self.stamp = burst, time.monotonic()
        self.log: list[tuple[float, int]] = []
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        self._ready.wait(10)
        return f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)  # the shutdown gather below looks it up
        server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()

    def _decide(self) -> tuple[int, bytes, dict[str, str]]:
        now = time.monotonic()
        self.level = min(self.burst, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        ok = self.level >= 1.0
        if ok:
            self.level -= 1.0
        elif self.counted:
            self.level = max(-self.burst, self.level - 1.0)
        self.log.append((now, 200 if ok else 429))
        headers: dict[str, str] = {} if ok else {"retry-after": "1"}
        if self.announce:
            headers.update({"x-ratelimit-limit-requests": f"{self.rate * 60:g}",
                            "x-ratelimit-remaining-requests": str(max(0, int(self.level))),
                            "x-ratelimit-reset-requests": f"{(self.burst - self.level) / self.rate:.3f}s"})
        return (200, REPLY, headers) if ok else (429, REFUSED, headers)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                if b"/chat/completions" in head.split(b"\r\n", 1)[0]:
                    status, body, headers = self._decide()
                else:
                    status, body, headers = 404, b'{"error": {"message": "not found"}}', {}
                extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                writer.write(f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
                             f"\r\n{extra}\r\n".encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went, or the server stops
        finally:
            writer.close()


async def _batch(url: str, n: int, concurrency: int | None) -> Any:
    from holysheep import AsyncClient

    async with AsyncClient(api_key=KEY, base_url=url) as client:
        extra = {} if concurrency is None else {"concurrency": concurrency}
        return await client.chat.completions.batch([f"p{i}" for i in range(n)], model="m", check_quota=False,
                                                   **extra)


def run_case(name: str) -> dict[str, Any]:
    from holysheep.batch import forget_limits

    case = CASES[name]
    forget_limits()
    server = BucketServer(case["rate"], case["burst"], case["counted"], case["announce"])
    with server as url:
        start = time.monotonic()
        results = asyncio.run(_batch(url, case["n"], case["concurrency"]))
        wall = time.monotonic() - start
    log = server.log
    mid = (log[0][0] + log[-1][0]) / 2
    late = [status for at, status in log if at >= mid]
    return {"items": case["n"], "ok": sum(r.ok for r in results), "requests": len(log),
            "answered_429": sum(status == 429 for _, status in log),
            "late_429_share": round(late.count(429) / len(late), 3), "wall_s": round(wall, 2),
            "ideal_s": case["ideal"], "ratio": round(wall / case["ideal"], 3),
            "paced_rpm": results.stats.paced_rpm, "learned_rpm": results.stats.learned_rpm}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=sorted(CASES))
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{__import__('os').cpu_count()} cores",
                           "conditions": "client and token-bucket server (threads of one process) on one machine; "
                                         "one run per case, real clock"}
    for name in [args.only] if args.only else list(CASES):
        out[name] = run_case(name)
        print(name, json.dumps(out[name]), flush=True)
    if not args.no_save:
        save_results({"rate_limits": out}, merge_sections=True)


if __name__ == "__main__":
    main()
