"""``holysheep bench`` against FakeServer with known latencies and faults; Ctrl-C gives 130 with partial results."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from holysheep.testing import FakeServer, Fault

from .conftest import CLI, Runner, assert_no_key, assert_one_line_error, clean_env

pytestmark = pytest.mark.integration

SUMMARY_KEYS = {"model", "requests", "succeeded", "failed", "success_rate", "errors", "wall_s", "ttft_s", "itl_s",
                "tpot_s", "e2e_s", "output_tok_s_per_request", "output_throughput_tok_s", "prompt_tokens",
                "completion_tokens", "price_per_m", "cost_usd", "cost_per_m_tokens"}


def test_bench_measures_known_ttft_and_itl(cli: Runner, tmp_path: Path) -> None:
    with FakeServer(latency=0.2, stream_chunk_delay=0.02, reply="lorem") as server:
        out = tmp_path / "samples.csv"
        done = cli("--base-url", server.url, "--api-key", server.api_key, "bench", "-m", "deepseek-v3.2",
                   "-n", "6", "-c", "3", "--max-tokens", "20", "--json", "--csv", str(out))
        assert server.max_in_flight <= 3
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"config", "interrupted", "summary", "samples"} and data["interrupted"] is False
    (s,) = data["summary"]
    assert set(s) == SUMMARY_KEYS
    assert s["requests"] == s["succeeded"] == 6 and s["success_rate"] == 1.0 and s["errors"] == {}
    # The server's own delays are floors no measurement can beat (a load on the machine only adds to them):
    # the first token after the 0.2 s latency, each next one 0.02 s later, 0.2 + 19 x 0.02 = 0.58 s in all.
    # Upper bounds would be wall-clock bands; what is measured between the floors is in tests/cli/test_bench_stats.py.
    assert 0.19 <= s["ttft_s"]["p50"] <= s["ttft_s"]["p95"] <= s["ttft_s"]["p99"], s["ttft_s"]
    assert s["itl_s"]["mean"] >= 0.018 and s["tpot_s"]["mean"] >= 0.018, (s["itl_s"], s["tpot_s"])
    assert s["e2e_s"]["p50"] >= 0.57 and s["ttft_s"]["p50"] + 19 * 0.018 <= s["e2e_s"]["p50"], s["e2e_s"]
    assert s["completion_tokens"] == 6 * 20 and s["prompt_tokens"] >= 6 * 140  # ~150-token prompt
    assert s["price_per_m"] == {"input": 0.28, "output": 0.42}
    assert 0.28 < s["cost_per_m_tokens"] < 0.42, data["samples"][0]
    assert len(data["samples"]) == 6 and all(x["ok"] for x in data["samples"])
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 6 and {"ttft_s", "itl_mean_s", "tpot_s", "e2e_s", "error_type"} <= set(rows[0])
    assert_no_key(done.stdout + done.stderr + out.read_text(), server.api_key)


def test_bench_table_counts_errors_by_type(cli: Runner) -> None:
    faults = [Fault.status(500), None, Fault.status(429, retry_after=0.01), None, None, None]
    with FakeServer(faults=faults) as server:
        done = cli("--base-url", server.url, "--api-key", server.api_key, "bench", "-m", "gpt-4.1",
                   "-m", "deepseek-v3.2", "-n", "3", "-c", "1", "--max-tokens", "5")
    assert done.returncode == 0, done.stderr
    header, _rule, *rows = done.stdout.splitlines()
    assert header.startswith("Model") and "TTFT p50 ms" in header and "ITL mean ms" in header
    assert rows[0].split()[:2] == ["gpt-4.1", "1/3"] and rows[1].split()[:2] == ["deepseek-v3.2", "3/3"]
    assert "gpt-4.1: success 33.3%; errors: InternalServerError x1, RateLimitError x1" in done.stdout


def test_bench_progress_is_the_batch_progress_line(cli: Runner) -> None:
    """One progress module: bench shows the batch layer's line (tokens, cost, ETA), named after the model."""
    assert importlib.util.find_spec("holysheep.cli._progress") is None
    faults = [Fault.status(500), None, None]
    with FakeServer(faults=faults) as server:
        done = cli("--base-url", server.url, "--api-key", server.api_key, "bench", "-m", "deepseek-v3.2",
                   "-n", "3", "-c", "1", "--max-tokens", "5", "--max-retries", "0")
    assert done.returncode == 0, done.stderr
    last = [line for line in done.stderr.splitlines() if line.startswith("bench deepseek-v3.2: ")][-1]
    assert last.startswith("bench deepseek-v3.2: 3/3 done, 1 failed, "), last
    tokens = re.search(r", ETA \d\d:\d\d, ([\d,]+) tokens, \$\d+\.\d{4}$", last)  # priced model: a cost
    assert tokens is not None and int(tokens.group(1).replace(",", "")) >= 2 * 5, last


def test_bench_unknown_model_stops_with_one_line(cli: Runner) -> None:
    with FakeServer(strict_models=True) as server:
        done = cli("--base-url", server.url, "--api-key", server.api_key, "bench", "-m", "no-such-model",
                   "-n", "4", "--no-progress")
    assert done.returncode == 1
    assert_one_line_error(done.stderr)
    assert "no-such-model" in done.stderr


def _wait_for(predicate: object, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_ctrl_c_prints_partial_bench_and_exits_130() -> None:
    with FakeServer(latency=0.05, stream_chunk_delay=0.05, reply="lorem") as server:
        proc = subprocess.Popen([*CLI, "--base-url", server.url, "--api-key", server.api_key, "bench", "-n", "200",
                                 "-c", "2", "--max-tokens", "8", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        _wait_for(lambda: sum(r.finished_at is not None for r in server.requests) >= 3)
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    data = json.loads(out)
    assert data["interrupted"] is True
    assert 1 <= data["summary"][0]["requests"] < 200 == data["config"]["requests"]
    assert len(data["samples"]) == data["summary"][0]["requests"]


def test_ctrl_c_during_chat_exits_130() -> None:
    with FakeServer(stream_chunk_delay=0.2, reply="lorem") as server:
        proc = subprocess.Popen([*CLI, "--base-url", server.url, "--api-key", server.api_key, "chat",
                                 "--max-tokens", "100", "hi"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        _wait_for(lambda: len(server.requests) >= 1)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130
    assert_one_line_error(err)
