"""``holysheep plan``: runtimes, training switches, solvers and hidden-option notes, run as subprocesses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import Runner, assert_one_line_error


def _plan(cli: Runner, *args: str) -> dict[str, object]:
    done = cli("--json", "plan", *args)
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_70b_qlora_fits_one_48gb_gpu_at_1k(cli: Runner) -> None:
    data = _plan(cli, "llama-3.1-70b", "--train", "qlora", "--seq-len", "1024", "--gpus", "L40S")
    (opt,) = data["options"]  # type: ignore[misc]
    assert opt["count"] == 1 and opt["gpu"] == "l40s" and data["mode"] == "training"
    done = cli("plan", "llama-3.1-70b", "--train", "qlora", "--gpus", "L40S", "--max-gpus", "1")  # checkpointing on
    assert "paged-adamw, checkpointing full, LoRA rank 16" in done.stdout
    assert "45.9 GB usable" in done.stdout and "fits at --seq-len 1024" in done.stdout  # 48.31 GB less 5 %


def test_8b_full_finetune_with_zero3_on_8_gpus(cli: Runner) -> None:
    data = _plan(cli, "llama-3.1-8b", "--train", "full", "--zero", "3", "--gpus", "8", "--gradient-checkpointing",
                 "--seq-len", "4096", "--micro-batch", "2", "--offload-optimizer")
    opts = data["options"]
    assert opts and all(o["count"] == 8 for o in opts)  # type: ignore[union-attr]
    assert data["context"] == 4096 and data["batch"] == 2


def test_training_switches_need_train(cli: Runner) -> None:
    done = cli("plan", "llama-3.1-8b", "--lora-rank", "8")
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert "--lora-rank applies to fine-tuning: add --train full|lora|qlora" in done.stderr


def test_runtime_rules_from_the_cli(cli: Runner) -> None:
    vllm = _plan(cli, "llama-3.1-70b", "--quant", "awq", "--context", "8192", "--runtime", "vllm",
                 "--gpu-memory-utilization", "0.95", "--gpus", "L40S", "--max-gpus", "1")
    assert [o["count"] for o in vllm["options"]] == [1]  # type: ignore[union-attr]
    cpp = _plan(cli, "llama-3.1-70b", "--quant", "q4_k_m", "--context", "8192", "--runtime", "llama.cpp",
                "--gpus", "RTX 4090", "--max-gpus", "2")
    assert [o["count"] for o in cpp["options"]] == [2] and cpp["runtime"] == "llama.cpp"  # type: ignore[union-attr]


def test_plan_shows_the_solvers(cli: Runner) -> None:
    from holysheep.estimator import max_batch, max_context

    done = cli("plan", "llama-3.1-8b", "--gpus", "L4", "--context", "8192")
    assert done.returncode == 0, done.stderr
    ctx, seqs = max_context("llama-3.1-8b", "L4"), max_batch("llama-3.1-8b", "L4", 8192)
    assert (ctx, seqs) == (40448, 4)
    assert (f"Limits (1x L4 24GB): at most {ctx:,} tokens of context on this GPU at batch 1; "
            f"at most {seqs} sequences of 8,192 tokens") in done.stdout
    data = _plan(cli, "llama-3.1-8b", "--gpus", "L4", "--context", "8192")
    assert data["limits"]["max_context"] == ctx and data["limits"]["max_batch"] == seqs  # type: ignore[index]


def test_plan_says_how_many_options_it_hid(cli: Runner) -> None:
    full = _plan(cli, "llama-3.1-8b", "--top", "100")
    n = len(full["options"])  # type: ignore[arg-type]
    assert n > 3 and full["hidden_options"] == 0
    done = cli("plan", "llama-3.1-8b", "--top", "3")
    assert done.returncode == 0, done.stderr
    assert f"{n - 3} more workable options not shown; see all with --top {n}" in done.stdout
    assert _plan(cli, "llama-3.1-8b", "--top", "3")["hidden_options"] == n - 3


def test_unknown_names_get_distinct_cli_suggestions(cli: Runner) -> None:
    done = cli("plan", "llama-3-70")
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    line = done.stderr.strip()
    assert "did you mean Llama-3.1-70B, Llama-2-70B" in line and line.count("Llama-3.1-70B") == 1
    assert "Run `holysheep models --catalog`" in line and "list_models()" not in line
    done = cli("plan", "llama-3.1-8b", "--gpus", "H1000")
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    names = done.stderr.split("did you mean ")[1].split("?")[0].split(", ")
    assert names[0] == "H100 SXM5 80GB" and len(names) == len(set(names))
    assert "Run `holysheep gpus`" in done.stderr and "gpus()" not in done.stderr


def test_a_bare_size_works(cli: Runner) -> None:
    for arg in ("70b", "70", "70B"):
        done = cli("plan", arg, "--quant", "awq")
        assert done.returncode == 0, done.stderr
        assert "assumed from a bare size of 70B parameters" in done.stdout
        assert "Warning" not in done.stderr


def test_documented_train_method_form_still_works(cli: Runner) -> None:
    done = cli("plan", "llama-2-7b", "--train", "--method", "lora", "--zero-stage", "2", "--optimizer", "adamw")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Plan: llama-2-7b (training, lora, ZeRO-2, adamw")


def test_an_assumption_shows_in_text_and_json_not_hidden(cli: Runner, tmp_path: Path) -> None:
    text = {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 131072}
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "mistral3", "text_config": text, "vision_config": {}}))
    done = cli("plan", str(cfg))
    assert done.returncode == 0, done.stderr
    assert "Warnings:\n  ! mistral3 config: only the text decoder is counted" in done.stdout
    assert "Warning" not in done.stderr  # said once, in the output
    data = _plan(cli, str(cfg))
    assert data["warnings"] == ["mistral3 config: only the text decoder is counted; the vision encoder and "
                                "projector are not"]
    (tmp_path / "x.json").write_text(json.dumps({**text, "model_type": "internlm2"}))
    refused = cli("plan", str(tmp_path / "x.json"))
    assert refused.returncode == 2 and "unmapped model_type 'internlm2'" in refused.stderr


def test_plan_uses_the_shipped_format(cli: Runner) -> None:
    done = cli("plan", "deepseek-v3", "--gpus", "H200,H100")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Plan: deepseek-v3 (inference, default), quant fp8 (as shipped), context 2048")
    assert re.search(r"\n8x H200 SXM 141GB +yes", done.stdout)
    assert re.search(r"H100 SXM5 80GB +does not fit", done.stdout)
    data = _plan(cli, "gpt-oss-120b", "--gpus", "H100")
    assert (data["quant"], data["quant_as_shipped"]) == ("mxfp4", True)
    options = data["options"]
    assert isinstance(options, list) and options[0]["count"] == 1
    data = _plan(cli, "deepseek-v3", "--quant", "bf16", "--gpus", "H200")
    assert (data["quant"], data["quant_as_shipped"], data["options"]) == ("bf16", False, [])


def test_vllm_plan_warns_where_cuda_total_is_missing(cli: Runner) -> None:
    warning = ("vLLM sizes its memory budget from CUDA's total (torch.cuda.mem_get_info), which the GPU table "
               "does not have for H100 PCIe 80GB: the driver's figure was used, so the budget may be 0.5-1 GiB "
               "too generous. To size it exactly, give the GPU as CUDA's total in GB, or register the row with "
               "cuda_total_gib")
    args = ("llama-3.1-8b", "--runtime", "vllm", "--max-gpus", "1", "--gpus", "H100 PCIe,A100 80GB")
    data = _plan(cli, *args)
    assert warning in data["warnings"]  # type: ignore[operator]
    assert not any("A100" in w for w in data["warnings"])  # type: ignore[union-attr]  # the A100 row has it
    notes = {o["gpu"]: o["notes"] for o in data["options"]}  # type: ignore[union-attr]
    assert "sized from the driver's memory figure: CUDA's total is not in the table" in notes["h100-pcie"]
    assert not any("CUDA's total" in n for n in notes["a100-80-sxm"])
    done = cli("plan", *args)
    assert done.returncode == 0 and f"  ! {warning}" in done.stdout and "Warning" not in done.stderr
    plain = _plan(cli, "llama-3.1-8b", "--gpus", "H100 PCIe", "--max-gpus", "1")  # default runtime: no warning
    assert not any("CUDA's total" in w for w in plain["warnings"])  # type: ignore[union-attr]


def test_gpus_takes_one_comma_separated_value_and_never_the_model(cli: Runner) -> None:
    data = _plan(cli, "--gpus", "4090", "llama-3.1-8b", "--max-gpus", "1")
    assert data["model"] == "llama-3.1-8b"
    assert [o["gpu"] for o in data["options"]] == ["rtx4090"]  # type: ignore[union-attr]
    both = _plan(cli, "--gpus", "4090,L40S", "llama-3.1-8b", "--max-gpus", "1")
    assert sorted(o["gpu"] for o in both["options"]) == ["l40s", "rtx4090"]  # type: ignore[union-attr]
    done = cli("plan", "--gpus", "4090", "L40S", "llama-3.1-8b")  # a second name is not the model: argparse says so
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr


def test_expert_parallel_flag_changes_the_assumed_placement(cli: Runner) -> None:
    default = _plan(cli, "mixtral-8x7b", "--gpus", "H100", "--count", "4")
    ep = _plan(cli, "mixtral-8x7b", "--gpus", "H100", "--count", "4", "--expert-parallel")
    (d,), (e,) = default["options"], ep["options"]  # type: ignore[misc]
    assert d["notes"][-1].startswith("experts tensor-parallel") and e["notes"][-1].startswith("expert parallel")
    assert e["decode_tokens_per_s"] < d["decode_tokens_per_s"]


def test_the_plans_hints_and_errors_name_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """The planner's hints (`fits with gradient_checkpointing='full'`, `at seq_len=128`, `use method='lora'`) and
    errors (`unknown kv_dtype`, `needs zero_stage >= 1`, `set_price(...)`) are written with `plan`'s flags."""
    from holysheep.cli import main

    assert main(["plan", "70b", "--train", "qlora", "--gradient-checkpointing", "none"]) == 0
    out = capsys.readouterr().out
    for hint in ("fits with --gradient-checkpointing 'full' (", "fits at --seq-len 128 (", "use --train lora on TPU"):
        assert hint in out, hint
    assert not re.search(r"(?<![\w.-])[a-z]+_[a-z_]*=", out)
    for argv, says in [
        (["--kv-dtype", "bogus"], "unknown --kv-dtype 'bogus'; use one of "),
        (["--train", "--offload-optimizer"], "--offload-optimizer needs --zero >= 1 (DeepSpeed ZeRO-Offload); set "
                                             "--zero 1, 2 or 3\n"),
        (["--api-model", "no-such-api-model"], "Name a model of the price catalog (docs/hardware.md, API prices).\n"),
    ]:
        assert main(["plan", "70b", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("holysheep plan: error: ") and says in err, err


def test_the_vllm_default_has_one_definition(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI's plan, `run_plan` and `estimate_inference_memory` use `DEFAULT_VLLM_VERSION`, and `--help`
    names it."""
    import inspect

    from holysheep.cli import main
    from holysheep.estimator import estimate_inference_memory
    from holysheep.estimator._vllm import DEFAULT_VLLM_VERSION, VLLM_PROFILES
    from holysheep.hardware._cli import run_plan

    assert DEFAULT_VLLM_VERSION in VLLM_PROFILES
    for fn in (estimate_inference_memory, run_plan):
        assert inspect.signature(fn).parameters["vllm_version"].default == DEFAULT_VLLM_VERSION
    assert main(["plan", "--help"]) == 0
    assert f"(default: {DEFAULT_VLLM_VERSION}, the V1 engine" in " ".join(capsys.readouterr().out.split())


def test_runtime_release_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """--vllm-version, --transformers-version and --sglang-version reach the estimate (vLLM 0.4's step is not
    overlapped: slower; transformers 4.40 builds the whole prompt's logits: more activation memory; SGLang 0.4.3
    runs DeepSeek's MoE through Triton's fused MoE: slower); given for another runtime, or malformed or unknown,
    they exit 2 naming the flag."""
    from holysheep.cli import main

    def plan(*args: str) -> dict[str, object]:
        assert main(["plan", "llama-3.1-8b", "--gpus", "A100", "--top", "1", "--json", *args]) == 0
        data: dict[str, object] = json.loads(capsys.readouterr().out)
        return data

    def decode(data: dict[str, object]) -> float:
        (opt,) = data["options"]  # type: ignore[misc]
        return float(opt["decode_tokens_per_s"])

    def activations(data: dict[str, object]) -> float:
        return float(data["memory"]["breakdown_gb"]["activations"])  # type: ignore[index]

    assert decode(plan("--runtime", "vllm")) > decode(plan("--runtime", "vllm", "--vllm-version", "0.4")) > 0
    hf = ("--runtime", "hf", "--context", "8k")
    assert activations(plan(*hf, "--transformers-version", "4.40")) > activations(plan(*hf)) + 4
    ds = ["plan", "deepseek-v3", "--gpus", "H200", "--count", "8", "--runtime", "sglang", "--json"]
    assert main([*ds, "--sglang-version", "0.4.3.post2"]) == 0  # 0.4.0-0.4.3: Triton fused MoE, 58 x 510 us
    (old,) = json.loads(capsys.readouterr().out)["options"]
    assert main(ds) == 0
    (new,) = json.loads(capsys.readouterr().out)["options"]
    assert (round(old["decode_tokens_per_s"], 1), round(new["decode_tokens_per_s"], 1)) == (26.0, 112.4)
    assert old["caveats"] == [] and "sglang_version=0.4.3 models it" in new["caveats"][0]
    for args, says in (
            (["--vllm-version", "0.4"], "--vllm-version 0.4 applies to --runtime vllm: add --runtime vllm, or drop "
                                        "--vllm-version"),
            (["--runtime", "hf", "--vllm-version", "v1"], "--vllm-version v1 applies to --runtime vllm"),  # given
            (["--runtime", "vllm", "--vllm-version", "9.9"], "unknown --vllm-version '9.9'; use one of v1,"),
            (["--runtime", "sglang", "--transformers-version", "4.40"], "--transformers-version 4.40 applies to "
                                                                       "--runtime hf"),
            (["--runtime", "hf", "--transformers-version", "abc"], "--transformers-version must look like 4.44"),
            (["--sglang-version", "0.4.3"], "--sglang-version 0.4.3 applies to --runtime sglang: add --runtime "
                                            "sglang, or drop --sglang-version"),
            (["--runtime", "sglang", "--sglang-version", "0.4"], "--sglang-version must look like 0.4.3 or "
                                                                 "0.4.3.post2, got '0.4'")):
        assert main(["plan", "llama-3.1-8b", *args]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith(f"holysheep plan: error: {says}"), captured.err
