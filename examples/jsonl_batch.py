"""JSONL batch: run a file of requests, write one result line per input, and resume after a stop.

Offline (an in-process FakeServer) unless ``HOLYSHEEP_BASE_URL`` is set. The same job from the shell is
``holysheep batch requests.jsonl -o results.jsonl --model deepseek-v3.2 --concurrency 16 --resume``.

    python examples/jsonl_batch.py
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str | None, str | None]]:
    """(base_url, api_key): from the environment, or a local FakeServer that echoes the prompt."""
    if os.environ.get("HOLYSHEEP_BASE_URL"):
        yield None, None
        return
    from holysheep.testing import FakeServer

    with FakeServer(latency=0.01) as server:
        yield server.url, server.api_key


def write_input(path: Path) -> None:
    """Both accepted line formats, and one malformed line (reported with its line number)."""
    lines = [
        # OpenAI Batch API format
        {"custom_id": "q1", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": "What is 2 + 2?"}]}},
        # create() parameters directly
        {"custom_id": "q2", "messages": [{"role": "user", "content": "Capital of France?"}], "max_tokens": 8},
        *({"custom_id": f"q{i}", "messages": [{"role": "user", "content": f"Question {i}"}]} for i in range(3, 21)),
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n{not json\n"
    path.write_text(text, encoding="utf-8")


def main() -> None:
    with endpoint() as (base_url, api_key), tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "requests.jsonl", Path(tmp) / "results.jsonl"
        write_input(src)
        # --8<-- [start:main]
        from holysheep import Client
        from holysheep.batch import run_jsonl

        with Client(base_url=base_url, api_key=api_key) as client:
            report = run_jsonl(client, src, dst, model="deepseek-v3.2", concurrency=8)
            print(f"{report.lines} lines: {report.succeeded} ok, {report.failed} failed, bad lines {report.bad_lines}")

            # Simulate a crash that lost the last five results, then resume: only those five run again.
            kept = dst.read_text(encoding="utf-8").splitlines()[:-5]
            dst.write_text("\n".join(kept) + "\n", encoding="utf-8")
            again = run_jsonl(client, src, dst, model="deepseek-v3.2", resume=True)
            print(f"resume: skipped {again.skipped} done ids, ran {again.succeeded + again.failed}")

        for line in dst.read_text(encoding="utf-8").splitlines()[:3]:
            record = json.loads(line)  # {"custom_id", "response": {...}} or {"custom_id", "error": {...}}
            outcome = record["response"]["choices"][0]["message"]["content"] if "response" in record \
                else record["error"]["message"]
            print(record["custom_id"], "->", outcome)
        ids = [json.loads(line)["custom_id"] for line in dst.read_text(encoding="utf-8").splitlines()]
        assert len(ids) == len(set(ids)) == 21  # every input exactly once, the bad line included
        # --8<-- [end:main]


if __name__ == "__main__":
    main()
