"""A body handed over unread (``with_streaming_response`` without ``stream=True``), as the call's hooks see it.

Such a call's ``on_response(outcome="success")`` comes at the headers, before the caller has read a byte, so it
cannot say what the body says (usage, response id, model). ``BodyWatch`` is the one owner of what comes after:
the client shells (sync and async alike) tell it each piece the caller pulled, and whether the body was read to
its end, failed or was closed; it sends exactly one ``on_body_end`` (a ``BodyEndEvent``) the first time one of
those happens. Pure code: no I/O.

What the event can say about the body is what the caller read, never more:

- ``read="full"``: the caller read to the end. ``response`` is the parsed reply: from the body ``read()`` kept,
  or from a copy of what the iterators (``iter_bytes``, ...) handed out, kept only while it stays under
  ``BODY_COPY_LIMIT`` (beyond it the copy is dropped: ``response`` is None, ``unparsed="over_copy_limit"``).
- ``read="partial"`` / ``"none"``: the caller closed the response (or left its ``with`` block) part way, or
  before reading anything, or the read failed (``error``: the typed error it raised). No usage is guessed.

Nothing is read on the caller's behalf, and with no hook that implements ``on_body_end`` there is no watch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from holysheep._core.hook_events import CallContext
from holysheep._core.scrub import request_id_of

__all__ = ["BODY_COPY_LIMIT", "BodyEndEvent", "BodyRead", "BodyWatch", "watch_body"]

BODY_COPY_LIMIT = 1 << 20
"""The most bytes of an iterated body (``iter_bytes``/``iter_text``/``iter_lines``) kept for the hooks, so that
its usage can be read at its end (1 MiB, or ``max_response_bytes`` when smaller). A body ``read()`` keeps is
never copied."""

BodyRead = Literal["full", "partial", "none"]
_UNPARSED: Any = object()


class BodyEndEvent:
    """The caller is done with a body handed over unread (``with_streaming_response``, no ``stream=True``).

    ``read``: ``"full"`` (read to its end), ``"partial"`` (closed or failed part way) or ``"none"`` (closed
    unread); ``error``: the typed error reading raised (``ResponseTooLargeError``, ``APITimeoutError``, ...) or
    None; ``bytes_read``: decoded bytes the caller pulled; ``elapsed_s``: from the call's first attempt;
    ``status_code``, ``request_id``, ``served_by``: the response's. ``response``: the parsed reply (what
    ``parse()`` gives) when the body was read in full and is the expected JSON, else None (then ``unparsed``
    says why: ``"over_copy_limit"`` or ``"invalid"``).
    """

    __slots__ = ("_content", "_parse", "_parsed", "bytes_read", "ctx", "elapsed_s", "error", "read", "request_id",
                 "served_by", "status_code", "unparsed")

    def __init__(self, watch: BodyWatch, read: BodyRead, error: BaseException | None, content: bytes | None) -> None:
        ctx = watch.ctx
        self.ctx, self.read, self.error, self.bytes_read = ctx, read, error, watch.bytes_read
        self.status_code, self.request_id, self.served_by = watch.status_code, watch.request_id, watch.served_by
        self.elapsed_s = ctx.clock() - ctx.started_at
        self._content, self._parse = content, watch.parse
        self._parsed: object = _UNPARSED
        self.unparsed: str | None = None
        if read == "full" and error is None and content is None:
            self.unparsed = "over_copy_limit"

    @property
    def response(self) -> object:
        """The parsed reply (parsed on first use, once: the caller's ``parse()`` gets the same object), or None."""
        content = self._content
        if content is None:
            return None
        if self._parsed is _UNPARSED:
            try:
                self._parsed = self._parse(content)
            except Exception:  # not the expected JSON: the caller's parse() raises the typed error, not a hook
                self._content, self.unparsed = None, "invalid"
                return None
        return self._parsed


class BodyWatch:
    """What the caller did with one unread body, and the one ``on_body_end`` it ends with (see the module).
    ``parse``: the reply's parser (the response's own, so that a value parsed for a hook is the caller's too)."""

    __slots__ = ("_copy", "_limit", "bytes_read", "ctx", "done", "parse", "request_id", "served_by", "status_code")

    def __init__(self, ctx: CallContext, *, status_code: int, request_id: str | None, served_by: str,
                 parse: Callable[[bytes], object], limit: int) -> None:
        self.ctx, self.status_code, self.request_id, self.served_by = ctx, status_code, request_id, served_by
        self.parse = parse
        self._limit = limit
        self._copy: list[bytes] | None = []  # None: not copied (the caller keeps the body, or it grew too big)
        self.bytes_read = 0
        self.done = False

    def keep(self) -> None:
        """The caller keeps the whole body (``read()``, ``parse()``, ...): nothing needs copying."""
        self._copy = None

    def piece(self, data: bytes) -> None:
        """The caller pulled ``data`` (decoded bytes)."""
        self.bytes_read += len(data)
        copy = self._copy
        if copy is not None:
            if self.bytes_read > self._limit:
                self._copy = None  # never more than the limit held on the caller's behalf
            else:
                copy.append(data)

    def ended(self, content: bytes | None = None) -> None:
        """The body was read to its end; ``content``: the whole body when the caller keeps it."""
        if self.done:
            return
        if content is None and self._copy is not None:
            content = b"".join(self._copy)
        self._copy = None
        self._emit("full", None, content)

    def failed(self, error: BaseException) -> None:
        """Reading raised ``error`` (the typed error the caller gets)."""
        if not self.done:
            self._copy = None
            self._emit("partial", error, None)

    def closed(self) -> None:
        """The response was closed (or its ``with`` block left): before its end, if the end was not reported."""
        if not self.done:
            self._copy = None
            self._emit("partial" if self.bytes_read else "none", None, None)

    def _emit(self, read: BodyRead, error: BaseException | None, content: bytes | None) -> None:
        self.done = True
        self.ctx.hooks.emit("on_body_end", BodyEndEvent(self, read, error, content))


def watch_body(ctx: CallContext | None, status_code: int, headers: Mapping[str, str], api_key: str | None,
               served_by: str, parse: Callable[[bytes], object], max_response_bytes: int) -> BodyWatch | None:
    """The watch for a body handed over unread, or None when no hook listens for ``on_body_end`` (then
    reading it costs nothing more)."""
    if ctx is None or not ctx.hooks.wants("on_body_end"):
        return None
    return BodyWatch(ctx, status_code=status_code, request_id=request_id_of(headers, api_key), served_by=served_by,
                     parse=parse, limit=min(BODY_COPY_LIMIT, max_response_bytes))
