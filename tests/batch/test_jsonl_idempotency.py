"""Idempotency keys are stable across runs: a JSONL line's key derives from the output file, its custom_id and
its request, so `--resume` re-sends an interrupted or failed line with the key its earlier attempts carried."""

from __future__ import annotations

import json
from pathlib import Path

from holysheep.batch import run_jsonl
from holysheep.testing import FakeServer

from .conftest import MODEL, chat_requests, sync_client


def _keys(server: FakeServer) -> list[tuple[str, str]]:
    """(the request's prompt, its Idempotency-Key) per request, in the order the server got them."""
    return [(r.body["messages"][0]["content"], {k.lower(): v for k, v in r.headers.items()}["idempotency-key"])
            for r in chat_requests(server)]


def _write(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"custom_id": f"c{i}", "messages": [{"role": "user", "content": t}]}) + "\n"
                            for i, t in enumerate(texts)))
    return path


def test_a_resumed_line_reuses_the_key_of_its_earlier_attempts(tmp_path: Path) -> None:
    src, dst = _write(tmp_path / "in.jsonl", ["a", "b", "c"]), tmp_path / "out.jsonl"
    with FakeServer(faults=[None, "500"]) as server, sync_client(server) as client:
        first = run_jsonl(client, src, dst, model=MODEL, concurrency=1, max_retries=0)
        assert (first.succeeded, first.failed) == (2, 1)
        run1 = _keys(server)
        assert [text for text, _ in run1] == ["a", "b", "c"] and len({k for _, k in run1}) == 3  # a key per line
        assert run_jsonl(client, src, dst, model=MODEL, resume=True).succeeded == 1
        assert _keys(server)[3] == ("b", run1[1][1])  # the resumed line: the key of its failed attempt
        _write(src, ["a", "B!", "c"])  # a changed line is another request: another key
        run_jsonl(client, src, dst, model=MODEL, resume=True, rerun_changed=True)
        assert _keys(server)[4][0] == "B!" and _keys(server)[4][1] != run1[1][1]
        other = tmp_path / "other.jsonl"  # another output is another run's input: other keys
        run_jsonl(client, _write(src, ["a", "b", "c"]), other, model=MODEL, concurrency=1)
        assert len(_keys(server)) == 8 and {k for _, k in _keys(server)[5:]}.isdisjoint(k for _, k in run1)


def test_the_key_is_stable_across_processes(tmp_path: Path) -> None:
    from holysheep._engine.item_plans import stable_key

    key = stable_key("jsonl:/data/out.jsonl", "c1", {"model": MODEL, "messages": [{"role": "user", "content": "b"}]})
    assert key == stable_key("jsonl:/data/out.jsonl", "c1", {"messages": [{"content": "b", "role": "user"}],
                                                              "model": MODEL})  # key order does not matter
    assert key.startswith("hs-") and len(key) == 43
    assert key != stable_key("jsonl:/data/out.jsonl", "c2", {"model": MODEL, "messages": [{"role": "user",
                                                                                           "content": "b"}]})
