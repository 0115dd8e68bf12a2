"""design's rows' bands are estimate's (leftS2, leftS's left-over): each row's objective band, the band of what it is
measured against, and the side-by-side's four metrics at the SLO are estimate's bands of that shape at that deployment
and capture: held within what the GPUs allow at the batch that runs (intervals.ideal, capped) and widened for the
attention-DP hold where the row runs attention DP (priced_terms), through one rule (intervals.banded_rows, a frontier's
too). Each row states the capture it was priced with (deployment.cuda_graph_max_bs), so that estimate at it prices the row
again."""
from dataclasses import replace

import pytest

import llm_codesign.api as lc
from llm_codesign.explore.design import DEFAULT_VOCAB, to_model
from llm_codesign.spec.plan import Workload

BOUNDS = ("lo80", "hi80", "lo95", "hi95", "centre")


def _estimate(m, dep: dict, gpu: str, isl: int, osl: int, engine: str | None = None):
    """estimate of `m` at a design row's deployment (its plan, requests and the capture it states)."""
    sizes = {k: dep[k] for k in ("tp", "pp", "kvp")} | ({k: dep[k] for k in ("ep", "moe_tp", "attention_dp")} if m.is_moe else {})
    d = lc.deployment(m, gpu=gpu, num_gpus=dep["instance_gpus"], engine=engine, **sizes)
    return lc.estimate(m, replace(d, cuda_graph_max_bs=dep["cuda_graph_max_bs"]),
                       Workload(isl=isl, osl=osl, concurrency=dep["concurrency_per_instance"]))


def _same(got: dict, want: dict) -> None:
    """Two bands alike to 1e-9: their bounds, and where one stops at what the GPUs allow, that bound ("capped")."""
    assert [got[k] for k in BOUNDS] == pytest.approx([want[k] for k in BOUNDS], rel=1e-9)
    assert (got.get("capped") is None) == (want.get("capped") is None)
    assert got.get("capped", 1.0) == pytest.approx(want.get("capped", 1.0), rel=1e-9)
    assert [w.kind for w in got["widened"]] == [w.kind for w in want["widened"]]


@pytest.fixture(scope="module")
def dense8b():
    return lc.design(8e9, "h100", num_gpus=1, top=3, max_candidates=200)


def test_each_row_of_8b_on_an_h100_is_estimate_at_its_deployment_and_capture(dense8b):
    """Row 1 runs 241 requests a rank, above TensorRT-LLM's default capture (1-32, 64, 128): it states the graphs padded up to
    241 it was priced with; estimate there gives its figure to 1e-12 and its band to 1e-9. The 95% top is held at what the
    H100 allows at 241 requests: 15,528 tok/s/GPU before (leftS's "Left"), 13,792 now, estimate's ceiling."""
    r = dense8b
    assert r["objective"] == "output_tok_s_per_gpu" and r["isl_osl"] in ((1024, 1024), [1024, 1024])
    for d in r["designs"]:
        dep = d["deployment"]
        # above TensorRT-LLM's default capture (1-32, 64, 128): every row states its own batch a rank
        assert dep["cuda_graph_max_bs"] == dep["concurrency_per_instance"] // dep["attention_dp"] > 128
        e = _estimate(to_model(d, DEFAULT_VOCAB, ""), dep, "h100", 1024, 1024)
        assert e.eager_decode is None and e.output_tok_s_per_gpu == pytest.approx(d["objective"], rel=1e-12)
        _same(d["intervals"]["output_tok_s_per_gpu"], e.intervals["output_tok_s_per_gpu"])
    one = r["designs"][0]
    b = one["intervals"]["output_tok_s_per_gpu"]
    assert (one["deployment"]["plan"], one["deployment"]["cuda_graph_max_bs"]) == ("TP1", 241)
    assert b["hi95"] == b["capped"] == pytest.approx(13791.942094, rel=1e-9)
    assert (b["lo80"], b["hi80"], b["lo95"]) == pytest.approx((6815.061329, 9377.345097, 5334.382880), rel=1e-9)  # the 2026-12-08 folds' terms (6,796.0, 9,403.6, 5,362.2 before)
    # what the rows are measured against, llama-3.1-8b at its own best deployment (205 requests), is estimate's too: its 95%
    # top 14,264.8 -> 12,202.1, so each row's gain band is drawn from the two bands estimate gives
    ref = r["reference"]
    m0 = lc.get_model("llama-3.1-8b")
    e0 = _estimate(m0, ref["deployment"], "h100", 1024, 1024)
    assert ref["deployment"]["cuda_graph_max_bs"] == 205 and e0.output_tok_s_per_gpu == pytest.approx(ref["objective"], rel=1e-12)
    _same(ref["intervals"]["output_tok_s_per_gpu"], e0.intervals["output_tok_s_per_gpu"])
    assert ref["intervals"]["output_tok_s_per_gpu"]["hi95"] == pytest.approx(12202.105988, rel=1e-9)
    # the side-by-side's best deployment of design 1 is its row's, and its four metrics' bands there are estimate's
    col = r["side_by_side"]["columns"][1]
    assert col["at_slo"]["deployment"] == one["deployment"]
    e1 = _estimate(to_model(one, DEFAULT_VOCAB, ""), one["deployment"], "h100", 1024, 1024)
    for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu"):
        assert [col["at_slo"]["intervals"][k][x] for x in BOUNDS] == pytest.approx([e1.intervals[k][x] for x in BOUNDS], rel=1e-9), k


def test_a_latency_row_is_estimate_at_one_request():
    """The latency regime's objective, tok/s/user, at design 1's one request: estimate's band there, its 95% top held at
    what one H100 allows (220.24 tok/s/user: 234.4 before). TensorRT-LLM's default capture (1-32, 64, 128) replays a batch of
    one, so the row states none (null: the default's), and estimate at the default prices it."""
    r = lc.design(8e9, "h100", num_gpus=1, regime="latency", top=1, max_candidates=100)
    d = r["designs"][0]
    assert r["objective"] == "tok_s_per_user" and d["deployment"]["concurrency_per_instance"] == 1
    assert d["deployment"]["cuda_graph_max_bs"] is None
    e = _estimate(to_model(d, DEFAULT_VOCAB, ""), d["deployment"], "h100", 1024, 1024)
    assert e.tok_s_per_user == pytest.approx(d["objective"], rel=1e-12)
    _same(d["intervals"]["tok_s_per_user"], e.intervals["tok_s_per_user"])
    assert d["intervals"]["tok_s_per_user"]["hi95"] == d["intervals"]["tok_s_per_user"]["capped"] == pytest.approx(220.2405184035, rel=1e-9)


def test_a_row_running_attention_dp_carries_the_hold_as_estimate_does():
    """A 30B / 3B-active MoE on two B200s: design 1 runs DP2 (attention DP, MoE TP2) at 1,278 requests, 639 a rank, with
    graphs padded to 639. Its row's band and its four metrics at the SLO are estimate's there, TTFT's widened for the
    attention-DP hold TensorRT-LLM's fitted wait prices (intervals.ADP_WAIT), which design's bands did not carry."""
    r = lc.design(30e9, "b200", num_gpus=2, moe=True, active_params=3e9, top=1, max_candidates=40)
    d = r["designs"][0]
    dep = d["deployment"]
    assert (dep["plan"], dep["concurrency_per_instance"], dep["cuda_graph_max_bs"]) == ("DP2xTP1 EP1/MoE-TP2", 1278, 639)
    e = _estimate(to_model(d, DEFAULT_VOCAB, ""), dep, "b200", 1024, 1024)
    assert e.eager_decode is None and e.output_tok_s_per_gpu == pytest.approx(d["objective"], rel=1e-12)
    _same(d["intervals"]["output_tok_s_per_gpu"], e.intervals["output_tok_s_per_gpu"])
    at = r["side_by_side"]["columns"][1]["at_slo"]
    assert at["deployment"] == dep
    for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu"):
        assert [at["intervals"][k][x] for x in BOUNDS] == pytest.approx([e.intervals[k][x] for x in BOUNDS], rel=1e-9), k
    assert "adp_wait" in {w.kind for w in e.intervals["ttft_ms"]["widened"]}


@pytest.mark.parametrize(("engine", "graphs"), [("vllm", None), ("sglang", 284)])
def test_a_row_states_the_capture_its_engine_needs(engine, graphs):
    """vLLM's default capture on an H100 (512 tokens, padded) holds design 1's 284 requests: no capture stated (None, the
    default's); SGLang's, sized by the GPU's memory, does not: graphs padded to 284. estimate at either prices the row."""
    r = lc.design(8e9, "h100", num_gpus=1, top=1, max_candidates=100, engine=engine)
    d = r["designs"][0]
    assert (d["deployment"]["concurrency_per_instance"], d["deployment"]["cuda_graph_max_bs"]) == (284, graphs)
    e = _estimate(to_model(d, DEFAULT_VOCAB, ""), d["deployment"], "h100", 1024, 1024, engine=engine)
    assert e.eager_decode is None and e.output_tok_s_per_gpu == pytest.approx(d["objective"], rel=1e-12)
    _same(d["intervals"]["output_tok_s_per_gpu"], e.intervals["output_tok_s_per_gpu"])


def test_the_table_and_the_page_state_the_capture():
    """The CLI's row says 'graphs ≤241' beneath its deployment, its caption what that means, and design 1's capped bound as
    estimate's 'bounds capped' row says it; the page's rows and note say the same (POST /api/design's graphs_line)."""
    from conftest import cli

    from llm_codesign.render.design_lines import GRAPHS_LEGEND, graphs_line

    code, out, err = cli("design", "--params", "8e9", "--gpu", "h100", "--gpus", "1", "--top", "1", "--max-candidates", "200")
    assert code == 0, err
    text = " ".join(out.split())
    assert "TP1 B=241 0E 0W err ±0.13 x graphs ≤241 shape:" in text  # the row's second line
    assert " ".join(GRAPHS_LEGEND.split()) in text
    assert "bounds capped: tok/s/GPU at 13792: what the GPUs allow at the batch that runs" in text
    assert graphs_line({"designs": [{"deployment": {"cuda_graph_max_bs": None}}]}) is None
    from importlib import resources

    js = resources.files("llm_codesign.web").joinpath("static/app.js").read_text()
    assert "` graphs ≤${d.deployment.cuda_graph_max_bs}`" in js and "r.graphs_line, r.quality_line" in js


def test_a_row_states_a_capture_only_where_the_default_misses_its_batch():
    """row_graphs: TensorRT-LLM's default on an H100 at TP1 replays 1-32, 64 and 128 (unpadded), so a row there states none;
    at 33, 48 or 241 it states graphs padded up to its batch (a frontier's point_graphs states one for every load of a plan)."""
    from llm_codesign.explore.search import point_graphs, row_graphs
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.plan import Plan

    g, trt = lc.get_gpu("h100"), get_engine("trtllm")
    got = {b: row_graphs(trt, b, gpu=g, plan=Plan(tp=1)) for b in (1, 8, 32, 33, 48, 64, 128, 129, 241)}
    assert got == {1: None, 8: None, 32: None, 33: 33, 48: 48, 64: None, 128: None, 129: 129, 241: 241}
    assert point_graphs(trt, 8, gpu=g, plan=Plan(tp=1)) == 8  # the frontier's rule: the unpadded default is never the point's
