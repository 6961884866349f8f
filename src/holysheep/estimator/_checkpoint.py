"""The weight format a checkpoint's ``quantization_config`` declares, with the modules it leaves unquantized.

Read formats (each with its list of modules kept at their own dtype):

* ``fp8`` (transformers' fine-grained FP8, DeepSeek-V3 style) and ``fbgemm_fp8``: ``modules_to_not_convert``
  (or vLLM's ``ignored_layers``), matched as substrings of the module name, as transformers does.
* ``compressed-tensors`` (llm-compressor): the first config group's ``weights`` and ``input_activations``
  give W8A8 INT8, W8A8/W8A16 FP8, W4A16 INT4 (``pack-quantized``) or NVFP4; ``ignore`` holds exact module
  names or ``re:`` regular expressions (``re.match`` on the full name).
* ``modelopt`` (TensorRT Model Optimizer): ``quant_algo`` FP8 or NVFP4; ``exclude_modules`` (or ``ignore``)
  are shell-style globs (``model.layers.*.self_attn*``).
* ``awq``, ``gptq`` (4-bit), ``mxfp4`` and bitsandbytes, as before.

Module names follow the Llama/Qwen/DeepSeek layout (``model.layers.{i}.self_attn.q_proj``,
``model.layers.{i}.mlp.experts.{j}.down_proj``, ``lm_head``); ``weight_bytes`` counts a matrix kind
unquantized in the share of its layers that a pattern matches.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence

from ._params import WeightMatrix
from ._shape import ArchShape

__all__ = ["matches", "module_paths", "read_quantization_config"]

_ATTENTION = {"q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"}


def module_paths(m: WeightMatrix, arch: ArchShape) -> list[str]:
    """The module names one matrix kind stands for, one per layer that holds it (one for embeddings / lm_head).

    MoE layers are taken as the last ``num_moe_layers`` (dense layers first, as DeepSeek-V3 orders them).
    """
    if m.name.startswith("embed_"):
        return [f"model.{m.name}"]
    if m.name == "lm_head":
        return ["lm_head"]
    layers = int(arch.num_hidden_layers)
    first = 0
    if m.name in _ATTENTION or m.name.startswith("indexer."):
        n, leaf = int(arch.num_attention_layers), f"self_attn.{m.name}"
    elif m.name.startswith("linear_attn."):
        n, leaf = layers - int(arch.num_attention_layers), m.name
    elif m.name.startswith(("experts.", "shared_experts.")) or m.name in ("router", "shared_expert_gate"):
        part = "gate" if m.name == "router" else m.name.replace("experts.", "experts.0.", 1) \
            if m.name.startswith("experts.") else m.name
        n, leaf = int(arch.num_moe_layers), f"mlp.{part}"
        first = layers - n
    else:
        n, leaf = int(arch.num_dense_layers), f"mlp.{m.name}"
    return [f"model.layers.{first + i}.{leaf}" for i in range(max(n, 1))]


def matches(path: str, patterns: Sequence[str], syntax: str) -> bool:
    """Whether ``path`` is named by one of ``patterns`` under the format's ``syntax`` (substring, ct, glob)."""
    for p in patterns:
        if syntax == "glob":
            if fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, f"*.{p}"):
                return True
        elif syntax == "ct":
            if (p.startswith("re:") and re.match(p[3:], path)) or path == p or path.endswith(f".{p}"):
                return True
        elif p and p in path:
            return True
    return False


def _ct_format(qc: Mapping[str, object]) -> tuple[str | None, str]:
    """compressed-tensors: (format, description) from the first config group."""
    groups = qc.get("config_groups")
    group = next(iter(groups.values()), None) if isinstance(groups, Mapping) and groups else None
    if not isinstance(group, Mapping) or not isinstance(group.get("weights"), Mapping):
        return None, "no config group with weights"
    w, a = group["weights"], group.get("input_activations")
    bits, kind = w.get("num_bits"), str(w.get("type") or "int")
    acts = isinstance(a, Mapping) and a.get("num_bits") is not None
    if bits == 8 and kind == "float":
        return "fp8", "FP8 W8A8" if acts else "FP8 W8A16"
    if bits == 8 and kind == "int" and acts:
        return "int8-w8a8", "INT8 W8A8"
    if bits == 4 and kind == "float" and w.get("group_size") == 16:
        return "nvfp4", "NVFP4"
    if bits == 4 and kind == "int" and not acts:
        return "int4-w4a16", "INT4 W4A16"
    return None, f"{bits}-bit {kind} weights"


def read_quantization_config(qc: Mapping[str, object]) -> tuple[str | None, tuple[str, ...], str, str | None]:
    """``(format name or None, unquantized patterns, their syntax, warning)`` for a ``quantization_config``."""
    method = str(qc.get("quant_method") or "").lower().replace("_", "-")
    bits = qc.get("bits", qc.get("w_bit"))
    name: str | None = {"fp8": "fp8", "mxfp4": "mxfp4", "fbgemm-fp8": "fp8"}.get(method)
    keep: object = qc.get("modules_to_not_convert") or qc.get("ignored_layers") or ()
    syntax, detail = "substring", method
    if method in ("awq", "gptq") and bits == 4:
        name = f"int4-{method}"
    elif method == "bitsandbytes":
        name = "nf4" if qc.get("load_in_4bit") else "int8" if qc.get("load_in_8bit") else None
    elif method == "compressed-tensors":
        name, detail = _ct_format(qc)
        keep, syntax = qc.get("ignore") or (), "ct"
    elif method == "modelopt":
        algo = str(qc.get("quant_algo") or "").upper()
        name, detail = {"FP8": "fp8", "NVFP4": "nvfp4"}.get(algo), f"ModelOpt {algo or '?'}"
        keep, syntax = qc.get("exclude_modules") or qc.get("ignore") or (), "glob"
    patterns = tuple(str(k) for k in keep) if isinstance(keep, (list, tuple)) else ()
    if name is None:
        return None, (), syntax, (f"config.json's quantization_config (quant_method {method or '?'!r}, {detail}) "
                                  "is not read: the weights are planned in bf16; pass quant= with the checkpoint's "
                                  "format")
    return name, patterns, syntax, None
