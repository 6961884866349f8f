"""Errors and retries: what each failure raises, and what the error carries.

Offline: each case runs against its own in-process FakeServer with scripted faults (or raises before any I/O).

    python examples/errors.py
"""

from __future__ import annotations


def main() -> None:
    # --8<-- [start:before_io]
    from holysheep import Client, InvalidAPIKeyError, InvalidRequestError

    try:
        # for api.holysheep.ai (the default base URL) a key must be hs_ + 16 or more characters
        Client(api_key="sk-not-a-holysheep-key", base_url="https://api.holysheep.ai/v1")
    except InvalidAPIKeyError as e:
        print("InvalidAPIKeyError:", e)

    client = Client(api_key="hs_" + "0" * 24)
    try:
        client.chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": "Hi"}],
                                       temperature=3)
    except InvalidRequestError as e:  # raised before anything is sent
        print("InvalidRequestError:", e.field, "-", e)
    # --8<-- [end:before_io]

    # --8<-- [start:retried]
    from holysheep.testing import FakeServer, Fault  # a local test server that fails on cue

    with FakeServer(faults=[Fault.status(503), Fault.status(429, retry_after=0.05)]) as server:
        client = Client(base_url=server.url, api_key=server.api_key, initial_retry_delay=0.01,
                        on_retry=lambda attempt, err, delay: print(f"  retry {attempt} in {delay:.2f} s: {err}"))
        resp = client.chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": "Hi"}])
        print("succeeded after", resp.retries_taken, "retries; statuses seen:", [r.status for r in server.requests])
    # --8<-- [end:retried]

    # --8<-- [start:status]
    from holysheep import APIStatusError, AuthenticationError, RateLimitError

    with FakeServer() as server:
        client = Client(base_url=server.url, api_key="hs_wrong_key_0123456789")
        try:
            client.models.list()
        except AuthenticationError as e:  # 401: never retried, exactly one request
            print("AuthenticationError:", e.status_code, e.request_id, "requests:", len(server.requests))

    with FakeServer(faults=[Fault.status(429, retry_after=0.01)] * 3) as server:
        client = Client(base_url=server.url, api_key=server.api_key, max_retries=2)
        try:
            client.chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": "Hi"}])
        except RateLimitError as e:
            print("RateLimitError after", e.retries_taken, "retries; retry_after", e.retry_after, "type", e.type)
        except APIStatusError as e:  # any other HTTP error status
            print(type(e).__name__, e.status_code, e.body)
    # --8<-- [end:status]

    # --8<-- [start:stream]
    from holysheep import StreamInterruptedError

    with FakeServer(reply="one two three four five six", faults=[Fault.stream_cut(after_events=3)]) as server:
        client = Client(base_url=server.url, api_key=server.api_key)
        try:
            with client.chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": "Hi"}],
                                                stream=True) as stream:
                for _chunk in stream:
                    pass
        except StreamInterruptedError as e:  # never retried: part of the answer was already seen
            print("StreamInterruptedError; partial_text =", repr(e.partial_text))
    # --8<-- [end:stream]


if __name__ == "__main__":
    main()
