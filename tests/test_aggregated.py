"""serve/aggregated.py: in-flight batching with chunked prefill (TTFT, TPOT, throughput) against hand-derived
steps, its invariants, and its search shortcuts priced against every element."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops, step_time
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.harness import SchedulerFlags
from llm_codesign.spec.plan import Plan, SpecDecoding
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

DENSE = ["llama-3.1-8b", "qwen3-32b", "llama-3.1-70b"]


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(DENSE + ["deepseek-r1", "gpt-oss-120b", "qwen3.5-397b", "nemotron-h-56b"]), B=st.integers(1, 1024),
       scale=st.floats(1.0, 3.0))
def test_a_deployment_is_never_slower_with_more_bandwidth(name, B, scale):
    m, g = get_model(name), get_gpu("h200")
    fast = replace(g, hbm_bandwidth_bytes_per_s=g.hbm_bandwidth_bytes_per_s * scale)
    cal = calibration_for(g)
    plan = Plan(tp=8, ep=8 if m.is_moe else 1, moe_tp=1)
    r1 = evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=plan), cal=cal, concurrency=B, isl=1024, osl=512)
    r2 = evaluate(m, Serving(gpu=fast, prec=m.default_precision, plan=plan), cal=cal, concurrency=B, isl=1024, osl=512)
    assert r2["tpot_s"] <= r1["tpot_s"] * (1 + 1e-12)
    assert r2["ttft_s"] <= r1["ttft_s"] * (1 + 1e-12)


def test_speculation_pays_at_batch_one_and_less_at_large_batch():
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    cal = calibration_for(g)
    prec = Precision.of("fp8", kv="fp8")
    spec = SpecDecoding("eagle3", 3, mean_accepted=2.5)
    B = np.array([1, 8, 64, 256, 1024])
    # CUDA graphs up to 1024 a rank, padded (the LLM API's default stops at 128: eager steps above it, on both sides)
    graphs = SchedulerFlags(cuda_graph_max_bs=1024.0)
    base = evaluate(m, Serving(gpu=g, prec=prec, plan=Plan(tp=8)), cal=cal, concurrency=B, isl=1024, osl=1024,
                    arrival="waves", flags=graphs)  # in step: the ratio of the verify step to the plain one, no prefill stall beside them
    sp = evaluate(m, Serving(gpu=g, prec=prec, plan=Plan(tp=8), spec=spec), cal=cal, concurrency=B, isl=1024, osl=1024, arrival="waves",
                  flags=graphs)
    speedup = base["tpot_s"] / sp["tpot_s"]
    assert speedup[0] > 1.5
    # falls with the batch while the all-reduce stays on one algorithm; at 1024 sequences both runs have
    # left TensorRT-LLM's two-shot kernel for NCCL (16 and 64 MiB), while at 256 only the verifying one
    # had (4 MiB two-shot against 16 MiB NCCL), so the last step may rise a little, below break-even
    assert np.all(np.diff(speedup[:4]) < 0)
    assert speedup[3] < 1.0 < speedup[2] and speedup[-1] < 1.05  # at 1024 about break-even (1.01 on the bundled profile)


def test_eager_prefill_launch_cost_lengthens_ttft_only(h100):
    from dataclasses import replace

    import numpy as np

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.registry import get_model

    m = get_model("llama-3.1-8b")
    base = calibration_for(h100)
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))

    def run(eager):
        cal = replace(base, eager_launch_s=(("trtllm", eager),))
        return evaluate(m, Serving(gpu=h100, prec=m.default_precision, plan=plan, engine=get_engine("trtllm")), cal=cal,
                        concurrency=1.0, isl=1024.0, osl=128.0)

    a, b = run(0.0), run(50e-6)
    # one request alone, TP1: 32 layers x (qkv, prefill attention, o, gate_up, down + 4 elementwise
    # kernels) + the LM head + the sampler's pass (TP1: no logits to gather) = 290 launches of 50 us in its
    # prefill step; decode steps stay captured
    assert (b["prefill_step_s"] - a["prefill_step_s"]).item() == pytest.approx(290 * 50e-6, rel=1e-6)
    assert b["step_s"].item() == pytest.approx(a["step_s"].item()) and b["ttft_s"].item() > a["ttft_s"].item()


def test_eager_launches_wait_for_the_slowest_rank_of_the_stage(h100):
    """An eager step over N ranks pays eager_launch_s + eager_skew_s x sqrt(2 ln N) per launch: the skew adds
    nothing at one GPU, and at TP8 (sqrt(2 ln 8) = 2.0393) 2.0393 x 20 us on each of the step's launches."""
    from llm_codesign.cost.ops import launches

    m, e = get_model("llama-3.1-8b"), get_engine("trtllm")
    base = replace(calibration_for(h100), eager_launch_s=(("trtllm", 5e-6),))

    def pf(tp, skew):
        cal = replace(base, eager_skew_s=(("trtllm", skew),))
        plan = Plan(*(np.array([v]) for v in (tp, 1, 1, 1, 1, 1)))
        return evaluate(m, Serving(gpu=h100, prec=m.default_precision, plan=plan, engine=e), cal=cal, concurrency=1.0,
                        isl=1024.0, osl=128.0)["prefill_step_s"].item()

    assert pf(1, 20e-6) == pf(1, 0.0)
    ops = forward_ops(m, h100, base.in_step("trtllm"), m.default_precision, Plan(tp=8), engine=e, sample=True,
                      b=Batch(pf_tokens=1024.0, pf_seqs=1.0, pf_ctx=0.0))
    n = float(np.ravel(launches(ops))[0])
    assert n > 290  # TP1's 290 and the step's all-reduces
    assert pf(8, 20e-6) - pf(8, 0.0) == pytest.approx(2.0393 * 20e-6 * n, rel=1e-4)
    # the costs' own formula, over an array of stage sizes
    c = e.costs(replace(base, eager_skew_s=(("trtllm", 20e-6),)))
    assert np.allclose(c.eager_per_launch(np.array([1, 2, 8])), [5e-6, 5e-6 + 1.1774 * 20e-6, 5e-6 + 2.0393 * 20e-6], rtol=1e-4)


def _eager_prefill_step_s(m, gpu, cal, backend, batch):
    """A prefill step priced as serving.evaluate does: kernels + step overhead + eager launches."""
    from llm_codesign.cost.ops import launches
    c, e = cal.in_step(backend), get_engine(backend)
    ops = forward_ops(m, gpu, c, m.default_precision, Plan(), b=batch, engine=e, sample=True)
    n = float(np.ravel(launches(ops))[0])  # each launch pays the eager cost and saves PDL's share of a boundary
    return float(np.ravel(step_time(ops))[0]) + c.step_overhead(backend) + (c.eager_launch(backend) - e.pdl_share(gpu.family) * c.pdl_credit_s) * n


def _cohort_case(h100, *, share=0.0, rounds=None, engine="trtllm", mixed=None, mnt=4096, chunked=None, spec=None):
    """llama-3.1-8b on one H100, 16 identical requests of 1024 + 256 tokens, a 4096-token step budget (`mnt`), the front
    end 10 ms per request and no wait steps or host cost per sequence (under `spec` where given): the tiny case the cohort
    tests derive by hand."""
    from llm_codesign.spec.harness import SchedulerFlags

    m = get_model("llama-3.1-8b")
    cal = replace(calibration_for(h100), prefill_queue_fraction=((engine, share),), ttft_overhead_s=((engine, 0.01),),
                  ttft_wait_steps=((engine, 0.0),), seq_overhead_s=((engine, 0.0),))
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    set_ = {k: v for k, v in (("rounds", rounds), ("mixed_chunk", mixed), ("chunked_prefill", chunked)) if v is not None}
    kw = {"flags": SchedulerFlags(**set_)} if set_ else {}
    at = Serving(gpu=h100, prec=m.default_precision, plan=plan, engine=get_engine(engine), max_num_tokens=mnt, spec=spec)
    r = evaluate(m, at, cal=cal, concurrency=16.0, isl=1024.0, osl=256.0, arrival="waves", **kw)
    return m, cal, r


def _mixed_step_s(m, h100, cal, engine, tokens, dec, chunk=1024.0):
    """_cohort_case's prefill step: `tokens` of 1024-token prompts in chunks of `chunk` beside `dec` decodes at 1024 + 128."""
    from llm_codesign.serve.aggregated import prefill_step

    sh = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))).broadcast()
    return prefill_step(m, h100, m.default_precision, sh, costs=get_engine(engine).costs(cal), tokens=tokens, isl=1024.0,
                        chunk=chunk, dec_seqs=dec, dec_ctx=1024.0 + 128.0).item()


def test_waves_cohort_is_the_prompts_one_step_completes(h100):
    # an engine that mixes prefill into decodes streams the first wave through, a step's prompts getting what the
    # decodes leave of its 4096 tokens: beside the other 15 requests' decodes (a token each) 4081, three whole 1024-token
    # prompts (TensorRT-LLM takes no part of one), so the 16 requests leave it in cohorts of 3, which refill and
    # prefill together: one step of 3072 tokens (beside the other 13 requests' decodes, 4083 tokens left) before the
    # first token, and the front end's 10 ms for each of the (3 + 1) / 2 requests ahead of it on average:
    # TTFT = t_step + 20 ms (with the whole budget for the prompts: cohorts of 4, one step of 4096 tokens, + 25 ms); the
    # closed loop's phase, one decode step (under 10 ms here, EngineCosts.phase_steps("waves")), hides under that front-end work
    m, cal, r = _cohort_case(h100)
    assert r["prefill_step_s"].item() == pytest.approx(_mixed_step_s(m, h100, cal, "trtllm", 3072.0, 13.0), rel=1e-12)
    assert r["ttft_s"].item() == pytest.approx(r["prefill_step_s"].item() + 2.0 * 0.01, rel=1e-9)


def test_a_steps_prompts_get_the_budget_the_decodes_leave():
    # issue 39, review r5: the decodes take 1 + draft tokens each of the step's budget first (vLLM's running requests,
    # TensorRT-LLM's generation requests, SGLang's mixed running batch), the prompts what is left, never below zero
    from llm_codesign.serve.aggregated import prompt_budget
    from llm_codesign.spec.harness import SchedulerFlags

    vllm, trt = get_engine("vllm"), get_engine("trtllm")
    # 8,192 tokens beside 64 decodes: a chunk of 8,128; with 3 drafts each, 8,192 - 64 x 4 = 7,936
    assert prompt_budget(8192.0, 8192.0, engine=vllm, decode_tokens=64.0) == 8128.0
    assert prompt_budget(8192.0, 8192.0, engine=vllm, decode_tokens=64.0 * 4) == 7936.0
    # whole prompts (TensorRT-LLM): 2,524 - 64 = 2,460 tokens hold two 1,024-token prompts, 2,524 - 600 one
    assert prompt_budget(np.array([2524.0, 2524.0]), 1024.0, engine=trt, decode_tokens=np.array([64.0, 600.0])).tolist() == [2048.0, 1024.0]
    # decodes that fill the budget leave no prompt token that step
    assert prompt_budget(2048.0, 1024.0, engine=vllm, decode_tokens=2048.0) == 0.0
    assert prompt_budget(2048.0, 1024.0, engine=vllm, decode_tokens=4096.0) == 0.0
    # no decode beside: the whole budget, as before
    assert prompt_budget(8192.0, 8192.0, engine=vllm) == 8192.0
    assert prompt_budget(2524.0, 1024.0, engine=trt, flags=SchedulerFlags(chunked_prefill=True), decode_tokens=24.0) == 2500.0
    # a cached prefix: TensorRT-LLM counts the whole prompt (Engine.budget_counts_cached), so 8,192 less 63 decodes at ISL
    # 1,024 half cached takes floor(8,129 / 1,024) = 7 prompts of 512 new tokens, 3,584; vLLM counts new tokens only:
    # floor(8,129 / 512) x 512 = 7,680 unchunked, all 8,129 chunked
    assert prompt_budget(8192.0, 512.0, engine=trt, decode_tokens=63.0, cached=512.0) == 7 * 512.0
    assert prompt_budget(8192.0, 512.0, engine=trt, flags=SchedulerFlags(chunked_prefill=True), decode_tokens=63.0,
                         cached=512.0) == pytest.approx(8129.0 / 1024.0 * 512.0)
    assert prompt_budget(8192.0, 512.0, engine=vllm, flags=SchedulerFlags(chunked_prefill=False), decode_tokens=63.0, cached=512.0) == 15 * 512.0
    assert prompt_budget(8192.0, 512.0, engine=vllm, decode_tokens=63.0, cached=512.0) == 8129.0
    # an 8,192-token prompt half cached beside 15 decodes: counted past the 8,177 left, it takes the step and computes its
    # 4,096 new tokens (without hits its 8,177-token chunk, as before)
    assert prompt_budget(8192.0, 4096.0, engine=trt, decode_tokens=15.0, cached=4096.0) == 4096.0
    assert prompt_budget(8192.0, 8192.0, engine=trt, decode_tokens=15.0) == 8177.0


def test_a_mixed_steps_decodes_verify_and_draft_as_a_decode_steps_do(h100):
    # vLLM with EAGLE-3, k = 3: a running request's 3 drafts are scheduled with it (v1/core/sched/scheduler.py:404-411,
    # 521-532@0.19.0), and its drafter proposes the next 3 on every step. 16 requests in waves of a 4096-token budget: beside
    # the other 15 requests' decodes (1 + 3 tokens each) a step takes 4096 - 60 = 4036 prompt tokens (vLLM chunks), cohorts
    # of q = 4036 / 1024 prompts, and their step carries those 4036 tokens beside 16 - q decodes of 4 tokens each:
    # 4036 + 4 (16 - q) = 4084.2 tokens through each GEMM (one token each, the mixed step's 4036 + 12.06 = 4048.1 before),
    # and the draft passes for those 16 - q requests, decode_step's at that batch
    from llm_codesign.cost.ops import forward_ops
    from llm_codesign.serve.aggregated import decode_step, prefill_batch

    spec = SpecDecoding("eagle3", 3, mean_accepted=2.5)
    m, cal, r = _cohort_case(h100, engine="vllm", spec=spec)
    q = 4036.0 / 1024.0
    dec = 16.0 - q
    sh, costs = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))).broadcast(), get_engine("vllm").costs(cal)
    _, t_draft, _ = decode_step(m, h100, m.default_precision, sh, costs=costs, b=np.array([dec]), ctx=1152.0, k=3.0, spec=spec)
    verify = Batch(pf_tokens=4036.0, pf_seqs=q, pf_ctx=0.0, dec_seqs=dec, dec_ctx=1152.0, dec_tokens_per_seq=4.0)
    assert r["prefill_step_s"].item() == pytest.approx(_eager_prefill_step_s(m, h100, cal, "vllm", verify) + t_draft.item(), rel=1e-9)
    assert t_draft.item() > 0
    # the tokens: Llama-3.1-8B's QKV projection, 4096 -> (32 + 2 x 8) x 128 = 6144, over 4036 + 4 x 12.0586 = 4084.23 tokens
    ops = forward_ops(m, h100, costs.cal, m.default_precision, sh, engine=costs.engine,
                      b=prefill_batch(tokens=4036.0, isl=1024.0, chunk=1024.0, dec_seqs=dec, dec_ctx=1152.0, k=3.0))
    qkv = next(op for op in ops if op.role == "qkv")
    assert qkv.flops.item() == pytest.approx(2.0 * (4036.0 + 4.0 * dec) * 6144 * 4096, rel=1e-12)


def test_a_mixed_steps_mtp_drafts_are_the_decode_steps(h200):
    # DeepSeek-R1's MTP block in the target's precision: decode_step takes its first pass from its own operators (one layer
    # of the last type at the verify batch); a mixed step prices that layer at its decodes' batch, the same time
    from llm_codesign.serve.aggregated import decode_step, prefill_step

    m, spec = get_model("deepseek-r1"), SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6))
    sh, costs = Plan.parse("tp=8,ep=8", m).broadcast(), get_engine("trtllm").costs(calibration_for(h200))
    dec = np.array([0.0, 40.0, 200.0])
    _, t_draft, _ = decode_step(m, h200, m.default_precision, sh, costs=costs, b=dec, ctx=1536.0, k=3.0, spec=spec)

    def mixed(**kw):
        return prefill_step(m, h200, m.default_precision, sh, costs=costs, tokens=1024.0, isl=1024.0, chunk=1024.0, dec_seqs=dec,
                            dec_ctx=1536.0, k=3.0, **kw)

    # no decode beside the prompt, no draft pass
    assert np.allclose(mixed(spec=spec) - mixed(), np.where(dec > 0, t_draft, 0.0), rtol=1e-12, atol=0.0)
    assert np.all(t_draft[1:] > 0)


def test_an_engine_prefilling_first_keeps_its_whole_chunk(h100):
    # SGLang without mixed chunks (and ATOM) run a prefill batch with no decode beside it: the budget is the prompts'
    # whole, at any load. 16 requests of 1024 in 4096-token steps: 4096 prompt tokens a step (16 x 1024 fill it)
    m, cal, r = _cohort_case(h100, engine="sglang")
    assert r["prefill_step_s"].item() == pytest.approx(_mixed_step_s(m, h100, cal, "sglang", 4096.0, 0.0), rel=1e-12)


def test_waves_first_wave_is_a_burst_of_one_round_in_twenty(h100):
    # 20 rounds (aiperf --num-requests 20C): the first, 1/20 of the requests, is the burst itself, its 16 prompts at
    # 4096 tokens a step, each request's first token at the end of the step its prompt ends in, (16 + 1) / 2 x 1024 / 4096
    # + 1/2 = 2.625 of those steps on average (_steps_to_first_token); the front end serves
    # the 0.95 x 3 + 0.05 x 16 = 3.65 requests that arrive together on average (cohorts of 3: the test above), (3.65 + 1) / 2 each
    m, cal, r = _cohort_case(h100, rounds=20.0)
    t_wave = _eager_prefill_step_s(m, h100, cal, "trtllm", Batch(pf_tokens=4096.0, pf_seqs=4.0, pf_ctx=0.0))
    steady = _cohort_case(h100)[2]["prefill_step_s"].item()
    assert r["ttft_s"].item() == pytest.approx(0.95 * steady + 0.05 * 2.625 * t_wave + 2.325 * 0.01, rel=1e-9)


def test_trtllm_steps_take_whole_prompts_only(h100):
    # TensorRT-LLM without chunked prefill (its default) schedules a prompt whole or not at all: what the other 15
    # requests' decodes leave of a 2560-token budget, 2545 tokens, takes two 1024-token prompts a step, so the cohorts are
    # 2 and a request's first token comes after one step of 2048 prompt tokens beside the other 14 requests' decodes, and
    # (2 + 1) / 2 front-end turns; chunked, q = 2545 / 1024 prompts a step: one step of 2545 tokens beside 16 - q decodes,
    # (q + 1) / 2 turns
    from llm_codesign.serve.aggregated import prefill_step, prompt_budget
    from llm_codesign.spec.harness import SchedulerFlags

    trt = get_engine("trtllm")
    assert not trt.chunks_prefill and get_engine("vllm").chunks_prefill and get_engine("sglang").chunks_prefill
    # two 1k prompts in the clean sample's ISL + 1500 budget, one 8k prompt in its 9692; a prompt past the budget is chunked
    budgets = prompt_budget(np.array([2524.0, 9692.0, 4096.0]), np.array([1024.0, 8192.0, 8192.0]), engine=trt)
    assert budgets.tolist() == [2048.0, 8192.0, 4096.0]
    assert prompt_budget(2524.0, 1024.0, engine=trt, flags=SchedulerFlags(chunked_prefill=True)) == 2524.0
    assert prompt_budget(2524.0, 1024.0, engine=get_engine("vllm")) == 2524.0
    m, cal, whole = _cohort_case(h100, mnt=2560)
    chunked = _cohort_case(h100, mnt=2560, chunked=True)[2]
    costs, sh = get_engine("trtllm").costs(cal), Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))).broadcast()
    step = lambda tokens, dec: prefill_step(m, h100, m.default_precision, sh, costs=costs, tokens=tokens, isl=1024.0,  # noqa: E731
                                            chunk=1024.0, dec_seqs=dec, dec_ctx=1024.0 + 128.0).item()
    assert whole["prefill_step_s"].item() == pytest.approx(step(2048.0, 14.0), rel=1e-12)
    assert whole["ttft_s"].item() == pytest.approx(step(2048.0, 14.0) + 1.5 * 0.01, rel=1e-9)
    q = 2545.0 / 1024.0
    assert chunked["prefill_step_s"].item() == pytest.approx(step(2545.0, 16.0 - q), rel=1e-12)
    assert chunked["ttft_s"].item() == pytest.approx(step(2545.0, 16.0 - q) + (q + 1.0) / 2.0 * 0.01, rel=1e-9)


def test_waves_rebunching_share_adds_the_rest_of_the_wave(h100):
    # a share 0.5 of the 13 requests outside a cohort of 3 re-arrive with it: q = 3 + 0.5 x 13 = 9.5, their 9.5 x 1024
    # tokens over steps of the three whole prompts that 4096 - 6.5 decodes leave room for (3072 tokens), a request's
    # first token (9.5 + 1) / 2 x 1024 / 3072 + 1/2 = 2.25 steps in, after 5.25 front-end turns
    m, cal, r = _cohort_case(h100, share=0.5)
    assert r["prefill_step_s"].item() == pytest.approx(_mixed_step_s(m, h100, cal, "trtllm", 3072.0, 6.5), rel=1e-12)
    assert r["ttft_s"].item() == pytest.approx(2.25 * r["prefill_step_s"].item() + 5.25 * 0.01, rel=1e-9)


def test_waves_on_an_engine_prefilling_first_stay_one_cohort(h100):
    # SGLang (prefill first, no decode beside it) prefills the whole wave before any decode: one cohort of 16, a
    # request's first token (16 + 1) / 2 x 1024 / 4096 + 1/2 = 2.625 steps in, and after it the request waits for the
    # rest of the wave's prompts, 16 x 1024 / 4096 - 2.625 = 1.375 steps, spread over its 255 decode steps. Before its
    # prefill, with no step queued (_cohort_case's ttft_wait_steps 0), the closed loop's phase: the decode step it
    # arrives at the start of, whole (EngineCosts.phase_steps("waves") = 1), under which SGLang's cost does not hide
    _, _, r = _cohort_case(h100, engine="sglang")
    t_pf = r["prefill_step_s"].item()
    assert r["ttft_s"].item() == pytest.approx(2.625 * t_pf + 8.5 * 0.01 + r["step_s"].item(), rel=1e-9)
    # --enable-mixed-chunk: the running batch's size comes off the chunk (PrefillAdder), so beside the other 15 requests'
    # decodes q = 4081 / 1024 prompts a step, one step of 4081 tokens (16 - q decodes beside) and (q + 1) / 2 turns
    m, cal, mixed = _cohort_case(h100, engine="sglang", mixed=True)
    q = 4081.0 / 1024.0
    assert mixed["prefill_step_s"].item() == pytest.approx(_mixed_step_s(m, h100, cal, "sglang", 4081.0, 16.0 - q), rel=1e-12)
    assert mixed["ttft_s"].item() == pytest.approx(mixed["prefill_step_s"].item() + (q + 1.0) / 2.0 * 0.01 + mixed["step_s"].item(), rel=1e-9)
    assert r["tpot_s"].item() == pytest.approx(r["step_s"].item() + 1.375 * t_pf / 255, rel=1e-9)


def test_default_step_budget_is_the_engines(h100):
    m = get_model("llama-3.1-8b")
    b200 = get_gpu("b200")
    cal = calibration_for(b200)
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    # a lone 16k-token prompt: SGLang on B200 prefills it in one 16384-token step, so the default
    # equals an explicit 16384 and differs from 8192 (two chunks)
    run = lambda mnt: evaluate(m, Serving(gpu=b200, prec=m.default_precision, plan=plan, engine=get_engine("sglang"), max_num_tokens=mnt),  # noqa: E731
                               cal=cal, concurrency=1.0, isl=16384.0, osl=64.0)["ttft_s"].item()
    assert run(None) == pytest.approx(run(16384)) and run(None) != pytest.approx(run(8192))


def test_scheduling_wait_adds_decode_iterations_to_ttft_only(h100):
    m = get_model("deepseek-v3")
    b200 = get_gpu("b200")

    def run(wait, adp_wait, adp):
        # no request cost: in a closed loop it would hide under the wait (test_request_cost_overlaps_the_wait)
        cal = replace(calibration_for(b200), ttft_wait_steps=(("trtllm", wait),), adp_wait_steps=(("trtllm", adp_wait),),
                      ttft_overhead_s=(("trtllm", 0.0),))
        plan = Plan(*(np.array([v]) for v in (8 // adp, 1, 8, 1, adp, 1)))
        return evaluate(m, Serving(gpu=b200, prec=Precision.of("fp8_block"), plan=plan, engine=get_engine("trtllm")), cal=cal,
                        concurrency=64.0, isl=1024.0, osl=1024.0)

    a, b = run(0.0, 0.0, 1), run(2.0, 10.0, 1)
    # TP8: 2 decode iterations more before the prefill step; the attention-DP hold does not apply
    assert b["ttft_s"].item() - a["ttft_s"].item() == pytest.approx(2.0 * a["step_s"].item(), rel=1e-9)
    assert b["tpot_s"].item() == pytest.approx(a["tpot_s"].item())
    c, d = run(0.0, 0.0, 8), run(2.0, 10.0, 8)
    # eight attention-DP ranks: 2 + 10 iterations
    assert d["ttft_s"].item() - c["ttft_s"].item() == pytest.approx(12.0 * c["step_s"].item(), rel=1e-9)


def test_request_cost_overlaps_the_wait():
    # one request (q = 1, front end's work c) with one step queued ahead (ttft_wait_steps 1) on one rank (no attention-DP
    # hold, recv_interval 1): in a closed loop (waves) it is sent as a step starts and waits that step whole, the phase
    # (EngineCosts.phase_steps("waves") = 1, the arrival's). Its front end's work runs during the phase: it reaches the
    # queue at max(c, 1 step), so its first token moves by max(c - 1 step, 0): 0 for c = 0.9 step, 0.25 step for
    # 1.25 step, 1 - 1 step for 1 s. A
    # burst arrives on an idle engine (phase 0) and pays c on top; SGLang's cost (not front-end work,
    # SGLangEngine.request_cost_overlaps_wait) is added under waves too
    m = get_model("deepseek-v3")
    b200 = get_gpu("b200")
    plan = Plan(*(np.array([v]) for v in (8, 1, 8, 1, 1, 1)))

    def run(engine, c, arrival, wait=1.0):
        cal = replace(calibration_for(b200), ttft_wait_steps=((engine, wait),), ttft_overhead_s=((engine, c),))
        r = evaluate(m, Serving(gpu=b200, prec=Precision.of("fp8_block"), plan=plan, engine=get_engine(engine)), cal=cal,
                     concurrency=1.0, isl=1024.0, osl=1024.0, arrival=arrival)
        return r["ttft_s"].item(), r["step_s"].item()

    t0, step = run("trtllm", 0.0, "waves")
    assert 1e-3 < step < 0.1
    assert run("trtllm", 0.9 * step, "waves")[0] == pytest.approx(t0, rel=1e-12)
    assert run("trtllm", 1.25 * step, "waves")[0] - t0 == pytest.approx(0.25 * step, rel=1e-9)
    assert run("trtllm", 1.0, "waves")[0] - t0 == pytest.approx(1.0 - step, rel=1e-9)
    # alone in flight it has no step queued ahead (EngineCosts.wait_steps: nothing else keeps the loop running), so
    # the profile's count moves nothing
    assert run("trtllm", 0.0, "waves", wait=0.0)[0] == pytest.approx(t0, rel=1e-12)
    b0 = run("trtllm", 0.0, "burst")[0]
    assert run("trtllm", 0.5 * step, "burst")[0] - b0 == pytest.approx(0.5 * step, rel=1e-9)
    s0 = run("sglang", 0.0, "waves")[0]
    assert run("sglang", 0.5 * step, "waves")[0] - s0 == pytest.approx(0.5 * step, rel=1e-9)


def test_request_cost_overlap_excludes_the_attention_dp_hold():
    # under attention DP (8 ranks, 9 requests: every rank decoding) TensorRT-LLM's hold of adp_wait_steps 50 starts only
    # once the request is in the queue: the front end's work hides under the running step's rest alone (1 step),
    # never under the hold (50 steps, ~0.8 s, which max(wait, work) hid all of it under). The busiest rank holds 2 of
    # the 9 requests, arriving together (q = 2): the work is c (q + 1) / 2 = 0.75 s at c = 0.5 s, so the first token
    # moves by 0.75 s - 1 step
    m = get_model("deepseek-v3")
    b200 = get_gpu("b200")
    plan = Plan(*(np.array([v]) for v in (1, 1, 8, 1, 8, 1)))

    def run(c):
        cal = replace(calibration_for(b200), adp_wait_steps=(("trtllm", 50.0),), ttft_wait_steps=(("trtllm", 1.0),),
                      ttft_overhead_s=(("trtllm", c),))
        r = evaluate(m, Serving(gpu=b200, prec=Precision.of("fp8_block"), plan=plan, engine=get_engine("trtllm")), cal=cal,
                     concurrency=9.0, isl=1024.0, osl=1024.0, arrival="waves")
        return r["ttft_s"].item(), r["step_s"].item()

    t0, step = run(0.0)
    assert run(0.5)[0] - t0 == pytest.approx(0.75 - step, rel=1e-9)


def test_attention_dp_hold_needs_every_rank_decoding():
    # issue 38: TensorRT-LLM holds a context request for balance (PyExecutor._balance_adp_requests) only while every
    # attention-DP rank has a generation request; with C requests over 8 ranks the C - 1 others cover every rank only
    # when C > 8, so one request alone (or eight) pays no hold and nine pay the whole adp_wait_steps
    m = get_model("deepseek-v3")
    b200 = get_gpu("b200")
    plan = Plan(*(np.array([v]) for v in (1, 1, 8, 1, 8, 1)))

    def run(adp_wait, c):
        cal = replace(calibration_for(b200), adp_wait_steps=(("trtllm", adp_wait),))
        return evaluate(m, Serving(gpu=b200, prec=Precision.of("fp8_block"), plan=plan, engine=get_engine("trtllm")), cal=cal,
                        concurrency=c, isl=1024.0, osl=1024.0)

    for c in (1.0, 8.0):
        assert run(50.0, c)["ttft_s"].item() == run(0.0, c)["ttft_s"].item()
    a, b = run(0.0, 9.0), run(50.0, 9.0)
    assert b["ttft_s"].item() - a["ttft_s"].item() == pytest.approx(50.0 * a["step_s"].item(), rel=1e-9)


def test_out_of_step_prefills_stall_decode_by_what_they_add(h100):
    m = get_model("llama-3.1-8b")
    # cohorts of one (share 0): the other 7 requests' decodes leave 2041 of the 2048 tokens, one whole 1024-token prompt
    # (TensorRT-LLM); their 7 prefills land in this request's 255 decode steps, each in one mixed step of the wave's
    # budget (2048 tokens)
    cal = replace(calibration_for(h100), prefill_queue_fraction=(("trtllm", 0.0),), seq_overhead_s=(("trtllm", 0.0),))
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    r = evaluate(m, Serving(gpu=h100, prec=m.default_precision, plan=plan, engine=get_engine("trtllm"), max_num_tokens=2048),
                 cal=cal, concurrency=8.0, isl=1024.0, osl=256.0, arrival="waves")
    t_wave = _eager_prefill_step_s(m, h100, cal, "trtllm", Batch(pf_tokens=2048.0, pf_seqs=2.0, pf_ctx=0.0))
    t_stage = r["step_s"].item()
    # the decode step is paid anyway; each prefill adds its 1/2 share of what the wave step costs beyond it
    stall = 7 * (1024 / 2048) * (t_wave - t_stage) / 255
    assert r["tpot_s"].item() == pytest.approx(t_stage + stall, rel=1e-6)


def test_per_sequence_host_overhead_scales_the_decode_step_with_the_batch(h100):
    m = get_model("llama-3.1-8b")
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))

    def run(seq_oh, c):
        cal = replace(calibration_for(h100), seq_overhead_s=(("vllm", seq_oh),))
        return evaluate(m,
                        Serving(gpu=h100, prec=m.default_precision, plan=plan, engine=get_engine("vllm"), max_num_tokens=8192),
                        cal=cal, concurrency=float(c), isl=1024.0, osl=256.0, arrival="waves")

    # 20 us per running sequence per step: 64 sequences add 1.28 ms to every decode step, 8 add 0.16 ms
    for c in (8, 64):
        a, b = run(0.0, c), run(20e-6, c)
        assert b["step_s"].item() - a["step_s"].item() == pytest.approx(c * 20e-6, rel=1e-9)
        # TPOT follows, less what the longer step takes off the prefill stall (it spreads arrivals over
        # fewer iterations; 5% of the step's growth with the bundled profile's vLLM queue parameters)
        assert b["tpot_s"].item() - a["tpot_s"].item() == pytest.approx(c * 20e-6, rel=0.1)
        assert b["tpot_s"].item() - a["tpot_s"].item() <= c * 20e-6 * (1 + 1e-9)
    # another engine's value never reaches TensorRT-LLM's steps
    def trt(vllm_oh):
        cal = replace(calibration_for(h100), seq_overhead_s=(("vllm", vllm_oh), ("trtllm", 0.0)))
        return evaluate(m, Serving(gpu=h100, prec=m.default_precision, plan=plan, engine=get_engine("trtllm")), cal=cal,
                        concurrency=64.0, isl=1024.0, osl=256.0)["step_s"].item()

    assert trt(1e-3) == trt(0.0)


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(["llama-3.1-70b", "deepseek-r1", "qwen3.5-397b"]), cs=st.lists(st.integers(1, 4096), min_size=2, max_size=6),
       isl=st.integers(64, 16384))
def test_one_estimate_equals_the_same_deployment_inside_a_sweep(name, cs, isl):
    # the cost model is elementwise: no deployment's numbers depend on which others share its arrays
    m, g = get_model(name), get_gpu("b200")
    cal = calibration_for(g)
    plan = Plan(tp=8, ep=8 if m.is_moe else 1, moe_tp=1)
    swept = evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=plan), cal=cal, concurrency=np.array(cs), isl=isl, osl=512)
    for i, c in enumerate(cs):
        one = evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=plan), cal=cal, concurrency=c, isl=isl, osl=512)
        assert float(np.ravel(one["tpot_s"])[0]) == pytest.approx(float(swept["tpot_s"][i]), rel=1e-6)
        assert float(np.ravel(one["ttft_s"])[0]) == pytest.approx(float(swept["ttft_s"][i]), rel=1e-6)


def test_paged_engines_admit_past_the_kv_cache_and_share_the_decode_slots():
    # Llama-3.1-8B BF16 on one L40S, 1k in / 8k out: the KV cache holds a few dozen sequences at their
    # steady-state length (ISL + OSL/2) but its prompts alone for several times as many
    m, g = get_model("llama-3.1-8b"), get_gpu("l40s")
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    cal = calibration_for(g)

    def run(backend, c):
        return evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=plan, engine=get_engine(backend)), cal=cal,
                        concurrency=float(c), isl=1024.0, osl=8192.0)

    for backend in ("vllm", "sglang"):
        cap = int(run(backend, 1)["max_concurrency"].item())
        base = run(backend, cap)
        # vLLM admits on the prompt (share 0), SGLang reserves 0.098 x min(OSL, 4096) = 401 output tokens
        free = float(base["free_bytes"].item() + base["kv_bytes"].item())
        per_token = base["kv_bytes_per_seq"].item() / (1024 + 0.5 * 8192)
        admit = int(free // (per_token * (1024 + (0.0 if backend == "vllm" else 0.098 * 4096))))
        assert 2 * cap < admit
        over = run(backend, 2 * cap)
        # in step (waves, the default) all 2 x cap are admitted and each holds one of the cap running slots half the time,
        # its first token (the wave's 2 x cap prompts) and its decode alike (pastcap, serve.aggregated._in_step_priced; before,
        # the first token was the cap's: 0.4336 s on vLLM, now 0.8672 s)
        assert over["ttft_s"].item() == pytest.approx(2 * base["ttft_s"].item(), rel=1e-12)
        assert over["tpot_s"].item() == pytest.approx(2 * base["tpot_s"].item(), rel=1e-12)
        # the same decode slots give the same output rate (but for the wave's prefill, spread over more requests)
        assert over["output_tok_s_per_gpu"].item() == pytest.approx(base["output_tok_s_per_gpu"].item(), rel=0.01)
        # past what even the prompts' admission allows, the rest wait for whole requests to finish
        beyond = run(backend, 2 * admit)
        assert beyond["ttft_s"].item() > 10 * base["ttft_s"].item()
    # TensorRT-LLM reserves ISL + OSL: whatever exceeds its capacity waits for whole requests
    assert get_engine("trtllm").admission is None and get_engine("vllm").admission == (0.0, 0.0)
    cap = int(run("trtllm", 1)["max_concurrency"].item())
    base, over = run("trtllm", cap), run("trtllm", 2 * cap)
    life = cap * 8192.0 / base["output_tok_s_per_gpu"].item()
    assert over["ttft_s"].item() == pytest.approx(base["ttft_s"].item() + life, rel=1e-9)
    assert over["tpot_s"].item() == pytest.approx(base["tpot_s"].item(), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "deepseek-r1"]), gid=st.sampled_from(["h100", "b200", "l40s"]),
       tp=st.sampled_from([1, 8]), backend=st.sampled_from(["trtllm", "vllm", "sglang"]),
       lengths=st.sampled_from([(1024, 1024), (8192, 1024), (1024, 8192)]))
def test_more_requests_never_make_a_request_faster(name, gid, tp, backend, lengths):
    # through the KV cache's limit too: queueing (TensorRT-LLM) and time-sharing (vLLM, SGLang) only add. Under a padded
    # CUDA-graph capture: TensorRT-LLM's default (1-32, 64, 128 unpadded) runs 63 eagerly and 64 from a graph, so there
    # 64 requests decode faster than 63, as the engine does (test_the_default_capture_is_not_monotone)
    m, g = get_model(name), get_gpu(gid)
    plan = Plan(*(np.array([v]) for v in (tp, 1, 1, tp, 1, 1)))
    C = np.arange(1, 1025, dtype=float)
    r = evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=plan, engine=get_engine(backend)), cal=calibration_for(g),
                 concurrency=C, isl=float(lengths[0]), osl=float(lengths[1]), flags=SchedulerFlags(cuda_graph_max_bs=1024.0))
    if float(np.max(r["max_concurrency"])) < 1:
        return  # the weights alone do not fit
    for k in ("ttft_s", "tpot_s"):
        v = np.broadcast_to(r[k], C.shape)
        assert np.all(np.diff(v) >= -1e-9 * v[1:]), k


def test_the_default_capture_is_not_monotone():
    # llama-3.1-70b on 8 H100s under TensorRT-LLM's default capture: 63 requests decode eagerly (723 launches a step at the
    # fitted eager price over 8 ranks), 64 from a graph, 65 eagerly again; padded up to 128 the three rise in order
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    at = Serving(gpu=g, prec=m.default_precision, plan=Plan(*(np.array([v]) for v in (8, 1, 1, 8, 1, 1))), engine=get_engine("trtllm"))

    def tpot(flags=None):
        return evaluate(m, at, cal=calibration_for(g), concurrency=np.array([63.0, 64.0, 65.0]), isl=1024.0, osl=1024.0, flags=flags)["tpot_s"]

    t = tpot()
    assert t[1] < t[0] < t[2] and np.all(np.diff(tpot(SchedulerFlags(cuda_graph_max_bs=128.0))) > 0)


def test_a_draft_pass_priced_once_per_batch_equals_pricing_every_k():
    # DeepSeek-R1 with MTP on GB200 over (plans, batches, k): the draft pass is priced once per (plan,
    # batch) and again where the KV cache caps the running sequences differently at some k (the large
    # batches); every k priced on its own gives the same values, bit for bit
    from llm_codesign.serve.aggregated import max_running

    ds, g = get_model("deepseek-r1"), get_gpu("gb200")
    cal, spec = calibration_for(g), SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6, 0.5, 0.45))
    plan = Plan(tp=np.array([8, 1, 4])[:, None, None], pp=np.array([1, 1, 2])[:, None, None], ep=np.array([8, 8, 4])[:, None, None],
                moe_tp=1, adp=np.array([1, 8, 1])[:, None, None])
    b = np.array([1, 8, 64, 512, 4096, 16384])[None, :, None]
    ks = np.arange(6)[None, None, :]
    cap = np.broadcast_to(max_running(ds, Serving(gpu=g, prec=ds.default_precision, plan=plan, spec=spec, spec_k=ks), isl=1024,
                                      osl=1024), (3, 1, 6))
    assert (np.ptp(cap, axis=-1) > 0).any() and (b.max() > cap).all()  # capped, and capped differently along k
    whole = evaluate(ds, Serving(gpu=g, prec=ds.default_precision, plan=plan, spec=spec, spec_k=ks), cal=cal,
                     concurrency=b * plan.adp, isl=1024, osl=1024)
    for k in range(6):
        one = evaluate(ds, Serving(gpu=g, prec=ds.default_precision, plan=plan, spec=spec, spec_k=ks[..., k:k + 1]), cal=cal,
                       concurrency=b * plan.adp, isl=1024, osl=1024)
        for key in ("tpot_s", "ttft_s", "draft_s", "output_tok_s_per_gpu"):
            np.testing.assert_array_equal(np.broadcast_to(whole[key], (3, 6, 6))[..., k], np.broadcast_to(one[key], (3, 6, 1))[..., 0], err_msg=key)


def test_a_wave_prefill_priced_once_per_batch_equals_pricing_every_k():
    # a wave's prefill has no k in it: over (plans, batches, k) it is priced at k's first column and
    # again where the KV cache caps the running sequences differently along k. With 16-token prompts
    # and a 32k budget those capped waves stay under the budget (their own price, not the budget's);
    # every k priced on its own gives the same values, bit for bit
    from llm_codesign.serve.aggregated import max_running

    ds, g = get_model("deepseek-r1"), get_gpu("gb200")
    cal, spec = calibration_for(g), SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6, 0.5, 0.45))
    plan = Plan(tp=np.array([8, 1, 4])[:, None, None], pp=np.array([1, 1, 2])[:, None, None], ep=np.array([8, 8, 4])[:, None, None],
                moe_tp=1, adp=np.array([1, 8, 1])[:, None, None])
    b, ks, mnt = np.array([1, 64, 1024, 4096])[None, :, None], np.arange(6)[None, None, :], 32768
    lengths = {"isl": 16, "osl": 1024}
    at = Serving(gpu=g, prec=ds.default_precision, plan=plan, spec=spec, spec_k=ks, max_num_tokens=mnt)
    cap = max_running(ds, at, **lengths)
    assert ((np.ptp(cap, axis=-1) > 0) & (cap[..., 0] * 16 < mnt)).any()  # capped differently along k, under the budget
    whole = evaluate(ds, at, cal=cal, concurrency=b * plan.adp, **lengths)
    for k in range(6):
        one = evaluate(ds, replace(at, spec_k=ks[..., k:k + 1]), cal=cal, concurrency=b * plan.adp, **lengths)
        for key in ("tpot_s", "ttft_s", "output_tok_s_per_gpu"):
            np.testing.assert_array_equal(np.broadcast_to(whole[key], (3, 4, 6))[..., k], np.broadcast_to(one[key], (3, 4, 1))[..., 0], err_msg=key)


@pytest.mark.parametrize("backend", ["trtllm", "vllm", "sglang"])
def test_max_running_is_where_the_fit_ends(backend):
    # a rank given more requests than max_running does not fit, and given up to it does (the cache
    # has room): what lets a search skip the batches no plan holds
    from llm_codesign.serve.aggregated import max_running

    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    plan = Plan(tp=np.array([2, 4, 8, 4])[:, None], pp=np.array([1, 1, 1, 2])[:, None])
    b = np.unique(np.geomspace(1, 4096, 40).round())[None, :]
    prec, eng = Precision.of("fp8", kv="fp8"), get_engine(backend)
    r = evaluate(m, Serving(gpu=g, prec=prec, plan=plan, engine=eng), cal=calibration_for(g), concurrency=b, isl=4096, osl=1024)
    most = max_running(m, Serving(gpu=g, prec=prec, plan=plan, engine=eng), isl=4096, osl=1024)
    np.testing.assert_array_equal(np.broadcast_to(r["fits"], (4, b.size)), b <= most)
    assert (most[:, 0] > 0).all() and (b[0, -1] > most).all()


def test_one_plan_as_arrays_prices_as_the_plan_given_as_numbers():
    # DeepSeek-R1 at PP2 (61 layers: uneven stages, so the slowest stage is chosen per element) on
    # plan arrays of one element against three concurrencies: each as the scalar plan prices it
    ds, g = get_model("deepseek-r1"), get_gpu("h200")
    cal, c = calibration_for(g), np.array([1.0, 64.0, 256.0])
    arrays = evaluate(ds, Serving(gpu=g, prec=ds.default_precision, plan=Plan(*(np.array([v]) for v in (8, 2, 8, 1, 1, 1)))),
                      cal=cal, concurrency=c, isl=1024, osl=1024)
    for i, ci in enumerate(c):
        one = evaluate(ds, Serving(gpu=g, prec=ds.default_precision, plan=Plan(tp=8, pp=2, ep=8, moe_tp=1)), cal=cal,
                       concurrency=ci, isl=1024, osl=1024)
        for key in ("tpot_s", "ttft_s", "output_tok_s_per_gpu"):
            assert np.ravel(arrays[key])[i] == pytest.approx(np.ravel(one[key])[0], rel=1e-12), key


def test_max_running_is_where_the_fit_ends_under_attention_dp_and_speculation():
    # SGLang's KV fraction depends on the draft and on attention DP; DeepSeek-R1 with MTP on 8xB200
    from llm_codesign.serve.aggregated import max_running

    ds, g, eng = get_model("deepseek-r1"), get_gpu("b200"), get_engine("sglang")
    spec, ks = SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6)), np.array([0, 1, 3])[None, None, :]
    plan = Plan(tp=np.array([8, 1, 2])[:, None, None], ep=8, moe_tp=np.array([1, 1, 1])[:, None, None], adp=np.array([1, 8, 4])[:, None, None])
    b = np.unique(np.geomspace(1, 8192, 30).round())[None, :, None]
    r = evaluate(ds, Serving(gpu=g, prec=ds.default_precision, plan=plan, engine=eng, spec=spec, spec_k=ks),
                 cal=calibration_for(g), concurrency=b * plan.adp, isl=2048, osl=1024)
    most = max_running(ds, Serving(gpu=g, prec=ds.default_precision, plan=plan, engine=eng, spec=spec, spec_k=ks), isl=2048,
                       osl=1024)
    np.testing.assert_array_equal(np.broadcast_to(r["fits"], (3, b.size, 3)), b <= most)
    assert (np.ptp(np.broadcast_to(most, (3, 1, 3)), axis=-1) > 0).any()  # the draft's room moves the limit


def test_serving_carries_a_deployment_whole():
    # evaluate took a deployment apart into nine arguments; Serving holds them (keywords only) and
    # Serving.of reads a Deployment: the same numbers as the public evaluate of that deployment
    from llm_codesign.serve.metrics import evaluate as public
    from llm_codesign.spec.plan import Workload, deployment

    m, g = get_model("deepseek-r1"), get_gpu("b200")
    dep = deployment(m, gpu=g, num_gpus=8, attention_dp=8, ep=8, engine="sglang", spec="mtp", draft_len=2,
                     acceptance_rates="0.8,0.6", max_num_tokens=4096, cpp=True)
    at = Serving.of(dep)
    assert (at.gpu, at.prec, at.plan, at.engine.name, at.spec, at.spec_k, at.max_num_tokens, at.cpp) == (
        g, dep.precision, dep.plan, "sglang", dep.spec, None, 4096, True)
    r = evaluate(m, at, cal=calibration_for(g), concurrency=64, isl=1024, osl=1024)
    want = public(m, dep, Workload(isl=1024, osl=1024, concurrency=64), calibration=calibration_for(g))
    for key in ("tpot_s", "ttft_s", "output_tok_s_per_gpu"):
        assert float(np.ravel(r[key])[0]) == float(np.ravel(getattr(want, key))[0]), key
    with pytest.raises(TypeError):
        Serving(g, dep.precision, dep.plan)  # the GPU, formats and sizes are named


def test_a_closed_loops_throughput_is_littles_law(h100):
    # each of C slots completes a request per first token and decode, so tok/s/GPU = C x OSL / (TTFT + (OSL - 1) x TPOT)
    # / GPUs in a closed loop, waves or spread (InferenceX's measured rows keep it within 3%); SGLang's per-request cost
    # made its waves' figure 21-87% higher before. Not a burst's (slots idle until the wave ends) nor offline's.
    m = get_model("llama-3.1-8b")
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    for engine in ("sglang", "trtllm", "vllm"):
        at = Serving(gpu=h100, prec=m.default_precision, plan=plan, engine=get_engine(engine))
        for arrival in ("waves", "closed_loop"):
            r = evaluate(m, at, cal=calibration_for(h100), concurrency=np.array([8.0, 256.0]), isl=1024.0, osl=128.0, arrival=arrival)
            assert np.allclose(r["output_tok_s_per_gpu"], np.array([8.0, 256.0]) * 128 / (r["ttft_s"] + 127 * r["tpot_s"]), rtol=1e-9)
        off = evaluate(m, at, cal=calibration_for(h100), concurrency=256.0, isl=1024.0, osl=128.0, offline=True)
        assert off["output_tok_s_per_gpu"].item() != pytest.approx(256 * 128 / (off["ttft_s"].item() + 127 * off["tpot_s"].item()), rel=1e-3)


_EAGLE3, _MTP = SpecDecoding("eagle3", 3, mean_accepted=2.5), SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6))


@pytest.mark.parametrize("model,gpu,plan,engine,mixed,spec,osl", [
    ("llama-3.1-8b", "h100", "tp=1", "trtllm", None, None, 256.0), ("llama-3.1-8b", "h100", "tp=1", "vllm", None, None, 256.0),
    ("llama-3.1-8b", "h100", "tp=1", "sglang", True, None, 256.0),
    # the decodes filling the budget (EAGLE-3, k = 3: 4 tokens each, 1,024 a step at 256): the prompt was left 0-4 tokens a
    # step and priced as ~1,024 one-token mixed steps (vLLM closed loop TPOT 67 ms at 228, 1,107 ms at 256; TensorRT-LLM and
    # SGLang with mixed chunks alike)
    ("llama-3.1-8b", "h100", "tp=1", "vllm", None, _EAGLE3, 256.0), ("llama-3.1-8b", "h100", "tp=1", "trtllm", None, _EAGLE3, 256.0),
    ("llama-3.1-8b", "h100", "tp=1", "sglang", True, _EAGLE3, 256.0),
    # speculation: a mixed step's decodes verify 1 + k tokens each and draft the next k, as a decode step's do; priced at
    # one token and no draft, the mixed step came out cheaper than the decode step it stands in for, and TPOT fell
    # (vLLM, EAGLE-3: closed loop, 2560 tokens, 29.0 ms at 256 requests, 28.0 at 512; TensorRT-LLM, DeepSeek-R1 MTP on
    # 8 H200: closed loop, 2048 tokens, 1024 out, 73.3 ms at 384, 72.4 at 512)
    ("llama-3.1-8b", "h100", "tp=1", "vllm", None, _EAGLE3, 256.0), ("deepseek-r1", "h200", "tp=8,ep=8", "trtllm", None, _MTP, 1024.0)])
def test_ttft_and_tpot_never_fall_as_concurrency_rises_with_the_decodes_in_the_budget(model, gpu, plan, engine, mixed, spec, osl):
    # more requests in flight take more of each step's budget for their decodes, so less is left for a prompt: its first
    # token and the others' tokens come no sooner (tight budgets, where the decodes fill most of it at 512 requests)
    from llm_codesign.spec.harness import SchedulerFlags

    m, g = get_model(model), get_gpu(gpu)
    C = np.array([1, 2, 4, 8, 16, 32, 64, 128, 192, 228, 256, 295, 384, 512], float)
    # under a padded CUDA-graph capture: the default's gaps are not monotone (test_the_default_capture_is_not_monotone)
    kw = {"flags": SchedulerFlags(mixed_chunk=mixed, cuda_graph_max_bs=1024.0)}
    at = Serving(gpu=g, prec=m.default_precision, plan=Plan.parse(plan, m), engine=get_engine(engine), spec=spec)
    for arrival in ("waves", "closed_loop"):
        for mnt in (1024.0, 2048.0, 2560.0):
            r = evaluate(m, replace(at, max_num_tokens=mnt), cal=calibration_for(g), concurrency=C, isl=1024.0, osl=osl, arrival=arrival, **kw)
            for k in ("ttft_s", "tpot_s"):
                assert np.all(np.isfinite(r[k])) and np.all(r[k] > 0)
                assert np.all(np.diff(r[k]) >= -1e-12 * r[k][1:]), (arrival, mnt, k, r[k])
            # no cliff: a step up in concurrency within what the deployment holds at most doubles TPOT (the decode batch
            # grows by at most 2x between these points, and a prompt never drops to a few tokens a step)
            ok = r["fits"][1:]
            assert np.all(r["tpot_s"][1:][ok] <= 2.0 * r["tpot_s"][:-1][ok]), (arrival, mnt, r["tpot_s"] * 1e3)


def test_the_decodes_and_the_prompts_arriving_share_the_budget_hand_derived(h100):
    # EAGLE-3 k = 3 accepting 2.5, 1,024 in / 256 out, a 1,024-token budget: a decode takes 4 tokens a step and brings
    # 2.5 / 255 x 1,024 = 10.04 prompt tokens a step, so 1,024 / 14.04 = 72.9: 72 decode at once (vLLM, mixing); the
    # rest wait as past the batch limit, so TPOT stays at 72's. SGLang mixes no prompt into a speculating step: no bound
    from llm_codesign.serve.aggregated import budget_fill

    fill = budget_fill(1024.0, new=1024.0, osl=256.0, k=np.array([3.0, 0.0]), acc=np.array([2.5, 1.0]), pp=1.0, mixes=True)
    assert fill.tolist() == [72.0, np.floor(1024.0 / (1.0 + 1024.0 / 255.0))] == [72.0, 204.0]
    assert budget_fill(1024.0, new=1024.0, osl=256.0, k=3.0, acc=2.5, pp=2.0, mixes=False) == np.inf
    m = get_model("llama-3.1-8b")
    at = Serving(gpu=h100, prec=m.default_precision, plan=Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))), engine=get_engine("vllm"),
                 spec=_EAGLE3, max_num_tokens=1024.0)
    r = evaluate(m, at, cal=calibration_for(h100), concurrency=np.array([72.0, 228.0, 256.0]), isl=1024.0, osl=256.0, arrival="closed_loop")
    assert r["tpot_s"][1] == r["tpot_s"][2] == r["tpot_s"][0]  # 1,107 ms at 256, 67 at 228, 12 at 72 before
    assert r["fits"].tolist() == [True, True, True]  # what the KV cache and the batch limit hold is unchanged


def test_sglang_mixes_no_prompt_into_a_speculating_step(h100):
    # SGLang turns --enable-mixed-chunk off under EAGLE, EAGLE3, NEXTN, STANDALONE and NGRAM (server_args.py:2390,
    # 2474@0.5.9): with speculation the flag prices as its default; a sweep's k = 0 runs no draft and still mixes
    from llm_codesign.serve.aggregated import mixes
    from llm_codesign.spec.harness import SchedulerFlags

    sg, on = get_engine("sglang"), SchedulerFlags(mixed_chunk=True)
    assert mixes(sg, on, np.array([0.0, 3.0])).tolist() == [True, False]
    assert mixes(get_engine("vllm"), SchedulerFlags(), np.array([0.0, 3.0])).tolist() is True  # at every k
    m = get_model("llama-3.1-8b")
    at = Serving(gpu=h100, prec=m.default_precision, plan=Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))), engine=sg, spec=_EAGLE3)
    a, b = (evaluate(m, at, cal=calibration_for(h100), concurrency=64.0, isl=1024.0, osl=256.0, arrival="closed_loop",
                     flags=SchedulerFlags(mixed_chunk=f)) for f in (True, False))
    assert a["tpot_s"].item() == b["tpot_s"].item() and a["ttft_s"].item() == b["ttft_s"].item()


def test_one_rule_merges_the_deployments_chunked_prefill_into_the_runs_flags():
    # the deployment's chunked prefill where the run sets none, the run's own where it does: evaluate and a prefill
    # instance (serve.disagg.prefill_pool) read the same helper
    from llm_codesign.serve.aggregated import prompt_budget, run_flags
    from llm_codesign.spec.harness import SchedulerFlags

    assert run_flags(None, chunked_prefill=False).chunked_prefill is False
    assert run_flags(None, chunked_prefill=None) == SchedulerFlags()
    assert run_flags(SchedulerFlags(chunked_prefill=True), chunked_prefill=False).chunked_prefill is True
    # a deployment that turns chunking off takes whole prompts: a 2,524-token budget two 1,024-token prompts, not 2.46
    assert prompt_budget(2524.0, 1024.0, engine=get_engine("vllm"), flags=run_flags(None, chunked_prefill=False)) == 2048.0


def test_first_token_waits_the_arrivals_phase_and_the_engines_queued_step():
    # docs/modelling-notes.md#wait-arrival-phase: the wait before the prefill is the arrival's phase (a closed loop's
    # request is sent as a step starts and waits it whole: 1; a burst on an idle engine: 0) plus the steps the engine's
    # loop has queued ahead (1 for vLLM's async batch queue, v1/engine/core.py step_with_batch_queue@0.19.0; 0 for a
    # synchronous build, SchedulerFlags.queued_steps), the latter only while another request keeps the loop running. By
    # hand, at TP8 with no front-end work: alone (q = 1) nothing is queued, whatever the build; beside another request
    # in a closed loop the synchronous build's first token is 1 decode step sooner; with front-end work c it hides under
    # the closed loop's phase, TTFT(c) = TTFT(0) + max(c - 1 step, 0), whatever the build
    m = get_model("llama-3.1-70b")
    b200 = get_gpu("b200")
    plan = Plan(*(np.array([v]) for v in (8, 1, 1, 1, 1, 1)))

    def run(c, arrival="waves", queued=float("nan"), concurrency=1.0):
        cal = replace(calibration_for(b200), ttft_overhead_s=(("vllm", c),))
        r = evaluate(m, Serving(gpu=b200, prec=Precision.of("fp8"), plan=plan, engine=get_engine("vllm")), cal=cal,
                     concurrency=concurrency, isl=1024.0, osl=1024.0, arrival=arrival, flags=SchedulerFlags(queued_steps=queued))
        return r["ttft_s"].item(), r["step_s"].item()

    assert dict(calibration_for(b200).ttft_wait_steps)["vllm"] == 1.0
    t0, step = run(0.0)
    assert 1e-3 < step < 0.1
    # alone in flight, nothing keeps the loop running and nothing is queued ahead: the build's count moves nothing
    assert run(0.0, queued=0.0)[0] == pytest.approx(t0, rel=1e-12)
    # with another request in flight (2 in a closed loop) the async build queues one step ahead of it
    t2, step2 = run(0.0, "closed_loop", concurrency=2.0)
    assert t2 - run(0.0, "closed_loop", queued=0.0, concurrency=2.0)[0] == pytest.approx(step2, rel=1e-9)
    assert run(0.9 * step)[0] == pytest.approx(t0, rel=1e-12)
    assert run(1.25 * step)[0] - t0 == pytest.approx(0.25 * step, rel=1e-9)
    assert run(1.25 * step, queued=0.0)[0] - run(0.0, queued=0.0)[0] == pytest.approx(0.25 * step, rel=1e-9)
    b0 = run(0.0, "burst")[0]
    assert run(0.0, "burst", queued=0.0)[0] == pytest.approx(b0, rel=1e-12)
    # a burst pays its front end's work on top: nothing of its wait is phase
    assert run(0.5 * step, "burst")[0] - b0 == pytest.approx(0.5 * step, rel=1e-9)

