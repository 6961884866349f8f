"""Error messages from servers that are not OpenAI: FastAPI bodies, missing /v1, unknown models (issue 17)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

from holysheep import BadRequestError, Client, NotFoundError, QuotaUnavailableError
from holysheep._core.error_mapping import server_message
from holysheep.testing import FakeServer

from .conftest import MESSAGES

LOCAL = "http://127.0.0.1:8000"


@pytest.mark.parametrize(("body", "expected"), [
    ({"error": {"message": "openai style", "type": "x"}, "detail": "ignored"}, "openai style"),
    ({"detail": "Invalid API key"}, "Invalid API key"),
    ({"detail": [{"loc": ["body", "messages", 0, "role"], "msg": "field required", "type": "missing"},
                 {"loc": ["body", "max_tokens"], "msg": "must be > 0"}]},
     "body.messages.0.role: field required; body.max_tokens: must be > 0"),
    ({"detail": [{"msg": "no location"}]}, "no location"),
    ({"error": "bare string error"}, "bare string error"),
    ({"message": "top-level message"}, "top-level message"),
    ({"detail": "", "error": "fallback to error"}, "fallback to error"),
    ({"error": {"code": 5}, "message": "message when error has none"}, "message when error has none"),
    ("  plain text body  ", "plain text body"),
    ({"unrelated": 1}, None),
    ([1, 2], None),
])
def test_server_message_reads_each_style_in_order(body: Any, expected: str | None) -> None:
    assert server_message(body) == expected


def _fail(status: int, body: Any, *, base: str = f"{LOCAL}/v1", path: str = "chat/completions",
          method: str = "post") -> Exception:
    url = f"{base.rstrip('/')}/{path}"
    with respx.mock() as mock:
        route = getattr(mock, method)(url).mock(return_value=httpx.Response(status, json=body))
        with Client(api_key="EMPTY", base_url=base, max_retries=0) as client, pytest.raises(Exception) as info:
            if path == "quota":
                client.quota.retrieve()
            elif path == "models":
                client.models.list()
            else:
                client.chat.completions.create(model="tiny", messages=MESSAGES)  # type: ignore[arg-type]
        assert route.call_count == 1
    return info.value


def test_fastapi_string_detail_is_in_the_message() -> None:
    err = _fail(400, {"detail": "Server is pinned to '/tmp/m'; requested 'tiny'."})
    assert isinstance(err, BadRequestError)
    assert str(err).startswith("HTTP 400 Bad Request: Server is pinned to '/tmp/m'; requested 'tiny'.")
    assert err.body == {"detail": "Server is pinned to '/tmp/m'; requested 'tiny'."}


def test_fastapi_validation_list_is_in_the_message() -> None:
    err = _fail(422, {"detail": [{"loc": ["body", "messages"], "msg": "Field required", "type": "missing"}]})
    assert "HTTP 422 Unprocessable Entity: body.messages: Field required" in str(err)


def test_404_without_version_segment_suggests_v1() -> None:
    err = _fail(404, {"detail": "Not Found"}, base=LOCAL)
    assert isinstance(err, NotFoundError)
    assert f"did you mean {LOCAL}/v1?" in str(err)
    assert "model name" not in str(err)
    err = _fail(404, {"detail": "Not Found"}, base=f"{LOCAL}/api", path="models", method="get")
    assert f"did you mean {LOCAL}/api/v1?" in str(err)


def test_404_with_version_segment_keeps_the_model_hint() -> None:
    for base in (f"{LOCAL}/v1", f"{LOCAL}/openai/v1beta", f"{LOCAL}/v2"):
        err = _fail(404, {"error": {"message": "no such model", "code": "model_not_found"}}, base=base)
        assert "did you mean" not in str(err) and "Check the model name" in str(err), base


def test_quota_404_is_quota_unavailable() -> None:
    err = _fail(404, {"detail": "Not Found"}, path="quota", method="get")
    assert isinstance(err, QuotaUnavailableError) and isinstance(err, NotFoundError)
    assert "This server has no quota endpoint" in str(err)
    assert "model name" not in str(err)


def test_unknown_model_gets_nearest_served_name_from_fake_server() -> None:
    with FakeServer(models=["deepseek-v3.2", "gpt-4.1", "gemini-2.5-flash"], strict_models=True) as server:
        with Client(api_key=server.api_key, base_url=server.url, max_retries=0) as client:
            with pytest.raises(NotFoundError) as info:
                client.chat.completions.create(model="gpt-4.2", messages=MESSAGES)  # type: ignore[arg-type]
            assert "Served models: `deepseek-v3.2`, `gpt-4.1`, `gemini-2.5-flash`" in str(info.value)
            assert str(info.value).endswith("Did you mean 'gpt-4.1'?")
            with pytest.raises(NotFoundError) as info:
                client.chat.completions.create(model="qwen3-235b", messages=MESSAGES)  # type: ignore[arg-type]
            assert "Did you mean" not in str(info.value)
        assert [r.body["model"] for r in server.requests] == ["gpt-4.2", "qwen3-235b"]
