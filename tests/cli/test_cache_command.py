"""``holysheep cache stats|clear PATH`` and ``holysheep batch --cache``: a real CLI process against FakeServer."""

from __future__ import annotations

import json
from pathlib import Path

from holysheep.cache import SQLiteCache
from holysheep.testing import FakeServer

from .conftest import Runner, assert_no_key, clean_env


def test_batch_cache_then_stats_and_clear(tmp_path: Path, cli: Runner) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"c{i}", "prompt": f"hello {i}"}) + "\n" for i in range(6)))
    cache = tmp_path / "c.db"
    with FakeServer() as server:
        env = clean_env(HOLYSHEEP_API_KEY=server.api_key)
        args = ["batch", str(src), "--base-url", server.url, "--model", "gpt-4.1", "--max-tokens", "5",
                "--no-progress", "--cache", str(cache), "--cache-ttl", "3600", "--json"]
        first = cli(*args, "-o", str(tmp_path / "a.jsonl"), env=env)
        assert first.returncode == 0, first.stderr
        second = cli(*args, "-o", str(tmp_path / "b.jsonl"), env=env)
        assert second.returncode == 0, second.stderr
        assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 6
        assert json.loads(second.stdout)["summary"]["cached"] == 6
        key = server.api_key
    stats = cli("cache", "stats", str(cache), "--json")
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert (data["entries"], data["hits"], data["by_model"]) == (6, 6, {"gpt-4.1": 6})
    assert data["saved_usd"] > 0 and data["stored_cost_usd"] == data["saved_usd"]
    text = cli("cache", "stats", str(cache))
    assert text.returncode == 0 and "6 response(s)" in text.stdout and "hits 6" in text.stdout
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("c.db"))
    assert_no_key(raw.decode("latin-1"), key)
    cleared = cli("cache", "clear", str(cache))
    assert cleared.returncode == 0 and "removed 6" in cleared.stderr
    assert SQLiteCache(cache).stats().entries == 0
    missing = cli("cache", "stats", str(tmp_path / "nope.db"))
    assert missing.returncode == 2 and "no cache file" in missing.stderr
