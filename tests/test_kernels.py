import numpy as np
import pytest

from llm_codesign.cost import kernels as cost
from llm_codesign.cost.calibration import documented
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu


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


def test_wide_query_groups_fall_back_to_per_head_kernels(h100):
    from dataclasses import replace

    from llm_codesign.cost.calibration import documented
    from llm_codesign.cost.kernels import attention_decode_time, decode_work_items

    cal = replace(documented(), attn_decode_group_bf16=8.0, attn_decode_max_group=32.0,
                  attn_decode_flops_eff=0.05, attn_decode_wide_flop_clk=20.48)
    # group 16 fits the tensor-core kernel: 2 slices of 8 per KV head; group 128 falls back per head
    assert float(decode_work_items(1, 8, 128, cal, kv_fp8=False)) == 8 * 2
    assert float(decode_work_items(1, 1, 128, cal, kv_fp8=False)) == 128
    # and its math, TensorRT-LLM's masked MHA kernel (mmha), runs 10x slower (compute-bound case: tiny KV, long context);
    # another engine's kernel packs the wide group into tensor-core tiles (FlashAttention-3's PackGQA): the tensor rate
    flops = 2.0 * 128 * 100_000 * 256
    narrow = float(attention_decode_time(flops, 1.0, h100, cal, seq_heads=0.0, group=16.0)[1])
    wide = float(attention_decode_time(flops, 1.0, h100, cal, seq_heads=0.0, group=128.0, mmha=True)[1])
    packed = float(attention_decode_time(flops, 1.0, h100, cal, seq_heads=0.0, group=128.0, mmha=False)[1])
    assert wide == pytest.approx(10 * narrow) and packed == pytest.approx(narrow)


def test_per_head_fallback_math_runs_at_flops_per_sm_clock(h100, b200):
    # the masked MHA fallback's CUDA-core math: SMs x clock x attn_decode_wide_flop_clk, the clock the BF16 peak is quoted
    # at (dense BF16 FLOP per SM-clock: Hopper 4,096, Blackwell 8,192). By hand: H100 989.4 TFLOPS / 4,096 = 2.4155e11
    # SM-clocks/s (132 SMs at 1.83 GHz), B200 2.25 PFLOPS / 8,192 = 2.7466e11 (148 at 1.856 GHz)
    from dataclasses import replace

    assert h100.sm_clocks_per_s == pytest.approx(2.4155e11, rel=1e-4)
    assert b200.sm_clocks_per_s == pytest.approx(2.7466e11, rel=1e-4)
    assert h100.sm_clocks_per_s / h100.sms == pytest.approx(1.830e9, rel=1e-3)
    cal = replace(documented(), attn_decode_max_group=32.0, attn_decode_wide_flop_clk=30.0, attn_overhead_s=0.0, attn_decode_head_s=0.0)
    # 1e12 FLOPs of a group-64 (wide) decode, compute-bound: 1e12 / (2.4155e11 x 30) = 0.13800 s on H100, 0.12136 s on
    # B200: 1.14x faster, where the tensor peak is 2.27x H100's
    t_h = float(cost.attention_decode_time(1e12, 1.0, h100, cal, group=64.0, mmha=True)[0])
    t_b = float(cost.attention_decode_time(1e12, 1.0, b200, cal, group=64.0, mmha=True)[0])
    assert t_h == pytest.approx(0.13800, rel=1e-4) and t_b == pytest.approx(0.12136, rel=1e-4)


def test_triton_prefill_is_one_argument_its_seconds_nan_where_not_triton(h100, cal_h100):
    # fixR11 (frev11 #6): triton_s alone says which elements run Triton. 1 PFLOP at 0.5 of the BF16 peak, no fixed cost:
    # element 0 Triton at 2 ms of matmuls (no cost per item: 1,000 items x 1 us left out), element 1 FlashAttention's path
    # (1e15 / (peak x 0.5) + 1,000 x 1 us)
    from dataclasses import replace

    c = replace(cal_h100, attn_prefill_eff=0.5, attn_prefill_overhead_s=0.0, attn_prefill_head_s=1e-6)
    t, _, _ = cost.attention_prefill_time(np.array([1e15, 1e15]), 1.0, h100, c, seq_heads=1000.0, triton_s=np.array([2e-3, np.nan]))
    assert t == pytest.approx([2e-3, 1e15 / (h100.peak("bf16") * 0.5) + 1e-3], rel=1e-12)
    none, _, _ = cost.attention_prefill_time(1e15, 1.0, h100, c, seq_heads=1000.0)  # None: nothing Triton
    assert float(none) == pytest.approx(float(t[1]), rel=1e-12)


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
    # up to 1e6 B: below every engine's own limit (vLLM's on Blackwell: 1 MiB at 8 GPUs); to 3e7 its symmetric memory too
    for nbytes in (rng.uniform(1e3, 1e6, 5000), rng.uniform(1e3, 3e7, 5000), np.append(rng.uniform(1e3, 1e6, 4999), 0.0)):
        owns.append(e.own_allreduce(nbytes, n, g.family).mean())
        t = cost.collective_time("all_reduce", nbytes, n, g, cal, engine=e)
        each = [float(cost.collective_time("all_reduce", x, y, g, cal, engine=e)) for x, y in zip(nbytes[::25], n[::25], strict=True)]
        np.testing.assert_array_equal(t[::25], each)
        assert t[-1] == float(cost.collective_time("all_reduce", nbytes[-1], n[-1], g, cal, engine=e))
    assert owns[0] == 1.0 and 0.0 < owns[1] < 1.0  # the engine's own everywhere, then a mix


def test_trtllm_all_reduce_limits_by_gpu_count():
    # TensorRT-LLM's own all-reduce up to its workspace at 2, 4 and 8 GPUs (trtllm.AR_MAX_BYTES), MNNVL's past
    # 8 (a group across NVLink trays; collective_time prices it only inside the domain), NCCL at other counts
    own = get_engine("trtllm").own_allreduce
    nbytes = np.array([1e3, 8e6, 8e6 + 1, 16e6, 16e6 + 1])
    for n, most in ((2, 16e6), (4, 8e6), (8, 8e6), (3, -1.0), (6, -1.0), (16, 2.0**31)):
        np.testing.assert_array_equal(own(nbytes, n, "hopper"), nbytes <= most)
    grid = own(nbytes[None, :], np.array([[2.0], [3.0], [8.0]]), "hopper")
    assert grid.shape == (3, 5) and grid.sum() == 4 + 0 + 2


def test_decode_split_follows_each_kernels_launcher():
    # XQA on H100 (132 SMs; TensorRT-LLM computeMultiBlockCount, without its rounding): 32,768 keys are 256 blocks
    # of 128, capped at sqrt(8 x 256); under 128 keys one CTA; 64 sequences x 8 KV heads x min(32, sqrt(256)) = 16
    # is 7.76 waves over 8, so 16 / 7.76 = 132 x 8 / 512
    h100, b200 = get_gpu("h100"), get_gpu("b200")
    assert cost.decode_split(1, 1, 32768, h100) == pytest.approx(2048 ** 0.5, rel=1e-12)
    assert cost.decode_split(1, 8, 100, h100) == 1
    assert cost.decode_split(64, 8, 4096, h100) == pytest.approx(132 * 8 / 512, rel=1e-12)
    # TRTLLM-Gen on B200 (148 SMs): one CTA per two 128-key tiles, no more than 148 / (sequences x KV heads)
    assert cost.decode_split(1, 1, 32768, b200) == 128
    assert cost.decode_split(2, 8, 32768, b200) == pytest.approx(148 / 16, rel=1e-12)
    assert cost.decode_split(1, 1, 100, b200) == 1
    assert cost.decode_split(200, 8, 32768, b200) == 1


def test_decode_reads_whole_tiles_per_split():
    # each split reads its share of the keys in whole tiles: 64 keys in XQA, 128 in TRTLLM-Gen; a split count priced
    # without the launcher's rounding (64 x 8 at 4,096 keys on H100: 2.0625) reads 2.0625 x 32 tiles of 64
    h100, b200 = get_gpu("h100"), get_gpu("b200")
    assert cost.decode_tile(h100) == 64 and cost.decode_tile(b200) == 128
    assert cost.decode_keys_read(100, 1, h100) == 128
    assert cost.decode_keys_read(2, 1, h100) == 64
    assert cost.decode_keys_read(4096, 16, h100) == 4096
    assert cost.decode_keys_read(4096, 132 * 8 / 512, h100) == pytest.approx(2.0625 * 32 * 64, rel=1e-12)
    assert cost.decode_keys_read(100, 1, b200) == 128
    assert cost.decode_keys_read(300, 2, b200) == 2 * 2 * 128


def test_split_decode_pays_its_merge_where_it_goes_through_global_memory():
    # XQA merges every split through global memory (1 - 1 / split of the merge's cost); TRTLLM-Gen reduces in the
    # cluster's shared memory, priced free
    from dataclasses import replace

    h100, b200 = get_gpu("h100"), get_gpu("b200")
    cal = replace(documented(), attn_decode_split_s=3e-6)
    assert cost.decode_merge_share(np.array([1.0, 2.0, 4.0]), h100).tolist() == [0.0, 0.5, 0.75]
    assert cost.decode_merge_share(np.array([16.0, 17.0, 64.0]), b200).tolist() == [0.0, 0.0, 0.0]

    def t(gpu, split):
        return float(cost.attention_decode_time(1e9, 1e8, gpu, cal, seq_heads=64.0, split=split)[0])

    assert t(h100, 2.0) - t(h100, 1.0) == pytest.approx(1.5e-6, rel=1e-9)
    assert t(b200, 17.0) == t(b200, 1.0)


@pytest.mark.parametrize("kv", ["bfloat16", "fp8"])
@pytest.mark.parametrize("kv_heads, keys", [(8, 128), (32, 100)])
def test_gqa_decode_in_the_operator_graph_is_the_kernel_tables_price(tmp_path, kv, kv_heads, keys):
    # the serving path and the kernel-table fit choose one decode kernel (GqaDecode) and price its FLOPs, bytes and
    # time alike (FP8 KV: XQA's GMMA kernel, RoPE fused): 4 sequences at 100 cached keys, 32 query and 8 KV heads of 128
    # on H100, unsplit, read two 64-key tiles, 128 keys, per sequence and KV head; with 32 KV heads (vanilla MHA) the
    # masked MHA kernel reads the 100 keys
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.measure.kernel_tables import predict, read_csv
    from llm_codesign.spec.kinds import GQA, DenseFfn
    from llm_codesign.spec.model import Layer, ModelSpec
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision

    h100 = get_gpu("h100")
    cal = calibration_for(h100)
    m = ModelSpec("toy", hidden=4096, vocab=32000,
                  groups=((Layer(GQA(heads=32, kv_heads=kv_heads, head_dim=128, v_head_dim=128), DenseFfn(inter=14336)), 1),))
    prec = Precision.of("bf16", kv="fp8" if kv == "fp8" else None)
    got = layer_ops(m, m.groups[0][0], 1.0, h100, cal, prec=prec, sh=Plan(), b=Batch(dec_seqs=4.0, dec_ctx=100.0),
                    prefix="layer", parts=("attn",))
    core = next(o for o in got if o.role == "core_decode")
    kv_bytes = 1.0 if kv == "fp8" else 2.0
    assert float(core.work[1]) == 4 * keys * kv_heads * 2 * 128 * kv_bytes + 4 * 32 * 2 * 128 * 2.0
    p = tmp_path / "d.csv"
    p.write_text("system,batch_size,isl,step,num_heads,num_key_value_heads,head_dim,kv_cache_dtype,latency_ms\n"
                 f"h100_sxm,4,1,99,32,{kv_heads},128,{kv},0.01\n")
    pred, _ = predict(*read_csv(p), calibration_for)
    assert float(core.time) * 1e3 == pytest.approx(pred[0], rel=1e-12)


def test_hoppers_fp8_xqa_kernel_applies_rope_itself_one_launch_less():
    # the decode op's fixed cost holds its preprocessing kernel (RoPE, KV append); XQA's GMMA kernel, FP8 KV on SM90,
    # applies RoPE itself: one kernel_overhead_s less. BF16 KV on Hopper and every kernel on Blackwell launch both
    from dataclasses import replace

    h100, b200 = get_gpu("h100"), get_gpu("b200")
    cal = replace(documented(), attn_overhead_s=9e-6, kernel_overhead_s=3e-6)
    assert cost.decode_rope_fused(h100, True) and not cost.decode_rope_fused(h100, False)
    assert not cost.decode_rope_fused(b200, True)

    def t(gpu, fused):
        return float(cost.attention_decode_time(1e3, 1e3, gpu, cal, seq_heads=0.0, kv_fp8=True, rope_fused=fused)[0])

    assert t(h100, False) - t(h100, True) == pytest.approx(3e-6, rel=1e-9)
    # a profile whose op costs less than one launch is never priced below nothing
    low = replace(cal, attn_overhead_s=1e-6)
    assert float(cost.attention_decode_time(1e3, 1e3, h100, low, kv_fp8=True, rope_fused=True)[0]) > 0


def test_masked_mha_kernel_runs_where_xqa_does_not():
    # TensorRT-LLM keeps vanilla MHA (one query head per KV head) off XQA, and XQA takes groups up to 32: those run
    # the masked MHA kernel; TRTLLM-Gen takes vanilla MHA on Blackwell
    from dataclasses import replace

    cal = replace(documented(), attn_decode_max_group=32.0)
    groups = np.array([1.0, 2.0, 32.0, 33.0, 64.0])
    assert cost.decode_mmha(get_gpu("h100"), groups, cal).tolist() == [True, False, False, True, True]
    assert cost.decode_mmha(get_gpu("a100"), groups, cal).tolist() == [True, False, False, True, True]
    assert cost.decode_mmha(get_gpu("b200"), groups, cal).tolist() == [False, False, False, True, True]


def test_masked_mha_reads_its_keys_without_tiles():
    # one key per thread group, those past the sequence skipped: 2 keys read at 2 cached, not a 64-key tile
    h100 = get_gpu("h100")
    assert cost.decode_keys_read(2, 1, h100, True) == 2
    assert cost.decode_keys_read(np.array([100.0, 100.0]), 1, h100, np.array([True, False])).tolist() == [100.0, 128.0]


def test_fp8_cache_runs_fp8_math_only_in_the_fp8_mma_kernels():
    # FP8 MMAs in XQA's Hopper GMMA kernel (head dims to 256) and in TRTLLM-Gen's; the masked MHA kernel and
    # Ampere's HMMA kernel run at the BF16 rate
    from dataclasses import replace

    cal = replace(documented(), attn_decode_max_group=32.0, attn_decode_flops_eff=0.5)
    h100, a100, b200 = get_gpu("h100"), get_gpu("a100"), get_gpu("b200")
    groups, dims = np.array([1.0, 8.0, 8.0, 64.0]), np.array([128.0, 128.0, 512.0, 128.0])
    assert cost.decode_fp8_math(h100, True, groups, dims, cal).tolist() == [False, True, False, False]
    assert cost.decode_fp8_math(b200, True, groups, dims, cal).tolist() == [True, True, True, False]
    assert cost.decode_fp8_math(a100, True, groups, dims, cal).tolist() == [False] * 4
    assert cost.decode_fp8_math(h100, False, groups, dims, cal).tolist() == [False] * 4

    def t_c(fp8_math):  # compute-bound: 1 PFLOP at half of the peak the kernel's math runs at
        return float(cost.attention_decode_time(1e15, 1.0, h100, cal, kv_fp8=True, group=8.0, fp8_math=fp8_math)[1])

    assert t_c(True) == pytest.approx(1e15 / (h100.peak("fp8") * 0.5), rel=1e-12)
    assert t_c(False) == pytest.approx(1e15 / (h100.peak("bf16") * 0.5), rel=1e-12)


def test_masked_mha_items_cost_their_own_time():
    # 1,000 (sequence, query head) CTAs of the masked MHA kernel at attn_decode_mmha_s each, not attn_decode_head_s
    from dataclasses import replace

    h100 = get_gpu("h100")
    cal = replace(documented(), attn_decode_head_s=5e-9, attn_decode_mmha_s=1.2e-8)

    def t(mmha):
        return float(cost.attention_decode_time(1e3, 1e3, h100, cal, seq_heads=1000.0, mmha=mmha)[0])

    assert t(True) - t(False) == pytest.approx(1000 * (1.2e-8 - 5e-9), rel=1e-9)


def test_fa3_split_follows_flashattention3s_scheduler():
    # FlashAttention-3 on H100 (132 SMs), 8 KV heads at 4,096 keys in 128-key tiles (32): the one-sequence heuristic
    # takes the fewest splits whose wave reaches 0.85 of the fullest (8 x 16 = 128 of 132 CTAs, 0.970): 14 (112,
    # 0.848 >= 0.824; 13: 0.788). The run-time rule, its tiles per SM unrounded (the launcher rounds; a step's batch
    # varies about the mean it is priced at, and rounded it would make a step faster as its batch grows):
    # 32 / (1.1 x 32 tiles x 8 / 132 = 2.13) = 15, capped at 14; 4 sequences: 32 / 8.53 = 3.75; 64: 1
    h100 = get_gpu("h100")
    assert cost.fa3_split(np.array([1.0, 4.0, 64.0]), 8, 4096, h100, m_blocks=1.0, tile=128.0).tolist() == pytest.approx([14.0, 3.75, 1.0], rel=1e-12)
    # the one-sequence count caps it: 2 KV heads at 2,048 keys (16 tiles) fill at most 32 of 132 SMs, 0.85 of that at
    # 14 splits; the run-time rule asks ceil(16 / ceil(0.27)) = 16
    assert cost.fa3_split(1, 2, 2048, h100, m_blocks=1.0, tile=128.0) == 14
    # vLLM passes 32 as the cap under its decode CUDA graphs (Engine.fa3_max_splits) in place of that count: 16
    assert get_engine("vllm").fa3_max_splits == 32 and get_engine("sglang").fa3_max_splits == 0
    assert cost.fa3_split(1, 2, 2048, h100, m_blocks=1.0, tile=128.0, cap=np.array([0.0, 32.0])).tolist() == [14.0, 16.0]
    # 4 tiles or fewer are never split, nor are CTAs that near fill the SMs (16 KV heads x 7 query tiles = 112 >= 105.6)
    assert cost.fa3_split(1, 8, 512, h100, m_blocks=1.0, tile=128.0) == 1
    assert cost.fa3_split(1, 16, 32768, h100, m_blocks=7.0, tile=128.0) == 1


def test_fa3_tile_is_its_paged_decode_tile():
    # hopper/tile_size.h, paged cache without TMA, not causal: (kBlockM, kBlockN)
    m, n = cost.fa3_tile(np.array([64.0, 128.0, 128.0, 128.0, 128.0, 192.0, 256.0, 256.0]), np.array([8.0, 4.0, 4.0, 128.0, 128.0, 8.0, 8.0, 8.0]),
                         np.array([False, False, True, False, True, False, False, True]), np.array([False] * 7 + [True]))
    assert m.tolist() == [192.0, 64.0, 64.0, 128.0, 128.0, 128.0, 128.0, 128.0]
    assert n.tolist() == [160.0, 128.0, 96.0, 128.0, 160.0, 96.0, 80.0, 64.0]


def test_fa3_streams_an_fp8_cache_at_its_own_rate_after_casting_the_query():
    # FlashAttention-3 on an FP8 cache: its bandwidth share (attn_decode_bw_eff_fa3_fp8) and one launch more
    # (kernel_overhead_s, the query's cast to FP8); on a BF16 cache it is XQA's rate
    from dataclasses import replace

    h100 = get_gpu("h100")
    cal = replace(documented(), attn_decode_bw_eff_fp8=0.8, attn_decode_bw_eff_fa3_fp8=0.5, kernel_overhead_s=3e-6,
                  attn_overhead_s=9e-6, attn_decode_head_s=0.0)

    def t(fa3, kv_fp8):
        return float(cost.attention_decode_time(1.0, 1e9, h100, cal, kv_fp8=kv_fp8, fa3=fa3)[0])

    hbm = h100.hbm_bandwidth_bytes_per_s
    assert t(True, True) == pytest.approx(1e9 / (hbm * 0.5) + 12e-6, rel=1e-12)
    assert t(False, True) == pytest.approx(1e9 / (hbm * 0.8) + 9e-6, rel=1e-12)
    assert t(True, False) == t(False, False)


@pytest.mark.parametrize("kv", ["bfloat16", "fp8"])
@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_fa3_decode_in_the_operator_graph_is_the_per_engine_tables_price(tmp_path, kv, engine):
    # SGLang's and vLLM's GQA decode on H100 run FlashAttention-3's kernel (GqaDecode) in a serving step and in their
    # per-engine kernel rows, priced alike around it: 2 sequences at 4,096 cached keys, 32 query and 8 KV heads of 128:
    # 32 tiles of 128 keys (96 on an FP8 cache: 43), 1.1 x 2 x 32 x 8 / 132 = 4.27 tiles per SM (unrounded, as fa3_split
    # prices it), so 32 / 4.27 = 7.5 splits reading 7.5 x ceil(4.27) x 128 = 4,800 keys (FP8: 5.73 tiles per SM,
    # 43 / 5.73 = 7.5 splits, 7.5 x ceil(5.69) x 96 = 4,320 keys)
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.measure.kernel_tables import predict, read_csv
    from llm_codesign.spec.kinds import GQA, DenseFfn
    from llm_codesign.spec.model import Layer, ModelSpec
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision

    h100 = get_gpu("h100")
    cal = calibration_for(h100)
    m = ModelSpec("toy", hidden=4096, vocab=32000, groups=((Layer(GQA(heads=32, kv_heads=8, head_dim=128, v_head_dim=128), DenseFfn(inter=14336)), 1),))
    prec = Precision.of("bf16", kv="fp8" if kv == "fp8" else None)
    got = layer_ops(m, m.groups[0][0], 1.0, h100, cal, prec=prec, sh=Plan(), b=Batch(dec_seqs=2.0, dec_ctx=4096.0),
                    prefix="layer", parts=("attn",), engine=get_engine(engine))
    core = next(o for o in got if o.role == "core_decode")
    keys, kv_bytes = (4320, 1.0) if kv == "fp8" else (4800, 2.0)
    assert float(core.work[1]) == pytest.approx(2 * keys * 8 * 2 * 128 * kv_bytes + 2 * 32 * 2 * 128 * 2.0, rel=1e-12)
    p = tmp_path / "d.csv"
    source = {"sglang": "fa3", "vllm": "vllm_flash_attn_fa3"}[engine]
    p.write_text("system,framework,kernel_source,batch_size,isl,step,num_heads,num_key_value_heads,head_dim,window_size,kv_cache_dtype,latency_ms\n"
                 f"h100_sxm,{engine},{source},2,1,4095,32,8,128,0,{kv},0.01\n")
    pred, _ = predict(*read_csv(p), calibration_for)
    assert float(core.time) * 1e3 == pytest.approx(pred[0], rel=1e-12)


def test_fa3_runs_its_local_tile_where_the_window_caps_the_keys():
    # FlashAttention-3 drops a window as long as the keys (flash_api.cpp: window_size_left >= seqlen_k - 1) and runs its
    # local tile under a shorter one: at head dim 256 on a BF16 cache 64 keys a tile, not 80 (tile_size_fwd_sm90).
    # One rule for a serving step and a kernel-table row (GqaDecode): a 128-key window over 128 keys is no window,
    # over 129 or 4,096 it is
    from llm_codesign.cost.mixers import GqaDecode

    h100 = get_gpu("h100")
    ctx = np.array([100.0, 128.0, 129.0, 4096.0])
    k = GqaDecode(h100, get_engine("sglang"), tokens=1.0, seqs=1.0, kv_heads=8.0, heads=16.0, head_dim=256.0,
                  keys=np.minimum(ctx, 128.0), ctx=ctx, window=128.0, kv_fp8=False)
    assert k.tile.tolist() == [80.0, 80.0, 64.0, 64.0]
    # the tables' rows, an engine a row: TensorRT-LLM's row reads XQA's 64-key tiles, the windows' alike
    rows = GqaDecode(h100, [get_engine("trtllm"), get_engine("vllm")], tokens=np.ones(2), seqs=np.ones(2), kv_heads=np.full(2, 8.0),
                     heads=np.full(2, 16.0), head_dim=np.full(2, 256.0), keys=np.full(2, 128.0), ctx=np.full(2, 4096.0),
                     window=np.full(2, 128.0), kv_fp8=np.zeros(2, bool))
    assert rows.tile.tolist() == [64.0, 64.0] and rows.fa3.tolist() == [False, True]


def test_helix_ranks_read_fa3s_local_tile_where_the_window_caps_the_keys():
    # Helix over 2 ranks, 200 cached keys under a 128-key window: each rank holds 100 of them and reads its 64 of the
    # window's, so the window caps the keys it reads and FlashAttention-3 runs its local 64-key tile: one tile of 64,
    # not one of 80 (the rank's 100 keys against the window, 100 < 128, took 80 before). 64 query and 8 KV heads of 256
    # on H100, one sequence, a BF16 cache: 64 keys x 8 KV heads x 2 x 256 x 2 bytes, and the query and output
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.spec.kinds import GQA, DenseFfn
    from llm_codesign.spec.model import Layer, ModelSpec
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision

    h100 = get_gpu("h100")
    m = ModelSpec("toy", hidden=4096, vocab=32000,
                  groups=((Layer(GQA(heads=64, kv_heads=8, head_dim=256, v_head_dim=256, window=128), DenseFfn(inter=14336)), 1),))
    got = layer_ops(m, m.groups[0][0], 1.0, h100, calibration_for(h100), prec=Precision.of("bf16"), sh=Plan(kvp=2),
                    b=Batch(dec_seqs=1.0, dec_ctx=200.0), prefix="layer", parts=("attn",), engine=get_engine("sglang"))
    core = next(o for o in got if o.role == "core_decode")
    assert float(core.work[1]) == 64 * 8 * 2 * 256 * 2.0 + 64 * 512 * 2.0


def _prefill_core(gpu, engine, layer, prec=None):
    """The core_prefill op of one layer's attention in a serving step: 2 sequences of 1,024 new tokens, no cache."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.spec.model import ModelSpec
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision

    m = ModelSpec("toy", hidden=4096, vocab=32000, groups=((layer, 1),))
    got = layer_ops(m, m.groups[0][0], 1.0, gpu, calibration_for(gpu), prec=prec or Precision.of("bf16"), sh=Plan(),
                    b=Batch(pf_tokens=2048.0, pf_seqs=2.0), prefix="layer", parts=("attn",), engine=get_engine(engine))
    return next(o for o in got if o.role == "core_prefill")


def _gqa_layer():
    from llm_codesign.spec.kinds import GQA, DenseFfn
    from llm_codesign.spec.model import Layer

    return Layer(GQA(heads=32, kv_heads=8, head_dim=128, v_head_dim=128), DenseFfn(inter=14336))


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_fa3_prefill_golden_from_the_fitted_values(tmp_path, engine):
    # SGLang's and vLLM's GQA prefill on H100 run FlashAttention-3 at its own fitted rates (fitted.toml [hopper], fit 6 of
    # benchmarks/fit_hopper_kernels.py), with no cost per work item (its persistent tile scheduler). By hand, 2 sequences of
    # 1,024 tokens, 32 query and 8 KV heads of 128, BF16: 512.5 keys a query (causal), 2 x 2 x 32 x 1,024 x 512.5 x 256
    # FLOPs at 0.981425 of 989.4 TFLOPS, 2 x 32 x 1,024 x 512.5 exponentials at 2.21696e-13 s, ramped 1 + 578.711 / 512.5;
    # the bytes (2,048 x (8 + 32) x 256 x 2) stream in 15 us, under the math; plus the fixed 13.2725 us
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.measure.kernel_tables import predict, read_csv

    h100 = get_gpu("h100")
    cal = calibration_for(h100)
    assert (cal.attn_prefill_eff_fa3, cal.attn_prefill_eff_fa3_fp8, cal.attn_prefill_overhead_fa3_s) == (0.981425, 0.546306, 1.32725e-05)
    flops, scores = 2 * 2 * 32 * 1024 * 512.5 * 256, 2 * 32 * 1024 * 512.5
    t_c = (flops / (989.4e12 * 0.981425) + scores * 2.21696e-13) * (1 + 578.711 / 512.5)
    assert 2048 * 40 * 256 * 2 / (3.35e12 * cal.bw_eff) < t_c
    want = t_c + 1.32725e-05
    assert want == pytest.approx(6.6834e-05, rel=1e-4)
    core = _prefill_core(h100, engine, _gqa_layer())
    assert float(core.time) == pytest.approx(want, rel=1e-12)
    # the per-engine kernel table's row of the same shape, priced alike
    p = tmp_path / "p.csv"
    source = {"sglang": "fa3", "vllm": "vllm_flash_attn_fa3"}[engine]
    p.write_text("system,framework,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,window_size,kv_cache_dtype,latency_ms\n"
                 f"h100_sxm,{engine},{source},2,1024,32,8,128,0,bfloat16,0.07\n")
    pred, lab = predict(*read_csv(p), calibration_for)
    assert pred[0] == pytest.approx(want * 1e3, rel=1e-12) and lab == [f"h100 {engine} kv bfloat16 fa3"]


@pytest.mark.parametrize("engine", ["trtllm", "sglang", "vllm", "atom"])
@pytest.mark.parametrize("gpu", ["h100", "h200", "a100", "b200", "mi300x"])
def test_fa3_prefill_runs_where_the_engine_runs_it(engine, gpu):
    # the family per engine and GPU: SGLang's fa3 backend and vLLM's FLASH_ATTN on FA3, their Hopper defaults; nowhere else
    assert cost.runs_fa3_prefill(get_engine(engine), get_gpu(gpu)) == (engine in ("sglang", "vllm") and gpu in ("h100", "h200"))
    assert not cost.runs_fa3_prefill(None, get_gpu(gpu))  # the kernel tables' own rows


def test_fa3_prefill_is_gqa_only_and_no_factor():
    # GQA prefill on Hopper is priced as FA3's kernel, not TensorRT-LLM's times 1.07; MLA prefill keeps its cited factor
    # (FA3's MLA path, not what the GQA rows time): SGLang's and vLLM's MLA core is TensorRT-LLM's times 1.07
    from llm_codesign.spec.kinds import MLA, DenseFfn
    from llm_codesign.spec.model import Layer

    for e in ("sglang", "vllm"):
        assert get_engine(e).attention_time_factor("hopper", "gqa", "prefill", kv_fp8=False) == 1.0
        assert get_engine(e).fa3_prefill == ("hopper",)
    assert get_engine("trtllm").fa3_prefill == ()
    h100 = get_gpu("h100")
    mla = Layer(MLA(heads=16, v_head_dim=128, q_lora_rank=1536, kv_lora_rank=512, rope_dim=64, nope_dim=128), DenseFfn(inter=14336))
    trt = float(_prefill_core(h100, "trtllm", mla).time)
    for e in ("sglang", "vllm"):
        assert float(_prefill_core(h100, e, mla).time) == pytest.approx(1.07 * trt, rel=1e-12)


@pytest.mark.parametrize("engine, gpu", [("trtllm", "h100"), ("trtllm", "b200"), ("sglang", "b200"), ("vllm", "b200"), ("trtllm", "a100"),
                                         ("sglang", "a100")])
@pytest.mark.parametrize("kv", [None, "fp8"])
def test_prefill_outside_fa3_is_the_tables_kernel(engine, gpu, kv):
    # TensorRT-LLM everywhere and every engine off Hopper: GQA prefill is the kernel tables' formula, its own efficiency of the
    # math's peak, fixed cost and cost per (sequence x query head), as before FA3's family (no engine factor for GQA prefill there)
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.spec.precision import Precision

    g = get_gpu(gpu)
    cal = calibration_for(g)
    fp8 = kv == "fp8" and g.supports("fp8")
    keys = 512.5
    t_c = ((2 * 2 * 32 * 1024 * keys * 256) / (g.peak("fp8" if fp8 else "bf16") * (cal.attn_prefill_eff_fp8 if fp8 else cal.attn_prefill_eff))
           + 2 * 32 * 1024 * keys * cal.attn_prefill_score_s) * (1 + cal.attn_prefill_s_half / keys)
    t_m = 2048 * (8 * 256 * (1.0 if kv == "fp8" else 2.0) + 32 * 256 * 2.0) / (g.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    want = max(t_c, t_m) + cal.attn_prefill_overhead_s + 2 * 32 * cal.attn_prefill_head_s
    core = _prefill_core(g, engine, _gqa_layer(), prec=Precision.of("bf16", kv=kv))
    assert float(core.time) == pytest.approx(want, rel=1e-12)


def test_mla_decode_work_items_are_trtllm_gens_ctas_on_blackwell():
    # TRTLLM-Gen's MLA generation kernel (fmhaKernels.cuh selectMlaGenerationKernel@fb28d72) puts the heads in the MMA's
    # rows: 768 tokens of 128 heads on B200 (148 SMs) need 768 x 8 = 6,144 16-head CTAs, over one wave, so 64-head
    # tiles, 2 a token; one token over 1,024 keys: 8 CTAs, split min(1,024 / 256, 148 // 8) = 4 ways, 256 keys a CTA,
    # so 16-head tiles, 8; over 32,768 keys the split (18) leaves 1,820 keys a CTA, over 1,024: 64-head tiles; 16 heads
    # (32 or fewer) 16-head tiles; 8 heads one 8-head tile: a CTA per query token, whatever the sequences
    b200 = get_gpu("b200")
    got = cost.mla_decode_work_items(np.array([768.0, 1.0, 1.0, 64.0, 64.0]), np.array([128.0, 128.0, 128.0, 16.0, 8.0]),
                                     np.array([1536.0, 1024.0, 32768.0, 1536.0, 1536.0]), b200, seqs=np.array([768.0, 1, 1, 32, 32]))
    assert got.tolist() == [1536.0, 8.0, 2.0, 64.0, 64.0]


def test_a_speculative_verify_of_few_sequences_packs_query_tokens_x_heads_on_blackwell():
    # the grouped MLA generation kernel (fmhaKernels.cuh:853-897 usesGroupedMlaGenerationKernel@fb28d72: more than one
    # query token, 8/16/32 heads, at most 16 sequences): a sequence's q x heads rows in 64-row CTAs. MTP3's verify on
    # B200 at TP8 (16 heads): 4 x 16 = 64 rows, one CTA, not 4 per-token 16-head CTAs; 16 sequences: 16; 2 sequences of
    # 4 tokens at 32 heads: 2 x ceil(128 / 64) = 4 (per token: 8 x 2 = 16); 128 heads or 17 sequences keep the per-token
    # CTAs (4 tokens of 128 heads over 1,536 keys: 32 16-head CTAs split 4 ways, 384 keys each, so 16-head tiles: 4 x 8)
    b200 = get_gpu("b200")
    got = cost.mla_decode_work_items(np.array([4.0, 64.0, 8.0, 4.0, 68.0]), np.array([16.0, 16.0, 32.0, 128.0, 16.0]),
                                     np.full(5, 1536.0), b200, seqs=np.array([1.0, 16.0, 2.0, 1.0, 17.0]))
    assert got.tolist() == [1.0, 16.0, 4.0, 32.0, 68.0]


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_mla_decode_work_items_on_hopper_are_64_row_tiles_of_tokens_x_heads(gpu):
    # FlashMLA (TensorRT-LLM's and vLLM's SM90 MLA decode: BLOCK_SIZE_M 64 over seqlen_q x heads rows), FlashAttention-3
    # (SGLang: kBlockM 64 at head dims 64 + 512, PackGQA) and FlashInfer's MLA (cta_tile_q 64 over qo_len x heads) each
    # tile a sequence's query tokens x heads in 64 rows: 768 sequences of one token at 128 heads (TP 1) 2 tiles each,
    # 1,536; 16 heads (TP 8) one tile each, 768; 4 MTP tokens a sequence x 16 heads = 64 rows, one tile, 256 items for
    # 1,024 tokens; 4 x 32 = 128 rows, 2 tiles, 512; 1 head, 1 tile. The old count was tokens x heads: 98,304, 12,288,
    # 16,384, 32,768 and 1. The keys do not enter.
    g = get_gpu(gpu)
    got = cost.mla_decode_work_items(np.array([768.0, 768.0, 1024.0, 1024.0, 1.0]), np.array([128.0, 16.0, 16.0, 32.0, 1.0]),
                                     np.array([1536.0, 1536.0, 8192.0, 8192.0, 1.0]), g, seqs=np.array([768.0, 768.0, 256.0, 256.0, 1.0]))
    assert got.tolist() == [1536.0, 768.0, 256.0, 512.0, 1.0]


def _h100_mla_core(seqs, keys, kv="bf16"):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    h100 = get_gpu("h100")
    cal = calibration_for(h100)
    m = get_model("deepseek-r1")
    got = layer_ops(m, m.groups[0][0], 1.0, h100, cal, prec=Precision.of("fp8_block", kv=kv), sh=Plan(),
                    b=Batch(dec_seqs=seqs, dec_ctx=keys), prefix="layer", parts=("attn",))
    return next(o for o in got if o.role == "core_decode"), cal


def test_mla_decode_on_h100_at_1024_sequences_prices_flashmlas_tiles_and_its_per_sequence_blocks():
    # DeepSeek-R1's absorbed MLA on H100, TP 1 (128 heads), BF16 KV: 1,024 sequences at 1,023 cached keys, FlashMLA's
    # shape in the H100 MLA table (TensorRT-LLM 1.3.0rc20 generation_mla_perf: 684.8 us with its RoPE pass). FlashMLA
    # works a sequence as ceil(1,023 / 64) = 16 key blocks + 5 of fixed overhead (get_decoding_sched_meta.cu:51), 21
    # blocks = 1,344 keys. Math 2 x 1,024 x 128 x 1,344 x 1,088 = 383.3 GFLOP at 0.6 of 989.4 TFLOP/s: 645.7 us; bytes
    # the 1,152-byte latent of 1,344 keys plus each head's query (1,152) read and output (1,024) written, 1.871 GB at
    # 0.852 of 3.35 TB/s: 655.4 us, binding; the fixed cost, 2,048 64-row tiles (2 a sequence) at decode_item_s and
    # the split-KV combine kernel FlashMLA launches after every decode kernel (3.0 us, kernel_overhead_s; two launches
    # in all): 685.2 us (549.6 us without the overhead blocks, 1.674 ms with an item per head). The op's reported
    # bytes stay the 1,023 keys read.
    core, cal = _h100_mla_core(1024.0, 1023.0)
    assert float(core.work[1]) == 1024 * 1023 * 1152.0 + 1024 * 128 * (1152.0 + 1024.0)
    nbytes = 1024 * 1344 * 1152.0 + 1024 * 128 * (1152.0 + 1024.0)
    t = nbytes / (3.35e12 * cal.attn_decode_bw_eff) + cal.attn_overhead_s + 2048 * cal.decode_item_s + cal.kernel_overhead_s
    assert cal.kernel_overhead_s == 3.0e-6 and float(core.kernels) == 2.0
    assert float(core.time) == pytest.approx(t, rel=1e-9)
    assert float(core.time) == pytest.approx(685.21e-6, abs=0.01e-6)


def test_mla_decode_of_one_sequence_at_1k_keys_on_h100_pays_flashmlas_5_overhead_blocks():
    # one sequence, 1,024 keys, 128 heads (2 tiles), BF16 KV: 16 key blocks + 5 = 21 blocks = 1,344 keys.
    # Bytes 1,344 x 1,152 + 128 x 2,176 = 1,826,816 at 0.852 of 3.35 TB/s: 0.640 us; math 2 x 128 x 1,344 x 1,088 =
    # 374.3 MFLOP at 0.6 of 989.4 TFLOP/s: 0.631 us; the bytes bind, plus the fixed cost, 2 tiles and the combine launch
    core, cal = _h100_mla_core(1.0, 1024.0)
    nbytes = 1344 * 1152.0 + 128 * 2176.0
    assert nbytes == 1_826_816.0
    t = nbytes / (3.35e12 * cal.attn_decode_bw_eff) + cal.attn_overhead_s + 2 * cal.decode_item_s + cal.kernel_overhead_s
    assert float(core.time) == pytest.approx(t, rel=1e-9)
    assert float(core.time) - cal.attn_overhead_s - 2 * cal.decode_item_s - cal.kernel_overhead_s == pytest.approx(0.63981e-6, abs=0.0001e-6)


def test_flashmla_fp8_transpose_of_one_block_on_h100():
    # one 64-key block of V, 64 keys x 512 FP8 values = 32 KiB read and 32 KiB written in shared memory: 65,536 bytes at
    # 128 B/clk is 512 clocks of one SM, 279.8 ns at 1.83 GHz; over the GPU's 132 SMs (989.4 TFLOP/s / 32 = 30.92 TB/s of
    # shared memory) 2.120 ns a block. 132 tiles of one block each take the 512 clocks. Blocks are ceil(keys / 64): 1 key
    # and 64 keys 1 block, 65 keys 2; FlashMLA's 5 overhead blocks hold no keys and no keys none
    h100 = get_gpu("h100")
    assert float(cost.flashmla_fp8_transpose_time(1.0, 64.0, 512, h100)) == pytest.approx(2.1196e-9, abs=0.0001e-9)
    assert float(cost.flashmla_fp8_transpose_time(132.0, 64.0, 512, h100)) == pytest.approx(512 / 1.83e9, rel=1e-4)
    got = cost.flashmla_fp8_transpose_time(np.array([2.0, 2.0, 2.0, 2.0]), np.array([0.0, 1.0, 64.0, 65.0]), 512, h100)
    assert (got / float(cost.flashmla_fp8_transpose_time(1.0, 64.0, 512, h100))).tolist() == pytest.approx([0.0, 2.0, 2.0, 4.0])


def test_mla_decode_of_one_sequence_on_an_fp8_cache_on_h100_pays_flashmlas_v_transpose():
    # one sequence, 1,024 keys, 128 heads (2 tiles), FP8 KV, TensorRT-LLM's FlashMLA (the kernel tables' own). Math
    # 2 x 128 x 1,344 x 1,088 = 374.3 MFLOP (21 blocks, as BF16's) at 0.6 of 1,978.9 TFLOP/s: 0.3153 us, then the V
    # transpose of 2 tiles x 16 key blocks x 65,536 bytes = 2,097,152 bytes at 30.92 TB/s: 0.0678 us, serialised with the
    # math: 0.3831 us. Bytes 1,344 x 576 (the FP8 latent) + 128 x (576 FP8 query + 1,024 BF16 output) = 978,944 at 0.861
    # of 3.35 TB/s: 0.3395 us, which bound it before the transpose was priced
    core, cal = _h100_mla_core(1.0, 1024.0, kv="fp8")
    math = 2 * 128 * 1344 * 1088 / (0.6 * 1.9789e15)
    transpose = 2 * 16 * 65536 / (9.894e14 / 32)
    assert 978944 / (3.35e12 * cal.attn_decode_bw_eff_fp8) == pytest.approx(0.3395e-6, abs=0.0001e-6)
    fixed = cal.attn_overhead_s + 2 * cal.decode_item_s + cal.kernel_overhead_s  # the combine launch too
    assert float(core.time) == pytest.approx(math + transpose + fixed, rel=1e-9)
    assert float(core.time) - fixed == pytest.approx(0.3831e-6, abs=0.0001e-6)


def test_flashmla_keys_and_where_it_runs():
    # ceil(keys / 64) blocks + 5 (dense_decode.h:103-104), in keys: 1 -> 6 blocks, 64 -> 6, 65 -> 7, 1,024 -> 21
    assert cost.flashmla_keys(np.array([1.0, 64.0, 65.0, 1024.0])).tolist() == [384.0, 384.0, 448.0, 1344.0]
    from llm_codesign.spec.engines import get_engine

    h100, b200 = get_gpu("h100"), get_gpu("b200")
    # TensorRT-LLM (and the kernel tables' own) on SM90; vLLM's and SGLang's Hopper MLA decode is FlashAttention-3's
    assert [cost.runs_flashmla_decode(e, h100) for e in (None, get_engine("trtllm"), get_engine("vllm"), get_engine("sglang"))] \
        == [True, True, False, False]
    assert not cost.runs_flashmla_decode(None, b200)


def test_mla_decode_work_items_elsewhere_are_tokens_x_heads():
    # kernels not read (A100's, AMD's): one item per token and head
    for gpu in ("a100", "mi300x"):
        assert float(cost.mla_decode_work_items(768.0, 128.0, 1536.0, get_gpu(gpu), seqs=768.0)) == 768.0 * 128


def test_mla_decode_at_768_sequences_prices_the_kernels_ctas_and_its_rope_pass():
    # DeepSeek-R1's absorbed MLA on B200, one attention-DP rank (TP 1, 128 heads), FP8 KV: 768 sequences at 1,536 cached
    # keys. Math 2 x 768 x 128 x 1,536 x (2 x 512 + 64) = 328.56 GFLOP at 0.6 of the 4.5 PFLOP/s FP8 peak; bytes the
    # 576-byte latent of each key plus each head's query (576 FP8) read and output (512 BF16) written; then the fixed
    # cost and 1,536 CTAs (two 64-head tiles a token) at decode_item_s, where 768 x 128 head items cost 0.78 ms before.
    # The RoPE / FP8-quantisation pass before it (mla_rope_generation): the rope part of the query read and written
    # (128 x 64 x 2 x 2), the latent read and written to the cache (576 x (2 + 1)), the query quantised (128 x 576 x 3)
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    b200 = get_gpu("b200")
    cal = calibration_for(b200)
    m = get_model("deepseek-r1")
    got = layer_ops(m, m.groups[0][0], 1.0, b200, cal, prec=Precision.of("fp8_block", kv="fp8"), sh=Plan(),
                    b=Batch(dec_seqs=768.0, dec_ctx=1536.0), prefix="layer", parts=("attn",))
    core = next(o for o in got if o.role == "core_decode")
    rope = next(o for o in got if o.role == "mla_rope")
    flops = 328_564_998_144.0
    nbytes = 768 * 1536 * 576.0 + 768 * 128 * (576.0 + 1024.0)
    assert float(core.work[0]) == flops and float(core.work[1]) == nbytes
    t = max(flops / (4.5e15 * 0.6), nbytes / (8e12 * cal.attn_decode_bw_eff_fp8)) + cal.attn_overhead_s + 1536 * 7.93489e-9
    assert float(core.time) == pytest.approx(t, rel=1e-9)
    assert float(core.time) == pytest.approx(144.66e-6, abs=0.01e-6)  # 121.69 us of math (117.6 of bytes) + 10.79 + 12.19
    assert float(rope.time) == pytest.approx(768 * (128 * 64 * 4.0 + 576 * 3.0 + 128 * 576 * 3.0) / (8e12 * cal.bw_eff), rel=1e-12)


def test_an_unlisted_family_has_no_sm_clock_and_is_refused_where_one_is_read(h100):
    # BF16 FLOP per SM clock is known by family (spec.hardware.BF16_FLOP_PER_CLK_SM); a GPU file's own family has none
    # (was: Hopper's 4,096 guessed in silence). Narrow groups and packed kernels read no clock and still price
    from dataclasses import replace

    from llm_codesign.errors import InputError

    mine = replace(h100, family="myfam")
    cal = replace(documented(), attn_decode_max_group=32.0, attn_decode_wide_flop_clk=30.0)
    with pytest.raises(InputError) as e:
        _ = mine.sm_clocks_per_s
    assert str(e.value).startswith("gpu.family: 'myfam' is not valid; a family whose BF16 FLOP per SM clock is known")
    with pytest.raises(InputError, match="gpu.family"):
        cost.attention_decode_time(1e12, 1.0, mine, cal, group=64.0, mmha=True)
    assert float(cost.attention_decode_time(1e12, 1.0, mine, cal, group=16.0, mmha=True)[0]) == \
        float(cost.attention_decode_time(1e12, 1.0, h100, cal, group=16.0, mmha=True)[0])


def test_flashmla_launches_its_combine_always_and_its_metadata_per_layer_in_older_builds():
    # TensorRT-LLM's FlashMLA launches the split-KV combine after every decode kernel (run_flash_splitkv_fwd_mla@08f1ea31),
    # and a build without the mla_meta fusion (the spring-2025 H200 run's) the scheduler-metadata kernel before each call:
    # one and two launches beside the decode kernel, 3.0 us each (kernel_overhead_s). H100, one sequence, 1,024 keys, BF16
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    trt, h100 = get_engine("trtllm"), get_gpu("h100")
    assert cost.flashmla_extra_launches(None) == cost.flashmla_extra_launches(trt) == 1.0
    assert cost.flashmla_extra_launches(trt.without("mla_meta")) == 2.0
    cal, m = calibration_for(h100), get_model("deepseek-r1")

    def core(engine, gpu=h100):
        got = layer_ops(m, m.groups[0][0], 1.0, gpu, calibration_for(gpu), prec=Precision.of("fp8_block"), sh=Plan(),
                        b=Batch(dec_seqs=1.0, dec_ctx=1024.0), prefix="layer", parts=("attn",), engine=engine)
        o = next(o for o in got if o.role == "core_decode")
        return float(o.time), float(o.kernels)

    (t1, n1), (t2, n2), (_t0, n0) = core(trt), core(trt.without("mla_meta")), core(None)
    assert (n0, n1, n2) == (2.0, 2.0, 3.0)
    # the combine is a plain <<<>>> launch (flash_fwd_mla_kernel.h@08f1ea31): no PDL credit on it (Op.no_pdl 1), so a
    # step credits PDL on the decode kernel (and, in the older build, the metadata kernel) alone
    from llm_codesign.serve.aggregated import op_step_time

    got = layer_ops(m, m.groups[0][0], 1.0, h100, cal, prec=Precision.of("fp8_block"), sh=Plan(),
                    b=Batch(dec_seqs=1.0, dec_ctx=1024.0), prefix="layer", parts=("attn",), engine=trt)
    o = next(o for o in got if o.role == "core_decode")
    assert float(o.no_pdl) == 1.0 and float(op_step_time(o, 1e-6, one_layer=True)) == pytest.approx(t1 - 1e-6, rel=1e-9)
    assert t2 - t1 == pytest.approx(cal.kernel_overhead_s, rel=1e-9)
    # not where FlashMLA does not run: SGLang's fa3 on Hopper, TensorRT-LLM's TRTLLM-Gen on B200
    assert core(get_engine("sglang"))[1] == 1.0 and core(trt, get_gpu("b200"))[1] == 1.0
