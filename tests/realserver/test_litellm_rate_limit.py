"""Issue 45 item 15: a real server's rate limit is not an outage. The LiteLLM proxy with deployments limited to
60 requests a minute (it announces ``x-ratelimit-*`` for the deployment, then answers 429 "No deployments
available" with no ``Retry-After`` until its minute ends): 100 items finish, none left unrun, no outage stop,
right after a batch on another model of the same key (limits are kept per model), from the Python API and the
CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from holysheep import Client

from .litellm_proxy import LiteLLMProxy, litellm_proxy

pytestmark = pytest.mark.realserver
__all__ = ["litellm_proxy"]

RPM = 60
ITEMS = 100
LITELLM_MODELS = {"limited-py": RPM, "other-cli": RPM, "limited-cli": RPM}


def _within_the_limit_s(items: int) -> float:
    """The most 100 items at 60 a minute can take, with a fresh minute at the start: the first 60 at once, the
    rest in the next minute's window, plus room for the proxy's own slowness on 2 cores."""
    return 60.0 * ((items - 1) // RPM) + 75.0


def test_python_batch_at_a_60_rpm_deployment_finishes_every_item(litellm_proxy: LiteLLMProxy) -> None:
    """The issue's run: a fresh deployment, the defaults (it stopped as an outage after 70-78 s of 429s)."""
    with Client(api_key=litellm_proxy.key, base_url=litellm_proxy.url) as client:
        started = time.monotonic()
        results = client.chat.completions.batch([f"question {i}" for i in range(ITEMS)], model="limited-py",
                                                max_tokens=5, check_quota=False)
        elapsed = time.monotonic() - started
    summary = results.summary()
    assert summary.succeeded == ITEMS and summary.failed == 0, (summary.errors, summary.stop_reason)
    assert summary.stop_reason is None
    assert [r.response.choices[0].message.content for r in results if r.response] == ["hello from limited-py"] * ITEMS
    assert elapsed <= _within_the_limit_s(ITEMS), str(summary)


def test_cli_batch_at_a_60_rpm_deployment_finishes_every_line(litellm_proxy: LiteLLMProxy, tmp_path: Path) -> None:
    """Right after a batch on another model of the same key: that model's pace is not this one's."""
    env = {**os.environ, "HOLYSHEEP_API_KEY": litellm_proxy.key, "HOLYSHEEP_BASE_URL": litellm_proxy.url}

    def run(model: str, lines: int, out: Path) -> subprocess.CompletedProcess[str]:
        src = tmp_path / f"{model}.jsonl"
        src.write_text("".join(json.dumps({"custom_id": f"{model}-{i}", "body": {
            "model": model, "max_tokens": 5, "messages": [{"role": "user", "content": f"q{i}"}]}}) + "\n"
            for i in range(lines)), encoding="utf-8")
        return subprocess.run([sys.executable, "-m", "holysheep", "batch", str(src), "-o", str(out),
                               "--no-quota-check"], capture_output=True, text=True, env=env, timeout=400)

    warm = run("other-cli", 20, tmp_path / "other.out.jsonl")
    assert warm.returncode == 0, warm.stderr
    started = time.monotonic()
    done = run("limited-cli", ITEMS, tmp_path / "limited.out.jsonl")
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "limited.out.jsonl").read_text().splitlines()]
    assert [r["custom_id"] for r in rows] == [f"limited-cli-{i}" for i in range(ITEMS)]
    assert all(r.get("error") is None for r in rows)
    assert "outage" not in done.stderr
    assert elapsed <= _within_the_limit_s(ITEMS) + 10, done.stderr[-3000:]
