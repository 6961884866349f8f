"""Turning batch inputs into create() parameters, and the token estimate used by the limiters.

An input item is a prompt string, a list of messages, a dict of ``create()`` parameters (optionally
with ``"custom_id"``; ``"prompt"`` is accepted for ``messages=[{"role": "user", ...}]``), or an OpenAI
Batch API line ``{"custom_id", "method", "url", "body"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from holysheep._core.wire import CHAT, EMBEDDINGS, WireFormat, wire_for_url
from holysheep._exceptions import InvalidRequestError

if TYPE_CHECKING:
    from holysheep._core.call_plan import CallPlan
    from holysheep._core.tool_loop import ToolRunResult

__all__ = ["BatchRequest", "DEFAULT_COMPLETION_TOKENS", "estimate_tokens", "is_embedding", "normalize_item",
           "possible_tokens"]

DEFAULT_COMPLETION_TOKENS = 256
MAX_COMPLETION_TOKENS = 262144
"""The completion a request without ``max_tokens`` is assumed able to ask for, when capping a reply's usage."""
"""Completion tokens assumed by the estimate when a request sets no ``max_tokens``."""

_CHAT_URLS = CHAT.urls
_EMBEDDING_URLS = EMBEDDINGS.urls


def is_embedding(params: Mapping[str, object]) -> bool:
    """An embeddings request (``input`` and no ``messages``) rather than a chat completion."""
    return "input" in params and "messages" not in params


class BatchRequest:
    """One input item on its way through the batch: its position, id, parameters and attempt state."""

    __slots__ = ("_est_tokens", "_request", "agent", "assumed", "attempts", "cache_key", "custom_id", "first_sent",
                 "index", "invalid", "key", "params", "plan", "repairs", "reserved", "retrying", "steps", "tool_run",
                 "wire")

    def __init__(self, index: int, custom_id: str | None, params: dict[str, object],
                 invalid: BaseException | None = None, wire: WireFormat | None = None) -> None:
        self.wire = wire
        """The item's wire format; None: chat completions, or embeddings for ``input`` without ``messages``."""
        self.index = index
        self.custom_id = custom_id
        self.params = params
        self.invalid = invalid
        self.attempts = 0
        self.first_sent: float | None = None
        self.key: str | None = None
        self.plan: CallPlan | None = None  # the client's CallPlan, made on the first attempt
        self.steps: Any = None  # structured output: the re-ask loop (a generator) when the item wants parsing
        self._request: dict[str, object] | None = None  # ... and the create() arguments of its current request
        self.retrying = False  # its next send is a retry (counted in BatchStats.retries when it goes out)
        self.repairs = 0  # re-asks (structured output) or turns after the first (a tool loop)
        self.cache_key: str | None = None  # the response cache's key of its current request
        self.reserved = 0.0  # USD the cost cap holds for its request in flight
        self.assumed: str | None = None  # ... and what that reservation assumes (spend.assumption)
        self.agent = False  # the item runs a tool loop (steps yields requests and RunTools)
        self.tool_run: ToolRunResult | None = None  # ... and its ToolRunResult once it is done
        self._est_tokens: int | None = None if invalid is None else 0

    @property
    def request(self) -> dict[str, object] | None:
        """The create() arguments of the item's current request (a re-ask or a tool loop's turn), None until
        its loop made one: ``params`` are sent as they are."""
        return self._request

    @request.setter
    def request(self, value: dict[str, object] | None) -> None:
        self._request = value
        self._est_tokens = None  # a later turn carries the transcript so far: its estimate is its own

    def token_estimate(self) -> int:
        """The raw token estimate of the current request (worked out on first use: only TPM limits and the
        quota check need it)."""
        est = self._est_tokens
        if est is None:
            request = self._request
            est = self._est_tokens = estimate_tokens(self.params if request is None else request, self.wire)
        return est

    @property
    def est_tokens(self) -> int:
        """The same as ``token_estimate()``."""
        return self.token_estimate()


def estimate_tokens(params: Mapping[str, object], wire: WireFormat | None = None) -> int:
    """Prompt characters / 4 (rounded up) + the output limit (chat: ``max_tokens``, or ``max_completion_tokens``;
    else 256) x the answers asked for; embeddings (and a format without output) count the input only."""
    if wire is None:
        wire = EMBEDDINGS if is_embedding(params) else CHAT
    chars = wire.prompt_chars(params)
    if not wire.has_output:  # no completion: the input's characters only
        return (chars + 3) // 4
    completion: object = None
    for field in wire.output_limit_fields:  # the first one set, as `a or b`
        completion = params.get(field)
        if completion:
            break
    if not isinstance(completion, int) or isinstance(completion, bool) or completion < 0:
        completion = DEFAULT_COMPLETION_TOKENS
    return (chars + 3) // 4 + completion * wire.answers(params)


def possible_tokens(params: Mapping[str, object], wire: WireFormat | None = None) -> int:
    """The most tokens a request could use: a token per byte of its JSON (no tokenizer makes more), plus
    the largest of its output limits (chat: ``max_tokens``, ``max_completion_tokens``: a server may honour
    either; else `MAX_COMPLETION_TOKENS`) per answer."""
    from pydantic_core import to_json

    try:
        prompt = len(to_json(params, fallback=str))
    except Exception:  # an object pydantic cannot walk: a generous guess from the estimate
        prompt = 4 * estimate_tokens(params, wire)
    wire = wire or CHAT
    limits = [v for v in (params.get(f) for f in wire.output_limit_fields)
              if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    completion = max(limits) if limits else MAX_COMPLETION_TOKENS
    return prompt + completion * wire.answers(params)


def _custom_id(value: object, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    raise InvalidRequestError(f"{where}custom_id must be a string, got {type(value).__name__}.", field="custom_id")


def _params_from_mapping(item: Mapping[str, object], where: str,
                         wire: WireFormat | None = None) -> tuple[dict[str, object], WireFormat | None]:
    """The create() arguments of a dict item, and its wire format when an OpenAI Batch line's ``url`` names one
    other than chat completions and embeddings (else ``wire``, the batch's)."""
    if "body" in item and ("url" in item or "method" in item):  # OpenAI Batch API line
        method = item.get("method", "POST")
        url = item.get("url", "/v1/chat/completions")
        if not isinstance(method, str) or method.upper() != "POST":
            raise InvalidRequestError(f"{where}method must be 'POST', got {method!r}.", field="method")
        body = item["body"]
        other = wire_for_url(url) if isinstance(url, str) and url not in _CHAT_URLS and url not in _EMBEDDING_URLS \
            else None
        if other is not None and isinstance(body, Mapping):  # /v1/responses, or a registered format's url
            if not other.has_prompt(body):
                raise InvalidRequestError(f"{where}a {url} body needs {other.prompt_field!r}.", field="body")
            params = dict(body)
            params.pop("stream", None)
            return params, other
        if url not in _CHAT_URLS and url not in _EMBEDDING_URLS:
            raise InvalidRequestError(f"{where}url must be '/v1/chat/completions', '/v1/embeddings' or "
                                      f"'/v1/responses', got {url!r}.", field="url")
        if not isinstance(body, Mapping):
            raise InvalidRequestError(f"{where}body must be an object of request parameters.", field="body")
        if (url in _EMBEDDING_URLS) != ("input" in body and "messages" not in body):
            wanted = "'input' (and no 'messages')" if url in _EMBEDDING_URLS else "'messages'"
            raise InvalidRequestError(f"{where}a {url} body needs {wanted}.", field="body")
        params = dict(body)
        params.pop("stream", None)
        return params, None
    params = {k: v for k, v in item.items() if k != "custom_id"}
    if "prompt" in params and not (wire or CHAT).has_prompt(params):
        prompt = params.pop("prompt")
        if not isinstance(prompt, str):
            raise InvalidRequestError(f"{where}prompt must be a string.", field="prompt")
        params.update((wire or CHAT).prompt_params(prompt))
    return params, wire


def normalize_item(item: Any, index: int, defaults: Mapping[str, object], *, where: str | None = "",
                   custom_id: str | None = None, wire: WireFormat | None = None) -> BatchRequest:
    """A `BatchRequest` for ``item``; a malformed item gives one whose ``invalid`` holds the error.

    ``defaults`` (``model``, ``max_tokens``, ...) apply where the item does not set them. ``where``
    prefixes error messages (None: ``"item {index}: "``, formatted only when there is an error). ``wire``: the
    batch's format (None: chat completions, and embeddings for ``input`` items); an OpenAI Batch line's ``url``
    chooses its own.
    """
    kind = type(item)
    if wire is None and kind is list and defaults.get("model"):  # the usual input: messages, model from the batch
        return BatchRequest(index, custom_id, {**defaults, CHAT.prompt_field: item})  # (read, never changed)
    fmt = wire or CHAT
    try:
        if kind is list or kind is tuple:  # the usual inputs first, without the ABC checks
            params: dict[str, object] = {fmt.prompt_field: list(item)}
        elif kind is str:
            params = fmt.prompt_params(item)
        elif isinstance(item, Mapping):
            where = _where(where, index)
            custom_id = _custom_id(item.get("custom_id"), where) if custom_id is None else custom_id
            params, wire = _params_from_mapping(item, where, wire)
        elif isinstance(item, str):
            params = fmt.prompt_params(item)
        elif isinstance(item, (list, tuple)):
            params = {fmt.prompt_field: list(item)}
        else:
            raise InvalidRequestError(
                f"{_where(where, index)}a batch item must be a prompt string, a list of messages or a dict of "
                f"create() parameters, got {kind.__name__}.", field="requests")
        if wire is None:
            if not CHAT.has_prompt(params) and not EMBEDDINGS.has_prompt(params):
                raise InvalidRequestError(f"{_where(where, index)}the item has no 'messages' (or 'prompt'), nor an "
                                          "embeddings 'input'.", field="messages")
        elif not wire.has_prompt(params):
            raise InvalidRequestError(f"{_where(where, index)}the item has no {wire.prompt_field!r} (or 'prompt').",
                                      field=wire.prompt_field)
        if "stream" in params:
            if params["stream"]:
                raise InvalidRequestError(f"{_where(where, index)}stream=True is not supported in a batch.",
                                          field="stream")
            del params["stream"]
        merged = {**defaults, **params} if defaults else params
        if not merged.get("model"):
            raise InvalidRequestError(f"{_where(where, index)}no model: pass model= to the batch or set it per "
                                      "item.", field="model")
        return BatchRequest(index, custom_id, merged, wire=wire)
    except InvalidRequestError as exc:
        return BatchRequest(index, custom_id, {}, invalid=exc, wire=wire)


def _where(where: str | None, index: int) -> str:
    return f"item {index}: " if where is None else where
