"""Structured batches: ``result.parsed`` per item, a typed error for items that do not validate, re-asks per
``max_repairs`` while the other items carry on; the JSONL CLI with ``--schema``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from holysheep import AsyncClient, Client, RefusalError, StructuredOutputError
from holysheep.batch.__main__ import main as cli_main
from holysheep.testing import FakeServer, ScriptedReply, json_reply, refusal_reply

MODEL = "gpt-4.1"
PROMPTS = ["good 1", "fixable", "bad", "good 2", "good 3"]


class Person(BaseModel):
    name: str
    age: int


def answer(body: dict[str, Any]) -> ScriptedReply:
    """``good N`` → valid; ``fixable`` → invalid, then valid once re-asked; anything else → never JSON."""
    messages = body["messages"]
    text = messages[0]["content"]
    if text.startswith("good"):
        n = int(text.split()[1])
        return json_reply({"name": f"p{n}", "age": n})
    if text == "fixable":
        return json_reply({"name": "f", "age": 7} if len(messages) > 1 else {"name": "f"})
    return ScriptedReply("not json")


def chat(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def first_prompts(server: FakeServer) -> list[str]:
    return [r.body["messages"][0]["content"] for r in chat(server)]


def test_sync_batch_parses_good_items_repairs_fixable_and_types_the_failure() -> None:
    with FakeServer(reply=answer) as server, Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.chat.completions.batch(PROMPTS, model=MODEL, response_format=Person, max_repairs=1,
                                                check_quota=False)
    assert [r.parsed for r in results] == [Person(name="p1", age=1), Person(name="f", age=7), None,
                                           Person(name="p2", age=2), Person(name="p3", age=3)]
    bad = results[2]
    assert not bad.ok and isinstance(bad.error, StructuredOutputError)
    assert bad.error.attempts == 2 and bad.error.raw_text == "not json"
    assert bad.attempts == 2  # requests sent for the item: the first reply and one re-ask (not a retry)
    counts = {p: first_prompts(server).count(p) for p in PROMPTS}
    assert counts == {"good 1": 1, "fixable": 2, "bad": 2, "good 2": 1, "good 3": 1}
    assert results.stats.requests == 7 and results.stats.retries == 0  # every request sent, re-asks included
    fixed = results[1].response
    assert fixed is not None and fixed.usage is not None
    assert fixed.usage.total_tokens == sum(a.usage.total_tokens for a in fixed.attempts if a.usage is not None)
    ok_tokens = sum(r.response.usage.prompt_tokens for r in results if r.response and r.response.usage)
    bad_usage = bad.error.completion.usage  # summed over the failed item's two replies
    assert bad_usage is not None
    assert results.stats.prompt_tokens == ok_tokens + bad_usage.prompt_tokens  # what was spent, failures too
    keys = [r.headers["idempotency-key"] for r in chat(server) if r.body["messages"][0]["content"] == "fixable"]
    assert keys[1] == keys[0] + "-repair1"


def test_without_repairs_a_bad_item_is_sent_once_and_fails_alone() -> None:
    with FakeServer(reply=answer) as server, Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.chat.completions.batch(PROMPTS, model=MODEL, response_format=Person, check_quota=False)
    assert len(chat(server)) == 5
    assert [type(r.error).__name__ if r.error else "ok" for r in results] == [
        "ok", "StructuredOutputError", "StructuredOutputError", "ok", "ok"]


def test_a_refusal_fails_its_batch_item() -> None:
    """parse() returns a refusal (as openai); a batch still reports it as the item's RefusalError."""
    def refuse_bad(body: dict[str, Any]) -> ScriptedReply:
        return refusal_reply("No.") if body["messages"][0]["content"] == "bad" else answer(body)

    with FakeServer(reply=refuse_bad) as server, Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.chat.completions.batch(["good 1", "bad"], model=MODEL, response_format=Person,
                                                check_quota=False)
    assert results[0].parsed == Person(name="p1", age=1)
    assert isinstance(results[1].error, RefusalError) and results[1].error.refusal == "No."


def test_async_batch_iter_gives_parsed_results() -> None:
    async def main(server: FakeServer) -> dict[int, Any]:
        out: dict[int, Any] = {}
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client, \
                client.chat.completions.batch_iter(["good 4", "bad", "good 5"], model=MODEL,
                                                   response_format=Person, check_quota=False) as it:
            async for result in it:
                out[result.index] = result.parsed if result.ok else type(result.error)
        return out

    with FakeServer(reply=answer) as server:
        got = asyncio.run(main(server))
    assert got == {0: Person(name="p4", age=4), 1: StructuredOutputError, 2: Person(name="p5", age=5)}


def test_items_without_response_format_are_unchanged() -> None:
    with FakeServer(reply="plain text") as server, Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.chat.completions.batch(["a", "b"], model=MODEL, check_quota=False)
    assert [r.parsed for r in results] == [None, None]
    assert [r.response.choices[0].message.content for r in results if r.response] == ["plain text"] * 2
    assert all("response_format" not in r.body for r in chat(server))


def _jsonl(path: Path, prompts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"custom_id": f"id-{i}", "messages": [{"role": "user", "content": p}]})
                            + "\n" for i, p in enumerate(prompts)))
    return path


@pytest.mark.parametrize("schema_kind", ["module", "json"])
def test_cli_schema_writes_parsed_objects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema_kind: str) -> None:
    (tmp_path / "my_people.py").write_text(
        "from pydantic import BaseModel\n\n\nclass Person(BaseModel):\n    name: str\n    age: int\n")
    (tmp_path / "person.json").write_text(json.dumps({
        "title": "Person", "type": "object", "required": ["name", "age"],
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(__import__("sys").modules, "my_people", raising=False)
    schema = "my_people:Person" if schema_kind == "module" else "person.json"
    src, dst = _jsonl(tmp_path / "in.jsonl", ["good 1", "fixable", "bad"]), tmp_path / "out.jsonl"
    with FakeServer(reply=answer) as server:
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        code = cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--model", MODEL, "--schema", schema,
                         "--max-repairs", "1", "--no-progress"])
        sent = chat(server)
    assert code == 1  # one line failed
    lines = {d["custom_id"]: d for d in (json.loads(x) for x in dst.read_text().splitlines())}
    assert lines["id-0"]["parsed"] == {"name": "p1", "age": 1}
    assert lines["id-1"]["parsed"] == {"name": "f", "age": 7}
    assert lines["id-0"]["response"]["choices"][0]["message"]["content"] == '{"name":"p1","age":1}'
    assert "parsed" not in lines["id-2"] and lines["id-2"]["error"]["error_class"] == "StructuredOutputError"
    assert len(sent) == 5
    assert sent[0].body["response_format"]["json_schema"]["schema"] == {
        "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"], "additionalProperties": False}


def test_cli_bad_schema_argument_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", "hs_" + "x" * 24)
    src = _jsonl(tmp_path / "in.jsonl", ["good 1"])
    assert cli_main([str(src), "-o", str(tmp_path / "o.jsonl"), "--model", MODEL, "--schema", "no_colon"]) == 2
    assert "use module:Model" in capsys.readouterr().err
    assert cli_main([str(src), "-o", str(tmp_path / "o.jsonl"), "--model", MODEL, "--schema", "nope:X"]) == 2
    assert "cannot import it" in capsys.readouterr().err
    assert cli_main([str(src), "-o", str(tmp_path / "o.jsonl"), "--model", MODEL, "--max-repairs", "1"]) == 2
    assert "--max-repairs needs --schema" in capsys.readouterr().err


def test_a_built_envelope_without_max_repairs_is_passed_through_unparsed() -> None:
    envelope = {"type": "json_schema", "json_schema": {"name": "P", "schema": {}, "strict": True}}
    with FakeServer(reply="not json") as server, Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.chat.completions.batch(["a"], model=MODEL, response_format=envelope, check_quota=False)
        again = client.chat.completions.batch(["a"], model=MODEL, response_format=envelope, max_repairs=0,
                                              check_quota=False)
    assert results[0].ok and results[0].parsed is None
    assert not again[0].ok and isinstance(again[0].error, StructuredOutputError)
    assert [r.body["response_format"] for r in chat(server)] == [envelope, envelope]
    assert all("max_repairs" not in r.body for r in chat(server))


def test_batch_takes_every_response_format_its_type_allows() -> None:
    """``BatchParams.response_format`` is ``Mapping[str, Any] | type[Any]``: ``list[Model]`` (parsed through
    the wrapped schema), a read-only mapping holding a bare JSON schema (parsed) or an envelope (sent as
    given, as JSON), and a ``TypedDict`` envelope, all run; examples/extract_batch.py type-checks one."""
    class Envelope(TypedDict):
        type: str

    envelope: Envelope = {"type": "json_object"}

    def reply(body: dict[str, Any]) -> ScriptedReply:
        schema = body["response_format"].get("json_schema", {}).get("schema", {})
        if "value" in schema.get("properties", {}):
            return json_reply({"value": [{"name": "a", "age": 1}, {"name": "b", "age": 2}]})
        return json_reply({"name": "a", "age": 1})

    with FakeServer(reply=reply) as server, Client(api_key=server.api_key, base_url=server.url) as client:
        def one(response_format: Any) -> Any:
            [result] = client.chat.completions.batch(["x"], model=MODEL, response_format=response_format,
                                                     check_quota=False)
            assert result.ok, result.error
            return result.parsed

        assert one(list[Person]) == [Person(name="a", age=1), Person(name="b", age=2)]
        assert one(MappingProxyType(Person.model_json_schema())) == {"name": "a", "age": 1}
        assert one(MappingProxyType({"type": "json_object"})) is None  # an envelope: sent as given
        assert one(envelope) is None
    sent = [r.body["response_format"] for r in chat(server)]
    assert [f["type"] for f in sent] == ["json_schema", "json_schema", "json_object", "json_object"]
    assert sent[2:] == [{"type": "json_object"}] * 2
    assert list(sent[0]["json_schema"]["schema"]["properties"]) == ["value"]
