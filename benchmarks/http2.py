"""HTTP/2 (``http2=True``) against HTTP/1.1: N concurrent requests with latency, same TLS server, same run.

    python benchmarks/http2.py [--n 2000] [--latency 0.05] [--rounds 3] [--quick] [--no-write]

The server (hypercorn in a child process, TLS with a trustme CA, ALPN ``h2`` + ``http/1.1``) answers each
chat request after ``--latency`` seconds and counts the TCP connections it saw. For 64 and 256 in flight,
each round runs three clients one after the other, in an order that rotates per round:

- ``aiohttp``: the default ``AsyncClient`` (HTTP/1.1);
- ``httpx-h1``: ``AsyncClient(http_backend="httpx")`` (HTTP/1.1), the floor HTTP/2 is compared with;
- ``httpx-h2``: ``AsyncClient(http2=True)`` (httpx, HTTP/2).

Reported per variant (medians of the rounds): wall seconds and wall / ideal (ideal = n / in-flight x latency),
client CPU per request (``time.process_time`` of this process; the server runs elsewhere) and the
connections the server saw. Ratios: ``httpx-h2`` / ``httpx-h1`` (CPU and wall), median of the per-round
ratios. Printed as JSON and merged into benchmarks/results.json under "http2".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from _common import save_results

VARIANTS = ("aiohttp", "httpx-h1", "httpx-h2")
MESSAGES = [{"role": "user", "content": "benchmark"}]
REPLY = json.dumps({
    "id": "chatcmpl-b", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok " * 50}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 50, "total_tokens": 51}}).encode()


def serve(fd: int, pem: str, latency: float) -> None:
    """The child: hypercorn on the listening socket ``fd`` until stdin closes."""
    from hypercorn.asyncio import serve as hyper
    from hypercorn.config import Config

    peers: set[tuple[str, int]] = set()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                done = "startup" if message["type"] == "lifespan.startup" else "shutdown"
                await send({"type": f"lifespan.{done}.complete"})
                if done == "shutdown":
                    return
        while (await receive()).get("more_body"):
            pass
        if scope["path"].endswith("/stats"):  # connections since the last /stats (that one's own excluded)
            peers.discard(tuple(scope["client"]))  # type: ignore[arg-type]
            body = json.dumps({"connections": len(peers)}).encode()
            peers.clear()
        else:
            peers.add(tuple(scope["client"]))  # type: ignore[arg-type]
            await asyncio.sleep(latency)
            body = REPLY
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    config = Config()
    config.bind = [f"fd://{fd}"]
    config.certfile = config.keyfile = pem
    config.accesslog = config.errorlog = None
    config.h2_max_concurrent_streams = 1000
    config.keep_alive_max_requests = 1_000_000
    config.backlog = 1024

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_reader(sys.stdin.fileno(), stop.set)  # the parent closes our stdin to stop us
        await hyper(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    asyncio.run(main())


async def run_variant(variant: str, url: str, ca: str, n: int, conc: int) -> dict[str, float]:
    import httpx

    from holysheep import AsyncClient

    opts: dict[str, Any] = {"api_key": "sk-bench", "base_url": url, "verify": ca, "max_retries": 0}
    if variant == "httpx-h1":
        opts["http_backend"] = "httpx"
    elif variant == "httpx-h2":
        opts["http2"] = True
    async with AsyncClient(**opts) as client:
        client.reserve_connections(conc)
        sem = asyncio.Semaphore(conc)

        async def one() -> None:
            async with sem:
                await client.chat.completions.create(model="m", messages=MESSAGES)

        cpu, start = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    async with httpx.AsyncClient(verify=ca) as probe:
        connections = (await probe.get(f"{url}/stats")).json()["connections"]
    return {"wall_s": wall, "cpu_us_per_request": cpu / n * 1e6, "connections": connections}


def measure(url: str, ca: str, n: int, latency: float, rounds: int, concs: tuple[int, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for conc in concs:
        runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        asyncio.run(run_variant("httpx-h2", url, ca, min(n, 200), conc))  # warm-up (imports, TLS)
        for r in range(rounds):
            order = VARIANTS[r % 3:] + VARIANTS[:r % 3]
            for variant in order:
                runs[variant].append(asyncio.run(run_variant(variant, url, ca, n, conc)))
        ideal = n / conc * latency
        row: dict[str, Any] = {"ideal_s": round(ideal, 3)}
        for variant, got in runs.items():
            wall = statistics.median(g["wall_s"] for g in got)
            row[variant] = {"wall_s": round(wall, 3), "wall_vs_ideal": round(wall / ideal, 2),
                            "cpu_us_per_request": round(statistics.median(g["cpu_us_per_request"] for g in got)),
                            "connections": int(statistics.median(g["connections"] for g in got))}
        h1, h2 = runs["httpx-h1"], runs["httpx-h2"]
        row["h2_vs_h1_cpu"] = round(statistics.median(b["cpu_us_per_request"] / a["cpu_us_per_request"]
                                                      for a, b in zip(h1, h2, strict=True)), 2)
        row["h2_vs_h1_wall"] = round(statistics.median(b["wall_s"] / a["wall_s"]
                                                       for a, b in zip(h1, h2, strict=True)), 2)
        row["h2_vs_aiohttp_cpu"] = round(statistics.median(
            b["cpu_us_per_request"] / a["cpu_us_per_request"] for a, b in zip(runs["aiohttp"], h2, strict=True)), 2)
        out[f"{n}x{int(latency * 1000)}ms_at_{conc}"] = row
        print(json.dumps({conc: row}), file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 requests, 1 round")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--serve", nargs=3, metavar=("FD", "PEM", "LATENCY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], float(args.serve[2]))
        return
    import trustme

    n, rounds = (500, 1) if args.quick else (args.n, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        ca = trustme.CA()
        ca_file, pem = os.path.join(tmp, "ca.pem"), os.path.join(tmp, "server.pem")
        ca.cert_pem.write_to_path(ca_file)
        ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(pem)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        child = subprocess.Popen([sys.executable, __file__, "--serve", str(sock.fileno()), pem, str(args.latency)],
                                 stdin=subprocess.PIPE, pass_fds=(sock.fileno(),))
        try:
            url = f"https://127.0.0.1:{sock.getsockname()[1]}/v1"
            result = measure(url, ca_file, n, args.latency, rounds, (64, 256))
        finally:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(30)
            sock.close()
    out = {"http2": {"n": n, "latency_s": args.latency, "rounds": rounds, "cpus": os.cpu_count(),
                     "results": result}}
    print(json.dumps(out, indent=2))
    if not args.no_write and not args.quick:
        save_results(out)


if __name__ == "__main__":
    main()
