"""An error event inside a stream, as the typed `APIStreamError` (pure): any wire format's stream state asks
`stream_error` whether an event is one."""

from __future__ import annotations

from collections.abc import Callable

from holysheep._core.json_check import load_json
from holysheep._core.keys import redact, redact_value
from holysheep._core.sse import ServerSentEvent
from holysheep._exceptions import APIStreamError

__all__ = ["stream_error"]


def stream_error(event: ServerSentEvent, secret: str | None,
                 partial_text: Callable[[], str]) -> APIStreamError | None:
    """The `APIStreamError` for ``event`` when it carries an ``error`` object (or is an ``event: error``), with the
    server's words and ``secret`` masked and ``partial_text()`` as what streamed before; None for another event."""
    try:
        payload = load_json(event.data)
    except ValueError:
        payload = {"message": event.data}
    err = payload.get("error") if isinstance(payload, dict) else None
    if err is None and event.event == "error":
        err = payload
    if err is None:
        return None
    if not isinstance(err, dict):
        err = {"message": str(err)}
    err = redact_value(err, secret)  # the server may echo the key: mask it, keep the structure
    code = err.get("code")
    message = redact(f"The server reported an error mid-stream: {err.get('message') or 'no message'} "
                     f"(type={err.get('type')}, code={code}). The partial output is in .partial_text.", secret)
    err_type = err.get("type")
    return APIStreamError(
        message, body=err, type=err_type if isinstance(err_type, str) else None,
        code=str(code) if code is not None else None, partial_text=partial_text(),
        param=err["param"] if isinstance(err.get("param"), str) else None,
    )
