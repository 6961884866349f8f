"""``--schema`` of ``holysheep batch``: a pydantic model named ``module:Model``, or a JSON-schema file."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from holysheep._exceptions import InvalidRequestError

__all__ = ["load_schema"]


def _from_file(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidRequestError(f"--schema {path}: cannot read a JSON schema from it ({exc}).",
                                  field="schema") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(f"--schema {path}: the file must hold a JSON object (a JSON schema).",
                                  field="schema")
    envelope = data.get("json_schema") if data.get("type") == "json_schema" else None
    if isinstance(envelope, dict) and isinstance(envelope.get("schema"), dict):  # a whole response_format
        schema: dict[str, object] = {"title": envelope.get("name", "response"), **envelope["schema"]}
        return schema
    return data


def load_schema(spec: str) -> Any:
    """The ``response_format`` for ``--schema``: ``package.module:Model`` (imported with the current
    directory on ``sys.path``) or the path of a ``.json`` file (a JSON schema, or a whole
    ``{"type": "json_schema", ...}`` response_format). Raises `InvalidRequestError`."""
    path = Path(spec)
    if spec.endswith(".json") or path.is_file():
        return _from_file(path)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InvalidRequestError(f"--schema {spec!r}: use module:Model (e.g. myapp.models:Invoice) or the path "
                                  "of a .json schema file.", field="schema")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise InvalidRequestError(f"--schema {spec!r}: cannot import it ({type(exc).__name__}: {exc}).",
                                  field="schema") from None
    return target
