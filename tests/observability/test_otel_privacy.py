"""Message content is recorded only when asked for; keys and Authorization values never are."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from holysheep import AuthenticationError, Client
from holysheep.integrations.otel import CAPTURE_ENV
from holysheep.testing import FakeServer, Fault

from .conftest import MODEL
from .otel_util import Telemetry, instrumented

SECRET_TEXT = "my-secret-prompt"


def _everything(t: Telemetry) -> str:
    """Every exported span (attributes, events, status, links) and every metric point, as one string."""
    spans = [s.to_json() for s in t.spans()]
    metrics = t.reader.get_metrics_data()
    return "\n".join(spans) + (metrics.to_json() if metrics is not None else "")


def _call(server: FakeServer, **create: Any) -> None:
    with Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": SECRET_TEXT}], **create)


def test_no_content_by_default(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    with instrumented() as t:
        _call(server)
    dump = _everything(t)
    assert SECRET_TEXT not in dump and "gen_ai.input.messages" not in dump and "gen_ai.output.messages" not in dump


@pytest.mark.parametrize("how", ["env", "argument"])
def test_content_when_asked(server: FakeServer, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    kwargs: dict[str, Any] = {}
    if how == "env":
        monkeypatch.setenv(CAPTURE_ENV, "true")
    else:
        monkeypatch.delenv(CAPTURE_ENV, raising=False)
        kwargs["capture_message_content"] = True
    with instrumented(**kwargs) as t:
        _call(server)
    (span,) = t.spans()
    assert json.loads(span.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": SECRET_TEXT}]}]
    (out,) = json.loads(span.attributes["gen_ai.output.messages"])
    assert out["role"] == "assistant" and out["finish_reason"] == "stop" and out["parts"][0]["content"]


@pytest.mark.parametrize(("value", "opt_in", "captured"), [
    ("true", None, True), ("TRUE", None, True), ("1", None, True), ("false", None, False), ("", None, False),
    # the official instrumentation's modes, read as it reads them: only with the latest-conventions opt-in
    ("SPAN_AND_EVENT", "gen_ai_latest_experimental", True), ("span_only", "http, gen_ai_latest_experimental", True),
    ("EVENT_ONLY", "gen_ai_latest_experimental", False), ("NO_CONTENT", "gen_ai_latest_experimental", False),
    ("SPAN_AND_EVENT", None, False), ("SPAN_ONLY", "http", False),
    ("true", "gen_ai_latest_experimental", True),  # holysheep's own switch keeps working under the opt-in
])
def test_content_capture_honours_the_official_settings(monkeypatch: pytest.MonkeyPatch, value: str,
                                                       opt_in: str | None, captured: bool) -> None:
    from holysheep.integrations.otel._attributes import OPT_IN_ENV, capture_from_env

    monkeypatch.setenv(CAPTURE_ENV, value)
    if opt_in is None:
        monkeypatch.delenv(OPT_IN_ENV, raising=False)
    else:
        monkeypatch.setenv(OPT_IN_ENV, opt_in)
    assert capture_from_env() is captured


def test_span_and_event_with_the_opt_in_records_content(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "SPAN_AND_EVENT")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    with instrumented() as t:
        _call(server)
    (span,) = t.spans()
    assert SECRET_TEXT in span.attributes["gen_ai.input.messages"]


def test_the_argument_overrides_the_environment(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "true")
    with instrumented(capture_message_content=False) as t:
        _call(server)
    assert SECRET_TEXT not in _everything(t)


def test_keys_and_authorization_are_never_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Content capture on, a retried 500, a 401, a stream, a key pasted into a message and a custom
    Authorization-like header: the key and the header values appear nowhere in the telemetry."""
    monkeypatch.setenv(CAPTURE_ENV, "true")
    with FakeServer(faults=[Fault.status(500), None, Fault.unauthorized()]) as server, instrumented() as t:
        key = server.api_key
        with Client(api_key=key, base_url=server.url, initial_retry_delay=0,
                    default_headers={"x-api-key": "other-secret-value-123"}) as client:
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"my key is {key}"}],
                                           extra_headers={"Authorization": f"Bearer {key}"})
            with pytest.raises(AuthenticationError):
                client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
            with client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": key}],
                                                stream=True) as stream:
                list(stream)
    dump = _everything(t)
    assert len(t.spans()) == 3
    assert key not in dump and key[3:] not in dump
    assert "other-secret-value-123" not in dump and "Bearer" not in dump
    assert "authorization" not in dump.lower() and "x-api-key" not in dump
    assert "gen_ai.input.messages" in dump  # content capture was on: the key inside it was masked


def test_clean_attributes_scrubs_every_string_and_keeps_the_shapes() -> None:
    """The scrubber every span attribute passes (a plain loop since issue 44): strings, strings inside sequences
    (a list becomes a tuple), anything deeper through `scrub_json`; numbers and booleans as they are."""
    from holysheep.integrations.otel._scrubbing import clean_attributes

    key = "hs_" + "Q" * 30
    cleaned = clean_attributes({"a": f"x {key}", "b": [key, 3, True, 2.5], "c": (key,), "d": 7, "e": None,
                                "f": [{"k": key}]})
    assert cleaned is not None
    assert key not in repr(cleaned)
    assert cleaned["a"].startswith("x hs_") and cleaned["b"][1:] == (3, True, 2.5)
    assert type(cleaned["b"]) is tuple and type(cleaned["c"]) is tuple
    assert (cleaned["d"], cleaned["e"]) == (7, None)
    assert key not in json.dumps(cleaned["f"])
    assert clean_attributes(None) is None
