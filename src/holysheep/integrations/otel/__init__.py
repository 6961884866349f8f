"""OpenTelemetry traces and metrics for holysheep, per the GenAI semantic conventions
(`pip install 'holysheep[otel]'`: needs only ``opentelemetry-api``).

```python
from holysheep.integrations.otel import HolySheepInstrumentor

HolySheepInstrumentor().instrument()          # the global tracer and meter providers
```

Or trace one client: ``Client(hooks=[OpenTelemetryHooks(tracer_provider=tp)])``. See
`docs/observability.md`. Importing this module imports ``opentelemetry``; `import holysheep` never does.
"""

from __future__ import annotations

from holysheep.integrations.otel._attributes import CAPTURE_ENV
from holysheep.integrations.otel._hooks import COST_METRIC, OpenTelemetryHooks
from holysheep.integrations.otel._instrumentor import HolySheepInstrumentor

__all__ = ["CAPTURE_ENV", "COST_METRIC", "HolySheepInstrumentor", "OpenTelemetryHooks"]
