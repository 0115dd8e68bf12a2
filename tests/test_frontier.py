"""explore/frontier.py: the typed search results, built by hand here (no search), so each dict field is
checked against the figure it comes from."""
from dataclasses import replace

import pytest

import llm_codesign as lc
from llm_codesign.explore.frontier import DisaggPoint, Frontier, FrontierPoint


@pytest.fixture(scope="module")
def dep():
    m = lc.get_model("llama-3.1-8b")
    return lc.deployment(m, gpu="h100", num_gpus=2, tp=2, weight_dtype="fp8", kv_dtype="fp8")


def _point(dep, **kw):
    return FrontierPoint(deployment=dep, replicas=4, concurrency=32, tok_s_per_user=80.0, output_tok_s_per_gpu=1200.0,
                         ttft_s=0.25, tpot_s=0.0125, **kw)


def test_a_point_prints_milliseconds_and_a_record_that_rebuilds_its_deployment(dep):
    d = _point(dep).to_dict()
    assert (d["ttft_ms"], d["tpot_ms"], d["tok_s_per_user"], d["output_tok_s_per_gpu"]) == (250.0, 12.5, 80.0, 1200.0)
    rec = d["deployment"]
    assert (rec["instance_gpus"], rec["replicas"], rec["concurrency_per_instance"], rec["plan"]) == (2, 4, 32, "TP2")
    assert "num_gpus" not in rec and "cost" not in d and d["accuracy"] is None
    # the record states the step budget the engine would use (TensorRT-LLM's max_num_tokens 8192), so it rebuilds resolved
    assert rec["max_num_tokens"] == 8192 and lc.Deployment.from_dict(rec) == replace(dep, max_num_tokens=8192)
    assert _point(dep, cost={"usd_per_mtok": 1.5}).to_dict()["cost"] == {"usd_per_mtok": 1.5}
    assert "energy" not in d and _point(dep, energy={"tokens_per_joule": 3.0}).to_dict()["energy"] == {"tokens_per_joule": 3.0}


def test_a_disaggregated_point_names_both_pools(dep):
    p = DisaggPoint(prefill=dep, decode=dep, prefill_instances=1, decode_instances=3, replicas=2, concurrency=64,
                    tok_s_per_user=50.0, output_tok_s_per_gpu=900.0, ttft_s=0.5, tpot_s=0.02)
    rec = p.to_dict()["deployment"]
    assert rec["plan"] == "P 1x TP2 + D 3x TP2" and rec["instance_gpus"] == 1 * 2 + 3 * 2
    assert (rec["prefill"]["instances"], rec["decode"]["instances"], rec["decode"]["gpus_each"]) == (1, 3, 2)
    assert (rec["weight_dtype"], rec["kv_dtype"], rec["spec"], rec["draft_len"]) == ("fp8", "fp8", None, 0)


def test_a_frontier_prints_its_points_and_draws_only_when_asked(dep):
    f = Frontier(model="llama-3.1-8b", gpu=dep.gpu, num_gpus=8, workload=lc.Workload(isl=1024, osl=256), backend="trtllm",
                 points=(_point(dep),), evaluated=100, fitting=40, seconds=0.1, cloud={"x": [1.0]}, roofline_bound={"x": [2.0]})
    d = f.to_dict()
    # max_gpus beside num_gpus (the same here; a --gpus range adds min_gpus: uxsmall, newc6 #20)
    assert list(d) == ["model", "gpu", "num_gpus", "max_gpus", "isl", "osl", "prefix_hit", "arrival", "backend", "engine_release", "evaluated",
                       "fitting", "seconds", "frontier"]
    assert d["engine_release"] == "1.3.0rc1-1.3.0rc27"  # the releases whose defaults it prices (Engine.release)
    assert d["gpu"] == "h100" and d["frontier"][0]["ttft_ms"] == 250.0
    assert f.to_dict(plot=True)["cloud"] == {"x": [1.0]}
    df = f.to_pandas()
    assert df["tpot_ms"].tolist() == [12.5] and df["tp"].tolist() == [2]
    assert f.priced(None) is f
    # $2 a GPU-hour at 1,200 tok/s/GPU: 2 / 3600 * 1e6 / 1200 = $0.463 per million output tokens, 256 of 1,280 tokens out
    cost = f.priced(2.0).points[0].cost
    assert cost["usd_per_m_output_tokens"] == pytest.approx(2.0 / 3600.0 * 1e6 / 1200.0)
    assert cost["usd_per_m_tokens"] == pytest.approx(2.0 / 3600.0 * 1e6 / 1200.0 * 256 / 1280)


def test_every_frontier_point_says_whether_it_is_predictable():
    # newc5 #17 follow-up (branch uxleft): estimate's answers carried span95 and predictable, a frontier's points did not.
    # Each point's band now carries them, span95 = hi95 / lo95 of the band it prints (capped where capped), predictable
    # span95 <= x20; llama-3.1-70b FP8 on 8 H100 under vLLM at 1024/1024 has TTFT bands past x20 at 23 of its 40 points
    # and within it at the others, so both values occur
    f = lc.pareto("llama-3.1-70b", gpu="h100", num_gpus=8, workload=lc.Workload(isl=1024, osl=1024), weight_dtype="fp8", kv_dtype="fp8",
                  backend="vllm")
    seen = set()
    for p in f.to_dict()["frontier"]:
        for b in p["intervals"].values():
            assert b["span95"] == pytest.approx(b["hi95"] / b["lo95"], rel=1e-12) and b["predictable"] is (b["span95"] <= 20.0)
            seen.add(b["predictable"])
    assert seen == {True, False}
    # newc12 #4: the CSV `pareto --out` writes says it too, under sweep's column names (outputs.predictable_column), each
    # point's "True" where the table prints its value bare and "False" where it marks it "?"
    import csv
    import io

    from llm_codesign.render.report import csv_text

    rows = list(csv.DictReader(io.StringIO(csv_text([f]))))
    points = f.to_dict()["frontier"]
    assert len(rows) == len(points)
    for row, p in zip(rows, points, strict=True):
        assert {m: row[f"{m}_predictable"] for m in p["intervals"]} == {m: str(b["predictable"]) for m, b in p["intervals"].items()}
    assert {r["ttft_ms_predictable"] for r in rows} == {"True", "False"}
