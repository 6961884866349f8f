"""Peak memory of an endless stream iterated and discarded: flat, at most the kept-text cap plus a constant.

    python benchmarks/stream_memory.py [--seconds 60] [--cap-mib 64,16] [--paths create,async,iter_lines] [--no-save]

A server on 127.0.0.1 (a thread of this process) sends valid chat.completion.chunk events forever, 32 ASCII
characters of content each, and never ``[DONE]``. Each path runs in a child process of its own for ``--seconds``:
it opens a stream with the client's defaults (but ``max_stream_text_bytes``: each of ``--cap-mib``), iterates it and
throws every chunk away; when the cap ends a stream (`StreamTooLargeError`) it opens the next. The child samples
its RSS once a second (``/proc/self/statm``; every 5th sample is kept) and reports its baseline (after imports and
the first chunk), its peak (``ru_maxrss``) and the growth of the peak over the baseline, against the cap. Paths:
``create`` (sync ``create(stream=True)``), ``async`` (``AsyncClient``, aiohttp), ``iter_lines``
(``with_streaming_response`` with ``stream=True``, the raw lines). Printed as JSON and merged into
benchmarks/results.json under "stream_memory". Memory figures are exact per run (not timing): the machine's
load only changes how many megabytes of events pass in the time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from typing import Any

from _common import save_results

KEY = "hs_BenchKey0123456789abcdefABCDEF"
CONTENT = "0123456789abcdefghijklmnopqrstuv"  # 32 ASCII bytes per event
EVENT = (b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                  "choices": [{"index": 0, "delta": {"content": CONTENT}}]}).encode() + b"\n\n")
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
PATHS = ("create", "async", "iter_lines")


def serve_forever() -> int:
    """Start the endless server in a daemon thread; returns its port."""
    ready = threading.Event()
    port: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")  # the request's head; its body is not needed
            writer.write(HEAD)
            block = EVENT * 512
            while True:
                writer.write(block)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def run() -> None:
        loop = asyncio.new_event_loop()

        async def start() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            port.append(server.sockets[0].getsockname()[1])
            ready.set()

        loop.run_until_complete(start())
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    ready.wait(10)
    return port[0]


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(path: str, url: str, seconds: float, cap: int) -> dict[str, Any]:
    """Stream and discard for ``seconds`` on ``path``; reopen each stream the cap ends."""
    import holysheep

    too_large: Any = getattr(holysheep, "StreamTooLargeError", holysheep.ResponseTooLargeError)

    messages: Any = [{"role": "user", "content": "go"}]
    options: dict[str, Any] = {"max_stream_text_bytes": cap} if cap else {}
    samples: list[float] = []
    streams = chunks = 0
    baseline = 0.0
    start = time.monotonic()
    next_sample = start

    def tick() -> bool:
        nonlocal next_sample
        now = time.monotonic()
        if now >= next_sample:
            samples.append(round(rss_mib(), 1))
            next_sample += 1.0
        return now - start < seconds

    def seen(n: int) -> bool:
        """Count ``n`` chunks; False once the time is up."""
        nonlocal chunks, baseline
        chunks += n
        if chunks == n:
            baseline = rss_mib()  # after imports, the client's pool and the first chunk
        return chunks % 4096 != 0 or tick()

    # each stream is read in a function of its own: the one the cap ended is let go before the next opens
    def one_sync(client: Any) -> None:
        if path == "create":
            with client.chat.completions.create(model="m", messages=messages, stream=True) as stream:
                for _ in stream:
                    if not seen(1):
                        return
        else:
            with client.chat.completions.with_streaming_response.create(
                    model="m", messages=messages, stream=True) as response:
                for line in response.iter_lines():
                    if line.startswith("data:") and not seen(1):
                        return

    async def one_async(client: Any) -> None:
        async with await client.chat.completions.create(model="m", messages=messages, stream=True) as stream:
            async for _ in stream:
                if not seen(1):
                    return

    if path == "async":
        async def go() -> None:
            nonlocal streams
            async with holysheep.AsyncClient(api_key=KEY, base_url=url, **options) as client:
                while tick():
                    streams += 1
                    with contextlib.suppress(too_large):  # the cap ended it: open the next
                        await one_async(client)

        asyncio.run(go())
    else:
        with holysheep.Client(api_key=KEY, base_url=url, **options) as client:
            while tick():
                streams += 1
                with contextlib.suppress(too_large):
                    one_sync(client)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"path": path, "seconds": round(time.monotonic() - start, 1), "streams": streams, "chunks": chunks,
            "text_mib": round(chunks * len(CONTENT) / 2**20, 1), "baseline_mib": round(baseline, 1),
            "peak_mib": round(peak, 1), "growth_mib": round(peak - baseline, 1),
            "cap_mib": round(cap / 2**20, 2), "rss_every_5s": samples[::5]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--cap-mib", default="64,16",
                        help="comma-separated caps in MiB (64: the default; 0: pass none, for an older SDK)")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        caps = [float(c) for c in args.cap_mib.split(",")]
    except ValueError:
        parser.error(f"--cap-mib: {args.cap_mib!r} is not a comma-separated list of numbers of MiB")
    if args.child:
        print(json.dumps(child(args.child, args.url, args.seconds, int(caps[0] * 2**20))))
        return
    paths = args.paths.split(",")
    for path in paths:
        if path not in PATHS:
            parser.error(f"--paths: {path!r} is not one of {', '.join(PATHS)}")
    url = f"http://127.0.0.1:{serve_forever()}/v1"
    runs = []
    for cap_mib, path in [(c, p) for c in caps for p in paths]:
        done = subprocess.run([sys.executable, __file__, "--child", path, "--url", url, "--seconds",
                               str(args.seconds), "--cap-mib", str(cap_mib)],
                              capture_output=True, text=True, check=True, timeout=args.seconds + 120)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = runs[-1]
        print(f"{path}: {r['text_mib']} MiB of text in {r['streams']} streams over {r['seconds']} s; RSS "
              f"{r['baseline_mib']} -> peak {r['peak_mib']} MiB (+{r['growth_mib']} MiB, cap {r['cap_mib']} MiB)")
    out = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} cores",
           "conditions": "endless SSE stream from a server thread of the parent; each path in its own child "
                         "process; chunks iterated and discarded",
           "runs": runs}
    print(json.dumps(out, indent=2))
    if not args.no_save:
        save_results({"stream_memory": out})


if __name__ == "__main__":
    main()
