"""The client-wide cap on streams, the Responses API, threads of a sync client and tasks of an async one."""

from __future__ import annotations

import asyncio
import json
import threading

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
SSE = f"data: {json.dumps(CHUNK)}\n\ndata: [DONE]\n\n".encode()


def test_a_stream_counts_its_whole_reservation(respx_mock: respx.MockRouter) -> None:
    """Its usage comes after the call returns: the worst case it reserved is what counts."""
    respx_mock.post(f"{BASE}/chat/completions").respond(200, content=SSE,
                                                         headers={"content-type": "text/event-stream"})
    with Client(api_key=KEY, max_cost_usd=1.0, prices=PRICES) as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream) == "Hi"
        assert client.spent_usd == WORST
        assert client._budget is not None and client._budget.reserved_usd == 0.0


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
