"""The one-request DeepSeek-R1 step's kernels TensorRT-LLM runs that its fusions do not remove
(docs/modelling-notes.md#onestep-inventory): the shared expert's own activation quantise in DeepSeek-V3's MoE
layers, and the SM90 absorbed MLA BMMs' 1x128 quantise of a block-FP8 checkpoint; each priced by hand from the
calibration."""
from dataclasses import replace

import numpy as np
import pytest

from llm_codesign.cost.arrays import Tokens
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

TP8 = Plan(tp=8, ep=2, moe_tp=4)


def _times(model, gpu, prec, engine, tokens=4.0):
    ops = forward_ops(model, gpu, calibration_for(gpu), prec, TP8.broadcast(), b=Batch(dec_seqs=1.0, dec_ctx=2048.0, dec_tokens_per_seq=tokens),
                      engine=get_engine(engine))
    return {o.name: (float(np.sum(o.time)), float(np.sum(o.kernels))) for o in ops}


def test_deepseek_shared_expert_quantises_its_bf16_input(b200):
    # DeepSeek-V3's MoE layers fuse RESIDUAL_RMS_NORM only into the all-reduce before the MoE, so the shared expert's
    # NVFP4 gate_up quantises the BF16 hidden states itself (fp4_quantize): 4 tokens x 7168, BF16 read and NVFP4 written
    # (0.5 B + one E4M3 scale per 16 values), one launch
    cal, m = calibration_for(b200), get_model("deepseek-ai/DeepSeek-R1")
    assert m.architecture == "DeepseekV3ForCausalLM"
    prec = Precision.of("nvfp4")
    a_b = prec.activation.bytes_per_value()
    assert a_b == pytest.approx(0.5 + 1.0 / 16.0)
    ours = _times(m, b200, prec, "trtllm")["layer1/moe/shared_gate_up"][0]
    other = _times(replace(m, architecture=""), b200, prec, "trtllm")["layer1/moe/shared_gate_up"][0]
    quant = 4 * 7168 * (2.0 + a_b) / (b200.hbm_bandwidth_bytes_per_s * cal.bw_eff) + cal.kernel_overhead_s
    assert ours - other == pytest.approx(quant, rel=1e-4)
    # the routed experts, and another engine's shared expert, unchanged
    for engine, name in (("trtllm", "layer1/moe/experts_gate_up"), ("sglang", "layer1/moe/shared_gate_up")):
        assert _times(m, b200, prec, engine)[name] == _times(replace(m, architecture=""), b200, prec, engine)[name]
    # a BF16 checkpoint has nothing to quantise
    bf16 = Precision.of("bf16")
    assert _times(m, b200, bf16, "trtllm")["layer1/moe/shared_gate_up"] == _times(replace(m, architecture=""), b200, bf16, "trtllm")[
        "layer1/moe/shared_gate_up"]


def test_hopper_block_fp8_mla_bmms_quantise_their_input(h200, b200):
    # fp8_block_scaling_bmm_out on SM90: each absorbed product's BF16 input quantised per 1x128 group first. At TP 8, 16
    # heads a rank, 4 tokens: q_nope 128 and the latent output 512 wide, BF16 read + FP8 written + an FP32 scale per 128
    cal, m = calibration_for(h200), get_model("deepseek-ai/DeepSeek-R1")
    t, n = _times(m, h200, Precision.of("fp8_block"), "trtllm")["layer0/attn/mla_bmm_quant"]
    nbytes = 4 * 16 * (128 + 512) * (2.0 + 1.0 + 4.0 / 128.0)
    assert nbytes == 124_160.0
    assert t == pytest.approx(nbytes / (h200.hbm_bandwidth_bytes_per_s * cal.bw_eff) + 2 * cal.kernel_overhead_s, rel=1e-6)
    assert n == 2.0
    # not on Blackwell (a BF16 torch.bmm over the dequantised weight), nor in SGLang's step, nor for a BF16 checkpoint
    assert "layer0/attn/mla_bmm_quant" not in _times(m, b200, Precision.of("fp8_block"), "trtllm")
    assert "layer0/attn/mla_bmm_quant" not in _times(m, h200, Precision.of("fp8_block"), "sglang")
    assert "layer0/attn/mla_bmm_quant" not in _times(m, h200, Precision.of("bf16"), "trtllm")


def test_ada_and_sm120_block_fp8_mla_bmms_quantise_their_input_too():
    # fp8_block_scaling_bmm_out quantises on SM89 as on SM90 (`sm_version == 90 or sm_version == 89`), and the 1.x builds on
    # SM120 (per_token_quant_and_transform): the same 124,160 bytes in 2 launches on an L40S and an RTX PRO 6000
    from llm_codesign.spec.hardware import get_gpu
    m, nbytes = get_model("deepseek-ai/DeepSeek-R1"), 4 * 16 * (128 + 512) * (2.0 + 1.0 + 4.0 / 128.0)
    for name, family in (("l40s", "ada"), ("rtx-pro-6000", "blackwell_sm120")):
        gpu = get_gpu(name)
        cal = calibration_for(gpu)
        assert gpu.family == family and get_engine("trtllm").mla_bmm_quantised(family)
        t, n = _times(m, gpu, Precision.of("fp8_block"), "trtllm")["layer0/attn/mla_bmm_quant"]
        assert t == pytest.approx(nbytes / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff) + 2 * cal.kernel_overhead_s, rel=1e-6) and n == 2.0
    assert not get_engine("trtllm").mla_bmm_quantised("blackwell")  # SM100: BF16 maths by default (use_cute_dsl_blockscaling_bmm off)


def test_quantised_mla_bmms_read_fp8_weights(h200, b200):
    # where the input is quantised, the BMM is block FP8: 16 heads a rank, 4 tokens. q x W_UK: A 64 x 128 FP8 + one FP32 scale
    # per 128 (8,448 B), W 16 x 512 x 128 FP8 + one scale per 128 x 128 (1,048,832 B), C 64 x 512 BF16 (65,536 B) = 1,122,816 B;
    # o x W_UV: A 64 x 512 (33,792) + W (1,048,832) + C 64 x 128 (16,384) = 1,099,008 B. On B200 both stay BF16: 2,179,072 B
    m = get_model("deepseek-ai/DeepSeek-R1")

    def ops(gpu):
        o = forward_ops(m, gpu, calibration_for(gpu), Precision.of("fp8_block"), TP8.broadcast(),
                        b=Batch(dec_seqs=1.0, dec_ctx=2048.0, dec_tokens_per_seq=4.0), engine=get_engine("trtllm"))
        return {x.name: x for x in o}
    hop, bw = ops(h200), ops(b200)
    assert float(np.sum(hop["layer0/attn/mla_q_absorb"].bytes)) == 1_122_816.0
    assert float(np.sum(hop["layer0/attn/mla_v_up"].bytes)) == 1_099_008.0
    assert hop["layer0/attn/mla_q_absorb"].math == "fp8" and hop["layer0/attn/mla_v_up"].weight == "fp8_block"
    assert [float(np.sum(bw[f"layer0/attn/{r}"].bytes)) for r in ("mla_q_absorb", "mla_v_up")] == [2_179_072.0] * 2
    assert bw["layer0/attn/mla_q_absorb"].math == "bf16"
    # the quantise is priced once, by mla_bmm_quant: the FP8 BMM adds no quantise pass of its own (gemm.quantise_kernel)
    from llm_codesign.cost import gemm
    cal = calibration_for(h200)
    alone = gemm.gemm_time(Tokens(np.float64(4.0)), 512, 128, h200, cal, math="fp8", a_bytes=1.0 + 4.0 / 128.0, w_bytes=1.0 + 4.0 / 16384.0,
                           groups=16.0, kernel="fp8_block", engine=get_engine("trtllm"), fused_quant="epilogue")[0]
    assert float(np.sum(hop["layer0/attn/mla_q_absorb"].time)) == pytest.approx(float(np.sum(alone)), rel=1e-6)


def test_the_mtp_worker_is_one_operator(b200):
    # the worker's 25 + 6k kernels as one elementwise operator (ops.spec_worker_ops): 43 launches x 3.0 us = 129 us at MTP3
    from llm_codesign.cost.ops import spec_worker_ops
    cal = calibration_for(b200)
    assert cal.kernel_overhead_s == pytest.approx(3.0e-6)
    (w,) = spec_worker_ops(b200, cal, TP8.broadcast(), engine=get_engine("trtllm"), method="mtp", k=np.array([3.0]))
    assert (w.name, w.kind, float(np.sum(w.kernels))) == ("mtp/worker", "elementwise", 43.0)
    assert float(np.sum(w.total_time)) == pytest.approx(129e-6, rel=1e-9) and float(np.sum(w.bytes)) == 0.0
    assert spec_worker_ops(b200, cal, TP8.broadcast(), engine=get_engine("sglang"), method="mtp", k=3) == []
    assert spec_worker_ops(b200, cal, TP8.broadcast(), engine=get_engine("trtllm"), method="eagle3", k=3) == []


def test_mtp_worker_kernels_per_step(b200, monkeypatch):
    # MTPEagleWorker's own small kernels a step, counted op by op (TensorRTLLMEngine.spec_worker_kernels): 25 + 6 per
    # draft token, 43 at MTP3, 31 at MTP1; none for EAGLE-3 (not read) nor another engine's worker
    from llm_codesign.serve.aggregated import decode_step
    from llm_codesign.spec.plan import SpecDecoding
    trt = get_engine("trtllm")
    assert float(trt.spec_worker_kernels("mtp", 3)) == 43.0 and float(trt.spec_worker_kernels("mtp", 1)) == 31.0
    assert trt.spec_worker_kernels("eagle3", 3) == 0.0 and get_engine("sglang").spec_worker_kernels("mtp", 3) == 0.0
    # each at the elementwise fixed cost, added once to the step's draft time
    m, cal = get_model("deepseek-ai/DeepSeek-R1"), calibration_for(b200)
    costs = trt.costs(cal)
    spec = SpecDecoding(method="mtp", k=3, mean_accepted=2.82)

    def draft():
        return float(np.sum(decode_step(m, b200, Precision.of("nvfp4"), TP8.broadcast(), costs=costs, b=np.array([1.0]), ctx=np.array([2048.0]),
                                 k=np.array([3.0]), spec=spec)[1]))
    with_worker = draft()
    monkeypatch.setattr(type(trt), "spec_worker_kernels", lambda self, method, k: 0.0)
    assert with_worker - draft() == pytest.approx(43 * costs.cal.kernel_overhead_s, rel=1e-9)


def test_spring_2025_gate_launches_its_sigmoid_and_bias_add(h200):
    # TensorRT-LLM's DeepSeek-V3 gate of spring 2025 (Deepseekv3RoutingImpl.noaux_tc, docs/modelling-notes.md#onereq-hopper):
    # F.sigmoid over the FP32 logits and `scores + e_score_correction_bias`, each a pass reading and writing 256 FP32 scores
    # a token, before noaux_tc_op; today's top-k kernel takes the logits (one launch: 256 scores read, 8 ids and 8 weights
    # written). H200, TP 8, EP 4 x MoE TP 2, 4 tokens
    cal, m = calibration_for(h200), get_model("deepseek-ai/DeepSeek-R1")
    trt = get_engine("trtllm")
    old = trt.without("routing")
    assert old.name == "trtllm" and "routing" not in old.fusions and trt.fuses("routing")

    def topk(engine):
        ops = forward_ops(m, h200, cal, Precision.of("fp8_block"), Plan(tp=8, ep=4, moe_tp=2).broadcast(),
                          b=Batch(dec_seqs=1.0, dec_ctx=2048.0, dec_tokens_per_seq=4.0), engine=engine)
        (o,) = [o for o in ops if o.name == "layer1/moe/topk"]
        return float(np.sum(o.time)), float(np.sum(o.kernels)), float(np.sum(o.no_pdl)), o

    bw = h200.hbm_bandwidth_bytes_per_s * cal.bw_eff
    # noaux_tc_op then reads both score tensors, the sigmoid's and the biased: 4 B an expert more (4 x 256 x 4 = 4,096)
    assert 4 * (256 + 2 * 8) * 4 == 4_352 and 4 * 256 * 4 * 4 == 16_384 and 4 * 256 * 4 == 4_096
    assert topk(trt)[:3] == pytest.approx((4_352 / bw + cal.kernel_overhead_s, 1.0, 0.0), rel=1e-6)
    assert topk(old)[:3] == pytest.approx(((4_352 + 16_384 + 4_096) / bw + 3 * cal.kernel_overhead_s, 3.0, 2.0), rel=1e-6)
    # the sigmoid and the bias add are PyTorch elementwise kernels, launched without PDL: a step credits PDL on the one
    # noaux_tc launch only (serve.aggregated.op_step_time), per layer that runs it
    from llm_codesign.serve.aggregated import op_step_time

    t, _, _, o = topk(old)
    assert float(np.sum(op_step_time(o, 1e-6, one_layer=True))) == pytest.approx(t - 1e-6 * 1.0, rel=1e-9)
    # every other engine's step routes in one launch, as before
    for name in ("vllm", "sglang"):
        assert get_engine(name).fuses("routing")
