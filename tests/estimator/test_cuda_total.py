"""vLLM and SGLang size from CUDA's total (``cuda_total_gib``), not the driver's figure (``memory_gb``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from holysheep.accelerators import gpu, gpus, load_gpus
from holysheep.estimator import estimate_inference_memory, max_context
from holysheep.estimator._common import _WARNED

NO_TOTAL = ("vLLM sizes its memory budget from CUDA's total (torch.cuda.mem_get_info), which the GPU table does "
            "not have for H100 PCIe 80GB: the driver's figure was used, so the budget may be 0.5-1 GiB too "
            "generous. To size it exactly, give the GPU as CUDA's total in GB, or register the row with "
            "cuda_total_gib")


@pytest.fixture(autouse=True)
def _fresh_run() -> None:
    """Each test starts as a fresh process would: no planner warning raised yet."""
    _WARNED.clear()


def test_rows_carry_cuda_total_with_a_source() -> None:
    rows = {g.id: g for g in gpus()}
    expected = {"a100-80-sxm": 79.15, "a100-40-sxm": 39.50, "h100-sxm": 79.11, "h100-nvl": 93.00, "t4": 14.75,
                "a100-80-pcie": 79.15, "a100-40-pcie": 39.50, "l40s": 44.53, "l40": 44.40, "l4": 22.03,
                "a10": 22.18, "a30": 23.53, "rtx4090": 23.68, "rtx3090": 23.69, "b200": 178.4, "b300": 267.7}
    assert {i: g.cuda_total_gib for i, g in rows.items() if g.cuda_total_gib is not None} == expected
    for i in expected:
        assert rows[i].cuda_total_source.startswith("https://github.com/")
        assert rows[i].cuda_total_gb is not None and rows[i].cuda_total_gb < rows[i].memory_gb  # below the driver's
    assert gpu("A100 80GB").memory_gb == 85.9  # memory_gb keeps the driver's figure
    assert gpu("A100 80GB").to_dict()["cuda_total_gib"] == 79.15


def test_a100_80gb_vllm_budget_and_blocks_use_cuda_total() -> None:
    """Llama-3.1-8B bf16, 8,192 x 1, vLLM v1 profile, one A100 80GB.

    CUDA's total 79.15 GiB = 79.15 x 2^30 = 84,986,665,369.6 B = 84.9867 GB (the driver's 81,920 MiB
    = 85.90 GB before). Budget x 0.9 = 76.48800 GB (77.31 before). Less weights 16.060522 + profile
    peak 1.101529 + non-torch 0.161061 + CUDA graphs 0.536871 = 17.859984 GB leaves 58.628015 GB; a
    block is 16 tokens x 131,072 B (32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B) = 2,097,152 B, so
    floor(58,628,015,063 / 2,097,152) = 27,956 blocks (28,347 before) = 447,296 tokens.
    """
    est = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm")
    check = est.memory_check("A100 80GB")
    assert check.gpu_memory_gb == pytest.approx(84.9866653696, abs=1e-9)
    assert check.limit_gb == pytest.approx(76.48799883264, abs=1e-9) and check.warnings == ()
    assert check.fits and est.fits("A100 80GB")
    sized = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm",
                                      gpu_memory_gb=79.15 * 2**30 / 1e9).vllm
    assert sized is not None and (sized.num_gpu_blocks, sized.kv_cache_tokens) == (27956, 447296)
    before = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm", gpu_memory_gb=85.9).vllm
    assert before is not None and (before.budget_gb, before.num_gpu_blocks) == (pytest.approx(77.31), 28347)


def test_explicit_gpu_memory_gb_and_other_runtimes_keep_the_figure_passed() -> None:
    v = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm", gpu_memory_gb=85.9).vllm
    assert v is not None and v.gpu_memory_gb == 85.9
    plain = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1).memory_check("A100 80GB")
    assert plain.gpu_memory_gb == 85.9 and plain.warnings == ()  # the default runtime: the driver's figure
    assert estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm").memory_check(80).warnings == ()


def test_sglang_budget_uses_cuda_total() -> None:
    check = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="sglang").memory_check("H100 SXM5 80GB")
    assert check.gpu_memory_gb == pytest.approx(79.11 * 2**30 / 1e9)
    assert check.limit_gb == pytest.approx(79.11 * 2**30 / 1e9 * 0.88) and check.warnings == ()


def test_row_without_cuda_total_warns_in_fits_and_memory_check() -> None:
    est = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm")
    check = est.memory_check("H100 PCIe 80GB")
    assert check.warnings == (NO_TOTAL,) and check.gpu_memory_gb == 85.9  # today's figure, said so
    with pytest.warns(UserWarning) as caught:
        assert est.fits("H100 PCIe 80GB")
    assert [str(w.message) for w in caught] == [NO_TOTAL]
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        max_context(est, "H100 PCIe 80GB")
        assert est.fits("H100 PCIe 80GB")
    assert again == []  # raised once per run: the result still carries it
    assert est.memory_check("H100 PCIe 80GB").warnings == (NO_TOTAL,)


def test_solver_warns_once_not_once_per_probe() -> None:
    est = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm")
    with warnings.catch_warnings(record=True) as solver:
        warnings.simplefilter("always")
        max_context(est, "H100 PCIe 80GB")
    assert [str(w.message) for w in solver] == [NO_TOTAL]


def test_common_gpus_under_vllm_warn_nothing() -> None:
    """The GPUs a plan usually shows carry CUDA's total, so sizing them for vLLM raises no warning."""
    est = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in ("L40S", "L40", "L4", "A10", "A100 80GB PCIe", "RTX 4090", "RTX 3090", "A30"):
            assert est.memory_check(name).warnings == ()
            est.fits(name)
    assert caught == []


def test_user_rows_may_give_cuda_total(tmp_path: Path) -> None:
    f = tmp_path / "cards.csv"
    f.write_text("id,reported_mib,bandwidth_gb_s,cuda_gib,cuda_total_source\n"
                 "card-x,81920,2039,79.15,https://example.invalid/report\n")
    (row,) = load_gpus(f)
    assert (row.cuda_total_gib, row.cuda_total_source) == (79.15, "https://example.invalid/report")
    check = estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 1, runtime="vllm").memory_check(row)
    assert check.gpu_memory_gb == pytest.approx(84.9866653696) and check.warnings == ()
