"""build_processor on a local 2-CPU Ray cluster against FakeServer (marked `ray`: `pytest -m ray`)."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from holysheep import AuthenticationError
from holysheep.testing import FakeServer, Fault
from holysheep.testing._replies import new_api_key

ray = pytest.importorskip("ray")

from holysheep.integrations.ray import OUTPUT_COLUMNS, build_processor  # noqa: E402

# Ray 2.60's own DataContext() sets its deprecated fields (`use_push_based_shuffle`, `use_polars`) while
# being constructed: their warnings, raised inside ray.data.context on every first get_current(); nothing
# here sets them. Only DeprecationWarnings raised in that one module are ignored. Ray's pandas blocks call
# DataFrame.reset_index(inplace=True), which pandas 3.1 deprecates (ray/data/_internal/pandas_block.py).
pytestmark = [pytest.mark.ray, pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context"),
              pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated")]

NEW_COLUMNS = [name for name, _ in OUTPUT_COLUMNS]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


def _chat_requests(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def _rows(n: int, *, ids: bool = True) -> list[dict[str, Any]]:
    return [{"prompt": f"question {i}", "topic": f"t{i % 3}", **({"custom_id": f"row-{i}"} if ids else {})}
            for i in range(n)]


def test_eight_replicas_one_row_per_input_with_the_columns_and_no_key_anywhere(cluster: None) -> None:
    with FakeServer(latency=0.01) as server:
        items = [*_rows(79), {"prompt": None, "topic": "bad", "custom_id": "row-bad"}]
        processor = build_processor(model="deepseek-v3.2", replicas=8, concurrency_per_replica=4,
                                    api_key=server.api_key, base_url=server.url, batch_size=10, max_tokens=16)
        out = processor(ray.data.from_items(items))
        rows = out.take_all()
        schema_names = list(out.schema().names)
    assert schema_names == ["prompt", "topic", "custom_id", *NEW_COLUMNS]
    assert len(rows) == 80
    assert sorted(r["custom_id"] for r in rows) == sorted(i["custom_id"] for i in items)
    by_id = {r["custom_id"]: r for r in rows}
    good = by_id["row-7"]
    assert good["response"] == "question 7" and good["topic"] == "t1"  # the echo reply; input columns kept
    assert good["finish_reason"] == "stop" and good["error"] is None and good["error_type"] is None
    assert good["prompt_tokens"] > 0 and good["completion_tokens"] > 0 and good["cost_usd"] > 0
    assert good["attempts"] == 1 and good["latency_s"] > 0 and good["served_by"] == "primary"
    bad = by_id["row-bad"]
    assert bad["response"] is None and bad["error_type"] == "InvalidRequestError" and bad["attempts"] == 0
    assert "\n" not in bad["error"]
    chats = _chat_requests(server)
    assert len(chats) == 79  # the bad row was never sent
    assert all(r.body["max_tokens"] == 16 and r.body["model"] == "deepseek-v3.2" for r in chats)
    # the key: never in the output, the reprs, or Ray's logs
    key = server.api_key
    assert key not in repr(rows) and key not in repr(processor) and key not in repr(processor.config)
    logs = Path(ray._private.worker.global_worker.node.get_logs_dir_path())
    leaked = [p.name for p in logs.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaked == []


def test_twenty_percent_transient_faults_every_row_succeeds(cluster: None) -> None:
    mix = [Fault.status(500), Fault.status(503), Fault.reset(), Fault.status(429, retry_after=0.05),
           Fault.malformed_json()]
    with FakeServer(fault_rate=0.2, fault_mix=mix, seed=7) as server:
        processor = build_processor(model="deepseek-v3.2", replicas=4, concurrency_per_replica=8,
                                    api_key=server.api_key, base_url=server.url, batch_size=25,
                                    initial_retry_delay=0.01, max_retry_delay=0.1, retry_budget=None)
        rows = processor(ray.data.from_items(_rows(200))).take_all()
        faulted = sum(1 for r in _chat_requests(server) if r.fault is not None)
    assert len(rows) == 200
    assert [r for r in rows if r["error"] is not None] == []
    assert faulted >= 20  # the faults really happened
    assert sum(r["attempts"] for r in rows) == len(_chat_requests(server))


def test_four_replicas_share_one_rpm_limit_the_server_enforces(cluster: None) -> None:
    rpm, n = 2400, 400  # 40 requests/s
    with FakeServer(rpm_limit=rpm) as server:
        processor = build_processor(model="deepseek-v3.2", replicas=4, concurrency_per_replica=16, rpm=rpm,
                                    api_key=server.api_key, base_url=server.url, batch_size=25)
        rows = processor(ray.data.from_items(_rows(n))).take_all()
        chats = _chat_requests(server)
    limited = sum(1 for r in chats if r.status == 429)
    assert len(rows) == n and all(r["error"] is None for r in rows)
    assert limited <= 0.02 * len(chats), f"{limited} of {len(chats)} requests got 429"
    span = max(r.started_at for r in chats) - min(r.started_at for r in chats)
    assert span >= (n - 40) / 40 * 0.95  # the limit held: no faster than rpm allows (less the first bursts)


def test_without_rpm_the_cluster_learns_the_limit_the_server_announces(cluster: None) -> None:
    server_rpm, n = 1200, 160  # 20 requests/s; only the x-ratelimit-* headers tell the processor
    with FakeServer(rpm_limit=server_rpm) as server:
        processor = build_processor(model="deepseek-v3.2", replicas=4, concurrency_per_replica=16,
                                    api_key=server.api_key, base_url=server.url, batch_size=20)
        rows = processor(ray.data.from_items(_rows(n))).take_all()
        chats = _chat_requests(server)
        learned = ray.get(processor.limiter.limits.remote())
    limited = sum(1 for r in chats if r.status == 429)
    assert len(rows) == n and all(r["error"] is None for r in rows)
    assert learned == (server_rpm * 0.98, None)  # every replica follows one learned limit
    assert limited <= 0.05 * len(chats), f"{limited} of {len(chats)} requests got 429"
    span = max(r.started_at for r in chats) - min(r.started_at for r in chats)
    assert span >= (n - 20) / 20 * 0.95


def test_a_rejected_key_fails_fast_without_every_replica_hammering(cluster: None) -> None:
    with FakeServer() as server:
        processor = build_processor(model="deepseek-v3.2", replicas=4, concurrency_per_replica=16,
                                    api_key=new_api_key(), base_url=server.url, batch_size=25)
        started = time.monotonic()
        with pytest.raises(AuthenticationError) as info:
            processor(ray.data.from_items(_rows(200))).take_all()
        elapsed = time.monotonic() - started
        chats = _chat_requests(server)
    assert info.value.status_code == 401
    assert len(chats) == 1 and chats[0].status == 401  # one canary, not 4 x 16 requests
    assert elapsed < 120  # actor start-up on a loaded 2-CPU machine dominates


@pytest.mark.parametrize("ids", [True, False], ids=["custom_id", "request-hash"])
def test_skip_done_sends_only_the_missing_rows(cluster: None, tmp_path: Path, ids: bool) -> None:
    items = _rows(40, ids=ids)
    with FakeServer() as server:
        first = build_processor(model="deepseek-v3.2", replicas=2, concurrency_per_replica=8,
                                api_key=server.api_key, base_url=server.url, batch_size=10)
        first(ray.data.from_items(items[:25])).write_parquet(str(tmp_path / "done"))  # a run killed part-way
        server.reset()
        again = build_processor(model="deepseek-v3.2", replicas=2, concurrency_per_replica=8,
                                api_key=server.api_key, base_url=server.url, batch_size=10,
                                skip_done=tmp_path / "done")
        rows = again(ray.data.from_items(items)).take_all()
        sent = sorted(r.body["messages"][0]["content"] for r in _chat_requests(server))
    expected = sorted(i["prompt"] for i in items[25:])
    assert sent == expected
    assert sorted(r["prompt"] for r in rows) == expected


def test_settings_come_from_the_environment(cluster: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer() as server:
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        monkeypatch.setenv("HOLYSHEEP_BASE_URL", server.url)
        out = build_processor(model="deepseek-v3.2", replicas=1, concurrency_per_replica=4)(
            ray.data.from_items(_rows(5)))
        gc.collect()  # the processor object is gone before the lazy dataset runs: its limiter must not be
        rows = out.take_all()
    assert [r["error"] for r in rows] == [None] * 5
    assert os.environ["HOLYSHEEP_API_KEY"] not in repr(out)


def test_cli_runs_a_jsonl_job_on_ray_and_resumes(cluster: None, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from holysheep.cli._batch import run_batch_command
    from holysheep.cli._batch_parser import build_parser

    source = tmp_path / "in.jsonl"
    lines = [{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
              "body": {"messages": [{"role": "user", "content": "alpha"}], "max_tokens": 5}},
             {"custom_id": "b", "prompt": "beta"},
             {"custom_id": "c", "messages": [{"role": "user", "content": "gamma"}]}]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    with FakeServer() as server:
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        argv = [str(source), "-o", str(out), "--ray", "--replicas", "2", "--model", "deepseek-v3.2"]
        assert run_batch_command(build_parser().parse_args([*argv, "--base-url", server.url])) == 0
        first = len(_chat_requests(server))
        assert run_batch_command(build_parser().parse_args([*argv, "--base-url", server.url])) == 2  # no --resume
        assert run_batch_command(build_parser().parse_args([*argv, "--base-url", server.url, "--resume"])) == 0
        total = len(_chat_requests(server))
    rows = [json.loads(line) for path in sorted(out.glob("*.jsonl")) for line in path.read_text().splitlines()]
    assert (first, total) == (3, 3)  # the resumed run sent nothing
    assert sorted((r["custom_id"], r["response"]) for r in rows) == [("a", "alpha"), ("b", "beta"), ("c", "gamma")]
    assert all(r["error"] is None for r in rows)
