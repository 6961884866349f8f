"""Issue 35, item 1: one egress scrubber. An "echo-everything" server puts the client's key (and another
``hs_`` key) into every string field of every body it returns (completion, chunk, error, mid-stream error,
embeddings, models, quota, tool calls), spelled out with ``\\u`` escapes in one field, and into every response
header. The key then appears in no output: returned values, exceptions (every attribute), spans, span events
and metric attributes, log records at DEBUG, what is sent back to the model (tool results), JSONL lines in
both formats, the CLI's stdout and stderr; on the sync client and both async transports."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest

from holysheep import APIError, APIStatusError, AsyncClient, Client
from holysheep._egress import mask_key
from holysheep.batch import arun_jsonl, run_jsonl

from ..observability.otel_util import Telemetry, instrumented
from .hostile import HostileServer, Req, fixed, head

HS_KEY = "hs_Zq7EchoedClientKey0123456789AB"
SELF_HOSTED_KEY = "sk-selfhosted-Secret-0123456789"  # not hs_-shaped: only the client's own key tells
OTHER = "hs_SomeOtherAccountsKey987654321"  # any hs_-shaped secret is masked too
MESSAGES = [{"role": "user", "content": "Hi"}]


def _escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def _json(obj: Any, key: str) -> bytes:
    """``obj`` as JSON, with the placeholder ``@ESC@`` replaced by the key spelled in ``\\u`` escapes."""
    return json.dumps(obj).replace('"@ESC@"', '"' + _escaped(key) + '"').encode()


def _headers(key: str) -> dict[str, str]:
    return {"x_request_id": f"req_{key}", "x_echo": key, "openai_model": key, "set_cookie": f"s={key}",
            "server": f"echo/{key}"}


def _completion(key: str, tool_call: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": f"echo {key} and {OTHER}", "refusal": key,
                               "reasoning_content": f"chain-{key}"}
    if tool_call:
        message["tool_calls"] = [{"id": f"call_{key}", "type": "function",
                                  "function": {"name": "lookup", "arguments": json.dumps({"q": key})}}]
    return {"id": f"chatcmpl-{key}", "object": "chat.completion", "created": 1, "model": key,
            "system_fingerprint": "@ESC@", "x_echo": {key: [key, OTHER]},
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_call else key}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


def _chunks(key: str, error_after_first: bool, split: bool = False) -> bytes:
    """A stream that echoes the key; with ``split``, the key is cut across two deltas."""
    first = {"id": f"chatcmpl-{key}", "object": "chat.completion.chunk", "created": 1, "model": key,
             "system_fingerprint": "@ESC@", "choices": [{"index": 0, "delta": {
                 "role": "assistant", "content": f"echo {key[:10] if split else key}"}, "finish_reason": None}]}
    last = {**first, "choices": [{"index": 0, "delta": {"content": f"{key[10:]} " if split else OTHER},
                                  "finish_reason": key}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    error = {"error": {"message": f"boom {key}", "type": key, "code": key, "param": OTHER}}
    events = [first, error] if error_after_first else [first, last]
    return b"".join(b"data: " + _json(e, key) + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def echo_server(key: str) -> HostileServer:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        hdrs = _headers(key)
        body = json.loads(req.body) if req.body else {}
        model = body.get("model")
        error = {"error": {"message": f"bad {key}", "type": key, "code": key, "param": key, "x_echo": OTHER}}
        if req.path.endswith("/models"):
            reply = {"object": "list", "data": [{"id": key, "object": "model", "created": 0, "owned_by": OTHER}]}
        elif req.path.endswith("/quota"):
            reply = {"object": "quota", "remaining": 1.0, "unit": key, "note": "@ESC@"}
        elif req.path.endswith("/embeddings"):
            reply = {"object": "list", "model": key, "x_echo": OTHER,
                     "data": [{"object": "embedding", "embedding": [0.5], "index": 0}]}
        elif model == "err":
            w.write(fixed(400, _json(error, key), **hdrs))
            return
        elif body.get("stream"):
            w.write(head(200, "text/event-stream", **hdrs) + _chunks(key, model == "err-mid", model == "split"))
            w.close()
            return
        else:
            tool = model == "tool" and body["messages"][-1]["role"] != "tool"
            reply = _completion(key, tool_call=tool)
        w.write(fixed(200, _json(reply, key), **hdrs))

    return HostileServer(scenario)


def _texts_of_error(err: BaseException) -> list[str]:
    out = ["".join(traceback.format_exception(err))]
    for e in (err, err.__cause__, err.__context__):
        if e is not None:
            out += [str(e), repr(e), repr(vars(e)), repr(e.args)]
            out += [repr(getattr(e, name, None)) for name in ("type", "code", "param", "body", "message")]
    return out


def _telemetry_texts(t: Telemetry) -> list[str]:
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


def _log_texts(caplog: pytest.LogCaptureFixture) -> list[str]:
    formatter = logging.Formatter("%(message)s")
    return [formatter.format(r) for r in caplog.records]


def assert_no_key(texts: list[str], key: str) -> None:
    assert texts
    for text in texts:
        assert key not in text and OTHER not in text, text[:2000]


def lookup(q: str) -> str:
    """Echoes what the model asked for, and a key of its own: a tool's return value reaches the model."""
    return f"found {q} and {OTHER}"


def _sync_calls(client: Client) -> tuple[list[str], list[BaseException]]:
    values: list[str] = []
    errors: list[BaseException] = []
    chat = client.chat.completions
    values.append(chat.create(model="ok", messages=MESSAGES).model_dump_json())
    with chat.create(model="ok", messages=MESSAGES, stream=True) as stream:
        values += [c.model_dump_json() for c in stream]
    for model, stream_ in (("err", False), ("err-mid", True)):
        try:
            result = chat.create(model=model, messages=MESSAGES, stream=stream_)
            if stream_:
                list(result)
        except APIError as exc:
            errors.append(exc)
    values.append(client.embeddings.create(model="e", input="x").model_dump_json())
    values += [m.model_dump_json() for m in client.models.list()]
    values.append(client.quota.retrieve().model_dump_json())
    run = chat.run_tools(model="tool", messages=MESSAGES, tools=[lookup])
    values += [json.dumps(run.messages, default=str), *(r.result for r in run.tool_calls)]
    results = chat.batch([{"model": "ok", "messages": MESSAGES}, {"model": "err", "messages": MESSAGES}])
    values += [repr(list(results))]
    errors += [r.error for r in results if r.error is not None]
    return values, errors


async def _async_calls(client: AsyncClient) -> tuple[list[str], list[BaseException]]:
    values: list[str] = []
    errors: list[BaseException] = []
    chat = client.chat.completions
    values.append((await chat.create(model="ok", messages=MESSAGES)).model_dump_json())
    async with await chat.create(model="ok", messages=MESSAGES, stream=True) as stream:
        values += [c.model_dump_json() async for c in stream]
    for model, stream_ in (("err", False), ("err-mid", True)):
        try:
            result = await chat.create(model=model, messages=MESSAGES, stream=stream_)
            if stream_:
                _ = [c async for c in result]
        except APIError as exc:
            errors.append(exc)
    values.append((await client.embeddings.create(model="e", input="x")).model_dump_json())
    values += [m.model_dump_json() for m in await client.models.list()]
    values.append((await client.quota.retrieve()).model_dump_json())
    run = await chat.run_tools(model="tool", messages=MESSAGES, tools=[lookup])
    values += [json.dumps(run.messages, default=str), *(r.result for r in run.tool_calls)]
    results = await chat.batch([{"model": "ok", "messages": MESSAGES}, {"model": "err", "messages": MESSAGES}])
    values += [repr(list(results))]
    errors += [r.error for r in results if r.error is not None]
    return values, errors


@pytest.mark.parametrize("key", [HS_KEY, SELF_HOSTED_KEY])
@pytest.mark.parametrize("kind", ["sync", "httpx", "aiohttp"])
def test_the_key_an_echoing_server_sends_back_reaches_no_output(kind: str, key: str,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="holysheep")
    with echo_server(key) as server, instrumented(capture_message_content=True) as t:
        if kind == "sync":
            with Client(base_url=server.url, api_key=key, max_retries=0) as client:
                values, errors = _sync_calls(client)
        else:
            async def go() -> tuple[list[str], list[BaseException]]:
                async with AsyncClient(base_url=server.url, api_key=key, max_retries=0, http_backend=kind) as client:
                    return await _async_calls(client)

            values, errors = asyncio.run(go())
        sent_back = [r.body.decode() for r in server.requests]
    assert len(errors) == 3  # the 400, the mid-stream error, the batch item's 400
    masked = mask_key(key)
    assert {type(e).__name__ for e in errors} == {"BadRequestError", "APIStreamError"}
    assert {(e.type, e.code, e.param) for e in errors if isinstance(e, APIStatusError)} == {(masked,) * 3}
    assert any("lookup" in body and '"role": "tool"' in body.replace('":"', '": "') for body in sent_back)
    assert any("hs_…" in v or "…" in v for v in values)  # masked, not dropped
    assert_no_key(values, key)
    assert_no_key([text for err in errors for text in _texts_of_error(err)], key)
    assert_no_key(_telemetry_texts(t), key)
    assert len(t.spans()) >= 8
    assert_no_key(_log_texts(caplog) or [""], key)
    assert_no_key(sent_back, key)  # the tool's return value and the echoed transcript, as sent to the model


@pytest.mark.parametrize("output_format", ["holysheep", "openai"])
@pytest.mark.parametrize("kind", ["sync", "aiohttp"])
def test_jsonl_lines_hold_no_key_in_either_format(tmp_path: Path, kind: str, output_format: str) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"hs_line_{m}_000000000000", "model": m, "messages": MESSAGES})
                           + "\n" for m in ("ok", "err")) + "{not json\n")
    with echo_server(HS_KEY) as server:
        if kind == "sync":
            with Client(base_url=server.url, api_key=HS_KEY, max_retries=0) as client:
                report = run_jsonl(client, src, out, output_format=output_format)
        else:
            async def go() -> Any:
                async with AsyncClient(base_url=server.url, api_key=HS_KEY, max_retries=0) as client:
                    return await arun_jsonl(client, src, out, output_format=output_format)

            report = asyncio.run(go())
    assert (report.succeeded, report.failed) == (1, 2)
    text = out.read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["custom_id"] for r in rows] == ["hs_line_ok_000000000000", "hs_line_err_000000000000", "line-3"]
    assert "hs_…" in text
    assert_no_key([text], HS_KEY)


@pytest.mark.parametrize("argv", [["chat", "hi", "-m", "ok"], ["chat", "hi", "-m", "ok", "--no-stream"],
                                  ["chat", "hi", "-m", "split"], ["chat", "hi", "-m", "err"], ["models"], ["quota"]])
def test_the_cli_prints_no_key(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from holysheep.cli import main

    with echo_server(SELF_HOSTED_KEY) as server:
        code = main(["--base-url", server.url, "--api-key", SELF_HOSTED_KEY, *argv])
    captured = capsys.readouterr()
    assert code == (1 if "err" in argv else 0), captured.err
    assert_no_key([captured.out, captured.err], SELF_HOSTED_KEY)
    if "split" in argv:  # the key came in two deltas: masked whole, the rest of the reply intact
        assert captured.out.strip() == "echo …6789"


@pytest.mark.parametrize("output_format", ["holysheep", "openai"])
def test_the_cli_batch_writes_and_prints_no_key(tmp_path: Path, output_format: str, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep.cli import main

    monkeypatch.setenv("HOLYSHEEP_API_KEY", "restored-after-the-test")  # `batch` exports --api-key there

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"custom_id": m, "model": m, "messages": MESSAGES}) + "\n"
                           for m in ("ok", "err")))
    with echo_server(SELF_HOSTED_KEY) as server:
        code = main(["--base-url", server.url, "--api-key", SELF_HOSTED_KEY, "batch", str(src), "-o", str(out),
                     "--output-format", output_format, "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert len(out.read_text().splitlines()) == 2
    assert_no_key([captured.out, captured.err, out.read_text()], SELF_HOSTED_KEY)


def test_the_scrubber_masks_glued_escaped_and_deep_keys_and_leaves_placeholders() -> None:
    from holysheep._egress import remember, scrub, scrub_body, scrub_json

    remember("sk-glued-Secret-0123456789")
    remember("sk-short9")  # 9 characters: masked only as a whole token
    remember("EMPTY")  # a placeholder: never masked
    assert scrub("id=chatcmpl-sk-glued-Secret-0123456789x") == "id=chatcmpl-…6789x"
    assert scrub("sk-short9 but sk-short9x and EMPTY") == "…ort9 but sk-short9x and EMPTY"
    assert scrub(r'"a\nhs_AbcdefGhijklMnop1234"') == r'"a\nhs_…1234"'
    assert scrub("graphs_abcdefghijklmnopqrst") == "graphs_abcdefghijklmnopqrst"  # not a key: glued to a word
    odd = 'sk-"odd\\Secret-0123456789'  # a quote and a backslash: JSON text spells it differently
    remember(odd)
    line = json.dumps({"message": f"bad key {odd}!"})
    assert odd not in scrub(odd) and json.dumps(odd)[1:-1] not in scrub(line)
    assert json.loads(scrub(line)) == {"message": "bad key …6789!"}  # still valid JSON
    spelled = _escaped("sk-glued-Secret-0123456789")
    assert json.loads(scrub_body(f'{{"x":"{spelled}"}}'.encode())) == {"x": "…6789"}
    plain = b'{"x":"caf\\u00e9","y":1}'
    assert scrub_body(plain) is plain  # nothing to mask: the same bytes, not a copy
    code = b'{"x":"for months_total in paths_by_month: ..."}'
    assert scrub_body(code) is code  # "hs_" inside words is not a key: no second parse
    go = b'{"x":"\\u003chtml\\u003e \\u0026 \\u001b"}'
    assert scrub_body(go) is go  # Go's escapes of <, > and & cannot spell a key
    deep: Any = "hs_AbcdefGhijklMnop1234"
    for _ in range(5000):
        deep = [deep]
    clean = scrub_json(deep)
    for _ in range(5000):
        clean = clean[0]
    assert clean == "hs_…1234"


def test_every_attribute_set_on_an_error_is_scrubbed() -> None:
    from holysheep import APIStatusError
    from holysheep._egress import remember

    remember(SELF_HOSTED_KEY)
    err = APIStatusError(f"bad {SELF_HOSTED_KEY}", status_code=400, request_id=None, response=None,
                         body={"error": {"type": SELF_HOSTED_KEY}}, type=SELF_HOSTED_KEY, code=SELF_HOSTED_KEY)
    err.param = (SELF_HOSTED_KEY,)  # a field added later, by anyone: scrubbed as it is set
    assert_no_key([str(err), repr(err), repr(vars(err))], SELF_HOSTED_KEY)
    assert err.body == {"error": {"type": "…6789"}} and err.param == ("…6789",)


def test_a_key_given_only_as_a_header_is_masked_too() -> None:
    header_key = "sk-only-in-a-Header-0123456789"
    with echo_server(header_key) as server, \
            Client(base_url=server.url, api_key="EMPTY", default_headers={"Api-Key": header_key}, max_retries=0) as c:
        answer = c.chat.completions.create(model="ok", messages=MESSAGES)
        with pytest.raises(APIStatusError) as info:
            c.chat.completions.create(model="err", messages=MESSAGES)
    assert_no_key([answer.model_dump_json(), *_texts_of_error(info.value)], header_key)
