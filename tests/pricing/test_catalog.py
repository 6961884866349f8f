from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from holysheep._exceptions import InvalidRequestError, UnknownModelError
from holysheep.pricing import PRICE_FILE_ENV, cost_of, load_prices, price_for, prices, reset_prices, set_price

BLOG = {"deepseek-v3.2": 0.42, "gemini-2.5-flash": 2.50, "gpt-4.1": 8.00, "claude-sonnet-4.5": 15.00}


@pytest.mark.parametrize(("model", "blended"), BLOG.items())
def test_blog_figures_are_recorded_as_blended(model: str, blended: float) -> None:
    p = price_for(model)
    assert p.blended_per_m == blended
    assert p.blended_kind == "blog"
    assert "blended" in p.blended_note
    # each blog figure is the vendor's output price, not an average
    assert p.output_per_m == blended


@pytest.mark.parametrize(
    ("model", "inp", "out"),
    [("deepseek-v3.2", 0.28, 0.42), ("gemini-2.5-flash", 0.30, 2.50), ("gpt-4.1", 2.00, 8.00),
     ("claude-sonnet-4.5", 3.00, 15.00), ("gpt-4o", 2.50, 10.00)],
)
def test_vendor_input_output_prices(model: str, inp: float, out: float) -> None:
    p = price_for(model)
    assert (p.input_per_m, p.output_per_m) == (inp, out)
    assert p.source.startswith("https://") and len(p.as_of) == 10


def test_every_entry_is_dated_and_sourced() -> None:
    for p in prices():
        assert p.source.startswith("https://"), p.model
        assert p.as_of, p.model
        assert p.input_per_m is not None and p.output_per_m is not None


@pytest.mark.parametrize(
    ("alias", "model"),
    [("deepseek-chat", "deepseek-v3.2"), ("claude-sonnet-4-5-20250929", "claude-sonnet-4.5"),
     ("gpt-4.1-2025-04-14", "gpt-4.1"), ("openai/gpt-4.1", "gpt-4.1"), ("GPT-4.1", "gpt-4.1"),
     ("deepseek-ai/DeepSeek-V3.2", "deepseek-v3.2"), ("models/gemini-2.5-flash", "gemini-2.5-flash")],
)
def test_aliases(alias: str, model: str) -> None:
    assert price_for(alias).model == model


def test_unknown_model_suggests() -> None:
    with pytest.raises(UnknownModelError, match=r"Did you mean: gpt-4\.1") as info:
        price_for("gpt-4.2")
    assert info.value.field == "model"
    assert "set_price" in str(info.value)


def test_per_million() -> None:
    assert price_for("gpt-4.1").per_million() == 8.0  # blended
    assert price_for("gpt-4.1").per_million(0.75) == 3.5
    assert price_for("gpt-4o").per_million() == 10.0  # no blended: output price
    with pytest.raises(InvalidRequestError, match="input_fraction"):
        price_for("gpt-4o").per_million(1.5)


def test_cost_of_dict_object_and_usage() -> None:
    resp = {"model": "gpt-4.1-2025-04-14", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}}
    assert cost_of(resp) == pytest.approx((1000 * 2 + 500 * 8) / 1e6)
    obj = SimpleNamespace(model="deepseek-chat", usage=SimpleNamespace(prompt_tokens=2_000_000,
                                                                      completion_tokens=1_000_000))
    assert cost_of(obj) == pytest.approx(2 * 0.28 + 0.42)
    assert cost_of({"prompt_tokens": 1_000_000, "completion_tokens": 0}, model="claude-sonnet-4.5") == 3.0
    # explicit model wins over the response's own
    assert cost_of(resp, model="gpt-4.1-mini") == pytest.approx((1000 * 0.4 + 500 * 1.6) / 1e6)


def test_cost_of_cached_tokens() -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "prompt_tokens_details": {"cached_tokens": 400}}
    assert cost_of({"model": "gpt-4.1", "usage": usage}) == pytest.approx((600 * 2 + 400 * 0.5 + 500 * 8) / 1e6)
    anthropic = {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 1000}
    assert cost_of(anthropic, model="claude-sonnet-4.5") == pytest.approx((100 * 3 + 1000 * 0.3 + 10 * 15) / 1e6)


def test_cost_of_returns_none_when_it_cannot_price() -> None:
    assert cost_of({"model": "my-private-model", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}) is None
    assert cost_of({"model": "gpt-4.1"}) is None
    assert cost_of({"usage": {"prompt_tokens": 1, "completion_tokens": 1}}) is None
    assert cost_of(SimpleNamespace(model="gpt-4.1", usage=None)) is None
    assert cost_of({"model": "gpt-4.1", "usage": {"prompt_tokens": -5}}) is None


def test_set_price_adds_and_overrides() -> None:
    set_price("my-model", blended_per_m=1.0)
    assert cost_of({"prompt_tokens": 600_000, "completion_tokens": 400_000}, model="my-model") == 1.0
    p = set_price("gpt-4.1", input_per_m=1.0, as_of="2026-11-29")
    assert (p.input_per_m, p.output_per_m, p.as_of, p.source) == (1.0, 8.0, "2026-11-29", "user")
    assert price_for("openai/gpt-4.1").input_per_m == 1.0
    with pytest.raises(InvalidRequestError, match="at least one"):
        set_price("x")
    with pytest.raises(InvalidRequestError, match="non-negative"):
        set_price("x", input_per_m=-1)
    reset_prices()
    assert price_for("gpt-4.1").input_per_m == 2.0


def test_override_file_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"models": [{"model": "gpt-4.1", "output_per_m": 6.0},
                                        {"model": "local-llama", "input_per_m": 0.1, "output_per_m": 0.2}]}))
    load_prices(f)
    assert (price_for("gpt-4.1").input_per_m, price_for("gpt-4.1").output_per_m) == (2.0, 6.0)
    assert price_for("local-llama").output_per_m == 0.2
    reset_prices()
    with pytest.raises(UnknownModelError):
        price_for("local-llama")
    monkeypatch.setenv(PRICE_FILE_ENV, str(f))
    reset_prices()
    assert price_for("local-llama").input_per_m == 0.1
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": [{"input_per_m": 1}]}')
    with pytest.raises(InvalidRequestError, match="needs a 'model'"):
        load_prices(bad)


def test_pricing_import_is_light() -> None:
    code = (
        "import sys, holysheep.pricing as p; p.price_for('gpt-4.1');"
        "bad = [m for m in ('holysheep.hardware', 'holysheep.estimator') if m in sys.modules];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_holysheep_does_not_import_hardware() -> None:
    code = "import sys, holysheep; print('holysheep.hardware' in sys.modules, 'holysheep.pricing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "False"


def test_first_lookups_from_many_threads_all_see_the_catalog() -> None:
    import threading

    from holysheep.pricing import _catalog, price_for

    for _ in range(20):
        _catalog._entries.clear()
        _catalog._keys.clear()
        _catalog._loaded = False
        seen: list[float | None] = []

        def look(out: list[float | None] = seen) -> None:
            out.append(price_for("deepseek-v3.2").blended_per_m)

        threads = [threading.Thread(target=look) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(seen) == 8 and len(set(seen)) == 1 and seen[0] is not None


def test_typed_usage_details_price_cached_tokens_and_keep_unknown_fields() -> None:
    from holysheep.types import ChatCompletion, PromptTokensDetails

    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500,
             "prompt_tokens_details": {"cached_tokens": 400, "vendor_field": 7},
             "completion_tokens_details": {"reasoning_tokens": 120}}
    resp = ChatCompletion.model_validate({"id": "c", "created": 1, "model": "gpt-4.1", "choices": [],
                                          "usage": usage})
    assert resp.usage is not None
    assert isinstance(resp.usage.prompt_tokens_details, PromptTokensDetails)
    assert resp.usage.prompt_tokens_details.cached_tokens == 400
    assert resp.usage.completion_tokens_details is not None
    assert resp.usage.completion_tokens_details.reasoning_tokens == 120
    assert resp.to_dict()["usage"]["prompt_tokens_details"] == {"cached_tokens": 400, "vendor_field": 7}
    assert resp.cost == pytest.approx((600 * 2 + 400 * 0.5 + 500 * 8) / 1e6)
    odd = ChatCompletion.model_validate({"id": "c", "created": 1, "model": "gpt-4.1", "choices": [], "usage": {
        "prompt_tokens": 1000, "completion_tokens": 0, "prompt_tokens_details": 5}})
    assert odd.usage is not None and odd.usage.prompt_tokens_details is None  # a scalar is dropped, not fatal
    assert odd.cost == pytest.approx(1000 * 2 / 1e6)


def test_a_resolved_name_follows_every_catalog_change(tmp_path: Path) -> None:
    def cost() -> float | None:
        return cost_of({"prompt_tokens": 1_000_000, "completion_tokens": 0}, model="Vendor/My-Model-2026-01-31")

    assert cost() is None and cost() is None  # resolved (to nothing) and remembered
    set_price("my-model", input_per_m=3.0, output_per_m=4.0)
    assert cost() == 3.0
    set_price("my-model", input_per_m=5.0)
    assert cost() == 5.0
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"models": [{"model": "my-model", "input_per_m": 7.0, "output_per_m": 1.0}]}))
    load_prices(f)
    assert cost() == 7.0
    reset_prices()
    assert cost() is None


def test_token_counts_are_clamped() -> None:
    gpt = price_for("gpt-4.1")  # 2.0 in, 0.5 cached, 8.0 out per million
    assert gpt.cost(100, 10, cached_tokens=400) == pytest.approx((100 * 0.5 + 10 * 8.0) / 1e6)  # cached <= prompt
    assert gpt.cost(100, 10, cached_tokens=-3) == pytest.approx((100 * 2.0 + 10 * 8.0) / 1e6)
    from holysheep.pricing._cost import completion_cost

    assert completion_cost("gpt-4.1", -5, -1, -2) == 0.0
