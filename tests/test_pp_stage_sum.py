"""A pipeline below its depth (fixpp2, docs/modelling-notes.md#pp-stage-sum): a micro-batch crosses the stages in turn, so
with m micro-batches on pp stages a decode iteration is max(the stages' sum, m x the slowest stage), pp x slowest only
where the pipeline is full. Before, one request at PP4 was priced 4 x the slowest stage: 24 to 27 layers all 4.144 ms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops, step_time
from llm_codesign.serve.aggregated import Serving, StepParts, evaluate, micro_batches
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.plan import Plan

# the 8B shape design exported in the newcomer review (/tmp/newc3/cfg25.json), its depth varied
CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
       "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "hidden_act": "silu", "rms_norm_eps": 1e-05,
       "rope_theta": 500000.0, "max_position_embeddings": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
       "intermediate_size": 18432}
H100 = get_gpu("h100")
CAL = calibration_for(H100)


def shape(layers):
    return from_hf_config({**CFG, "num_hidden_layers": layers}, f"cfg{layers}")


def _tpot(layers, *, tp=2, pp=4, concurrency=1):
    m = shape(layers)
    at = Serving(gpu=H100, prec=m.default_precision, plan=Plan(tp=tp, pp=pp))
    r = evaluate(m, at, cal=CAL, concurrency=concurrency, isl=1024, osl=1024, with_ops=True)
    return r


def test_all_stages_counts_every_layer_once_and_the_head_once():
    # 25 layers on PP4: stages 6/6/7/6 (ModelSpec.stage_counts, vLLM's split: the extra layer on a stage before the last,
    # which holds the head). Hand-derived from the operators' own per-layer times: one pass through the pipeline runs 25
    # layers, the head once and 4 send/recvs (3 activation hops and the sampled token back to stage 0); the slowest
    # stage is 7 layers or the last's 6 and the head, whichever is longer
    m = shape(25)
    assert [sum(s) for s in m.stage_counts(4)] == [6, 6, 7, 6]
    sh = Plan(tp=2, pp=4).broadcast()
    stage, every = forward_ops(m, H100, CAL, m.default_precision, sh, b=Batch(dec_seqs=1.0, dec_ctx=1536.0), sample=True,
                               all_stages=True)
    layer = [op for op in every if op.name.startswith("layer")]
    head = [op for op in every if op.part == "lm_head"]
    send = [op for op in every if op.part == "pipeline"]
    assert {float(np.ravel(op.count)[0]) for op in layer} == {25.0}
    assert {float(np.ravel(op.count)[0]) for op in head} == {1.0} and len(head) == 1  # no engine: the head alone
    assert [float(np.ravel(op.count)[0]) for op in send] == [4.0]
    t_layer = float(sum(np.ravel(op.time)[0] for op in layer))
    t_head = float(np.ravel(head[0].time)[0])
    t_send = float(np.ravel(send[0].time)[0])
    assert float(np.ravel(step_time(every))[0]) == pytest.approx(25 * t_layer + t_head + 4 * t_send, rel=1e-12)
    # the slowest stage: the last (6 layers and the head) where the head outweighs a layer, else the first (7)
    slowest = max(7 * t_layer, 6 * t_layer + t_head) + t_send
    assert float(np.ravel(step_time(stage))[0]) == pytest.approx(slowest, rel=1e-12)
    assert t_head > t_layer  # this shape's case: the last stage, 6 layers and the head, sets a full pipeline's pace


def test_iteration_is_the_stage_sum_below_the_depth_and_pp_x_slowest_when_full():
    # StepParts.iteration, hand-derived: stages of 1.0 ms kernels (slowest) summing to 3.4 ms, 10 us host a step
    p = StepParts(kernels=1.0e-3, host_step=10e-6, host_seq=0.0, kernels_all=3.4e-3)
    stage = 1.0e-3 + 10e-6
    ring = 3.4e-3 + 4 * 10e-6
    assert float(p.iteration(4, 1)) == pytest.approx(ring, rel=1e-12)  # one request: the sum, 3.44 ms, not 4.04
    assert float(p.iteration(4, 3)) == pytest.approx(max(ring, 3 * stage), rel=1e-12)  # 3 micro-batches: 3.44 > 3.03
    assert float(p.iteration(4, 4)) == 4 * stage  # full: the slowest stage's pace, exactly as before
    assert float(p.iteration(4, 64)) == 4 * stage
    assert float(StepParts(kernels=1.0e-3, host_step=10e-6, host_seq=0.0).iteration(1, 1)) == stage  # PP1: one stage
    assert list(micro_batches(np.array([0.0, 1.0, 3.0, 4.0, 9.0]), 4)) == [1.0, 1.0, 3.0, 4.0, 4.0]


def test_one_request_pays_one_layer_per_layer_at_any_pp():
    # the review's repro (estimate cfgL.json --gpu h100 --tp 2 --pp 4 --concurrency 1): 24, 25, 26, 27 layers all gave
    # 4.144 ms at PP4. A lone request's token crosses every layer once, so a layer adds the same time at PP4 as at PP1
    # (the per-layer operators are priced alike), and PP4's premium over PP1 is the stages' host steps and send/recvs
    # (3 more of each), not 3 layers hidden and the head counted 4 times
    t = {(L, pp): float(np.ravel(_tpot(L, pp=pp)["tpot_s"])[0]) for L in (24, 25, 26, 27) for pp in (1, 4)}
    for L in (24, 25, 26):
        assert t[L + 1, 4] - t[L, 4] == pytest.approx(t[L + 1, 1] - t[L, 1], rel=1e-6)
        assert t[L + 1, 4] > t[L, 4]
    assert 1e3 * t[24, 1] == pytest.approx(3.4748, abs=5e-4)  # main's figure, unchanged: PP1 is one stage
    assert 1e3 * t[24, 4] == pytest.approx(3.5648, abs=5e-4)  # 4.1440 before
    assert 0 < t[24, 4] - t[24, 1] < 0.15e-3
    # both goldens from the operators' sums (_ring_ms): PP1 3.4538 ms of kernels + 18.68 us host step + 2.36 us for the one
    # sequence = 3.4748; PP4 every stage's kernels in turn, 3.4806 (the same 24 layers and head + 4 send/recvs of 6.7 us)
    # + 4 stages' host, 4 x 21.04 us = 3.5648
    one, four = _ring_ms(24, 1), _ring_ms(24, 4)
    assert one == pytest.approx(3.4538 + 0.01868 + 0.00236, abs=1e-4) and 1e3 * t[24, 1] == pytest.approx(one, rel=1e-9)
    assert four == pytest.approx(3.4806 + 4 * 0.02104, abs=1e-4) and 1e3 * t[24, 4] == pytest.approx(four, rel=1e-9)


def _ring_ms(layers, pp):
    """One request's decode iteration by hand, in ms: the kernels of every stage in turn (ops.forward_ops(all_stages=True):
    each layer and the head once, the send/recvs) at context ISL + OSL/2 = 1536 in TensorRT-LLM's step, less PDL's overlap per
    launch (serve.aggregated.kernels_time), plus each stage's host step and per-sequence cost (fitted.toml [default]
    step_overhead_s and seq_overhead_s, trtllm): not StepParts.iteration nor evaluate, which the goldens check."""
    from llm_codesign.cost.ops import launches
    from llm_codesign.spec.engines import get_engine

    costs = get_engine("trtllm").costs(CAL)
    m = shape(layers)
    _, every = forward_ops(m, H100, costs.cal, m.default_precision, Plan(tp=2, pp=pp).broadcast(),
                           b=Batch(dec_seqs=1.0, dec_ctx=1536.0), engine=costs.engine, sample=True, all_stages=True)
    pdl = costs.engine.pdl_share(H100.family) * costs.pdl_credit
    kernels = float(np.ravel(step_time(every) - pdl * launches(every, pdl=True))[0])
    return 1e3 * (kernels + pp * (costs.step_overhead + costs.seq_overhead))


def test_one_requests_prefill_crosses_every_layer_once():
    # the same for its first token: a lone request's prompt chunk crosses the stages one after another
    # (PrefillParts.through), so TTFT grows by one layer's prefill kernels a layer at PP4 as at PP1 (it was 25.553 ms at
    # 25, 26 and 27 layers: 4 x the slowest stage). Its eager launches count once (ppeager: each stage's host launches
    # under the upstream stages' compute, as a decode iteration's), a quarter of the stages' launches at PP4: a layer adds
    # a quarter of its launches there, all of them at PP1 (one host)
    t = {(L, pp): float(np.ravel(_tpot(L, pp=pp)["ttft_s"])[0]) for L in (24, 25, 26, 27) for pp in (1, 4)}
    eager = {L: float(np.ravel(_prefill(L).eager)[0]) for L in (24, 25, 26, 27)}  # one stage's (PP1: every layer's)
    for L in (24, 25, 26):
        assert t[L + 1, 4] - t[L, 4] == pytest.approx(t[L + 1, 1] - t[L, 1] - 0.75 * (eager[L + 1] - eager[L]), rel=2e-3)
    assert 1e3 * t[25, 4] == pytest.approx(18.587, abs=2e-3)  # 25.553 before fixpp2, 23.142 before ppeager
    # its derivation: the prompt's pass through the four stages, 14.887 ms (prefill kernels 13.284 + host 0.084 + eager
    # launches 6.074 / 4 = 1.518, time_parts), then one decode iteration before the token is out (wait), by hand 3.616 ms
    # of every stage's kernels + 4 x 21.04 us host = 3.700 (_ring_ms); 14.887 + 3.700 = 18.587
    tp = _tpot(25, pp=4)["time_parts"]
    span = 1e3 * float(np.ravel(tp["prefill_kernels"] + tp["prefill_host"] + tp["prefill_eager"])[0])
    assert span == pytest.approx(14.887, abs=2e-3) and span == pytest.approx(1e3 * float(np.ravel(tp["prefill_span"])[0]), rel=1e-9)
    wait = _ring_ms(25, 4)
    assert wait == pytest.approx(3.700, abs=1e-3) and 1e3 * float(np.ravel(tp["wait"])[0]) == pytest.approx(wait, rel=1e-9)
    assert span + wait == pytest.approx(1e3 * t[25, 4], rel=1e-9)
    assert 1e3 * t[24, 1] == pytest.approx(21.788, abs=2e-3)  # PP1 unchanged


def _prefill(layers):
    # the lone request's 1,024-token prefill step on one stage (TP2, PP1): its eager launches at TensorRT-LLM's per-launch
    # cost over the 2 ranks
    from llm_codesign.serve.aggregated import prefill_step_parts
    from llm_codesign.spec.engines import TRTLLM
    m = shape(layers)
    return prefill_step_parts(m, H100, m.default_precision, Plan(tp=2, pp=1).broadcast(), costs=TRTLLM.costs(CAL), tokens=1024.0,
                              isl=1024.0, chunk=1024.0)


def test_a_full_pipeline_is_priced_as_before():
    # 64 requests on PP4: 16 a micro-batch, every stage busy; the iteration is pp x the slowest stage
    r = _tpot(26, concurrency=64)
    sp, tp = r["step_parts"], r["time_parts"]
    assert float(np.ravel(tp["stages_per_iteration"])[0]) == 4.0
    assert float(np.ravel(tp["batch"])[0]) == 16.0
    assert sp.kernels_all is not None


@settings(max_examples=12, deadline=None)
@given(layers=st.integers(8, 40), pp=st.sampled_from([1, 2, 4, 8]), tp=st.sampled_from([1, 2]))
def test_adding_a_layer_never_lowers_tpot_at_one_request(layers, pp, tp):
    a = float(np.ravel(_tpot(layers, tp=tp, pp=pp)["tpot_s"])[0])
    b = float(np.ravel(_tpot(layers + 1, tp=tp, pp=pp)["tpot_s"])[0])
    assert b > a
