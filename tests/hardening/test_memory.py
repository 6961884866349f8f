"""Peak memory against hostile servers, measured in a fresh subprocess (VmHWM) with the default limits:
a gzip bomb, a 200 MB JSON body and an endless gzip-compressed SSE line must cost bounded memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent('''
    import asyncio, json, sys, zlib
    from tests.hardening.hostile import HostileServer, fixed, head, write_forever
    from tests.hardening.conftest import chat
    import holysheep

    case, kind = sys.argv[1], sys.argv[2]

    def peak_kb():
        # VmHWM is this process's own peak RSS; ru_maxrss would include the parent's peak at fork time.
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError("no VmHWM")

    def gz(data_iter):
        comp = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return b"".join(comp.compress(d) for d in data_iter) + comp.flush()

    if case == "bomb":
        payload = gz(b"\\0" * (1 << 20) for _ in range(256))  # 256 MiB of zeros, ~256 KB on the wire
        async def scenario(req, w):
            w.write(fixed(200, payload, content_encoding="gzip"))
        stream = False
    elif case == "big_json":
        async def scenario(req, w):
            w.write(head() + b'{"pad": "')
            for _ in range(200 * 16):  # 200 MB
                w.write(b" " * 65536)
                await w.drain()
            w.write(b'"}')
        stream = False
    else:  # endless gzip SSE line
        payload = gz(b"data: " if i < 0 else b"x" * (1 << 20) for i in range(-1, 128))  # 128 MiB, no newline
        async def scenario(req, w):
            w.write(head(content_type="text/event-stream", content_encoding="gzip") + payload)
        stream = True

    with HostileServer(scenario) as srv:
        before = peak_kb()
        try:
            chat(kind, srv.url, stream=stream)
            outcome = "no error"
        except holysheep.HolySheepError as exc:
            outcome = type(exc).__name__
        after = peak_kb()
    print(json.dumps({"outcome": outcome, "growth_mb": (after - before) / 1024, "before_mb": before / 1024}))
''')

# Bounds: the default caps are 64 MiB (body) and 16 MiB (SSE line); the old code grew by 0.5-2 GB here (the
# payloads are 256 and 128 MiB now, still twice the bounds: compressing 1 GiB cost each run 2 s).
CASES = [("bomb", 64 + 60), ("big_json", 64 + 60), ("sse_gzip_line", 16 + 60)]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for the peak RSS")
@pytest.mark.parametrize("kind", ["sync", "httpx", "aiohttp"])
@pytest.mark.parametrize(("case", "bound_mb"), CASES, ids=[c[0] for c in CASES])
def test_peak_rss_is_bounded(case: str, bound_mb: int, kind: str) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, case, kind], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(case, kind, result)
    assert result["outcome"] == "ResponseTooLargeError"
    assert 1 < result["growth_mb"] < bound_mb, result  # > 1: the measurement saw the body being read
