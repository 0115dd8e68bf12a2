import json

import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.design import Slo, _plans, candidates, design, hf_config, objective
from llm_codesign.explore.search import SearchSpace, search
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

FP8 = Precision.of("fp8", kv="fp8")


@pytest.fixture(scope="module")
def result():
    g = get_gpu("b200")
    return design(70e9, g, calibration_for(g), 8, Slo("throughput"), baseline=get_model("llama-3.1-70b"), prec=FP8)


def test_designs_meet_budget_and_quality(result):
    base_q = result["baseline"]["quality_proxy"]
    assert result["designs"]
    for d in result["designs"]:
        assert abs(d["total_params"] / 70e9 - 1) <= 0.1
        assert d["quality_proxy"] <= base_q * 1.002
        assert d["objective"] > 0 and d["gain_pct"] is not None
        m = from_hf_config(hf_config(d, 128256))
        assert m.total_params == d["total_params"]  # the exported config is the evaluated shape
    objs = [d["objective"] for d in result["designs"]]
    assert objs == sorted(objs, reverse=True)


def test_baseline_reproduces_its_pareto_result():
    g = get_gpu("h200")
    cal = calibration_for(g)
    m = get_model("llama-3.1-70b")
    slo = Slo("throughput", min_tps_user=30.0)
    plan, inst = _plans(8, g, moe=False, long_context=False)
    v, *_ = objective(m, g, cal, FP8, plan, inst=inst, slo=slo)
    r = search(m, g, cal, SearchSpace(8, adp=(1,), kvp=(1,), precisions=(FP8,)), isl=1024, osl=1024, min_tps_user=30.0)
    best = max(p.output_tok_s_per_gpu for p in r.points)
    assert float(v[0]) == pytest.approx(best, rel=1e-9)


def test_aligned_variants_rank_above_misaligned_baseline():
    # a dense baseline with gpt-oss's misaligned hidden size (2880); lint cost on B200 is positive
    g = get_gpu("b200")
    cal = calibration_for(g)
    cfg = {"hidden_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
           "vocab_size": 128256, "intermediate_size": 7680}
    base = from_hf_config(cfg, "misaligned")
    from llm_codesign.explore.lint import lint

    assert any(f.rule == "R2" and f.where == "hidden" and f.cost_pct > 0 for f in lint(base, g, cal))
    r = design(base.total_params, g, cal, 8, Slo("throughput"), baseline=base, prec=FP8, quality_tol=0.002)
    assert r["designs"] and r["designs"][0]["objective"] > r["baseline"]["objective"]
    assert all(d["shape"]["hidden"] % 128 == 0 for d in r["designs"])


def test_candidates_and_errors():
    c = candidates(8e9, moe=True, tol=0.1)
    assert len(c["hidden"]) > 100 and np.all(np.abs(c["total_params"] / 8e9 - 1) <= 0.1)
    assert np.all(c["active_params"] < c["total_params"])
    from llm_codesign.errors import InputError

    with pytest.raises(InputError, match="params"):
        candidates(-1, moe=False)
    json.dumps(hf_config({"shape": {k: int(c[k][0]) for k in ("hidden", "layers", "heads", "kv_heads", "head_dim", "experts", "top_k",
                                                                "expert_inter", "shared_inter")}}, 1000))


def test_nsga2_finds_feasible_designs():
    pytest.importorskip("optuna")
    from llm_codesign.explore.design import design_nsga2

    g = get_gpu("b200")
    r = design_nsga2(70e9, g, calibration_for(g), 8, Slo("throughput"), baseline=get_model("llama-3.1-70b"), prec=FP8,
                     quality_tol=0.01, trials=60)
    assert r["designs"] and r["trials"] == 60
    for d in r["designs"]:
        assert abs(d["total_params"] / 70e9 - 1) <= 0.1 and d["quality_proxy"] <= r["baseline"]["quality_proxy"] * 1.01
