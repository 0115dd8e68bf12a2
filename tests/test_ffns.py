"""The FFNs' operator builders (cost.ffns): a dense MLP, a linear map, and a mixture of experts with
the routing its busiest expert-parallel rank sees."""
import numpy as np
import pytest

from llm_codesign.cost.ffns import distinct_experts, routed_load
from llm_codesign.cost.ops import Batch, layer_ops
from llm_codesign.spec.kinds import DenseFfn, LinearFfn, NoMixer
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Plan


def _ffn_ops(ffn, gpu, cal, *, tp):
    m = ModelSpec("ffn", hidden=4096, vocab=32000, groups=((Layer(NoMixer(), ffn), 2),))
    return layer_ops(m, m.groups[0][0], 2.0, gpu, cal, prec=m.default_precision, sh=Plan(tp=tp), b=Batch(dec_seqs=16, dec_ctx=100),
                     prefix="x", parts=("ffn",))


def test_dense_and_linear_ffn_operators(h100, cal_h100):
    got = _ffn_ops(DenseFfn(inter=14336), h100, cal_h100, tp=4)
    assert [(o.name, o.part) for o in got] == [("x/ffn/gate_up", "ffn"), ("x/ffn/down", "ffn"), ("x/ffn/all_reduce", "ffn"),
                                               ("x/elementwise", "layer")]
    # 16 tokens: gate and up 2 x 3584 wide per GPU, down 3584 deep; the all-reduce of the BF16 output
    assert [float(o.flops) for o in got[:2]] == [2.0 * 16 * 7168 * 4096, 2.0 * 16 * 4096 * 3584]
    assert float(got[2].bytes) == 16 * 4096 * 2.0
    # the layer's elementwise pass streams 6 hidden-wide vectors and 3 of the TP-split intermediate, BF16
    assert float(got[3].bytes) == 16 * (6 * 4096 + 3 * 14336 / 4) * 2.0
    lin = _ffn_ops(LinearFfn(), h100, cal_h100, tp=4)
    assert [o.name for o in lin] == ["x/ffn/linear", "x/ffn/all_reduce", "x/elementwise"]
    assert float(lin[0].flops) == 2.0 * 16 * 1024 * 4096 and float(lin[2].bytes) == 16 * 6 * 4096 * 2.0


def test_distinct_experts():
    assert distinct_experts(256, 8, 1) == pytest.approx(8)
    assert distinct_experts(256, 8, 10_000) == pytest.approx(256)
    assert 8 < distinct_experts(256, 8, 16) < 128


@pytest.mark.parametrize("E, k", [(256.0, 8.0), (128.0, 4.0), (32.0, 4.0), (8.0, 2.0), (16.0, 16.0)])
def test_distinct_experts_past_the_power_underflow_is_the_formula_bit_for_bit(E, k):
    # tokens beyond 60 / log2(1 / (1 - k/E)) are priced at that count (1 - x^t rounds to 1 either way,
    # and a power that underflows takes libm's slow path): the formula's values exactly, E past it
    t = np.concatenate([np.arange(0.0, 5000.0, 0.5), np.geomspace(1e3, 1e7, 20000), [np.inf]])
    np.testing.assert_array_equal(distinct_experts(E, k, t), E * (1.0 - np.power(1.0 - k / E, t)))
    assert distinct_experts(E, k, 1e6) == E


def _collector_busiest_rank(E, k, T, ep, alpha, trials=300):
    """The busiest EP rank's routed tokens as aiconfigurator's MoE collector draws them
    (collector/helper.py _generate_power_law_distribution), median over draws."""
    rng = np.random.default_rng(0)
    S = T * k
    a, b = (1.0, 0.8 * T) if S > E else (0.01, 2.0)
    q = 1.0 - alpha
    out = []
    for _ in range(trials):
        x = ((b ** q - a ** q) * rng.random(E) + a ** q) ** (1.0 / q)
        counts = np.minimum(np.round(x / x.sum() * S), T)
        out.append(counts.reshape(ep, -1).sum(1).max())
    return float(np.median(out))


@pytest.mark.parametrize("E,k,T,ep,alpha", [(256, 8, 1024, 8, 1.01), (256, 8, 16, 8, 1.01), (128, 8, 4096, 16, 1.2),
                                            (64, 6, 64, 4, 1.01), (512, 22, 32, 16, 1.2), (256, 8, 8192, 4, 1.01)])


def test_routed_load_follows_the_collectors_power_law(E, k, T, ep, alpha):
    active, top, on_rank = routed_load(E, k, T, ep, alpha)
    assert float(on_rank) == pytest.approx(_collector_busiest_rank(E, k, T, ep, alpha), rel=0.12)
    assert T * k / ep < float(on_rank) <= T * min(k, E / ep)  # busier than the mean, never more than every token
    assert 1.0 <= float(active) <= E / ep and float(top) <= T


def test_routed_load_uniform_and_one_rank():
    # alpha 0: the mean share over the experts a batch touches (distinct_experts), as before skew was priced
    active, top, on_rank = routed_load(256, 8, 64, 8, 0.0)
    assert float(active) == pytest.approx(distinct_experts(256, 8, 64) / 8)
    assert float(on_rank) == pytest.approx(64 * 8 / 8)
    # one rank holds every routed token whatever the skew
    assert float(routed_load(256, 8, 1024, 1, 1.2)[2]) == pytest.approx(8192)
    # more skew, busier rank
    assert float(routed_load(256, 8, 1024, 8, 1.2)[2]) > float(routed_load(256, 8, 1024, 8, 1.01)[2]) > 1024


def test_moe_block_activation_unpermute_and_foreign_assignments(h100, cal_h100):
    """The MoE block as the kernel tables time it: the activation between the expert GEMMs is an operator of
    its own over the rank's routed rows (its top-k rows, not one row per token), the un-permute writes every
    held token's output row, and under EP without an all-to-all each assignment to another rank's expert
    costs moe_route_s (the tables' MoE: no engine)."""
    from llm_codesign.cost.kernels import elementwise_time
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import Precision

    moe = MoE(experts=256, top_k=8, expert_inter=2048)
    m = ModelSpec("moe", hidden=7168, vocab=32000, groups=((Layer(NoMixer(), moe), 1),))
    prec = Precision.of("fp8_block")
    a_b = prec.activation.bytes_per_value()
    T = 64.0
    for ep, moe_tp in ((1, 8), (8, 1)):
        ops = {o.name: o for o in layer_ops(m, m.groups[0][0], 1.0, h100, cal_h100, prec=prec, sh=Plan(tp=8, ep=ep, moe_tp=moe_tp),
                                            b=Batch(dec_seqs=T, dec_ctx=100), prefix="x", parts=("ffn",))}
        rows = T * 8 / ep  # the rank's routed rows (uniform routing)
        assert float(ops["x/moe/experts_act"].bytes) == pytest.approx(rows * 2048 / moe_tp * (2 * 2.0 + a_b))
        perm = rows * 7168 * (a_b + 2.0) + T * 7168 * 2.0
        assert float(ops["x/moe/permute"].bytes) == pytest.approx(perm)
        foreign = T * 8 - rows  # 0 without EP; 448 of the 512 assignments at EP 8
        t_perm = float(elementwise_time(perm, 2.0, h100, cal_h100)[0])
        assert float(ops["x/moe/permute"].time) == pytest.approx(t_perm + foreign * cal_h100.moe_route_s, rel=1e-6)
    # the layer's own elementwise pass no longer streams the routed experts' intermediate (no shared experts here)
    assert float(ops["x/elementwise"].bytes) == pytest.approx(T * 6 * 7168 * 2.0)


@pytest.mark.parametrize("weights,gpu,act", [("nvfp4", "b200", False), ("fp8_block", "b200", True), ("nvfp4", "mi355x", False),
                                             ("fp8_block", "h100", True)])


def test_moe_block_where_the_up_projection_gathers_and_activates(weights, gpu, act):
    """Blackwell's TRTLLM-Gen MoE and CDNA's AITER MoE (the kernel tables' own there: cost.ffns.FC1_FUSED) read
    the routed rows in the up-projection (no permuted copy: one permutation launch, the un-permute's) and run
    the activation in its epilogue, but for Blackwell's block FP8, whose activation stays a kernel of its own;
    Hopper's CUTLASS MoE does neither. One rank, T tokens, top-8: permuted bytes T x 8 x h x (a + 2) + T x h x 2
    with a copy, T x 8 x h x 2 + T x h x 2 without."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.kernels import elementwise_time
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import Precision

    g = get_gpu(gpu)
    cal = calibration_for(g)
    m = ModelSpec("moe", hidden=7168, vocab=32000, groups=((Layer(NoMixer(), MoE(experts=256, top_k=8, expert_inter=2048)), 1),))
    prec = Precision.of(weights)
    T, gathered = 16.0, gpu != "h100"
    ops = {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, g, cal, prec=prec, sh=Plan(tp=1), b=Batch(dec_seqs=T, dec_ctx=100),
                                        prefix="x", parts=("ffn",))}
    assert ("experts_act" in ops) == act
    perm = T * 8 * 7168 * (2.0 if gathered else prec.activation.bytes_per_value() + 2.0) + T * 7168 * 2.0
    assert float(ops["permute"].bytes) == pytest.approx(perm)
    assert ops["permute"].kernels == (1.0 if gathered else 2.0)
    assert float(ops["permute"].time) == pytest.approx(float(elementwise_time(perm, ops["permute"].kernels, g, cal)[0]))


@pytest.mark.parametrize("engine,gathered", [("vllm", False), ("sglang", True), ("atom", True)])
def test_vllm_on_cdna_runs_its_triton_moe_not_aiters(engine, gathered):
    """On MI355X SGLang and ATOM run AITER's fused MoE (the kernel tables' own: FC1 gathers and activates, at
    the AITER fit); vLLM takes it only with VLLM_ROCM_USE_AITER=1, off by default, so its Triton fused MoE: a
    permuted copy (2 launches, T x 8 x h x (2 + 2) + T x h x 2 bytes at BF16), the activation a kernel of its
    own, and the generic grouped-GEMM values (0.80 of the dense rate, 10 us a launch), not AITER's (fitted.toml [cdna4]: 0.164, 8.94 us)."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import Precision

    g = get_gpu("mi355x")
    cal = calibration_for(g)
    e = get_engine(engine)
    m = ModelSpec("moe", hidden=4096, vocab=32000, groups=((Layer(NoMixer(), MoE(experts=128, top_k=8, expert_inter=1536)), 1),))
    T = 16.0
    ops = {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, g, cal, prec=Precision.of("bf16"), sh=Plan(tp=1),
                                        b=Batch(dec_seqs=T, dec_ctx=100), prefix="x", parts=("ffn",), engine=e)}
    assert ("experts_act" in ops) == (not gathered)
    assert ops["permute"].kernels == (1.0 if gathered else 2.0)
    assert float(ops["permute"].bytes) == pytest.approx(T * 8 * 4096 * (2.0 if gathered else 4.0) + T * 4096 * 2.0)
    fam = e.moe_kernel("cdna4", "bf16", weight="bf16")
    assert fam == (None if gathered else "vllm_triton")
    assert cal.moe_kernel(fam, "bf16")[:2] == ((pytest.approx(0.164), pytest.approx(8.944e-6)) if gathered
                                               else (pytest.approx(0.80), pytest.approx(10e-6)))


def test_cutlass_moe_sets_up_every_expert_the_rank_holds(h100, cal_h100):
    """TensorRT-LLM's CUTLASS MoE on Hopper pays, per grouped-GEMM launch, moe_kernel_expert_s for each expert
    the rank holds, busy or not: with 0.1 us set, each expert GEMM of DeepSeek's block (256 experts) costs
    256 / 4 x 0.1 = 6.4 us more at EP 4 and 256 / 32 x 0.1 = 0.8 us at EP 32, whatever the tokens; the tables'
    own MoE (no family) has none. The bundled fit prices the H100 table's one-token rows with 64 and 256 experts
    per rank (kernels_hopper/floors.csv: 72.9 us at MoE TP 4 x EP 2, 111.0 us at TP 16 x EP 1) within 5%
    (before: 42.9 and 37.2 us)."""
    from dataclasses import replace

    from llm_codesign.measure.kernel_tables import predict
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import Precision

    m = ModelSpec("moe", hidden=7168, vocab=32000, groups=((Layer(NoMixer(), MoE(experts=256, top_k=8, expert_inter=2048)), 1),))
    base = replace(cal_h100, moe_kernel_expert_s=())
    setup = base.with_param("moe_kernel_expert_s.cutlass.fp8_block", 1e-7)
    assert base.moe_kernel_expert("cutlass", "fp8_block") == 0.0 and setup.moe_kernel_expert(None, "fp8_block") == 0.0

    def block(cal, ep, fam):
        ops = layer_ops(m, m.groups[0][0], 1.0, h100, cal, prec=Precision.of("fp8_block"), sh=Plan(tp=8, ep=ep, moe_tp=8 // min(ep, 8)),
                        b=Batch(dec_seqs=2.0, dec_ctx=100), prefix="x", parts=("ffn",), moe_kernel=fam)
        return {o.role: float(np.ravel(o.time)[0]) for o in ops}

    for ep, per_launch in ((4, 6.4e-6), (32, 0.8e-6)):
        a, b = block(base, ep, "cutlass"), block(setup, ep, "cutlass")
        for role in ("experts_gate_up", "experts_down"):
            assert b[role] - a[role] == pytest.approx(per_launch, rel=1e-4)
        assert block(setup, ep, None) == block(base, ep, None)
    rows = [{"table": "moe", "framework": "trtllm", "kernel_source": "moe_torch_flow_cutlass", "system": "h100_sxm", "moe_dtype": "fp8_block",
             "distribution": "balanced", "num_tokens": "1", "hidden_size": "7168", "inter_size": "2048", "topk": "8", "num_experts": "256",
             "moe_tp_size": tp, "moe_ep_size": ep, "latency_ms": "0.1"} for tp, ep in (("4", "2"), ("16", "1"))]  # a latency to read
    assert predict("moe", rows, lambda g: cal_h100)[0] == pytest.approx([0.0729, 0.1110], rel=0.05)


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_blackwell_block_fp8_experts_at_trtllm_gens_fp8_rates_with_fp32_scales_on_the_cuda_cores(b200, engine):
    """DeepSeek's block-FP8 experts on B200 run TRTLLM-Gen's DeepSeekFp8 grouped kernels (cost.ffns.MOE_RATES): priced
    at the per-tensor fp8 family's rates (the B200 MoE table's TRTLLM-Gen rows moe_eff is fitted against), not DeepGEMM's
    dense block-FP8 ones, keeping 1 / (1 + 16384 / (2 x 128 x 128)) = 2/3 of them (FP32 scales applied on the CUDA cores
    per 128-deep K block, SM100's 16,384 dense FP8 FLOPs per SM and clock), the up-projection's activations still
    quantised by a kernel of their own, the down-projection's written in FP8 by TRTLLM-Gen's activation kernel (no pass
    of their own). EP 8, 8,192 tokens of top-8 over 256 experts: 32 experts of 256 rows per rank, on TRTLLM-Gen's own grid
    of token tiles of 128 (8,192 x 8 / 32 = 2,048 per local expert, past block FP8's largest tile): two a CTA column."""
    from llm_codesign.cost import gemm
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ffns import MOE_RATES
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import Precision

    cal = calibration_for(b200)
    kept = 1.0 / (1.0 + 16384.0 / (2.0 * 128.0 * 128.0))
    assert kept == pytest.approx(2.0 / 3.0) and MOE_RATES["blackwell"]["fp8_block"] == ("fp8", pytest.approx(kept))
    m = ModelSpec("moe", hidden=7168, vocab=32000, groups=((Layer(NoMixer(), MoE(experts=256, top_k=8, expert_inter=2048)), 1),))
    prec = Precision.of("fp8_block")
    e = get_engine(engine)
    step = e.costs(cal).cal
    ops = {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, b200, step, prec=prec, sh=Plan(tp=8, ep=8, moe_tp=1),
                                        b=Batch(pf_tokens=8192.0, pf_seqs=1.0, pf_ctx=0.0), prefix="x", parts=("ffn",), engine=e)}
    a_b, w_b = prec.activation.bytes_per_value(), prec.weight.bytes_per_weight()
    def priced(n, k, eff, fused, kernel="fp8"):
        return gemm.gemm_time(256.0, n, k, b200, step, math="fp8", a_bytes=a_b, w_bytes=w_b, groups=32.0, distinct_groups=32.0,
                              eff_scale=eff, kernel=kernel, swap_ab=True, overhead_s=step.moe_overhead_s, fused_quant=fused, engine=e,
                              token_tile=128.0)

    for role, n, k, quant in (("experts_gate_up", 4096, 7168, False), ("experts_down", 7168, 2048, "epilogue")):
        t = float(priced(n, k, step.moe_eff * kept, quant)[0])
        assert float(np.ravel(ops[role].time)[0]) == pytest.approx(t, rel=1e-6)
        # the CUDA cores' share: the same tiles take 1.5x as long as at the fp8 family's own rate
        assert float(np.ravel(ops[role].t_compute)[0]) == pytest.approx(1.5 * float(priced(n, k, step.moe_eff, quant)[1]), rel=1e-5)
        assert t != pytest.approx(float(priced(n, k, step.moe_eff, quant, "fp8_block")[0]), rel=1e-3)  # not DeepGEMM's dense rates
    # the 1x128 quantisation of the up-projection's input, a kernel of its own: 8,192 tokens x 7,168 read in BF16 and
    # written in FP8 with their scales, at the HBM rate, one launch
    quant = 8192.0 * 7168 * (2.0 + a_b) / (b200.hbm_bandwidth_bytes_per_s * step.bw_eff) + step.kernel_overhead_s
    assert float(priced(4096, 7168, step.moe_eff * kept, False)[0]) - float(priced(4096, 7168, step.moe_eff * kept, True)[0]) == pytest.approx(quant, rel=1e-5)


def test_aiters_mxfp4_moe_runs_w4a4_and_quantises_its_own_inputs():
    """AMD's MXFP4 DeepSeek on MI355X: SGLang and ATOM run AITER's fused MoE at QuantType.per_1x32, whose SiLU
    experts take MXFP4 activations (FP4 math) that it quantises itself, before each stage
    (fused_dynamic_mxfp4_quant_moe_sort): ATOM's fused input-norm quantisation does not spare it, so both
    engines' expert GEMMs cost the same, the quantise passes included (BF16 in, MXFP4 out, one launch each): stage 1
    quantises each token once (T rows of h: its call takes topk=1, aiter/ops/quant.py:697-699@3c5f0ba), stage 2 the
    activation's T x 8 routed rows of expert_inter."""
    from llm_codesign.cost import gemm
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import Precision

    g = get_gpu("mi355x")
    cal = calibration_for(g)
    m = ModelSpec("moe", hidden=7168, vocab=32000, groups=((Layer(NoMixer(), MoE(experts=256, top_k=8, expert_inter=2048)), 1),))
    T = 16.0
    by = {e: {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, g, cal, prec=Precision.of("mxfp4"), sh=Plan(tp=1),
                                           b=Batch(dec_seqs=T, dec_ctx=100), prefix="x", parts=("ffn",), engine=get_engine(e))}
          for e in ("sglang", "atom")}
    for role in ("experts_gate_up", "experts_down"):
        assert by["sglang"][role].math == by["atom"][role].math == "fp4"
        assert float(by["atom"][role].time) == pytest.approx(float(by["sglang"][role].time), rel=1e-9)
    # each pass on top of its GEMM (uniform routing on MI355X: the GEMM over routed_load's groups): stage 1 reads T = 16
    # tokens of 7168 (not the 128 routed rows), stage 2 the 128 routed rows of 2048
    from llm_codesign.cost.ffns import routed_load
    active, top, _ = routed_load(256, 8, T, 1.0, 0.0)
    a_b, bw = 4.25 / 8, g.hbm_bandwidth_bytes_per_s * cal.bw_eff
    base = dict(math="fp4", a_bytes=a_b, w_bytes=a_b, kernel="fp4", swap_ab=True, engine=get_engine("atom"), fused_quant=True,
                overhead_s=cal.moe_kernel(None, "fp4")[1], eff_scale=cal.moe_kernel(None, "fp4")[0], groups=active, distinct_groups=active)
    # (stage 2's output at the rate of its atomic adds: cost.ffns.AITER_COMBINE_BPS, 2 x 8e12 x 0.85 / 1.9e12 = 7.16 bytes a value)
    from llm_codesign.cost.ffns import AITER_COMBINE_BPS
    combine = 2.0 * g.hbm_bandwidth_bytes_per_s * cal.bw_eff / AITER_COMBINE_BPS["cdna4"]
    for role, n, k, rows, c_b in (("experts_gate_up", 4096, 7168, T, 2.0), ("experts_down", 7168, 2048, T * 8, combine)):
        bare = float(gemm.gemm_time(top, n, k, g, cal, c_bytes=c_b, **base)[0])
        assert float(by["sglang"][role].time) - bare == pytest.approx(rows * k * (2 + a_b) / bw + cal.kernel_overhead_s, rel=1e-5)
    # the size of that pass at these 128 routed rows of the up-projection: 3.34 us, most of it the launch
    kw = dict(math="fp4", a_bytes=a_b, w_bytes=a_b, kernel="fp4", swap_ab=True, engine=get_engine("atom"),
              overhead_s=cal.moe_kernel(None, "fp4")[1], eff_scale=cal.moe_kernel(None, "fp4")[0])
    with_q = float(gemm.gemm_time(1.0, 4096, 7168, g, cal, groups=T * 8, fused_quant=False, **kw)[0])
    without = float(gemm.gemm_time(1.0, 4096, 7168, g, cal, groups=T * 8, fused_quant=True, **kw)[0])
    assert with_q - without == pytest.approx(T * 8 * 7168 * (2 + a_b) / (g.hbm_bandwidth_bytes_per_s * cal.bw_eff) + cal.kernel_overhead_s,
                                             rel=1e-5)


def _aiter_moe(activation="swiglu_clamped"):
    """gpt-oss-120b's MoE block (hidden 2880, 128 experts, top 4, width 2880) with its experts' activation."""
    from llm_codesign.spec.kinds import MoE

    return ModelSpec("moe", hidden=2880, vocab=32000,
                     groups=((Layer(NoMixer(), MoE(experts=128, top_k=4, expert_inter=2880, activation=activation)), 1),))


def _aiter_ops(m, engine, prec, T, gpu="mi355x", plan=None):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu

    g = get_gpu(gpu)
    return {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, g, calibration_for(g), prec=prec, sh=plan or Plan(tp=1),
                                         b=Batch(dec_seqs=np.asarray(T, float), dec_ctx=100), prefix="x", parts=("ffn",),
                                         engine=get_engine(engine) if engine else None)}


def test_aiter_swiglu_mxfp4_moe_switches_its_activations_at_256_tokens():
    """gpt-oss's MXFP4 experts on BF16 activations (W4A16) run AITER's clamped-SwiGLU MoE on MI355X, which quantises its
    activations from 256 tokens (aiter/fused_moe.py:789-795@e4048607): ATOM (gate/up de-interleaved, GateMode.SEPARATED)
    and the engine-less price (AITER's API default, SEPARATED: :487) to MXFP4, priced then as W4A4 exactly; SGLang
    (INTERLEAVE: moe_runner/aiter.py:226-244@0.5.23) to group-32 FP8, 1 + 1/32 bytes a value. Per step by its token count,
    an array of them at once. Hand-derived bytes of the up-projection, uniform routing: T x 4 rows of 2880 in,
    active x 5760 x 2880 weights at 4.25 bits, T x 4 x 5760 BF16 out, active = 128 (1 - (124/128)^T)."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision

    assert calibration_for(get_gpu("mi355x")).moe_routing_alpha == 0.0  # uniform routing: the bytes below
    m = _aiter_moe()
    w4a16, w4a4 = Precision.of("mxfp4", activation="bf16"), Precision.of("mxfp4", activation="mxfp4")

    def ops(engine, prec, T, gpu="mi355x"):
        return _aiter_ops(m, engine, prec, T, gpu)

    def up_bytes(T, a_b):
        active = 128 * (1 - (124 / 128) ** T)
        return T * 4 * 2880 * a_b + active * 5760 * 2880 * 4.25 / 8 + T * 4 * 5760 * 2

    roles = ("experts_gate_up", "experts_down")
    for engine, math, a_b in (("sglang", "fp8", 1 + 1 / 32), (None, "fp4", 4.25 / 8), ("atom", "fp4", 4.25 / 8)):
        lo, hi = ops(engine, w4a16, 255), ops(engine, w4a16, 256)
        assert (lo["experts_gate_up"].math, hi["experts_gate_up"].math) == ("bf16", math)
        assert float(lo["experts_gate_up"].bytes) == pytest.approx(up_bytes(255, 2.0), rel=1e-9)
        assert float(hi["experts_gate_up"].bytes) == pytest.approx(up_bytes(256, a_b), rel=1e-9)
    atom = ops("atom", w4a16, [255, 256, 1024])
    for T, i in ((256, 1), (1024, 2)):
        ref = ops("atom", w4a4, T)
        for r in roles:  # each step at the precision it runs, from the one array
            assert np.ravel(atom[r].time)[i] == pytest.approx(float(np.ravel(ref[r].time)[0]), rel=1e-12)
    # per element, the work and math too: 255 tokens' BF16 bytes and math, 256's MXFP4 ones (energy takes each peak)
    assert list(np.ravel(atom["experts_gate_up"].math)) == ["bf16", "fp4", "fp4"]
    assert np.ravel(atom["experts_gate_up"].bytes)[:2] == pytest.approx([up_bytes(255, 2.0), up_bytes(256, 4.25 / 8)], rel=1e-9)
    assert ops("atom", w4a16, 256)["experts_down"].math == "fp4"
    # no switch on vLLM's Triton MoE or on CDNA3 (gfx942 stays BF16: :792)
    assert ops("vllm", w4a16, 1024)["experts_gate_up"].math == "bf16"
    assert ops("sglang", w4a16, 1024, "mi300x")["experts_gate_up"].math == "bf16"


def test_token_tile_counts_every_assignment_as_the_ranks_own():
    """TRTLLM-Gen's token tile: the next power of two of tokens x top_k / local experts, within the launcher's tiles
    (cost.ffns.token_tile): 320 tokens of top-6 on 12 local experts (384 over EP 32) -> 160 -> 256, though the rank's
    own rows are 5 an expert; one token -> the least tile, 8; BF16 activations on 4-bit weights stop at 64, 8-bit
    weights at 128."""
    from llm_codesign.cost.ffns import token_tile

    assert float(token_tile(320.0, 6, 12.0, a_b=1.03125, w_b=0.53125)) == 256.0
    assert float(token_tile(64.0, 6, 12.0, a_b=1.03125, w_b=0.53125)) == 32.0
    assert float(token_tile(1.0, 6, 12.0, a_b=1.03125, w_b=0.53125)) == 8.0
    assert float(token_tile(320.0, 6, 12.0, a_b=2.0, w_b=0.53125)) == 64.0
    assert float(token_tile(320.0, 6, 12.0, a_b=1.03125, w_b=1.0)) == 128.0


def test_marlin_block_is_the_engines_block_size_loop():
    """Marlin's MoE block (cost.ffns.marlin_block): the first of 8, 16, 32, 48, 64 with tokens x top_k / local experts /
    block < 0.9, else 64 (vLLM's fused_marlin_moe, SGLang's the same). Kimi-K2's shape, 384 experts of top 8 on one rank:
    1,024 tokens -> 21.3 rows an expert (21.3 / 16 = 1.33, / 32 = 0.67) -> 32; 2,048 -> 42.7 (/ 32 = 1.33, / 48 = 0.89) -> 48;
    3,072 -> 64 rows (/ 48 = 1.33) -> 64 and 4,096 -> 85.3 -> 64 (the loop's end); one token -> 8; under EP 8 (48 local
    experts) 1,024 tokens -> 170.7 rows -> 64."""
    from llm_codesign.cost.ffns import marlin_block

    got = marlin_block(np.array([1.0, 1024.0, 2048.0, 3072.0, 4096.0]), 8, 384.0)
    assert got.tolist() == [8.0, 32.0, 48.0, 64.0, 64.0]
    assert float(marlin_block(1024.0, 8, 48.0)) == 64.0
    assert float(marlin_block(16.0, 16, 896.0)) == 8.0  # 0.29 rows an expert


def test_marlin_moe_computes_each_experts_rows_in_whole_blocks(h100):
    """The H100 per-engine MoE table's Marlin rows (Kimi-K2 INT4, 384 experts of top 8, h 7,168, inter 2,048, EP 1, TP 1,
    balanced) on Marlin's own grid (gemm._marlin_grid_time): every expert's rows padded to whole blocks of marlin_block's
    rows, the units (a block's rows x a 128 x 128 weight tile) spread evenly over the 132 SMs with split-K, iters =
    div_ceil(units, SMs). The up-projection (N 4,096, K 7,168 + k_half 64) at 3,072 tokens: 64 rows an expert, one 64-row
    block, 384 x 32 x ceil(7,232 / 128) = 57 = 700,416 units, ceil(700,416 / 132) = 5,307 iters, each 2 x 64 x 16,384 FLOPs
    at one SM's share of H100's 989.4 TFLOPS x the family's 0.29168: 5.091 ms. At 2,880 tokens (60 rows, the same block) the
    same; at 4,096 (85.3 rows) two blocks, 10,613 iters, 10.181 ms (the table: 7.36 -> 13.97 ms, SGLang, 1.90x); at 2,048
    (42.7 rows, blocks of 48) 48 / 64 of 3,072's (the same units)."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.measure.kernel_tables import MOE_PRECISION
    from llm_codesign.spec.kinds import MoE

    cal = calibration_for(h100)
    eff, _, _ = cal.moe_kernel("marlin", "w4a16")
    assert (cal.gemm_eff("w4a16"), cal.gemm_k_half("w4a16"), eff * 0.30) == pytest.approx((0.30, 64.0, 0.29168), rel=1e-6)
    m = ModelSpec("kernel", hidden=7168, vocab=1, groups=((Layer(NoMixer(), MoE(experts=384, top_k=8, expert_inter=2048)), 1),))

    def up(tokens):
        ops = layer_ops(m, m.groups[0][0], 1.0, h100, cal, prec=MOE_PRECISION["int4_wo"], sh=Plan(ep=1.0, moe_tp=1.0),
                        b=Batch(pf_tokens=tokens, pf_seqs=1.0), prefix="moe", moe_kernel="marlin")
        return float(next(o for o in ops if o.role == "experts_gate_up").t_compute)

    unit = 2 * 64 * 128 * 128 * 132 / (989.4e12 * 0.29168)
    assert up(3072.0) == pytest.approx(5307 * unit, rel=1e-5) and 5307 * unit == pytest.approx(5.091e-3, rel=1e-3)
    assert up(2880.0) == pytest.approx(5307 * unit, rel=1e-5)
    assert up(4096.0) == pytest.approx(10613 * unit, rel=1e-5) and 10613 * unit == pytest.approx(10.181e-3, rel=1e-3)
    assert up(2048.0) == pytest.approx(0.75 * 5307 * unit, rel=1e-5)


def test_hopper_int4_serving_decode_step_marlin_golden():
    """A Hopper INT4 serving answer that kfam's Marlin pricing moved (Kimi-K2.5 on H200, TP 8 EP 8, vLLM, one request:
    TPOT 9.25 -> 7.96 ms at kfam, TTFT 110.7 -> 125.1; 8.38 / 128.3 on Marlin's own grid; 8.41 / 129.1 since the re-fit
    14086fe: vLLM's host step 258.8 -> 293.2 us, host cost a sequence 19.8 -> 17.5 us, eager skew 2.03 -> 2.30 us; TTFT 133.3 at
    vdoc: vLLM's closed-loop wait 1.5 -> 2 decode steps, + 0.5 x 8.41 ms, docs/modelling-notes.md#vdoc-first-token; TTFT 123.7
    since the 2026-12-06 wait fixes 0d4c090 (one request alone has no step queued ahead of it: the arrival's phase only, 1 step,
    123.86) and re-fit 8ddcbce (vLLM's eager launch 5.91 -> 6.69 us, skew 3.79 -> 3.34 us: -0.16 ms)). The decode
    step's up-projection, by hand: one token of top 8 over EP 8 is 1 routed row on the rank, 1 expert read (work
    2 x 4,096 x 7,168 = 58,720,256 FLOPs; bytes 4,096 x 7,168 x 0.5625 (INT4 and its BF16 scale per 32) + the row's
    7,168 x 2 in and 4,096 x 2 out = 16,537,600). Memory: 16,537,600 / (4.8 TB/s x gemm_bw 0.73) = 4.7196 us. Compute on
    Marlin's grid: 8 rows a block (0.17 rows an expert), 1 block x 32 x ceil((7,168 + 64) / 128) = 1,824 units,
    ceil(1,824 / 132) = 14 iters of
    2 x 8 x 16,384 x 132 / (989.4 TFLOPS x 0.29168) = 0.11991 us: 1.6787 us. Blended at p = 2.47978, 4.7196 x (1 + (1.6787 /
    4.7196)^p)^(1/p) = 4.8630 us, plus the family's 14.2976 us a launch: 19.161 us, 60 layers."""
    import llm_codesign as lc
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.serve.aggregated import decode_step
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import precision_for
    from llm_codesign.spec.registry import get_model

    m, g = get_model("kimi-k2.5"), get_gpu("h200")
    costs = get_engine("vllm").costs(calibration_for(g))
    ops = decode_step(m, g, precision_for(m, None, None, None), Plan(tp=8, ep=8).broadcast(), costs=costs, b=np.asarray(1.0),
                      ctx=1536.0, k=np.asarray(0.0), spec=None)[2]
    up = next(o for o in ops if o.name == "layer1/moe/experts_gate_up")
    assert float(up.count) == 60.0 and [float(x) for x in up.work()] == pytest.approx([58_720_256.0, 16_537_600.0], rel=1e-9)
    mem, comp = 16_537_600 / (4.8e12 * 0.73), 14 * 2 * 8 * 16384 * 132 / (989.4e12 * 0.29168)
    assert [float(x) for x in up.split()] == pytest.approx([comp, mem], rel=1e-5)
    assert (mem, comp) == pytest.approx((4.7196e-6, 1.6787e-6), rel=1e-4)
    p = 2.47978
    assert float(up.time) == pytest.approx(mem * (1 + (comp / mem) ** p) ** (1 / p) + 14.2976e-6, rel=1e-5)
    assert float(up.time) == pytest.approx(19.161e-6, rel=1e-4)
    # the serving answer it sits in (regression figures: the step's other ops are not re-derived here)
    row = lc.estimate("kimi-k2.5", lc.Deployment(gpu=g, num_gpus=8, plan=Plan(tp=8, ep=8), backend="vllm",
                                                 precision=precision_for(m, None, None, None)),
                      lc.Workload(isl=1024, osl=1024, concurrency=1)).to_dict()
    assert (row["tpot_ms"], row["ttft_ms"]) == pytest.approx((8.41, 123.7), abs=0.05)


def test_triton_block_is_sglangs_default_block_m():
    """SGLang's Triton fused MoE on BF16 weights, no tuned config (get_default_config's unquantised branch): BLOCK_SIZE_M 16
    for a call of at most as many tokens as the rank's experts, else 64. 32 experts: 1 and 32 tokens -> 16, 33 -> 64;
    under EP 8 (4 local) 5 tokens -> 64."""
    from llm_codesign.cost.ffns import triton_block

    assert triton_block(np.array([1.0, 32.0, 33.0, 512.0]), 32.0).tolist() == [16.0, 16.0, 64.0, 64.0]
    assert float(triton_block(5.0, 4.0)) == 64.0


def test_sglang_triton_moe_computes_each_experts_rows_in_whole_blocks(h100):
    """SGLang's Triton fused MoE (BF16; gpt-oss's shape, 32 experts of top 4, h 2,880, inter 2,880, EP 1, TP 1, balanced):
    each expert's rows padded to whole blocks of triton_block's rows (moe_align_block_size), each block against the
    expert's whole weight slice. The up-projection (N 5,760, K 2,880) at 512 tokens: 64 rows an expert, one 64-row block,
    so 1 x 45 weight tiles of 128 x 32 experts = 1,440 CTAs, ceil(1,440 / 132) = 11 waves of (2,880 + k_half 77.2) K steps
    of 2 x 64 x 128 x 132 FLOPs at 989.4 TFLOPS x gemm_eff_bf16 0.815 x the family's share 0.2966: 26.73 us a wave,
    294.0 us; at 33 tokens (4.1 rows an expert, the same one block) the same; at 513 (64.1 rows) two blocks, 22 waves."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.measure.kernel_tables import MOE_PRECISION
    from llm_codesign.spec.kinds import MoE

    cal = calibration_for(h100)
    share = cal.moe_kernel("sglang_triton", "bf16")[0]
    assert (cal.gemm_eff("bf16"), cal.gemm_k_half("bf16"), share) == pytest.approx((0.815142, 77.1987, 0.296649), rel=1e-5)
    m = ModelSpec("kernel", hidden=2880, vocab=1, groups=((Layer(NoMixer(), MoE(experts=32, top_k=4, expert_inter=2880)), 1),))

    def up(tokens):
        ops = layer_ops(m, m.groups[0][0], 1.0, h100, cal, prec=MOE_PRECISION["bfloat16"], sh=Plan(ep=1.0, moe_tp=1.0),
                        b=Batch(pf_tokens=tokens, pf_seqs=1.0), prefix="moe", moe_kernel="sglang_triton")
        return float(next(o for o in ops if o.role == "experts_gate_up").t_compute)

    wave = (2880 + 77.1987) * 2 * 64 * 128 * 132 / (989.4e12 * 0.815142 * 0.296649)
    assert wave == pytest.approx(26.73e-6, rel=1e-3)
    assert up(512.0) == pytest.approx(11 * wave, rel=1e-5) and up(33.0) == pytest.approx(11 * wave, rel=1e-5)
    assert up(513.0) == pytest.approx(22 * wave, rel=1e-5)


def test_trtllm_gen_moe_block_on_its_own_tile_grid_and_quantises_the_tokens_once(b200):
    """The B200 MoE table's kernel (TensorRT-LLM's TRTLLM-Gen MoE, W4A8 MXFP4 x MXFP8), 320 tokens of top-6 over 384
    experts, EP 32, uniform routing: 384 (1 - (1 - 6/384)^320) / 32 = 11.92 experts read on the rank, 1,920 / 32 / 11.92
    = 5.03 rows each, computed on the kernel's own grid of token tiles of 256 (token_tile): each CTA 256 routed rows x
    128 weight rows over the whole of K, no split-K. The up-projection (N 6,144, K 7,168): 1 token tile x 48 weight tiles
    x 11.92 experts = 572.2 CTAs, ceil(572.2 / 148) = 4 waves of (7,168 + k_half 83.99) K steps, each 2 x 256 x 128 x 148
    FLOPs over B200's 4.5 PFLOPS x gemm_eff_fp8 0.636 x moe_eff 0.531 (its feed, (256 x 1 + 128 x 0.53125) / (2 x 256 x 128)
    = 0.0049 byte per FLOP, under the 1/128 shared memory gives at the FP8 rate): 185.1 us, though the rows' own work at
    that rate would take 3.5 us. Its input is the 320 tokens quantised to FP8 once before routing (320 x
    7,168 x (2 + 1) bytes at 8 TB/s x bw_eff 0.718 and one 3 us launch: 4.20 us); the down-projection's is written in FP8
    by the up-projection's epilogue (no pass)."""
    from llm_codesign.cost import gemm
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.measure.kernel_tables import MOE_PRECISION
    from llm_codesign.spec.kinds import MoE

    cal = calibration_for(b200)
    prec = MOE_PRECISION["w4a8_mxfp4_mxfp8"]
    a_b, w_b = prec.activation.bytes_per_value(), prec.weight.bytes_per_weight()
    m = ModelSpec("kernel", hidden=7168, vocab=1, groups=((Layer(NoMixer(), MoE(experts=384, top_k=6, expert_inter=3072)), 1),))
    ops = {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, b200, cal, prec=prec, sh=Plan(ep=32.0, moe_tp=1.0),
                                        b=Batch(pf_tokens=320.0, pf_seqs=1.0), prefix="moe")}
    active = 384 * (1 - (1 - 6 / 384) ** 320) / 32
    rows = 1920 / 32 / active
    assert active == pytest.approx(11.92, abs=5e-3) and rows == pytest.approx(5.03, abs=5e-3)

    def priced(n, k, fused):
        return gemm.gemm_time(rows, n, k, b200, cal, math="fp8", a_bytes=a_b, w_bytes=w_b, groups=active, distinct_groups=active,
                              eff_scale=cal.moe_eff, kernel="fp8", swap_ab=True, overhead_s=cal.moe_overhead_s, fused_quant=fused,
                              quant_rows=320.0, token_tile=256.0)

    assert (a_b, w_b, cal.gemm_eff("fp8"), cal.moe_eff, cal.gemm_k_half("fp8")) == (1.0, 0.53125, 0.635998, 0.531155, 83.9947)
    grid = 4 * (7168 + 83.9947) * 2 * 256 * 128 * 148 / (4.5e15 * 0.635998 * 0.531155)
    assert grid == pytest.approx(185.08e-6, rel=1e-4)
    assert float(priced(6144, 7168, False)[1]) == pytest.approx(grid, rel=1e-5)
    assert float(ops["experts_gate_up"].t_compute) == pytest.approx(grid, rel=1e-5)
    assert float(ops["experts_gate_up"].flops) == pytest.approx(2 * rows * active * 6144 * 7168, rel=1e-6)  # the rows' own work
    quant = 320.0 * 7168 * (2.0 + a_b) / (b200.hbm_bandwidth_bytes_per_s * cal.bw_eff) + cal.kernel_overhead_s
    assert (b200.hbm_bandwidth_bytes_per_s, cal.bw_eff, cal.kernel_overhead_s) == (8e12, 0.718012, 3e-6)
    assert quant == pytest.approx(4.198e-6, rel=1e-4)
    assert float(ops["experts_gate_up"].time) == pytest.approx(float(priced(6144, 7168, False)[0]), rel=1e-6)
    assert float(priced(6144, 7168, False)[0]) - float(priced(6144, 7168, "epilogue")[0]) == pytest.approx(quant, rel=1e-4)
    assert float(ops["experts_down"].time) == pytest.approx(float(priced(7168, 3072, "epilogue")[0]), rel=1e-6)



def test_trtllm_gen_moe_tile_is_the_fastest_the_autotuner_offers_so_more_tokens_never_price_faster(b200):
    """DeepSeek-R1 (256 experts, top 8, block FP8) under MoE TP8 on B200, TensorRT-LLM: every expert local, so the
    heuristic tile (computeSelectedTileN) is the next power of two of T x 8 / 256: 8 at 256 tokens, 16 at 257. Uniform
    routing puts 8.0024 rows on the busiest expert at 256 (routed_load), so tile 8 takes two tiles an expert and tile 16
    one. The up-projection (N 2 x 2,048 / 8 = 512, K 7,168): 4 weight tiles x 255.92 experts = 1,023.7 CTAs, 7 waves of
    (7,168 + k_half 83.99) K steps; a K step of tile t the longer of its MMA, 2 x t x 128 x 148 FLOPs at 4.5 PFLOPS x
    gemm_eff_fp8 0.636 x moe_eff 0.531 x 2/3 (MOE_RATES), and its feed, 148 x (t x 1.03125 + 128 x 1.000244) bytes at
    1/64 byte per BF16 FLOP of 2.25 PFLOPS: tile 8 0.574 ns (feed) x 2 tiles = 58.25 us, tile 16 0.608 ns (feed) = 30.89
    us, tile 32 1.196 ns (MMA) = 60.73 us. The heuristic tile alone priced 256 tokens at 58.25 us and 257 at 30.89: the
    autotuner's window (the heuristic tile and the next two rungs) takes tile 16 at both."""
    from llm_codesign.cost import gemm
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.registry import get_model

    m, e = get_model("deepseek-r1"), get_engine("trtllm")
    cal = e.costs(calibration_for(b200)).cal
    layer = next(lay for lay, _ in m.groups if hasattr(lay.ffn, "top_k"))
    assert (cal.gemm_eff("fp8"), cal.moe_eff, cal.gemm_k_half("fp8"), b200.smem_bytes_per_bf16_flop) == (0.635998, 0.531155, 83.9947, 0.015625)
    assert routed_load(256, 8, 256.0, 1, 0.0)[1] == pytest.approx(8.0024, abs=1e-4)

    def step_time(t, feed_bound):
        per = (148 * (t * 1.03125 + 128 * 1.000244140625) / (0.015625 * 2.25e15) if feed_bound
               else 2 * t * 128 * 148 / (4.5e15 * 0.635998 * 0.531155 * 2 / 3))
        return 7 * (7168 + 83.9947) * per

    by_tile = {8: 2 * step_time(8, True), 16: step_time(16, True), 32: step_time(32, False)}
    assert by_tile == pytest.approx({8: 58.248e-6, 16: 30.887e-6, 32: 60.731e-6}, rel=1e-4)
    for tokens in (256.0, 257.0):
        ops = {o.role: o for o in layer_ops(m, layer, 1.0, b200, cal, prec=m.default_precision, sh=Plan(tp=8, ep=1, moe_tp=8),
                                            b=Batch(dec_seqs=tokens, dec_ctx=1536.0), prefix="x", parts=("ffn",), engine=e)}
        assert float(np.ravel(ops["experts_gate_up"].t_compute)[0]) == pytest.approx(by_tile[16], rel=1e-5)
    # the heuristic tile alone (not tuned), as main priced it: tile 8's two tiles an expert at 256 tokens
    top, active = routed_load(256, 8, 256.0, 1, 0.0)[1], routed_load(256, 8, 256.0, 1, 0.0)[0]
    alone = gemm.gemm_time(top, 512.0, 7168.0, b200, cal, math="fp8", a_bytes=1.03125, w_bytes=1.000244140625, groups=active,
                           eff_scale=cal.moe_eff * 2 / 3, kernel="fp8", swap_ab=True, token_tile=8.0)
    assert float(alone[1]) == pytest.approx(by_tile[8], rel=1e-5)


def _gen_ops(gpu, cal, plan, tokens, engine=None):
    """The B200 MoE table's block (W4A8 MXFP4 x MXFP8, 384 experts of top 6, h 7,168, inter 3,072) at `tokens` a rank,
    its operators by role."""
    from llm_codesign.measure.kernel_tables import MOE_PRECISION
    from llm_codesign.spec.kinds import MoE

    prec = MOE_PRECISION["w4a8_mxfp4_mxfp8"]
    m = ModelSpec("kernel", hidden=7168, vocab=1, groups=((Layer(NoMixer(), MoE(experts=384, top_k=6, expert_inter=3072)), 1),))
    return {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, gpu, cal, prec=prec, sh=plan,
                                         b=Batch(pf_tokens=tokens, pf_seqs=1.0), prefix="moe", engine=engine)}


def test_a_skewed_trtllm_gen_launch_fills_its_waves_once(b200):
    """A skewed load (moe_routing_alpha 1.2) on TRTLLM-Gen's token-tile grid: the busiest expert and the rest are one launch,
    so their CTAs share its waves. 320 tokens of top 6 over 384 experts at EP 32: the busiest rank reads 8.665 experts,
    its busiest one 40.37 rows and the other 7.665 10.23 each (routed_load), each in one token tile of 256 (token_tile:
    320 x 6 / 12 = 160 -> 256). The up-projection's 48 weight tiles (6,144 / 128): (1 + 7.665) x 48 = 415.9 CTAs, 3 waves
    of 148, not the 1 + ceil(7.665 x 48 / 148) = 4 waves of the hot expert and the rest wave-quantised apart:
    3 x 7,251.99 x 2 x 256 x 128 x 148 / (4.5e15 x 0.635998 x 0.531155) = 138.8 us."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ffns import routed_load

    cal = calibration_for(b200).with_param("moe_routing_alpha", 1.2)
    active, top, on_rank = routed_load(384, 6, 320.0, 32.0, 1.2)
    assert (active, top, on_rank) == pytest.approx((8.6648, 40.371, 118.802), abs=1e-3)
    ops = _gen_ops(b200, cal, Plan(ep=32.0, moe_tp=1.0), 320.0)
    one_grid = 3 * 7251.9947 * 2 * 256 * 128 * 148 / (4.5e15 * 0.635998 * 0.531155)
    assert one_grid == pytest.approx(138.81e-6, rel=1e-4)
    assert float(ops["experts_gate_up"].t_compute) == pytest.approx(one_grid, rel=1e-5)
    # its work is still the rank's rows': 118.8 x 6,144 x 7,168 x 2 FLOPs
    assert float(ops["experts_gate_up"].flops) == pytest.approx(2 * 118.802 * 6144 * 7168, rel=1e-4)


def test_trtllm_gens_quantise_reads_the_ranks_own_tokens_before_a_quantised_gather(b200):
    """Under attention DP TensorRT-LLM gathers the tokens already quantised (Engine.gathers_quantised; B200's 8-GPU NVLink:
    the AllGather + ReduceScatter exchange), so the one 1x128 quantise pass before TRTLLM-Gen's block-FP8 FC1 (a kernel of
    its own in every engine, gemm.quantise_kernel) reads the rank's own 40 tokens, not the 8 ranks' 320: 40 x 7,168 x
    (2 + 1.03125) bytes at 8 TB/s x bw_eff 0.718 and one 3 us launch = 3.151 us. DeepSeek's MoE (256 experts of top 8,
    inter 2,048) at EP 8: 320 x 8 / 32 local = 80 -> a tile of 128, 32.0 experts of 10.0 rows."""
    from llm_codesign.cost import gemm
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ffns import routed_load
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.kinds import MoE
    from llm_codesign.spec.precision import Precision

    e = get_engine("trtllm")
    cal = e.costs(calibration_for(b200)).cal
    assert e.gathers_quantised and e.moe_exchange(b200, moe_tp=1.0) == "gather"
    m = ModelSpec("moe", hidden=7168, vocab=32000, groups=((Layer(NoMixer(), MoE(experts=256, top_k=8, expert_inter=2048)), 1),))
    prec = Precision.of("fp8_block")
    ops = {o.role: o for o in layer_ops(m, m.groups[0][0], 1.0, b200, cal, prec=prec, sh=Plan(tp=1, adp=8, ep=8, moe_tp=1),
                                        b=Batch(pf_tokens=40.0, pf_seqs=1.0, pf_ctx=0.0), prefix="x", parts=("ffn",), engine=e)}
    active, top, _ = routed_load(256, 8, 320.0, 8.0, 0.0)  # every rank's 320 tokens gathered

    def priced(fused, rows):
        return float(gemm.gemm_time(top, 4096, 7168, b200, cal, math="fp8", a_bytes=1.03125, w_bytes=1.000244140625, groups=active,
                                    distinct_groups=active, eff_scale=cal.moe_eff * 2.0 / 3.0, kernel="fp8", swap_ab=True,
                                    overhead_s=cal.moe_overhead_s, fused_quant=fused, engine=e, quant_rows=rows, token_tile=128.0)[0])
    quant = 40.0 * 7168 * 3.03125 / (8e12 * 0.718012) + 3e-6
    assert quant == pytest.approx(3.1513e-6, rel=1e-4)
    assert float(ops["experts_gate_up"].time) == pytest.approx(priced(False, 40.0), rel=1e-6)
    assert priced(False, 40.0) - priced("epilogue", None) == pytest.approx(quant, rel=1e-4)


def test_trtllm_gens_tile_counts_the_tokens_an_all_to_all_brings(b200):
    """Under an all-to-all (the kernel tables' exchange, engine-less) the rank's call receives its routed rows' tokens:
    8 ranks of 40 tokens, top 6 of 384 at EP 8, 320 x 6 / 8 = 240 rows, 40 tokens, so computeSelectedTileN's tile is
    40 x 6 / 48 local experts = 5 -> 8 (not 240 x 6 / 48 = 30 -> 32, the rows counted as tokens); the rows (5.03 an expert
    over 47.69 read) on that grid: ceil(5.03 / 8) x 48 x 47.69 = 2,289 CTAs, 16 waves of 148 at tile 8's feed rate
    (tile_feed: 16 / 76 of the FP8 peak, under the MMA's share), and the quantise pass reads the rank's own 40 tokens."""
    from llm_codesign.cost import gemm
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ffns import routed_load, token_tile

    cal = calibration_for(b200)
    active, top, on_rank = routed_load(384, 6, 320.0, 8.0, 0.0)
    assert (active, top, on_rank) == pytest.approx((47.689, 5.0326, 240.0), abs=1e-3)
    assert float(token_tile(on_rank / 6, 6, 48.0, a_b=1.0, w_b=0.53125)) == 8.0
    ops = _gen_ops(b200, cal, Plan(tp=1, adp=8, ep=8, moe_tp=1), 40.0)
    narrow = 16 * 7251.9947 * 2 * 8 * 128 * 148 / (4.5e15 * 16 / 76)
    assert float(ops["experts_gate_up"].t_compute) == pytest.approx(narrow, rel=1e-5)
    assert narrow == pytest.approx(37.12e-6, rel=1e-3)

    def priced(fused, rows, tile):
        return float(gemm.gemm_time(top, 6144, 7168, b200, cal, math="fp8", a_bytes=1.0, w_bytes=0.53125, groups=active,
                                    distinct_groups=active, eff_scale=cal.moe_eff, kernel="fp8", swap_ab=True,
                                    overhead_s=cal.moe_overhead_s, fused_quant=fused, quant_rows=rows, token_tile=tile)[0])
    assert float(ops["experts_gate_up"].time) == pytest.approx(priced(False, 40.0, 8.0), rel=1e-6)
    assert priced(False, 40.0, 8.0) < priced(False, 40.0, 32.0)


def test_narrow_token_tiles_are_fed_by_shared_memory():
    """A token tile of 8 rows on TRTLLM-Gen's grid reads the same 128-row weight tile a K step as a tile of 256 (gemm.
    tile_feed): (8 x 1 + 128 x 0.53125) / (2 x 8 x 128) = 0.0371 byte per FLOP against the 1/128 B200's shared memory
    gives at the FP8 rate: a K step at 16 / 76 = 0.211 of the peak, longer than the MMA at gemm_eff_fp8's 0.636 of it (a
    bandwidth the kernel's share does not scale). 5 rows an expert over 12 experts, N 6,144, K 7,168, 576 CTAs in 4 waves:
    4 x 7,251.99 x 2 x 8 x 128 x 148 / (4.5e15 x 16 / 76) = 9.28 us, 0.094 of the 256-row tile's 4 x 7,251.99 x 2 x 256 x
    128 x 148 / (4.5e15 x 0.635998) = 98.31 us (its MMA's, fed at full rate) for 1/32 of its MMA work."""
    from llm_codesign.cost import gemm
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.hardware import get_gpu

    g = get_gpu("b200")
    cal = calibration_for(g)

    def t(tile):
        return float(gemm.gemm_time(5.0, 6144, 7168, g, cal, math="fp8", a_bytes=1.0, w_bytes=0.53125, groups=12.0, kernel="fp8",
                                     swap_ab=True, token_tile=tile)[1])
    assert t(8.0) == pytest.approx(4 * 7251.9947 * 2 * 8 * 128 * 148 / (4.5e15 * 16 / 76), rel=1e-5)
    assert t(8.0) == pytest.approx(9.281e-6, rel=1e-4)
    assert t(256.0) == pytest.approx(4 * 7251.9947 * 2 * 256 * 128 * 148 / (4.5e15 * 0.635998), rel=1e-5)
    assert t(256.0) == pytest.approx(98.308e-6, rel=1e-4)


def test_aiter_bf16_path_below_its_bound_costs_no_more_than_the_quantised_one():
    """AITER set 256 where its two paths cost about the same and runs BF16 below it because it is no slower there: each
    expert GEMM below the bound is priced at min(the BF16 price, the quantised one at the same tokens), so a step below
    the bound never costs more than one at it (the BF16 price x the DeepSeek-fitted moe_eff put 255 tokens above 256).
    The work and math stay BF16's."""
    from llm_codesign.spec.precision import Precision

    m = _aiter_moe()
    w4a16, w4a4 = Precision.of("mxfp4", activation="bf16"), Precision.of("mxfp4", activation="mxfp4")
    T = np.array([1.0, 64.0, 128.0, 200.0, 255.0, 256.0, 300.0, 512.0])
    for engine in ("atom", "sglang"):
        got = _aiter_ops(m, engine, w4a16, T)
        hi = _aiter_ops(m, engine, w4a4 if engine == "atom" else Precision.of("mxfp4", activation="bf16"), T)
        for r in ("experts_gate_up", "experts_down"):
            t = np.ravel(got[r].time)
            assert np.all(np.diff(t) >= 0), (engine, r, t)  # non-decreasing in the step's tokens, across 255 -> 256
            if engine == "atom":
                assert np.all(t[:5] <= np.ravel(hi[r].time)[:5] * (1 + 1e-12))
        assert list(np.ravel(got["experts_gate_up"].math)[:5]) == ["bf16"] * 5
    # the 255-token up-projection was priced compute-bound above 256's; now at most 256's (ATOM)
    atom = np.ravel(_aiter_ops(m, "atom", w4a16, [255.0, 256.0])["experts_gate_up"].time)
    assert atom[0] <= atom[1]


def test_aiter_switch_counts_every_dp_ranks_tokens_under_moris_all_to_all():
    """ATOM's fused MoE takes MoRI's receive buffer, every attention-DP rank's rows (graph_bs x dp in a uniform decode:
    atom/model_ops/fused_moe/modular_kernel.py:369-411@ffdf3bb5), so AITER's M is T x adp: at 8 ranks of 40 tokens, M =
    320 >= 256 runs MXFP4, though each EP rank's routed rows are 320 x 4 / 8 = 160."""
    from llm_codesign.spec.precision import Precision

    m = _aiter_moe()
    plan = Plan(tp=1, adp=8, ep=8)
    w4a16 = Precision.of("mxfp4", activation="bf16")
    assert _aiter_ops(m, "atom", w4a16, 40.0, plan=plan)["experts_gate_up"].math == "fp4"
    assert _aiter_ops(m, "atom", w4a16, 31.0, plan=plan)["experts_gate_up"].math == "bf16"  # M = 248


def test_aiter_silu_mxfp4_moe_runs_fp4_activations_at_every_size():
    """A SiLU MoE (DeepSeek's) with MXFP4 weights on BF16 activations: AITER's per-1x32 path quantises to MXFP4 at every M
    (aiter/fused_moe.py:796-797@e4048607), so 8 tokens are priced as W4A4 exactly, on SGLang as on ATOM."""
    from llm_codesign.spec.precision import Precision

    m = _aiter_moe("silu")
    for engine in ("sglang", "atom"):
        got = _aiter_ops(m, engine, Precision.of("mxfp4", activation="bf16"), 8.0)
        ref = _aiter_ops(m, engine, Precision.of("mxfp4", activation="mxfp4"), 8.0)
        assert got["experts_gate_up"].math == "fp4"
        assert float(got["experts_down"].time) == pytest.approx(float(ref["experts_down"].time), rel=1e-12)


def test_gpt_oss_config_reads_its_clamped_swiglu():
    from llm_codesign.spec.registry import get_model

    assert {layer.ffn.activation for layer, _ in get_model("gpt-oss-120b").groups} == {"swiglu_clamped"}
    assert {layer.ffn.activation for layer, _ in get_model("deepseek-r1").groups if hasattr(layer.ffn, "activation")} == {"silu"}


def test_sglangs_mxfp4_moe_under_ep_on_hopper_reads_and_runs_bf16_experts():
    """gpt-oss-120b's MoE (128 experts of top 4, h 2,880, inter 2,880) under SGLang on H100: at EP 8 its Triton MoE
    runs the BF16 weights it upcast at load (spec.engines.base.MOE_UPCAST), so a decode step of 4,096 tokens reads
    all 16 of the rank's experts at 2 B a weight: up-projection 16 x 5,760 x 2,880 x 2 = 530,841,600 B and the
    2,048 routed rows' (4,096 x 4 / 8) input and output, 2,048 x (2,880 + 5,760) x 2 = 35,389,440 B; down-projection
    16 x 2,880 x 2,880 x 2 = 265,420,800 + 2,048 x 5,760 x 2 = 23,592,960 B. MXFP4's 4.25 bits (141,004,800 B of
    up-projection weights) only on triton_kernels at EP 1. The ops are the BF16 checkpoint's, the H100 table's pair."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    m, g = get_model("gpt-oss-120b"), get_gpu("h100")
    layer = next(x for x, _ in m.groups if getattr(x.ffn, "experts", 0))
    cal, e = calibration_for(g), get_engine("sglang")

    def ops(prec, ep):
        return {o.role: o for o in layer_ops(m, layer, 1.0, g, cal, prec=Precision.of(prec), sh=Plan(tp=8, ep=ep, moe_tp=8 / ep),
                                             b=Batch(dec_seqs=4096.0, dec_ctx=1000), prefix="x", parts=("ffn",), engine=e)}

    mx, bf = ops("mxfp4", 8.0), ops("bf16", 8.0)
    assert float(mx["experts_gate_up"].bytes) == 530_841_600 + 35_389_440
    assert float(mx["experts_down"].bytes) == 265_420_800 + 23_592_960
    for r in ("experts_gate_up", "experts_down"):
        assert mx[r].math == "bf16"
        assert float(mx[r].time) == float(bf[r].time) and float(mx[r].bytes) == float(bf[r].bytes)
    # EP 1 (MoE-TP 8): triton_kernels on the MXFP4 weights, 16 experts' worth of weights over 128 x 1/8 slices
    one = ops("mxfp4", 1.0)
    assert float(one["experts_gate_up"].bytes) == pytest.approx(128 * 720 * 2880 * 4.25 / 8 + 16384 * (2880 + 720) * 2.0)


def _expert_gemm_calls(m, engine, prec, T, gpu, plan=None):
    """{role: (args, kwargs, op)} of each ffns._expert_gemm call _aiter_ops makes (the expert GEMMs as priced)."""
    from unittest import mock

    from llm_codesign.cost import ffns

    calls, real = {}, ffns._expert_gemm

    def spy(label, *a, **kw):
        op = real(label, *a, **kw)
        calls[op.role] = ((label, *a), kw, op)
        return op
    with mock.patch.object(ffns, "_expert_gemm", spy):
        _aiter_ops(m, engine, prec, T, gpu, plan)
    return calls


def _reprice(call, **change):
    """The time of an _expert_gemm call re-priced with some of its arguments changed."""
    from llm_codesign.cost import ffns

    args, kw, _ = call
    return float(ffns._expert_gemm(*args, **{**kw, **change}).time)


def test_trtllm_runs_gpt_oss_experts_on_blackwell_as_w4a8_mxfp4_mxfp8():
    """gpt-oss's MXFP4 experts on a BF16-activation checkpoint run TRTLLM-Gen's MoE on B200 in TensorRT-LLM, vLLM, SGLang and
    the engine-less price, on the activations the engine gives it: TensorRT-LLM quantises them to MXFP8 (W4A8_MXFP4_MXFP8:
    get_mxfp4_quant_algo on SM >= 100, tensorrt_llm/_torch/model_config.py@008e0af8), FP8 math, E4M3 values and an E8M0
    scale per 32, 1 + 1/32 bytes a value, as SGLang's flashinfer_mxfp4 default does (mxfp8_quantize in Mxfp4MoEMethod.apply,
    layers/quantization/mxfp4.py:768-769@0.5.9); vLLM's default SM100_FI_MXFP4_BF16 keeps BF16 (mxfp4.py get_mxfp4_backend
    @007d5005), as does the engine-less price.
    Hand-derived bytes of the up-projection at T tokens, uniform routing: T x 4 rows of 2880 in at a_b, active x 5760 x
    2880 weights at 4.25 bits, T x 4 x 5760 BF16 out, active = 128 (1 - (124/128)^T). TensorRT-LLM's MoE op quantises the
    hidden states itself (a pass of its own: T x 2880 x (2 + 1.03125) bytes at 8 TB/s x bw_eff 0.718 and one 3 us launch,
    15.5 us at 8,192 tokens), so its price is the engine-less price of the same experts on MXFP8 activations exactly."""
    from dataclasses import replace

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ffns import _MXFP8
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision

    b200 = get_gpu("b200")
    cal = calibration_for(b200)
    assert cal.moe_routing_alpha == 0.0  # uniform routing: the bytes below
    m = _aiter_moe()
    w4a16 = Precision.of("mxfp4", activation="bf16")
    w4a8 = replace(w4a16, activation=_MXFP8)
    assert _MXFP8.bytes_per_value() == 1 + 1 / 32

    def up_bytes(T, a_b):
        active = 128 * (1 - (124 / 128) ** T)
        return T * 4 * 2880 * a_b + active * 5760 * 2880 * 4.25 / 8 + T * 4 * 5760 * 2

    for T in (64.0, 8192.0):
        trt, vllm, tables, sgl = (_aiter_ops(m, e, w4a16, T, "b200") for e in ("trtllm", "vllm", None, "sglang"))
        assert (trt["experts_gate_up"].math, vllm["experts_gate_up"].math, tables["experts_gate_up"].math) == ("fp8", "bf16", "bf16")
        assert (sgl["experts_gate_up"].math, sgl["experts_down"].math) == ("fp8", "fp8")
        assert float(sgl["experts_gate_up"].bytes) == pytest.approx(up_bytes(T, 1 + 1 / 32), rel=1e-9)
        assert trt["experts_down"].math == "fp8"
        assert float(trt["experts_gate_up"].bytes) == pytest.approx(up_bytes(T, 1 + 1 / 32), rel=1e-9)
        assert float(vllm["experts_gate_up"].bytes) == pytest.approx(up_bytes(T, 2.0), rel=1e-9)
        ref = _aiter_ops(m, None, w4a8, T, "b200")  # the tables' price of W4A8 experts: their quantise pass counted
        for r in ("experts_gate_up", "experts_down"):
            assert float(trt[r].time) == pytest.approx(float(ref[r].time), rel=1e-9)
    quant = 8192 * 2880 * (2 + 1 + 1 / 32) / (8e12 * 0.718012) + 3e-6
    assert (b200.hbm_bandwidth_bytes_per_s, cal.bw_eff, cal.kernel_overhead_s) == (8e12, 0.718012, 3e-6)
    assert quant == pytest.approx(15.45e-6, rel=1e-3)
    # the pass in the price, once: the up-projection re-priced with its pass reading 0 rows is cheaper by the 8,192 tokens'
    # read and write, 12.45 us (its launch stays); the down-projection's input comes quantised from FC1's epilogue, so
    # re-pricing it with a pass over 8,192 rows moves nothing
    calls = _expert_gemm_calls(m, "trtllm", w4a16, 8192.0, "b200")
    up, down = calls["experts_gate_up"], calls["experts_down"]
    assert float(up[1]["quant_rows"]) == 8192.0 and down[1]["quant_rows"] is None
    assert float(up[2].time) - _reprice(up, quant_rows=0.0) == pytest.approx(quant - 3e-6, rel=1e-5)  # float32 prices
    assert quant - 3e-6 == pytest.approx(12.45e-6, rel=1e-3)
    assert _reprice(down, quant_rows=8192.0) == float(down[2].time)
    # at 8,192 tokens, compute-bound: the FP8 rate is twice the BF16 one, less the quantise pass and the tiles (0.63x)
    trt, vllm = (_aiter_ops(m, e, w4a16, 8192.0, "b200") for e in ("trtllm", "vllm"))
    assert float(trt["experts_gate_up"].time) < 0.7 * float(vllm["experts_gate_up"].time)


def test_sm120_trtllm_runs_gpt_oss_experts_on_cutlass_mxfp8():
    """On SM120 (RTX Pro 6000) TensorRT-LLM's AUTO MoE backend for gpt-oss is CUTLASS (resolve_moe_backend: TRTLLM only for
    SM 100-119) and get_mxfp4_quant_algo still gives W4A8_MXFP4_MXFP8 (SM >= 100, every backend but TRITON;
    tensorrt_llm/_torch/model_config.py@008e0af8): CutlassFusedMoE.forward_chunk quantises x with mxfp8_quantize before its
    op. So the experts run FP8 math on MXFP8 (1 + 1/32 bytes a value), the one quantise pass reads the 8,192 tokens before
    routing, the permuted rows are MXFP8 and the activation, a kernel of its own on SM120 (no FC1-fused MoE there), writes
    FC2's input quantised: (8,192 x 4 rows) x 2,880 x (2 x 2 + 1.03125) bytes, no pass before FC2. vLLM keeps BF16, and
    SGLang, whose SM120 path is not read."""
    from llm_codesign.spec.precision import Precision

    m, w4a16 = _aiter_moe(), Precision.of("mxfp4", activation="bf16")
    trt, vllm, sgl = (_aiter_ops(m, e, w4a16, 8192.0, "rtx-pro-6000") for e in ("trtllm", "vllm", "sglang"))
    assert (trt["experts_gate_up"].math, trt["experts_down"].math, vllm["experts_gate_up"].math) == ("fp8", "fp8", "bf16")
    # SGLang's MXFP8 is read on SM100 only (its FlashInfer kernel is picked per SM): BF16 on SM120 (Engine.mxfp8_moe_families)
    assert sgl["experts_gate_up"].math == "bf16"
    assert float(trt["experts_act"].bytes) == pytest.approx(8192 * 4 * 2880 * (4 + 1 + 1 / 32), rel=1e-9)
    calls = _expert_gemm_calls(m, "trtllm", w4a16, 8192.0, "rtx-pro-6000")
    assert float(calls["experts_gate_up"][1]["quant_rows"]) == 8192.0
    assert calls["experts_down"][1]["epilogue_quant"] is True
    assert _reprice(calls["experts_down"], quant_rows=8192.0) == float(calls["experts_down"][2].time)


def test_sm120_trtllm_gpt_oss_answer_names_its_mxfp8_experts():
    import json

    from conftest import cli

    code, text, _ = cli("estimate", "gpt-oss-120b", "--gpu", "rtx-pro-6000", "--backend", "trtllm", "--json")
    assert code == 0 and json.loads(text)["precision"] == "W:mxfp4 attn-W:bf16 A:bf16 MoE-A:mxfp8 KV:bf16"


def test_the_attention_dp_exchange_moves_the_moe_ops_activation_format():
    """Under attention DP TensorRT-LLM quantises gpt-oss's hidden states to MXFP8 before its exchange (TRTLLMGenFusedMoE
    quantize_input, "prior to post-communication"), so the AllGather moves 1 + 1/32 bytes a value, not BF16's 2: 8 ranks
    x 64 tokens x 2,880 x 1.03125 = 1,520,640 bytes (2,949,120 in BF16). SGLang quantises after its gather
    (Mxfp4MoEMethod.apply on the dispatched tokens): BF16. The reduce-scatter returns BF16 outputs in both."""
    from llm_codesign.spec.precision import Precision

    m, w4a16, plan = _aiter_moe(), Precision.of("mxfp4", activation="bf16"), Plan(tp=1, adp=8, ep=8)
    trt, sgl = (_aiter_ops(m, e, w4a16, 64.0, "b200", plan) for e in ("trtllm", "sglang"))
    assert float(trt["all_gather"].bytes) == 512 * 2880 * (1 + 1 / 32) == 1_520_640
    assert float(sgl["all_gather"].bytes) == 512 * 2880 * 2 == 2_949_120
    assert float(trt["reduce_scatter"].bytes) == 512 * 2880 * 2
