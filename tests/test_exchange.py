"""How a plan moves tokens between GPUs: the MoE exchange by attention DP and Helix's overlapped
all-to-all (HOP-B), by hand from cost.ops and cost.kernels."""
from dataclasses import replace

import numpy as np
import pytest

from llm_codesign.cost import kernels as cost
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.spec.engines import SGLANG, TRTLLM, VLLM
from llm_codesign.spec.plan import Plan, validity
from llm_codesign.spec.precision import Precision

# TensorRT-LLM as the Helix paper designs it, with HOP-B (its own step does not run it yet)
HOP_B = replace(TRTLLM, fusions=(*TRTLLM.fusions, "hop_b"))


def _ops(model, gpu, cal, plan, engine=TRTLLM, **batch):
    return forward_ops(model, gpu, cal, Precision.of("fp8"), plan.broadcast(), b=Batch(**batch), engine=engine)


def _sum(ops, part, role):
    return sum(float(np.sum(o.time * o.count)) for o in ops if (o.part, o.role) == (part, role))


def test_moe_exchange_all_to_all_only_under_attention_dp_where_the_engine_runs_one(b200):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    m, cal = get_model("deepseek-r1"), calibration_for(b200).in_step("trtllm")
    # TP8 x EP8: every rank holds every token after the attention all-reduce; one all-reduce sums the experts
    tp = _ops(m, b200, cal, Plan(tp=8, ep=8, moe_tp=1), dec_seqs=32, dec_ctx=2048)
    assert _sum(tp, "moe", "dispatch") == 0 and _sum(tp, "moe", "combine") == 0
    moe_layers = sum(n for layer, n in m.groups if layer.ffn.kind == "moe")
    ar = float(cost.collective_time("all_reduce", 32 * m.hidden * 2.0, 8, b200, cal, engine=TRTLLM))
    assert _sum(tp, "moe", "all_reduce") == pytest.approx(moe_layers * ar, rel=1e-9)
    # attention DP 8 x EP 8 on GB200 NVL72 (TensorRT-LLM's NVLink one-sided all-to-all): tokens are dispatched to
    # their experts' ranks and combined back
    gb200 = get_gpu("gb200")
    dp = _ops(m, gb200, calibration_for(gb200).in_step("trtllm"), Plan(tp=1, adp=8, ep=8, moe_tp=1), dec_seqs=4, dec_ctx=2048)
    assert _sum(dp, "moe", "dispatch") > 0 and _sum(dp, "moe", "combine") > 0 and _sum(dp, "moe", "all_reduce") == 0
    assert _sum(dp, "moe", "all_gather") == 0 and _sum(dp, "moe", "reduce_scatter") == 0
    # on an 8-GPU B200 board (no MNNVL) it gathers, as SGLang and vLLM do by default anywhere
    for gpu, engine in ((b200, TRTLLM), (gb200, SGLANG), (gb200, VLLM)):
        dp = _ops(m, gpu, calibration_for(gpu).in_step(engine.name), Plan(tp=1, adp=8, ep=8, moe_tp=1), engine, dec_seqs=4, dec_ctx=2048)
        assert _sum(dp, "moe", "dispatch") == 0 and _sum(dp, "moe", "combine") == 0 and _sum(dp, "moe", "all_reduce") == 0
        assert _sum(dp, "moe", "all_gather") > 0 and _sum(dp, "moe", "reduce_scatter") > 0
    # attention DP 8 over a tensor-parallel MoE (EP 1): every rank's tokens gathered, the outputs reduce-scattered
    tpm = _ops(m, b200, cal, Plan(tp=1, adp=8, ep=1, moe_tp=8), dec_seqs=4, dec_ctx=2048)
    gathered = float(cost.collective_time("all_gather", 4 * 8 * m.hidden * 1.0, 8, b200, cal))  # FP8 activations
    assert _sum(tpm, "moe", "all_gather") == pytest.approx(moe_layers * gathered, rel=1e-9)
    assert _sum(tpm, "moe", "reduce_scatter") > 0 and _sum(tpm, "moe", "dispatch") == 0 and _sum(tpm, "moe", "all_reduce") == 0


def test_gather_exchange_of_one_moe_layer_by_hand(b200):
    """TensorRT-LLM on B200, attention DP 8 x EP 8, 4 decode tokens a rank, uniform routing: one DeepSeek-R1 MoE
    layer's exchange is every rank's tokens gathered and the outputs reduce-scattered, and its permutation sees all
    of them."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.registry import get_model

    m = get_model("deepseek-r1")
    cal = replace(calibration_for(b200).in_step("trtllm"), moe_routing_alpha=0.0)
    ops = _ops(m, b200, cal, Plan(tp=1, adp=8, ep=8, moe_tp=1), dec_seqs=4, dec_ctx=2048)
    layers = sum(n for layer, n in m.groups if layer.ffn.kind == "moe")
    h, k, T_all = m.hidden, 8, 4 * 8  # 7168 wide, top 8 of 256 experts, 32 tokens over the 8 ranks
    on_rank = T_all * k / 8  # uniform: 32 assignments on each rank's 32 experts
    ag = float(cost.collective_time("all_gather", T_all * h * 1.0, 8, b200, cal, engine=TRTLLM))  # FP8 activations
    rs = float(cost.collective_time("reduce_scatter", T_all * h * 2.0, 8, b200, cal, engine=TRTLLM))  # BF16 outputs
    # permute: on Blackwell the up-projection gathers its routed rows (no permuted copy), so one launch, the
    # un-permute's: the rank's 32 BF16 expert output rows read and all 32 tokens' BF16 rows written (4 of them
    # under an all-to-all); plus the 224 of the 256 assignments that go to other ranks' experts, sorted out
    perm = float(cost.elementwise_time(on_rank * h * 2.0 + T_all * h * 2.0, 1.0, b200, cal)[0])
    route = (T_all * k - on_rank) * cal.moe_kernel(None, "fp8")[2]
    want = ag + rs + perm + route
    got = sum(_sum(ops, "moe", r) for r in ("dispatch", "combine", "all_gather", "reduce_scatter", "permute")) / layers
    assert got == pytest.approx(want, rel=1e-9)
    assert (ag, rs) == (pytest.approx(_sum(ops, "moe", "all_gather") / layers, rel=1e-12),
                        pytest.approx(_sum(ops, "moe", "reduce_scatter") / layers, rel=1e-12))


def test_gather_moves_each_engines_own_activation_format(b200):
    """DeepSeek-R1 at FP8 on B200, attention DP 8 x EP 8, 4 decode tokens a rank: the gather moves every rank's 32
    tokens of 7168 at 1 byte where the engine quantises before it (TensorRT-LLM's AllGatherReduceScatter, vLLM's naive
    DP/EP prepare, naive_dp_ep.py:124-131@0.19.0) and at 2 (BF16) in SGLang, whose dp_gather_partial gathers the
    normed hidden states (layers/communicator.py:783-803@0.5.9): 229,376 bytes against 458,752."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.registry import get_model

    m = get_model("deepseek-r1")
    layers = sum(n for layer, n in m.groups if layer.ffn.kind == "moe")
    assert 4 * 8 * m.hidden == 229_376
    for engine, nbytes in ((TRTLLM, 229_376.0), (VLLM, 229_376.0), (SGLANG, 458_752.0)):
        cal = calibration_for(b200).in_step(engine.name)
        ops = _ops(m, b200, cal, Plan(tp=1, adp=8, ep=8, moe_tp=1), engine, dec_seqs=4, dec_ctx=2048)
        ag = float(cost.collective_time("all_gather", nbytes, 8, b200, cal, engine=engine))
        assert _sum(ops, "moe", "all_gather") / layers == pytest.approx(ag, rel=1e-12)
        assert [float(np.max(o.bytes)) for o in ops if (o.part, o.role) == ("moe", "all_gather")] == [nbytes]  # one op, every layer


def test_helix_exchange_overlaps_over_the_batch(b200):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.registry import get_model

    m, cal = get_model("deepseek-r1"), calibration_for(b200).in_step("trtllm")
    plan = Plan(tp=1, kvp=8, ep=8, moe_tp=1)
    for seqs in (1.0, 4.0, 64.0):
        ops = _ops(m, b200, cal, plan, HOP_B, dec_seqs=seqs, dec_ctx=65536)
        ex = next(o for o in ops if o.role == "helix_all_to_all")
        core = {o.role: o for o in ops if o.part == "attention" and o.group == ex.group}
        a = float(core["core_decode"].time + core["core_prefill"].time) / seqs  # one request's attention
        # the exchange: every token's partial output in the latent space and its two FP32 softmax statistics
        # (128 heads x (512 x 2 + 8) bytes) over 8 ranks, in one message (C) or one per request (c), each paying
        # the collective's latency
        nbytes = seqs * 128 * (512 * 2.0 + 8.0)
        C = float(cost.collective_time("all_to_all", nbytes, 8, b200, cal))
        c = float(cost.collective_time("all_to_all", nbytes / seqs, 8, b200, cal))
        want = min(C, c + (seqs - 1) * max(c - a, 0.0))
        assert float(ex.time) == pytest.approx(want, rel=1e-9)
        assert float(ex.time) <= C
        if seqs == 1:
            assert float(ex.time) == pytest.approx(C, rel=1e-12)  # one request hides nothing
    # long contexts: a request's attention outlasts its message, so the pipeline hides all but one message
    ops = _ops(m, b200, cal, plan, HOP_B, dec_seqs=64.0, dec_ctx=1_048_576)
    ex = next(o for o in ops if o.role == "helix_all_to_all")
    c = float(cost.collective_time("all_to_all", 128 * (512 * 2.0 + 8.0), 8, b200, cal))
    assert float(ex.time) == pytest.approx(c, rel=1e-9)
    # TensorRT-LLM's own step sends one exchange after all the attention: the 64 requests' whole message
    ops = _ops(m, b200, cal, plan, dec_seqs=64.0, dec_ctx=1_048_576)
    ex = next(o for o in ops if o.role == "helix_all_to_all")
    C = float(cost.collective_time("all_to_all", 64 * 128 * (512 * 2.0 + 8.0), 8, b200, cal))
    assert float(ex.time) == pytest.approx(C, rel=1e-12) and C > 3 * c


def test_helix_with_attention_dp_is_a_plan(b200):
    from llm_codesign.spec.registry import get_model

    m = get_model("deepseek-r1")
    # 2 attention-DP ranks, each a Helix group of 4 GPUs sharding its requests' cache along the sequence
    assert int(validity(m, b200, Plan(tp=1, kvp=4, adp=2, ep=8, moe_tp=1), 8)) < 0


def test_trtllm_cutlass_block_fp8_moe_takes_its_tokens_in_bf16_on_hopper(h200):
    """DeepSeek-R1 block FP8 on H200 under TensorRT-LLM, attention DP 8 x EP 8, 4 decode tokens a rank, uniform routing:
    its CUTLASS MoE (Hopper's) takes the tokens in BF16 (CutlassFusedMoE.forward_chunk quantises only FP8 per tensor and
    NVFP4 before its gather) and quantises the permuted rows itself, so one MoE layer gathers 32 x 7168 x 2 = 458,752
    bytes, not the 229,376 of FP8, and its permuted copy writes the rank's 32 routed rows in BF16: 32 x 7168 x (2 + 2)
    read and written, plus every token's BF16 output row written by the un-permute, 32 x 7168 x 2. Per-tensor FP8 on the
    same kernels is quantised before the gather (229,376, its permuted copy FP8: 32 x 7168 x (1 + 2) + 32 x 7168 x 2);
    vLLM's block FP8 gathers quantised as before, with its FP32 scale a 128-group: 229,376 + 32 x 56 x 4 = 236,544."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.registry import get_model

    m = get_model("deepseek-r1")
    layers = sum(n for layer, n in m.groups if layer.ffn.kind == "moe")
    h, k, T_all = m.hidden, 8, 4 * 8
    on_rank = T_all * k / 8
    assert (T_all * h * 2, on_rank * h * 4 + T_all * h * 2, on_rank * h * 3 + T_all * h * 2) == (458_752, 1_376_256, 1_146_880)
    for engine, weight, nbytes, perm in ((TRTLLM, "fp8_block", 458_752.0, 1_376_256.0), (TRTLLM, "fp8", 229_376.0, 1_146_880.0),
                                         (VLLM, "fp8_block", 236_544.0, None)):
        cal = replace(calibration_for(h200).in_step(engine.name), moe_routing_alpha=0.0)
        ops = forward_ops(m, h200, cal, Precision.of(weight), Plan(tp=1, adp=8, ep=8, moe_tp=1).broadcast(),
                          b=Batch(dec_seqs=4, dec_ctx=2048), engine=engine)
        ag = float(cost.collective_time("all_gather", nbytes, 8, h200, cal, engine=engine))
        assert _sum(ops, "moe", "all_gather") / layers == pytest.approx(ag, rel=1e-12)
        assert [float(np.max(o.bytes)) for o in ops if (o.part, o.role) == ("moe", "all_gather")] == [nbytes]
        if perm:
            assert [float(np.max(o.bytes)) for o in ops if (o.part, o.role) == ("moe", "permute")] == [perm]


def test_trtllm_cutlass_w4afp8_moe_gathers_its_tokens_in_bf16_on_hopper(h200):
    """W4AFP8 (INT4 weights per group, FP8 activations; its GEMMs the w4a16 family) on the same H200 plan as above: forward_chunk
    sets only use_w4a8_group_scaling for it (fused_moe_cutlass.py@000a01de), so, as for block FP8, one MoE layer gathers
    the BF16 hidden states, 32 x 7168 x 2 = 458,752 bytes (229,376 had it been quantised to FP8 first), and its permuted
    copy reads and writes the 32 routed rows in BF16 with every token's output row: 32 x 7168 x (2 + 2) + 32 x 7168 x 2."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.registry import get_model

    m = get_model("deepseek-r1")
    layers = sum(n for layer, n in m.groups if layer.ffn.kind == "moe")
    cal = replace(calibration_for(h200).in_step(TRTLLM.name), moe_routing_alpha=0.0)
    ops = forward_ops(m, h200, cal, Precision.of("int4", "fp8"), Plan(tp=1, adp=8, ep=8, moe_tp=1).broadcast(),
                      b=Batch(dec_seqs=4, dec_ctx=2048), engine=TRTLLM)
    assert [float(np.max(o.bytes)) for o in ops if (o.part, o.role) == ("moe", "all_gather")] == [458_752.0]
    assert [float(np.max(o.bytes)) for o in ops if (o.part, o.role) == ("moe", "permute")] == [1_376_256.0]
    ag = float(cost.collective_time("all_gather", 458_752.0, 8, h200, cal, engine=TRTLLM))
    assert _sum(ops, "moe", "all_gather") / layers == pytest.approx(ag, rel=1e-12)
