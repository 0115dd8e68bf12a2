"""Three left-overs between surfaces (leftS): a lint answer names the engine and the deployment its findings were priced
at on every surface (fixN5b's left-over), mix's bands above the batch cap are estimate's (fixC12's), and design's rows
decode inside the CUDA graphs their search priced (fixC12's: why its bands carry no eager term)."""
import json

import numpy as np
import pytest

import llm_codesign.api as lc
from llm_codesign.spec.plan import Workload

# newc12's odd shape: head_dim 100, which TensorRT-LLM (H100's own engine) does not run; lint prices it on vLLM (fixN5b)
ODD = {"model_type": "llama", "hidden_size": 4000, "num_hidden_layers": 30, "num_attention_heads": 40, "num_key_value_heads": 5,
       "head_dim": 100, "intermediate_size": 10000, "vocab_size": 50001, "max_position_embeddings": 8192}
LEVELS = ("lo80", "hi80", "lo95", "hi95")
WHERE = ("engine", "priced_at", "caption")


def test_a_lint_answer_names_its_engine_and_point_on_every_surface(tmp_path):
    from conftest import cli

    path = tmp_path / "odd.json"
    path.write_text(json.dumps(ODD))
    code, out, err = cli("lint", str(path), "--gpu", "h100", "--regime", "latency", "--json")
    assert code == 0, err
    d = json.loads(out)
    # the engine and the deployment R2, R3, R6, R7's Helix and R9 were priced at, beside the findings (R4's message alone said it)
    assert d["engine"] == "vllm"
    assert d["priced_at"] == {"plan": "TP1", "num_gpus": 1, "tp": 1, "pp": 1, "ep": 1, "moe_tp": 1, "attention_dp": 1, "kvp": 1,
                              "concurrency": 1, "isl": 1024, "osl": 1024,
                              "source": "design's best deployment on 8 H100 SXM at 50 tok/s/GPU"}
    assert d["caption"].startswith("Priced on vLLM: TensorRT-LLM, H100 SXM's default engine, does not run head_dim 100 (R4). "
                                   "R2, R3 and R6 priced at TP1, 1 request, 1024/1024 tokens")
    # R2's figures were priced at that point (fixN5b: 5.0740 ms on vLLM)
    r2 = next(f for f in d["findings"] if (f["rule"], f["where"]) == ("R2", "hidden"))
    assert r2["figures"]["point"] == {k: d["priced_at"][k] for k in r2["figures"]["point"]}
    assert r2["figures"]["time_ms"] == pytest.approx(5.0740, abs=5e-4)
    # the API: a list of the findings (as before) that says the same, and whose to_dict() is the CLI's answer
    a = lc.lint(str(path), "h100", regime="latency")
    assert list(a) == d["findings"] and a.to_dict() == d
    # the table's caption is the same line
    code, table, _ = cli("lint", str(path), "--gpu", "h100", "--regime", "latency")
    assert code == 0 and d["caption"] in table
    # the engine named runs no head size of the shape: nothing priced, said on every surface alike
    code, out, _ = cli("lint", str(path), "--gpu", "h100", "--regime", "latency", "--backend", "trtllm", "--json")
    named = json.loads(out)
    assert code == 0 and (named["engine"], named["priced_at"]) == (None, None)
    assert named["caption"] == ("R2, R3 and R6 not priced: TensorRT-LLM does not run head_dim 100 (R4), so R7's Helix and R9 are "
                                "not priced either; --backend vllm or sglang prices them")
    assert lc.lint(str(path), "h100", regime="latency", engine="trtllm").to_dict() == named


def test_the_pages_lint_answer_is_the_clis():
    pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    client = TestClient(create_app())
    r = client.post("/api/lint", json={"config": ODD, "gpu": "h100", "regime": "latency"})
    assert r.status_code == 200, r.text
    got = r.json()
    want = lc.lint(ODD, "h100", regime="latency").to_dict()
    assert {k: got[k] for k in WHERE} == {k: want[k] for k in WHERE} and got["engine"] == "vllm"
    # the GPU's own engine where it runs the shape: named, and the caption opens on the point (no "Priced on")
    own = client.post("/api/lint", json={"model": "llama-3.1-8b", "gpu": "h100", "regime": "latency"}).json()
    # (8B's latency point is TP8 on the 8 GPUs, so R6's PP2 needs 16 and the caption says it)
    assert own["engine"] == "trtllm" and (own["priced_at"]["plan"], own["priced_at"]["tp"], own["priced_at"]["num_gpus"]) == ("TP8", 8, 8)
    assert own["caption"].startswith("R2 and R3 priced at TP8, 1 request, 1024/1024 tokens (design's best deployment on 8 H100 SXM")
    # the page shows the caption above its table (web/static/app.js runLint)
    from importlib import resources

    js = resources.files("llm_codesign.web").joinpath("static/app.js").read_text()
    assert 'el("div", `${r.caption}.`, "hint")' in js


def test_a_mix_above_the_batch_cap_has_estimates_bands():
    """64 requests on a launch cap of 16 (Llama-3.1-8B, H100, 1,024/1,024): estimate looks its bands up at the 16 that run
    (load band 5-32) and adds TTFT's 25.6 s queue at TPOT's spread (newc7 #7); mix looked them up at the 64 offered (33+)
    and scaled the whole TTFT, queue included, by the TTFT runs' spread: TTFT 80% 13.6-49.8 s against estimate's
    22.6-30.7 s, TPOT 7.146-9.766 against 7.194-9.686 ms."""
    dep = lc.deployment("llama-3.1-8b", gpu="h100", max_batch=16)
    e = lc.estimate("llama-3.1-8b", dep, Workload(isl=1024, osl=1024, concurrency=64))
    x = lc.mix("llama-3.1-8b", dep, isl_dist="fixed:1024", osl_dist="fixed:1024", concurrency=64).to_dict()
    assert e.max_batch == 16 and e.queue["ttft_ms"] == pytest.approx(25564.0, abs=1.0)
    assert x["ttft_ms"]["mean"] == pytest.approx(e.ttft_s * 1e3, rel=1e-12)
    for q in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu"):
        assert [x["intervals"][q][k] for k in LEVELS] == pytest.approx([e.intervals[q][k] for k in LEVELS], rel=1e-9), q
        assert x["intervals"][q]["source"] == e.intervals[q]["source"] and "load band 5-32 requests" in e.intervals[q]["source"]
    assert x["intervals"]["ttft_ms"]["queue_ms"] == pytest.approx(e.queue["ttft_ms"], rel=1e-12)
    assert [round(x["intervals"]["ttft_ms"][k]) for k in ("lo80", "hi80")] == [22475, 30684]  # the 2026-12-08 folds' terms (22631, 30708 before)
    assert [round(x["intervals"]["tpot_ms"][k], 3) for k in ("lo80", "hi80")] == [7.144, 9.68]  # 7.194, 9.686 before the 2026-12-08 folds


def test_the_running_load_is_the_batch_that_runs():
    from llm_codesign.measure.intervals import running_load

    assert (running_load(64, 16), running_load(8, 16), running_load(None, 16)) == (16, 8, None)


def test_designs_search_prices_every_batch_inside_the_cuda_graphs():
    """Why design's bands carry no eager term: its search prices every deployment with the graphs a launch padded to its
    batch captures (SEARCH_GRAPHS), so no batch of its grid decodes outside them, on any engine; without that capture,
    TensorRT-LLM's default (1-32, 64, 128, unpadded) misses most of the grid."""
    from llm_codesign.explore.search import BATCHES, SEARCH_GRAPHS
    from llm_codesign.serve.aggregated import Serving, _eager_misses, default_capture
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.plan import Plan

    g, prec = lc.get_gpu("h100"), lc.get_model("llama-3.1-8b").default_precision
    for name in ("trtllm", "sglang", "vllm"):
        for plan in (Plan(tp=1), Plan(tp=8), Plan(tp=1, pp=1, ep=8, moe_tp=1, adp=8)):
            eng = get_engine(name)
            at = Serving(gpu=g, prec=prec, plan=plan, engine=eng, cuda_graph_max_bs=SEARCH_GRAPHS)
            assert not np.any(_eager_misses(BATCHES, at.flags(None), default=default_capture(eng, g, plan))), (name, plan)
    trt = get_engine("trtllm")
    missed = _eager_misses(BATCHES, Serving(gpu=g, prec=prec, plan=Plan(tp=1), engine=trt).flags(None), default=default_capture(trt, g, Plan(tp=1)))
    # every batch of the grid above 32 (its 34, 41, 48, ...: it holds neither 64 nor 128), 39 of 55
    assert missed.tolist() == (BATCHES > 32).tolist() and int(np.sum(missed)) == 39 and BATCHES[missed][0] == 34


def test_a_design_row_above_the_default_capture_is_estimate_at_its_padded_capture():
    """8B on one H100: design's row 1 runs 241 requests a rank, above TensorRT-LLM's default capture of 128. Its figure is
    estimate's with the graphs padded up to 241 (point_graphs, what a search's point would state), where estimate finds no
    eager decode, and its band is estimate's there, the 95% top held at what the GPU allows as estimate's is (leftS2: it was
    15,528 tok/s/GPU, uncapped, against estimate's 13,792), the capture stated on the row (its deployment's cuda_graph_max_bs)."""
    from dataclasses import replace

    from llm_codesign.explore.design import to_model
    from llm_codesign.explore.search import point_graphs
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.plan import Plan

    r = lc.design(8e9, "h100", num_gpus=1, top=1, max_candidates=200)
    d = r["designs"][0]
    c, (isl, osl) = d["deployment"]["concurrency_per_instance"], r["isl_osl"]
    assert (d["deployment"]["plan"], c) == ("TP1", 241) and r["objective"] == "output_tok_s_per_gpu"
    g, m = lc.get_gpu("h100"), to_model(d, lc.get_model("llama-3.1-8b").vocab)
    n = point_graphs(get_engine("trtllm"), c, gpu=g, plan=Plan.from_dict(d["deployment"]))
    assert n == 241 == d["deployment"]["cuda_graph_max_bs"]
    e = lc.estimate(m, replace(lc.deployment(m, gpu="h100"), cuda_graph_max_bs=n), Workload(isl=isl, osl=osl, concurrency=c))
    assert e.eager_decode is None and e.output_tok_s_per_gpu == pytest.approx(d["objective"], rel=1e-12)
    band, want = d["intervals"]["output_tok_s_per_gpu"], e.intervals["output_tok_s_per_gpu"]
    assert [band[k] for k in LEVELS] == pytest.approx([want[k] for k in LEVELS], rel=1e-12)
    assert want["capped"] == want["hi95"] == band["capped"] == pytest.approx(13791.942094196, rel=1e-9)
