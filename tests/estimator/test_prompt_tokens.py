"""``prompt_tokens``: transformers runs the prompt as one forward pass and decodes the rest a token a step, so
its working set (and, before 4.45, its fp32 logits) follows the prompt's length, not the whole context."""

from __future__ import annotations

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import estimate_inference_memory, get_architecture
from holysheep.estimator._runtimes import prefill_activation_bytes

GB = 1e9


def test_old_transformers_logits_follow_the_prompt() -> None:
    """Input 1 + 2,048 generated under transformers 4.44: one row of logits, not 2,049."""
    arch = get_architecture("qwen2.5-7b")
    whole = estimate_inference_memory("qwen2.5-7b", "bf16", 2049, runtime="hf", transformers_version="4.44.2")
    short = estimate_inference_memory("qwen2.5-7b", "bf16", 2049, runtime="hf", transformers_version="4.44.2",
                                      prompt_tokens=1)
    assert round(whole.breakdown["activations"] * GB) == prefill_activation_bytes(arch, 2049, 1, logits_rows=2049,
                                                                           logits_bytes=6.0)
    assert round(short.breakdown["activations"] * GB) == prefill_activation_bytes(arch, 1, 1, logits_rows=1,
                                                                           logits_bytes=6.0)
    assert round(whole.per_gpu_gb - short.per_gpu_gb, 3) == 2.131  # 2,048 x 152,064 x 6 B of logits + activations
    assert whole.breakdown["kv_cache"] == short.breakdown["kv_cache"]  # the KV still holds all 2,049 tokens
    assert any("1 x 152,064 x 6 bytes" in n for n in short.assumptions)
    assert any("pass prompt_tokens=" in n for n in whole.assumptions)


def test_prompt_tokens_is_checked_and_kept_by_the_solvers() -> None:
    with pytest.raises(InvalidRequestError) as e:
        estimate_inference_memory("qwen2.5-7b", context=100, prompt_tokens=200)
    assert e.value.field == "prompt_tokens"
    est = estimate_inference_memory("qwen2.5-7b", "bf16", 4096, runtime="hf", prompt_tokens=1024)
    assert est.prefill_chunk == 1024
    assert est.with_options(context=512).prefill_chunk == 512  # never more than the context
    assert estimate_inference_memory("qwen2.5-7b", "bf16", 4096, runtime="hf").prefill_chunk == 4096


def test_cli_prompt_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from holysheep.cli import main

    argv = ["plan", "qwen2.5-7b", "--runtime", "hf", "--transformers-version", "4.44.2", "--context", "2049",
            "--gpus", "A100", "--json"]
    assert main(argv) == 0
    whole = json.loads(capsys.readouterr().out)["memory"]
    assert main([*argv, "--prompt-tokens", "1"]) == 0
    short = json.loads(capsys.readouterr().out)["memory"]
    assert whole != short
    assert main(["plan", "qwen2.5-7b", "--context", "100", "--prompt-tokens", "200"]) == 2
    assert "prompt-tokens (200) cannot exceed" in capsys.readouterr().err
    assert main(["plan", "qwen2.5-7b", "--train", "lora", "--prompt-tokens", "20"]) == 2
    assert "--prompt-tokens applies to inference" in capsys.readouterr().err
