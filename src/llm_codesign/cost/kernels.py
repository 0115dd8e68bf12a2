"""Array-valued cost formulas: attention, elementwise, collectives (the GEMM's: cost.gemm).

Every function takes numpy arrays (or scalars) and broadcasts, so one code path prices one
deployment or a million. Times in seconds, sizes in bytes and FLOPs. Each returns
(time, compute_time, memory_time) so callers can name the binding resource.
"""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.arrays import masked
from llm_codesign.cost.calibration import Calibration
from llm_codesign.spec.engines import Engine
from llm_codesign.spec.engines.base import CDNA_FAMILIES
from llm_codesign.spec.hardware import Gpu, get_gpu


def decode_work_items(tokens, kv_heads, q_heads, cal: Calibration, kv_fp8):
    """Work items of a decode-attention kernel: per KV head, its query group in slices of up to
    `attn_decode_group_*` heads (1: one query head per item as in masked multi-head attention;
    large: the whole group in one tensor-core tile, as TensorRT-LLM's XQA does for GQA/MQA), the cache
    dtype's (`kv_fp8`: a bool or one per element). Groups wider than `attn_decode_max_group` fall back to one
    item per query head."""
    g = np.where(kv_fp8, cal.attn_decode_group_fp8, cal.attn_decode_group_bf16)
    kv = np.asarray(kv_heads, float)
    group = np.asarray(q_heads, float) / np.maximum(kv, 1.0)
    per_kv = np.where(group > cal.attn_decode_max_group, group, np.ceil(group / g - 1e-9))
    return np.asarray(tokens, float) * kv * per_kv


# TensorRT-LLM's decode-attention kernels: TRTLLM-Gen's generation kernels on Blackwell (SM100), XQA elsewhere
TRTLLM_GEN_FAMILIES = ("blackwell",)


def decode_tile(gpu: Gpu) -> float:
    """Keys a decode-attention CTA loads per step, the unit its share of the keys rounds up to: 64-key warp
    tiles in XQA (flashinfer csrc/xqa/mha.cu:89 warpTile.x, warps past the sequence skip their tile, :1971;
    mha_sm90.cu:93 gemm0WarpGrpTileNbTokens, Hopper's FP8-KV kernel), 128-key tiles in TRTLLM-Gen's generation
    kernels (include/flashinfer/trtllm/fmha/fmhaKernels.cuh:798 mTileSizeKv, all @fb28d72). Fitted as a free
    parameter on each family's decode table it lands on 64-70 (A100, H100) and 129 (B200)."""
    return 128.0 if gpu.family in TRTLLM_GEN_FAMILIES else 64.0


def decode_split(seqs, kv_heads, keys, gpu: Gpu):
    """CTAs a decode-attention kernel splits each (sequence, KV head)'s keys over (split-KV, multi-block
    mode). XQA (TensorRT-LLM decoderXQAImplCommon.h computeMultiBlockCount@12453212): one per 128 keys, at
    most sqrt(8 x that) so the merge does not dominate, cut back where the grid would exceed 8 waves of the
    SMs. TRTLLM-Gen (fmhaKernels.cuh:615-650@fb28d72): at most one per two tiles of keys, and no more than
    fill one wave of the SMs. At least 1. The launchers round each count to a whole number; priced here
    without the rounding (a step's sequences and contexts vary about the mean it is priced at), so a
    step's time never falls as its batch or context grows."""
    kv_ctas = np.maximum(np.asarray(seqs, float) * np.asarray(kv_heads, float), 1.0)
    keys = np.asarray(keys, float)
    if gpu.family in TRTLLM_GEN_FAMILIES:
        return np.maximum(np.minimum(keys / (2.0 * decode_tile(gpu)), gpu.sms / kv_ctas), 1.0)
    mb = keys / 128.0  # kMinHistoryTokensPerBlock
    mb = np.maximum(np.minimum(mb, np.sqrt(mb * 8.0)), 1.0)
    adj = kv_ctas * mb / gpu.sms / 8.0  # waves over kTargetWaveFactor
    return np.maximum(mb / np.maximum(adj, 1.0), 1.0)


def mla_decode_work_items(tokens, heads, keys, gpu: Gpu, *, seqs):
    """Work items of absorbed MLA's decode kernel over `tokens` decode tokens of `seqs` sequences (each its tokens / seqs
    query tokens), `heads` query heads on this GPU sharing the one latent KV head, `keys` keys each. TRTLLM-Gen's MLA
    generation kernel (include/flashinfer/trtllm/fmha/fmhaKernels.cuh:898-937 selectMlaGenerationKernel@fb28d72) packs the
    heads into the MMA's rows, a CTA per query token (numCtasPerSeqQ = its query tokens, :553-555) and tile of heads: 64
    heads a CTA (KeepsMmaAb; 128 heads on a 2-CTA pair, :932-935), or 16 (8 heads or fewer: 8) where the heads are 32 or
    fewer or its useSwapsMmaAbMlaGenKernel (:738-757) finds the 16-head CTAs within one wave of the SMs and their
    split of the keys at most 1,024 a CTA. Hopper's MLA decode kernels each pack a sequence's query tokens x heads into
    64-row tiles, an item per tile: FlashMLA, TensorRT-LLM's on SM90 (aiconfigurator collector/trtllm/collect_mla.py:37-51
    @095f58a5, enable_flash_mla), and vLLM's (FlashMLA csrc/sm90/decode/dense/config.h:5 BLOCK_SIZE_M 64, the query
    reshaped to seqlen_q x heads rows, csrc/api/dense_decode.h:73-78@9241ae3); FlashAttention-3's, SGLang's fa3 backend
    (hopper/tile_size.h:19-20 kBlockM 64 at head dims 64 + 512, PackGQA on a paged or varlen launch, flash_api.cpp:429,
    heuristics.h:11@0251105a); FlashInfer's (include/flashinfer/attention/scheduler.cuh:1603-1626 MLAPlan, cta_tile_q
    64 over qo_len x num_heads, 2-CTA clusters past 64 rows@fb28d72). Elsewhere (other kernels, not read) one item per
    token and head. The split of the keys over CTAs at small batch is not counted, as for GQA (GqaDecode)."""
    tokens, heads = np.asarray(tokens, float), np.asarray(heads, float)
    if gpu.family == "hopper":
        seqs = np.asarray(seqs, float)
        return seqs * np.ceil(tokens / np.maximum(seqs, 1.0) * heads / 64.0 - 1e-9)
    if gpu.family not in TRTLLM_GEN_FAMILIES:
        return tokens * heads
    ctas16 = np.maximum(tokens * np.ceil(heads / 16.0 - 1e-9), 1.0)
    split = np.minimum(np.ceil(np.asarray(keys, float) / 256.0 - 1e-9), np.maximum(np.floor(gpu.sms / ctas16), 1.0))
    swaps = (heads <= 32) | ((ctas16 <= gpu.sms) & (np.asarray(keys, float) / np.maximum(split, 1.0) <= 1024.0))
    tile = np.where(swaps, np.where(heads <= 8, 8.0, 16.0), 64.0)
    # a speculative verify (more than one query token a sequence) of at most 16 sequences at 8, 16 or 32 heads runs the
    # grouped kernel instead: query tokens x heads packed into 64-row CTAs, a sequence's ceil(q x heads / 64)
    # (usesGroupedMlaGenerationKernel / selectGroupedMlaGenerationKernel, fmhaKernels.cuh:853-897@fb28d72; its page of 32
    # tokens is TensorRT-LLM's default tokens_per_block)
    seqs = np.maximum(np.asarray(seqs, float), 1.0)
    q = tokens / seqs
    grouped = (q > 1.0) & np.isin(heads, (8.0, 16.0, 32.0)) & (seqs <= 16.0)
    return np.where(grouped, seqs * np.ceil(q * heads / 64.0 - 1e-9), tokens * np.ceil(heads / tile - 1e-9))


def decode_merge_share(split, gpu: Gpu):
    """Share of the split-KV merge's fixed cost (attn_decode_split_s) a split decode kernel pays. XQA merges
    its CTAs' partial outputs through global memory (the last CTA of a sequence re-reads them behind a
    semaphore, csrc/xqa/mha.cu:2681-2820@fb28d72): 1 - 1 / split, 0 unsplit, continuous in the split.
    TRTLLM-Gen reduces up to 16 splits in the CTA cluster's shared memory (fmhaKernels.cuh:672-681
    CgaSmemReduction@fb28d72), priced free; its global-memory reduction beyond 16 (fewer than 9 sequence x KV
    heads at 4k+ keys on B200) is not priced: a cost that fell as the batch grew past 16 splits would make
    a larger batch's step faster."""
    split = np.asarray(split, float)
    if gpu.family in TRTLLM_GEN_FAMILIES:
        return np.zeros_like(split)
    return 1.0 - 1.0 / np.maximum(split, 1.0)


def decode_keys_read(keys, split, gpu: Gpu, mmha=False, tile=None):
    """Keys a decode-attention kernel loads per (sequence, KV head): each of its `split` CTAs reads its share
    of `keys` in whole tiles (decode_tile, or `tile` keys: FlashAttention-3's, fa3_tile), so short contexts and
    many splits read more than the cache holds. With decode_split's count as priced, the batch's total read
    never falls as the batch grows. The masked MHA kernel (`mmha`: decode_mmha) loads one key per thread group
    and skips those past the sequence (TensorRT-LLM decoderMaskedMultiheadAttentionTemplate.h, its key loop's
    ti < tlength@2a9abd95): its keys, in no tiles."""
    split = np.asarray(split, float)
    tile = np.where(mmha, 1.0, decode_tile(gpu) if tile is None else tile)
    return split * np.ceil(np.asarray(keys, float) / split / tile - 1e-9) * tile


def runs_fa3_decode(engine: Engine | None, gpu: Gpu) -> bool:
    """Whether an engine's GQA decode runs FlashAttention-3's paged split-KV kernel on this GPU (Engine.fa3_decode:
    SGLang's and vLLM's default backends on Hopper), priced by its own tile and split rules (fa3_tile, fa3_split)."""
    return engine is not None and gpu.family in engine.fa3_decode


# SGLang's Triton attention backend (--attention-backend triton: what it runs where FlashAttention-3/FlashInfer take no
# head size, spec.engines.head_dims), sglang 0.5.14 wheel, layers/attention/triton_backend.py and triton_ops/:
# decode splits each (sequence, KV-head group)'s keys over at most --triton-attention-num-kv-splits CTAs, default 8
# (server_args.py:2004-2007; 16 on ROCm, :4829-4831), each split's keys rounded up to MIN_BLOCK_KV = 32 and loaded in
# BLOCK_N = 32-key tiles (decode_attention.py:35,98,445), then a second kernel merges the splits (_fwd_kernel_stage2)
TRITON_DECODE_MAX_SPLITS = 8.0
TRITON_DECODE_TILE = 32.0
# one split's loop time per key and (padded) head dim: a CTA streams a key of head dim 512 in 170 ns at BF16 and FP8 alike
# (the median of the shipped H100 table's SGLang triton rows where the grid is at most one CTA per SM and the context 2k+,
# 306 rows at head dim 512: 98-228 ns, IQR 142-180), i.e. 0.33 ns per dim: the serial floor of the few long splits at small batch, where
# the kernel runs 1.0-25x FlashAttention-3's time. Scaled by the head dim padded to a power of 2 (BLOCK_DMODEL =
# next_power_of_2(Lk), decode_attention.py:460), an assumption: only head dim 512 is measured with so few CTAs
TRITON_DECODE_DIM_KEY_S = 170e-9 / 512.0
# Its extend (prefill) kernel, triton_ops/extend_attention.py@0.5.14: a CTA per (sequence, query head, BLOCK_M queries)
# (grid, :621) loops over BLOCK_N-key tiles of the chunk up to its causal end (stage 2, :445-450; the cached prefix first,
# stage 1, :349, over its last `window` keys where a window is set: window_kv_indptr, update_sliding_window_buffer,
# triton_backend.py:1608-1612) and runs both dots on whole tiles, masking past the diagonal (tl.where, :524). Under a
# sliding window it still visits every tile and skips the loads and dots of one wholly outside the window
# (SKIP_TILE, :375-379 and :487-491: a BLOCK_M x BLOCK_N mask and its block-wide max). Hopper's blocks (:93-100):
# BLOCK_N 64, BLOCK_M 128 to head dim 128, 64 to 256, 32 above; one pipeline stage (num_stages 1, :622), 8 warps past 64 (:122)
TRITON_PREFILL_BLOCK_N = 64.0
# Its whole tiles' matmuls run at a share of the BF16 peak per block shape and variant, measured on the shipped H100 table
# (data/measurements/kernels_hopper, SGLang 0.5.14) beside the calibrated fixed and exponential costs: "bf16";
# "fp8", an FP8 cache read with the BF16 query (forward_extend passes the layer's query and the cache's buffers,
# triton_backend.py:1160-1175), the path serving runs; "fp8q", the table's FP8 context rows, whose q, k and v the
# collector casts to FP8 before the call (ai-dynamo/aiconfigurator collector/sglang/collect_attn.py run_attention_torch:
# a kernel compiled for FP8 inputs), no serving path. Head dim 512 (32 x 64 tiles), 8k+ prompts, full attention, 81 rows
# each: 0.102 (IQR 0.099-0.104), 0.062 (0.060-0.062), 0.102 (0.100-0.105). Head dim 256 (64 x 64 tiles, window 1024),
# fitted with the skipped tile below on the 1k+ prompts of two or more CTA waves (the 24 unskipped rows alone: 0.053-0.054,
# 0.077-0.081, 0.059-0.062). An FP8 cache runs 0.6x BF16's rate at 512 and 1.5x at 256: the compiled variants differ (one
# stage, no warp specialisation: latency-bound), not their math. Head dims to 128 (128 x 64 tiles) are not timed: priced as
# 256's, an assumption. FlashAttention-3 runs 5-10x these rates
TRITON_PREFILL_EFF = {512: {"bf16": 0.102, "fp8": 0.062, "fp8q": 0.102}, 256: {"bf16": 0.0544, "fp8": 0.082, "fp8q": 0.0604}}
# a visited tile wholly outside the window (SKIP_TILE): its mask and block-wide reduction, seconds of the whole H100 per
# tile (x 132 SMs: one CTA's), per variant, fitted with the rates above at head dim 256 (64 x 64; none timed at 32 x 64,
# priced alike): 0.37, 0.19 and 0.12 of a computed tile's time; per row on the rows skipping at least a tile per computed
# one (119 each): IQR 27.2-29.2, 8.5-9.9 and 7.6-9.4 ns
TRITON_PREFILL_SKIP_S = {"bf16": 28.7e-9, "fp8": 9.6e-9, "fp8q": 8.5e-9}
H100_SMS = float(get_gpu("h100").sms)  # the GPU the rates above were timed on (132: the catalog's H100 SXM)


def triton_prefill_block_m(head_dim):
    """SGLang's Triton extend kernel's BLOCK_M on Hopper by head dim (extend_attention.py:93-100@0.5.14)."""
    d = np.asarray(head_dim, float)
    return np.where(d <= 128, 128.0, np.where(d <= 256, 64.0, 32.0))


def _triton_tiles_one(extend: int, prefix: int, window: int, bm: int) -> tuple[float, float]:
    """(computed, skipped) tiles of one (sequence, query head): the loops of extend_attention.py's _fwd_kernel."""
    bn = int(TRITON_PREFILL_BLOCK_N)
    m = np.arange(-(-extend // bm))
    end = np.minimum(extend, (m + 1) * bm)  # causal: stage 2 stops at the block's last query
    n2 = -(-end // bn)
    seen = min(prefix, window) if window > 0 else prefix  # stage 1: the prefix, its last `window` keys under a window
    n1 = -(-seen // bn) if seen > 0 else 0
    if window <= 0:
        return float((n2 + n1).sum()), 0.0
    # a tile is skipped where its last key is more than `window` before the block's first query
    skip2 = np.clip((m * bm - window) // bn, 0, n2)
    skip1 = np.clip((seen + m * bm - window) // bn, 0, n1)
    return float((n2 - skip2 + n1 - skip1).sum()), float((skip2 + skip1).sum())


def triton_prefill_tiles(extend, prefix, window, head_dim):
    """Tiles SGLang's Triton extend kernel computes and visits-but-skips per (sequence, query head), a chunk of `extend`
    queries after `prefix` cached keys under a sliding `window` (0: none): each (computed, skipped, BLOCK_M)."""
    ext, pre, win, bm = (np.broadcast_to(np.ceil(np.maximum(np.asarray(x, float), 0.0) - 1e-9), np.broadcast_shapes(
        *(np.shape(y) for y in (extend, prefix, window, head_dim)))) for x in (extend, prefix, window, triton_prefill_block_m(head_dim)))
    keys = np.stack([ext.ravel(), pre.ravel(), win.ravel(), bm.ravel()], axis=1).astype(np.int64)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    done = np.array([_triton_tiles_one(*map(int, u)) for u in uniq]).reshape(-1, 2)
    comp, skip = (done[np.ravel(inv), i].reshape(ext.shape) for i in (0, 1))
    return comp, skip, bm


def triton_prefill_compute(extend, prefix, window, head_dim, gpu: Gpu, *, qkv_d, seq_heads, fp8=False, fp8_query=False):
    """Seconds SGLang's Triton extend kernel spends in its tiles for `seq_heads` (sequence, query head) pairs of a chunk of
    `extend` queries after `prefix` cached keys (triton_prefill_tiles): the computed tiles' matmuls (BLOCK_M x BLOCK_N
    pairs x 2 x `qkv_d`, a head's query-key plus value width) at its rate for the block shape and variant
    (TRITON_PREFILL_EFF: `fp8` an FP8 cache with the BF16 query, `fp8_query` the table's FP8 context rows) and the skipped
    tiles at TRITON_PREFILL_SKIP_S, scaled from H100's 132 SMs to the GPU's."""
    comp, skip, bm = triton_prefill_tiles(extend, prefix, window, head_dim)
    var = np.where(fp8_query, "fp8q", np.where(fp8, "fp8", "bf16"))
    wide = np.asarray(head_dim, float) > 256
    eff = np.vectorize(lambda w, v: TRITON_PREFILL_EFF[512 if w else 256][v])(wide, var)
    skip_s = np.vectorize(TRITON_PREFILL_SKIP_S.get)(var)
    flops = np.asarray(seq_heads, float) * comp * bm * TRITON_PREFILL_BLOCK_N * 2.0 * np.asarray(qkv_d, float)
    return flops / (gpu.peak("bf16") * eff) + np.asarray(seq_heads, float) * skip * skip_s * H100_SMS / gpu.sms


def triton_decode_split(seqs, heads, kv_heads, keys, gpu: Gpu):
    """SGLang's Triton decode split count for sequences of one length (get_num_kv_splits_triton, triton_ops/metadata.py
    @0.5.14): min(8, ceil(SMs x max(log2(keys / 64), 1) / grid)) splits, grid = sequences x head blocks (its query heads
    in MHA, ceil(heads / min(16, group)) in GQA: _decode_grouped_att_m_fwd BLOCK_H 16), the keys then cut into
    ceil(keys / ceil(keys / that)) splits. Its other bound, ceil(longest / shortest), is 1 for equal lengths."""
    keys = np.maximum(np.asarray(keys, float), 1.0)
    grid = np.maximum(np.asarray(seqs, float) * _triton_head_blocks(heads, kv_heads), 1.0)
    cores = np.floor(gpu.sms * np.maximum(np.log2(keys / 64.0), 1.0))
    most = np.minimum(np.ceil(cores / grid - 1e-9), TRITON_DECODE_MAX_SPLITS)
    return np.ceil(keys / np.ceil(keys / np.maximum(most, 1.0) - 1e-9) - 1e-9)


def _triton_head_blocks(heads, kv_heads):
    """The head blocks of SGLang's Triton decode grid: its query heads in MHA, ceil(heads / min(16, group)) in GQA
    (_decode_grouped_att_m_fwd BLOCK_H 16, decode_attention.py@0.5.14)."""
    heads = np.asarray(heads, float)
    group = heads / np.maximum(np.asarray(kv_heads, float), 1.0)
    return np.where(group <= 1.0, heads, np.ceil(heads / np.minimum(16.0, group) - 1e-9))


def _triton_split_keys(keys, split):
    """The keys of one Triton decode split: ceil(ceil(keys / split) / 32) x 32 (kv_len_per_split, decode_attention.py
    :324-326@0.5.14)."""
    return np.ceil(np.asarray(keys, float) / np.maximum(split, 1.0) / TRITON_DECODE_TILE - 1e-9) * TRITON_DECODE_TILE


def triton_decode_floor(keys, split, head_dim):
    """The serial loop of one Triton decode split: its keys (whole 32-key blocks) at TRITON_DECODE_DIM_KEY_S per key and
    padded head dim. The kernel ends no sooner than its longest split, however few CTAs the grid fills the GPU with."""
    per = _triton_split_keys(keys, split)
    pad = 2.0 ** np.ceil(np.log2(np.maximum(np.asarray(head_dim, float), 1.0)))
    return per * pad * TRITON_DECODE_DIM_KEY_S


# Its grid (decode_attention.py@0.5.14): stage 1 launches MAX_KV_SPLITS (8) CTAs per (sequence, head block) whatever the
# sequence's split count (grid, :469-473; :206 for MHA), the idle ones exiting at `if split_kv_end > split_kv_start`
# (:341; a split's keys round up to 32, :324-326, so at 32 keys or fewer one is live), each live one writing its FP32
# partial output (att_out, :403-416); stage 2, a kernel after it, one CTA per (sequence, query head), reads the live
# splits' partials and writes the output (_fwd_kernel_stage2, grid :623, loop :567-575). At large batch and few keys the
# two run one after the other on those CTAs and bytes: 2,048 sequences of 2 keys, 16 heads over 2 KV heads at head dim
# 512, 32,768 stage-1 CTAs and 218 MB (keys 17, query and output 67, partials 134) in 198 us. Seconds of the whole H100 per stage-1 CTA
# (x 132 SMs: one SM's), per block shape, the median each shipped-table row of at most 8 keys and 8,192+ CTAs implies
# beside its bytes at the calibrated decode bandwidth: 4.0 ns at head dim 512 (66 rows: IQR 3.8-4.25), 2.4 at 256 (96
# rows: IQR 2.2-2.6); 128 and below not timed, priced as 256. Stage 2's CTAs cost their bytes: fitted a constant of their
# own beside stage 1's on the 48 GQA rows of 1,024+ sequences at head dim 512, it comes to -0.1 ns
TRITON_DECODE_CTA_S = {512: 4.0e-9, 256: 2.4e-9}


def triton_decode_grid(seqs, heads, kv_heads, keys, gpu: Gpu, *, head_dim):
    """(seconds, bytes) of SGLang's Triton decode's grids beside the price's reads (TRITON_DECODE_CTA_S): its stage-1 CTAs,
    and the FP32 partial outputs of the live splits (the keys over _triton_split_keys' per split) written and read back. The
    kernel ends no sooner than those CTAs and all its bytes one after the other: the floor of a large batch of few keys."""
    seqs, heads = np.asarray(seqs, float), np.asarray(heads, float)
    d = np.asarray(head_dim, float)
    cta = np.where(d > 256, TRITON_DECODE_CTA_S[512], TRITON_DECODE_CTA_S[256]) * H100_SMS / gpu.sms
    # the live splits: the keys over each split's, rounded up to 32 (300 keys at 8 splits: 64 a split, 5 live)
    keys = np.maximum(np.asarray(keys, float), 1.0)
    live = np.ceil(keys / _triton_split_keys(keys, triton_decode_split(seqs, heads, kv_heads, keys, gpu)) - 1e-9)
    return (seqs * _triton_head_blocks(heads, kv_heads) * TRITON_DECODE_MAX_SPLITS * cta,
            seqs * heads * live * d * 4.0 * 2.0)


def runs_flashmla_decode(engine: Engine | None, gpu: Gpu) -> bool:
    """Whether an engine's dense MLA decode runs FlashMLA on this GPU (Engine.flashmla_decode; None: the kernel tables'
    TensorRT-LLM). vLLM's and SGLang's defaults on Hopper are FlashAttention-3's MLA kernel (vLLM platforms/cuda.py
    _get_backend_priorities:92-98@0.19.0 FLASH_ATTN_MLA first; SGLang's fa3 backend), whose split heuristic counts tiles
    only, no per-sequence overhead (hopper/heuristics.h:25-53 num_splits_heuristic@0251105a)."""
    return gpu.family == "hopper" and (engine is None or gpu.family in engine.flashmla_decode)


def flashmla_extra_launches(engine: Engine | None):
    """Launches beside FlashMLA's decode kernel in each of TensorRT-LLM's SM90 MLA decode calls (a layer's), each a tiny
    kernel priced at the elementwise fixed cost (kernel_overhead_s): the split-KV combine, launched after every decode
    kernel whether or not a sequence was split (run_flash_splitkv_fwd_mla, cpp/tensorrt_llm/kernels/flashMLA/
    flash_fwd_mla_kernel.h@08f1ea31; the kernel returns at once on an unsplit sequence); and, in a build without the
    "mla_meta" fusion (Engine.fusions), the scheduler metadata (get_mla_metadata_func, one CTA of 32 threads), which
    mlaGeneration launched before each decode call in the 1.x attention op read ("metadata should only be init once per
    iter, to fix later", cpp/tensorrt_llm/common/attentionOp.cpp, code index) where the newest computes it once a step
    (compute_flash_mla_metadata; that one launch a step is not priced). The kernel tables' own (None): one, the combine,
    by how they were timed, not by fit: aiconfigurator's collector prepares the metadata once (attn_metadata.prepare(),
    collector/trtllm/collect_mla.py:438, enable_flash_mla on SM90 at :436), runs one forward before timing (:572) and times
    kernel_func (:589-625: mla_rope_generation and attn_mla.forward, no prepare) under benchmark_with_power's warm-ups and
    graph (collector/helper.py:204-261@095f58a5); the newest TrtllmAttention.forward computes the FlashMLA scheduler
    metadata only while metadata._flash_mla_metadata_valid is unset and then sets it, and only prepare_flash_mla() and
    update_for_spec_dec() reset it (tensorrt_llm/_torch/attention_backend/trtllm.py, TrtllmAttention.forward and
    TrtllmAttentionMetadata.prepare_flash_mla, code index; the stored version's commit is not indexed: the commits it
    holds for that path, 9144c0e6 and 00bede19, precede the flag), so the timed calls launch no metadata kernel. The
    H100 rows' one launch more, not two (docs/modelling-notes.md#onereq-hopper), agrees."""
    return 1.0 if engine is None or engine.fuses("mla_meta") else 2.0


def aiter_mla_extra_launches(gpu: Gpu) -> float:
    """Launches beside AITER's asm MLA decode kernel in each decode call (a layer's) on CDNA, where SGLang and ATOM run
    it (docs/modelling-notes.md#sglang-cdna-attention), each at the elementwise fixed cost (kernel_overhead_s): the
    merge of its KV splits, a kernel of its own after the split kernel. The persistent path launches mla_reduce_v1 after
    every call; the non-persistent one its Triton stage 2 unless a single split lets the split kernel write the output
    (aiter/mla.py:180, 218, 238-247, 254, 310, 330@18fe9d77), and its split count (get_meta_param, :102-141) is 4-16 at the
    shapes served. vLLM's Triton MLA decode, its ROCm path without AITER, is two kernels as well (the split stage, then
    _decode_softmax_reducev_fwd: vllm/v1/attention/ops/triton_decode_attention.py:735, 750@0.33.0). 0 elsewhere."""
    return 1.0 if gpu.family in CDNA_FAMILIES else 0.0


def flashmla_keys(keys):
    """Keys FlashMLA's decode does a sequence's work as: its scheduler splits the batch over SMs in 64-key blocks and
    counts each sequence ceil(keys / 64) blocks plus fixed_overhead_num_blocks = 5 for its fixed work (prologue, query
    load, output and split merge) (csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu:51, block_size_n
    64 and the 5 set at csrc/api/dense_decode.h:103-104@9241ae3): priced as that many blocks of the kernel's own
    per-block cost, every tile of the sequence."""
    return (np.ceil(np.asarray(keys, float) / 64.0 - 1e-9) + 5.0) * 64.0


# A Hopper SM's shared memory moves 128 bytes a clock (32 banks of 4 bytes), against 4,096 dense BF16 FLOP a clock of its
# tensor cores (H100 SXM: 989.4 TFLOPS over 132 SMs at 1.83 GHz): 1/32 byte per BF16 FLOP. Not the GPU file's GEMM feed
# (Gpu.smem_bytes_per_bf16_flop), which Hopper leaves unset: its GEMM tiles are not bound by it (modelling-notes.md)
HOPPER_SMEM_BYTES_PER_BF16_FLOP = 128.0 / 4096.0


def flashmla_fp8_transpose_time(tiles, keys, v_dim, gpu: Gpu):
    """Time TensorRT-LLM's FlashMLA on SM90 spends, on an FP8 cache, transposing each 64-key block's V in shared memory
    before its P x V GEMM, whose FP8 GMMA takes V K-major where BF16's reads it MN-major in place (MmaMajorV,
    Flash_fwd_kernel_traits_mla in NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/flashMLA/flash_fwd_mla_kernel.h@08f1ea31).
    In compute_attn_1rowblock_splitkv_mla the second warpgroup transposes the block (TransV: 64 x 64 transposes,
    SmemTransposeFp8_64x64 in fp8_transpose_v.h, same commit) into smem_vt while the first waits on TransVReady and a
    __syncthreads() before the GEMM both then split, so the transpose adds to each block's math rather than
    overlapping it. Each of `tiles` 64-row tiles (mla_decode_work_items) reads and writes v_dim x 64 FP8 bytes a block
    of its ceil(`keys` / 64) (the blocks of FlashMLA's scheduler overhead, flashmla_keys, hold no keys to transpose), at
    the SMs' shared-memory rate (HOPPER_SMEM_BYTES_PER_BF16_FLOP of the BF16 peak)."""
    blocks = np.ceil(np.asarray(keys, float) / 64.0 - 1e-9)
    return np.asarray(tiles, float) * blocks * 2.0 * 64.0 * v_dim / (gpu.peak("bf16") * HOPPER_SMEM_BYTES_PER_BF16_FLOP)


def runs_fa3_prefill(engine: Engine | None, gpu: Gpu) -> bool:
    """Whether an engine's GQA prefill runs FlashAttention-3's kernel on this GPU (Engine.fa3_prefill: SGLang's and vLLM's
    default backends on Hopper), priced at that kernel's own rates (attention_prefill_time's `fa3`)."""
    return engine is not None and gpu.family in engine.fa3_prefill


def fa3_tile(head_dim, group, kv_fp8, local):
    """(query rows, keys) of a FlashAttention-3 decode CTA's tile, kBlockM x kBlockN: hopper/tile_size.h
    tile_size_fwd_sm90@07602ad for a paged cache read without TMA (decode packs the query group into the
    rows, seqlen_q x group <= kBlockM, so get_pagedkv_tma in flash_api.cpp turns TMA off) and a non-causal
    mask (flash_api.cpp mha_fwd drops causal where seqlen_q is 1 but for head dim 128, whose causal tile is
    the same 128 keys), one MMA warpgroup (64 rows) at head dim 128 where the group fits 64 (heuristics.h
    use_one_mma_wg); `local`: a sliding window shorter than the context. Array-valued."""
    d, g = np.asarray(head_dim, float), np.asarray(group, float)
    fp8, local = np.asarray(kv_fp8, bool), np.asarray(local, bool)
    one_wg = (d == 128) & (g <= 64)
    m = np.select([one_wg, d <= 64, d <= 96], [64.0, 192.0, 192.0], 128.0)
    n16 = np.select([d <= 64, d <= 96, d <= 128, d <= 192], [160.0, 128.0, 128.0, 96.0], np.where(local, 64.0, 80.0))
    n8 = np.select([d <= 64, d <= 96, one_wg, d <= 128, d <= 192], [160.0, 128.0, 96.0, 160.0, np.where(local, 128.0, 160.0)],
                   np.where(local, 64.0, 128.0))
    return m, np.where(fp8, n8, n16)


def _fa3_static_splits(ctas, n_blocks, sms):
    """FlashAttention-3's num_splits_heuristic (hopper/heuristics.h@13d0fd9) for `ctas` CTAs of one sequence
    (batch 1, as get_num_splits assumes where splits are chosen per sequence at run time): 1 where they near
    fill the SMs (0.8) or the keys are 4 tiles or fewer, else the fewest splits (at most 128, the SMs, the
    tiles) whose last wave is at least 0.85 of the fullest any count reaches."""
    c, n = np.asarray(ctas, float), np.minimum(np.asarray(n_blocks, float), min(128.0, sms))
    keys, inv = np.unique(np.stack([np.broadcast_to(c, np.broadcast(c, n).shape).ravel(),
                                    np.broadcast_to(n, np.broadcast(c, n).shape).ravel()]), axis=1, return_inverse=True)
    out = np.ones(keys.shape[1])
    for j, (cj, nj) in enumerate(keys.T):
        if cj >= 0.8 * sms or nj <= 4:
            continue
        waves = cj * np.arange(1.0, nj + 1.0) / sms
        eff = waves / np.ceil(waves)
        out[j] = 1.0 + np.argmax(eff >= 0.85 * eff.max())
    return out[inv.ravel()].reshape(np.broadcast(c, n).shape)


def fa3_launch_splits(kv_heads, keys, gpu: Gpu, *, m_blocks, tile, cap=0):
    """The split count FlashAttention-3's launch is given, which decides whether its combine kernel runs over the
    partial outputs: the caller's (`cap`: Engine.fa3_max_splits) or, where it passes none, the one-sequence count
    (_fa3_static_splits); the batch's own count (fa3_split) only spreads the tiles under it. So the merge is paid
    by the launch, not by the batch, and a step's time does not fall where a larger batch needs fewer splits."""
    n = np.maximum(np.ceil(np.asarray(keys, float) / tile - 1e-9), 1.0)
    cap = np.asarray(cap, float)
    static = _fa3_static_splits(np.asarray(kv_heads, float) * m_blocks, n, gpu.sms) if not np.all(cap > 0) else 1.0
    return np.minimum(np.where(cap > 0, cap, static), n)


def fa3_split(seqs, kv_heads, keys, gpu: Gpu, *, m_blocks, tile, cap=0):
    """CTAs FlashAttention-3's decode splits each (sequence, KV head)'s keys over: prepare_varlen_num_blocks
    (hopper/flash_prepare_scheduler.cu@07602ad, run for a paged cache with per-sequence lengths up to 992
    sequences) spreads the batch's tiles over the SMs with a 10% margin, ceil(n / ceil(1.1 x tiles x KV heads /
    SMs)) for n tiles of keys each, capped by the count the caller passes (`cap`: Engine.fa3_max_splits) or, where
    it passes none (0), the one-sequence count (_fa3_static_splits). `m_blocks`: query tiles per KV head, `tile`:
    keys per tile (fa3_tile). The launcher takes whole numbers; priced here without rounding the batch's share of
    the SMs, as decode_split does (a step's sequences and contexts vary about the mean it is priced at), so a step's
    time never falls as its batch grows. Array-valued (`cap` too)."""
    n = np.maximum(np.ceil(np.asarray(keys, float) / tile - 1e-9), 1.0)
    per_sm = np.maximum(1.1 * np.maximum(np.asarray(seqs, float), 1.0) * n * np.asarray(kv_heads, float) * m_blocks / gpu.sms, 1.0)
    return np.clip(n / per_sm, 1.0, fa3_launch_splits(kv_heads, keys, gpu, m_blocks=m_blocks, tile=tile, cap=cap))


def runs_trtllm_decode(engine: Engine | None) -> bool:
    """Whether an engine runs TensorRT-LLM's GQA decode op (XQA, TRTLLM-Gen and their masked MHA fallback): the
    kernel tables' rows (None) and the engine whose step fuses RoPE into XQA (Engine.fusions "rope_decode"),
    TensorRT-LLM. SGLang and vLLM run their own kernels: FlashAttention-3's on Hopper (runs_fa3_decode), elsewhere
    priced as TensorRT-LLM's tensor-core ones times their factor (Engine.attention_kernels)."""
    return engine is None or engine.fuses("rope_decode")


def decode_mmha(gpu: Gpu, group, cal: Calibration, *, trtllm=True):
    """Where GQA decode runs TensorRT-LLM's masked MHA kernel (one CTA per sequence and query head, its math on
    CUDA cores) instead of a tensor-core kernel: query groups wider than attn_decode_max_group (XQA takes up
    to 32, decoderXQAImplJIT/kernelUtils.cpp supportConfigQGMMA / supportConfigHMMA@029e0a7c) and, on the XQA
    GPUs, vanilla MHA (one query head per KV head), which supportConfigCommon keeps off XQA "for performance
    reasons"; in the engines that run TensorRT-LLM's op (`trtllm`: runs_trtllm_decode). Array-valued over
    `group` (and `trtllm`)."""
    group = np.asarray(group, float)
    return trtllm & ((group > cal.attn_decode_max_group) | ((group == 1) & (gpu.family not in TRTLLM_GEN_FAMILIES)))


def decode_fp8_math(gpu: Gpu, kv_fp8: bool, group, head_dim, cal: Calibration, *, trtllm=True):
    """Where a GQA decode kernel on an FP8 cache runs its MMAs in FP8 (at the GPU's FP8 peak): TRTLLM-Gen's
    generation kernels on Blackwell and XQA's Hopper GMMA kernel, which takes an FP8 cache on SM90 with head
    dims up to 256 (kernelUtils.cpp supportConfigQGMMA@029e0a7c). XQA's HMMA kernel converts the cache for
    BF16 MMAs, and the masked MHA kernel (decode_mmha) dequantises it for CUDA-core math: the BF16 rate.
    Other engines' kernels (`trtllm` False) keep the FP8 rate on an FP8 cache. Array-valued over `group`,
    `head_dim` (and `trtllm`)."""
    head_dim = np.asarray(head_dim, float)
    tensor_fp8 = (gpu.family in TRTLLM_GEN_FAMILIES) | ((gpu.family == "hopper") & (head_dim <= 256)) | ~np.asarray(trtllm, bool)
    return kv_fp8 & tensor_fp8 & ~decode_mmha(gpu, group, cal, trtllm=trtllm)


def decode_rope_fused(gpu: Gpu, kv_fp8: bool, engine: Engine | None = None) -> bool:
    """Whether a GQA decode kernel applies RoPE itself, saving the preprocessing kernel (RoPE and the KV-cache
    append) launched before it: XQA's Hopper GMMA kernel, which runs where the KV cache is FP8 on SM90
    (TensorRT-LLM decoderXQAImplJIT.cpp runImpl, applyRoPEInXqaKernel = isGMMAKernel && ...@000a01de;
    isGmmaKernel == (SM 90 and FP8 KV)), in the engines that run it (Engine.fusions "rope_decode"; None: the
    kernel tables' TensorRT-LLM kernels). XQA's other kernels and TRTLLM-Gen's launch the preprocessing
    kernel first (xqaDispatcher.cpp runImpl, invokeQKVPreprocessing@026da036). Priced on every FP8 row on
    Hopper, the masked MHA kernel's (decode_mmha) too, though it launches the preprocessing kernel: see
    docs/modelling-notes.md#decode-kernel-choice."""
    return kv_fp8 and gpu.family == "hopper" and (engine is None or engine.fuses("rope_decode"))


def attention_decode_time(flops, nbytes, gpu: Gpu, cal: Calibration, *, seq_heads=0.0, kv_fp8: bool = False, group=1.0, split=1.0,
                          rope_fused=False, fp8_math=True, mmha=False, fa3=False, serial_s=0.0, floor_s=0.0,
                          grid=(0.0, 0.0)):
    """Decode attention: KV-cache read at a fraction of HBM bandwidth, or its math, whichever binds,
    plus a cost per work item (softmax/reduction, CTA scheduling) that dominates at large batch
    with short contexts. Query groups wider than the tensor-core kernels take (`group` query heads
    per KV head > attn_decode_max_group) run TensorRT-LLM's masked MHA kernel (`mmha`), its math on CUDA cores at their own
    rate, per SM and clock. A kernel that
    splits the keys over CTAs (`split`: decode_split) pays the merge of their partial outputs where it
    goes through global memory (decode_merge_share; FlashAttention-3's launch count, fa3_launch_splits, decides its
    combine). attn_overhead_s is the op's fixed cost with its preprocessing
    kernel; a kernel that applies RoPE itself (`rope_fused`: decode_rope_fused) launches one kernel less. On an
    FP8 cache the math runs at the FP8 peak where `fp8_math` (decode_fp8_math), else at the BF16 peak. Items of
    the masked MHA kernel (`mmha`: decode_mmha, one CTA per sequence and query head) cost attn_decode_mmha_s each.
    FlashAttention-3's kernel (`fa3`: runs_fa3_decode) streams an FP8 cache at its own rate (attn_decode_bw_eff_fa3_fp8)
    after a launch that casts the query to FP8 (kernel_overhead_s). `serial_s`: time the math waits on inside the
    kernel's loop, added to it (flashmla_fp8_transpose_time). `floor_s`: the longest CTA's own loop, under which the kernel
    does not finish however few CTAs share the GPU (triton_decode_floor: SGLang's Triton kernel), its fixed cost within.
    `grid`: (seconds, bytes) its grids' CTAs take and the bytes they move beside `nbytes` (triton_decode_grid), under which
    it does not finish either: those CTAs and all its bytes one after the other, at the plain decode bandwidth (most of
    them the BF16 query and output and the FP32 partials, whatever the cache)."""
    flops = np.asarray(flops, float)
    # FP8 KV: the kernel runs its MMAs in FP8 where the GPU has them and the kernel does (fp8_math), and pays
    # for dequantisation, seen as its own bandwidth efficiency
    fp8 = kv_fp8 and gpu.supports("fp8")
    peak = np.where(np.asarray(fp8_math, bool) & fp8, gpu.peak("fp8" if fp8 else "bf16"), gpu.peak("bf16"))
    # TensorRT-LLM's per-head fallback for wide groups (masked MHA) runs off the tensor cores, so its rate does not follow
    # the tensor peak, which doubles per SM clock from Ampere to Hopper to Blackwell; nor is it a CUDA-core constant (FP32
    # lanes per SM: A100 64, H100 128). attn_decode_wide_flop_clk is the kernel's measured throughput per SM clock, an
    # empirical normalisation the three families' fits on the decode tables agree on: A100 27.6, H100 30.3, B200 28.4
    # (fitted.toml; calibrate's bounds 1-256, the profile's (0, 8192]). Other engines' kernels pack any group into
    # tensor-core tiles (FlashAttention-3's PackGQA): their tensor rate.
    wide = (np.asarray(group, float) > cal.attn_decode_max_group) & np.asarray(mmha, bool)
    per_clk = gpu.sm_clocks_per_s * cal.attn_decode_wide_flop_clk if np.any(wide) else 1.0  # a family's clock only where read
    rate = np.where(wide, per_clk, peak * cal.attn_decode_flops_eff)
    t_c = flops / rate + serial_s
    bw = np.where(fa3, cal.attn_decode_bw_eff_fa3_fp8, cal.attn_decode_bw_eff_fp8) if fp8 else cal.attn_decode_bw_eff
    t_m = np.asarray(nbytes, float) / (gpu.hbm_bandwidth_bytes_per_s * bw)
    live = flops > 0
    fixed = np.where(rope_fused, max(cal.attn_overhead_s - cal.kernel_overhead_s, 0.0), cal.attn_overhead_s)
    fixed = fixed + np.where(np.asarray(fa3, bool) & bool(kv_fp8), cal.kernel_overhead_s, 0.0)
    item_s = np.where(mmha, cal.attn_decode_mmha_s, cal.attn_decode_head_s)
    t = (np.maximum(t_c, t_m) + fixed + np.asarray(seq_heads, float) * item_s
         + decode_merge_share(split, gpu) * cal.attn_decode_split_s)
    t = np.maximum(t, floor_s)  # the floor is measured as the whole kernel's time over its longest split's keys
    grid_s = np.asarray(grid[0], float)  # only where a grid is given: the bytes at this bandwidth are no other kernel's floor
    t = np.where(grid_s > 0, np.maximum(t, grid_s + (np.asarray(nbytes, float) + grid[1])
                                        / (gpu.hbm_bandwidth_bytes_per_s * cal.attn_decode_bw_eff)), t)
    return masked(live, t, t_c, t_m)


def attention_prefill_time(flops, nbytes, gpu: Gpu, cal: Calibration, *, math: str = "bf16", seq_heads=0.0, keys=None, scores=None,
                           fa3=False, triton_s=None):
    """Prefill (context) attention: FlashAttention-style, compute-bound at a fraction of peak that
    ramps with the keys each query attends to (short rows leave the softmax pipeline idle), plus a
    cost per (sequence x query head) work item. FP8 has its own fraction of the FP8 peak. `scores`
    (query-key pairs) add the softmax's exponentials, which run on the special-function units at a
    small fraction of the matmul rate (FlashAttention-3, Shah et al. 2024, sec. 3.1: H100 SXM5 989
    TFLOPS of FP16 matmul against 3.9 TFLOPS of exp), so narrow heads pay more per FLOP.
    FlashAttention-3's kernel (`fa3`: runs_fa3_prefill, a bool or one per element) runs its matmuls at its
    own shares of the peak (attn_prefill_eff_fa3, _fa3_fp8) after its own fixed cost (attn_prefill_overhead_fa3_s),
    the exponentials and the ramp as the GPU pays them, and no cost per work item: on SM90 its varlen launch (both
    engines' call) runs a persistent tile scheduler, a CTA per SM pulling (sequence, head, query-tile) tiles off a
    semaphore (hopper/flash_fwd_launch_template.h:75 UsePersistentScheduler@0251105a), so no CTA per item is launched.
    SGLang's Triton kernel (`triton_s`, its whole tiles' matmuls and skipped tiles: triton_prefill_compute; one per
    element, NaN where an element is not Triton; None: none is) takes that for the matmuls' time, with the calibrated fixed cost and exponentials, no ramp and no
    cost per work item (its CTAs' own is within its tiles' rate: a one-tile CTA, 1-token prompts at head dim 256, runs 88 ns
    of the GPU where a tile is priced 78) (`at.triton`: Engine.triton_attention;
    docs/modelling-notes.md#leftD-triton-attention, #tritonW-window-batch)."""
    flops = np.asarray(flops, float)
    ramp = 1.0 if keys is None else 1.0 + cal.attn_prefill_s_half / np.maximum(np.asarray(keys, float), 1.0)
    fp8 = math == "fp8"
    eff = np.where(fa3, cal.attn_prefill_eff_fa3_fp8 if fp8 else cal.attn_prefill_eff_fa3,
                   cal.attn_prefill_eff_fp8 if fp8 else cal.attn_prefill_eff)
    rate = gpu.peak(math) * eff
    t_exp = 0.0 if scores is None else np.asarray(scores, float) * cal.attn_prefill_score_s
    triton = np.zeros(np.shape(flops), bool) if triton_s is None else np.isfinite(np.asarray(triton_s, float))
    t_c = np.where(triton, np.nan_to_num(np.asarray(0.0 if triton_s is None else triton_s, float)) + t_exp, (flops / rate + t_exp) * ramp)
    t_m = np.asarray(nbytes, float) / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    live = flops > 0
    fixed = np.where(fa3, cal.attn_prefill_overhead_fa3_s, cal.attn_prefill_overhead_s)
    item_s = np.where(np.asarray(fa3, bool) | triton, 0.0, cal.attn_prefill_head_s)
    t = np.maximum(t_c, t_m) + fixed + np.asarray(seq_heads, float) * item_s
    return masked(live, t, t_c, t_m)


def elementwise_time(nbytes, kernels, gpu: Gpu, cal: Calibration):
    """Memory-bound passes over `nbytes` in `kernels` launches: no compute time (a scalar 0)."""
    nbytes = np.asarray(nbytes, float)
    t_m = nbytes / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    t, t_m = masked(nbytes > 0, t_m + kernels * cal.kernel_overhead_s, t_m)
    return t, 0.0, t_m


# bytes moved per GPU relative to the buffer (ring/bandwidth-optimal algorithms), and the latency
# family each collective's fixed cost belongs to
_BYTES = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "p2p": lambda n: np.ones_like(n),
}
_LATENCY = {"all_reduce": "comm_latency", "p2p": "comm_latency", "all_gather": "comm_gather_latency",
            "reduce_scatter": "comm_gather_latency", "all_to_all": "comm_a2a_latency"}


def collective_time(op: str, nbytes, n, gpu: Gpu, cal: Calibration, *, engine: Engine | None = None, norm_fused=False,
                    peers=1.0):
    """Time of one collective on `nbytes` per GPU over `n` GPUs (0 when n == 1), in `engine`'s step
    (None: NCCL's, as the kernel tables measured). An all-reduce that runs inside the engine's all-reduce +
    RMSNorm kernel where `norm_fused` (Engine.ar_norm_fused; a bool or one per element) is a Lamport one-shot:
    the engine's own kernel's flag barriers (Engine.own_ar_barriers) are not paid there. A p2p send's `n` places
    it (inside the scale-up domain or beyond); `peers` is how many GPUs each one sends to or receives from at once,
    whose links alone carry it on a mesh (Gpu.scale_up_link_bytes_per_s; a collective's are the rest of its group).

    Fixed cost: a base plus a cost per extra participant, per collective family (NCCL's small-message
    latency grows with the ring for all-reduce, barely for all-to-all on NVSwitch); bandwidth: the
    link at an efficiency that saturates with message size (LL/LL128/Simple protocol switch).
    Inside the scale-up domain NVLink/xGMI carries it (PCIe peer-to-peer in a server of PCIe cards). Beyond it, reductions and gathers run
    hierarchically as NCCL does: the intra-domain collective, plus the same collective across
    domains on each GPU's 1/domain shard, every GPU on its own NIC; all-to-all and p2p send their
    off-domain share over the NIC.
    """
    n = np.asarray(n, dtype=float)
    nbytes = np.asarray(nbytes, dtype=float)
    live = (n > 1) & (nbytes > 0)
    count = np.count_nonzero(live)
    if not count:  # a search's arrays often carry no such collective at all (e.g. no EP exchange)
        return np.zeros(live.shape)
    if live.size >= 4096 and count * 2 < live.size:
        # a search's chunk where most plans run no such collective (an EP exchange beside attention
        # DP, an all-reduce without it): priced at the live elements only, the same values
        out = np.zeros(live.shape)
        out[live] = collective_time(op, np.broadcast_to(nbytes, live.shape)[live], np.broadcast_to(n, live.shape)[live], gpu, cal,
                                    engine=engine, norm_fused=np.broadcast_to(norm_fused, live.shape)[live],
                                    peers=np.broadcast_to(peers, live.shape)[live])
        return out
    inside = n <= float(gpu.scale_up_domain)
    # an engine's own all-reduce inside one scale-up domain, NCCL elsewhere: where it runs at every
    # element (a search's decode steps), NCCL is not priced
    # (an all-reduce inside its all-reduce + RMSNorm kernel is that kernel's wherever Engine.ar_norm_fused put it, which
    # vLLM decides by its fusion pass's own limits, not by its dispatch: no two-shot by size, no symmetric memory there)
    fused = np.asarray(norm_fused, bool)
    own = (engine.own_allreduce(nbytes, n, gpu.family) | fused) & inside if op == "all_reduce" and engine is not None else None
    def custom():
        # inside the fused kernel the launcher's named switch does not run: the faster of its two Lamport kernels
        limit, named = engine.oneshot_limit(n, gpu.family)
        limit, named = np.where(fused & named, 0.0, limit), named & ~fused
        return _custom_all_reduce(nbytes, n, gpu, cal, oneshot=limit, named=named) + _own_barriers(engine, cal, norm_fused)

    if own is not None and own.all():
        t = custom()
    else:
        t = _nccl_time(op, nbytes, n, gpu, cal, inside=inside, peers=peers)
        if own is not None and own.any():
            t = np.where(own, custom(), t)
        symm = engine.symm_allreduce(nbytes, n, gpu.family) & inside & ~fused if own is not None else None
        if symm is not None and symm.any():
            # its limits sit where vLLM's benchmarks put the crossover with NCCL (all_reduce_utils.py:44-56@0.11.0), so a
            # step pays the faster of the two there, and no message costs less than a smaller one across the switch
            t = np.where(symm, np.minimum(_symm_all_reduce(nbytes, n, gpu, cal, engine), t), t)
    if count < live.size:
        return np.where(live, t, 0.0)
    return t if np.shape(t) == live.shape else np.broadcast_to(t, live.shape)


def _nccl_time(op: str, nbytes, n, gpu: Gpu, cal: Calibration, *, inside, peers=1.0):
    """NCCL's time for collective_time at its live elements: inside the scale-up domain where `inside`,
    hierarchically beyond it. The level inside is priced where the domain holds peers (none in a domain of one GPU,
    whose every exchange crosses the NIC), over the links to them (Gpu.scale_up_link_bytes_per_s: a p2p's `peers`,
    a collective's m_in - 1 others)."""
    d = float(gpu.scale_up_domain)
    fam = _LATENCY[op]

    def stream(moved, link, lat):
        # NCCL picks the fastest of its protocols per size: the low-latency ones saturate early (at
        # link x comm_bw_eff x moved / (moved + comm_bw_half_bytes): moved takes as long as moved +
        # comm_bw_half_bytes at the saturated rate), the Simple protocol costs more to start and streams
        # closer to the link's rate. Where nothing moves the caller's mask prices zero.
        return np.minimum(lat + (moved + cal.comm_bw_half_bytes) * (1.0 / (link * cal.comm_bw_eff)),
                          cal.comm_large_latency_s + moved * (1.0 / (link * cal.comm_large_bw_eff)))

    def one_level(m, nb, link, lat):
        # no mask of its own: m > 1 at every live element of the level it prices (the domain's GPUs
        # inside, the domains beyond it), and the others are priced 0 by the caller
        return stream(_BYTES[op](m) * nb, link, lat)

    m_in = np.minimum(n, d)
    lat_in = getattr(cal, f"{fam}_s") + getattr(cal, f"{fam}_slope_s") * np.maximum(m_in - 2.0, 0.0)
    link = gpu.scale_up_link_bytes_per_s(np.asarray(peers, float) if op == "p2p" else m_in - 1.0)
    ok = (m_in > 1) & (link > 0)
    t = np.where(ok, one_level(m_in, nbytes, np.where(ok, link, 1.0), lat_in), 0.0)
    if inside.all():  # one scale-up domain: the scale-out level is never priced
        return t
    domains = np.maximum(n / d, 1.0)
    lat_out = cal.scale_out_latency_s * np.log2(np.maximum(domains, 2.0))
    if op in ("all_reduce", "all_gather", "reduce_scatter"):
        t_out = t + one_level(domains, nbytes / d, gpu.scale_out_bandwidth_bytes_per_s, lat_out)
    else:  # all-to-all / p2p: the off-domain share of each GPU's data crosses its NIC
        off = nbytes if op == "p2p" else nbytes * (n - d) / np.maximum(n, 1.0)
        t_out = stream(off, gpu.scale_out_bandwidth_bytes_per_s, lat_out)
    return np.where(inside, t, t_out)


def _own_barriers(engine: Engine, cal: Calibration, norm_fused):
    """The flag barriers an engine's own all-reduce kernel adds to a Lamport one-shot's time (Engine.own_ar_barriers x
    custom_ar_barrier_s), none where the all-reduce runs inside its all-reduce + RMSNorm kernel (`norm_fused`)."""
    return np.where(norm_fused, 0.0, engine.own_ar_barriers * cal.custom_ar_barrier_s)


def _symm_all_reduce(nbytes, n, gpu: Gpu, cal: Calibration, engine: Engine):
    """An all-reduce through torch's symmetric memory (Engine.symm_allreduce): the input copied into the symmetric
    buffer, the all-reduce in place, the result copied out (vLLM's symm_mem.py:106-136@0.11.0), each copy a kernel
    reading and writing the message. The all-reduce is priced as the engine's own two-shot with its flag barriers:
    torch's two_shot_all_reduce_ reduce-scatters and all-gathers through the peers' buffers between barriers, as the
    custom kernel's two-stage does; its multimem_all_reduce_ (NVLS, 6 and 8 GPUs on SM100) reduces in the switch, which
    no table here times, so it is priced the same (docs/modelling-notes.md#vllm-allreduce-dispatch)."""
    two = _custom_all_reduce(nbytes, n, gpu, cal, named=True) + _own_barriers(engine, cal, norm_fused=False)
    return two + elementwise_time(4.0 * np.asarray(nbytes, float), 2, gpu, cal)[0]


def _custom_all_reduce(nbytes, n, gpu: Gpu, cal: Calibration, *, oneshot=0.0, named=False):
    """An engine's own all-reduce inside one scale-up domain, where it runs one instead of NCCL
    (Engine.own_allreduce): one-shot, each GPU reading every peer's whole buffer and reducing
    locally, (n - 1) x bytes over its link after one flag exchange; two-shot, a reduce-scatter then an
    all-gather through the peers' buffers, 2 (n - 1) / n x bytes after two. Both fixed costs are the kernel's at
    two GPUs plus custom_ar_peer_s for each further peer: every thread stores its vector to each peer's buffer and
    polls one slot per rank, loops unrolled over the rank count (trtllm_allreduce_fusion.cuh:1526-1530, 1546-1551
    allreduce_fusion_kernel_oneshot_lamport@fb28d72; vLLM's cross_device_reduce_1stage likewise), up to 8 GPUs (the
    tables' largest group; beyond, as at 8), far less than NCCL's ring adds a GPU (collective_time prices NCCL where the
    engine does not run its own). An engine that switches between its two kernels where it measured the crossover
    (TensorRT-LLM's tuned table) has a step pay the faster of the two: pricing the kernel the threshold names would let
    a larger message cost less wherever these two formulas cross elsewhere. Where the engine keeps the one-shot whatever the two-shot costs (`oneshot`: bytes, Engine.oneshot_limit; 0: none), it pays the
    one-shot below that size and, from it, the two-shot where its launcher names the kernel by size alone (`named`) or
    else the faster of the two, never less than the one-shot at the limit."""
    bw = gpu.scale_up_link_bytes_per_s(n - 1.0) * cal.custom_ar_bw_eff  # a mesh's links to the other n - 1 peers
    spread = np.maximum(n - 1.0, 0.0) / np.maximum(bw, 1e-9)
    # beyond the 8 GPUs the tables time (MNNVL's multicast kernels in an NVL72 domain, spec/engines/trtllm.py) at 8 GPUs' cost
    peers = cal.custom_ar_peer_s * np.clip(n - 2.0, 0.0, 6.0)

    def one(size):
        return cal.custom_ar_latency_s + peers + spread * size

    two = cal.custom_ar_twoshot_latency_s + peers + 2.0 / np.maximum(n, 1.0) * spread * nbytes
    fastest = np.minimum(one(nbytes), two)
    oneshot, named = np.asarray(oneshot, float), np.asarray(named, bool)
    switched = (oneshot > 0) | named
    if not np.any(switched):
        return fastest
    # an infinite limit (the one-shot at every size) prices no floor: its branch is never taken
    floor = one(np.where(np.isfinite(oneshot), oneshot, 0.0))
    kept = np.where(nbytes < oneshot, one(nbytes), np.maximum(np.where(named, two, fastest), floor))
    return np.where(switched, kept, fastest)
