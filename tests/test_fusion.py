"""What an engine's captured step fuses that the kernel tables' rows run apart (Engine.fusions, spec/engines/):
the activation quantisation before an FP8/FP4 GEMM and the residual add + RMSNorm after an all-reduce,
each priced by hand from cost.kernels and the calibration."""
import numpy as np
import pytest

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.errors import InputError
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


@pytest.fixture
def cal(b200):
    return calibration_for(b200)


def _fp8(cal, gpu, engine=None, m=64, n=8192, k=8192):
    return float(gemm.gemm_time(m, n, k, gpu, cal, math="fp8", a_bytes=1.0, w_bytes=1.0, engine=engine and get_engine(engine))[0])


def test_quantised_gemm_in_a_step_pays_one_launch(b200, cal):
    table, sglang, trtllm = _fp8(cal, b200), _fp8(cal, b200, "sglang"), _fp8(cal, b200, "trtllm")
    # the table row's dynamic scale launches go in every engine's step: its fixed cost becomes a BF16 GEMM's
    assert cal.gemm_overhead_fp8_s > cal.gemm_overhead_bf16_s
    assert table - sglang == pytest.approx(cal.gemm_overhead_fp8_s - cal.gemm_overhead_bf16_s, rel=1e-4)
    # SGLang quantises in a kernel of its own (one BF16 read + one FP8 write of A, one launch); TensorRT-LLM fuses it
    quant = 64 * 8192 * 3.0 / (b200.hbm_bandwidth_bytes_per_s * cal.bw_eff) + cal.kernel_overhead_s
    assert sglang - trtllm == pytest.approx(quant, rel=1e-4)
    # a BF16 GEMM is priced the same in and out of a step
    bf16 = [float(gemm.gemm_time(64, 8192, 8192, b200, cal, math="bf16", a_bytes=2.0, w_bytes=2.0, engine=e)[0])
            for e in (None, get_engine("vllm"))]
    assert bf16[0] == pytest.approx(bf16[1], rel=1e-6)


def _elementwise(model, gpu, cal, plan, engine):
    ops = forward_ops(model, gpu, cal, Precision.of("fp8"), plan.broadcast(), b=Batch(dec_seqs=16, dec_ctx=1024), engine=get_engine(engine))
    return next(float(o.time) for o in ops if o.role == "elementwise")


def test_norms_fold_into_the_all_reduce_where_the_engine_fuses_them(b200, cal):
    llama = get_model("llama-3.1-70b")
    tp8, tp1 = Plan(tp=8), Plan(tp=1)
    # TP8: TensorRT-LLM runs the two add + RMSNorm kernels inside its all-reduces; SGLang (Llama is not
    # among the architectures it fuses for) launches them
    assert _elementwise(llama, b200, cal, tp8, "sglang") - _elementwise(llama, b200, cal, tp8, "trtllm") == pytest.approx(2 * cal.kernel_overhead_s,
                                                                                                                    rel=1e-6)
    # one GPU: no all-reduce to fuse into
    assert _elementwise(llama, b200, cal, tp1, "sglang") == pytest.approx(_elementwise(llama, b200, cal, tp1, "trtllm"), rel=1e-9)
    # SGLang fuses for DeepSeek-V3's architecture, without attention DP only
    assert get_model("deepseek-r1").architecture == "DeepseekV3ForCausalLM"
    small = dict(nbytes=64 * 7168 * 2.0, n=8, family="blackwell")
    trt, sgl, vllm = (get_engine(e) for e in ("trtllm", "sglang", "vllm"))
    assert sgl.ar_norm_fused("DeepseekV3ForCausalLM", adp=np.array([1, 8]), **small).tolist() == [True, False]
    assert sgl.ar_norm_fused("LlamaForCausalLM", adp=1, **small).tolist() is False
    # the fusion lives in the engine's own all-reduce kernel: not where NCCL runs it (past TensorRT-LLM's
    # 8 MB workspace at TP8, vLLM's 8 MiB; PCIe cards) nor on GPUs without the SM90/SM100 kernels
    assert trt.ar_norm_fused("LlamaForCausalLM", adp=1, nbytes=np.array([1e6, 9e6]), n=8, family="blackwell").tolist() == [True, False]
    assert trt.ar_norm_fused("LlamaForCausalLM", adp=1, nbytes=1e6, n=4, family="ada").tolist() is False
    assert vllm.ar_norm_fused("LlamaForCausalLM", adp=1, nbytes=1e6, n=8, family="cdna3").tolist() is False
    assert vllm.ar_norm_fused("LlamaForCausalLM", adp=1, nbytes=4e5, n=8, family="hopper").tolist() is True
    # the kernel tables (no engine) fuse nothing: TP8's two norm kernels launch outside the all-reduce
    assert _elementwise(llama, b200, cal, tp8, "sglang") == pytest.approx(
        next(float(o.time) for o in forward_ops(llama, b200, cal, Precision.of("fp8"), tp8.broadcast(), b=Batch(dec_seqs=16, dec_ctx=1024))
             if o.role == "elementwise"), rel=1e-9)


def test_vllm_fuses_its_all_reduce_and_norm_as_its_0_19_default_does(b200, cal):
    vllm = get_engine("vllm")
    # FlashInfer's fusion pass takes inputs up to 64 / 32 / 1 MiB at 2 / 4 / 8 SM100 GPUs (0.5 MiB at 8 on SM90), none
    # at 6 GPUs, and none with data parallelism (config/vllm.py enable_allreduce_rms_fusion@0.19.0)
    mib = 2.0**20
    fused = vllm.ar_norm_fused("LlamaForCausalLM", adp=1, nbytes=np.array([1.0, 1.01, 32.0, 33.0, 64.0, 1.0]) * mib,
                               n=np.array([8, 8, 4, 4, 2, 6]), family="blackwell")
    assert fused.tolist() == [True, False, True, False, True, False]
    assert vllm.ar_norm_fused("LlamaForCausalLM", adp=np.array([1, 2]), nbytes=1e5, n=4, family="blackwell").tolist() == [True, False]
    assert vllm.ar_norm_fused("LlamaForCausalLM", adp=1, nbytes=0.6 * mib, n=8, family="hopper").tolist() is False
    # TP8 Llama-3.1-70B: 64 tokens of 8,192 BF16 values fit the 1 MiB, 65 do not, where its two norm kernels return
    llama, tp8 = get_model("llama-3.1-70b"), Plan(tp=8).broadcast()

    def norms(b):
        ops = forward_ops(llama, b200, cal, Precision.of("fp8"), tp8, b=Batch(dec_seqs=b, dec_ctx=1024), engine=vllm)
        return next(o for o in ops if o.role == "elementwise").kernels

    assert (norms(64), norms(65)) == (cal.elementwise_kernels_per_layer - 2, cal.elementwise_kernels_per_layer)


def test_a_build_without_a_fusion_is_one_engine_under_the_same_name(b200, cal):
    vllm = get_engine("vllm")
    old = vllm.without("ar_norm")
    assert old is vllm.without("ar_norm") and old is not vllm and old.name == "vllm"
    assert old.fusions == ("act_quant", "pdl", "fp8_bmm", "routing") and vllm.without("hop_b") is vllm  # a fusion it never made: itself
    assert old.ar_norm_fused("LlamaForCausalLM", adp=1, nbytes=1e5, n=8, family="blackwell").tolist() is False
    # TP8 Llama-3.1-70B, 16 sequences: the two add + RMSNorm kernels launch again, 80 layers a step
    llama, tp8 = get_model("llama-3.1-70b"), Plan(tp=8)
    ops = {e: sum(float(o.total_time) for o in forward_ops(llama, b200, cal, Precision.of("fp8"), tp8.broadcast(),
                                                           b=Batch(dec_seqs=16, dec_ctx=1024), engine=e) if o.role == "elementwise")
           for e in (vllm, old)}
    assert ops[old] - ops[vllm] == pytest.approx(80 * 2 * cal.kernel_overhead_s, rel=1e-6)


def test_attention_output_and_block_scaled_quantisation(b200, cal):
    # vLLM does not fuse the attention output's quantisation by default (fuse_attn_quant off): its output
    # projection pays the quantise kernel TensorRT-LLM's attention op saves; both fuse the others
    llama = get_model("llama-3.1-70b")
    ops = {e: {o.role: float(o.time) for o in forward_ops(llama, b200, cal, Precision.of("fp8"), Plan(tp=8).broadcast(),
                                                                          b=Batch(dec_seqs=64, dec_ctx=1024), engine=get_engine(e))}
           for e in ("trtllm", "vllm")}
    # o: 64 tokens x K = 64 heads x 128 / TP 8
    quant = 64 * 1024 * 3.0 / (b200.hbm_bandwidth_bytes_per_s * cal.bw_eff) + cal.kernel_overhead_s
    assert ops["vllm"]["o"] - ops["trtllm"]["o"] == pytest.approx(quant, rel=1e-4)
    assert ops["vllm"]["qkv"] == pytest.approx(ops["trtllm"]["qkv"], rel=1e-9)
    # block-scaled FP8 is quantised per 1x128 group by its own kernel in every engine
    blk = [float(gemm.gemm_time(64, 8192, 8192, b200, cal, math="fp8", a_bytes=1.0, w_bytes=1.0, kernel="fp8_block", engine=get_engine(e))[0])
           for e in ("trtllm", "sglang")]
    assert blk[0] == pytest.approx(blk[1], rel=1e-9)
    trt = get_engine("trtllm")
    assert gemm.quantise_kernel(trt, 1.0, kernel="fp8_block") and not gemm.quantise_kernel(trt, 1.0) and gemm.quantise_kernel(None, 1.0)


def test_architecture_read_from_the_config():
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 2,
           "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 2048, "vocab_size": 1000}
    assert from_hf_config(cfg).architecture == "Qwen3MoeForCausalLM"
    assert from_hf_config({**cfg, "architectures": []}).architecture == ""
    with pytest.raises(InputError, match="config.architectures"):
        from_hf_config({**cfg, "architectures": "oops"})


def test_a_build_without_pdl_overlaps_no_kernel_boundary(h200):
    """Engine.without("pdl"): TensorRT-LLM before 1.2 without TRTLLM_ENABLE_PDL=1 (the best-perf page's H200
    min-latency run). Today's build saves 0.7 of pdl_credit_s (0.25 us) = 0.175 us at each launch of a Hopper step;
    the older build saves nothing, so the same decode step costs 0.175 us x its launches more."""
    from llm_codesign.cost.ops import launches, step_time
    from llm_codesign.serve.aggregated import kernels_time, pdl_per_launch

    trt = get_engine("trtllm")
    old = trt.without("pdl")
    assert old.fusions == ("act_quant", "attn_out", "ar_norm", "rope_decode", "fp8_bmm", "routing", "mla_meta") and old.name == "trtllm" and old is trt.without("pdl")
    assert (trt.pdl_share("hopper"), old.pdl_share("hopper"), old.pdl_share("blackwell")) == (0.7, 0.0, 0.0)
    cal = calibration_for(h200)
    assert cal.pdl_credit_s == 0.25e-6
    new_c, old_c = trt.costs(cal), old.costs(cal)
    assert pdl_per_launch(h200, new_c) == pytest.approx(0.175e-6, rel=1e-12) and pdl_per_launch(h200, old_c) == 0.0
    # one decode step of DeepSeek-R1 FP8 at TP 8, one sequence of 2k context: the old build pays every boundary
    m = get_model("deepseek-r1")
    ops = forward_ops(m, h200, cal.in_step("trtllm"), m.default_precision, Plan(tp=8), engine=trt, sample=True,
                      b=Batch(dec_seqs=1.0, dec_ctx=2048.0))
    n = float(np.ravel(launches(ops))[0])
    assert n > 61 * 15  # ~20 launches in each of the 61 layers
    assert float(np.ravel(kernels_time(ops, h200, old_c))[0]) == pytest.approx(float(np.ravel(step_time(ops))[0]), rel=1e-12)
    gap = float(np.ravel(kernels_time(ops, h200, old_c) - kernels_time(ops, h200, new_c))[0])
    # every launch but FlashMLA's combine, a plain <<<>>> after each of the 61 layers' decode calls (Op.no_pdl)
    assert float(np.ravel(launches(ops, pdl=True))[0]) == n - 61
    assert gap == pytest.approx(0.175e-6 * (n - 61), rel=1e-9)


def test_a_blackwell_step_without_pdl_costs_the_credit_at_each_launch(b200, cal):
    """The B200 runs on TensorRT-LLM before 1.2 (measure.campaigns.trtllm_build): 0.7 x pdl_credit_s (0.25 us) = 0.175 us
    a launch more than today's build, over every launch of a DeepSeek-R1 FP8 decode step at TP 8 with 8 sequences."""
    from llm_codesign.cost.ops import launches
    from llm_codesign.serve.aggregated import kernels_time, pdl_per_launch

    trt = get_engine("trtllm")
    old = trt.without("pdl")
    assert cal.pdl_credit_s == 0.25e-6 and trt.pdl_share("blackwell") == 0.7 and old.pdl_share("blackwell") == 0.0
    new_c, old_c = trt.costs(cal), old.costs(cal)
    assert pdl_per_launch(b200, new_c) == pytest.approx(0.175e-6, rel=1e-12) and pdl_per_launch(b200, old_c) == 0.0
    m = get_model("deepseek-r1")
    ops = forward_ops(m, b200, cal.in_step("trtllm"), m.default_precision, Plan(tp=8), engine=trt, sample=True,
                      b=Batch(dec_seqs=8.0, dec_ctx=2048.0))
    n = float(np.ravel(launches(ops))[0])
    gap = float(np.ravel(kernels_time(ops, b200, old_c) - kernels_time(ops, b200, new_c))[0])
    assert gap == pytest.approx(0.175e-6 * n, rel=1e-9)


def test_an_offline_run_on_a_build_without_pdl_keeps_trtllm_benchs_limits():
    """A perf-overview row of TensorRT-LLM v0.17 is priced without PDL (its build) and still at trtllm-bench's own
    batch and token limits (validate._offline_best read them only for the TRTLLM object itself, so a build from
    Engine.without lost them: 4650 -> 4582 tok/s/GPU on this A100 row, where PDL saves nothing). On Ampere, with no
    PDL share, the two builds price the row alike. In BF16, as the overview's A100 rows ran: TensorRT-LLM has no FP8 GEMM
    on Ampere (validate lists such a row unmodeled, tests/test_engine_runs.py)."""
    from llm_codesign.measure.validate import predict_serving

    row = {"source": "trtllm_perf_overview_v0_17_total.csv:10 (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md; v0.17 (x)",
           "model": "llama-3.1-8b", "gpu": "a100", "num_gpus": "1", "backend": "trtllm", "weight_dtype": "bf16", "kv_dtype": "bf16",
           "isl": "128", "osl": "2048", "concurrency": "", "tp": "1", "pp": "1", "ep": "1", "moe_tp": "1", "attention_dp": "1",
           "output_tok_s_per_gpu": "1"}
    (old,), _ = predict_serving([row])
    (new,), _ = predict_serving([{**row, "source": "a run of today's build"}])
    assert old["output_tok_s_per_gpu"] == new["output_tok_s_per_gpu"]


def test_sglang_0_5_2_on_rocm_dequantises_the_mla_products_each_step():
    """SGLang 0.5.2 on ROCm (no FP8 bmm) casts and scales its per-tensor FP8 W_UK and W_UV to BF16 at every decode step:
    DeepSeek-R1 at TP 8 on MI355X holds 128 / 8 = 16 heads, 16 x (128 + 128) x 512 = 2,097,152 weights, each read as FP8
    and written as BF16 (3 B), then read and written as BF16 (4 B): 14,680,064 B in 4 launches per layer, at 8 TB/s x
    bw_eff 0.85 and kernel_overhead_s 3 us, 2.1588 + 12 = 14.1588 us. Today's build (fp8_bmm) pays none; a step with no
    decode tokens none; the kernel tables' rows (no engine) none."""
    from llm_codesign.spec.hardware import get_gpu

    mi355x = get_gpu("mi355x")
    cal = calibration_for(mi355x).in_step("sglang")
    assert (mi355x.hbm_bandwidth_bytes_per_s, cal.bw_eff, cal.kernel_overhead_s) == (8e12, 0.85, 3e-6)
    m, sglang = get_model("deepseek-r1"), get_engine("sglang")

    def dequant(engine, b=None):
        b = Batch(dec_seqs=4.0, dec_ctx=1500.0) if b is None else b
        ops = forward_ops(m, mi355x, cal, m.default_precision, Plan(tp=8), engine=engine, sample=True, b=b)
        return [o for o in ops if str(o.name).endswith("mla_bmm_dequant")]

    (op,) = dequant(sglang.without("fp8_bmm"))
    assert float(np.ravel(op.work[1])[0]) == 14_680_064.0 and op.kernels == 4.0
    assert float(np.ravel(op.time)[0]) == pytest.approx(14_680_064 / (8e12 * 0.85) + 4 * 3e-6, rel=1e-12)
    assert dequant(sglang) == [] and dequant(None) == []
    (pf,) = dequant(sglang.without("fp8_bmm"), Batch(pf_tokens=1024.0, pf_seqs=1.0))
    assert float(np.ravel(pf.time)[0]) == 0.0


def test_sglang_on_cdna3_dequantises_o_x_w_uv_each_step():
    """On gfx942 today's SGLang runs q x W_UK on its FP8 Triton kernel but still casts and scales W_UV (AITER's FP8 batched
    GEMM is gfx95 only; forward_mla.py:317-343, 585-600@0.5.12): DeepSeek-R1 at TP 8 on MI300X, 16 heads x 128 x 512 =
    1,048,576 weights x (1 + 2 + 2 + 2) B = 7,340,032 B in 2 launches a layer, at 5.3 TB/s x 0.85 and 3 us a launch:
    1.62928 + 6 = 7.62928 us. MI355X (cdna4) pays none; a build without fp8_bmm pays both products on either; another
    engine on MI300X (ATOM, its fusions) none."""
    from llm_codesign.spec.hardware import get_gpu

    m = get_model("deepseek-r1")
    sglang = get_engine("sglang")

    def dequant(gpu_name, engine):
        gpu = get_gpu(gpu_name)
        cal = calibration_for(gpu).in_step(engine.name)
        ops = forward_ops(m, gpu, cal, m.default_precision, Plan(tp=8), engine=engine, sample=True,
                          b=Batch(dec_seqs=4.0, dec_ctx=1500.0))
        return [o for o in ops if str(o.name).endswith("mla_bmm_dequant")]

    gpu, cal = get_gpu("mi300x"), calibration_for(get_gpu("mi300x")).in_step("sglang")
    assert (gpu.family, gpu.hbm_bandwidth_bytes_per_s, cal.bw_eff, cal.kernel_overhead_s) == ("cdna3", 5.3e12, 0.85, 3e-6)
    (op,) = dequant("mi300x", sglang)
    assert float(np.ravel(op.work[1])[0]) == 7_340_032.0 and op.kernels == 2.0
    assert float(np.ravel(op.time)[0]) == pytest.approx(7_340_032 / (5.3e12 * 0.85) + 2 * 3e-6, rel=1e-12)
    assert dequant("mi355x", sglang) == [] and dequant("mi300x", get_engine("atom")) == []
    (both,) = dequant("mi300x", sglang.without("fp8_bmm"))
    assert float(np.ravel(both.work[1])[0]) == 14_680_064.0 and both.kernels == 4.0
