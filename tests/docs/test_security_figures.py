"""The bounds docs/security.md quotes for private state and the egress scrubber are the constants the code reads."""

from __future__ import annotations

import inspect

from holysheep import _egress
from holysheep._engine import key_limits
from holysheep.cache import SQLiteCache

from ._util import ROOT


def test_the_private_state_and_scrubber_bounds_are_the_code_constants() -> None:
    text = (ROOT / "docs" / "security.md").read_text()
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in text.splitlines()
            if line.startswith("| ") and line.count("|") == 4}
    busy = inspect.signature(SQLiteCache).parameters["busy_timeout_s"].default

    def row(start: str) -> str:
        (value,) = [v for k, v in rows.items() if k.startswith(start)]
        return value

    assert row("A key masked only as a whole token") == f"{_egress.GLUED_SECRET_LEN} characters"
    assert row("A key never masked") == f"{_egress.MIN_SECRET_LEN} characters"
    assert row("Keys the egress scrubber remembers") == "every key a live client, copy or call holds"
    assert not hasattr(_egress, "MAX_REMEMBERED")  # no fixed-size memory a live key could fall out of
    assert row("A shared bucket state's lowest rate") == f"{key_limits.FLOOR:.0%}".replace("%", " %")
    assert row("A shared bucket state's deepest debt") == f"{key_limits.MAX_DEBT_S:.0f} s of the learned limit"
    assert row("A shared bucket file left alone") == f"{key_limits.STALE_S:.0f} s"
    assert row("A bucket file nobody used") == "1 day" and "86_400" in inspect.getsource(key_limits._sweep)
    assert row("A cache write waits") == f"{busy:.0f} s"
