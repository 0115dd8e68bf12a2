import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.memory import kv_bytes_per_token
from llm_codesign.cost.ops import Batch, forward_ops, launches, step_time
from llm_codesign.spec.hardware import catalog, get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision, gemm_math
from llm_codesign.spec.registry import get_model

DENSE = ["llama-3.1-8b", "qwen3-32b", "llama-3.1-70b"]


def _sum(ops, attr, kinds=("gemm",)):
    return float(sum(np.sum(getattr(o, attr) * o.count) for o in ops if o.kind in kinds))


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-32b", "nemotron-super-49b"])
def test_linear_flops_are_two_times_active_params_per_token(name, h100, cal_h100):
    m = get_model(name)
    B = 32
    ops = forward_ops(m, h100, cal_h100, m.default_precision, Plan(), b=Batch(dec_seqs=B, dec_ctx=512))
    assert _sum(ops, "flops") == pytest.approx(2 * m.active_params * B, rel=1e-9)


def test_moe_flops_match_active_params_at_large_batch(b200):
    from llm_codesign.cost.calibration import calibration_for

    m = get_model("deepseek-v3")
    cal = calibration_for(b200)
    T = 4096
    ops = forward_ops(m, b200, cal, m.default_precision, Plan(), b=Batch(pf_tokens=T, pf_seqs=4, pf_ctx=0))
    lin = _sum([o for o in ops if o.part != "lm_head"], "flops")
    # LM head runs on 4 sampled positions only; everything else on all tokens
    expect = 2 * (m.active_params - m.vocab * m.hidden) * T
    assert lin == pytest.approx(expect, rel=1e-6)


def test_attention_decode_flops_golden(h100, cal_h100):
    m = get_model("llama-3.1-8b")
    ops = forward_ops(m, h100, cal_h100, m.default_precision, Plan(), b=Batch(dec_seqs=4, dec_ctx=1000))
    core = next(o for o in ops if o.name == "layer/attn/core_decode")
    # QK^T and PV: 2 x B x heads x ctx x (128 + 128) per layer
    assert float(core.flops) == 2 * 4 * 32 * 1000 * 256
    # KV read: B x ctx x 8 KV heads x 256 values x 2 bytes (+ q/o)
    assert float(core.bytes) >= 4 * 1000 * 8 * 256 * 2


def test_flops_unchanged_by_tp(h100, cal_h100):
    m = get_model("llama-3.1-70b")
    b = Batch(dec_seqs=64, dec_ctx=2048)
    per = [_sum(forward_ops(m, h100, cal_h100, m.default_precision, Plan(tp=tp), b=b), "flops", ("gemm", "attention")) * tp
           for tp in (1, 2, 4, 8)]
    assert per == pytest.approx([per[0]] * 4, rel=1e-9)


def test_skewed_routing_slows_the_moe_step(b200):
    from dataclasses import replace

    from llm_codesign.cost.calibration import calibration_for

    m = get_model("deepseek-r1")
    cal = calibration_for(b200)
    b = Batch(pf_tokens=4096, pf_seqs=4, pf_ctx=0)
    sh = Plan(tp=8, ep=8)
    moe = [step_time([o for o in forward_ops(m, b200, replace(cal, moe_routing_alpha=a), m.default_precision, sh, b=b) if o.part == "moe"])
           for a in (0.0, 1.01)]
    assert float(moe[1]) > 1.05 * float(moe[0])


def test_operator_names_are_slash_paths(h100, cal_h100):
    m = get_model("deepseek-r1")
    names = [o.name for o in forward_ops(m, h100, cal_h100, m.default_precision, Plan(tp=8, ep=8), b=Batch(dec_seqs=8, dec_ctx=100))]
    assert "layer1/moe/experts_gate_up" in names and "layer0/ffn/gate_up" in names and names[-1] == "lm_head"
    assert float(step_time(forward_ops(m, h100, cal_h100, m.default_precision, Plan(tp=8, ep=8), b=Batch(dec_seqs=8, dec_ctx=100)))) > 0


def test_dsa_indexer_caps_mla_context_and_prices_the_indexer(b200):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.memory import kv_bytes_per_token
    from llm_codesign.spec.precision import Precision

    m = get_model("glm-5")
    a = m.groups[-1][0].attn
    assert (a.index_heads, a.index_head_dim, a.index_topk) == (32, 128, 2048)
    cal = calibration_for(b200)
    prec = Precision.of("fp8", kv="fp8")

    def decode(ctx):
        ops = forward_ops(m, b200, cal, prec, Plan(tp=8), b=Batch(dec_seqs=2, dec_ctx=ctx))
        return {o.role: o for o in ops if o.role in ("core_decode", "dsa_scores_decode", "dsa_prep")}

    short, long = decode(2048), decode(10_000)
    # MLA attends to the top 2048 tokens only; the indexer scores all of them: 2 x B x 32 x 128 x ctx
    assert float(long["core_decode"].flops) == pytest.approx(float(short["core_decode"].flops))
    assert float(long["dsa_scores_decode"].flops) == pytest.approx(2 * 2 * 32 * 128 * 10_000)
    # the chain between projections and scores: per token, 11 B per Q value (RoPE write-back 2 + 2,
    # Hadamard 4, FP8 quantisation 3) over 32 x 128, and 14 B per K value (LayerNorm 4, RoPE 2 + 2,
    # Hadamard 4, quantise-and-store 2) over 128; 8 kernels
    assert float(short["dsa_prep"].bytes) == 2 * (32 * 128 * 11 + 128 * 14)
    # KV cache per token: 78 layers x (512 + 64 latent values in FP8 + 128 FP8 index keys + 4 B scale)
    assert float(kv_bytes_per_token(m, prec, Plan())) == pytest.approx(78 * (576 + 132))


def test_qk_norm_across_heads_adds_a_tp_all_reduce(b200):
    from llm_codesign.cost.calibration import calibration_for

    m = get_model("minimax-m2.5")
    assert m.groups[0][0].attn.qk_norm_across_heads
    cal = calibration_for(b200)

    def op(tp):
        ops = forward_ops(m, b200, cal, m.default_precision, Plan(tp=tp, moe_tp=tp), b=Batch(dec_seqs=16, dec_ctx=1000))
        return next(o for o in ops if o.role == "qk_norm_all_reduce")

    assert float(op(4).bytes) == 16 * 2 * 4  # FP32 sums of squares of Q and K per token
    assert float(op(4).time) > 0 and float(op(1).time) == 0
    assert not get_model("llama-3.1-8b").groups[0][0].attn.qk_norm_across_heads


def test_gated_deltanet_decode_is_flat_in_context_and_prices_its_state(b200):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.memory import fit, state_bytes_per_seq

    m = get_model("qwen3.5-397b")
    cal = calibration_for(b200)
    prec = m.default_precision

    def decode(ctx):
        ops = forward_ops(m, b200, cal, prec, Plan(tp=4, moe_tp=4), b=Batch(dec_seqs=8, dec_ctx=ctx))
        return {(o.group, o.role): o for o in ops if o.part == "attention"}

    short, long = decode(1_000), decode(100_000)
    # the GDN layers are those with an in_proj
    gdn = next(k for k in short if k[1] == "core_decode" and (k[0], "in_proj") in short)
    # the delta-rule state replaces the KV cache: same cost at any context ...
    assert float(long[gdn].time) == pytest.approx(float(short[gdn].time))
    # ... and it is read once and written once per sequence and step: 16 value heads per GPU at TP4,
    # 128 x 128 FP32 each, plus Q, K, V in and the output out (BF16) per token
    state = 16 * 128 * 128 * 4
    assert float(short[gdn].bytes) == pytest.approx(8 * 2 * state + 8 * (2 * 4 * 128 + 2 * 16 * 128) * 2)
    # while the 15 full-attention layers' cost does grow with context
    full = next(k for k in short if k[1] == "core_decode" and k != gdn)
    assert float(long[full].time) > 10 * float(short[full].time)
    # memory: each sequence holds its state on top of the KV cache, split by TP
    per_seq = state_bytes_per_seq(m, Plan(tp=4, moe_tp=4))
    assert float(per_seq) == pytest.approx(192_061_440 / 4)
    mem = fit(m, b200, prec, Plan(tp=4, moe_tp=4), 1000, osl=0)
    assert float(mem["kv_per_seq"]) == pytest.approx(float(mem["kv_per_token"]) * 1000 + 192_061_440 / 4)


def test_mamba2_decode_reads_and_writes_its_state_once_per_step(h100):
    from llm_codesign.cost.calibration import calibration_for

    m = get_model("nemotron-h-56b")
    cal = calibration_for(h100)

    def decode(ctx, seqs=8):
        ops = forward_ops(m, h100, cal, m.default_precision, Plan(tp=4), b=Batch(dec_seqs=seqs, dec_ctx=ctx))
        return {(o.group, o.role): o for o in ops if o.part == "attention"}

    short, long = decode(1_000), decode(50_000)
    core = next(k for k in short if k[1] == "core_decode" and (k[0], "in_proj") in short)
    assert float(long[core].time) == pytest.approx(float(short[core].time))
    # TP4: 64 heads x 64 x 256 BF16 state per sequence, read and written; x, B, C in and y out per token
    state = 64 * 64 * 256 * 2
    io = (20480 / 4 + 16384 / 4) * 2
    assert float(short[core].bytes) == pytest.approx(8 * 2 * state + 8 * io)
    # the update itself: ~5 P N FLOPs per head and token (decay, x B^T, h C)
    assert float(short[core].flops) == pytest.approx(8 * 5 * 64 * 64 * 256)


def test_operators_carry_their_part_and_precision(b200):
    # gpt-oss keeps attention in BF16 and experts in MXFP4: each GEMM says so itself, no name parsing
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.plan import precision_for

    m = get_model("openai/gpt-oss-120b")
    ops = forward_ops(m, b200, calibration_for(b200), precision_for(m), Plan(tp=8, ep=8), b=Batch(dec_seqs=16, dec_ctx=2048))
    gemms = {(op.part, op.weight, op.math) for op in ops if op.kind == "gemm"}
    # W4A16 experts: MXFP4 weights, BF16 activations, so BF16 math
    assert ("attention", "bf16", "bf16") in gemms and ("moe", "mxfp4", "bf16") in gemms
    assert ("moe", "bf16", "bf16") in gemms  # the router
    assert ("lm_head", "bf16", "bf16") in gemms
    assert {op.part for op in ops} >= {"attention", "moe", "lm_head", "layer"}


def test_mtp_draft_passes_price_the_module_and_the_first_pass_over_every_checked_position():
    """DeepSeek MTP as TensorRT-LLM runs it: pass 1 runs the MTP layer over the 1 + k positions the verify
    step checked and its LM head over the one it samples, passes 2..k one token each; every pass adds the
    module's norms, eh_proj (row-parallel with an all-reduce in TensorRT-LLM without attention DP, whole
    in vLLM) and greedy sampling: an argmax over each rank's vocabulary slice and the (index, value)
    pairs gathered (ops.mtp_module_ops)."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import mtp_module_ops
    from llm_codesign.serve.aggregated import decode_step, draft_model
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import SpecDecoding
    from llm_codesign.spec.precision import Precision

    m, g = get_model("deepseek-r1"), get_gpu("b200")
    cal = calibration_for(g)
    costs = get_engine("trtllm").costs(cal)
    sh, prec, spec = Plan(tp=8, ep=8), Precision.of("fp8_block"), SpecDecoding("mtp", 3, rates=(0.8, 0.6, 0.4))
    dm = draft_model(m, spec)
    extra = {o.name: o for o in mtp_module_ops(dm, g, costs.cal, sh, tokens=16.0, seqs=4.0, engine=costs.engine)}
    assert list(extra) == ["mtp/norms", "mtp/eh_proj", "mtp/eh_proj_all_reduce", "mtp/argmax", "mtp/argmax_gather"]
    # by hand: [16 tokens, 2h / TP] x [2h / TP, h] on TensorRT-LLM; 4 sequences x 129,280 / 8 FP32 logits per rank
    assert extra["mtp/eh_proj"].flops == pytest.approx(2.0 * 16 * 7168 * (2 * 7168 / 8))
    assert float(extra["mtp/argmax"].bytes) == 4 * 129280 / 8 * 4
    assert all(float(o.time) > 0 for o in extra.values())
    whole = {o.name: o for o in mtp_module_ops(dm, g, cal.in_step("vllm"), sh, tokens=16.0, seqs=4.0, engine=get_engine("vllm"))}
    assert whole["mtp/eh_proj"].flops == pytest.approx(2.0 * 16 * 7168 * 2 * 7168) and float(whole["mtp/eh_proj_all_reduce"].time) == 0.0

    def draft(k):
        return float(decode_step(m, g, prec, sh, costs=costs, b=4.0, ctx=2048.0, k=np.asarray(float(k)), spec=spec)[1])

    # TensorRT-LLM PDL-launches 0.7 of a step's kernels on Blackwell (its Engine.pdl): each saves that
    # share of pdl_credit_s
    credit = 0.7 * cal.pdl_credit_s
    assert credit > 0

    def less_pdl(ops):
        return float(step_time(ops) - credit * launches(ops))

    def layer(tokens_per_seq, *, head):
        ops = forward_ops(dm, g, costs.cal, prec, sh, b=Batch(dec_seqs=4.0, dec_ctx=2048.0, dec_tokens_per_seq=tokens_per_seq), engine=costs.engine)
        return less_pdl([o for o in ops if (o.part == "lm_head") == head])

    module = lambda tokens: less_pdl(mtp_module_ops(dm, g, costs.cal, sh, tokens=tokens, seqs=4.0, engine=costs.engine))  # noqa: E731
    head = layer(1.0, head=True)  # the LM head samples one position per sequence in every pass
    assert draft(0) == 0.0
    # k = 3: the layer over 4 positions of each of the 4 sequences, then two passes of one token, and the MTP Eagle worker's
    # own 25 + 6 x 3 = 43 small kernels a step at the elementwise fixed cost, none PDL-launched (spec_worker_kernels)
    worker = 43 * costs.cal.kernel_overhead_s
    assert draft(3) == pytest.approx(layer(4.0, head=False) + head + module(16.0) + 2.0 * (layer(1.0, head=False) + head + module(4.0))
                                     + worker, rel=1e-9)
    assert draft(1) > layer(1.0, head=False) + head + module(4.0)


def test_moe_layers_launch_a_topk_kernel_over_the_router_scores():
    """Every engine selects each token's experts in a kernel of its own: one launch reading the FP32 scores
    of every expert and writing top_k ids and weights. DeepSeek-R1 (256 experts, top 8) at 64 decode
    tokens: 64 * (256 + 16) * 4 = 69,632 bytes per MoE layer."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision

    m, g = get_model("deepseek-r1"), get_gpu("b200")
    ops = forward_ops(m, g, calibration_for(g), Precision.of("fp8_block"), Plan(tp=8, ep=8), b=Batch(dec_seqs=64.0, dec_ctx=1024.0))
    topk = [o for o in ops if o.part == "moe" and o.role == "topk"]
    assert len(topk) == 1 and topk[0].kernels == 1.0 and float(topk[0].count) == 58.0  # DeepSeek-R1's 58 MoE layers
    assert float(topk[0].bytes) == 64 * (256 + 16) * 4


@settings(max_examples=80, deadline=None)
@given(name=st.sampled_from(DENSE + ["nemotron-h-56b"]), gid=st.sampled_from(sorted(catalog())), B=st.integers(1, 512),
       ctx=st.integers(1, 32768), tp=st.sampled_from([1, 2, 4, 8]), w=st.sampled_from(["bf16", "fp8"]))
def test_decode_step_never_beats_the_roofline(name, gid, B, ctx, tp, w):
    m, g = get_model(name), get_gpu(gid)
    prec = Precision.of(w, kv=w)
    t = float(step_time(forward_ops(m, g, calibration_for(g), prec, Plan(tp=tp), b=Batch(dec_seqs=B, dec_ctx=ctx))))
    wbytes = (m.total_params - m.embedding_params - m.lm_head_params) * prec.weight.bytes_per_weight() / tp + m.lm_head_params * 2 / tp
    # the KV cache, and a recurrent mixer's state (Nemotron-H's Mamba-2 layers), read at least once
    kv = B * ctx * float(kv_bytes_per_token(m, prec, Plan(tp=tp))) + B * m.state_bytes_per_seq() / tp
    flops = 2 * m.active_params * B / tp
    floor = max((wbytes + kv) / g.hbm_bandwidth_bytes_per_s, flops / g.peak(gemm_math(prec.weight, prec.activation, g)))
    assert t >= floor


def test_step_time_sums_a_shared_count_once_in_float64():
    # DeepSeek-R1 over a (plans, batches) grid: forward_ops gives each part's operators one count
    # array, which step_time multiplies once per run of them. The float32 GEMM times are summed in
    # float64 (a float32 partial sum would be ~1e-7 off), to 1e-14 of each operator multiplied alone
    m, g = get_model("deepseek-r1"), get_gpu("gb200")
    tp = np.array([8, 4, 2, 1])[:, None]
    sh = Plan(tp=tp, pp=np.array([1, 2, 4, 3])[:, None], ep=np.array([8, 8, 8, 4])[:, None], adp=8 // tp)
    ops = forward_ops(m, g, calibration_for(g), m.default_precision, sh, b=Batch(dec_seqs=np.geomspace(1, 2048, 12)[None, :], dec_ctx=1536.0))
    assert any(o.time.dtype == np.float32 for o in ops if o.kind == "gemm")
    shared = sum(a.count is b.count for a, b in itertools.pairwise(ops))
    assert shared > len(ops) // 2  # runs of operators share a count
    one_by_one = sum(np.asarray(o.time, float) * o.count for o in ops)
    t = step_time(ops)
    assert t.dtype == np.float64 and t.shape == (4, 12)
    np.testing.assert_allclose(t, one_by_one, rtol=1e-14, atol=0)


def test_operators_carry_their_part_group_and_role():
    # DeepSeek-R1 with Helix and PP: its MLA and dense FFN priced under group 0, its MoE under group 1;
    # what callers select by is typed, the name only displays it
    from llm_codesign.cost.ops import layer_ops

    m, g = get_model("deepseek-r1"), get_gpu("gb200")
    cal = calibration_for(g)
    ops = forward_ops(m, g, cal, m.default_precision, Plan(tp=4, kvp=4, pp=2, ep=16), b=Batch(dec_seqs=8, dec_ctx=4096))
    got = {o.name: (o.part, o.group, o.role) for o in ops}
    assert got["layer0/attn/core_decode"] == ("attention", 0, "core_decode")
    assert got["layer0/attn/helix_all_to_all"] == ("attention", 0, "helix_all_to_all")
    assert got["layer0/ffn/gate_up"] == ("ffn", 0, "gate_up") and got["layer0/elementwise"] == ("layer", 0, "elementwise")
    assert got["layer1/moe/experts_down"] == ("moe", 1, "experts_down") and got["layer1/elementwise"] == ("layer", 1, "elementwise")
    assert got["lm_head"] == ("lm_head", None, "lm_head") and got["pp/send_recv"] == ("pipeline", None, "send_recv")
    # the weight format each GEMM reads: the layer's (R1: FP8 block-scaled), BF16 for the router and the head
    weights = {o.role: o.weight for o in ops if o.kind == "gemm"}
    assert weights["experts_down"] == weights["kv_a"] == "fp8_block" and weights["router"] == weights["lm_head"] == "bf16"
    # without a prefix the names are the layer's own (what lint points at)
    names = [o.name for o in layer_ops(m, m.groups[1][0], 1.0, g, cal, prec=m.default_precision, sh=Plan(tp=8, ep=8), b=Batch(dec_seqs=8),
                                       prefix="")]
    assert names[0] == "attn/q_a" and "moe/experts_gate_up" in names and names[-1] == "elementwise"


def test_an_operator_is_built_with_its_final_values():
    # forward_ops counts each part's operators by copies, never by changing the ones priced per layer;
    # Helix's exchange is built with its time (the whole exchange, where the engine runs no HOP-B)
    import dataclasses

    m, g = get_model("deepseek-r1"), get_gpu("gb200")
    ops = forward_ops(m, g, calibration_for(g), m.default_precision, Plan(tp=1, kvp=8, ep=8), b=Batch(dec_seqs=64, dec_ctx=1_048_576))
    for field, value in (("count", 2.0), ("time", 0.0), ("part", "moe"), ("weight", "bf16"), ("kernels", 3.0)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(ops[0], field, value)
    head = next(o for o in ops if o.part == "lm_head")
    one = head.replace(count=5.0)
    assert (one.count, head.count, one.name, float(one.flops)) == (5.0, 1.0, "lm_head", float(head.flops))
    helix = next(o for o in ops if o.role == "helix_all_to_all")
    from llm_codesign.cost import kernels

    whole = kernels.collective_time("all_to_all", float(helix.bytes), 8.0, g, calibration_for(g))
    assert float(helix.time) == float(whole)  # no engine runs HOP-B: one exchange after all the attention


def test_mla_in_an_engine_step_runs_one_down_projection_and_the_latent_norms():
    """TensorRT-LLM, vLLM and SGLang run MLA's q_a and kv_a as one GEMM over the hidden state and
    RMSNorm both latents in kernels of their own. DeepSeek-R1 at 4 decode tokens: [4, 7168] x [7168,
    1536 + 512 + 64], 2 * 4 * 7168 * 2112 FLOPs; the norms read and write 4 * (1536 + 512) BF16 values
    in 2 launches. The kernel tables' steps (no engine) keep the two GEMMs and no norms."""
    from llm_codesign.spec.engines import get_engine

    m, g = get_model("deepseek-r1"), get_gpu("b200")
    costs = get_engine("trtllm").costs(calibration_for(g))
    kw = dict(b=Batch(dec_seqs=4.0, dec_ctx=1024.0))
    ops = {o.role: o for o in forward_ops(m, g, costs.cal, Precision.of("fp8_block"), Plan(tp=8, ep=8), engine=costs.engine, **kw)
           if o.part == "attention"}
    assert "q_a" not in ops and "kv_a" not in ops
    assert ops["qkv_a"].flops == pytest.approx(2.0 * 4 * 7168 * 2112) and ops["qkv_a"].weight == "fp8_block"
    assert float(ops["latent_norms"].bytes) == 4 * (1536 + 512) * 2 * 2 and ops["latent_norms"].kernels == 2.0
    tables = {o.role for o in forward_ops(m, g, calibration_for(g), Precision.of("fp8_block"), Plan(tp=8, ep=8), **kw)}
    assert {"q_a", "kv_a"} <= tables and not {"qkv_a", "latent_norms"} & tables


def test_a_target_step_samples_over_the_logits_gathered_across_tp():
    """An engine's decode step ends in its sampler: the vocabulary-parallel head's BF16 logits gathered
    on every TP rank, then one pass over them. DeepSeek-R1 (129,280 tokens) at 4 sequences verifying
    one draft each: 8 sampled positions, 8 * 129,280 * 2 = 2,068,480 bytes gathered and read. A draft
    pass samples apart (ops.mtp_module_ops) and the kernel tables' step has no sampler."""
    from llm_codesign.serve.aggregated import decode_step
    from llm_codesign.spec.engines import get_engine

    m, g = get_model("deepseek-r1"), get_gpu("b200")
    costs = get_engine("trtllm").costs(calibration_for(g))
    prec, sh = Precision.of("fp8_block"), Plan(tp=8, ep=8)
    ops = {o.name: o for o in decode_step(m, g, prec, sh, costs=costs, b=4.0, ctx=1024.0, k=np.asarray(1.0), spec=None)[2]}
    gather, sample = ops["sampler/logits_gather"], ops["sampler/sample"]
    assert float(gather.bytes) == float(sample.bytes) == 8 * 129280 * 2
    assert gather.kind == "comm" and float(gather.time) > 0 and sample.kernels == 1.0 and float(sample.time) > 0
    b = Batch(dec_seqs=4.0, dec_ctx=1024.0)
    assert not [o for o in forward_ops(m, g, costs.cal, prec, sh, b=b, engine=costs.engine) if o.name.startswith("sampler/")]
    assert not [o for o in forward_ops(m, g, calibration_for(g), prec, sh, b=b, sample=True) if o.name.startswith("sampler/")]


def test_helix_exchanges_the_latent_partial_outputs_of_mla():
    # TensorRT-LLM's helixAllToAll sends each head's 16-bit partial output and its two FP32 softmax statistics:
    # absorbed MLA's output is kv_lora_rank (512) wide before its up-projection, a GQA head's its value width
    g = get_gpu("gb200")
    ds = get_model("deepseek-r1")
    ops = forward_ops(ds, g, calibration_for(g), ds.default_precision, Plan(tp=1, kvp=8, ep=8), b=Batch(dec_seqs=64, dec_ctx=1_048_576))
    helix = next(o for o in ops if o.role == "helix_all_to_all")
    assert float(helix.bytes) == 64 * 128 * (512 * 2 + 8)  # 8,454,144 B: 64 tokens x 128 heads
    ll = get_model("llama-3.1-405b")
    ops = forward_ops(ll, g, calibration_for(g), ll.default_precision, Plan(tp=8, kvp=8), b=Batch(dec_seqs=4, dec_ctx=1_048_576))
    helix = next(o for o in ops if o.role == "helix_all_to_all")
    assert float(helix.bytes) == 4 * 16 * (128 * 2 + 8)  # 128 query heads over TP8
