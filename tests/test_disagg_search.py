"""explore/disagg_search.py: the disaggregated frontier (prefill x decode pools), each point repriced from its record."""
import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import disagg_pair, run

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.disagg import evaluate_disagg
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision

FP8 = Precision.of("fp8", kv="fp8")


def test_disaggregated_frontier_points_reprice_to_themselves(h200, llama70b):
    from llm_codesign.explore.disagg_search import decode_breakdown, search_disagg
    from llm_codesign.explore.search import SearchSpace

    cal = calibration_for(h200)
    r = search_disagg(llama70b, h200, cal, SearchSpace(8, precisions=(FP8,)), isl=4096, osl=512)
    fr = r.points
    assert len(fr) > 5 and r.mode == "disaggregated" and r.to_dict()["mode"] == "disaggregated"
    xs, ys = np.array([p.tok_s_per_user for p in fr]), np.array([p.output_tok_s_per_gpu for p in fr])
    assert np.all(np.diff(xs) > 0) and np.all(np.diff(ys) < 0)  # sorted and none dominates another
    for p in fr[:: max(1, len(fr) // 5)]:
        d = p.to_dict()["deployment"]  # the record --json prints: both pools' plans, rebuilt into the point's own
        assert d["instance_gpus"] * d["replicas"] == 8 and d["concurrency_per_instance"] == p.concurrency
        plans = [Plan.from_dict(d["prefill"]), Plan.from_dict(d["decode"])]
        # the decode pool states TensorRT-LLM's capture padded up to its own batch per rank (its default is unpadded: point_graphs;
        # the grid's largest, 16384, before crev9 #1): the unit's requests over its decode instances and their DP ranks
        rank = p.concurrency // d["decode"]["instances"] // d["decode"]["attention_dp"]
        assert d["decode"]["cuda_graph_max_bs"] == rank and "cuda_graph_max_bs" not in d["prefill"]
        pair = disagg_pair(h200, FP8, *plans)
        assert plans == [p.prefill.plan, p.decode.plan] and (pair[0], replace(pair[1], cuda_graph_max_bs=rank)) == (p.prefill, p.decode)
        one = evaluate_disagg(llama70b, p.prefill, p.decode, calibration=cal, prefill_instances=d["prefill"]["instances"],
                              decode_instances=d["decode"]["instances"], concurrency=p.concurrency, isl=4096, osl=512)
        assert float(np.ravel(one["ttft_s"])[0]) == pytest.approx(p.ttft_s)
        assert float(np.ravel(one["tpot_s"])[0]) == pytest.approx(p.tpot_s)
        assert float(np.ravel(one["output_tok_s_per_gpu"])[0]) == pytest.approx(p.output_tok_s_per_gpu)
        # the decode instance's kernels: the step less the engine's host costs (no speculation here)
        rows = decode_breakdown(llama70b, cal, p, isl=4096, osl=512)
        ops_ms = sum(x["time_ms"] for x in rows)
        assert 0.8 * p.tpot_s * 1e3 < ops_ms < p.tpot_s * 1e3
        # each row's share of TPOT (the report's breakdown table reads it): they sum to the disaggregated TPOT
        assert sum(x["tpot_ms"] for x in rows) == pytest.approx(p.tpot_s * 1e3, rel=1e-12)


def test_pareto_disagg_cli(tmp_path):
    r = run("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "4", "--isl", "2048", "--osl", "256", "--weight-dtype", "fp8",
            "--kv-dtype", "fp8", "--disagg", "--json", "--csv", str(tmp_path / "f.csv"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    modes = [c.get("mode", "aggregated") for c in d["comparisons"]]
    assert modes == ["aggregated", "disaggregated"]
    assert all(p["deployment"]["plan"].startswith("P ") for p in d["comparisons"][1]["frontier"])
    assert "P 1x" in (tmp_path / "f.csv").read_text()


def test_sglang_attention_dp_short_prompt_points_reprice_to_themselves():
    # a short prompt on an SGLang attention-DP prefill pool: the lone prompt carries the idle host's extra (t_idle), which the
    # search's pool must carry too, or shared_steps takes t_loaded - t_alone with the extra in it (main 56cce62 priced
    # the 256-request point 140.9 ms here against evaluate_disagg's 144.1)
    from llm_codesign.explore.disagg_search import search_disagg
    from llm_codesign.explore.search import SearchSpace
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    m, g = get_model("deepseek-r1"), get_gpu("h200")
    cal, prec = calibration_for(g), Precision.of("fp8_block", kv="fp8")
    space = SearchSpace(16, tp=(1,), adp=(8,), ep=(8,), moe_tp=(1,), pp=(1,), kvp=(1,), instance_gpus=(8,), precisions=(prec,),
                        batches=(1, 4, 32))
    r = search_disagg(m, g, cal, space, isl=64, osl=256, engine=get_engine("sglang"), max_instances=1)
    assert len(r.points) == 3
    for p in r.points:
        d = p.to_dict()["deployment"]
        assert p.prefill.backend == "sglang" and p.prefill.plan.label() == "DP8xTP1 EP8"
        one = evaluate_disagg(m, p.prefill, p.decode, calibration=cal, prefill_instances=d["prefill"]["instances"],
                              decode_instances=d["decode"]["instances"], concurrency=p.concurrency, isl=64, osl=256)
        assert float(np.ravel(one["ttft_s"])[0]) == pytest.approx(p.ttft_s, rel=1e-9)
        assert float(np.ravel(one["output_tok_s_per_gpu"])[0]) == pytest.approx(p.output_tok_s_per_gpu, rel=1e-9)


def test_pareto_disagg_html_report_breakdowns_carry_their_share_of_tpot(tmp_path):
    # a click on a disaggregated point read `o.tpot_ms.toFixed(4)` (render/report.py's show) off rows without one
    # (decode_breakdown's op rows) and threw: every embedded breakdown row now has it, and a point's rows sum to its TPOT
    import re

    page = tmp_path / "r.html"
    r = run("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "4", "--isl", "2048", "--osl", "256", "--weight-dtype", "fp8",
            "--kv-dtype", "fp8", "--disagg", "--html", str(page))
    assert r.returncode == 0, r.stderr
    blob = re.search(r'<script type="application/json" id="frontier-data">(.*?)</script>', page.read_text(), re.S).group(1)
    data = json.loads(blob)
    assert [x.get("mode", "aggregated") for x in data["results"]] == ["aggregated", "disaggregated"]
    for i, res in enumerate(data["results"]):
        for j, p in enumerate(res["frontier"]):
            rows = data["breakdowns"][f"{i}:{j}"]
            assert rows and all(isinstance(o["tpot_ms"], float) for o in rows), (i, j)
            assert sum(o["tpot_ms"] for o in rows) == pytest.approx(p["tpot_ms"], rel=1e-9), (i, j)
