"""Size the GPU memory for serving a model, pick the hardware, and compare the cost with the API.

Offline: needs no server and no key (the estimator, GPU table and price catalog ship with the package).

    python examples/estimate_and_pick.py
"""

from __future__ import annotations


def main() -> None:
    # --8<-- [start:main]
    from holysheep.estimator import estimate_inference_memory
    from holysheep.hardware import pick_hardware
    from holysheep.pricing import break_even, price_for

    est = estimate_inference_memory("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    print(est)  # weights / KV cache / activations / overhead, in GB and GiB
    print(f"total {est.total_gb:.1f} GB; fits one H100: {est.fits('H100', count=1)}")

    options = pick_hardware(est, max_gpus=8, objective="cost")  # print(options) shows the full table
    for opt in options[:5]:  # best first
        cost = f"${opt.cost_per_million_tokens:.2f}/M" if opt.cost_per_million_tokens is not None else "no price"
        print(f"{opt.label:<36} {opt.decode_tokens_per_s:>7.1f} tok/s  {cost}")
    for rej in options.rejected:  # one per GPU that cannot serve it, with the reason
        print(f"rejected {rej.gpu.name}: {rej.reason}")
    best = options[0]

    api = price_for("deepseek-v3.2")
    print(f"API: deepseek-v3.2 at ${api.input_per_m}/M input, ${api.output_per_m}/M output tokens")
    be = break_even(api_model="deepseek-v3.2", option=best, tokens_per_day=10_000_000)
    print(be.arithmetic)
    # --8<-- [end:main]


if __name__ == "__main__":
    main()
