from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.memory import kv_bytes_per_token, weight_bytes_per_gpu
from llm_codesign.cost.ops import Batch, Sharding, forward_ops, step_time
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import evaluate
from llm_codesign.serve.estimate import estimate
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import catalog, get_gpu
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding, Workload, validity
from llm_codesign.spec.precision import Precision, gemm_math
from llm_codesign.spec.registry import get_model

DENSE = ["llama-3.1-8b", "qwen3-32b", "llama-3.1-70b"]


@settings(max_examples=80, deadline=None)
@given(name=st.sampled_from(DENSE + ["nemotron-h-56b"]), gid=st.sampled_from(sorted(catalog())), B=st.integers(1, 512),
       ctx=st.integers(1, 32768), tp=st.sampled_from([1, 2, 4, 8]), w=st.sampled_from(["bf16", "fp8"]))
def test_decode_step_never_beats_the_roofline(name, gid, B, ctx, tp, w):
    m, g = get_model(name), get_gpu(gid)
    prec = Precision.of(w, kv=w)
    t = float(step_time(forward_ops(m, g, calibration_for(g), prec, Sharding(tp=tp), b=Batch(dec_seqs=B, dec_ctx=ctx))))
    wbytes = (m.total_params - m.embedding_params - m.lm_head_params) * prec.weight.bytes_per_weight() / tp + m.lm_head_params * 2 / tp
    # the KV cache, and a recurrent mixer's state (Nemotron-H's Mamba-2 layers), read at least once
    kv = B * ctx * float(kv_bytes_per_token(m, prec, Sharding(tp=tp))) + B * m.state_bytes_per_seq() / tp
    flops = 2 * m.active_params * B / tp
    floor = max((wbytes + kv) / g.hbm_bandwidth_bytes_per_s, flops / g.peak(gemm_math(prec.weight, prec.activation, g)))
    assert t >= floor


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(DENSE + ["deepseek-r1", "gpt-oss-120b", "qwen3.5-397b", "nemotron-h-56b"]), B=st.integers(1, 1024),
       scale=st.floats(1.0, 3.0))
def test_more_bandwidth_never_slower(name, B, scale):
    m, g = get_model(name), get_gpu("h200")
    fast = replace(g, hbm_bandwidth_bytes_per_s=g.hbm_bandwidth_bytes_per_s * scale)
    cal = calibration_for(g)
    plan = Plan(tp=8, ep=8 if m.is_moe else 1, moe_tp=1)
    r1 = evaluate(m, g, cal, m.default_precision, plan, concurrency=B, isl=1024, osl=512)
    r2 = evaluate(m, fast, cal, m.default_precision, plan, concurrency=B, isl=1024, osl=512)
    assert r2["tpot_s"] <= r1["tpot_s"] * (1 + 1e-12)
    assert r2["ttft_s"] <= r1["ttft_s"] * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(DENSE + ["deepseek-v3", "mixtral-8x7b", "llama-4-maverick"]))
def test_tp_never_increases_weight_memory(name):
    m = get_model(name)
    prev = np.inf
    for tp in (1, 2, 4, 8):
        w = float(weight_bytes_per_gpu(m, m.default_precision, Sharding(tp=tp, ep=tp if m.is_moe else 1)))
        assert w <= prev
        prev = w


def test_weight_memory_golden():
    # Llama-3.1-70B BF16, TP8: layers 80 x (8192 x 18432 attention + 3 x 8192 x 28672 FFN) x 2 B / 8
    # + embedding and LM head 2 x 128256 x 8192 x 2 B / 8 = 17,638,096,896 B
    m = get_model("llama-3.1-70b")
    assert float(weight_bytes_per_gpu(m, Precision.of("bf16"), Sharding(tp=8))) == 17_638_096_896
    # PP2 x TP4: half the layers, and the larger of embedding / LM head (they sit on different stages)
    w = float(weight_bytes_per_gpu(m, Precision.of("bf16"), Sharding(tp=4, pp=2)))
    assert w == 80 * 855_638_016 * 2 / 8 + 128256 * 8192 * 2 / 4


def test_kv_per_gpu_golden():
    m = get_model("llama-3.1-70b")
    assert float(kv_bytes_per_token(m, Precision.of("bf16"), Sharding(tp=8))) == 327_680 / 8
    # TP beyond the 8 KV heads replicates them: TP16 holds one head per GPU like TP8
    assert float(kv_bytes_per_token(m, Precision.of("bf16", kv="fp8"), Sharding(tp=16))) == 327_680 / 2 / 8
    ds = get_model("deepseek-v3")
    # the MLA latent is replicated on every TP rank; attention-DP ranks hold their own sequences
    assert float(kv_bytes_per_token(ds, Precision.of("bf16"), Sharding(tp=8))) == 576 * 61 * 2


def test_speculation_pays_at_batch_one_and_less_at_large_batch():
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    cal = calibration_for(g)
    prec = Precision.of("fp8", kv="fp8")
    spec = SpecDecoding("eagle3", 3, mean_accepted=2.5)
    B = np.array([1, 8, 64, 256, 1024])
    base = evaluate(m, g, cal, prec, Plan(tp=8), concurrency=B, isl=1024, osl=1024)
    sp = evaluate(m, g, cal, prec, Plan(tp=8), concurrency=B, isl=1024, osl=1024, spec=spec)
    speedup = base["tpot_s"] / sp["tpot_s"]
    assert speedup[0] > 1.5
    # falls with the batch while the all-reduce stays on one algorithm; at 1024 sequences both runs have
    # left TensorRT-LLM's two-shot kernel for NCCL (16 and 64 MiB), while at 256 only the verifying one
    # had (4 MiB two-shot against 16 MiB NCCL), so the last step may rise a little, below break-even
    assert np.all(np.diff(speedup[:4]) < 0)
    assert speedup[-1] < 1.0 < speedup[2]


def test_acceptance_forms():
    s = SpecDecoding("mtp", 3, rates=(0.9, 0.8, 0.5))
    assert float(s.accepted()) == pytest.approx(1 + 0.9 + 0.72 + 0.36)
    s2 = SpecDecoding("eagle3", 3, mean_accepted=2.94)  # EAGLE-3 Maverick k=3 (speculative_acceptance.csv)
    assert float(s2.accepted()) == pytest.approx(2.94, rel=1e-6)
    assert float(s2.accepted(1)) < float(s2.accepted(3)) < float(s2.accepted(5)) < 6
    with pytest.raises(InputError, match="acceptance"):
        SpecDecoding("mtp", 3, mean_accepted=5.0)


def test_validity_reasons():
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    r = validity(m, g, Plan(tp=np.array([8, 3, 16, 4, 1]), pp=np.array([1, 1, 1, 3, 96])), np.array([8, 3, 16, 12, 96]))
    from llm_codesign.spec.plan import REASONS

    # 80 layers over PP3 split 27/27/26 (priced, issue 20); 96 stages would leave stages without a layer
    assert [REASONS[i] if i >= 0 else None for i in r] == [None, "heads", "scale_up", None, "layers"]
    ds = get_model("deepseek-r1")
    r = validity(ds, g, Plan(tp=8, ep=3, moe_tp=1), 8)
    assert REASONS[int(r)] == "gpus_mismatch"


def test_estimate_offline_and_errors():
    m, g = get_model("llama-3.1-70b"), get_gpu("h200")
    dep = Deployment(gpu=g, num_gpus=8, plan=Plan(tp=8), precision=Precision.of("fp8", kv="fp8"))
    r = estimate(m, dep, Workload(isl=1024, osl=1024), calibration=calibration_for(g))
    assert r["mode"] == "offline-max-throughput" and r["concurrency"] <= r["max_batch"]
    r1 = estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=1), calibration=calibration_for(g))
    assert r1["tok_s_per_user"] > r["tok_s_per_user"] and r1["output_tok_s_per_gpu"] < r["output_tok_s_per_gpu"]
    assert r1["tok_s_per_user"] == pytest.approx(1000 / r1["tpot_ms"])
    big = Deployment(gpu=get_gpu("h100"), num_gpus=1, plan=Plan(tp=1))
    with pytest.raises(InputError, match="needs .* GB per GPU"):
        estimate(m, big, Workload(isl=1024, osl=1024), calibration=calibration_for(g))
    with pytest.raises(InputError, match="concurrency"):
        estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=0), calibration=calibration_for(g))
    # more requests than the KV cache holds are priced and flagged, not refused
    over = estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=10 * r["max_batch"]), calibration=calibration_for(g))
    assert not over["fits"] and f"holds {r['max_batch']} sequences" in over["over_capacity"]
    assert over["ttft_ms"] > 9 * 1024 * r1["tpot_ms"]  # nine whole requests' lives ahead of the average arrival


def test_eager_prefill_launch_cost_lengthens_ttft_only(h100):
    from dataclasses import replace

    import numpy as np

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.serve.aggregated import evaluate
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.registry import get_model

    m = get_model("llama-3.1-8b")
    base = calibration_for(h100)
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))

    def run(eager):
        cal = replace(base, eager_launch_s=(("trtllm", eager),))
        return evaluate(m, h100, cal, m.default_precision, plan, concurrency=1.0, isl=1024.0, osl=128.0, engine=get_engine("trtllm"))

    a, b = run(0.0), run(50e-6)
    # one request alone, TP1: 32 layers x (qkv, prefill attention, o, gate_up, down + 4 elementwise
    # kernels) + the LM head = 289 launches of 50 us in its prefill step; decode steps stay captured
    assert (b["prefill_step_s"] - a["prefill_step_s"]).item() == pytest.approx(289 * 50e-6, rel=1e-6)
    assert b["step_s"].item() == pytest.approx(a["step_s"].item()) and b["ttft_s"].item() > a["ttft_s"].item()


def test_kv_budget_free_vs_total(h100):
    from llm_codesign.cost.memory import activation_bytes, fit, weight_bytes_per_gpu
    from llm_codesign.cost.ops import Sharding
    from llm_codesign.spec.registry import get_model

    m = get_model("llama-3.1-70b")
    prec, sh = m.default_precision, Sharding(tp=2)
    w = weight_bytes_per_gpu(m, prec, sh)
    act_total, act_free = (activation_bytes(m, sh, 8192, budget=b, max_seqs=1024) for b in ("total", "free"))
    total = fit(m, h100, prec, sh, 1024, osl=1024, budget="total", usable_fraction=0.9)
    free = fit(m, h100, prec, sh, 1024, osl=1024, budget="free", usable_fraction=0.9)
    # vLLM-style: 90% of the GPU minus weights and activations; TensorRT-LLM-style: 90% of what is left
    assert float(total["free_for_kv"]) == pytest.approx(0.9 * h100.memory_bytes - w - act_total)
    assert float(free["free_for_kv"]) == pytest.approx(0.9 * (h100.memory_bytes - w - act_free))
    assert free["max_seqs_per_rank"] > total["max_seqs_per_rank"]


def test_sglang_static_fraction_golden():
    # ServerArgs._handle_gpu_memory_settings by hand, in MiB. B200 reports 183359: chunk 16384, max graph
    # batch 512, TP8: reserved 512 + 24576 + 1024 + 1024 = 27136 -> 156223 / 183359 = 0.852; attention DP 8
    # (TP1 x 8 ranks, tp_size 8) adds 512 x 8 x 3 + 512 x 8 x 1.5 = 18432 -> 137791 / 183359 = 0.751
    from llm_codesign.spec.engines import sglang_static_fraction
    from llm_codesign.spec.hardware import get_gpu

    b200 = get_gpu("b200")
    assert float(sglang_static_fraction(b200, 8)) == 0.852
    assert float(sglang_static_fraction(b200, 1, 1, 8)) == 0.751
    # H200 (143771 MiB, under 160 GiB): chunk 8192, batch 512 at TP8: 14848 reserved -> 0.897
    assert float(sglang_static_fraction(get_gpu("h200"), 8)) == 0.897
    # a 2048 chunk at TP1 reserves 4736, under the 10 GiB floor of GPUs over 60 GiB -> 173119 / 183359
    assert float(sglang_static_fraction(b200, 1, chunk=2048)) == 0.944
    # an MTP draft adds 2 GiB: 29184 -> 0.841
    assert float(sglang_static_fraction(b200, 8, spec_method="mtp")) == 0.841


@settings(max_examples=60, deadline=None)
@given(gid=st.sampled_from(sorted(catalog())), tp=st.sampled_from([1, 2, 4, 8]), adp=st.sampled_from([1, 2, 4, 8]),
       spec=st.sampled_from([None, "mtp", "draft"]))
def test_sglang_fraction_shrinks_with_what_it_reserves(gid, tp, adp, spec):
    # SGLang reserves more for more GPUs per stage, attention DP and draft models, never the whole GPU
    from llm_codesign.spec.engines import sglang_static_fraction

    assume(tp * adp <= 8)  # one node: SGLang's own heuristics (beyond it a small GPU can go below zero)
    g = get_gpu(gid)
    f = float(sglang_static_fraction(g, tp, 1, adp, spec_method=spec))
    assert 0.4 < f < 0.96
    assert float(sglang_static_fraction(g, tp * 2, 1, adp, spec_method=spec)) <= f
    assert float(sglang_static_fraction(g, tp, 1, adp * 2, spec_method=spec)) <= f
    assert float(sglang_static_fraction(g, tp, 1, adp, spec_method="draft")) <= float(sglang_static_fraction(g, tp, 1, adp, spec_method=None))


def test_static_budget_leaves_activations_outside(h100):
    # SGLang's fraction covers weights and KV only: the KV pool is fraction x memory - weights
    from llm_codesign.cost.memory import fit, weight_bytes_per_gpu
    from llm_codesign.cost.ops import Sharding
    from llm_codesign.spec.registry import get_model

    m = get_model("llama-3.1-70b")
    prec, sh = m.default_precision, Sharding(tp=4)
    r = fit(m, h100, prec, sh, 1024, osl=1024, max_num_tokens=8192, usable_fraction=0.824, budget="static")
    assert float(r["free_for_kv"]) == pytest.approx(0.824 * h100.memory_bytes - weight_bytes_per_gpu(m, prec, sh))


def _eager_prefill_step_s(m, gpu, cal, backend, batch):
    """A prefill step priced as serving.evaluate does: kernels + step overhead + eager launches."""
    from llm_codesign.cost.ops import launches
    from llm_codesign.spec.engines import pdl_share

    c = cal.in_step(backend)
    ops = forward_ops(m, gpu, c, m.default_precision, Sharding(), b=batch)
    n = float(np.ravel(launches(ops))[0])  # each launch pays the eager cost and saves PDL's share of a boundary
    return float(np.ravel(step_time(ops))[0]) + c.step_overhead(backend) + (c.eager_launch(backend) - pdl_share(backend, gpu.family) * c.pdl_credit_s) * n


def test_lockstep_share_shrinks_with_the_decode_iterations_the_first_wave_spans(h100):

    m = get_model("llama-3.1-8b")
    cal = replace(calibration_for(h100), prefill_queue_fraction=(("trtllm", 0.5),), prefill_spread_exponent=(("trtllm", 1.0),),
                  ttft_overhead_s=(("trtllm", 0.01),), ttft_wait_steps=(("trtllm", 0.0),), seq_overhead_s=(("trtllm", 0.0),))
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    r = evaluate(m, h100, cal, m.default_precision, plan, concurrency=16.0, isl=8192.0, osl=256.0, engine=get_engine("trtllm"), max_num_tokens=8192)
    # a wave of 16 x 8192 tokens takes 16 prefill steps of 8192 tokens; over them fit n decode
    # iterations of the 16 requests: f = 0.5 / n, q = 1 + 15 f, and a request waits on average for
    # (q + 1) / 2 prefills of 8192 tokens
    t_wave = _eager_prefill_step_s(m, h100, cal, "trtllm", Batch(pf_tokens=8192.0, pf_seqs=1.0, pf_ctx=0.0))
    n = 16 * t_wave / r["step_s"].item()
    assert n > 16  # a 8192-token prefill step outlasts a 16-sequence decode step
    q = 1 + 15 * 0.5 / n
    assert r["ttft_s"].item() == pytest.approx((q + 1) / 2 * r["prefill_step_s"].item() + 0.01, rel=1e-9)


@pytest.mark.parametrize("backend, gid, tokens", [
    ("trtllm", "b200", 8192), ("trtllm", "a100", 8192),
    ("vllm", "h100", 8192), ("vllm", "b200", 8192), ("vllm", "a100", 2048), ("vllm", "l40s", 2048),
    ("sglang", "b200", 16384), ("sglang", "gb200", 16384), ("sglang", "h200", 8192), ("sglang", "l40s", 4096),
])
def test_engine_step_token_budget_defaults(backend, gid, tokens):
    from llm_codesign.spec.engines import step_tokens

    # the engines' documented defaults (engines.step_tokens docstring): vLLM 8192 on >= 70 GiB but not
    # A100, else 2048; SGLang by reported memory: < 35 GiB 2048, < 60 GiB 4096 (L40S 45 GiB), < 160 GiB
    # 8192 (H200 140 GiB), else 16384 (B200 179 GiB); TensorRT-LLM 8192
    assert step_tokens(backend, get_gpu(gid)) == tokens


def test_default_step_budget_is_the_engines(h100):
    m = get_model("llama-3.1-8b")
    b200 = get_gpu("b200")
    cal = calibration_for(b200)
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    # a lone 16k-token prompt: SGLang on B200 prefills it in one 16384-token step, so the default
    # equals an explicit 16384 and differs from 8192 (two chunks)
    run = lambda mnt: evaluate(m, b200, cal, m.default_precision, plan, concurrency=1.0, isl=16384.0, osl=64.0, engine=get_engine("sglang"),  # noqa: E731
                               max_num_tokens=mnt)["ttft_s"].item()
    assert run(None) == pytest.approx(run(16384)) and run(None) != pytest.approx(run(8192))


def test_scheduling_wait_adds_decode_iterations_to_ttft_only(h100):
    m = get_model("deepseek-v3")
    b200 = get_gpu("b200")

    def run(wait, adp_wait, adp):
        cal = replace(calibration_for(b200), ttft_wait_steps=(("trtllm", wait),), adp_wait_steps=(("trtllm", adp_wait),))
        plan = Plan(*(np.array([v]) for v in (8 // adp, 1, 8, 1, adp, 1)))
        return evaluate(m, b200, cal, Precision.of("fp8_block"), plan, concurrency=64.0, isl=1024.0, osl=1024.0, engine=get_engine("trtllm"))

    a, b = run(0.0, 0.0, 1), run(2.0, 10.0, 1)
    # TP8: 2 decode iterations more before the prefill step; the attention-DP hold does not apply
    assert b["ttft_s"].item() - a["ttft_s"].item() == pytest.approx(2.0 * a["step_s"].item(), rel=1e-9)
    assert b["tpot_s"].item() == pytest.approx(a["tpot_s"].item())
    c, d = run(0.0, 0.0, 8), run(2.0, 10.0, 8)
    # eight attention-DP ranks: 2 + 10 iterations
    assert d["ttft_s"].item() - c["ttft_s"].item() == pytest.approx(12.0 * c["step_s"].item(), rel=1e-9)


def test_out_of_step_prefills_stall_decode_by_what_they_add(h100):
    m = get_model("llama-3.1-8b")
    # arrivals fully spread (f = 0): the 7 other running requests' 1024-token prefills land in this
    # request's 255 decode steps, each in one mixed step of the 8-request wave budget (8192 tokens)
    cal = replace(calibration_for(h100), prefill_queue_fraction=(("trtllm", 0.0),), seq_overhead_s=(("trtllm", 0.0),))
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    r = evaluate(m, h100, cal, m.default_precision, plan, concurrency=8.0, isl=1024.0, osl=256.0, engine=get_engine("trtllm"), max_num_tokens=8192)
    t_wave = _eager_prefill_step_s(m, h100, cal, "trtllm", Batch(pf_tokens=8192.0, pf_seqs=8.0, pf_ctx=0.0))
    t_stage = r["step_s"].item()
    # the decode step is paid anyway; each prefill adds its 1/8 share of what the wave step costs beyond it
    stall = 7 * (1024 / 8192) * (t_wave - t_stage) / 255
    assert r["tpot_s"].item() == pytest.approx(t_stage + stall, rel=1e-6)


def test_engine_attention_kernels_by_kind(h100):
    """Engines run TensorRT-LLM's kernel efficiencies; where their default backend picks another
    attention kernel, that kernel's cited time ratio applies (engines.ATTENTION_KERNELS), by kind and
    phase, not one scale per engine: vLLM on Blackwell decodes GQA with a BF16 cache on trtllm-gen
    kernels up to 256 decode tokens and on FlashInfer's own (1.3x) beyond; with an FP8 cache always on
    trtllm-gen. GEMMs are the same in every engine, and a profile naming a removed scale is refused."""
    from llm_codesign.cost.calibration import _apply
    from llm_codesign.spec.engines import attention_time_factor

    t = attention_time_factor("vllm", "blackwell", "gqa", "decode", kv_fp8=False, dec_tokens=np.array([64.0, 256.0, 257.0, 2048.0]))
    assert t.tolist() == [1.0, 1.0, 1.3, 1.3]
    assert attention_time_factor("vllm", "blackwell", "gqa", "decode", kv_fp8=True, dec_tokens=2048.0) == 1.0
    assert attention_time_factor("vllm", "blackwell", "mla", "decode", kv_fp8=True) == 1.15
    assert attention_time_factor("sglang", "blackwell", "mla", "decode", kv_fp8=True) == 1.0  # trtllm_mla
    assert attention_time_factor("sglang", "hopper", "gqa", "prefill", kv_fp8=False) == 1.07  # FlashAttention-3
    assert attention_time_factor("", "hopper", "gqa", "prefill", kv_fp8=False) == 1.0  # the kernel tables
    base = calibration_for(h100)
    v, t = base.in_step("vllm"), base.in_step("trtllm")
    assert (v.gemm_eff_fp8, v.moe_eff, v.bw_eff, v.attn_prefill_eff) == (t.gemm_eff_fp8, t.moe_eff, t.bw_eff, t.attn_prefill_eff)
    for removed in ("gemm_eff_scale", "attn_eff_scale"):
        with pytest.raises(InputError, match=removed):
            _apply(base, {removed: {"vllm": 0.8}}, "profile.toml")
    # the decode-attention operator of Llama-3.1-8B on H100 at batch 8: vLLM's FlashAttention-3 takes 1.15x TensorRT-LLM's
    m = get_model("llama-3.1-8b")
    plan = Plan(*(np.array([x]) for x in (1, 1, 1, 1, 1, 1)))
    ops = {e: {o.name: o for o in evaluate(m, h100, base, m.default_precision, plan, concurrency=8.0, isl=1024.0, osl=256.0,
                                             engine=get_engine(e), max_num_tokens=8192, with_ops=True)["ops"]} for e in ("trtllm", "vllm")}
    name = next(n for n in ops["trtllm"] if n.endswith("core_decode"))
    assert ops["vllm"][name].time.item() == pytest.approx(1.15 * ops["trtllm"][name].time.item(), rel=1e-9)


def test_serving_fit_reprices_one_engine_at_a_time_without_changing_the_answer(monkeypatch):
    from llm_codesign.measure import calibrate, stats
    from llm_codesign.measure.validate import predict_serving

    # per-engine parameters re-price only their engine's rows; the loss it reports must still be the
    # loss of the whole fitted profile priced from scratch
    keep = ("step_overhead_s", "ttft_overhead_s", "custom_ar_latency_s")
    monkeypatch.setattr(calibrate, "SERVING_BOUNDS", tuple(b for b in calibrate.SERVING_BOUNDS if b[0] in keep))
    monkeypatch.setattr(stats, "MIN_BAND_ROWS", 1)  # two rows per band here
    rows = [{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100", "num_gpus": "1", "backend": be, "weight_dtype": "bf16",
             "kv_dtype": "bf16", "isl": "1024", "osl": "256", "concurrency": str(c), "tp": "1", "ttft_ms": str(t),
             "tpot_ms": str(d)} for be, c, t, d in (("trtllm", 8, 60, 9), ("trtllm", 64, 250, 16), ("vllm", 8, 45, 11), ("vllm", 64, 300, 21))]
    fams, out = calibrate.fit_serving(rows, {"hopper": calibration_for(get_gpu("h100"))}, rounds=2)
    preds, _ = predict_serving(rows, cal_override=lambda g: fams["hopper"])
    # the polish loss: per metric, the median in each concurrency band (8 requests: 5-32; 64: above 32), averaged
    err = {m: {c: [abs(np.log(p[m] / float(r[m]))) for p, r in zip(preds, rows, strict=True) if r["concurrency"] == c]
               for c in ("8", "64")} for m in ("ttft_ms", "tpot_ms")}
    med = [np.mean([np.median(err[m]["8"]), np.median(err[m]["64"])]) for m in err]
    assert out["loss"] == pytest.approx(np.mean(med), rel=1e-9)
    assert out["loss"] != pytest.approx(np.mean([np.median(err[m]["8"] + err[m]["64"]) for m in err]), rel=1e-3)
    assert out["step_overhead_s"]["trtllm"] != out["step_overhead_s"]["vllm"]


def test_concurrency_band_edges():
    from llm_codesign.measure.stats import concurrency_band

    got = [concurrency_band({"concurrency": c}) for c in ("1", "4", "5", "32", "33", "4096", "", " ")]
    assert got == ["1-4", "1-4", "5-32", "5-32", "33+", "33+", "offline", "offline"]


def test_polish_bands_merge_thin_bands():
    from llm_codesign.measure.stats import polish_bands

    rows = lambda *cs: [{"concurrency": c} for c in cs]  # noqa: E731
    # 25 rows at 1-4, 30 at 5-32, 22 at 33+ or offline: three bands
    assert list(np.bincount(polish_bands(rows(*["2"] * 25, *["16"] * 30, *["64"] * 12, *[""] * 10)))) == [25, 30, 22]
    # 5 rows at 1-4 join 5-32; then 19 at 33+ join them too: one band
    assert set(polish_bands(rows(*["4"] * 5, *["8"] * 30, *["33"] * 19))) == {1}
    # a thin middle band joins the more populous neighbour
    b = polish_bands(rows(*["1"] * 40, *["10"] * 3, *["100"] * 25))
    assert list(np.bincount(b, minlength=3)) == [43, 0, 25]


def test_serving_fit_warm_starts_from_a_profile():
    from llm_codesign.measure import calibrate

    rows = [{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100", "num_gpus": "1", "backend": "vllm", "weight_dtype": "bf16",
             "kv_dtype": "bf16", "isl": "1024", "osl": "256", "concurrency": "8", "tp": "1", "ttft_ms": "50", "tpot_ms": "12"}]
    start = replace(calibration_for(get_gpu("h100")), step_overhead_s=(("vllm", 3.3e-3),), seq_overhead_s=(("vllm", 7e-6),))
    # no search rounds: what comes back is where it started, per engine, clipped to the bounds
    _, out = calibrate.fit_serving(rows, {"hopper": start}, rounds=0, start=start)
    assert out["step_overhead_s"]["vllm"] == pytest.approx(3.3e-3) and out["seq_overhead_s"]["vllm"] == pytest.approx(7e-6)
    _, cold = calibrate.fit_serving(rows, {"hopper": start}, rounds=0)
    assert cold["step_overhead_s"]["vllm"] == pytest.approx(2e-3)  # the documented starting value


def test_per_sequence_host_overhead_scales_the_decode_step_with_the_batch(h100):
    m = get_model("llama-3.1-8b")
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))

    def run(seq_oh, c):
        cal = replace(calibration_for(h100), seq_overhead_s=(("vllm", seq_oh),))
        return evaluate(m, h100, cal, m.default_precision, plan, concurrency=float(c), isl=1024.0, osl=256.0, engine=get_engine("vllm"), max_num_tokens=8192)

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
        return evaluate(m, h100, cal, m.default_precision, plan, concurrency=64.0, isl=1024.0, osl=256.0, engine=get_engine("trtllm"))["step_s"].item()

    assert trt(1e-3) == trt(0.0)


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(["llama-3.1-70b", "deepseek-r1", "qwen3.5-397b"]), cs=st.lists(st.integers(1, 4096), min_size=2, max_size=6),
       isl=st.integers(64, 16384))
def test_one_estimate_equals_the_same_deployment_inside_a_sweep(name, cs, isl):
    # the cost model is elementwise: no deployment's numbers depend on which others share its arrays
    m, g = get_model(name), get_gpu("b200")
    cal = calibration_for(g)
    plan = Plan(tp=8, ep=8 if m.is_moe else 1, moe_tp=1)
    swept = evaluate(m, g, cal, m.default_precision, plan, concurrency=np.array(cs), isl=isl, osl=512)
    for i, c in enumerate(cs):
        one = evaluate(m, g, cal, m.default_precision, plan, concurrency=c, isl=isl, osl=512)
        assert float(np.ravel(one["tpot_s"])[0]) == pytest.approx(float(swept["tpot_s"][i]), rel=1e-6)
        assert float(np.ravel(one["ttft_s"])[0]) == pytest.approx(float(swept["ttft_s"][i]), rel=1e-6)


def test_paged_engines_admit_past_the_kv_cache_and_share_the_decode_slots():
    # Llama-3.1-8B BF16 on one L40S, 1k in / 8k out: the KV cache holds a few dozen sequences at their
    # steady-state length (ISL + OSL/2) but its prompts alone for several times as many
    m, g = get_model("llama-3.1-8b"), get_gpu("l40s")
    plan = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1)))
    cal = calibration_for(g)

    def run(backend, c):
        return evaluate(m, g, cal, m.default_precision, plan, concurrency=float(c), isl=1024.0, osl=8192.0, engine=get_engine(backend))

    for backend in ("vllm", "sglang"):
        cap = int(run(backend, 1)["max_concurrency"].item())
        base = run(backend, cap)
        # vLLM admits on the prompt (share 0), SGLang reserves 0.098 x min(OSL, 4096) = 401 output tokens
        free = float(base["free_bytes"].item() + base["kv_bytes"].item())
        per_token = base["kv_bytes_per_seq"].item() / (1024 + 0.5 * 8192)
        admit = int(free // (per_token * (1024 + (0.0 if backend == "vllm" else 0.098 * 4096))))
        assert 2 * cap < admit
        over = run(backend, 2 * cap)
        # all 2 x cap reach their first token as soon as at cap, then take turns in cap decode slots
        assert over["ttft_s"].item() == pytest.approx(base["ttft_s"].item(), rel=1e-12)
        assert over["tpot_s"].item() == pytest.approx(2 * base["tpot_s"].item(), rel=1e-12)
        # the same decode slots give the same output rate (but for the wave's prefill, spread over more requests)
        assert over["output_tok_s_per_gpu"].item() == pytest.approx(base["output_tok_s_per_gpu"].item(), rel=0.01)
        # past what even the prompts' admission allows, the rest wait for whole requests to finish
        beyond = run(backend, 2 * admit)
        assert beyond["ttft_s"].item() > 10 * base["ttft_s"].item()
    # TensorRT-LLM reserves ISL + OSL: whatever exceeds its capacity waits for whole requests
    from llm_codesign.spec import engines

    assert engines.admission("trtllm") is None and engines.admission("vllm") == (0.0, 0.0)
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
    # through the KV cache's limit too: queueing (TensorRT-LLM) and time-sharing (vLLM, SGLang) only add
    m, g = get_model(name), get_gpu(gid)
    plan = Plan(*(np.array([v]) for v in (tp, 1, 1, tp, 1, 1)))
    C = np.arange(1, 1025, dtype=float)
    r = evaluate(m, g, calibration_for(g), m.default_precision, plan, concurrency=C, isl=float(lengths[0]), osl=float(lengths[1]), engine=get_engine(backend))
    if float(np.max(r["max_concurrency"])) < 1:
        return  # the weights alone do not fit
    for k in ("ttft_s", "tpot_s"):
        v = np.broadcast_to(r[k], C.shape)
        assert np.all(np.diff(v) >= -1e-9 * v[1:]), k


@pytest.mark.parametrize("isl", [128, 1024, 8192])
def test_wave_prefill_priced_once_at_the_budget_equals_every_element(isl):
    """_once_at_cap prices a search grid's wave prefill once per plan where it fills the step budget:
    the same numbers, bit for bit, as pricing every element, with elements below the budget (short
    prompts, few requests) and without (8k prompts fill an 8k budget alone)."""
    from llm_codesign.serve import aggregated as agg

    m, g = get_model("deepseek-r1"), get_gpu("b200")
    costs = get_engine("trtllm").costs(calibration_for(g))
    prec = Precision.of("nvfp4", kv="fp8")
    tp = np.array([8, 4, 1, 2])[:, None, None]
    sh = Sharding(tp=tp, pp=np.array([1, 2, 1, 1])[:, None, None], ep=np.array([8, 8, 8, 4])[:, None, None],
                  moe_tp=np.array([1, 1, 1, 2])[:, None, None], adp=8 // tp // np.array([1, 2, 1, 1])[:, None, None],
                  kvp=np.ones((4, 1, 1), int))
    running = np.array([1, 3, 7, 8, 64, 2048], float)[None, :, None] * np.ones((4, 1, 3))
    mnt, new = np.asarray(8192.0), np.asarray(float(isl))
    tokens = np.minimum(mnt, running * new)
    chunk = np.minimum(new, mnt)

    def price(sh_, t, i, c, cached):
        return agg.prefill_step(m, g, prec, sh_, costs=costs, tokens=t, isl=i, chunk=c, cached=cached)

    direct = np.broadcast_to(price(sh, tokens, new, chunk, np.asarray(0.0)), tokens.shape)
    once = agg._once_at_cap(price, sh, tokens, mnt, new, chunk, np.asarray(0.0))
    assert once.shape == direct.shape and np.array_equal(once, direct)
    assert (tokens < mnt).any() == (isl < 8192)


def test_once_at_cap_falls_back_where_the_price_varies_along_other_axes():
    """Inputs that vary along an axis but the first (a plan field over batches; the price itself over a
    design's shapes) take the direct path: the same values as pricing each element, never a crash."""
    from llm_codesign.serve.aggregated import _once_at_cap

    tokens = np.minimum(8.0, np.arange(1.0, 13.0).reshape(2, 6))  # 2 rows, some at the cap of 8

    def price(sh, t, extra):
        return np.asarray(sh.tp, float) * 1e3 + np.asarray(t, float) * 10.0 + np.asarray(extra, float)

    by_row = Sharding(tp=np.array([[1], [2]]))
    direct = price(by_row, tokens, np.asarray(0.5))
    assert np.array_equal(_once_at_cap(price, by_row, tokens, np.asarray(8.0), np.asarray(0.5)), direct)  # the fast path
    across = Sharding(tp=np.array([[1, 2, 1, 2, 1, 2]]))  # varies along the second axis
    assert np.array_equal(_once_at_cap(price, across, tokens, np.asarray(8.0), np.asarray(0.5)), price(across, tokens, 0.5))
    hidden = np.array([[3.0], [4.0]])  # what the price varies by without being given it, as a design's model shapes

    def shaped(sh, t, extra):
        return price(sh, t, extra) * hidden

    assert np.array_equal(_once_at_cap(shaped, by_row, tokens, np.asarray(8.0), np.asarray(0.5)), shaped(by_row, tokens, 0.5))


def test_pdl_credit_beyond_a_launch_latency_is_refused():
    from llm_codesign.spec.validation import check_param

    assert check_param("pdl_credit_s", "pdl_credit_s", 0.6e-6) == 0.6e-6
    with pytest.raises(InputError, match=r"pdl_credit_s's physical range"):
        check_param("pdl_credit_s", "pdl_credit_s", 5e-6)


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
    cap = np.broadcast_to(max_running(ds, g, ds.default_precision, plan, isl=1024, osl=1024, spec=spec, spec_k=ks), (3, 1, 6))
    assert (np.ptp(cap, axis=-1) > 0).any() and (b.max() > cap).all()  # capped, and capped differently along k
    whole = evaluate(ds, g, cal, ds.default_precision, plan, concurrency=b * plan.adp, isl=1024, osl=1024, spec=spec, spec_k=ks)
    for k in range(6):
        one = evaluate(ds, g, cal, ds.default_precision, plan, concurrency=b * plan.adp, isl=1024, osl=1024, spec=spec, spec_k=ks[..., k:k + 1])
        for key in ("tpot_s", "ttft_s", "draft_s", "output_tok_s_per_gpu"):
            np.testing.assert_array_equal(np.broadcast_to(whole[key], (3, 6, 6))[..., k], np.broadcast_to(one[key], (3, 6, 1))[..., 0], err_msg=key)


@pytest.mark.parametrize("backend", ["trtllm", "vllm", "sglang"])
def test_max_running_is_where_the_fit_ends(backend):
    # a rank given more requests than max_running does not fit, and given up to it does (the cache
    # has room): what lets a search skip the batches no plan holds
    from llm_codesign.serve.aggregated import max_running

    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    plan = Plan(tp=np.array([2, 4, 8, 4])[:, None], pp=np.array([1, 1, 1, 2])[:, None])
    b = np.unique(np.geomspace(1, 4096, 40).round())[None, :]
    prec, eng = Precision.of("fp8", kv="fp8"), get_engine(backend)
    r = evaluate(m, g, calibration_for(g), prec, plan, concurrency=b, isl=4096, osl=1024, engine=eng)
    most = max_running(m, g, prec, plan, isl=4096, osl=1024, engine=eng)
    np.testing.assert_array_equal(np.broadcast_to(r["fits"], (4, b.size)), b <= most)
    assert (most[:, 0] > 0).all() and (b[0, -1] > most).all()
