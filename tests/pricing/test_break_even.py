from __future__ import annotations

from types import SimpleNamespace

import pytest

from holysheep._exceptions import InvalidRequestError
from holysheep.pricing import break_even, compare_api_costs

# A made-up replica: $2/h, 1,000 decode tok/s, 10,000 prefill tok/s.
OPT = SimpleNamespace(price_per_hour=2.0, decode_tokens_per_s=1000.0, prefill_tokens_per_s=10_000.0, label="test box")


def test_api_cheaper_at_every_volume() -> None:
    be = break_even(api_model="deepseek-v3.2", option=OPT, tokens_per_day=10_000_000)
    assert be.api_price_per_m == 0.42
    assert be.capacity_tokens_per_day == 43_200_000  # 86,400 s x 0.5 x 1,000 tok/s
    assert be.api_cost_per_day == pytest.approx(4.20)
    assert be.self_host_cost_per_day == 48.0
    assert be.self_host_cost_per_m == pytest.approx(48 / 43.2)
    assert be.break_even_tokens_per_day is None  # 48 / 0.42e-6 = 114M > 43.2M capacity
    assert be.cheaper == "api"
    assert be.annual_savings_self_host == pytest.approx((4.20 - 48) * 365)
    assert "No break-even" in be.arithmetic and "test box" in str(be)


def test_break_even_exists_against_a_dearer_api() -> None:
    be = break_even(api_model="gpt-4.1", option=OPT, tokens_per_day=10_000_000)
    assert be.break_even_tokens_per_day == pytest.approx(6_000_000)  # $48 / $8 per M
    assert be.cheaper == "self-host"
    assert be.annual_savings_self_host == pytest.approx((80 - 48) * 365)
    assert "Break-even = 24 h x $2.00 / $8.000 x 1e6 = 6,000,000 tokens/day" in be.arithmetic
    d = be.to_dict()
    assert d["cheaper"] == "self-host" and d["replicas"] == 1


def test_replicas_scale_with_volume() -> None:
    be = break_even(api_model="gpt-4.1", option=OPT, tokens_per_day=100_000_000)
    assert be.replicas == 3 and be.self_host_cost_per_day == 144.0


def test_input_fraction_uses_prefill_and_split_prices() -> None:
    be = break_even(api_model="gpt-4.1", option=OPT, tokens_per_day=10_000_000, input_fraction=0.75, utilization=1)
    assert be.api_price_per_m == 3.5
    assert be.capacity_tokens_per_day == pytest.approx(86_400 / (0.75 / 10_000 + 0.25 / 1000))


def test_bad_arguments() -> None:
    with pytest.raises(InvalidRequestError, match="utilization"):
        break_even(api_model="gpt-4.1", option=OPT, tokens_per_day=1, utilization=0)
    with pytest.raises(InvalidRequestError, match="tokens_per_day"):
        break_even(api_model="gpt-4.1", option=OPT, tokens_per_day=-1)
    unpriced = SimpleNamespace(price_per_hour=None, decode_tokens_per_s=10.0, prefill_tokens_per_s=None)
    with pytest.raises(InvalidRequestError, match="price_per_hour"):
        break_even(api_model="gpt-4.1", option=unpriced, tokens_per_day=1)


def test_blog_60k_claim_recomputed() -> None:
    """10M tokens/day, gpt-4.1 vs deepseek-v3.2: $27,667/yr at the blog's own figures, not $60,000+."""
    blended = compare_api_costs("gpt-4.1", "deepseek-v3.2", tokens_per_day=10_000_000)
    assert blended.cost_a_per_day == pytest.approx(80.0)
    assert blended.cost_b_per_day == pytest.approx(4.2)
    assert blended.annual_savings == pytest.approx(27_667.0)
    split = compare_api_costs("gpt-4.1", "deepseek-v3.2", tokens_per_day=10_000_000, input_fraction=0.75)
    assert split.annual_savings == pytest.approx((3.5 - 0.315) * 10 * 365)
    assert max(blended.annual_savings, split.annual_savings) < 60_000
    assert "x 365 = $27,667.00" in str(blended)
