"""The figures docs/estimator.md quotes are the ones the code gives with the defaults: each assertion computes the
number with the real estimator and CLI and looks for it, formatted as the page writes it, in the page
(whitespace-normalised). A code change that moves a quoted figure fails here until the page is updated."""

from __future__ import annotations

from ._pages import says
from ._util import ROOT

# --- docs/estimator.md -----------------------------------------------------------------------------------


def test_estimator_as_shipped_formats() -> None:
    from holysheep.estimator import estimate_inference_memory as inf

    small, big, ds = inf("gpt-oss-20b"), inf("gpt-oss-120b"), inf("deepseek-v3")
    small_bf16, ds_bf16 = inf("gpt-oss-20b", quant="bf16"), inf("deepseek-v3", quant="bf16")
    says("estimator.md",
        f"plans {ds.breakdown['weights']:,.0f} GB of fp8 weights (8x H200 fits; bf16 would be "
        f"{ds_bf16.breakdown['weights']:,.0f} GB), gpt-oss-120b needs {big.total_gb:.0f} GB (one H100) and "
        f"gpt-oss-20b {small.total_gb:.1f} GB ({small.breakdown['weights'] * 1e9 / 2**30:.1f} GiB of weights) "
        f"instead of {small_bf16.total_gb:.1f} GB in bf16.")
    assert ds.fits("H200", 8) and big.fits("H100") and not ds_bf16.fits("H200", 8)


def test_estimator_runtime_paragraph() -> None:
    from holysheep.estimator import estimate_inference_memory as inf

    default = inf("llama-3.1-70b", quant="int4-awq", context=8192)
    vllm = inf("llama-3.1-70b", quant="int4-awq", context=8192, runtime="vllm")
    check = vllm.memory_check("L40S", 1)
    cpp = inf("llama-3.1-70b", "q4_k_m", 8192, runtime="llama.cpp").with_tensor_parallel(2)
    says("estimator.md",
        f"Llama-3.1-70B AWQ at 8k, batch 1 needs {default.total_gb:.1f} GB on the default runtime and fits one L40S",
        f"under vLLM it needs {check.need_gb:.1f} GB of the {check.limit_gb:.1f} GB",
        f"Llama-3.1-70B Q4_K_M at 8k on llama.cpp needs {cpp.per_gpu_gb:.1f} GB on each of 2 × RTX 4090")
    assert default.fits("L40S") and not check.fits
    at_092 = inf("llama-3.1-70b", quant="int4-awq", context=8192, runtime="vllm", gpu_memory_utilization=0.92)
    assert at_092.fits("L40S")
    says("estimator.md", "fits at 0.92")


def test_estimator_solver_example_is_what_plan_prints() -> None:
    from holysheep.estimator import max_batch, max_context
    from holysheep.hardware._cli import run_plan

    ctx, seqs = max_context("llama-3.1-8b", "L4"), max_batch("llama-3.1-8b", "L4", 8192)
    line = (f"at most {ctx:,} tokens of context on this GPU at batch 1; at most {seqs} sequences of 8,192 tokens")
    text, _ = run_plan("llama-3.1-8b", gpus=["L4"], context=8192)
    assert line in text
    says("estimator.md", f'"{line}" for Llama-3.1-8B BF16 on an L4')


def test_estimator_qlora_paragraph() -> None:
    from holysheep.estimator import estimate_training_memory as tr

    at2k = tr("llama-3.1-70b", method="qlora", seq_len=2048)
    at1k = tr("llama-3.1-70b", method="qlora", seq_len=1024)
    bare = tr("llama-3.1-70b", method="qlora", seq_len=2048, gradient_checkpointing="none")
    b = at2k.breakdown
    says("estimator.md",
        f"at 2,048 tokens × 1 needs {at2k.per_gpu_gb:.1f} GB ({b['weights']:.1f} nf4 base + adapters, "
        f"{b['gradients']:.1f} grads, {b['activations']:.1f} activations, {b['overhead']:.1f} CUDA context)",
        f"at 1,024 tokens ({at1k.per_gpu_gb:.1f} GB) it does",
        f"Without checkpointing it needs {bare.per_gpu_gb:.1f} GB")
    assert not at2k.fits("L40S") and at1k.fits("L40S")


def test_estimator_blog_comparison_table() -> None:
    from holysheep.estimator import estimate_inference_memory as inf
    from holysheep.estimator import estimate_training_memory as tr

    fp16 = inf("llama-2-7b", quant="fp16", context=2048)
    int8 = inf("llama-2-7b", quant="int8", context=2048)
    b70 = inf("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    l2 = inf("llama-2-70b", quant="int4-awq", context=8192, batch=4)
    kv8 = inf("llama-3.1-70b", quant="int4-awq", context=8192, batch=4, kv_dtype="fp8")
    f, e, w = fp16.breakdown, int8.breakdown, b70.breakdown
    seven, seventy = tr("llama-2-7b", seq_len=2048), tr("llama-3.1-70b", seq_len=2048)
    z3 = tr("llama-3.1-70b", seq_len=2048, zero_stage=3, num_gpus=8)
    z3_paper = tr("llama-3.1-70b", seq_len=2048, zero_stage=3, num_gpus=8, accounting="zero-paper")
    states = sum(v for k, v in seven.breakdown.items() if k not in ("activations", "overhead"))
    eager = tr("llama-2-7b", seq_len=2048, flash_attention=False).breakdown["activations"]
    full = tr("llama-2-7b", seq_len=2048, gradient_checkpointing="full").breakdown["activations"]
    says("estimator.md",
        f"**{fp16.total_gb:.2f} GB**: {f['weights']:.2f} weights + {f['kv_cache']:.2f} KV + "
        f"{f['activations']:.2f} prefill + {f['overhead']:.2f} runtime",
        f"**{int8.total_gb:.2f} GB**: {e['weights']:.2f} weights (embeddings and lm_head stay fp16) + "
        f"{e['kv_cache']:.2f} KV",
        f"**{b70.total_gb:.1f} GB** (Llama-3.1-70B: {w['weights']:.1f} weights + {w['kv_cache']:.1f} KV + "
        f"{w['activations']:.1f} + {w['overhead']:.1f}); {l2.total_gb:.1f} GB for Llama-2-70B; "
        f"{kv8.total_gb:.1f} GB with fp8 KV",
        f"**{seven.per_gpu_gb:.0f} GB** at s = 2048 with FlashAttention ({states:.0f} GB states + "
        f"{seven.breakdown['activations']:.1f} activations)",
        f"**{seventy.per_gpu_gb:,.0f} GB** at s = 2048; ZeRO-3 × 8: {z3.per_gpu_gb:.0f} GB/GPU "
        f"({z3_paper.per_gpu_gb:.0f} with `accounting=\"zero-paper\"`)",
        f"{seven.breakdown['activations']:.1f} GB (7B, s 2048, FlashAttention), {eager:.1f} GB without it, "
        f"{full:.1f} GB with full recompute")


def test_estimator_measured_rows() -> None:
    from holysheep.estimator import estimate_inference_memory as inf
    from holysheep.estimator import estimate_training_memory as tr

    a100 = 79.15 * 2**30 / 1e9
    blocks = {}
    for v in ("0.2.5", "0.2.5-pre", "v1"):
        r1 = inf("Llama-2-7B", "fp16", 4096, 1, runtime="vllm", gpu_memory_gb=a100, vllm_version=v).vllm
        r2 = inf("Llama-2-70B", "fp16", 4096, 1, tensor_parallel=4, runtime="vllm", gpu_memory_gb=a100,
                 vllm_version=v).vllm
        assert r1 is not None and r2 is not None
        blocks[v] = (r1.num_gpu_blocks, r2.num_gpu_blocks)
    (new1, new2), (pre1, pre2), (v1_1, v1_2) = blocks["0.2.5"], blocks["0.2.5-pre"], blocks["v1"]

    def pct(ours: int, measured: int) -> str:
        return f"+{(ours / measured - 1) * 100:.2f} %"

    says("estimator.md",
        f"`0.2.5`: {new1:,} · `0.2.5-pre`: {pre1:,} (vs 7,449) · `v1`: {v1_1:,}",
        f"`0.2.5`: {new2:,} · `0.2.5-pre`: {pre2:,} (vs 31,615) · `v1`: {v1_2:,}",
        f"It gives {pre1:,} and {pre2:,} blocks against the measured 7,449 and 31,615 "
        f"({pct(pre1, 7449)} and {pct(pre2, 31615)})",
        f"It gives {new1:,} and {new2:,} against 7,351 and 20,865 ({pct(new1, 7351)} and {pct(new2, 20865)})")

    def states(opt: str) -> float:
        t = tr("Llama-2-7B", "bf16-true", opt, seq_len=512, gradient_checkpointing="full")
        return sum(v for k, v in t.breakdown.items() if k != "activations")

    says("estimator.md", f"{states('adamw'):.1f} / {states('adamw-8bit'):.1f} / {states('sgd-no-momentum'):.1f} GB "
                        "(states + overhead) | ±10 %")


# --- docs/estimator.md, Validation 1: the parameter-count tables ------------------------------------------


def _count_rows(heading: str) -> list[list[str]]:
    text = (ROOT / "docs" / "estimator.md").read_text(encoding="utf-8")
    start = text.index(heading)
    section = text[start:text.index("\n#", start + len(heading))]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| model") and "---" not in line]


def test_the_parameter_count_table_is_the_catalog_count() -> None:
    from holysheep.estimator import get_architecture

    rows = _count_rows("### 1. Parameter counts")
    pairs = [(r[i], r[i + 1]) for r in rows for i in (0, 3) if r[i]]
    assert len(pairs) == 19
    for name, ours in pairs:
        arch = get_architecture(name)
        shown = f"{arch.num_params:,}"
        if arch.num_active_params != arch.num_params:
            shown += f" ({arch.num_active_params / 1e9:.2f}B active)"
        assert ours == shown, (name, ours, shown)


def test_the_families_table_is_the_code_count() -> None:
    import json

    from holysheep.estimator import Architecture, get_architecture, list_models

    snapshots = json.loads((ROOT / "tests" / "estimator" / "data" / "hf_configs.json").read_text())["configs"]
    keys = {"Phi-2": ["phi-2"], "Pythia-12B": ["pythia-12b"], "GPT-NeoX-20B": ["gpt-neox-20b"],
            "Falcon-7B": ["falcon-7b"], "Command-R v01": ["command-r-v01"],
            "StarCoder2-3B / 15B": ["starcoder2-3b", "starcoder2-15b"]}
    rows = _count_rows("#### Families added in issue 30")
    assert len(rows) == 13
    for row in rows:
        name = row[0].split(" (")[0]
        if name in list_models():
            arch = get_architecture(name)
            shown = f"{arch.num_params:,}"
            if arch.mtp_params:
                shown += f" (+{arch.mtp_params / 1e9:.2f}B MTP"
            assert row[1].startswith(shown), (name, row[1], shown)
            if arch.mtp_params:
                assert f"= {(arch.num_params + arch.mtp_params) / 1e9:.1f}B)" in row[1], row[1]
        else:
            counts = [Architecture.from_hf_config(snapshots[k]["config"], k).num_params for k in keys[name]]
            assert row[1] == " / ".join(f"{c:,}" for c in counts), (name, row[1])
    v3, v32 = get_architecture("DeepSeek-V3"), get_architecture("DeepSeek-V3.2-Exp")
    says("estimator.md", f"lightning indexer, {v32.num_params - v3.num_params:,} params")


# --- docs/estimator.md: the quant, runtime and vLLM-profile tables -----------------------------------------


def _table(heading: str) -> dict[str, list[str]]:
    text = (ROOT / "docs" / "estimator.md").read_text(encoding="utf-8")
    start = text.index(heading)
    section = text[start:text.index("\n\n", text.index("\n|", start) + 1)]
    return {cells[0]: cells[1:] for line in section.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}


def test_the_quant_table_is_each_spec() -> None:
    from holysheep.estimator import quant_spec

    rows = _table("| quant | bits/weight |")

    def bits(*names: str) -> tuple[list[str], str]:
        specs = [quant_spec(n) for n in names]
        emb = {f"{s.embedding_bits:g}" for s in specs}
        same = all(s.embedding_bits == s.bits_per_weight for s in specs)
        return [f"{s.bits_per_weight:g}" for s in specs], "same" if same else emb.pop()

    for label, names in {"fp32 / bf16 / fp16": ("fp32", "bf16", "fp16"), "fp8 (E4M3)": ("fp8",),
                         "int8 (LLM.int8)": ("int8",), "GGUF q8_0 / q6_k / q4_0": ("q8_0", "q6_k", "q4_0")}.items():
        values, emb = bits(*names)
        assert rows[label][:2] == [" / ".join(values), emb], label
    for label, name in {"int4-gptq g128": "int4-gptq", "int4-awq g128": "int4-awq", "nf4 + double quant": "nf4",
                        "GGUF q4_k_m": "q4_k_m"}.items():
        spec = quant_spec(name)
        shown = rows[label][0]
        figure = shown.split(" = ")[-1].split(" ")[0]
        assert figure == f"{spec.bits_per_weight:.{len(figure.split('.')[1])}f}", (label, shown)
        assert rows[label][1] == ("same" if spec.embedding_bits == spec.bits_per_weight else f"{spec.embedding_bits:g}")
    says("estimator.md", f"one fp32 absmax per 64 weights and no double quantization, "
                         f"{quant_spec('bnb-4bit').bits_per_weight:g} bits per weight")


def test_the_vllm_profiles_and_sglang_fractions() -> None:
    from holysheep.estimator import VLLM_PROFILES
    from holysheep.estimator._runtimes import sglang_mem_fraction

    def gib(n: int) -> str:  # as the table writes it: 0.15, 0.6, 0.77, 13.1, 0
        x = n / 2**30
        return f"{x:.2f}".rstrip("0").rstrip(".") if x < 1 else f"{x:.1f}"

    rows = _table("| profile | profile pass |")
    for name, profile in VLLM_PROFILES.items():
        row = rows[f"`{name}` (default)" if name == "v1" else f"`{name}`"]
        non_torch = f"{gib(profile.non_torch_bytes)} / {gib(profile.non_torch_bytes_tp)}"
        assert row[1] in (f"{non_torch} GiB", "0 / 0" if non_torch == "0 / 0" else None), (name, row)
        assert row[2].split(" ")[0] == gib(profile.cuda_graph_bytes), (name, row)
    fractions = ", ".join(f"{sglang_mem_fraction(tp):.2f} TP{tp}" for tp in (1, 2, 4, 8, 16))
    says("estimator.md", f"total × `mem_fraction_static` ({fractions})")


def test_estimator_kv_reserve_and_compute_buffer_figures() -> None:
    from holysheep.estimator import estimate_inference_memory as inf
    from holysheep.estimator import get_architecture
    from holysheep.hardware import gpu

    l40s = inf("llama-3.1-70b", quant="int4-awq", context=8192).memory_check("L40S", 1)
    says("estimator.md", f"fits one L40S ({gpu('L40S').reported_mib:,.0f} MiB = {gpu('L40S').memory_gb:.2f} GB as the "
                         f"driver reports it, less the 1 GB / 5 % reserve of runtimes without a utilization cap: "
                         f"{l40s.limit_gb:.1f} GB)")
    mib = 1e9 / 2**20
    fa = inf("llama-3.1-8b", "bf16", 8192, runtime="llama.cpp").breakdown["activations"] * mib
    eager = inf("llama-3.1-8b", "bf16", 8192, runtime="llama.cpp", flash_attention=False).breakdown["activations"] * mib
    says("estimator.md",
         f"For Llama-3-8B at 8k this is {round(fa, 1):g} MiB with `-fa` and {round(eager, 1):g} MiB without")
    per_token = [get_architecture(m).kv_cache_bytes_per_token("fp16") for m in ("llama-2-7b", "llama-3.1-8b",
                                                                                 "llama-3.1-70b")]
    says("estimator.md", " / ".join(f"{b:,}" for b in per_token) + " B | exact",
         f"{get_architecture('deepseek-v3').kv_cache_bytes_per_token('bf16'):,} B/token in bf16, and it is "
         "**replicated**")
    # what CUDA reports for an A100-SXM4-80GB (torch.cuda.mem_get_info), the figure the vLLM rows are run with
    says("estimator.md", f"an A100-80GB reports 79.15 GiB = {79.15 * 2**30 / 1e9:.2f} GB")
