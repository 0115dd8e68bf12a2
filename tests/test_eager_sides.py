"""The eager decode step's interval terms, each side its own (docs/modelling-notes.md#eagerfix-eager-sides): TPOT and TTFT
repriced with the launches at the per-launch cost's range's ends (serve.aggregated.DECODE_LAUNCH_RANGE_S, 8 and 40 us
about 35), per stage first and then the row's iteration (StepParts.at_launch, eager_iterations), the band's lower side
widened by the 8 us end's move and its upper side by the 40 us end's; the disaggregated decode pool likewise."""
import math
from dataclasses import replace

import numpy as np
import pytest

import llm_codesign as lc
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.measure import intervals
from llm_codesign.serve.aggregated import deployment_ops

W = lc.Workload(isl=1024, osl=1024, concurrency=1)


def _graphs_off(model: str, gpus: int, engine: str, **plan):
    m = lc.get_model(model)
    return m, replace(lc.deployment(m, gpu="h100", num_gpus=gpus, engine=engine, **plan), cuda_graph_max_bs=0)


def _priced(m, dep, w=W):
    r = deployment_ops(m, dep, w, cal=calibration_for(dep.gpu), concurrency=w.concurrency)
    one = lambda x: float(np.asarray(x, float).reshape(-1)[0])  # noqa: E731
    return r["step_parts"], r["time_parts"], one


def test_8b_tp1_tpot_and_ttft_at_8_35_40_us():
    """llama-3.1-8b, one H100, TensorRT-LLM, graphs off, 1 request, 1k/1k, by hand. The step launches 290 operators (its
    ops.launches) at 35 us, one rank so no jitter: host 10.150 ms over 6.76434 ms of kernels; the fitted host costs a step
    and a sequence 18.6824 + 2.36181 us. TPOT (one request, one stage, one token a step: the step):
      35 us: 6.76434 + 0.02104 + (10.150 - 6.76434) = 10.17104 ms
       8 us: host 290 x 8 us = 2.320 ms hides under the kernels: 6.76434 + 0.02104 = 6.78539 ms, down ln(10.17104 / 6.78539) = 0.40477
      40 us: host 11.600 ms: 10.17104 + 290 x 5 us = 11.62104 ms, up ln(11.62104 / 10.17104) = 0.13327
    TTFT 33.4788 ms waits one decode iteration before its prefill (a closed loop's running step, _first_wait), no slot
    queue: 8 us 33.4788 - 3.38565 = 30.0932 ms, down ln(33.4788 / 30.0932) = 0.10661; 40 us + 1.450 = 34.9288 ms, up 0.04240."""
    m, dep = _graphs_off("llama-3.1-8b", 1, "trtllm", tp=1)
    sp, tp, one = _priced(m, dep)
    assert one(sp.eager_n) == 290.0 and one(sp.eager_host) == pytest.approx(290 * 35e-6, rel=1e-12)
    k, fixed = one(sp.kernels), one(sp.host_step) + one(sp.host_seq)
    assert k == pytest.approx(6.76434e-3, abs=5e-9) and fixed == pytest.approx(21.0442e-6, abs=1e-10)
    e = lc.estimate(m, dep, W)
    tpot = {35: k + fixed + (290 * 35e-6 - k), 8: k + fixed, 40: k + fixed + (290 * 40e-6 - k)}
    assert e.tpot_s == pytest.approx(tpot[35], rel=1e-12) and tpot[35] == pytest.approx(10.17104e-3, abs=5e-9)
    assert [one(x) for x in tp["iteration_ends"]] == pytest.approx([tpot[8], tpot[40]], rel=1e-12)
    down, up = e.eager_decode.moves
    assert (down, up) == pytest.approx((math.log(tpot[35] / tpot[8]), math.log(tpot[40] / tpot[35])), rel=1e-9)
    assert (down, up) == pytest.approx((0.40477, 0.13327), abs=1e-5)
    assert one(tp["wait"]) == pytest.approx(tpot[35], rel=1e-12) and one(tp["slot_queue"]) == 0.0
    ttft = {8: e.ttft_s - (tpot[35] - tpot[8]), 40: e.ttft_s + 290 * 5e-6}
    assert e.eager_decode.ttft_moves == pytest.approx((math.log(e.ttft_s / ttft[8]), math.log(ttft[40] / e.ttft_s)), rel=1e-9)
    assert e.eager_decode.ttft_moves == pytest.approx((0.10661, 0.04240), abs=1e-5)


def test_each_side_of_the_band_takes_its_own_end():
    """The 8B case's bands: below, hypot(T, 0.40477) at 95% and x 1.2816 / 1.96 at 80%; above, hypot(T, 0.13327); T the
    between-group term of its other reasons. tok/s/user the other way round (it falls as TPOT rises); TTFT by its own."""
    m, dep = _graphs_off("llama-3.1-8b", 1, "trtllm", tp=1)
    e = lc.estimate(m, dep, W)
    down, up = e.eager_decode.moves
    kw = dict(engine="trtllm", concurrency=1, isl=1024, osl=1024, arrival=W.arrival)
    ctx = intervals.context(m, dep.gpu, dep.precision, eager=(down, up), eager_ttft=e.eager_decode.ttft_moves, **kw)
    plain = replace(ctx, eager=(0.0, 0.0), eager_ttft=(0.0, 0.0))
    t = intervals.bundled()
    T = intervals.between([w.kind for w in intervals.reasons(plain, t)], t)
    for metric, (lo, hi) in (("tpot_ms", (down, up)), ("tok_s_per_user", (up, down)), ("ttft_ms", e.eager_decode.ttft_moves)):
        b, b0 = intervals.band(metric, 10.0, ctx), intervals.band(metric, 10.0, plain)
        assert math.log(b0["hi95"] / b["hi95"]) == pytest.approx(T[95] - math.hypot(T[95], hi), abs=1e-12)
        assert math.log(b["lo95"] / b0["lo95"]) == pytest.approx(T[95] - math.hypot(T[95], lo), abs=1e-12)
        z = 1.2816 / 1.96
        assert math.log(b0["hi80"] / b["hi80"]) == pytest.approx(T[80] - math.hypot(T[80], hi * z), abs=1e-12)
    # the lower side widens the more for TPOT: 8 us hides the launches, 40 us adds a seventh of them
    b, b0 = intervals.band("tpot_ms", 10.0, ctx), intervals.band("tpot_ms", 10.0, plain)
    assert math.log(b0["lo95"] / b["lo95"]) > 2.0 * math.log(b["hi95"] / b0["hi95"]) > 0.0


@pytest.mark.parametrize("engine, ends, moves", [
    # TensorRT-LLM's stages launch together (PP_HOSTS_TOGETHER): the ring waits on one stage's share of every stage's excess
    ("trtllm", (6.81985e-3, 9.27097e-3), (0.225037, 0.082013)),
    # vLLM's hosts launch one after another: the ring pays every stage's excess
    ("vllm", (7.45518e-3, 12.30602e-3), (0.374890, 0.126290)),
])
def test_pp2_moves_per_stage_then_the_row(engine, ends, moves):
    """Review rev12c #7: llama-3.1-8b TP1 PP2 on two H100s, graphs off, 1 request (one micro-batch: the ring binds). The
    slowest stage launches 147 operators over 3.58506 ms of kernels (TensorRT-LLM; vLLM 3.61094), both stages 292 over
    6.77776 ms (6.82915); the fitted host costs 0.02104 ms a stage (vLLM 0.31301). TensorRT-LLM:
      35 us: ring 6.77776 + (292 x 35 us - 6.77776) / 2 + 2 x 0.02104 = 8.54097 ms
       8 us: the stage's host 1.176 ms hides under its kernels, so no stage's excess: 6.77776 + 0.04209 = 6.81985 ms
      40 us: 6.77776 + (292 x 40 us - 6.77776) / 2 + 0.04209 = 9.27097 ms (8.54097 + 292 x 5 us / 2)
    down ln(8.54097 / 6.81985) = 0.22504, up ln(9.27097 / 8.54097) = 0.08201. The stage's host scaled by the row's ratio
    (main 670c67bf: 1.72112 / 1.55994 x the stage's move 147 x 5 us) gave 9.35191 ms, up 0.09071. vLLM: 35 us 6.82915 +
    (10.220 - 6.82915) + 0.62603 = 10.84602 ms; 8 us 7.45518; 40 us + 292 x 5 us = 12.30602 ms."""
    m, dep = _graphs_off("llama-3.1-8b", 2, engine, tp=1, pp=2)
    sp, tp, one = _priced(m, dep)
    assert (one(sp.eager_n), one(sp.eager_n_all)) == (147.0, 292.0)
    assert [one(x) for x in tp["iteration_ends"]] == pytest.approx(list(ends), abs=5e-9)
    e = lc.estimate(m, dep, W)
    assert e.eager_decode.moves == pytest.approx(moves, abs=2e-6)
    assert e.tpot_s * math.exp(e.eager_decode.moves[1]) - e.tpot_s == pytest.approx(292 * 5e-6 / (2 if engine == "trtllm" else 1), rel=1e-9)


def test_the_disaggregated_pool_prices_its_moves_as_the_aggregated_step():
    """Issue 40: the decode pool's rows widen by TPOT's moves, not the legacy excess share. llama-3.1-70b TP8 decode at 100
    requests (TensorRT-LLM's default capture misses 100 a rank): one stage, one token a step, so TPOT is the iteration. Its
    host, 723 x 35 us + jitter = 26.276 ms, over 15.391 ms of kernels: +10.886 ms. At 8 us the host (6.755 ms) hides: TPOT
    - 10.886 ms; at 40 us + 723 x 5 us = 3.615 ms. No slot wait at 100: TTFT does not move."""
    r = lc.disagg("llama-3.1-70b", gpu="h100", prefill="tp=8", decode="tp=8", engine="trtllm", concurrency=[100])
    row = r.to_dict()["rows"][0]
    e, t = row["eager_decode"], row["tpot_ms"]
    assert e["extra_ms_per_step"] == pytest.approx(10.886, abs=5e-3)
    assert e["tpot_log_moves"] == pytest.approx([math.log(t / (t - e["extra_ms_per_step"])), math.log((t + 3.615) / t)], abs=1e-6)
    assert e["tpot_log_moves"] == pytest.approx([0.52813, 0.12774], abs=1e-5) and e["ttft_log_moves"] == [0.0, 0.0]
    why = [w for w in row["intervals"]["tpot_ms"]["widened"] if w.kind == "eager"]
    assert len(why) == 1 and "x0.59 at 8 us, x1.14 at 40 us" in why[0]


def test_a_hidden_disaggregated_step_says_one_line():
    # 70B TP2 decode, graphs off, 1 request: hidden at 35 us (as estimate's: tests/test_estimate_eager.py), +0.791 ms at 40
    r = lc.disagg("llama-3.1-70b", gpu="h100", prefill="tp=2", decode="tp=2", engine="trtllm", concurrency=[1], decode_cuda_graph_max_bs=0)
    row = r.to_dict()["rows"][0]
    assert row["eager_decode"]["extra_ms_per_step"] == 0.0 and row["eager_decode"]["tpot_log_moves"][0] == 0.0
    assert row["eager_decode"]["tpot_log_moves"][1] == pytest.approx(0.02736, abs=1e-5)
    notes = [n for n in r.notes if n.startswith("CUDA graphs")]
    assert len(notes) == 1 and "would add +0.791 ms to TPOT: the intervals widen above only" in notes[0]
