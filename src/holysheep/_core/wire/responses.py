"""The Responses API (``POST /responses``) as a `WireFormat`: ``input`` (text or items) and ``instructions`` in,
``output`` items out, ``usage.input_tokens``/``output_tokens``, ``response.*`` stream events.

``text_format=Model`` (``responses.parse``) is sent as ``text.format``, OpenAI's strict ``json_schema``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

from holysheep._core.wire import register
from holysheep._core.wire.base import TokenUsage, WireFormat, text_chars
from holysheep._exceptions import InvalidRequestError
from holysheep.types._base import sum_usages
from holysheep.types.responses import Response, ResponseFunctionToolCall, ResponseOutputMessage, ResponseUsage

if TYPE_CHECKING:
    from holysheep._core.request import RequestSpec
    from holysheep._core.stream_state import StreamState
    from holysheep._core.wire.responses_tools import ResponseToolRunResult  # noqa: F401  (a type parameter only)
    from holysheep._core.wire.tool_turns import ToolTurns

__all__ = ["RESPONSES", "RESPONSE_PARAM_NAMES", "ResponsesWire", "parse_response", "text_format_param"]

RESPONSE_PARAM_NAMES = frozenset({
    "model", "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata", "parallel_tool_calls",
    "previous_response_id", "prompt", "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier",
    "service_tier", "store", "stream", "stream_options", "temperature", "text", "tool_choice", "tools",
    "top_logprobs", "top_p", "truncation", "user", "background", "conversation", "include", "context_management"})
"""The arguments of ``responses.create`` (openai-python's ``ResponseCreateParams``) besides the transport ones."""
_TRANSPORT = frozenset({"extra_body", "extra_headers", "extra_query", "timeout", "max_retries", "stream_idle_timeout"})

_validate: Callable[[bytes], Response] | None = None


def parse_response(content: bytes) -> Response:
    """A ``response`` body. One that is no response (``{}``, an error object) raises `NoAnswerError` (the
    client's retryable `APIResponseValidationError`)."""
    global _validate
    if _validate is None:
        Response.model_rebuild()
        _validate = Response.__pydantic_validator__.validate_json
    response = _validate(content)
    if not response.output and response.status is None and not response.id:  # {}, or an error object
        from holysheep._core.answer import check_answer

        check_answer(None, content)  # raises NoAnswerError saying what came instead (an error object, {})
    return response


def text_format_param(text_format: object) -> dict[str, object]:
    """``text_format`` (a pydantic model or another type) as the Responses API's ``text.format``."""
    from holysheep._core.schema import response_format_for

    envelope = response_format_for(text_format).param.get("json_schema") or {}
    return {"type": "json_schema", **envelope}


def _fail(field: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{field}: {message}", field=field)


class ResponsesWire(WireFormat[Response, "ResponseToolRunResult"]):
    """``responses``: the request is ``responses.create()``'s arguments; the reply a `Response`."""

    name: ClassVar[str] = "responses"
    operation: ClassVar[str] = "chat"  # the convention's value for chat-style inference, the Responses API included
    api_type: ClassVar[str | None] = "responses"  # the OpenAI conventions' ``openai.api.type``
    path: ClassVar[str] = "responses"
    urls: ClassVar[frozenset[str]] = frozenset({"/v1/responses", "/responses", "v1/responses", "responses"})
    response_type: ClassVar[type[BaseModel]] = Response
    output_limit_fields: ClassVar[tuple[str, ...]] = ("max_output_tokens",)
    prompt_field: ClassVar[str] = "input"
    param_names: ClassVar[frozenset[str] | None] = RESPONSE_PARAM_NAMES | {"extra_body", "extra_headers",
                                                                           "extra_query", "timeout", "max_retries"}
    not_prompt_fields: ClassVar[frozenset[str]] = frozenset({
        "model", "max_output_tokens", "max_tool_calls", "temperature", "top_p", "top_logprobs", "stream",
        "stream_options", "parallel_tool_calls", "store", "service_tier", "reasoning", "user", "safety_identifier",
        "metadata", "prompt_cache_key", "prompt_cache_retention", "previous_response_id", "truncation",
        "background", "include"})

    def spec(self, params: Mapping[str, object]) -> RequestSpec:
        return self.build(params, stream=False)

    def build(self, params: Mapping[str, object], *, stream: bool,
              parse: Callable[[bytes], object] | None = None) -> RequestSpec:
        """The request of ``responses.create(**params, stream=stream)``; `InvalidRequestError` before any I/O."""
        from holysheep._core.request import RequestSpec, request_options

        if not isinstance(stream, bool):
            raise _fail("stream", f"must be True or False, got {stream!r}.")
        for key in params:
            if key not in RESPONSE_PARAM_NAMES and key not in _TRANSPORT:
                import difflib

                close = difflib.get_close_matches(str(key), sorted(RESPONSE_PARAM_NAMES), n=1, cutoff=0.6)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise InvalidRequestError(f"responses.create() got an unknown parameter {key!r}.{hint} Send "
                                          f"server-specific fields through extra_body={{{key!r}: ...}}.",
                                          field=str(key), reason="unknown parameter")
        model = params.get("model")
        if not isinstance(model, str) or not model.strip():
            raise _fail("model", f"must be a non-empty string, got {model!r}. For example model='gpt-4.1-mini'.")
        value = params.get("input")
        if value is None:
            if not any(params.get(k) for k in ("previous_response_id", "prompt", "conversation")):
                raise _fail("input", "is required: pass input='text' or a list of input items.")
        elif isinstance(value, str):
            if not value:
                raise _fail("input", "is an empty string.")
        elif not isinstance(value, (list, tuple)) or not value:
            raise _fail("input", f"must be a string or a non-empty list of input items, got {type(value).__name__}.")
        limit = params.get("max_output_tokens")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise _fail("max_output_tokens", f"must be an integer >= 1, got {limit!r}.")
        body: dict[str, object] = {k: (list(v) if k == "input" and isinstance(v, tuple) else v)
                                   for k, v in params.items() if k not in _TRANSPORT and v is not None}
        body.pop("stream", None)
        if stream:
            body["stream"] = True
        extra = params.get("extra_body")
        if extra:
            if not isinstance(extra, Mapping):
                raise _fail("extra_body", f"must be a dict, got {type(extra).__name__}.")
            body.update(extra)
        return RequestSpec("POST", self.path, body, parse or parse_response, stream, request_options(params),
                           wire=self)

    def prompt_params(self, prompt: str) -> dict[str, object]:
        return {"input": prompt}

    def prompt_chars(self, params: Mapping[str, object]) -> int:
        chars = 0
        for field in ("instructions", "input"):
            value = params.get(field)
            if isinstance(value, str):
                chars += len(value)
            for item in value if isinstance(value, (list, tuple)) else ():
                if isinstance(item, Mapping):
                    chars += text_chars(item.get("content")) + text_chars(item.get("output"))
        return chars

    def prompt_text(self, params: Mapping[str, object]) -> str:
        parts: list[str] = []
        for field in ("instructions", "input"):
            value = params.get(field)
            if isinstance(value, str):
                parts.append(value)
            for item in value if isinstance(value, (list, tuple)) else ():
                content = item.get("content") if isinstance(item, Mapping) else None
                if isinstance(content, str):
                    parts.append(content)
                elif isinstance(content, list):
                    parts.extend(p["text"] for p in content
                                 if isinstance(p, Mapping) and isinstance(p.get("text"), str))
        return "\n".join(parts)

    def parse(self, content: bytes) -> object:
        return parse_response(content)

    def sum_usage(self, replies: Iterable[object]) -> ResponseUsage | None:
        """The replies' usage summed: ``input_tokens``, ``output_tokens``, ``total_tokens`` (a reply without one
        counts input + output) and the ``input_tokens_details``/``output_tokens_details`` counts."""
        return sum_usages(u for u in (getattr(r, "usage", None) for r in replies) if isinstance(u, ResponseUsage))

    def usage_block(self, usage: object) -> TokenUsage | None:
        if not isinstance(usage, ResponseUsage):
            return None
        details = usage.input_tokens_details
        return TokenUsage(usage.input_tokens, usage.output_tokens, details.cached_tokens if details else 0,
                          usage.total_tokens)

    def answered(self, response: object) -> bool:
        """Completed, with text or a function call, and no refusal."""
        if not isinstance(response, Response) or response.status not in (None, "completed"):
            return False
        refused = any(getattr(p, "type", "") == "refusal" for item in response.output
                      if isinstance(item, ResponseOutputMessage) for p in item.content)
        return not refused and self.has_answer(response)

    def has_answer(self, response: object) -> bool:
        return isinstance(response, Response) and (bool(response.output_text) or any(
            isinstance(item, ResponseFunctionToolCall) for item in response.output))

    def output_texts(self, response: object) -> list[str | None]:
        return [response.output_text] if isinstance(response, Response) else []

    def finish_reasons(self, response: object) -> list[str | None]:
        if not isinstance(response, Response):
            return []
        details = response.incomplete_details
        reason = details.reason if details is not None and response.status == "incomplete" else None
        return [reason or response.status]

    def outputs(self, response: object) -> list[tuple[str | None, str | None, object]]:
        if not isinstance(response, Response):
            return []
        calls = [{"id": i.call_id, "function": {"name": i.name, "arguments": i.arguments}}
                 for i in response.output if isinstance(i, ResponseFunctionToolCall)]
        return [(response.output_text or None, self.finish_reasons(response)[0], calls or None)]

    def cost(self, response: object) -> float | None:
        return response.cost if isinstance(response, Response) else None

    def tool_turns(self) -> ToolTurns:
        """``input`` items; ``function_call`` items read, ``function_call_output`` items sent back (also through
        the bridge to chat completions, which maps them both ways)."""
        from holysheep._core.wire.responses_tools import RESPONSES_TOOLS

        return RESPONSES_TOOLS

    def stream_state(self, started_at: float, *, secret: str | None, max_event_bytes: int,
                     clock: Callable[[], float], max_text_bytes: int) -> StreamState:
        from holysheep._core.response_stream import ResponseStreamState

        return ResponseStreamState(started_at, secret=secret, max_event_bytes=max_event_bytes, clock=clock,
                                   max_text_bytes=max_text_bytes)


RESPONSES = register(ResponsesWire())
"""The Responses API's format."""
