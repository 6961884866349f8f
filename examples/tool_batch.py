"""A batch of agents: one tool loop per prompt, every request admitted through the batch's limits.

The tools are typed: ``get_weather`` is a plain function (the batch wraps it with ``function_tool``) and
``to_fahrenheit`` is a ``function_tool`` with its own name. Offline, an in-process FakeServer plays the
model from a script: it calls the tools (two at once for one prompt, one after the other for another) and
answers with their results; one prompt never stops calling tools, so its item ends with ``MaxTurnsError``
while the others carry on. With ``HOLYSHEEP_BASE_URL`` set, the requests go to that server.

    python examples/tool_batch.py
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Literal

MODEL = "deepseek-v3.2"
TEMPERATURES_C = {"Paris": 18.0, "Tokyo": 24.5, "Lima": 16.0, "Oslo": 7.0}


# --8<-- [start:tools]
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    """Current weather for a city.

    Args:
        city: The city name, e.g. "Paris".
        unit: Temperature unit.
    """
    celsius = TEMPERATURES_C.get(city, 20.0)
    degrees = celsius if unit == "c" else celsius * 9 / 5 + 32
    return f"{degrees:g} degrees {unit.upper()} in {city}"


def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from Celsius to Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return round(celsius * 9 / 5 + 32, 1)
# --8<-- [end:tools]


PROMPTS = [
    "What's the weather in Paris, in Fahrenheit?",  # two turns of tool calls, then the answer
    "Compare the weather in Tokyo and Lima.",        # two calls in one turn, run concurrently
    "Keep checking the weather in Oslo.",            # never stops calling tools: MaxTurnsError
]


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str | None, str | None]]:
    """(base_url, api_key): from the environment, or a local FakeServer that plays the model from a script."""
    if os.environ.get("HOLYSHEEP_BASE_URL"):
        yield None, None
        return
    from holysheep.testing import FakeServer, Script

    def weather(city: str) -> dict[str, object]:
        return {"name": "get_weather", "arguments": {"city": city, "unit": "c"}}

    script = Script([
        {"match": "Paris", "replies": [
            {"tool_calls": [weather("Paris")]},
            {"tool_calls": [{"name": "to_fahrenheit", "arguments": {"celsius": 18.0}}]},
            "Paris: {tool_results} F."]},
        {"match": "Tokyo and Lima", "replies": [
            {"tool_calls": [weather("Tokyo"), weather("Lima")]},
            "Tokyo vs Lima: {tool_results}."]},
        {"match": "Oslo", "replies": [{"tool_calls": [weather("Oslo")]}]},  # the last reply repeats
    ])
    with FakeServer(reply=script, latency=0.01) as server:
        yield server.url, server.api_key


def main(base_url: str | None, api_key: str | None) -> None:
    from holysheep import Client, MaxTurnsError, function_tool

    with Client(base_url=base_url, api_key=api_key) as client:
        # --8<-- [start:batch]
        to_fahrenheit = function_tool(celsius_to_fahrenheit, name="to_fahrenheit")
        results = client.chat.completions.batch(
            PROMPTS,
            model=MODEL,
            tools=[get_weather, to_fahrenheit],  # a plain function and a function_tool: typed for mypy --strict
            max_turns=3,                          # requests per item; an item still calling tools fails alone
            concurrency=2,
        )
        for r in results:
            if r.ok:
                assert r.response is not None
                print(f"[{r.index}] {r.response.choices[0].message.content} ({r.attempts} requests)")
            else:
                print(f"[{r.index}] failed: {type(r.error).__name__}")
                if isinstance(r.error, MaxTurnsError):  # the run so far is on the error
                    print(f"    {len(r.error.tool_calls)} tool call(s) ran, "
                          f"{len(r.error.messages)} messages in the transcript")
            for call in r.tool_calls:  # each with its result (and duration_s, turn, error)
                print(f"    turn {call.turn}: {call.name}({call.arguments}) -> {call.result}")
        print(f"{results.stats.succeeded}/{len(PROMPTS)} agents finished in {results.stats.requests} requests")
        # --8<-- [end:batch]


if __name__ == "__main__":
    with endpoint() as (url, key):
        main(url, key)
