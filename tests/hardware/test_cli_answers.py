"""Issue 30 point 6: GPU names that are numbers, counts, ``32k`` contexts, near-miss hints, capacities in bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import estimate_inference_memory
from holysheep.hardware import gpu, gpus, pick_hardware
from holysheep.hardware._cli import parse_gpus, parse_tokens, run_plan


def test_a_number_that_names_a_gpu_is_that_gpu() -> None:
    assert parse_gpus(["4090"]) == (["4090"], None)
    assert gpu("4090").id == "rtx4090" and gpu("5090").id == "rtx5090" and gpu("3090").id == "rtx3090"
    assert parse_gpus(["4x4090"]) == (["4090"], 4)
    assert parse_gpus(["2xH100", "2x A100"]) == (["H100", "A100"], 2)
    assert parse_gpus(["2xH100,2x A100"]) == (["H100", "A100"], 2)  # one comma-separated value
    assert parse_gpus(["H100, L40S", "4090"]) == (["H100", "L40S", "4090"], None)  # --gpus repeated
    assert parse_gpus(["Apple M2 Ultra (76-core GPU, 192GB)"]) == (["Apple M2 Ultra (76-core GPU, 192GB)"], None)
    with pytest.raises(InvalidRequestError, match="empty name"):
        parse_gpus(["H100,,L40S"])
    assert parse_gpus(["4090"], 2) == (["4090"], 2)
    assert parse_gpus(["8"]) == (None, 8)  # names no GPU: still a count
    assert parse_gpus(None, 3) == (None, 3)
    with pytest.raises(InvalidRequestError, match=r"conflicting GPU counts \[2, 4\]"):
        parse_gpus(["4x4090"], 2)
    with pytest.raises(InvalidRequestError, match="must be >= 1"):
        parse_gpus(["0x4090"])


def test_plan_with_gpus_4090_plans_the_rtx_4090() -> None:
    text, data = run_plan("llama-3.1-8b", gpus=["4090"], context=parse_tokens("32k"))
    assert [o["gpu"] for o in data["options"]] == ["rtx4090"] and data["rejected"] == []
    assert data["context"] == 32768 and "context 32768" in text
    _, four = run_plan("llama-3.1-8b", gpus=["4090"], gpu_count=4)
    assert [(o["gpu"], o["count"]) for o in four["options"]] == [("rtx4090", 4)]


def test_context_parses_k_and_m_and_refuses_junk() -> None:
    assert [parse_tokens(x) for x in ("8192", "32k", "32K", "1.5k", "1m", "128k")] == [
        8192, 32768, 32768, 1536, 1048576, 131072]
    for bad in ("3x", "", "0", "1.0001k"):
        with pytest.raises(InvalidRequestError, match="context"):
            parse_tokens(bad)


def test_context_above_the_model_limit_warns_and_max_context_says_it_is_capped() -> None:
    text, data = run_plan("llama-3.1-8b", gpus=["H100"], context=parse_tokens("200k"))
    assert "context 204,800 exceeds the model's max_position_embeddings 131,072" in data["warnings"]
    assert "  ! context 204,800 exceeds the model's max_position_embeddings 131,072" in text
    limits = data["limits"]
    assert limits["max_context"] == 131072 and limits["max_context_capped_by_model"] is True
    assert "(the model's own limit, max_position_embeddings 131,072; memory would hold more)" in limits["text"]
    _, small = run_plan("llama-3.1-70b", quant="int4-awq", gpus=["L40S"], context=8192)
    assert small["limits"]["max_context_capped_by_model"] is False


def test_near_miss_names_utilization_context_and_gpu_count() -> None:
    est = estimate_inference_memory("llama-3.1-70b", "int4-awq", 8192, runtime="vllm")
    res = pick_hardware(est, gpus=["L40S"], gpu_count=1)
    (rej,) = res.rejected
    assert rej.reason == (
        "does not fit: needs 43.8 GB per GPU at 1x, 43.0 GB usable (vLLM: total x gpu_memory_utilization 0.9 of "
        "CUDA's total 47.81 GB, 48.31 GB GPU); fits with gpu_memory_utilization=0.92 or context <= 5,632 or 2 GPUs")
    # each hint holds under the estimator's own rule
    tuned = estimate_inference_memory("llama-3.1-70b", "int4-awq", 8192, runtime="vllm", gpu_memory_utilization=0.92)
    assert tuned.fits("L40S") and not estimate_inference_memory(
        "llama-3.1-70b", "int4-awq", 8192, runtime="vllm", gpu_memory_utilization=0.91).fits("L40S")
    assert est.with_options(context=5632).fits("L40S") and not est.with_options(context=5888).fits("L40S")
    assert est.fits("L40S", count=2)
    sglang = pick_hardware("llama-3.1-70b", quant="int4-awq", context=8192, runtime="sglang", gpus=["L40S"],
                           gpu_count=1).rejected[0]
    assert "mem_fraction_static=0." in (sglang.reason or "")
    far = pick_hardware("llama-3.1-70b", context=8192, gpus=["4090"], gpu_count=2).rejected[0]
    assert (far.reason or "").endswith("; fits with 8 GPUs")


def test_capacities_are_device_bytes_not_gib_read_as_gb() -> None:
    g = gpu("4090")
    assert (g.memory_gib, g.memory_gb) == (24, 25.77)  # 24 x 2^30 bytes
    assert gpu("A100 80GB").memory_gb == 85.9 and gpu("H100").memory_gb == 85.9
    assert (gpu("H200").reported_mib, gpu("H200").memory_gb) == (143771, 150.75)  # nvidia-smi
    assert (gpu("L40S").reported_mib, gpu("L40S").memory_gb) == (46068, 48.31)  # ECC on: 15/16 of 48 GiB
    assert (gpu("T4").reported_mib, gpu("T4").memory_gb) == (15360, 16.11)
    for row in gpus():
        if row.memory_gib and not row.reported_mib and not row.unified_memory_gb:
            assert row.memory_gb == round(row.memory_gib * 2**30 / 1e9, 2), row.id
    assert "25.8 (24.0)" in str(gpus()) and "mem GB (GiB)" in str(gpus())  # both units, each labelled


def test_user_rows_may_give_gib_or_reported_mib(tmp_path: Path) -> None:
    from holysheep.hardware import register_gpus, reset_gpus

    csv_file = tmp_path / "mine.csv"
    csv_file.write_text("id,mem_gib,bw_gbs\ncard-a,24,1000\ncard-b,16,500\n")
    json_file = tmp_path / "mine.json"
    json_file.write_text('[{"id": "card-c", "reported_mib": 46068, "bandwidth_gb_s": 864}]')
    try:
        a, b = register_gpus(csv_file)
        assert (a.memory_gb, a.memory_gib, b.memory_gb) == (25.77, 24, 17.18)
        (c,) = register_gpus(json_file)
        assert (c.memory_gb, c.reported_mib) == (48.31, 46068)
    finally:
        reset_gpus()
