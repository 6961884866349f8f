"""MoE across GPUs: tensor-parallel experts by default (vLLM, SGLang), expert parallelism when asked."""

from __future__ import annotations

import pytest

from holysheep._exceptions import InvalidRequestError
from holysheep.estimator import estimate_inference_memory
from holysheep.hardware import pick_hardware
from holysheep.hardware._cli import run_plan


def _rate(count: int, **kw: object) -> float:
    (opt,) = pick_hardware("mixtral-8x7b", gpus=["H100"], gpu_count=count, runtime="vllm", **kw)  # type: ignore[arg-type]
    assert opt.decode_tokens_per_s_batch1 is not None
    return opt.decode_tokens_per_s_batch1


def test_mixtral_decode_rises_with_tp_under_tensor_parallel_experts() -> None:
    rates = [_rate(c) for c in (2, 4, 8)]
    assert [round(r, 1) for r in rates] == [126.2, 179.7, 218.6]  # docs/hardware.md quotes these
    assert rates == sorted(rates) and rates[-1] > 1.4 * rates[0]


def test_expert_parallel_is_modelled_when_asked_with_its_all_to_all() -> None:
    ep = [_rate(c, expert_parallel=True) for c in (2, 4, 8)]
    assert [round(r, 1) for r in ep] == [60.8, 65.4, 70.0]
    assert all(e < t for e, t in zip(ep, [_rate(c) for c in (2, 4, 8)], strict=True))  # dispatch + combine cost


def test_the_plan_says_which_placement_it_assumed() -> None:
    (tp,) = pick_hardware("mixtral-8x7b", gpus=["H100"], gpu_count=4)
    assert "experts tensor-parallel (runtime default): 1/4 of each expert per GPU" in tp.notes[-1]
    (ep,) = pick_hardware("mixtral-8x7b", gpus=["H100"], gpu_count=4, expert_parallel=True)
    assert ep.notes[-1].startswith("expert parallel: 8 experts over 4 GPUs")
    (one,) = pick_hardware("mixtral-8x7b", quant="fp8", gpus=["H100"], gpu_count=1)
    assert not any("expert" in n for n in one.notes)  # one GPU: no placement to state
    text, data = run_plan("mixtral-8x7b", gpus=["H100"], gpu_count=4, expert_parallel=True)
    assert "expert parallel: 8 experts over 4 GPUs" in text
    assert data["options"][0]["notes"][-1].startswith("expert parallel")
    est = estimate_inference_memory("mixtral-8x7b", tensor_parallel=4)
    assert any(n.startswith("experts tensor-parallel") for n in est.assumptions)


def test_expert_parallel_needs_an_moe_model() -> None:
    with pytest.raises(InvalidRequestError, match="needs a mixture-of-experts model") as info:
        estimate_inference_memory("llama-3.1-8b", expert_parallel=True)
    assert info.value.field == "expert_parallel"
    with pytest.raises(InvalidRequestError, match="True or False"):
        estimate_inference_memory("mixtral-8x7b", expert_parallel="yes")  # type: ignore[arg-type]
