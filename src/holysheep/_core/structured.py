"""Structured outputs, sans I/O: check ``parse()`` arguments, turn replies into typed results, re-ask.

The re-ask loop is a generator shared by the sync client, the async client and the batch engine: it
yields the ``create()`` keyword arguments of the next request and receives that request's
`ChatCompletion`; its return value is the `ParsedChatCompletion`. Each shell only sends.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import ValidationError

from holysheep._core.json_check import SchemaMismatch
from holysheep._core.schema import ResponseFormat, response_format_for
from holysheep._core.structured_errors import (
    ContentFilterFinishReasonError,
    LengthFinishReasonError,
    RefusalError,
    StructuredOutputError,
)
from holysheep._exceptions import InvalidRequestError
from holysheep.types.chat import ChatCompletion, CompletionUsage, ToolCall
from holysheep.types.parsed import ParsedChatCompletion

if TYPE_CHECKING:
    from holysheep._core.tools import ToolSet

__all__ = ["ParsePlan", "parse_completion", "plan_parse", "repair_prompt", "tool_arguments", "wants_parse"]

T = TypeVar("T")
OnRefusal = Literal["return", "raise"]
"""What ``parse()`` does with a refusal: return it (``message.refusal`` set, ``parsed=None``, as openai-python)
or raise `RefusalError` (batches: the item fails)."""
Steps = Generator[dict[str, Any], ChatCompletion, ParsedChatCompletion[T]]

MAX_ERRORS_SHOWN = 20
"""At most this many validation errors are quoted in a re-ask and in an error message."""

_ENVELOPE_TYPES = ("json_schema", "json_object", "text")


def _error_lines(error: ValidationError | ValueError) -> list[str]:
    if isinstance(error, SchemaMismatch):
        return [f"- {loc or '(root)'}: {msg}" for loc, msg in error.errors[:MAX_ERRORS_SHOWN]]
    if not isinstance(error, ValidationError):
        return [f"- (root): {error}"]
    lines = []
    for item in error.errors(include_url=False)[:MAX_ERRORS_SHOWN]:
        loc = ".".join(str(part) for part in item["loc"]) or "(root)"
        lines.append(f"- {loc}: {item['msg']}")
    hidden = error.error_count() - MAX_ERRORS_SHOWN
    if hidden > 0:
        lines.append(f"- ... and {hidden} more")
    return lines


def repair_prompt(error: ValidationError | ValueError) -> str:
    """The user message of a re-ask: what was wrong with the previous reply, one line per error."""
    return ("Your previous reply does not match the required JSON schema:\n" + "\n".join(_error_lines(error))
            + "\nReply again with only the corrected JSON.")


def _summed_usage(attempts: list[ChatCompletion]) -> CompletionUsage | None:
    usages = [a.usage for a in attempts if a.usage is not None]
    if not usages:
        return None
    if len(attempts) == 1:
        return usages[0]
    prompt = sum(u.prompt_tokens for u in usages)
    completion = sum(u.completion_tokens for u in usages)
    total = sum(u.total_tokens or u.prompt_tokens + u.completion_tokens for u in usages)
    return CompletionUsage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def tool_arguments(tools: ToolSet, call: ToolCall, summed: ChatCompletion, attempts: int) -> object:
    """A tool call's arguments as its tool's model (None for a raw tool dict or an unknown name)."""
    tool = tools.typed(call.function.name)
    if tool is None:
        return None
    try:
        return tool.validate_arguments(call.function.arguments)
    except (ValidationError, ValueError) as exc:
        from holysheep._core.tool_errors import ToolArgumentsError
        from holysheep._core.tools import error_lines

        errors = error_lines(exc, MAX_ERRORS_SHOWN)
        raw = call.function.arguments
        shown = raw if len(raw) <= 200 else raw[:200] + "..."
        detail = "\n".join(f"- {loc}: {msg}" for loc, msg in errors)
        raise ToolArgumentsError(
            f"The arguments of the call of tool {tool.name!r} (id {call.id!r}) do not validate after {attempts} "
            f"attempt(s):\n{detail}\nArguments: {shown!r}. The raw arguments are in .raw_arguments; pass "
            "max_repairs=1 (or more) to re-ask the model with these errors.",
            tool_name=tool.name, tool_call_id=call.id, raw_arguments=raw, field=errors[0][0] if errors else "(root)",
            validation_error=exc if isinstance(exc, ValidationError) else None, completion=summed,
            attempts=attempts) from exc


def parse_completion(fmt: ResponseFormat[T] | None, completion: ChatCompletion,
                     attempts: list[ChatCompletion] | None = None, tools: ToolSet | None = None,
                     on_refusal: OnRefusal = "return") -> ParsedChatCompletion[T]:
    """``completion`` with each choice's content validated into ``message.parsed`` (left ``None`` without
    ``fmt``) and, with ``tools``, each tool call's arguments into ``function.parsed_arguments``.

    ``attempts`` (every response for this call, ``completion`` last) sets the summed ``usage``. A refusal
    (``message.refusal``) leaves ``parsed`` None, as openai-python does; ``on_refusal="raise"`` raises
    `RefusalError` instead (batches use it: a refusal is the item's failure). Raises `LengthFinishReasonError`,
    `ContentFilterFinishReasonError`, `StructuredOutputError` or `ToolArgumentsError`.
    """
    attempts = attempts if attempts is not None else [completion]
    usage = _summed_usage(attempts)
    summed = completion if usage is completion.usage else completion.model_copy(update={"usage": usage})
    parsed_values: list[object] = []
    parsed_args: list[list[object]] = []
    for choice in completion.choices:
        message = choice.message
        where = f"choice {choice.index}" if len(completion.choices) > 1 else "the reply"
        if message.refusal and on_refusal == "raise":
            raise RefusalError(f"The model refused to answer ({where}): {message.refusal!r}. The full response "
                               "is in .completion; rephrase the request or try another model.",
                               refusal=message.refusal, completion=summed)
        if choice.finish_reason == "length":
            got = usage.completion_tokens if usage is not None else "?"
            raise LengthFinishReasonError(
                f"The reply stopped at the token limit (finish_reason='length', {got} completion tokens), so "
                f"its JSON is cut off ({where}). Raise max_tokens or ask for a shorter answer.",
                completion=summed)
        if choice.finish_reason == "content_filter":
            raise ContentFilterFinishReasonError(
                f"The provider's content filter stopped the reply (finish_reason='content_filter', {where}). "
                "The response is in .completion; rephrase the request.", completion=summed)
        calls = message.tool_calls or []
        parsed_args.append([tool_arguments(tools, call, summed, len(attempts)) for call in calls] if tools else [])
        if message.refusal or message.content is None or fmt is None or (not message.content and calls):
            parsed_values.append(None)  # a refusal, or a tool call (whose streamed content is "")
            continue
        try:
            parsed_values.append(fmt.validate(message.content))
        except (ValidationError, ValueError) as exc:
            detail = "\n".join(_error_lines(exc))
            shown = message.content if len(message.content) <= 200 else message.content[:200] + "..."
            raise StructuredOutputError(
                f"The reply does not match response_format {fmt.name!r} after {len(attempts)} attempt(s):\n"
                f"{detail}\nReply: {shown!r}. The full text is in .raw_text; pass max_repairs=1 (or more) to "
                "re-ask the model with these errors.",
                raw_text=message.content, validation_error=exc if isinstance(exc, ValidationError) else None,
                completion=summed, attempts=len(attempts)) from exc
    data = summed.model_dump(by_alias=True, exclude_unset=True)
    for choice_data, value, arguments in zip(data.get("choices", []), parsed_values, parsed_args, strict=True):
        message_data = choice_data.setdefault("message", {})
        message_data["parsed"] = value
        for call_data, parsed in zip(message_data.get("tool_calls") or [], arguments, strict=False):
            call_data.setdefault("function", {})["parsed_arguments"] = parsed
    result: ParsedChatCompletion[T] = ParsedChatCompletion.model_validate(data)
    result._set_transport(summed._transport)
    result._attempts = list(attempts)
    return result


def _check_repairs(max_repairs: object) -> int:
    if isinstance(max_repairs, bool) or not isinstance(max_repairs, int) or max_repairs < 0:
        raise InvalidRequestError(f"max_repairs must be an integer >= 0, got {max_repairs!r}. It is how many "
                                  "times to re-ask the model after output that does not validate.",
                                  field="max_repairs")
    return max_repairs


@dataclass(frozen=True)
class ParsePlan(Generic[T]):
    """A checked ``parse()`` call: the response format, ``max_repairs`` and the ``create()`` arguments
    (``response_format`` already the ``json_schema`` envelope)."""

    format: ResponseFormat[T] | None
    max_repairs: int
    params: dict[str, Any]
    tools: ToolSet | None = None
    on_refusal: OnRefusal = "return"

    def steps(self) -> Steps[T]:
        """The request/response loop: yields ``create()`` kwargs, receives each `ChatCompletion`."""
        request = self.params
        attempts: list[ChatCompletion] = []
        while True:
            completion = yield request
            attempts.append(completion)
            try:
                return parse_completion(self.format, completion, attempts, self.tools, self.on_refusal)
            except StructuredOutputError as err:
                if len(attempts) > self.max_repairs:
                    raise
                request = self._repair(request, err, len(attempts))

    def _repair(self, request: dict[str, Any], err: StructuredOutputError, repair: int) -> dict[str, object]:
        cause = err.validation_error if err.validation_error is not None else err.__cause__
        error = cause if isinstance(cause, (ValidationError, ValueError)) else ValueError(str(err))
        tool_name = getattr(err, "tool_name", None)
        if tool_name is not None:  # a tool call's arguments: quote the call, ask for it again
            prompt = (f"Your call of the tool {tool_name!r} had invalid arguments {err.raw_text}:\n"
                      + "\n".join(_error_lines(error)) + "\nCall the tool again with corrected arguments.")
            messages = [*request["messages"], {"role": "user", "content": prompt}]
        else:
            messages = [*request["messages"], {"role": "assistant", "content": err.raw_text},
                        {"role": "user", "content": repair_prompt(error)}]
        out = {**request, "messages": messages}
        headers = self.params.get("extra_headers")
        if headers and headers.get("idempotency-key"):  # a re-ask is a new request: never deduplicated
            out["extra_headers"] = {**headers, "idempotency-key": f"{headers['idempotency-key']}-repair{repair}"}
        return out


def plan_parse(params: Mapping[str, Any], *, stream: bool = False) -> ParsePlan[object]:
    """Check ``parse()`` keyword arguments (``model``, ``messages``, ``response_format``, ``max_repairs``,
    create() parameters) before any I/O. Raises `InvalidRequestError`."""
    rest = dict(params)
    max_repairs = _check_repairs(rest.pop("max_repairs", 0))
    on_refusal = rest.pop("on_refusal", "return")
    if on_refusal not in ("return", "raise"):
        raise InvalidRequestError(f"on_refusal must be 'return' (message.refusal set, parsed=None, as openai) or "
                                  f"'raise' (RefusalError), got {on_refusal!r}.", field="on_refusal")
    tools: ToolSet | None = None
    if rest.get("tools") is not None:
        from holysheep._core.tools import tool_set  # lazy: only parse(tools=...) builds tool schemas

        tools = tool_set(rest["tools"])
        rest["tools"] = tools.params
    fmt: ResponseFormat[object] | None = None
    if rest.get("response_format") is not None:
        fmt = response_format_for(rest["response_format"])
        rest["response_format"] = fmt.param
    elif tools is None:
        raise InvalidRequestError("parse() needs response_format (a pydantic model, a type such as list[Model] or "
                                  "Literal['a', 'b'], or a JSON-schema dict) or tools=[pydantic_function_tool(Model)"
                                  ", ...].", field="response_format")
    else:
        rest.pop("response_format", None)
    n = rest.get("n")
    if max_repairs and isinstance(n, int) and n > 1:
        raise InvalidRequestError(f"max_repairs works with one choice; got n={n}. Use n=1, or max_repairs=0.",
                                  field="max_repairs")
    if max_repairs and stream:
        raise InvalidRequestError("max_repairs does not work with stream=True (a re-ask needs the whole reply "
                                  "first). Use stream=False, or max_repairs=0.", field="max_repairs")
    return ParsePlan(fmt, max_repairs, rest, tools, on_refusal)


def wants_parse(params: Mapping[str, object]) -> bool:
    """True when a batch item asks for parsed output: ``response_format`` is a type or a bare JSON schema, or
    an already built ``json_schema``/``json_object`` envelope together with ``max_repairs``, or its tools
    include typed tools (``pydantic_function_tool``: ``parsed_arguments``)."""
    value = params.get("response_format")
    if value is None:
        from holysheep._core.tools import FunctionTool

        tools = params.get("tools")
        return isinstance(tools, (list, tuple)) and any(isinstance(t, FunctionTool) for t in tools)
    if isinstance(value, Mapping) and value.get("type") in _ENVELOPE_TYPES:
        return "max_repairs" in params and value.get("type") != "text"
    return True

