"""How FakeServer answers a request: auth, latency, routing, faults, the built-in endpoints, the reply.

`EndpointHandler` is the request side of `FakeServer`; it runs on the
server's loop thread (state is set by ``FakeServer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable

from ._faults import FaultPlan, apply_fault, fault_response, normalize_path
from ._http import HTTPRequest, reset_connection, serve_connection, write_body, write_sse
from ._replies import ReplySpec, models_list, new_id, quota_object
from ._responses import (
    Handler,
    RecordedRequest,
    Response,
    StreamReply,
    chat_endpoint,
    error_response,
    model_endpoint,
)

__all__ = ["Endpoint", "EndpointHandler"]

_ROUTES = {"/chat/completions": "POST", "/completions": "POST", "/responses": "POST", "/embeddings": "POST",
           "/models": "GET", "/quota": "GET"}
Endpoint = Callable[[RecordedRequest], "Response | StreamReply"]


async def _until_eof(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError):
        while await reader.read(65536):
            pass


class EndpointHandler:
    """Serves each connection and request of a FakeServer: the pipeline and the built-in endpoints."""

    api_key: str
    require_auth: bool
    reply: ReplySpec
    latency: float
    sleep: Callable[[float], Awaitable[None]]
    stream_chunk_delay: float
    words_per_chunk: int
    fault_plan: FaultPlan
    models: dict[str, str]
    strict_models: bool
    quota_limit: int | None
    quota_used: int
    quota_reset_at: str | int | None
    enforce_quota: bool
    rpm_limit: float | None
    _rpm_level: float
    _rpm_stamp: float
    in_flight: int
    max_in_flight: int
    open_connections: int
    connections_total: int
    _requests: deque[RecordedRequest]
    _lock: threading.Lock
    _handlers: dict[tuple[str, str], Handler]
    _conns: dict[asyncio.StreamWriter, asyncio.Task[object]]
    _gate: asyncio.Event | None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conns[writer] = asyncio.current_task()  # type: ignore[assignment]
        self.open_connections += 1
        self.connections_total += 1
        try:
            await serve_connection(reader, writer, lambda req: self._serve_one(req, reader, writer))
        except asyncio.CancelledError:  # stop(); asyncio < 3.12 would log a cancelled handler task
            pass
        finally:
            self._conns.pop(writer, None)
            self.open_connections -= 1

    async def _serve_one(
        self, req: HTTPRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        body: object = None
        if req.body:
            with contextlib.suppress(ValueError):
                body = json.loads(req.body)
        rec = RecordedRequest(req.method, req.path, req.headers, body, req.body, time.monotonic())
        rec.request_id, rec.query = new_id("req_"), req.query
        with self._lock:
            self._requests.append(rec)
        self.in_flight += 1
        if self.in_flight > self.max_in_flight:
            self.max_in_flight = self.in_flight
        try:
            return await self._dispatch(req, rec, reader, writer)
        finally:
            self.in_flight -= 1
            rec.finished_at = time.monotonic()

    async def _dispatch(
        self,
        req: HTTPRequest,
        rec: RecordedRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        gate = self._gate
        if gate is not None:  # FakeServer.hold(): wait for release()
            await gate.wait()
        if self.latency > 0:
            await self.sleep(self.latency)
        if self.require_auth and not self._authorized(req.headers.get("authorization", "")):
            msg = "Incorrect API key provided. You can find your API key in the HolySheep dashboard."
            return await self._write(
                req, rec, writer, error_response(401, msg, "invalid_api_key", "invalid_api_key")
            )
        route = normalize_path(req.path) if req.path.startswith("/v1/") else ""
        handler = self._route(req.method, route)
        if handler is None:
            if _ROUTES.get(route, req.method) != req.method:
                msg = f"Method {req.method} is not allowed for {req.path}."
                return await self._write(req, rec, writer, error_response(405, msg, "invalid_request_error"))
            msg = f"Unknown request URL: {req.method} {req.path}. Please check the URL and method."
            return await self._write(
                req, rec, writer, error_response(404, msg, "invalid_request_error", "unknown_url")
            )
        fault = rec.fault = self.fault_plan.next(route)
        if fault is not None:
            if fault.kind == "reset":
                reset_connection(writer)
                return False
            if fault.kind == "stall":  # until stop(), the client hangs up, or `seconds` pass
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(_until_eof(reader), fault.seconds)
                    return False
            elif fault.kind in ("status", "unauthorized", "quota_exhausted"):
                return await self._write(req, rec, writer, fault_response(fault))
        limited = self._rate_limit() if self.rpm_limit and route == "/chat/completions" else None
        if limited is not None and limited[0] is not None:
            return await self._write(req, rec, writer, limited[0])
        try:
            result = handler(rec)
        except Exception as exc:
            result = error_response(500, f"FakeServer handler raised {exc!r}", "server_error")
        if fault is not None:
            result = apply_fault(fault, result)
        if limited is not None and isinstance(result, Response):
            result = Response(result.status, result.body, {**result.headers, **limited[1]}, result.content_type,
                              result.cut)
        return await self._write(req, rec, writer, result)

    def _rate_limit(self) -> tuple[Response | None, dict[str, str]]:
        """A token bucket of ``rpm_limit / 60`` per second holding one second's worth: a 429 (with
        ``retry-after-ms``) when empty, and OpenAI-style ``x-ratelimit-*`` headers either way."""
        assert self.rpm_limit
        rate = self.rpm_limit / 60.0
        now = time.monotonic()
        self._rpm_level = min(rate, self._rpm_level + (now - self._rpm_stamp) * rate)
        self._rpm_stamp = now
        ok = self._rpm_level >= 1.0
        if ok:
            self._rpm_level -= 1.0
        reset_ms = int(max(0.0, rate - self._rpm_level) / rate * 1000)
        headers = {"x-ratelimit-limit-requests": str(int(self.rpm_limit)),
                   "x-ratelimit-remaining-requests": str(int(self._rpm_level)),
                   "x-ratelimit-reset-requests": f"{reset_ms}ms"}
        if ok:
            return None, headers
        wait_ms = int((1.0 - self._rpm_level) / rate * 1000) + 1
        response = error_response(429, "Rate limit reached for requests per minute.", "requests", "rate_limit_exceeded")
        return Response(429, response.body, {**headers, "retry-after-ms": str(wait_ms)}), headers

    def _authorized(self, header: str) -> bool:
        scheme, _, token = header.partition(" ")
        return scheme.lower() == "bearer" and token.strip() == self.api_key

    def _route(self, method: str, route: str) -> Endpoint | None:
        builtin: Endpoint | None = None
        if method == "POST" and route == "/chat/completions":
            builtin = self._chat
        elif method == "GET" and route == "/models":
            builtin = lambda rec: Response(200, models_list(self.models))  # noqa: E731
        elif method == "GET" and route.startswith("/models/"):
            builtin = lambda rec: model_endpoint(route[len("/models/") :], self.models)  # noqa: E731
        elif method == "GET" and route == "/quota":
            builtin = self._quota
        elif method == "POST" and route == "/embeddings":
            builtin = self._embeddings
        elif method == "POST" and route in ("/completions", "/responses"):
            builtin = self._completions if route == "/completions" else self._responses
        custom = self._handlers.get((method, route))
        if custom is None:
            return builtin

        def call_custom(rec: RecordedRequest) -> Response | StreamReply:
            result = custom(rec)
            if result is None:
                if builtin is None:
                    return error_response(
                        404, f"Unknown request URL: {method} {rec.path}.", "invalid_request_error"
                    )
                return builtin(rec)
            return result if isinstance(result, (Response, StreamReply)) else Response(200, dict(result))

        return call_custom

    # built-in endpoints
    def _chat(self, rec: RecordedRequest) -> Response | StreamReply:
        exhausted = (
            self.enforce_quota and self.quota_limit is not None and self.quota_used >= self.quota_limit
        )
        result, tokens = chat_endpoint(
            rec.body,
            self.reply,
            models=self.models,
            strict_models=self.strict_models,
            words_per_chunk=self.words_per_chunk,
            quota_exhausted=exhausted,
        )
        self.quota_used += tokens
        return result

    def _completions(self, rec: RecordedRequest) -> Response | StreamReply:
        from ._completions import completions_endpoint

        result, tokens = completions_endpoint(rec.body, self.reply, models=self.models,
                                              strict_models=self.strict_models, words_per_chunk=self.words_per_chunk)
        self.quota_used += tokens
        return result

    def _responses(self, rec: RecordedRequest) -> Response | StreamReply:
        from ._responses_api import responses_endpoint

        result, tokens = responses_endpoint(rec.body, self.reply, models=self.models,
                                            strict_models=self.strict_models, words_per_chunk=self.words_per_chunk)
        self.quota_used += tokens
        return result

    def _embeddings(self, rec: RecordedRequest) -> Response:
        from ._embeddings import embeddings_endpoint

        result, tokens = embeddings_endpoint(rec.body, models=self.models, strict_models=self.strict_models)
        self.quota_used += tokens
        return result

    def _quota(self, rec: RecordedRequest) -> Response:
        if self.quota_limit is None:
            return error_response(404, "This server does not report a quota.", "invalid_request_error")
        return Response(200, quota_object(self.quota_limit, self.quota_used, self.quota_reset_at))

    async def _write(
        self,
        req: HTTPRequest,
        rec: RecordedRequest,
        writer: asyncio.StreamWriter,
        result: Response | StreamReply,
    ) -> bool:
        headers = [("x-request-id", rec.request_id), *result.headers.items()]
        keep, cut = req.keep_alive, result.cut
        if isinstance(result, Response):
            data, content_type = result.encode()
            rec.status = result.status
            await write_body(writer, result.status, data, content_type, headers, keep_alive=keep, cut=cut)
        else:
            rec.status = 200
            delay = self.stream_chunk_delay
            await write_sse(writer, result.events, headers, keep_alive=keep, cut=cut, delay=delay,
                            paced=result.paced, sleep=self.sleep)
        return keep and not cut
