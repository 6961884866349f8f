"""Published memory measurements and the estimator's figure for each: the memory validation of docs/estimator.md.

Each row is one number a runtime printed or a paper measured, with its source, and the estimate for the same
setting. ``calibration`` marks the rows a constant was read from (they pass by construction); the score is
reported over all rows and over the others. ``table()`` writes the generated block of docs/estimator.md
("Memory validation"); the tests pin the score.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from holysheep.estimator import estimate_inference_memory, estimate_training_memory, get_architecture
from holysheep.estimator._quant import quant_spec, weight_bytes

GIB = 2**30
A100_80GB = 79.15 * GIB / 1e9  # what CUDA reports for an A100-SXM4-80GB
H100_80GB = 79.11 * GIB / 1e9  # and for an H100 SXM5 80GB (the accelerator table's cuda_total_gib)
TOLERANCE = 0.10


@dataclass(frozen=True)
class MemoryRow:
    """One published figure (``measured``, in ``unit``) and how the estimator computes the same quantity."""

    label: str
    measured: float
    unit: str
    cite: str
    source: str
    estimate: Callable[[], float]
    calibration: bool = False

    @property
    def error(self) -> float:
        """Signed relative error of the estimate."""
        return self.estimate() / self.measured - 1


def _vllm_blocks(model: str, tp: int, version: str) -> float:
    v = estimate_inference_memory(model, "fp16", 4096, 1, tensor_parallel=tp, runtime="vllm",
                                  gpu_memory_gb=A100_80GB, vllm_version=version).vllm
    assert v is not None
    return v.num_gpu_blocks


def _torchtune_states(optimizer: str) -> float:
    tr = estimate_training_memory("Llama-2-7B", "bf16-true", optimizer, seq_len=512, gradient_checkpointing="full")
    return sum(v for k, v in tr.breakdown.items() if k != "activations")


def _qwen3_235b_vllm_kv_gib() -> float:
    v = estimate_inference_memory("qwen3-235b-a22b", "fp8", 40960, tensor_parallel=4, runtime="vllm",
                                  vllm_version="0.8", gpu_memory_gb=H100_80GB).vllm
    assert v is not None
    return v.kv_cache_gb * 1e9 / GIB


def _qwen3_235b_sglang_tokens() -> float:
    """SGLang's pool: total x mem_fraction_static less what is resident after loading (weights, CUDA context),
    over the per-GPU KV of a token (model_runner.profile_max_num_token)."""
    est = estimate_inference_memory("qwen3-235b-a22b", "fp8", 40960, tensor_parallel=4, runtime="sglang",
                                    gpu_memory_utilization=0.93)
    b = est.breakdown
    pool = (H100_80GB * 0.93 - b["weights"] - b["overhead"]) * 1e9
    return pool / (est.kv_cache_bytes_per_token / 4)


def _mlx_peak(model: str, prompt: int, generated: int, version: str | None = None, step: int = 2048) -> float:
    return estimate_inference_memory(model, "mlx-4bit", prompt + generated, runtime="mlx", prompt_tokens=prompt,
                                     mlx_lm_version=version, prefill_chunk=step).per_gpu_gb


def _gguf_gib(model: str, quant: str) -> float:
    return weight_bytes(get_architecture(model), quant_spec(quant)) / GIB


def _gguf_q4_k_m_gib(model: str) -> float:
    return estimate_inference_memory(model, "q4_k_m", 4096, runtime="llama.cpp").weights_bytes_total / GIB


PR2031 = "https://github.com/vllm-project/vllm/pull/2031"
ROWS: tuple[MemoryRow, ...] = (
    MemoryRow("Llama-2-7B vLLM 0.2.4 TP1 A100-80GB: GPU blocks (PyTorch peak only)", 7449, "blocks",
              "vLLM PR #2031", PR2031, lambda: _vllm_blocks("Llama-2-7B", 1, "0.2.5-pre")),
    MemoryRow("Llama-2-70B vLLM 0.2.4 TP4 A100-80GB: GPU blocks (PyTorch peak only)", 31615, "blocks",
              "vLLM PR #2031", PR2031, lambda: _vllm_blocks("Llama-2-70B", 4, "0.2.5-pre")),
    MemoryRow("Llama-2-7B vLLM 0.2.5 TP1 A100-80GB: GPU blocks", 7351, "blocks", "vLLM PR #2031", PR2031,
              lambda: _vllm_blocks("Llama-2-7B", 1, "0.2.5"), calibration=True),
    MemoryRow("Llama-2-70B vLLM 0.2.5 TP4 A100-80GB: GPU blocks", 20865, "blocks", "vLLM PR #2031", PR2031,
              lambda: _vllm_blocks("Llama-2-70B", 4, "0.2.5"), calibration=True),
    MemoryRow("Qwen3-235B-A22B-FP8 vLLM (V1, July 2025) TP4 H100: KV cache per GPU", 8.11, "GiB", "vLLM issue #21348",
              "https://github.com/vllm-project/vllm/issues/21348", _qwen3_235b_vllm_kv_gib, calibration=True),
    MemoryRow("Qwen3-235B-A22B-FP8 SGLang TP4 H100, mem_fraction_static 0.93: KV pool", 367404, "tokens",
              "vLLM issue #21348", "https://github.com/vllm-project/vllm/issues/21348", _qwen3_235b_sglang_tokens),
    MemoryRow("Llama-2-7B full fine-tune, pure-bf16 AdamW: states", 54, "GB", "torchtune PR #389",
              "https://github.com/meta-pytorch/torchtune/pull/389", lambda: _torchtune_states("adamw")),
    MemoryRow("Llama-2-7B full fine-tune, 8-bit AdamW: states", 40.5, "GB", "torchtune PR #389",
              "https://github.com/meta-pytorch/torchtune/pull/389", lambda: _torchtune_states("adamw-8bit")),
    MemoryRow("Llama-2-7B bf16 weights + grads (SGD): peak", 27.83, "GB", "torchtune PR #389",
              "https://github.com/meta-pytorch/torchtune/pull/389", lambda: _torchtune_states("sgd-no-momentum")),
    MemoryRow("Llama-3.2-3B-Instruct-4bit, mlx-lm before 0.27, prompt 2,048 + 128: peak", 3.285, "GB", "mlx-lm PR #396",
              "https://github.com/ml-explore/mlx-lm/pull/396",
              lambda: _mlx_peak("llama-3.2-3b", 2048, 128, "0.26.4"), calibration=True),
    MemoryRow("Qwen3-4B-Instruct-2507-4bit, mlx-lm 0.31.3, prompt 2,048 + 128: peak", 3.30, "GB", "mlx-lm PR #1569",
              "https://github.com/ml-explore/mlx-lm/pull/1569", lambda: _mlx_peak("qwen3-4b", 2048, 128),
              calibration=True),
    MemoryRow("Mistral-7B 4-bit, mlx-lm 0.22 (fused causal mask, 512-token steps), prompt 33,898 + 100: peak", 9.111,
              "GB", "mlx-lm PR #40",
              "https://github.com/ml-explore/mlx-lm/pull/40",
              lambda: _mlx_peak("mistral-7b-v0.3", 33898, 100, "0.22", 512)),
    MemoryRow("gpt-oss-20b GGUF (MXFP4 MoE, ggml-org): file size", 11.27, "GiB",
              "ggml-org/gpt-oss-20b-GGUF, llama.cpp load log (289 f32, 98 q8_0, 72 mxfp4 tensors)",
              "https://huggingface.co/ggml-org/gpt-oss-20b-GGUF",
              lambda: _gguf_gib("gpt-oss-20b", "gguf-mxfp4")),
    MemoryRow("gpt-oss-20b GGUF Q4_K_M (unsloth, experts kept in MXFP4): file size", 10.81, "GiB",
              "unsloth/gpt-oss-20b-GGUF, llama.cpp load log (72 mxfp4, 24 q4_K, 61 q5_0, 13 q8_0, 289 f32 tensors)",
              "https://huggingface.co/unsloth/gpt-oss-20b-GGUF", lambda: _gguf_q4_k_m_gib("gpt-oss-20b")),
)


def score(rows: tuple[MemoryRow, ...] = ROWS) -> tuple[int, int]:
    """(rows within ±10 %, rows)."""
    return sum(abs(r.error) <= TOLERANCE for r in rows), len(rows)


def table() -> list[str]:
    """The docs block: one line per row, then the score over all rows and over the rows no constant came from."""
    lines = ["| measured | source | published | ours | error |", "|---|---|---|---|---|"]
    for r in ROWS:
        est = r.estimate()
        fmt = ",.0f" if r.measured >= 1000 else ".3f" if r.measured < 10 else ".2f"
        label = r.label + (" (calibration)" if r.calibration else "")
        lines.append(f"| {label} | [{r.cite}]({r.source}) | {r.measured:{fmt}} {r.unit} | {est:{fmt}} {r.unit} | "
                     f"{r.error * 100:+.1f} % |")
    ok, n = score()
    held = tuple(r for r in ROWS if not r.calibration)
    ok_h, n_h = score(held)
    lines += ["", f"Within ±10 %: **{ok} of {n} rows** ({ok / n * 100:.0f} %, target at least 90 %); the {n_h} rows "
              f"no constant was read from: {ok_h} of {n_h}."]
    return lines
