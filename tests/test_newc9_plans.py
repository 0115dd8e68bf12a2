"""newc9 #3 and #7: plans an engine cannot launch are neither priced nor offered, and a refusal names the plans that are.
#3: SGLang asserts speculative_algorithm is None for pp_size > 1 (server_args.py:5136-5141@0.5.9), yet the MI355X
frontier's top points were "TP1 PP2" with MTP, and export paired the FP8 deepseek-ai/DeepSeek-R1 with --quantization
mxfp4. #7: TP16 over two 8-GPU nodes was refused with no plan it prices on those 16 GPUs."""
import csv

import numpy as np
from conftest import cli

from llm_codesign.spec.engines import get_engine

DSR1_MI355X = ("deepseek-r1", "--gpu", "mi355x", "--weight-dtype", "mxfp4", "--kv-dtype", "fp8")


def test_sglang_runs_no_speculation_under_pipeline_parallelism():
    pp, k = np.array([1, 2, 4]), np.array([[0], [1], [3]])
    # rows k = 0, 1, 3; columns pp = 1, 2, 4: only k = 0 (no speculation) or pp = 1 launches
    assert get_engine("sglang").runs_spec(pp, k).tolist() == [[True, True, True], [True, False, False], [True, False, False]]
    assert get_engine("trtllm").runs_spec(pp, k).all() and get_engine("vllm").runs_spec(pp, k).all()
    code, out, err = cli("estimate", *DSR1_MI355X, "--gpus", "2", "--tp", "1", "--pp", "2", "--spec", "mtp", "--concurrency", "64")
    assert code == 2 and "Traceback" not in err
    assert err.strip() == ("error: pp: 2 is not valid; 1 with speculative decoding on SGLang (server_args.py:5136-5141@0.5.9 "
                           "asserts speculative_algorithm is None for pp_size > 1; 0.5.23 allows it on disaggregated prefill "
                           "nodes alone); drop --spec, or --pp 1")
    code, _, err = cli("estimate", *DSR1_MI355X, "--gpus", "2", "--tp", "1", "--pp", "2", "--concurrency", "64")
    assert code == 0, err  # without speculation PP2 launches


def test_the_frontier_offers_no_pp_with_speculation_on_sglang(tmp_path):
    """The reviewer's search: before, 6 of its points were TP1 PP2 with MTP k=1 (3,258-3,961 tok/s/GPU); now the PP2 points
    are there without speculation only, and every MTP point is PP1."""
    out = tmp_path / "ds.csv"
    code, _, err = cli("pareto", "deepseek-r1", "--gpu", "mi355x", "--gpus", "8", "--isl", "1024", "--osl", "1024", "--spec", "mtp",
                       "--csv", str(out))
    assert code == 0, err
    rows = list(csv.DictReader(out.open()))
    assert any(r["spec"] == "mtp" for r in rows) and any("PP2" in r["plan"] for r in rows)
    assert not [r["plan"] for r in rows if r["spec"] == "mtp" and " PP" in r["plan"]]


def test_sglang_export_names_amd_mxfp4_checkpoint_and_no_quantization(tmp_path):
    """An MXFP4 answer on CDNA prices AMD's Quark checkpoint (spec.plan.quark_mxfp4): the launch loads it, with no
    --quantization (its own quantization_config; SGLang refuses an FP8 checkpoint under --quantization mxfp4), and import
    reads it back as deepseek-r1 at the header's formats."""
    f = tmp_path / "ds.sh"
    code, _, err = cli("export", *DSR1_MI355X, "--gpus", "2", "--replicas", "4", "--tp", "2", "--concurrency", "256", "-o", str(f))
    assert code == 0, err
    text = f.read_text()
    assert "--model-path amd/DeepSeek-R1-0528-MXFP4-Preview" in text and "  --quantization" not in text
    assert "# weights: mxfp4, read from amd/DeepSeek-R1-0528-MXFP4-Preview (the registry's mxfp4 checkpoint of this shape)" in text
    code, out, err = cli("import", str(f))
    assert code == 0, err
    assert "deepseek-r1 on 8x MI355X: 4 replicas of TP2" in " ".join(out.split())


def test_tp_over_two_nodes_names_the_plans_priced_on_those_gpus():
    """TP16 on 8-GPU scale-up domains: the plans on the same 16 GPUs keeping TP within a node, widest TP first (TP8), the
    rest as pipeline stages (16 / 8 = PP2) or, for a MoE model, attention-DP ranks (DP2 x TP8 with EP over all 16)."""
    code, _, err = cli("estimate", "llama-3.1-405b", "--gpu", "mi300x", "--tp", "16", "--concurrency", "16")
    assert code == 2
    assert err.strip().endswith("a tensor-parallel group must fit in one scale-up domain (AMD's Infinity Fabric) of 8 GPUs; "
                                "plans priced on 16 GPUs: TP8 PP2")
    code, _, err = cli("estimate", "deepseek-r1", "--gpu", "h100", "--tp", "16", "--ep", "16", "--backend", "sglang", "--concurrency", "16")
    assert code == 2
    # EP16 kept where a stage holds 16 GPUs (attention DP), else gcd(16, 8) = EP8 over a PP stage's 8
    assert err.strip().endswith("plans priced on 16 GPUs: TP8 PP2 EP8 or DP2xTP8 EP16")
    # TensorRT-LLM launches attention DP at TP1 only (TRTLLM.runs_plans): PP alone
    code, _, err = cli("estimate", "deepseek-r1", "--gpu", "h100", "--tp", "16", "--ep", "16", "--concurrency", "16")
    assert code == 2 and err.strip().endswith("plans priced on 16 GPUs: TP8 PP2 EP8")
    # and the plan offered is priced
    code, _, err = cli("estimate", "deepseek-r1", "--gpu", "h100", "--tp", "8", "--pp", "2", "--ep", "8", "--backend", "sglang",
                       "--concurrency", "16")
    assert code == 0, err


def test_sweep_takes_its_models_positionally_too(tmp_path):
    """newc9 #14: `sweep llama-3.1-8b` read as no --models. Positional models join --models'; none at all is one line."""
    import pandas as pd

    out = tmp_path / "s.parquet"
    code, _, err = cli("sweep", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--out", str(out))
    assert code == 0, err
    assert set(pd.read_parquet(out)["model"]) == {"llama-3.1-8b"}
    code, _, err = cli("sweep", "llama-3.1-8b", "--models", "qwen3-8b", "--gpu", "h100", "--gpus", "1", "--out", str(out))
    assert code == 0, err
    assert set(pd.read_parquet(out)["model"]) == {"llama-3.1-8b", "qwen3-8b"}
    code, _, err = cli("sweep", "--gpu", "h100", "--out", str(out))
    assert code == 2 and err.strip() == ("error: models: missing; give one or more models, positionally (sweep llama-3.1-8b) "
                                         "or as --models NAME[,NAME]")


def test_disagg_says_what_its_prefill_req_s_is():
    """newc9 #18: "prefill 1x TP2 (3.34 req/s)" beside a 315.1 ms prefill (1 / 0.3151 = 3.17 req/s). The rate is the pool's
    capacity with each 8,192-token step holding 8192 / 4096 = 2 prompts, whose step is cheaper per prompt than one alone."""
    import json

    code, out, err = cli("disagg", "llama-3.1-70b", "--gpu", "h200", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--isl", "4096",
                         "--osl", "512", "--prefill", "tp=2", "--decode", "tp=4", "--json")
    assert code == 0, err
    d = json.loads(out)
    p, lone_ms = d["prefill"], d["rows"][0]["prefill_ms"]
    assert p["capacity_note"] == ("the prefill pool's capacity, its steps filled with prompts up to the step budget (8,192 tokens a "
                                  "rank: 2 prompts of 4,096); the prefill column is one request's alone, so 1 / it is less")
    assert p["capacity_req_s"] > 1e3 / lone_ms  # 3.34 > 3.17
    code, out, err = cli("disagg", "llama-3.1-70b", "--gpu", "h200", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--isl", "4096",
                         "--osl", "512", "--prefill", "tp=2", "--decode", "tp=4")
    assert code == 0 and f"req/s: {p['capacity_note']}." in " ".join(out.split())
