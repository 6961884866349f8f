"""``HolySheepInstrumentor``: the ``opentelemetry-instrumentation`` pattern over holysheep's hooks."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

from holysheep._core.hooks import register_global_hooks, unregister_global_hooks
from holysheep._core.log import get_logger
from holysheep.integrations.otel._hooks import OpenTelemetryHooks

__all__ = ["HolySheepInstrumentor"]

_logger = get_logger("holysheep.integrations.otel")


class HolySheepInstrumentor:
    """Traces and measures every holysheep client in the process (one instance per process, as
    ``BaseInstrumentor`` does).

    ```python
    from holysheep.integrations.otel import HolySheepInstrumentor
    HolySheepInstrumentor().instrument(tracer_provider=tp, meter_provider=mp)
    ```

    Registered under the ``opentelemetry_instrumentor`` entry point, so ``opentelemetry-instrument python
    app.py`` turns it on. Clients created before ``instrument()`` are traced too; ``uninstrument()`` stops it.
    """

    _instance: HolySheepInstrumentor | None = None
    _lock = threading.Lock()
    _hooks: OpenTelemetryHooks | None = None

    def __new__(cls, *args: object, **kwargs: object) -> HolySheepInstrumentor:
        with cls._lock:
            if cls._instance is None:
                cls._instance = super().__new__(cls)
            return cls._instance

    def instrumentation_dependencies(self) -> Collection[str]:
        """The packages this instrumentation needs (the ``opentelemetry-instrumentation`` contract)."""
        return ("holysheep",)

    @property
    def is_instrumented_by_opentelemetry(self) -> bool:
        """Whether ``instrument()`` is in force."""
        return self._hooks is not None

    @property
    def hooks(self) -> OpenTelemetryHooks | None:
        """The hooks in force (None when not instrumented)."""
        return self._hooks

    def instrument(self, **kwargs: Any) -> None:
        """Start tracing: ``tracer_provider=``, ``meter_provider=`` (default: the global ones) and
        ``capture_message_content=`` (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
        A second call while instrumented only warns, as ``BaseInstrumentor`` does."""
        if self._hooks is not None:
            _logger.warning("Attempting to instrument while already instrumented")
            return
        hooks = OpenTelemetryHooks(tracer_provider=kwargs.get("tracer_provider"),
                                   meter_provider=kwargs.get("meter_provider"),
                                   capture_message_content=kwargs.get("capture_message_content"))
        self._hooks = hooks
        register_global_hooks(hooks)

    def uninstrument(self, **kwargs: object) -> None:
        """Stop tracing (spans of calls already running still end)."""
        hooks, self._hooks = self._hooks, None
        if hooks is None:
            _logger.warning("Attempting to uninstrument while already uninstrumented")
            return
        unregister_global_hooks(hooks)
