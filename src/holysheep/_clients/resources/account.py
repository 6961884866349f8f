"""``client.models`` and ``client.quota``: typed for both the sync and async clients."""

from __future__ import annotations

from typing import Generic, TypeVar

from holysheep._clients.resources.chat import Resource
from holysheep._core.request import RequestSpec
from holysheep.types.account import Model, ModelList, Quota

__all__ = ["BaseModels", "BaseQuota"]

_RL = TypeVar("_RL")
_RQ = TypeVar("_RQ")


def _parse_models(content: bytes) -> list[Model]:
    return ModelList.model_validate_json(content).data


def _parse_quota(content: bytes) -> Quota:
    return Quota.model_validate_json(content)


class BaseModels(Resource, Generic[_RL]):
    """``client.models``."""

    def list(self) -> _RL:
        """The models the API serves (``GET /models``), as a list of `Model`."""
        result: _RL = self._client._execute(RequestSpec("GET", "models", None, _parse_models))
        return result


class BaseQuota(Resource, Generic[_RQ]):
    """``client.quota``."""

    def retrieve(self) -> _RQ:
        """The account's quota (``GET /quota``): ``remaining`` plus whatever else the server reports."""
        result: _RQ = self._client._execute(RequestSpec("GET", "quota", None, _parse_quota))
        return result
