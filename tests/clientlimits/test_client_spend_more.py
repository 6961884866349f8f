"""The client-wide cap on streams, the Responses API, threads of a sync client and tasks of an async one."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import respx

from holysheep import AsyncClient, Client, SpendCapError

KEY = "hs_TestKey0123456789abcdefWXYZ"
BASE = "https://api.holysheep.ai/v1"
PRICES = {"m": (1.0, 2.0)}
MESSAGES = [{"role": "user", "content": "Hi"}]
WORST = (45 * 1.0 + 10 * 2.0) / 1e6  # create(model="m", messages=MESSAGES, max_tokens=10), as in test_client_spend


def completion(prompt: int, completion_tokens: int) -> dict[str, object]:
    return {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                      "total_tokens": prompt + completion_tokens}}


CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}


USAGE = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
         "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


class Pieces(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that arrives in pieces: the stream's first event is read before the rest arrives."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def event(body: object) -> bytes:
    return f"data: {json.dumps(body)}\n\n".encode()


def test_a_stream_settles_when_it_ends(kind: str, respx_mock: respx.MockRouter) -> None:
    """It holds its worst case while it is read; at its end the usage it carried counts, or, without one, the whole
    reservation; one closed before its end counts its whole reservation then."""
    bodies = iter([(event(CHUNK), event(USAGE) + b"data: [DONE]\n\n"), (event(CHUNK), b"data: [DONE]\n\n"),
                   (event(CHUNK), event(USAGE) + b"data: [DONE]\n\n")])
    respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=lambda request: httpx.Response(
        200, stream=Pieces(*next(bodies)), headers={"content-type": "text/event-stream"}))

    def sync(client: Client) -> list[tuple[float | None, float]]:
        budget = client._budget
        assert budget is not None
        seen = []
        for _ in range(2):
            stream = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10, stream=True)
            seen.append((client.spent_usd, budget.reserved_usd))
            assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Hi"
            seen.append((client.spent_usd, budget.reserved_usd))
        with client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10, stream=True) as stream:
            next(iter(stream))  # the first chunk only
        seen.append((client.spent_usd, budget.reserved_usd))
        return seen

    async def run_async(client: AsyncClient) -> list[tuple[float | None, float]]:
        budget = client._budget
        assert budget is not None
        seen = []
        for _ in range(2):
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10, stream=True)
            seen.append((client.spent_usd, budget.reserved_usd))
            assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == "Hi"
            seen.append((client.spent_usd, budget.reserved_usd))
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10, stream=True)
        async with stream:
            await stream.__anext__()
        seen.append((client.spent_usd, budget.reserved_usd))
        return seen

    from tests.clientlimits.test_client_spend import call

    seen = call(kind, sync if kind == "sync" else run_async, max_cost_usd=1.0, prices=PRICES)
    used = (5 * 1.0 + 2 * 2.0) / 1e6
    assert seen == [(0.0, WORST), (used, 0.0),  # the usage it carried
                    (used, WORST), (used + WORST, 0.0),  # no usage: the reservation
                    (used + WORST + WORST, 0.0)]  # closed before its end: the reservation


def test_responses_create_is_capped_from_max_output_tokens(respx_mock: respx.MockRouter) -> None:
    reply = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
             "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": "hi", "annotations": []}]}],
             "usage": {"input_tokens": 4, "output_tokens": 3, "total_tokens": 7}}
    route = respx_mock.post(f"{BASE}/responses").respond(200, json=reply)
    with Client(api_key=KEY, max_cost_usd=0.001, prices=PRICES) as client:
        assert client.responses.create(model="m", input="Hi", max_output_tokens=10).output_text == "hi"
        assert client.spent_usd == (4 * 1.0 + 3 * 2.0) / 1e6
        try:
            client.responses.create(model="m", input="Hi", max_output_tokens=1000)  # up to $0.002014
        except SpendCapError as error:
            assert error.worst_case_usd == (14 * 1.0 + 1000 * 2.0) / 1e6  # {"input":"Hi"}: 14 bytes
        else:
            raise AssertionError("not refused")
    assert route.call_count == 1


def test_threads_of_a_sync_client_never_pass_the_cap(respx_mock: respx.MockRouter) -> None:
    """Room for 3 worst cases, each reply billed its worst case: of 8 threads exactly 3 are sent; the others wait
    while requests are in flight, then are refused once nothing in flight can free room."""
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(45, 10))
    outcomes: list[str] = []
    lock = threading.Lock()
    with Client(api_key=KEY, max_cost_usd=3 * WORST, prices=PRICES) as client:
        def one() -> None:
            try:
                client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)
                outcome = "sent"
            except SpendCapError:
                outcome = "refused"
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=one) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["refused"] * 5 + ["sent"] * 3
        assert client.spent_usd == 3 * WORST
    assert route.call_count == 3


def test_an_async_request_waits_for_room_that_a_reply_frees(respx_mock: respx.MockRouter) -> None:
    """Room for one worst case and a half: the second of two concurrent requests waits for the first, which is
    billed $0.000009 of the $0.000065 it held, and then fits."""
    gate = asyncio.Event()
    sent: list[int] = []

    async def reply(request: httpx.Request) -> httpx.Response:
        sent.append(len(sent))
        if len(sent) == 1:
            await gate.wait()
        return httpx.Response(200, json=completion(5, 2))

    respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=reply)

    async def main() -> tuple[float | None, list[int]]:
        async with AsyncClient(api_key=KEY, max_cost_usd=1.5 * WORST, prices=PRICES) as client:
            first = asyncio.ensure_future(client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10))
            while not sent:
                await asyncio.sleep(0)
            second = asyncio.ensure_future(client.chat.completions.create(model="m", messages=MESSAGES,
                                                                          max_tokens=10))
            for _ in range(20):
                await asyncio.sleep(0)
            seen = list(sent)  # the second is waiting for room: not sent
            gate.set()
            await asyncio.gather(first, second)
            return client.spent_usd, seen

    spent, seen = asyncio.run(main())
    assert seen == [0]
    assert spent == 2 * 9e-6


def test_tasks_of_an_async_client_never_pass_the_cap(respx_mock: respx.MockRouter) -> None:
    """`test_threads_of_a_sync_client_never_pass_the_cap` with 8 tasks of one `AsyncClient` on one loop."""
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(45, 10))

    async def main() -> tuple[list[str], float | None]:
        async with AsyncClient(api_key=KEY, max_cost_usd=3 * WORST, prices=PRICES) as client:
            async def one() -> str:
                try:
                    await client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)
                except SpendCapError:
                    return "refused"
                return "sent"

            outcomes = await asyncio.gather(*(one() for _ in range(8)))
            return sorted(outcomes), client.spent_usd

    outcomes, spent = asyncio.run(main())
    assert outcomes == ["refused"] * 5 + ["sent"] * 3
    assert spent == 3 * WORST
    assert route.call_count == 3
