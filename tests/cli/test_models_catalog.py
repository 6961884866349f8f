"""``holysheep models --catalog``: the estimator's catalog, listed offline without a key (subprocess)."""

from __future__ import annotations

import json

import pytest

from holysheep.estimator import get_architecture, list_models

from .conftest import Runner, clean_env

pytestmark = pytest.mark.integration


def test_catalog_json_lists_every_model_offline_without_a_key(cli: Runner) -> None:
    # an unreachable base URL and no key: the catalog must not touch the network or ask for a key
    done = cli("--json", "models", "--catalog", env=clean_env(HOLYSHEEP_BASE_URL="http://127.0.0.1:9/v1"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    rows = json.loads(done.stdout)
    assert [r["name"] for r in rows] == list_models()
    by_name = {r["name"]: r for r in rows}
    moe = by_name["Qwen3-30B-A3B"]
    assert (moe["params"], moe["active_params"], moe["context"], moe["quant"]) == (
        30_532_122_624, 3_353_032_704, 40960, "bf16")
    assert by_name["gpt-oss-120b"]["quant"] == "mxfp4" and by_name["DeepSeek-R1"]["quant"] == "fp8"
    assert by_name["Qwen2.5-72B"]["context"] == 32768
    oss = by_name["gpt-oss-20b"]
    assert (oss["active_params"], oss["active_convention"], oss["active_params_all"]) == (
        3_608_307_264, "no_input_embedding", 4_187_440_704)
    assert all(r["source"].endswith("config.json") and len(r["as_of"]) == 10 for r in rows)


def test_catalog_table(cli: Runner) -> None:
    done = cli("models", "--catalog")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["Model", "Family", "Params", "Active", "Context", "Quant"]
    assert len(lines) == 3 + len(list_models()) and lines[-1].startswith("Active: counted as each model card does")
    oss = next(ln for ln in lines if ln.startswith("gpt-oss-20b "))
    assert oss.split()[3] == "3.61B*"  # the card's convention, labelled
    scout = next(ln for ln in lines if ln.startswith("Llama-4-Scout-17B-16E "))
    arch = get_architecture("Llama-4-Scout-17B-16E")
    assert scout.split()[1:] == ["llama4", f"{arch.num_params / 1e9:.2f}B", f"{arch.num_active_params / 1e9:.2f}B",
                                 "10,485,760", "bf16"]
