"""estimate says when a decode step runs without CUDA graphs (serve.estimate.EagerDecode): TensorRT-LLM's default capture
(1-32, 64, 128, unpadded: docs/modelling-notes.md#cg128-default-graphs) misses a batch of 100 per rank, whose step then
launches every kernel from the host; the answer names the batch, the capture, the extra a step (the breakdown's
host/eager_launches row, the same arrays), its share of TPOT, the capture that avoids it, and that the eager cost is
unmeasured for decode (an interval reason, its share times the launch cost's range: docs/modelling-notes.md#revfix11a)."""
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

import llm_codesign as lc
from llm_codesign.measure import intervals

FITTED = Path(lc.__file__).parent / "data" / "calibration" / "fitted.toml"
ARGS = ("estimate", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--backend", "trtllm")


def _est(conc: int, graphs: int | None = None):
    m = lc.get_model("llama-3.1-70b")
    dep = lc.deployment(m, gpu="h100", num_gpus=8, tp=8, engine="trtllm")
    if graphs is not None:
        dep = replace(dep, cuda_graph_max_bs=graphs)
    return lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=conc), breakdown=True)


@pytest.fixture(scope="module")
def at100():
    return _est(100)


def test_a_missed_batch_is_said_with_the_breakdowns_eager_row(at100):
    e, d = at100.eager_decode, at100.to_dict()
    row = next(o for o in at100.breakdown if o.name == "host/eager_launches")
    # the same number as the breakdown's row, a step and in TPOT
    assert e.extra_s == row.time_s and e.tpot_s == row.tpot_s and e.share == row.tpot_s / at100.tpot_s
    # hand-derived (docs/modelling-notes.md#ppeager-eager): 723 launches a step (80 layers x 9 + LM head + sampler's 2) at
    # 35 us each, and the slowest of 8 ranks at each of the stage's 161 collectives (80 x 2 all-reduces + the logits
    # gather), sqrt(723 x 161) x 2 us x E[max of 8 normals] 1.42360: 25.305 + 0.971 = 26.276 ms of host launches, less the
    # 15.391 ms of kernels they run under (the breakdown's operator rows) = 10.886 ms (32.63 before: prefill's fitted rate)
    kernels = sum(o.time_s for o in at100.breakdown if o.phase == "decode" and o.kind not in ("host", "fitted") and not o.what)
    assert kernels == pytest.approx(15.391e-3, abs=5e-7)
    host = 723 * 35e-6 + math.sqrt(723 * 161) * 2e-6 * 1.4236003
    assert e.extra_s == pytest.approx(host - kernels, rel=1e-6) and e.extra_s == pytest.approx(10.886e-3, abs=5e-6)
    assert e.share == pytest.approx(0.357, abs=1e-3)  # 10.886 of TPOT's 30.50 ms
    assert e.batch_per_rank == 100 and e.cuda_graph_max_bs == 100
    # the engine's own default capture (Engine.cuda_graphs_default), the option that avoids it, the unmeasured part
    assert "batches 1-32, 64, 128 per rank, unpadded" in e.note
    assert "`cuda_graph_config: {enable_padding: true, max_batch_size: 100}` in the extra LLM API options" in e.note
    assert "--cuda-graph-max-bs 100" in e.note and "unmeasured for decode" in e.note and "8 ranks" in e.note
    assert d["eager_decode"]["extra_ms_per_step"] == pytest.approx(e.extra_s * 1e3, rel=1e-12)
    assert d["eager_decode"]["note"] == e.note


def test_the_host_binds_the_eager_step(at100):
    # the host's launches, 26.28 ms, outlast the operators' 15.39 ms in all: the step waits on the host, its eager row the
    # excess (10.89 ms); the host rows alone (0.02 + 0.24 + 10.89 ms) are below the memory-bound operators' sum
    host = sum(o.time_s for o in at100.breakdown if o.phase == "decode" and o.kind == "host")
    ops = sum(o.time_s for o in at100.breakdown if o.phase == "decode" and not o.what)
    assert at100.decode_bound == "host" and host + ops > 26.27e-3


def test_the_interval_widens_by_tpots_moves_at_the_launch_costs_range_ends(at100):
    tpot = at100.intervals["tpot_ms"]
    why = [w for w in tpot["widened"] if w.kind == "eager"]
    assert len(why) == 1 and "no decode run without CUDA graphs" in why[0]
    assert "priced at 35 us a launch (documented, range 8-40 us); TPOT x0.64 at 8 us, x1.12 at 40 us" in why[0]
    # by hand (docs/modelling-notes.md#eagband-eager-ends, review rev12a #2): 723 launches, 161 collectives, 8 ranks: the
    # host 26.2764 ms over 15.3908 ms of kernels (tests/test_ppeager.py), TPOT 30.4962 ms, the row x1 in TPOT. At 8 us a
    # launch the host, 26.2764 - 723 x 27 us = 6.7554 ms, falls under the kernels: TPOT 30.4962 - 10.8856 = 19.6106 ms, down
    # ln(30.4962 / 19.6106) = 0.44153; at 40 us 26.2764 + 723 x 5 us = 29.8914 ms: TPOT 34.1112 ms, up ln 1.11854 = 0.11202.
    # Each side of the band widens by its own end's move (docs/modelling-notes.md#eagerfix-eager-sides): below 0.44153 at
    # 95% (x1.555), above 0.11202 (x1.119), each x 1.2816 / 1.96 at 80%; the reason's factors give the wider side
    down, up = at100.eager_decode.moves
    assert (down, up) == pytest.approx((0.44153, 0.11202), abs=5e-5)
    assert why[0].factors == pytest.approx((math.exp(0.44153 * 1.2816 / 1.96), math.exp(0.44153)), abs=1e-4)
    m, dep = lc.get_model("llama-3.1-70b"), at100.deployment
    kw = dict(engine="trtllm", concurrency=100, isl=1024, osl=1024, arrival=at100.workload.arrival)
    b = {x: intervals.band("tpot_ms", 50.0, intervals.context(m, dep.gpu, dep.precision, eager=x, **kw)) for x in ((0.0, 0.0), (down, up))}
    assert b[(down, up)]["hi95"] > b[(0.0, 0.0)]["hi95"] and b[(down, up)]["lo80"] < b[(0.0, 0.0)]["lo80"]
    # the eager terms in quadrature with the others (intervals.with_eager), each side apart: at 95% hypot(campaign's,
    # 0.44153) below, hypot(campaign's, 0.11202) above
    camp = intervals.bundled()["between"]["campaign"]
    lo, hi = intervals.with_eager({80: camp["t80"], 95: camp["t95"]},
                                  intervals.context(m, dep.gpu, dep.precision, eager=(down, up), **kw), "tpot_ms")
    assert lo[95] == pytest.approx(math.hypot(camp["t95"], down), rel=1e-12) and lo[95] >= lo[80]
    assert hi[95] == pytest.approx(math.hypot(camp["t95"], up), rel=1e-12) and hi[95] >= hi[80]
    # a rate falls as TPOT rises: tok/s/user's band takes the up move below and the down move above
    r = intervals.with_eager({80: 0.0, 95: 0.0}, intervals.context(m, dep.gpu, dep.precision, eager=(down, up), **kw), "tok_s_per_user")
    assert r[0][95] == pytest.approx(up, rel=1e-12) and r[1][95] == pytest.approx(down, rel=1e-12)


def test_the_stored_95_terms_are_never_below_the_80():
    # cov40's fit stored t95 < t80 (campaign 0.0306 / 0.0079, engine, shape, low_load): each level's term is measured beyond
    # its own level's bounds; benchmarks/interval_folds.nested_terms keeps the wider level's at least the narrower's
    terms = intervals.bundled()["between"]
    assert all(t["t95"] >= t["t80"] for t in terms.values())
    assert terms["campaign"]["t95"] == terms["campaign"]["t80"] == 0.0297 and terms["low_load"]["t95"] == 0.1108  # the 2026-12-08 folds (b34b4ba0)


def test_a_kernel_bound_eager_step_widens_above_only():
    # 70B on 2 H100s, TP2, graphs off, one request: 723 launches x 35 us + sqrt(723 x 161) x 2 us x E[max of 2] 0.5642
    # = 25.690 ms of host launches, under the 28.514 ms of kernels that read 70.6 GB a step: the launches hide, no eager row.
    # At 40 us they would not (docs/modelling-notes.md#eagerfix-eager-sides): 25.690 + 723 x 5 us = 29.305 ms, 0.791 ms
    # beyond the kernels, TPOT 28.535 -> 29.326 ms, up ln(29.326 / 28.535) = 0.02736; at 8 us still hidden, down 0. So a
    # one-line note and an up-side term; the band's lower side is the one no eager step gives
    m = lc.get_model("llama-3.1-70b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=2, tp=2, engine="trtllm"), cuda_graph_max_bs=0)
    est = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=1), breakdown=True)
    kernels = sum(o.time_s for o in est.breakdown if o.phase == "decode" and o.kind not in ("host", "fitted") and not o.what)
    host = 723 * 35e-6 + math.sqrt(723 * 161) * 2e-6 * 0.5641896
    assert host < kernels and kernels == pytest.approx(28.5135e-3, abs=5e-7)
    assert not any(o.name == "host/eager_launches" and o.time_s > 0 for o in est.breakdown) and est.decode_bound == "memory"
    e = est.eager_decode
    up = math.log((est.tpot_s + host + 723 * 5e-6 - kernels) / est.tpot_s)
    assert e.extra_s == 0.0 and e.share == 0.0 and e.moves == pytest.approx((0.0, up), rel=1e-6) and up == pytest.approx(0.02736, abs=1e-5)
    assert "hide under its kernels, but at 40 us they would add +0.791 ms to TPOT: the intervals widen above only" in e.note
    assert "\n" not in e.note and "host/eager_launches" not in e.note
    kw = dict(engine="trtllm", concurrency=1, isl=1024, osl=1024, arrival=est.workload.arrival)
    plain, sided = (intervals.band("tpot_ms", est.tpot_s * 1e3, intervals.context(m, dep.gpu, dep.precision, eager=x, **kw))
                    for x in ((0.0, 0.0), e.moves))
    assert sided["lo95"] == plain["lo95"] and sided["lo80"] == plain["lo80"] and sided["hi95"] > plain["hi95"]
    t = est.intervals["tpot_ms"]  # the estimate's (its lower side held at the roofline floor: intervals.capped)
    assert t["hi95"] == pytest.approx(sided["hi95"], rel=1e-12) and any(w.kind == "eager" for w in t["widened"])


@pytest.mark.parametrize("conc,graphs", [(128, None), (100, 128)])
def test_no_note_where_the_capture_holds_the_batch(conc, graphs):
    est = _est(conc, graphs)
    assert est.eager_decode is None and "eager_decode" not in est.to_dict() and est.decode_bound == "memory"
    assert not any(w.kind == "eager" for w in est.intervals["tpot_ms"]["widened"])


def test_the_cli_prints_the_row_and_json_carries_the_field():
    from conftest import cli

    code, out, _ = cli(*ARGS, "--concurrency", "100")
    assert code == 0 and "CUDA graphs" in out and "decode runs without CUDA graphs: a batch of 100 per rank" in out
    assert any(line.split()[:4] == ["decode", "step", "bound", "by"] and line.split()[4] == "host" for line in
               (x.replace("│", " ").replace("|", " ") for x in out.splitlines()) if len(line.split()) > 4)
    for conc, field in ((100, True), (128, False)):
        code, out, _ = cli(*ARGS, "--concurrency", str(conc), "--json")
        assert code == 0 and ("eager_decode" in json.loads(out)) is field
