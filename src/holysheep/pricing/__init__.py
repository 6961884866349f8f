"""API prices per model, the cost of a completion, and break-even against self-hosting.

Standard library only, so ``resp.cost`` can import it lazily at almost no cost::

    from holysheep.pricing import price_for, cost_of, break_even
    price_for("gpt-4.1").output_per_m          # 8.0
    cost_of(resp)                               # USD, or None when the model has no price
"""

from ._break_even import ApiComparison, BreakEven, SelfHostOption, break_even, compare_api_costs
from ._catalog import PRICE_FILE_ENV, ModelPrice, load_prices, price_for, prices, reset_prices, set_price
from ._cost import cost_of

__all__ = [
    "PRICE_FILE_ENV",
    "ApiComparison",
    "BreakEven",
    "ModelPrice",
    "SelfHostOption",
    "break_even",
    "compare_api_costs",
    "cost_of",
    "load_prices",
    "price_for",
    "prices",
    "reset_prices",
    "set_price",
]
