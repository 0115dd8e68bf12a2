"""leftD: SGLang's Triton attention backend, what it runs where FlashAttention-3/FlashInfer take no head size
(spec.engines.head_dims, the --attention-backend triton its export writes), priced by its own rules (cost.kernels:
triton_decode_split, triton_decode_floor, triton_decode_grid, triton_prefill_tiles, TRITON_PREFILL_EFF) in the kernel tables
and the serving step alike (leftD, tritonW)."""
from __future__ import annotations

import pytest

from llm_codesign.cost import kernels as cost
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.measure.kernel_tables import Table
from llm_codesign.spec.engines import SGLANG, VLLM
from llm_codesign.spec.engines.head_dims import head_dim_note
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model

H100 = get_gpu("h100")
DEC = dict(system="h100_sxm", framework="sglang", version="0.5.14", op_name="generation_attention", source_table="x", isl="1",
           window_size="0", attn_dtype="bfloat16", kv_cache_dtype="bfloat16")


def test_split_count_follows_get_num_kv_splits():
    # one sequence, 2 query heads on 1 KV head (group 2): grid 1 x ceil(2 / min(16, 2)) = 1; floor(132 x log2(131072 / 64))
    # = 132 x 11 = 1,452 cores -> min(1,452, 8) = 8 splits of 16,384 keys
    assert float(cost.triton_decode_split(1, 2, 1, 131072, H100)) == 8.0
    # 256 sequences x 8 KV heads of group 4: grid 2,048 > 132 x log2(4096 / 64) = 792 cores: one split
    assert float(cost.triton_decode_split(256, 32, 8, 4096, H100)) == 1.0
    # MHA (group 1) counts every query head: 4 x 16 = 64, floor(132 x 4) = 528 -> ceil(528 / 64) = 9, capped at 8
    assert float(cost.triton_decode_split(4, 16, 16, 1024, H100)) == 8.0


def test_decode_floor_prices_the_split_cap_at_long_context():
    # the shipped table's row (8675): batch 1, 2 heads on 1 KV head, head dim 512, 131,072 keys, BF16: 2.808 ms measured.
    # 8 splits of 16,384 keys x 512 dims x 170 ns / 512 = 2.785 ms, the floor over FlashAttention-3's price (0.115 ms)
    row = dict(DEC, kernel_source="triton", batch_size="1", num_heads="2", num_key_value_heads="1", head_dim="512", step="131071",
               latency_ms="2.807901")
    pred, label = Table("decode_attention", [row]).predict(lambda g: calibration_for(g))
    assert pred[0] == pytest.approx(16384 * 170e-9 * 1e3, rel=1e-9) and label[0] == "h100 sglang kv bfloat16 triton"
    assert abs(pred[0] / 2.807901 - 1) < 0.01
    fa3, _ = Table("decode_attention", [dict(row, kernel_source="fa3")]).predict(lambda g: calibration_for(g))
    assert fa3[0] < 0.2 * pred[0]  # what the Triton backend was priced as before: FA3's 16+ splits fill the GPU


def test_prefill_runs_its_whole_tiles_at_its_own_share_of_the_bf16_peak():
    # batch 1, 16,384 tokens, 8 heads (1 KV head), head dim 512, causal: Hopper's 32 x 64 tiles, query block m (0..511)
    # visits ceil(32 (m + 1) / 64) key tiles: 2 x (1 + ... + 256) = 65,792 a (sequence, head), none skipped; each
    # 32 x 64 pairs x 2 x (512 + 512) = 4,194,304 FLOPs (0.38% over the exact causal 2 x 16384 x 8192.5 x 2 x 512 / 8) at
    # 0.102 x 989.4 TFLOP/s (BF16 cache) or 0.062 x the same (FP8 cache, BF16 query), the exponentials, no ramp, the fixed
    # cost, no cost per (sequence x head) item
    cal = calibration_for(H100)
    assert [float(x) for x in cost.triton_prefill_tiles(16384, 0, 0, 512)] == [65792.0, 0.0, 32.0]
    flops, scores = 8 * 65792 * 32 * 64 * 2.0 * 1024, 8 * 16384 * 8192.5
    for kv, eff in (("bfloat16", 0.102), ("fp8", 0.062)):
        row = dict(DEC, op_name="context_attention", kernel_source="triton", batch_size="1", isl="16384", num_heads="8",
                   num_key_value_heads="1", head_dim="512", kv_cache_dtype=kv, latency_ms="1")
        pred, label = Table("prefill_attention", [row]).predict(lambda g: cal)
        want = flops / (H100.peak("bf16") * eff) + scores * cal.attn_prefill_score_s + cal.attn_prefill_overhead_s
        assert pred[0] == pytest.approx(want * 1e3, rel=1e-9) and label[0].endswith("triton")
    # measured 22.6-24.2 ms (BF16) in the shipped table's rows of this shape: 2.2e12 / (0.102 x 989.4e12) = 21.9 ms


def test_windowed_prefill_pays_the_tiles_it_visits_and_skips():
    # the shipped table's row (batch 1, 16 heads on 8 KV heads, head dim 256, window 1024, 16,384 tokens, BF16): 18.085 ms.
    # 64 x 64 tiles: query block m (0..255) visits m + 1 key tiles, skipping those wholly outside the window,
    # max(0, floor((64 m - 1024) / 64)) = max(0, m - 16): 32,896 visited, 1 + ... + 239 = 28,680 skipped, 4,216 computed
    # (136 for m < 16, then 17 each). Per (sequence, head): 4,216 x 64 x 64 x 2 x 512 FLOPs at 0.0544 x 989.4 TFLOP/s
    # = 0.329 ms and 28,680 x 28.7 ns = 0.823 ms: x 16 = 18.50 ms with the exponentials and fixed cost (+2.3%); priced
    # before as the window's exact FLOPs at 0.100 of the peak, 52% under the table's windowed BF16 rows
    assert [float(x) for x in cost.triton_prefill_tiles(16384, 0, 1024, 256)] == [4216.0, 28680.0, 64.0]
    cal = calibration_for(H100)
    row = dict(DEC, op_name="context_attention", kernel_source="triton", batch_size="1", isl="16384", num_heads="16",
               num_key_value_heads="8", head_dim="256", window_size="1024", latency_ms="18.085262")
    pred, _ = Table("prefill_attention", [row]).predict(lambda g: cal)
    keys = (1024 * 1025 / 2 + (16384 - 1024) * 1024) / 16384  # a query's keys in the window, the exponentials' count
    want = (16 * 4216 * 64 * 64 * 2.0 * 512 / (H100.peak("bf16") * 0.0544) + 16 * 28680 * 28.7e-9
            + 16 * 16384 * keys * cal.attn_prefill_score_s + cal.attn_prefill_overhead_s)
    assert pred[0] == pytest.approx(want * 1e3, rel=1e-9)
    assert abs(pred[0] / 18.085262 - 1) < 0.03
    # a chunk after a cached prefix: stage 1 visits the prefix's last `window` keys (16 tiles), each computed while within
    # the window of the block's first query: 64 queries after 4,096 cached keys, window 1024: 16 + 1 tiles, none skipped
    assert [float(x) for x in cost.triton_prefill_tiles(64, 4096, 1024, 256)] == [17.0, 0.0, 64.0]


def test_estimate_prices_the_backend_sglang_runs():
    # Gemma 4's 512-dim global layers: SGLang runs --attention-backend triton on an H100 (head_dims), so every GQA layer is
    # priced as Triton's; on an MI300X AITER's, vLLM never
    g4 = get_model("gemma-4-26b-a4b")
    assert SGLANG.triton_attention(g4, H100, "bf16") and not SGLANG.triton_attention(g4, get_gpu("mi300x"), "bf16")
    assert not VLLM.triton_attention(g4, H100, "bf16") and not SGLANG.triton_attention(get_model("llama-3.1-8b"), H100, "bf16")
    # on a B200 it runs Triton too, untimed there: the fast kernel is priced and the note says so
    b200 = get_gpu("b200")
    assert not SGLANG.triton_attention(g4, b200, "bf16")
    assert head_dim_note(g4, "sglang", b200).endswith("priced as the fast kernel (its Triton kernels are timed on Hopper only) (lint R4)")
    assert head_dim_note(g4, "sglang", H100).endswith("priced as its Triton kernels (H100 kernel table) (lint R4)")



def test_decode_reads_the_keys_not_whole_tiles():
    # its 32-key tile loads are masked past the split's end, so 128 sequences of 2 keys (head dim 512, one head on one KV
    # head, BF16) read 128 x 2 keys x 2 (K, V) x 512 x 2 B, where FA3's price reads whole tiles of fa3_tile's keys: the
    # two prices differ by exactly the extra bytes at the calibrated decode bandwidth (both memory-bound; its grids' floor,
    # 128 x 8 stage-1 CTAs x 4.0 ns and 1.3 MB, 4.6 us, under the fixed cost)
    cal = calibration_for(H100)
    row = dict(DEC, batch_size="128", num_heads="1", num_key_value_heads="1", head_dim="512", step="1", latency_ms="0.01")
    tri, _ = Table("decode_attention", [dict(row, kernel_source="triton")]).predict(lambda g: cal)
    fa3, _ = Table("decode_attention", [dict(row, kernel_source="fa3")]).predict(lambda g: cal)
    tile = float(cost.fa3_tile(512, 1.0, False, False)[1])
    extra = 128 * (tile - 2) * 2 * 512 * 2.0 / (H100.hbm_bandwidth_bytes_per_s * cal.attn_decode_bw_eff)
    assert tile > 2 and (fa3[0] - tri[0]) * 1e-3 == pytest.approx(extra, rel=1e-9)
    # the grid: 128 x 1 head block x 8 CTAs x 4.0 ns; one live split's FP32 partial, 128 x 1 head x 512 x 4 B, written and read
    sec, nbytes = cost.triton_decode_grid(128, 1, 1, 2, H100, head_dim=512)
    assert (float(sec), float(nbytes)) == pytest.approx((128 * 8 * 4.0e-9, 128 * 512 * 4.0 * 2), rel=1e-12)
    # fixR11 (frev11 #4): live splits as the kernel cuts them. 300 keys, 16 heads on 2 KV heads (2 head blocks): 8 splits
    # (ceil(floor(132 x log2(300 / 64)) / 2) = 147, at most 8), each ceil(ceil(300 / 8) / 32) x 32 = 64 keys, so
    # ceil(300 / 64) = 5 live (not min(8, ceil(300 / 32)) = 8): 16 heads x 5 x 512 x 4 B x 2 = 327,680 B; 2 x 8 CTAs x 4.0 ns
    assert float(cost.triton_decode_split(1, 16, 2, 300, H100)) == 8.0
    sec, nbytes = cost.triton_decode_grid(1, 16, 2, 300, H100, head_dim=512)
    assert (float(sec), float(nbytes)) == pytest.approx((2 * 8 * 4.0e-9, 327_680), rel=1e-12)


def test_decode_at_large_batch_pays_its_grids_ctas_and_bytes():
    # the shipped table's row: 2,048 sequences of 2 keys, 16 heads on 2 KV heads (group 8: head blocks of 8, 2 a
    # sequence), head dim 512, BF16: 197.6 us. Stage 1 launches 2,048 x 2 x 8 = 32,768 CTAs (7 of each 8 idle: one split)
    # at 4.0 ns, 131.1 us; then its bytes at 3.35 TB/s x 0.852: keys 2,048 x 2 x 2 KV heads x 2 x 512 x 2 B = 16.8 MB,
    # query and output 2,048 x 16 x 2 x 512 x 2 B = 67.1 MB, the live split's FP32 partials written and read back
    # 2,048 x 16 x 512 x 4 B x 2 = 134.2 MB: 218.1 MB, 76.4 us. 207.5 us (+5.0%); priced before as FA3's items and the keys'
    # bytes, 59.5 us (-70%)
    cal = calibration_for(H100)
    row = dict(DEC, kernel_source="triton", batch_size="2048", num_heads="16", num_key_value_heads="2", head_dim="512", step="1",
               latency_ms="0.197632")
    pred, _ = Table("decode_attention", [row]).predict(lambda g: cal)
    nbytes = 2048 * 2 * 2 * 2 * 512 * 2.0 + 2048 * 16 * 2 * 512 * 2.0 + 2048 * 16 * 512 * 4.0 * 2
    want = 32768 * 4.0e-9 + nbytes / (H100.hbm_bandwidth_bytes_per_s * cal.attn_decode_bw_eff)
    assert pred[0] == pytest.approx(want * 1e3, rel=1e-9)
    assert abs(pred[0] / 0.197632 - 1) < 0.06
    # head dim 256 (group 2, one head block a KV head): 2,048 x 8 x 8 CTAs x 2.4 ns; 64 keys at batch 2,048 split once
    sec, nbytes = cost.triton_decode_grid(2048, 16, 8, 64, H100, head_dim=256)
    assert (float(sec), float(nbytes)) == pytest.approx((131072 * 2.4e-9, 2048 * 16 * 1 * 256 * 8.0), rel=1e-12)
