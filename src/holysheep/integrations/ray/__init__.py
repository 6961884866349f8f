"""Batch inference on Ray Data (`pip install 'holysheep[ray]'`).

```python
import ray
from holysheep.integrations.ray import build_processor

processor = build_processor(model="deepseek-v3.2", replicas=8, concurrency_per_replica=32, rpm=10_000,
                            prompt_column="prompt", max_tokens=256)
out = processor(ray.data.read_parquet("prompts/"))   # a lazy ray.data.Dataset
out.write_parquet("results/")
```

See `docs/scale-out.md`. Importing this module imports Ray; `import holysheep` never does.
"""

from __future__ import annotations

from holysheep.integrations.ray._config import Secret
from holysheep.integrations.ray._limiter import ClusterRateLimiter, Lease
from holysheep.integrations.ray._processor import Processor, build_processor
from holysheep.integrations.ray._rows import OUTPUT_COLUMNS

__all__ = ["OUTPUT_COLUMNS", "ClusterRateLimiter", "Lease", "Processor", "Secret", "build_processor"]
