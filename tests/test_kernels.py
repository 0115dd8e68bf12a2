import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost import kernels as cost
from llm_codesign.cost.calibration import calibration_for, documented
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu


def test_gemm_intensity_golden():
    # BF16 GEMM M=2048, N=8192, K=512: 2MNK / (2 (MK + KN + MN)) = 390.1 FLOP/byte (output counted)
    f, b = cost.gemm_flops_bytes(2048, 8192, 512, a_bytes=2.0, w_bytes=2.0, c_bytes=2.0)
    assert f == 2 * 2048 * 8192 * 512
    assert b == 2 * (2048 * 512 + 512 * 8192 + 2048 * 8192)
    assert f / b == pytest.approx(390.1, abs=0.1)


def test_gemm_never_beats_roofline(h100, cal_h100):
    m, n, k = np.meshgrid([1, 16, 128, 1000, 4096], [512, 4096, 28672], [256, 4096, 8192], indexing="ij")
    t, tc, tm = cost.gemm_time(m, n, k, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    f, b = cost.gemm_flops_bytes(m, n, k, a_bytes=2.0, w_bytes=2.0)
    floor = np.maximum(f / h100.peak("bf16"), b / h100.hbm_bandwidth_bytes_per_s)
    assert np.all(t >= floor)


def test_tile_and_wave_quantisation_show(h100, cal_h100):
    # M=128, N=132*128 fills exactly one wave of 128x128 tiles on 132 SMs; one more column needs
    # another (partial) wave whatever the tile shape
    n = 132 * 128
    _, c0, _ = cost.gemm_time(128, n, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    _, c1, _ = cost.gemm_time(128, n + 1, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    assert c1 / c0 > 1.2
    # a few-token GEMM pads M to a whole tile, unless A and B swap and the tokens ride on narrow N tiles
    _, pad, _ = cost.gemm_time(8, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    _, swapped, _ = cost.gemm_time(8, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    assert swapped < pad
    # small K is less efficient per FLOP than large K at the same M, N
    ts, *_ = cost.gemm_time(4096, 4096, 128, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    tl, *_ = cost.gemm_time(4096, 4096, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    assert ts / 128 > tl / 8192


def test_fp8_faster_than_bf16_when_compute_bound(h100, cal_h100):
    # kernels/gemm.csv (H100, TensorRT-LLM): for GEMMs of >= 4096^3/4 MACs the median BF16/FP8
    # latency ratio is 1.38 and the best FP8/BF16 throughput ratio 1.8
    tb, *_ = cost.gemm_time(8192, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    tf, *_ = cost.gemm_time(8192, 8192, 8192, h100, cal_h100, math="fp8", a_bytes=1.0, w_bytes=1.0)
    assert 1.2 < tb / tf < 2.0


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 8192), n=st.integers(1, 30000), k=st.integers(1, 30000), scale=st.floats(1.0, 4.0))
def test_a_gemm_is_never_slower_with_more_bandwidth(m, n, k, scale):
    from dataclasses import replace

    g = get_gpu("h200")
    cal = calibration_for(g)
    fast = replace(g, hbm_bandwidth_bytes_per_s=g.hbm_bandwidth_bytes_per_s * scale)
    t1, *_ = cost.gemm_time(m, n, k, g, cal, math="bf16", a_bytes=2.0, w_bytes=2.0)
    t2, *_ = cost.gemm_time(m, n, k, fast, cal, math="bf16", a_bytes=2.0, w_bytes=2.0)
    assert t2 <= t1 + 1e-15


def test_collectives(h100, cal_h100):
    assert cost.collective_time("all_reduce", 1e6, 1, h100, cal_h100) == 0.0
    small = cost.collective_time("all_reduce", 1e3, 8, h100, cal_h100)
    big = cost.collective_time("all_reduce", 1e9, 8, h100, cal_h100)
    # bandwidth term of a ring all-reduce: 2 (n-1)/n x bytes / link bandwidth
    assert big > 2 * 7 / 8 * 1e9 / h100.scale_up_bandwidth_bytes_per_s
    assert small < 1e-4
    # beyond the NVLink domain, hierarchically: the 8-GPU all-reduce, then an all-reduce between the
    # 2 nodes of each GPU's 1/8 shard over its own NIC
    t8 = float(cost.collective_time("all_reduce", 1e8, 8, h100, cal_h100))
    link, c = h100.scale_out_bandwidth_bytes_per_s, cal_h100

    def stream(moved, lat):  # the faster of the low-latency protocols and Simple
        return min(lat + (moved + c.comm_bw_half_bytes) / (link * c.comm_bw_eff), c.comm_large_latency_s + moved / (link * c.comm_large_bw_eff))

    moved = 2 * (2 - 1) / 2 * 1e8 / 8
    inter = stream(moved, c.scale_out_latency_s * 1.0)
    assert float(cost.collective_time("all_reduce", 1e8, 16, h100, cal_h100)) == pytest.approx(t8 + inter, rel=1e-9)
    # all-to-all across 2 nodes: half of each GPU's data crosses its NIC
    off = 1e8 * (16 - 8) / 16
    assert float(cost.collective_time("all_to_all", 1e8, 16, h100, cal_h100)) == pytest.approx(stream(off, c.scale_out_latency_s), rel=1e-9)


def test_collective_protocol_switch_by_hand(h100, cal_h100):
    # 8-GPU all-reduce over 450 GB/s NVLink moves 2 x 7/8 of the message. Low-latency protocols: 10 us +
    # (moved + 1 MB) / (0.5 x 450 GB/s); Simple: 50 us + moved / (0.8 x 450 GB/s); the faster wins.
    from dataclasses import replace

    c = replace(cal_h100, comm_latency_s=10e-6, comm_latency_slope_s=0.0, comm_bw_eff=0.5, comm_bw_half_bytes=1e6,
                comm_large_latency_s=50e-6, comm_large_bw_eff=0.8)
    assert h100.scale_up_bandwidth_bytes_per_s == 450e9
    # 1 MB: 10 + 2.75e6 / 225e9 s = 22.22 us (Simple: 54.86 us)
    assert float(cost.collective_time("all_reduce", 1e6, 8, h100, c)) == pytest.approx(22.222e-6, rel=1e-4)
    # 100 MB: Simple, 50 + 1.75e8 / 360e9 s = 536.1 us (low-latency: 787.8 us)
    assert float(cost.collective_time("all_reduce", 1e8, 8, h100, c)) == pytest.approx(536.11e-6, rel=1e-4)


def test_decode_work_items_slice_query_groups():
    from dataclasses import replace

    from llm_codesign.cost.calibration import documented
    from llm_codesign.cost.kernels import decode_work_items

    cal = replace(documented(), attn_decode_group_bf16=4.0, attn_decode_group_fp8=128.0)
    # 2 tokens x 8 KV heads x ceil((64 / 8) / 4) slices of the query group
    assert float(decode_work_items(2, 8, 64, cal, kv_fp8=False)) == 2 * 8 * 2
    # a group narrower than the slice is one item per KV head; FP8 (XQA) takes the whole group
    assert float(decode_work_items(2, 8, 16, cal, kv_fp8=False)) == 2 * 8
    assert float(decode_work_items(2, 8, 64, cal, kv_fp8=True)) == 2 * 8
    # one query head per item reproduces per-head (MHA) kernels
    assert float(decode_work_items(3, 4, 32, replace(cal, attn_decode_group_bf16=1.0), kv_fp8=False)) == 3 * 32


def test_quantised_activation_pays_its_quantisation_pass(b200):
    cal = calibration_for(b200)
    m, n, k = 8192, 128, 8192
    t8 = float(cost.gemm_time(m, n, k, b200, cal, math="fp8", a_bytes=1.0, w_bytes=1.0)[0])
    # the BF16 input is read once and written as FP8 before the GEMM: 3 bytes per input value
    quant = m * k * 3.0 / (b200.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    assert t8 >= quant
    # without that pass, reading 1-byte activations would be cheaper than reading 2-byte ones
    t_bf16_in = float(cost.gemm_time(m, n, k, b200, cal, math="fp8", a_bytes=2.0, w_bytes=1.0)[0])
    assert t8 > t_bf16_in


def test_wide_query_groups_fall_back_to_per_head_kernels(h100):
    from dataclasses import replace

    from llm_codesign.cost.calibration import documented
    from llm_codesign.cost.kernels import attention_decode_time, decode_work_items

    cal = replace(documented(), attn_decode_group_bf16=8.0, attn_decode_max_group=32.0,
                  attn_decode_flops_eff=0.05, attn_decode_wide_flops_eff=0.005)
    # group 16 fits the tensor-core kernel: 2 slices of 8 per KV head; group 128 falls back per head
    assert float(decode_work_items(1, 8, 128, cal, kv_fp8=False)) == 8 * 2
    assert float(decode_work_items(1, 1, 128, cal, kv_fp8=False)) == 128
    # and its math runs 10x slower (compute-bound case: tiny KV, long context)
    flops = 2.0 * 128 * 100_000 * 256
    narrow = float(attention_decode_time(flops, 1.0, h100, cal, seq_heads=0.0, group=16.0)[1])
    wide = float(attention_decode_time(flops, 1.0, h100, cal, seq_heads=0.0, group=128.0)[1])
    assert wide == pytest.approx(10 * narrow)


def test_fp8_prefill_attention_has_its_own_efficiency(h100, cal_h100):
    # FP8 context attention runs at its own share of the FP8 peak (the kernel tables: FP8-KV prefill is
    # 1.3-1.45x faster than BF16 at large sizes, not the 2x of the peaks). By hand, 1 PFLOP compute-bound:
    from dataclasses import replace

    c = replace(cal_h100, attn_prefill_eff=0.5, attn_prefill_eff_fp8=0.25, attn_prefill_overhead_s=0.0, attn_prefill_head_s=0.0)
    t16, tc16, _ = cost.attention_prefill_time(1e15, 1.0, h100, c, math="bf16")
    t8, tc8, _ = cost.attention_prefill_time(1e15, 1.0, h100, c, math="fp8")
    assert float(tc16) == pytest.approx(1e15 / (h100.peak("bf16") * 0.5)) and float(t16) == float(tc16)
    assert float(tc8) == pytest.approx(1e15 / (h100.peak("fp8") * 0.25))
    assert float(t8) == pytest.approx(float(t16), rel=1e-3)  # half the efficiency at twice the peak


def test_pcie_servers_are_a_scale_up_domain_at_pcie_rates():
    # PCIe cards: the 8 GPUs of a server reach each other by PCIe peer-to-peer (no NIC), so TP up to 8 is a
    # valid plan, and an 8-GPU all-reduce of 100 MB streams over PCIe Gen4 (32 GB/s per direction) at the
    # 0.44 an 8-GPU PCIe server reaches (default.toml): 50 us + 1.75e8 B / (0.44 x 32 GB/s) = 12.48 ms
    from llm_codesign.cost.calibration import documented
    from llm_codesign.spec.plan import Plan, validity
    from llm_codesign.spec.registry import get_model

    g, m = get_gpu("l40s"), get_model("llama-3.1-70b")
    assert g.scale_up_domain == 8 and g.scale_up_bandwidth_bytes_per_s == 32e9
    assert int(validity(m, g, Plan(tp=8), 8)) < 0 and int(validity(m, g, Plan(tp=16), 16)) >= 0
    c = documented(g.family)
    assert (c.comm_large_bw_eff, c.comm_bw_eff, c.comm_large_latency_s) == (0.44, 0.20, 50e-6)
    assert float(cost.collective_time("all_reduce", 1e8, 8, g, c)) == pytest.approx(50e-6 + 1.75e8 / (0.44 * 32e9), rel=1e-9)


def test_prefill_softmax_exponentials_by_hand(h100, cal_h100):
    # a query-key pair costs 4 x head_dim FLOPs of matmul plus one exponential on the special-function
    # units; by hand at 0.5 of the BF16 peak and 1e-13 s per exponential, 1 PFLOP over 1e12 pairs
    # (head_dim 250): 1e15 / (0.5 x 989.4 TFLOPS) + 0.1 s
    from dataclasses import replace

    c = replace(cal_h100, attn_prefill_eff=0.5, attn_prefill_score_s=1e-13, attn_prefill_overhead_s=0.0, attn_prefill_head_s=0.0)
    t, tc, _ = cost.attention_prefill_time(1e15, 1.0, h100, c, math="bf16", scores=1e12)
    assert float(t) == pytest.approx(1e15 / (h100.peak("bf16") * 0.5) + 0.1, rel=1e-9) and float(tc) == float(t)
    # the same FLOPs in heads half as wide hold twice the pairs: narrow heads cost more per FLOP
    t_narrow, _, _ = cost.attention_prefill_time(1e15, 1.0, h100, c, math="bf16", scores=2e12)
    assert float(t_narrow) - float(t) == pytest.approx(0.1, rel=1e-9)


def test_w4a16_is_its_own_kernel_family():
    """4-bit weights on BF16 math run mixed-input kernels (Marlin): INT4 everywhere, MXFP4/NVFP4 where the
    GPU has no FP4 math; on Blackwell MXFP4 x BF16 runs tcgen05 kernels, priced as BF16. A one-token
    INT4 GEMM on H100 streams its weights at Marlin's measured share of HBM (0.73, documented, not
    fitted) plus the family's fixed cost: by hand, [1, 8192] x [8192, 8192] with 0.5 + 2/32 bytes per
    weight (one BF16 scale per 32) reads 8192 * 8192 * 0.5625 + 2 * 8192 * 2 bytes."""
    from llm_codesign.cost.kernels import gemm_kernel, gemm_time

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

    from llm_codesign.cost.kernels import gemm_time
    from llm_codesign.spec.precision import DTYPES

    sgl = get_engine("sglang")
    assert sgl.gemm_kernel("hopper", "fp8_block") == "fp8_deepgemm"
    assert get_engine("vllm").gemm_kernel("hopper", "fp8_block") == "fp8_deepgemm"
    assert get_engine("trtllm").gemm_kernel("hopper", "fp8_block") == "fp8_block"
    assert sgl.gemm_kernel("blackwell", "fp8_block") == "fp8_block"
    assert sgl.gemm_kernel("hopper", "fp8") == "fp8"
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


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"])
def test_collectives_priced_at_their_live_elements_equal_each_one_alone(op, h100, cal_h100):
    # a search's chunk where most plans run no such collective (no bytes, or one GPU) takes the path
    # that prices the live elements only: each element as the scalar call prices it, 16 GPUs off-node too
    rng = np.random.default_rng(3)
    nbytes = np.where(rng.random(6000) < 0.3, rng.uniform(1e3, 1e9, 6000), 0.0)
    n = rng.choice([1.0, 2.0, 8.0, 16.0], 6000)
    t = cost.collective_time(op, nbytes, n, h100, cal_h100)
    assert np.count_nonzero(t) < 3000
    each = [float(cost.collective_time(op, x, g, h100, cal_h100)) for x, g in zip(nbytes[:400], n[:400], strict=True)]
    np.testing.assert_array_equal(t[:400], each)


@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
def test_all_reduce_where_the_engine_runs_its_own_everywhere_equals_each_one_alone(engine):
    # a decode step's all-reduces all fit the engine's own kernel (NCCL is then not priced), a prefill
    # step's mix both: every element as the scalar call prices it, live or not, either way
    g = get_gpu("b200")
    cal, e = documented("blackwell").in_step(engine), get_engine(engine)
    rng = np.random.default_rng(5)
    n = rng.choice([2.0, 4.0, 8.0], 5000)
    owns = []
    for nbytes in (rng.uniform(1e3, 2e6, 5000), rng.uniform(1e3, 3e7, 5000), np.append(rng.uniform(1e3, 2e6, 4999), 0.0)):
        owns.append(e.own_allreduce(nbytes, n, g.family).mean())
        t = cost.collective_time("all_reduce", nbytes, n, g, cal, engine=e)
        each = [float(cost.collective_time("all_reduce", x, y, g, cal, engine=e)) for x, y in zip(nbytes[::25], n[::25], strict=True)]
        np.testing.assert_array_equal(t[::25], each)
        assert t[-1] == float(cost.collective_time("all_reduce", nbytes[-1], n[-1], g, cal, engine=e))
    assert owns[0] == 1.0 and 0.0 < owns[1] < 1.0  # the engine's own everywhere, then a mix


def test_trtllm_all_reduce_limits_by_gpu_count():
    # TensorRT-LLM's own all-reduce up to its workspace at 2, 4 and 8 GPUs (trtllm.AR_MAX_BYTES), NCCL at other counts
    own = get_engine("trtllm").own_allreduce
    nbytes = np.array([1e3, 8e6, 8e6 + 1, 16e6, 16e6 + 1])
    for n, most in ((2, 16e6), (4, 8e6), (8, 8e6), (3, -1.0), (16, -1.0)):
        np.testing.assert_array_equal(own(nbytes, n, "hopper"), nbytes <= most)
    grid = own(nbytes[None, :], np.array([[2.0], [3.0], [8.0]]), "hopper")
    assert grid.shape == (3, 5) and grid.sum() == 4 + 0 + 2


@pytest.mark.parametrize("gpu_name", ["gb200", "h100", "mi300x"])
def test_tiles_at_once_equal_one_tile_at_a_time(gpu_name, monkeypatch):
    # small arrays price every tile in one pass along a leading axis, large ones one tile at a time:
    # the same float32 operations, so the same times bit for bit, split-K and swap-AB tiles included
    gpu = get_gpu(gpu_name)
    cal = calibration_for(gpu)
    rng = np.random.default_rng(11)
    m = np.round(rng.uniform(0.0, 5000.0, size=(30, 20)), 1)
    n = rng.choice([128.0, 896.0, 7168.0], size=(30, 1))
    k = rng.choice([256.0, 2048.0, 7168.0], size=(30, 1))
    for kernel, math in (("bf16", "bf16"), ("fp8_block", "fp8")):
        kw = dict(math=math, a_bytes=2.0 if math == "bf16" else 1.0, w_bytes=2.0 if math == "bf16" else 1.0, kernel=kernel)
        monkeypatch.setattr(cost, "TILE_BATCH", 0)
        loop = cost.gemm_time(m, n, k, gpu, cal, **kw)
        monkeypatch.setattr(cost, "TILE_BATCH", 1 << 30)
        batch = cost.gemm_time(m, n, k, gpu, cal, **kw)
        for a, b in zip(loop, batch, strict=True):
            np.testing.assert_array_equal(a, b)


def test_gemms_sharing_one_tokens_object_equal_each_priced_from_its_array(h100, cal_h100):
    # a step's GEMMs share its tokens (float32, their tile rows and extent once): the same times as
    # each GEMM given the array, zero and NaN rows included
    m = np.array([[0.0, 1.0, 17.0, 300.0, 4096.0]] * 3)
    m[2, 4] = np.nan
    tokens = cost.Tokens(m)
    for n, k, groups, math in ((8192, 8192, 1.0, "bf16"), (1536, 7168, 1.0, "fp8"), (512, 128, 16.0, "bf16")):
        kw = dict(math=math, a_bytes=1.0 if math == "fp8" else 2.0, w_bytes=1.0 if math == "fp8" else 2.0, groups=groups)
        for shared, alone in zip(cost.gemm_time(tokens, n, k, h100, cal_h100, **kw), cost.gemm_time(m, n, k, h100, cal_h100, **kw), strict=True):
            np.testing.assert_array_equal(shared, alone)
    assert not tokens.positive and cost.Tokens(m[:2, 1:]).positive
    q = min(t[0] for t in h100.tiles)
    assert tokens.rows(q) is tokens.rows(q) and tokens.rows(q).j.dtype == np.float32


def test_a_gemm_row_with_no_work_leaves_the_others_as_they_are(h100, cal_h100):
    # the live mask is skipped where every element is live: a row of zero tokens among them changes nothing else
    m = np.array([1.0, 16.0, 300.0, 4096.0])
    alone = cost.gemm_time(m, 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    mixed = cost.gemm_time(np.append(m, 0.0), 8192, 8192, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)
    for a, b in zip(alone, mixed, strict=True):
        np.testing.assert_array_equal(b[:4], a)
        assert b[4] == 0.0


@pytest.mark.parametrize("gpu_name", ["gb200", "h100", "mi300x"])
@pytest.mark.parametrize("kernel", ["bf16", "fp8_block", "fp4"])
@pytest.mark.parametrize("varying", [1, 2, 3])
def test_gemm_tiles_tabulated_over_a_grid_equal_each_element_priced_alone(gpu_name, kernel, varying):
    """A search's GEMM (per-plan N, K and groups against plans x batches x k tokens) goes through the
    table of distinct (N, K, groups) x whole-row counts; every element equals its GEMM priced alone,
    bit for bit, dead rows and fractional, huge and repeated row counts included."""
    gpu = get_gpu(gpu_name)
    cal = calibration_for(gpu)
    math = {"bf16": "bf16", "fp8_block": "fp8", "fp4": "fp4" if gpu.supports("fp4") else "fp8"}[kernel]
    rng = np.random.default_rng(7)
    plans = 60
    # per plan: N alone, N and K, or N, K and the groups vary (one integer key, or distinct columns)
    n = rng.choice([896.0, 7168.0], size=(plans, 1, 1))
    k = rng.choice([7168.0, 1536.0], size=(plans, 1, 1)) if varying > 1 else 7168.0
    groups = rng.choice([1.0, 16.0], size=(plans, 1, 1)) if varying > 2 else 1.0
    m = np.round(rng.uniform(0.0, 3000.0, size=(plans, 46, 6)), 1)
    m[::7] = 0.0  # plans that run nothing
    m[1, :, :] = 1.0
    kw = dict(math=math, a_bytes=1.0 if math != "bf16" else 2.0, w_bytes=0.5 if math == "fp4" else (1.0 if math == "fp8" else 2.0),
              kernel=kernel)
    grid = cost.gemm_time(m, n, k, gpu, cal, groups=groups, **kw)
    idx = [(p, b, q) for p in (0, 1, 3, 22, 59) for b in (0, 7, 45) for q in (0, 5)]
    n, k, groups = (np.broadcast_to(x, (plans, 1, 1)) for x in (n, k, groups))
    for p, b, q in idx:
        alone = cost.gemm_time(m[p, b, q], n[p, 0, 0], k[p, 0, 0], gpu, cal, groups=groups[p, 0, 0], **kw)
        for g, a in zip(grid, alone, strict=True):
            assert np.asarray(g)[p, b, q] == np.asarray(a), (p, b, q)
    # the table path ran: fewer distinct (N, K, groups) x row counts than elements
    rows = cost._Rows(np.ceil(np.asarray(m, np.float32) / np.float32(16.0)), 16)
    calls = []
    cost._tabulated(lambda r, *a: calls.append(np.shape(r.j)) or np.zeros(np.broadcast_shapes(np.shape(r.j), *(np.shape(x) for x in a)), np.float32),
                    rows, n.astype(np.float32), k.astype(np.float32), groups.astype(np.float32))
    assert calls and calls[0][0] == 1 and calls[0][1] < m.size // 4


def test_gemm_tile_table_keeps_nan_rows_and_many_distinct_shapes(h100, cal_h100):
    """Row counts the table cannot hold (NaN tokens) and (N, K, groups) that vary in all three are
    priced as each element alone would be."""
    rng = np.random.default_rng(3)
    n = rng.choice([512.0, 1024.0], size=(40, 1, 1))
    k = rng.choice([512.0, 4096.0], size=(40, 1, 1))
    groups = rng.choice([1.0, 8.0], size=(40, 1, 1))
    m = np.round(rng.uniform(1.0, 400.0, size=(40, 30, 6)))
    kw = dict(math="bf16", a_bytes=2.0, w_bytes=2.0)
    t = cost.gemm_time(m, n, k, h100, cal_h100, groups=groups, **kw)[0]
    for p, b, q in ((0, 0, 0), (17, 29, 5), (39, 3, 2)):
        assert t[p, b, q] == cost.gemm_time(m[p, b, q], n[p, 0, 0], k[p, 0, 0], h100, cal_h100, groups=groups[p, 0, 0], **kw)[0]
    m[5, 5, 5] = np.nan
    with np.errstate(invalid="ignore"):
        t2 = cost.gemm_time(m, n, k, h100, cal_h100, groups=groups, **kw)[0]
    assert np.isnan(t2[5, 5, 5]) or t2[5, 5, 5] == 0.0
    keep = np.ones(m.shape, bool)
    keep[5, 5, 5] = False
    assert np.array_equal(t2[keep], t[keep])


def test_gemm_tile_table_leaves_row_counts_past_float32_integers_to_the_loop(h100, cal_h100):
    """Row counts near 2**24 (M of 2**28 tokens) cannot index a float32 table exactly: each element is
    priced as it would be alone."""
    m = np.full((40, 30, 6), 2.0**28) + np.arange(6) * 16.0 * np.arange(40)[:, None, None]
    n = np.where(np.arange(40)[:, None, None] % 2, 512.0, 1024.0)
    t = cost.gemm_time(m, n, 4096.0, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)[0]
    for p, b, q in ((0, 0, 0), (39, 29, 5), (13, 2, 3)):
        assert t[p, b, q] == cost.gemm_time(m[p, b, q], n[p, 0, 0], 4096.0, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)[0]


def test_gemm_tiles_of_a_height_not_a_power_of_two_are_priced_by_m_itself(h100, cal_h100):
    """A GPU file's own tiles (96 rows here) leave the whole-row table: ceil(M / 96) from M, as before."""
    from dataclasses import replace

    gpu = replace(h100, tiles=((96, 128, 1), (128, 256, 1)))
    m = np.arange(1.0, 40 * 30 * 6 + 1.0).reshape(40, 30, 6)
    n = np.where(np.arange(40)[:, None, None] % 2, 4096.0, 16384.0)  # widths where either tile wins somewhere
    kw = dict(math="bf16", a_bytes=2.0, w_bytes=2.0, swap_ab=False)
    t = cost.gemm_time(m, n, 4096.0, gpu, cal_h100, **kw)[0]
    for p, b, q in ((0, 0, 0), (0, 15, 5), (39, 29, 5)):
        assert t[p, b, q] == cost.gemm_time(m[p, b, q], n[p, 0, 0], 4096.0, gpu, cal_h100, **kw)[0]
    # the compute part is the faster of the two tiles, each priced on a GPU that has it alone
    one = [cost.gemm_time(m, n, 4096.0, replace(h100, tiles=(tile,)), cal_h100, **kw)[1] for tile in gpu.tiles]
    assert np.array_equal(cost.gemm_time(m, n, 4096.0, gpu, cal_h100, **kw)[1], np.minimum(*one))
