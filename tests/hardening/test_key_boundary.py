"""Issue 45, items 6-8: keys at the last boundary. A hostile server on 127.0.0.1 echoes whatever credential it
received (``Authorization``, ``Api-Key``, ``X-Api-Key``) into every string of its replies, PHP-style (``/`` as
``\\/``), into its response headers, and cut across two SSE deltas (content, reasoning, tool-call arguments). With
40 clients and 40 ``with_options`` tenants alive, and keys given only as headers (default or per call), no piece
of any key reaches any sink docs/security.md lists: returned values, stream assembled values (final completion,
``stream.text``, the helper's events and snapshots, the hooks' ``StreamEndEvent``), exceptions (``e.code``,
``e.request.headers``, ``e.response.content``, ``e.response.headers``), raw responses' headers, spans, metric
attributes, log records and cache rows."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest

from holysheep import APIStatusError, AsyncClient, Client
from holysheep._egress import live_keys, mask_key
from holysheep.hooks import Hooks

from ..observability.otel_util import instrumented
from .hostile import HostileServer, Req, fixed, head

MESSAGES = [{"role": "user", "content": "Hi"}]
TENANTS = 40


def key_of(name: str, i: int) -> str:
    """A self-hosted key with a ``/`` (PHP's JSON writes it ``\\/``); 31 characters."""
    return f"sk-{name}{i:02d}/Secret-0123456789ab"[:31]


def leaks(text: str, key: str) -> bool:
    """Whether ``text`` holds 12 or more consecutive characters of ``key`` (masking shows only the last 4)."""
    return any(key[i:i + 12] in text for i in range(len(key) - 11))


def _credential(req: Req) -> str:
    for name in ("x-api-key", "api-key", "authorization"):
        value = req.headers.get(name, "")
        if len(value) > 8:
            return value.removeprefix("Bearer ")
    return "none"


def _php(obj: object) -> bytes:
    return json.dumps(obj).replace("/", "\\/").encode()  # PHP's json_encode escapes every slash


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _split_stream(key: str) -> bytes:
    """The key cut across two deltas of content, of reasoning and of a tool call's arguments."""
    cut = 12
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"q": "'}}
    return b"".join([
        _chunk({"role": "assistant", "reasoning_content": "think " + key[:cut]}),
        _chunk({"reasoning_content": key[cut:] + " done"}),
        _chunk({"content": "echo " + key[:cut]}),
        _chunk({"content": key[cut:] + " end"}),
        _chunk({"tool_calls": [call]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": key[:cut]}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": key[cut:] + '"}'}}]}, "tool_calls"),
        b"data: [DONE]\n\n"])


def echo_server() -> HostileServer:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        key = _credential(req)
        hdrs = {"x_echo": key, "x_request_id": f"req_{key}", "www_authenticate": f"Bearer {key}"}
        model = json.loads(req.body).get("model")
        if model == "err":
            w.write(fixed(400, _php({"error": {"message": f"bad key {key}", "type": "auth", "code": key}}), **hdrs))
        elif model == "split":
            w.write(head(200, "text/event-stream", **hdrs) + _split_stream(key))
            w.close()
        else:
            reply = {"id": f"chatcmpl-{key}", "object": "chat.completion", "created": 1, "model": key,
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": f"you are {key}"}}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
            w.write(fixed(200, _php(reply), **hdrs))

    return HostileServer(scenario)


PIECE = "piece:"  # what arrived so far: a delta, a chunk, a snapshot in progress may hold the start of a key


def _event_text(event: Any) -> str:
    """A helper event: a ``*.done`` event is assembled; a delta event and a chunk event (delta, chunk, snapshot so
    far) are pieces: once the key is whole in a snapshot it is masked, but its first half came before the rest."""
    if event.type.endswith(".done"):
        return repr(vars(event))
    return PIECE + (event.chunk.model_dump_json() + event.snapshot.model_dump_json() if event.type == "chunk"
                    else repr(vars(event)))


def _check(text: str, key: str) -> None:
    """A piece (``PIECE`` and after) may hold part of a key, never all of it; anything else holds no 12 characters
    of it in a row."""
    assembled, _, piece = text.partition(PIECE)
    assert not leaks(assembled, key), (key, assembled[:3000])
    assert key not in piece and key.replace("/", "\\/") not in piece, (key, piece[:3000])


class EndTexts(Hooks):
    """Keeps what the hooks hear of each stream's end."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_stream_end(self, event: Any) -> None:
        self.seen += [event.text, repr(event.tool_calls), repr(event.response_id), repr(event.response_model)]


def _error_texts(err: BaseException) -> list[str]:
    out = ["".join(traceback.format_exception(err)), str(err), repr(err), repr(vars(err))]
    if isinstance(err, APIStatusError):
        out += [repr(err.code), repr(err.body), repr(err.request.headers), repr(err.response.headers),
                err.response.content.decode("utf-8", "replace"), err.response.text]
    return out


def _telemetry(t: Any) -> list[str]:
    out: list[str] = []
    for span in t.spans():
        out += [span.name, repr(dict(span.attributes or {})), repr(span.status.description)]
        out += [f"{e.name} {dict(e.attributes or {})}" for e in span.events]
    data = t.reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out += [repr(dict(p.attributes or {})) for p in metric.data.data_points]
    return out


def _sync_sinks(client: Client, hooks: EndTexts, **call: Any) -> list[str]:
    """Every output of one tenant's calls: a completion, a split stream (three ways), an error, a raw response."""
    chat = client.chat.completions
    out = [chat.create(model="ok", messages=MESSAGES, **call).model_dump_json()]
    with chat.create(model="split", messages=MESSAGES, stream=True, **call) as stream:
        out += [PIECE + c.model_dump_json() for c in stream]
        out += [stream.text, stream.get_final_completion().model_dump_json()]
    with chat.stream(model="split", messages=MESSAGES, **call) as helper:
        out += [_event_text(event) for event in helper]
        out += [helper.get_final_completion().model_dump_json(), helper.current_completion_snapshot.model_dump_json()]
    raw = chat.with_raw_response.create(model="ok", messages=MESSAGES, **call)
    out += [repr(raw.headers), repr(raw.http_request.headers), raw.request_id or ""]
    with pytest.raises(APIStatusError) as info:
        chat.create(model="err", messages=MESSAGES, **call)
    out += _error_texts(info.value)
    assert info.value.code is not None and info.value.code.startswith("…")  # masked, not dropped
    return out + hooks.seen


@pytest.mark.parametrize("kind", ["sync", "aiohttp"])
def test_forty_tenants_split_keys_and_header_keys_reach_no_sink(kind: str, caplog: pytest.LogCaptureFixture,
                                                                 tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG, logger="holysheep")
    hooks = EndTexts()
    with echo_server() as server, instrumented(capture_message_content=True) as t:
        first = Client(base_url=server.url, api_key=key_of("client", 0), max_retries=0, hooks=[hooks],
                       cache=str(tmp_path / "cache.db"))
        clients = [first] + [Client(base_url=server.url, api_key=key_of("client", i), max_retries=0)
                             for i in range(1, TENANTS)]
        base = Client(base_url=server.url, api_key=key_of("base", 0), max_retries=0, hooks=[hooks])
        tenants = [base.with_options(api_key=key_of("tenant", i)) for i in range(TENANTS)]
        header_default = Client(base_url=server.url, api_key="EMPTY", max_retries=0, hooks=[hooks],
                                default_headers={"Api-Key": key_of("apikey", 0)})
        header_x = Client(base_url=server.url, api_key="EMPTY", max_retries=0, hooks=[hooks],
                          default_headers={"X-Api-Key": key_of("xapikey", 0)})
        assert live_keys() >= 2 * TENANTS + 3
        per_call = key_of("percall", 0)
        runs: list[tuple[str, Any, dict[str, Any]]] = [
            (key_of("client", 0), first, {}), (key_of("tenant", 0), tenants[0], {}),
            (key_of("apikey", 0), header_default, {}), (key_of("xapikey", 0), header_x, {}),
            (per_call, tenants[1], {"extra_headers": {"Authorization": f"Bearer {per_call}"}})]
        outputs: dict[str, list[str]] = {}
        for key, client, call in runs:
            hooks.seen = []
            if kind == "sync":
                outputs[key] = _sync_sinks(client, hooks, **call)
            else:
                outputs[key] = asyncio.run(_async_sinks(client, hooks, **call))
        rows = [row.decode() for row in _cache_rows(tmp_path / "cache.db")]
        telemetry = _telemetry(t)
        for c in (*clients, base, header_default, header_x):
            c.close()
    assert len(server.requests) == len(runs) * 5
    assert {_credential(r) for r in server.requests} == {key for key, _, _ in runs}  # each key went out
    logs = [r.getMessage() for r in caplog.records]
    assert rows and telemetry and logs
    for key, texts in outputs.items():
        assert any(mask_key(key) in text or mask_key(key).replace("…", "...") in text for text in texts)
        for text in [*texts, *rows, *telemetry, *logs]:
            _check(text, key)


async def _async_sinks(client: Client, hooks: EndTexts, **call: Any) -> list[str]:
    """`_sync_sinks` on an AsyncClient (aiohttp) with the same options as ``client``."""
    kw = {"base_url": str(client.base_url), "api_key": client.api_key, "max_retries": 0, "hooks": [hooks],
          "default_headers": dict(client.config.default_headers), "http_backend": "aiohttp"}
    async with AsyncClient(**kw) as aclient:
        chat = aclient.chat.completions
        out = [(await chat.create(model="ok", messages=MESSAGES, **call)).model_dump_json()]
        async with await chat.create(model="split", messages=MESSAGES, stream=True, **call) as stream:
            out += [PIECE + c.model_dump_json() async for c in stream]
            out += [stream.text, (await stream.get_final_completion()).model_dump_json()]
        async with chat.stream(model="split", messages=MESSAGES, **call) as helper:
            out += [_event_text(event) async for event in helper]
            out += [(await helper.get_final_completion()).model_dump_json()]
        raw = await chat.with_raw_response.create(model="ok", messages=MESSAGES, **call)
        out += [repr(raw.headers), repr(raw.http_request.headers)]
        with pytest.raises(APIStatusError) as info:
            await chat.create(model="err", messages=MESSAGES, **call)
        out += _error_texts(info.value)
    return out + hooks.seen


def _cache_rows(path: Path) -> list[bytes]:
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as db:
        return [bytes(r[0]) if not isinstance(r[0], str) else r[0].encode()
                for r in db.execute("select * from sqlite_master where type='table'")] + [
            b"".join(str(v).encode() for v in row) for (name,) in db.execute(
                "select name from sqlite_master where type='table'") for row in db.execute(f"select * from {name}")]


def test_a_key_is_remembered_while_any_holder_lives_and_then_forgotten() -> None:
    gc.collect()  # the keys of earlier tests' clients go first
    before = live_keys()
    key = key_of("lifetime", 0)
    client = Client(base_url="http://127.0.0.1:9/v1", api_key=key)
    copies = [client.with_options(max_retries=i) for i in range(3)]
    other = client.with_options(api_key=key_of("lifetime", 1))
    assert live_keys() == before + 2
    client.close()
    del client
    gc.collect()
    from holysheep._egress import scrub

    assert scrub(f"x {key} y") == f"x {mask_key(key)} y"  # the copies still hold it
    del copies, other
    gc.collect()
    assert live_keys() == before  # no fixed-size memory, and no unbounded one either


def test_a_key_spelled_with_json_escapes_outside_valid_json_is_masked() -> None:
    from holysheep._egress import remember, scrub_body

    key = key_of("escaped", 0)
    remember(key)
    spelled = key.replace("/", "\\/")
    cut_off = f'{{"error": {{"message": "bad {spelled}'.encode()  # not valid JSON: cut off
    unicode = f'<p>bad {key[:3]}\\u{ord(key[3]):04x}{key[4:]}</p>'.encode()
    for body in (cut_off, unicode):
        clean = scrub_body(body).decode()
        assert not leaks(clean, key) and not leaks(clean.replace("\\/", "/"), key), clean


def test_one_search_finds_any_of_many_keys_and_nothing_else() -> None:
    import random
    import re

    from holysheep._egress import _trie

    rng = random.Random(45)
    alphabet = "ab/-_\\\"é"
    words = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(300)})
    pattern = re.compile(_trie(words))
    for word in words:
        assert pattern.fullmatch(word), word
        assert pattern.search(f"x{word}y").group(0) in words  # type: ignore[union-attr]
    others = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(3000)} - set(words)
    assert not any(pattern.fullmatch(other) for other in others)
    assert re.compile(_trie(words).encode()).fullmatch(words[0].encode())  # the bytes form too


def test_keys_that_come_and_go_with_calls_are_dropped_in_batches() -> None:
    from holysheep import _egress

    class Call:  # stands for a call whose extra_headers carry a key
        pass

    gc.collect()
    live = live_keys()
    for i in range(300):
        call = Call()
        _egress.remember(key_of("churn", i % 100) + f"{i:03d}", call)
        del call
    assert live_keys() == live  # every owner is gone
    idle = len(_egress._secrets) - live
    assert 0 < idle <= max(64, live)  # dropped in batches: bounded, never all 300
    again = key_of("again", 0)
    for _ in range(3):  # a key that comes back while it waits is masked, without a rebuild
        call = Call()
        _egress.remember(again, call)
        assert _egress.scrub(again) == mask_key(again)
        del call


def test_an_error_keeps_no_key_spelled_with_escapes_in_a_body_kept_as_text() -> None:
    from holysheep import APIResponseValidationError
    from holysheep._egress import remember

    key = key_of("textbody", 0)
    remember(key)
    spelled = "".join(f"\\u{ord(c):04x}" for c in key)
    err = APIResponseValidationError("bad", status_code=200, body=f'{{"cut": "{spelled}')
    assert not leaks(err.body.encode().decode("unicode_escape"), key) and mask_key(key) in err.body


@pytest.mark.parametrize("output_format", ["holysheep", "openai"])
def test_jsonl_lines_and_batch_results_of_tenant_zero_hold_no_key(tmp_path: Path, output_format: str) -> None:
    from holysheep.batch import run_jsonl

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = (json.dumps({"custom_id": m, "model": m, "messages": MESSAGES}) + "\n" for m in ("ok", "err"))
    src.write_text("".join(lines))
    key = key_of("jsonl", 0)
    with echo_server() as server:
        base = Client(base_url=server.url, api_key=key_of("jbase", 0), max_retries=0)
        tenants = [base.with_options(api_key=key) for key in [key, *(key_of("jsonl", i) for i in range(1, TENANTS))]]
        others = [Client(base_url=server.url, api_key=key_of("jclient", i)) for i in range(TENANTS)]
        report = run_jsonl(tenants[0], src, out, output_format=output_format)
        results = tenants[0].chat.completions.batch([{"model": "ok", "messages": MESSAGES},
                                                     {"model": "err", "messages": MESSAGES}])
        texts = [out.read_text(), repr(list(results)), *(repr(r.error) for r in results if r.error is not None)]
        for c in (base, *others):
            c.close()
    assert (report.succeeded, report.failed) == (1, 1)
    assert {_credential(r) for r in server.requests} == {key}
    assert mask_key(key) in texts[0]
    for text in texts:
        assert not leaks(text, key), text[:3000]
