"""Structured outputs: typed records out of free text, for one call, a stream and a whole batch.

Offline, an in-process FakeServer answers from each request's own JSON schema; it breaks the schema for
some documents, so the re-asks (``max_repairs``) and the typed failures show. With ``HOLYSHEEP_BASE_URL``
set, the requests go to that server.

    python examples/extract_batch.py
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel

MODEL = "deepseek-v3.2"


# --8<-- [start:models]
class LineItem(BaseModel):
    description: str
    amount: float


class Invoice(BaseModel):
    vendor: str
    currency: Literal["USD", "EUR"]
    total: float
    due_date: str | None = None  # optional: sent as nullable, since strict mode requires every field
    items: list[LineItem]
# --8<-- [end:models]


DOCUMENTS = [f"Invoice {i} from Acme Corp: 2 widgets at 9.50 USD, due 2025-07-01." for i in range(8)]
DOCUMENTS[3] = "Invoice 3 (smudged scan): ..."        # the fake model gets it right only when re-asked
DOCUMENTS[6] = "Invoice 6 (unreadable)"               # the fake model never gets it right


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str | None, str | None]]:
    """(base_url, api_key): from the environment, or a local FakeServer that answers from the schema."""
    if os.environ.get("HOLYSHEEP_BASE_URL"):
        yield None, None
        return
    from holysheep.testing import FakeServer, ScriptedReply, schema_reply

    valid = schema_reply(overrides={"vendor": "Acme Corp", "currency": "USD", "total": 19.0})
    broken = schema_reply(violate=True)

    def answer(body: dict[str, Any]) -> ScriptedReply:
        messages = body["messages"]
        text = str(messages[0]["content"])
        reasked = len(messages) > 1  # a re-ask adds the model's reply and the validation errors
        if "unreadable" in text or ("smudged" in text and not reasked):
            return broken(body)
        return valid(body)

    with FakeServer(reply=answer, latency=0.01) as server:
        yield server.url, server.api_key


def main(base_url: str | None, api_key: str | None) -> None:
    from holysheep import Client, ParsedChatCompletion, StructuredOutputError

    with Client(base_url=base_url, api_key=api_key) as client:
        # --8<-- [start:parse]
        completion: ParsedChatCompletion[Invoice] = client.chat.completions.parse(
            model=MODEL,
            messages=[{"role": "user", "content": DOCUMENTS[0]}],
            response_format=Invoice,
        )
        invoice = completion.choices[0].message.parsed  # an Invoice (None only for a tool call)
        assert invoice is not None
        print(f"{invoice.vendor}: {invoice.total} {invoice.currency}, {len(invoice.items)} item(s)")
        # --8<-- [end:parse]

        # --8<-- [start:errors]
        try:
            client.chat.completions.parse(model=MODEL, messages=[{"role": "user", "content": DOCUMENTS[6]}],
                                          response_format=Invoice)
        except StructuredOutputError as err:
            print("not an Invoice:", err.raw_text[:60], "|", err.validation_error.error_count()
                  if err.validation_error else 0, "error(s)")
        # --8<-- [end:errors]

        # --8<-- [start:stream]
        with client.chat.completions.parse(model=MODEL, messages=[{"role": "user", "content": DOCUMENTS[1]}],
                                           response_format=Invoice, stream=True) as stream:
            for _chunk in stream:
                pass  # stream.text is the partial JSON so far; nothing is validated until the end
            streamed: ParsedChatCompletion[Invoice] = stream.get_final_completion()
        print("streamed:", streamed.choices[0].message.parsed)
        # --8<-- [end:stream]

        # --8<-- [start:batch]
        results = client.chat.completions.batch(DOCUMENTS, model=MODEL, response_format=Invoice, max_repairs=1)
        invoices: list[Invoice] = [r.parsed for r in results if r.ok]
        print(f"{len(invoices)}/{len(DOCUMENTS)} invoices extracted, total "
              f"{sum(i.total for i in invoices):.2f}; cost ${results.stats.cost_usd:.6f}")
        for r in results.failed:  # the item's typed error; the other items carried on
            print(f"document {r.index} failed: {type(r.error).__name__}")
        # --8<-- [end:batch]

        # response_format takes what parse() takes: a model, another type pydantic understands, or a mapping
        per_doc = client.chat.completions.batch(DOCUMENTS[:2], model=MODEL, response_format=list[LineItem])
        line_items: list[list[LineItem]] = [r.parsed for r in per_doc if r.ok]
        print("line items per document:", [len(items) for items in line_items])

        # create() and run_tools() take the same response_format types (sent as the strict schema; not parsed)
        raw = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": DOCUMENTS[0]}],
                                             response_format=list[LineItem])
        print("create(response_format=list[LineItem]):", (raw.choices[0].message.content or "")[:40])
        def vendor_of(invoice_number: int) -> str:
            """The vendor on file for an invoice number."""
            return "Acme Corp"

        envelope: Mapping[str, Any] = MappingProxyType({"type": "json_object"})  # any mapping, sent as JSON
        ran = client.chat.completions.run_tools(model=MODEL, messages=[{"role": "user", "content": DOCUMENTS[0]}],
                                                tools=[vendor_of], response_format=envelope)
        print("run_tools(response_format=<read-only mapping>):", (ran.content or "")[:40])


if __name__ == "__main__":
    with endpoint() as (url, key):
        main(url, key)
