"""The hook API: `Hooks` to subclass and the events its methods receive (see `docs/observability.md`).

```python
from holysheep import Client
from holysheep.hooks import Hooks, ResponseEvent

class Retries(Hooks):
    def on_response(self, event: ResponseEvent) -> None:
        if event.outcome == "retry":
            print("retrying after", type(event.error).__name__)

client = Client(hooks=[Retries()])
```
"""

from __future__ import annotations

from holysheep._core.hooks import (
    BatchContext,
    BatchEvent,
    BatchItemEvent,
    BodyEndEvent,
    CallContext,
    Hooks,
    RequestEvent,
    ResponseEvent,
    StreamEndEvent,
    StreamEvent,
    ToolEvent,
)

__all__ = [
    "BatchContext",
    "BatchEvent",
    "BatchItemEvent",
    "BodyEndEvent",
    "CallContext",
    "Hooks",
    "RequestEvent",
    "ResponseEvent",
    "StreamEndEvent",
    "StreamEvent",
    "ToolEvent",
]
