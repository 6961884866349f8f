"""``client.models`` and ``client.quota``: typed for both the sync and async clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from typing_extensions import Unpack

from holysheep._clients.resources.chat import Resource
from holysheep._clients.resources.embeddings import RequestParams
from holysheep._core.request import RequestSpec, request_options
from holysheep._core.sentinels import given, or_default
from holysheep.types.account import Model, ModelList, Quota

__all__ = ["AsyncModelPager", "BaseModels", "BaseQuota"]

_RL = TypeVar("_RL")
_RM = TypeVar("_RM")
_RQ = TypeVar("_RQ")


def _parse_models(content: bytes) -> ModelList:
    return ModelList.model_validate_json(content)


def _parse_model(content: bytes) -> Model:
    return Model.model_validate_json(content)


def _parse_quota(content: bytes) -> Quota:
    return Quota.model_validate_json(content)


def _spec(method: str, path: str, parse: Callable[[bytes], object], options: RequestParams) -> RequestSpec:
    """A GET of ``path`` with openai's per-call options (``extra_body``, as openai-python, sent as a JSON body);
    an unknown keyword is `InvalidRequestError` before any I/O."""
    opts = given(options)  # NOT_GIVEN/omit: not passed
    unknown = set(opts) - set(RequestParams.__optional_keys__)
    if unknown:
        from holysheep._exceptions import InvalidRequestError

        name = sorted(unknown)[0]
        raise InvalidRequestError(f"models.{method}() got an unknown parameter {name!r}; it takes extra_headers, "
                                  "extra_query, extra_body, timeout and max_retries.", field=name,
                                  reason="unknown parameter")
    extra_body = or_default(options.get("extra_body"), None)
    return RequestSpec("GET", path, dict(extra_body) if extra_body else None, parse, options=request_options(opts))


class BaseModels(Resource, Generic[_RL, _RM]):
    """``client.models``."""

    def list(self, **options: Unpack[RequestParams]) -> _RL:
        """The models the API serves (``GET /models``): a `ModelList` page (``.data``; iterable, as openai's
        ``SyncPage``). Takes openai's per-call ``extra_headers``, ``extra_query``, ``extra_body`` (ignored:
        sent as a JSON body, as openai-python does), ``timeout`` and ``max_retries``."""
        result: _RL = self._client._execute(_spec("list", "models", _parse_models, options))
        return result

    def retrieve(self, model: str, **options: Unpack[RequestParams]) -> _RM:
        """One model (``GET /models/{model}``, the id percent-encoded as by openai-python); `NotFoundError`
        when the server does not serve it."""
        if not isinstance(model, str) or not model:
            from holysheep._exceptions import InvalidRequestError

            raise InvalidRequestError(f"model must be a non-empty model id such as 'deepseek-v3.2', got {model!r}.",
                                      field="model")
        spec = _spec("retrieve", "models/" + quote(model, safe=""), _parse_model, options)
        result: _RM = self._client._execute(spec)
        return result


class AsyncModelPager:
    """What ``AsyncClient.models.list()`` returns, as openai-python's ``AsyncPaginator``: ``await`` it for the
    `ModelList` page, or ``async for model in client.models.list()`` (the request is sent then, once per use)."""

    __slots__ = ("_fetch",)

    def __init__(self, fetch: Callable[[], Awaitable[ModelList]]) -> None:
        self._fetch = fetch

    def __await__(self) -> Generator[Any, None, ModelList]:
        return self._fetch().__await__()

    async def __aiter__(self) -> AsyncIterator[Model]:
        page = await self._fetch()
        for model in page.data:
            yield model


class BaseQuota(Resource, Generic[_RQ]):
    """``client.quota``."""

    def retrieve(self) -> _RQ:
        """The account's quota (``GET /quota``): ``remaining`` plus whatever else the server reports."""
        result: _RQ = self._client._execute(RequestSpec("GET", "quota", None, _parse_quota))
        return result
