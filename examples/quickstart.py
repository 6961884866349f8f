"""Quickstart: one chat completion, the models list, the quota and a small batch.

With ``HOLYSHEEP_BASE_URL`` set (and ``HOLYSHEEP_API_KEY`` where that server needs one) this talks to that
server; otherwise it starts an in-process ``holysheep.testing.FakeServer`` and runs offline.

    python examples/quickstart.py
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str | None, str | None]]:
    """(base_url, api_key): from the environment, or a local FakeServer that echoes the prompt."""
    if os.environ.get("HOLYSHEEP_BASE_URL"):
        yield None, None  # the client reads HOLYSHEEP_BASE_URL and HOLYSHEEP_API_KEY itself
        return
    from holysheep.testing import FakeServer

    with FakeServer() as server:
        os.environ["HOLYSHEEP_BASE_URL"], os.environ["HOLYSHEEP_API_KEY"] = server.url, server.api_key
        try:
            yield server.url, server.api_key
        finally:
            del os.environ["HOLYSHEEP_BASE_URL"], os.environ["HOLYSHEEP_API_KEY"]


def main() -> None:
    with endpoint():
        # --8<-- [start:main]
        from holysheep import Client

        client = Client()  # reads HOLYSHEEP_API_KEY (and HOLYSHEEP_BASE_URL, when set)
        resp = client.chat.completions.create(
            model="deepseek-v3.2",
            messages=[{"role": "user", "content": "Say hello in five words."}],
            temperature=0.7,
            max_tokens=50,
        )
        print(resp.choices[0].message.content)
        print("tokens:", resp.usage.total_tokens if resp.usage else None, "request id:", resp.request_id)
        print("models:", [m.id for m in client.models.list()][:5])
        print("quota remaining:", client.quota.retrieve().remaining)
        # --8<-- [end:main]

        client.close()

        # --8<-- [start:batch]
        with Client() as client:  # a closed client sends nothing, not even a batch (ClientClosedError)
            results = client.chat.completions.batch(
                ["Name a colour.", "Name a fruit.", "Name a planet."],
                model="deepseek-v3.2", max_tokens=20, concurrency=8,
            )
        for r in results:  # one result per prompt, in input order
            print(r.index, r.ok, r.response.choices[0].message.content if r.response else r.error)
        print(results.summary())
        # --8<-- [end:batch]


if __name__ == "__main__":
    main()
