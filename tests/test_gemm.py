"""A GEMM's time (cost.gemm): tile and wave quantisation, the roofline it never beats, the kernel
families (W4A16, DeepGEMM), the activation's quantisation pass and the live mask."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu


def test_gemm_intensity_golden():
    # BF16 GEMM M=2048, N=8192, K=512: 2MNK / (2 (MK + KN + MN)) = 390.1 FLOP/byte (output counted)
    f, b = gemm.gemm_flops_bytes(2048, 8192, 512, a_bytes=2.0, w_bytes=2.0, c_bytes=2.0)
    assert f == 2 * 2048 * 8192 * 512
    assert b == 2 * (2048 * 512 + 512 * 8192 + 2048 * 8192)
    assert f / b == pytest.approx(390.1, abs=0.1)


def test_gemm_never_beats_roofline(h100, cal_h100):
    m, n, k = np.meshgrid([1, 16, 128, 1000, 4096], [512, 4096, 28672], [256, 4096, 8192], indexing="ij")
    t, tc, tm = gemm.gemm_time(m, n, k, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    f, b = gemm.gemm_flops_bytes(m, n, k, a_bytes=2.0, w_bytes=2.0)
    floor = np.maximum(f / h100.peak("bf16"), b / h100.hbm_bandwidth_bytes_per_s)
    assert np.all(t >= floor)


def test_tile_and_wave_quantisation_show(h100, cal_h100):
    # M=128, N=132*128 fills exactly one wave of 128x128 tiles on 132 SMs; one more column needs
    # another (partial) wave whatever the tile shape
    n = 132 * 128
    _, c0, _ = gemm.gemm_time(128, n, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    _, c1, _ = gemm.gemm_time(128, n + 1, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    assert c1 / c0 > 1.2
    # a few-token GEMM pads M to a whole tile, unless A and B swap and the tokens ride on narrow N tiles
    _, pad, _ = gemm.gemm_time(8, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    _, swapped, _ = gemm.gemm_time(8, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    assert swapped < pad
    # small K is less efficient per FLOP than large K at the same M, N
    ts, *_ = gemm.gemm_time(4096, 4096, 128, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    tl, *_ = gemm.gemm_time(4096, 4096, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    assert ts / 128 > tl / 8192


def test_fp8_faster_than_bf16_when_compute_bound(h100, cal_h100):
    # kernels/gemm.csv (H100, TensorRT-LLM): for GEMMs of >= 4096^3/4 MACs the median BF16/FP8
    # latency ratio is 1.38 and the best FP8/BF16 throughput ratio 1.8
    tb, *_ = gemm.gemm_time(8192, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    tf, *_ = gemm.gemm_time(8192, 8192, 8192, h100, cal_h100, math="fp8", a_bytes=1.0, w_bytes=1.0)
    assert 1.2 < tb / tf < 2.0


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 8192), n=st.integers(1, 30000), k=st.integers(1, 30000), scale=st.floats(1.0, 4.0))
def test_a_gemm_is_never_slower_with_more_bandwidth(m, n, k, scale):
    from dataclasses import replace

    g = get_gpu("h200")
    cal = calibration_for(g)
    fast = replace(g, hbm_bandwidth_bytes_per_s=g.hbm_bandwidth_bytes_per_s * scale)
    t1, *_ = gemm.gemm_time(m, n, k, g, cal, math="bf16", a_bytes=2.0, w_bytes=2.0)
    t2, *_ = gemm.gemm_time(m, n, k, fast, cal, math="bf16", a_bytes=2.0, w_bytes=2.0)
    assert t2 <= t1 + 1e-15


def test_quantised_activation_pays_its_quantisation_pass(b200):
    cal = calibration_for(b200)
    m, n, k = 8192, 128, 8192
    t8 = float(gemm.gemm_time(m, n, k, b200, cal, math="fp8", a_bytes=1.0, w_bytes=1.0)[0])
    # the BF16 input is read once and written as FP8 before the GEMM: 3 bytes per input value
    quant = m * k * 3.0 / (b200.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    assert t8 >= quant
    # without that pass, reading 1-byte activations would be cheaper than reading 2-byte ones
    t_bf16_in = float(gemm.gemm_time(m, n, k, b200, cal, math="fp8", a_bytes=2.0, w_bytes=1.0)[0])
    assert t8 > t_bf16_in


def test_w4a16_is_its_own_kernel_family():
    """4-bit weights on BF16 math run mixed-input kernels (Marlin): INT4 everywhere, MXFP4/NVFP4 where the
    GPU has no FP4 math; on Blackwell MXFP4 x BF16 runs tcgen05 kernels, priced as BF16. A one-token
    INT4 GEMM on H100 streams its weights at Marlin's measured share of HBM (0.73, documented, not
    fitted) plus the family's fixed cost: by hand, [1, 8192] x [8192, 8192] with 0.5 + 2/32 bytes per
    weight (one BF16 scale per 32) reads 8192 * 8192 * 0.5625 + 2 * 8192 * 2 bytes."""
    from llm_codesign.cost.gemm import gemm_kernel, gemm_time

    assert gemm_kernel("bf16", "int4", fp4_math=True) == "w4a16"
    assert gemm_kernel("bf16", "mxfp4", fp4_math=False) == "w4a16"
    assert gemm_kernel("bf16", "mxfp4", fp4_math=True) == "bf16"
    assert gemm_kernel("bf16", "bf16") == "bf16" and gemm_kernel("fp8", "fp8_block") == "fp8_block"
    g = get_gpu("h100")
    cal = calibration_for(g)
    assert (cal.gemm_eff_w4a16, cal.gemm_bw_eff_w4a16) == (0.30, 0.73)
    nbytes = 8192 * 8192 * 0.5625 + 2 * 8192 * 2
    t, tc, tm = gemm_time(1, 8192, 8192, g, cal, math="bf16", a_bytes=2.0, w_bytes=0.5625, kernel="w4a16")
    assert float(tm) == pytest.approx(nbytes / (3.35e12 * 0.73), rel=1e-5)
    # at one token the 16-row tiles' math at Marlin's 30% of peak nears the weight stream (tile
    # quantisation): the kernel then reaches ~55% of HBM, where Marlin's MoE measured 57% at M = 1
    share = nbytes / (float(t) - cal.gemm_overhead_w4a16_s) / 3.35e12
    assert 0.5 < share < 0.65
    # the same GEMM as a BF16 kernel reading 4-bit weights (what it was priced as before) is faster
    assert float(gemm_time(1, 8192, 8192, g, cal, math="bf16", a_bytes=2.0, w_bytes=0.5625, kernel="bf16")[0]) < 0.9 * float(t)


def test_deepgemm_is_the_block_fp8_kernel_sglang_and_vllm_run_on_hopper():
    """SGLang and vLLM run DeepGEMM for 128x128-scaled FP8 on Hopper, TensorRT-LLM its own (the kernel
    tables' fp8_block); the DeepGEMM family's fit reproduces the README's H800 rows it was fitted on
    and its grouped MoE GEMMs it was not (benchmarks/fit_deepgemm.py): one of each, within 15%."""
    import csv

    from llm_codesign.cost.gemm import gemm_time
    from llm_codesign.spec.precision import DTYPES

    sgl = get_engine("sglang")
    assert sgl.gemm_kernel("hopper", "fp8_block") == "fp8_deepgemm"
    assert get_engine("vllm").gemm_kernel("hopper", "fp8_block") == "fp8_deepgemm"
    assert get_engine("trtllm").gemm_kernel("hopper", "fp8_block") == "fp8_block"
    assert sgl.gemm_kernel("blackwell", "fp8_block") == "fp8_block"
    path = "src/llm_codesign/data/measurements/kernels_deepgemm/gemm.csv"
    rows = {(r["library"].split(" ")[1], r["groups"], r["m"], r["n"], r["k"]): float(r["tflops"]) for r in csv.DictReader(open(path))}
    g = get_gpu("h100")  # H800: H100 SXM's 132 SMs, FP8 peak and HBM
    cal = calibration_for(g)
    ab, wb = DTYPES["fp8_block"].bytes_per_value(), DTYPES["fp8_block"].bytes_per_weight()
    quant = lambda m, k: m * k * (2.0 + ab) / (g.hbm_bandwidth_bytes_per_s * cal.bw_eff) + cal.kernel_overhead_s  # noqa: E731
    m, n, k = 4096, 7168, 2048
    t = float(gemm_time(m, n, k, g, cal, math="fp8", a_bytes=ab, w_bytes=wb, kernel="fp8_deepgemm")[0]) - quant(m, k)
    assert 2 * m * n * k / t / 1e12 == pytest.approx(rows["fp8_gemm_nt", "1", "4096", "7168", "2048"], rel=0.15)  # 1168 TFLOPS
    m, n, k, groups = 4096, 4096, 7168, 8.0  # contiguous layout, 8 experts of 4096 rows
    t = float(gemm_time(m, n, k, g, cal, math="fp8", a_bytes=ab, w_bytes=wb, kernel="fp8_deepgemm", groups=groups,
                        eff_scale=cal.moe_eff_of("fp8_deepgemm"), overhead_s=cal.moe_overhead_s, swap_ab=True)[0]) - quant(m * groups, k)
    assert 2 * m * n * k * groups / t / 1e12 == pytest.approx(rows["grouped", "8", "4096", "4096", "7168"], rel=0.15)  # 1346 TFLOPS


def test_cutlass_scaled_mm_is_the_per_tensor_fp8_kernel_sglang_and_vllm_run_on_hopper():
    """SGLang (sgl_kernel fp8_scaled_mm) and vLLM (cutlass_scaled_mm) run CUTLASS's per-tensor FP8 GEMM on
    Hopper, TensorRT-LLM its own FP8 linear (the kernel tables' fp8); SGLang's 3,000 rows of the H100 per-engine
    table are priced as that family (12.3% median APE; 25.0% at TensorRT-LLM's, whose floor is twice theirs),
    vLLM's out of sample, with its per-token quantise kernel (gemm.vllm_token_quant, its time per token fitted on its
    rows: 11.0%; 17.4% without, 28.7% before CUTLASS's own values)."""
    from llm_codesign.measure.kernel_tables import predict, read_csv
    from llm_codesign.measure.stats import error_stats

    for name in ("sglang", "vllm"):
        assert get_engine(name).gemm_kernel("hopper", "fp8") == "fp8_cutlass"
        assert get_engine(name).gemm_kernel("blackwell", "fp8") == "fp8"  # no per-engine rows there: the tables' kernel
    assert get_engine("trtllm").gemm_kernel("hopper", "fp8") == "fp8"
    rows = [r for r in read_csv("hopper/gemm")[1] if r["gemm_dtype"] == "fp8"]
    for source, median, label in (("sglang_sgl_kernel_fp8_scaled_mm", 12.3, "h100 sglang fp8 fp8_cutlass"),
                                  ("CutlassFP8ScaledMMLinearKernel", 11.0, "h100 vllm fp8 fp8_cutlass")):
        sub = [r for r in rows if r["kernel_source"] == source]
        pred, lab = predict("gemm", sub, calibration_for)
        assert set(lab) == {label}
        assert error_stats(pred, np.array([float(r["latency_ms"]) for r in sub]))["median_ape"] == pytest.approx(median, abs=0.1)
    # one small GEMM of both tables (m 10, n = k = 2048): SGLang's row 6.0 us, TensorRT-LLM's 14.0 us
    g = get_gpu("h100_sxm")
    cal = calibration_for(g)
    t = {k: float(gemm.gemm_time(10, 2048, 2048, g, cal, math="fp8", a_bytes=1.0, w_bytes=1.0, kernel=k)[0]) for k in ("fp8_cutlass", "fp8")}
    assert t["fp8_cutlass"] == pytest.approx(7.9e-6, rel=0.02) and t["fp8"] == pytest.approx(14.3e-6, rel=0.02)


def test_a_gemm_row_with_no_work_leaves_the_others_as_they_are(h100, cal_h100):
    # the live mask is skipped where every element is live: a row of zero tokens among them changes nothing else
    m = np.array([1.0, 16.0, 300.0, 4096.0])
    alone = gemm.gemm_time(m, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    mixed = gemm.gemm_time(np.append(m, 0.0), 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    for a, b in zip(alone, mixed, strict=True):
        np.testing.assert_array_equal(b[:4], a)
        assert b[4] == 0.0


def test_gemm_tiles_of_a_height_not_a_power_of_two_are_priced_by_m_itself(h100, cal_h100):
    """A GPU file's own tiles (96 rows here) leave the whole-row table: ceil(M / 96) from M, as before."""
    from dataclasses import replace

    gpu = replace(h100, tiles=((96, 128, 1), (128, 256, 1)))
    m = np.arange(1.0, 40 * 30 * 6 + 1.0).reshape(40, 30, 6)
    n = np.where(np.arange(40)[:, None, None] % 2, 4096.0, 16384.0)  # widths where either tile wins somewhere
    kw = dict(math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    t = gemm.gemm_time(m, n, 4096.0, gpu, cal_h100, **kw)[0]
    for p, b, q in ((0, 0, 0), (0, 15, 5), (39, 29, 5)):
        assert t[p, b, q] == gemm.gemm_time(m[p, b, q], n[p, 0, 0], 4096.0, gpu, cal_h100, **kw)[0]
    # the compute part is the faster of the two tiles, each priced on a GPU that has it alone
    one = [gemm.gemm_time(m, n, 4096.0, replace(h100, tiles=(tile,)), cal_h100, **kw)[1] for tile in gpu.tiles]
    assert np.array_equal(gemm.gemm_time(m, n, 4096.0, gpu, cal_h100, **kw)[1], np.minimum(*one))


def test_an_mxfp4_gemm_on_mi355x_runs_at_cdna4s_mxfp4_rate():
    # M = N = K = 8192, W4A4 MXFP4 (4.25 bits a value) as the kernel tables price it (no engine: its own quantise pass)
    g = get_gpu("mi355x")
    cal = calibration_for(g)
    assert g.peak("fp4") == 2 * g.peak("fp8") == 10.066e15  # CDNA4's MXFP4 matrix rate, twice FP8's
    assert (cal.gemm_eff("fp4"), cal.gemm_k_half("fp4"), cal.gemm_overhead("fp4"), cal.gemm_blend_p) == (0.50, 64.0, 5e-6, 4.0)
    assert (cal.gemm_bw("fp4"), cal.bw_eff, cal.kernel_overhead_s) == (0.85, 0.85, 3e-6)
    t, tc, tm = (float(x) for x in gemm.gemm_time(8192, 8192, 8192, g, cal, math="fp4", a_bytes=4.25 / 8, w_bytes=4.25 / 8))
    # compute: every tile (64x128, 128x128, 256x256) fills whole waves of 256 CUs, so 2 M N (K + k_half) at 0.50 of 10.066 PF
    compute = 2 * 8192 * 8192 * (8192 + 64) / (0.50 * 10.066e15)  # 220.2 us
    # memory: A and B at 4.25 bits, C in BF16, at 0.85 of 8 TB/s
    memory = 8192 * 8192 * (4.25 / 8 * 2 + 2) / (0.85 * 8e12)  # 30.2 us
    # p-norm blend (p = 4), the kernel's fixed cost, and the per-1x32 quantise pass: BF16 read, MXFP4 written, one launch
    quantise = 8192 * 8192 * (2 + 4.25 / 8) / (0.85 * 8e12) + 3e-6  # 28.0 us
    expected = compute * (1 + (memory / compute) ** 4) ** 0.25 + 5e-6 + quantise
    assert (tc, tm) == (pytest.approx(compute, rel=1e-5), pytest.approx(memory, rel=1e-5))
    assert t == pytest.approx(expected, rel=1e-5) and t == pytest.approx(253.2e-6, rel=1e-3)
