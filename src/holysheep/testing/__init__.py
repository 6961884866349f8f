"""Test helpers: ``FakeServer``, a local OpenAI-compatible HTTP server with scripted replies and faults.

    from holysheep.testing import FakeServer, Fault

    with FakeServer(faults=[Fault.status(429, retry_after=0.01), None]) as server:
        ...  # point a client at server.url with server.api_key; inspect server.requests

Names load lazily, so importing this package (and its pytest plugin) costs almost nothing. The server
uses only the standard library. See ``docs/testing.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ._faults import DEFAULT_FAULT_MIX, Fault, FaultPlan
    from ._replies import ReplySpec, ScriptedReply
    from ._responses import Handler, RecordedRequest, Response, StreamReply
    from ._script import Script, auto_reply, tool_call, tool_reply
    from ._serve import serve
    from ._server import FakeServer
    from ._structured import json_reply, refusal_reply, reply_sequence, schema_example, schema_reply

__all__ = [
    "DEFAULT_FAULT_MIX",
    "FakeServer",
    "Fault",
    "FaultPlan",
    "Handler",
    "RecordedRequest",
    "ReplySpec",
    "Response",
    "Script",
    "ScriptedReply",
    "StreamReply",
    "auto_reply",
    "json_reply",
    "refusal_reply",
    "reply_sequence",
    "schema_example",
    "schema_reply",
    "serve",
    "tool_call",
    "tool_reply",
]

_WHERE = {
    "DEFAULT_FAULT_MIX": "_faults",
    "Fault": "_faults",
    "FaultPlan": "_faults",
    "Handler": "_responses",
    "RecordedRequest": "_responses",
    "ReplySpec": "_replies",
    "Response": "_responses",
    "ScriptedReply": "_replies",
    "StreamReply": "_responses",
    "FakeServer": "_server",
    "serve": "_serve",
    "Script": "_script",
    "auto_reply": "_script",
    "tool_call": "_script",
    "tool_reply": "_script",
    "json_reply": "_structured",
    "refusal_reply": "_structured",
    "reply_sequence": "_structured",
    "schema_example": "_structured",
    "schema_reply": "_structured",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
