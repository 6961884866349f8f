"""Issue 45 item 15: a real server's rate limit is not an outage. The LiteLLM proxy with deployments limited to
60 requests a minute (it announces ``x-ratelimit-*`` for the deployment, then answers 429 "No deployments
available" with no ``Retry-After`` until its minute ends): 100 items finish, none left unrun, no outage stop.
The Python API's batch runs on a fresh deployment with the defaults (the issue's run, which stopped as an outage
after 70-78 s of 429s); at the same time the CLI runs 100 lines on another deployment right after a batch on a
third model of the same key (limits are kept per model: that model's pace is not this one's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from holysheep import Client

from .litellm_proxy import LiteLLMProxy, litellm_proxy

pytestmark = pytest.mark.realserver
__all__ = ["litellm_proxy"]

RPM = 60
ITEMS = 100
LITELLM_MODELS = {"limited-py": RPM, "other-cli": RPM, "limited-cli": RPM}
WITHIN_S = 60.0 * ((ITEMS - 1) // RPM) + 80.0
"""The most 100 items at 60 a minute can take from a fresh minute: the first 60 at once, the rest in the next
minute's window, plus room for the proxy's own slowness on 2 cores (it answers in about 0.8 s)."""


def _python_batch(proxy: LiteLLMProxy, out: dict[str, Any]) -> None:
    with Client(api_key=proxy.key, base_url=proxy.url) as client:
        started = time.monotonic()
        results = client.chat.completions.batch([f"question {i}" for i in range(ITEMS)], model="limited-py",
                                                max_tokens=5, check_quota=False)
        out["elapsed"] = time.monotonic() - started
    out["summary"] = results.summary()
    out["texts"] = [r.response.choices[0].message.content if r.response else None for r in results]


def _cli(proxy: LiteLLMProxy, folder: Path, model: str, lines: int) -> tuple[subprocess.CompletedProcess[str], Path]:
    env = {**os.environ, "HOLYSHEEP_API_KEY": proxy.key, "HOLYSHEEP_BASE_URL": proxy.url}
    src, out = folder / f"{model}.jsonl", folder / f"{model}.out.jsonl"
    line: dict[str, Any] = {"method": "POST", "url": "/v1/chat/completions", "body": {"model": model, "max_tokens": 5}}
    src.write_text("".join(json.dumps({**line, "custom_id": f"{model}-{i}", "body": {
        **line["body"], "messages": [{"role": "user", "content": f"q{i}"}]}}) + "\n" for i in range(lines)),
        encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "holysheep", "batch", str(src), "-o", str(out), "--no-quota-check"],
                          capture_output=True, text=True, env=env, timeout=400)
    return done, out


def test_batches_at_60_rpm_deployments_finish_every_item(litellm_proxy: LiteLLMProxy, tmp_path: Path) -> None:
    python: dict[str, Any] = {}
    thread = threading.Thread(target=_python_batch, args=(litellm_proxy, python))
    thread.start()
    try:
        warm, _ = _cli(litellm_proxy, tmp_path, "other-cli", 20)
        assert warm.returncode == 0, warm.stderr[-3000:]
        started = time.monotonic()
        done, out = _cli(litellm_proxy, tmp_path, "limited-cli", ITEMS)
        elapsed = time.monotonic() - started
    finally:
        thread.join(timeout=420)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["custom_id"] for r in rows] == [f"limited-cli-{i}" for i in range(ITEMS)]
    assert all(r.get("error") is None for r in rows)
    assert "outage" not in done.stderr
    assert elapsed <= WITHIN_S, done.stderr[-3000:]

    summary = python["summary"]
    assert summary.succeeded == ITEMS and summary.failed == 0, (summary.errors, summary.stop_reason)
    assert summary.stop_reason is None
    assert python["texts"] == ["hello from limited-py"] * ITEMS
    assert python["elapsed"] <= WITHIN_S, str(summary)
