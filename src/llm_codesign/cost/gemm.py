"""A GEMM's time: C[m,n] = A[m,k] B[k,n] (grouped or not) on the fastest of the GPU's tiles, tile
and wave quantised, with split-K, each tile at its shared-memory feed rate, K padded to TMA's rows, a
p-norm blend with the memory time and the kernel's fixed cost; its FLOPs and bytes; the kernel family
whose efficiency applies. Arrays broadcast as in every cost formula (cost.kernels); the machinery that
prices a search's grid once per distinct GEMM is cost.arrays'.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import fields
from functools import lru_cache, partial

import numpy as np

from llm_codesign.cost.arrays import Rows, Tokens, fastest, masked, tabulated
from llm_codesign.cost.calibration import BACKEND_KEYED, Calibration
from llm_codesign.cost.reuse import PriceMemo, array_key, reusing
from llm_codesign.spec.engines import Engine
from llm_codesign.spec.hardware import Gpu


@lru_cache(maxsize=512)
def _candidate_tiles(gpu: Gpu, math: str, a_bytes: float, w_bytes: float) -> tuple[tuple[int, int, int], ...]:
    """Tiles that can win: a 2-CTA tile has the per-SM shape of its 1-CTA twin with coarser quantisation,
    so it wins only where shared memory feeds it faster (tile_feed: it splits both operands over the pair)."""
    feed = {t: tile_feed(t[0], t[1], gpu, math=math, a_bytes=a_bytes, w_bytes=w_bytes) for t in gpu.tiles}
    twin = {(tm, tn): feed[(tm, tn, c)] for tm, tn, c in gpu.tiles if c == 1}
    return tuple(t for t in gpu.tiles if t[2] == 1 or feed[t] > twin.get((t[0] // t[2], t[1]), -1.0))


def tile_feed(tm: int, tn: int, gpu: Gpu, *, math: str, a_bytes: float, w_bytes: float) -> float:
    """Share of the tensor cores' rate a tile's operands can be fed at. Each K step a tile reads tm rows
    of A and tn rows of B from shared memory for 2*tm*tn FLOPs (a 2-CTA tile splits both operands and
    its MMA over the pair, so the ratio holds per SM and its wider shape needs less per FLOP); where
    that exceeds what shared memory delivers per FLOP (gpu.smem_bytes_per_bf16_flop at the BF16 rate,
    less at the faster FP8/FP4 rates) the tile runs at the feed rate. On Blackwell this is what makes
    tiles narrower than 128 slow (SS-mode MMA with N < 128 is shared-memory bound) and a dimension
    that only divides by 64 cost more than one that divides by 128 or 256."""
    supply = gpu.smem_bytes_per_bf16_flop
    if supply <= 0.0:
        return 1.0
    need = (tm * a_bytes + tn * w_bytes) / (2.0 * tm * tn)
    return min(1.0, supply * gpu.peak("bf16") / gpu.peak(math) / need)


def tma_padded(k, a_bytes: float, w_bytes: float):
    """K as a GEMM runs it: TMA moves rows whose byte length is a multiple of 16 (CUDA driver API,
    cuTensorMapEncodeTiled: globalStrides multiples of 16), so a row of K elements of the narrower
    operand that is not is padded to the next such multiple (8 BF16, 16 FP8, 32 FP4 values)."""
    elt = min(2.0 ** np.floor(np.log2(x)) for x in (a_bytes, w_bytes))  # storage element, block scales aside
    unit = 16.0 / elt
    # a hair below the quotient, so that a K a float32 rounding error above a whole number of rows is not padded a row more
    return np.ceil(np.asarray(k) * np.float32(1.0 / unit) - np.float32(1e-6)) * np.float32(unit)


def quantise_kernel(engine: Engine | None, a_bytes: float, *, kernel: str = "", fused: bool | str | None = None) -> bool:
    """Whether FP8/FP4 activations are quantised by a kernel of their own before a GEMM: in the kernel
    tables' rows (`engine` None), for block-scaled FP8 (per 1x128 group at run time) everywhere, and in
    the steps of engines that do not fuse it into the previous kernel (`fused`: the caller knows, else
    the engine's act_quant, Engine.fusions); never where `fused` is "epilogue" (the previous GEMM's
    epilogue wrote them quantised, with their scales: TRTLLM-Gen's FC1 for its FC2; or a quantise op the
    caller prices itself: MLA's mla_bmm_quant)."""
    if a_bytes >= 2.0 or fused == "epilogue":
        return False
    if engine is None or kernel in ("fp8_block", "fp8_deepgemm"):
        return True
    return not (engine.fuses("act_quant") if fused is None else fused)


def gemm_kernel(math: str, weight_dtype: str = "", *, fp4_math: bool = False) -> str:
    """Kernel family whose efficiency/overhead apply: block-scaled FP8 (DeepGEMM-style) differs from
    per-tensor FP8; FP4 covers NVFP4 and MXFP4. 4-bit weights on 16-bit math run mixed-input kernels
    that dequantise in an mma.sync main loop (W4A16: Marlin, triton_kernels) where no FP4 tensor-core
    path takes them: INT4 everywhere (vLLM oracle/int_wna16.py: Marlin on every CUDA GPU), MXFP4/NVFP4 on
    GPUs without FP4 math (`fp4_math`); on Blackwell MXFP4 x BF16 runs trtllm-gen's tcgen05 kernels
    (vLLM FLASHINFER_TRTLLM_MXFP4_BF16), priced as a BF16 GEMM reading 4-bit weights. INT8 W8A8 (math int8) runs the
    per-tensor FP8 family's kernel at the INT8 peak: vLLM's cutlass_scaled_mm takes either input type in one template and
    tile tables (csrc/quantization/cutlass_w8a8/c3x/scaled_mm_sm90_int8.cu beside _fp8.cu, CutlassScaledMMLinearKernel;
    SGLang's int8_scaled_mm the same CUTLASS GEMM with a per-token x per-channel epilogue), with no INT8 GEMM timed in
    data/; INT8 weights on 16-bit math (W8A16) the mixed-input family (Marlin's uint8b128: gptq_marlin.py TYPE_MAP)."""
    if math == "fp8" and weight_dtype == "fp8_block":
        return "fp8_block"
    if math == "int8":
        return "fp8"
    if math == "bf16" and (weight_dtype in ("int4", "int8") or (weight_dtype in ("mxfp4", "nvfp4") and not fp4_math)):
        return "w4a16"
    return math


def main_loop_rate(kernel: str, gpu: Gpu) -> float:
    """Share of its kernel family's rate (gemm_eff) a GEMM's main loop keeps on `gpu`: the kernel tables'
    block-scaled FP8 (fp8_block) where the GPU's tensor cores do not apply the scales (Gpu.block_scale_rate:
    Hopper's CUDA cores promote each K block), 1 elsewhere (Blackwell's tcgen05 block-scaled MMA)."""
    return gpu.block_scale_rate if kernel == "fp8_block" else 1.0


def peak_rate(gpu: Gpu, cal: Calibration, math: str, kernel: str, eff_scale=1.0):
    """FLOP/s a GEMM of kernel family `kernel` in `math` computes at (before tiles and waves): the GPU's peak, its
    family's efficiency, the share its main loop keeps on this GPU, and `eff_scale` (a grouped GEMM's MoE kernel family,
    Calibration.moe_kernel). The one rate gemm_time prices with and lint's ridge point (ridge) divides."""
    return gpu.peak(math) * cal.gemm_eff(kernel) * main_loop_rate(kernel, gpu) * eff_scale


def ridge(gpu: Gpu, cal: Calibration, math: str, kernel: str, eff_scale=1.0):
    """FLOP/B at which a GEMM's compute time (peak_rate) equals its memory time (HBM at the family's streaming share,
    Calibration.gemm_bw): below it gemm_time's memory term is the larger."""
    return peak_rate(gpu, cal, math, kernel, eff_scale) / (gpu.hbm_bandwidth_bytes_per_s * cal.gemm_bw(kernel))


def _best_tile_time(m: Tokens, n, k, gpu: Gpu, cal: Calibration, *, groups, peak, kernel, math, a_bytes, w_bytes, swap_ab, token_tile=None,
                    even_grid: bool = False, tuned: bool = False, parts=None):
    """Compute time of the fastest of the GPU's tiles (float32 arrays), tile and wave quantised, with
    split-K for dense BF16/FP8 kernels and each tile at its shared-memory feed rate. M enters only as
    whole tile rows, ceil(M / tile M), so where N, K and the groups vary along fewer elements than M
    (a search's chunk: per plan against plans x batches x k) the tiles are priced once per distinct
    (N, K, groups) and whole-row count and gathered (cost.arrays.tabulated): the same values. `token_tile`:
    the kernel's own tile, not the fastest of the dense ones (_token_tile_time, with its `parts`; `tuned`: the fastest of
    it and the next two rungs of TRTLLM-Gen's ladder); with `even_grid`, Marlin's block rows
    spread evenly over its grid (_marlin_grid_time)."""
    if even_grid:
        return _marlin_grid_time(m.m, n, k, gpu, cal, block=token_tile, peak=peak, kernel=kernel, groups=groups, parts=parts)
    tiles = _candidate_tiles(gpu, math, float(a_bytes), float(w_bytes))
    if token_tile is not None:
        return _token_tile_time(m.m, n, k, gpu, cal, tiles=tiles, token_tile=token_tile, peak=peak, kernel=kernel, math=math,
                                groups=groups, a_bytes=a_bytes, w_bytes=w_bytes, parts=parts, tuned=tuned)
    # split-K keeps >= 256 of K per split; block-scaled kernels (fp8_block, fp4) do not split K; Marlin's
    # striped partition (W4A16) spreads K over the SMs as stream-K does
    can_split = kernel in ("bf16", "fp8", "w4a16")
    if swap_ab is None:
        swap_ab = can_split  # dense BF16/FP8 libraries also swap A/B for few-token GEMMs; block-scaled kernels do not
    if swap_ab:
        # few-token GEMMs swap A and B: tokens ride on the MMA's narrow N side (16-64), weights on its
        # M side (small-M cuBLAS/TensorRT-LLM kernels, CUTLASS MoE swap-AB kernels). They are
        # candidates for every M, as the kernel tables were fitted: whether other GEMMs in the same
        # array are narrow must not change this one's time (one estimate = the same in a sweep)
        wide = max(t[0] for t in tiles if t[2] == 1)  # a 1-CTA MMA: tcgen05 cta_group::1 takes M <= 128
        tiles = tiles + tuple((tok, wide, 1) for tok in (16, 32, 64))

    def price(rows, n, k, groups):
        return _fastest_tile(rows, n, k, gpu, cal, tiles=tiles, groups=groups, peak=peak, kernel=kernel, math=math, a_bytes=a_bytes,
                          w_bytes=w_bytes, can_split=can_split)

    q = min(t[0] for t in tiles)
    if any(t[0] & (t[0] - 1) for t in tiles):  # a tile M not a power of two (a GPU file's own): M as it is
        return price(m.rows(0), n, k, groups)
    return tabulated(price, m.rows(q), n, k, groups)


# Marlin's work unit: one 16 x 4-row block's slice of a thread_k x thread_n = 128 x 128 weight tile (its configs' product:
# 128 x 128 or 64 x 256, vllm-project/vllm csrc/moe/marlin_moe_wna16/ops.cu@fb4ff9f small_batch / large_batch thread configs)
MARLIN_UNIT_NK = 128.0 * 128.0


def _marlin_grid_time(m, n, k, gpu: Gpu, cal: Calibration, *, block, peak, kernel, groups, parts=None):
    """Compute time of Marlin's MoE (cost.ffns.marlin_block's `block` rows an expert-block): it spreads the work evenly over
    its grid of one CTA per SM with split-K, each CTA taking iters = div_ceil(k_tiles x n_tiles x parallel, gridDim.x) of the
    units (vllm-project/vllm csrc/moe/marlin_moe_wna16/marlin_template.h@31106f4 Marlin: "iters = div_ceil(k_tiles * n_tiles *
    parallel, gridDim.x)", its stripes over the SMs), so the work is every expert's rows padded to whole blocks, ceil(rows /
    block) x block, in whole units over the SMs, with no wave of whole tiles to quantise; each unit's K steps at the kernel's
    share of the peak plus the pipeline's fill (gemm_k_half). At few rows the weights' read (the memory time beside it) binds."""
    f32 = np.float32
    b = np.asarray(block, f32)  # cost.ffns.marlin_block's rows
    if parts is None:
        blocks = np.ceil(np.asarray(m, f32) / b) * np.asarray(groups, f32)
    else:
        blocks = sum(np.ceil(np.asarray(r, f32) / b) * np.asarray(g, f32) for r, g in parts)
    units = blocks * np.ceil(np.asarray(n, f32) * f32(1.0 / 128.0)) * np.ceil((np.asarray(k, f32) + f32(cal.gemm_k_half(kernel))) * f32(1.0 / 128.0))
    per_unit = f32(2.0) * b * f32(MARLIN_UNIT_NK) * f32(gpu.sms) / f32(peak)  # one SM's share of the rate
    return np.ceil(units / f32(gpu.sms)) * per_unit


def token_tile_ladder(a_b, w_b) -> tuple[float, ...]:
    """TRTLLM-Gen's MoE token tiles (mSupportedTileN, a power-of-two ladder from 8): up to 256 for 4-bit weights on
    quantised activations, 64 on BF16 ones, 128 for 8- and 16-bit weights (flashinfer-ai/flashinfer
    csrc/trtllm_fused_moe_kernel_launcher.cu:1604,1834,2137-2145,2923-2945@fb28d72)."""
    top = 256.0 if w_b < 1.0 and a_b < 2.0 else 64.0 if w_b < 1.0 else 128.0
    return tuple(2.0 ** e for e in range(3, int(np.log2(top)) + 1))


def _token_tile_time(m, n, k, gpu: Gpu, cal: Calibration, *, tiles, token_tile, peak, kernel, math, groups, a_bytes, w_bytes, parts=None,
                     tuned=False):
    """Compute time of a grouped GEMM whose kernel fixes its tile (TRTLLM-Gen's MoE: cost.ffns.token_tile): the MMA
    output transposed (transposeMmaOutput, hard-coded true: flashinfer-ai/flashinfer csrc/trtllm_fused_moe_runner.cu:
    99-108,243-252@fb28d72), so each CTA computes a token tile of routed rows (MMA N) x the GPU's 1-CTA MMA M of weight
    rows (tcgen05 cta_group::1: 128), over the whole of K (one CTA per tile and expert: its configs, sorted by tile K, M, N
    and scheduler, split none: csrc/trtllm_batched_gemm_runner.cu:471-522), in waves over the SMs; a K step the longer
    of the MMA at the kernel's share of the peak and the tile's shared-memory feed (tile_feed: a narrow tile reads the
    same weight tile a K step for less MMA work). Each expert's rows are computed in whole tiles (the routing pads them
    so), so the padding is priced. `tuned` (TRTLLM-Gen's MoE): the tile is the autotuner's, the fastest of `token_tile`
    (the heuristic tile, cost.ffns.token_tile) and the ladder's next two rungs, tiles computeSelectedTileN offers
    (csrc/trtllm_fused_moe_kernel_launcher.cu:953-989@fb28d72; the autotuner profiles each [tile_N, config]
    getValidConfigs lists, :1802-1817, and keeps the fastest). Its fourth candidate, the rung below, is not priced: the
    B200 MoE table's times follow the heuristic tile where this model prices the narrower one faster (docs/modelling-
    notes.md#moe-tile, moeb2; with it the table's B200 rows 11.6 -> 19.9%, #fixmono-tile-window). A minimum over tiles each
    non-decreasing in the rows, over a window that only moves up the ladder as the tokens grow, so more tokens do not
    price faster (the heuristic tile alone did: DeepSeek-R1 on 8 B200s under MoE TP8, 256 -> 257 tokens took tile 8 -> 16
    and the busiest expert's 8.0024 rows two tiles of 8 -> one of 16). Else `token_tile` itself (SGLang's Triton block). `parts`: the
    launch's groups where their rows differ, ((rows, groups), ...) (a skewed load's busiest expert and the rest), their
    CTAs wave-quantised together, as the one launch runs them (else `m` rows in each of `groups`)."""
    f32 = np.float32
    wide = max(t[0] for t in tiles if t[2] == 1)
    tt = np.asarray(token_tile, f32)
    k_half = f32(cal.gemm_k_half(kernel))
    out = None
    for t in token_tile_ladder(float(a_bytes), float(w_bytes)) if tuned else np.unique(tt):
        # the autotuner's window: the heuristic tile up to the ladder's next two rungs (t in [tt, 4 tt])
        offered = ((f32(t) >= tt) & (f32(t) <= f32(4.0) * tt)) if tuned else tt == f32(t)
        if not np.any(offered):
            continue
        # a K step takes the longer of the MMA at the kernel's share of the peak and the operands' shared-memory feed, a
        # bandwidth the share does not scale (the tile's time at the full peak and its feed rate, _per_tile's)
        ((rq, inv_n, slots, inv_slots, feed),), _ = _per_tile(((int(t), wide, 1),), gpu, q=0, peak=float(gpu.peak(math)), math=math,
                                                           a_bytes=float(a_bytes), w_bytes=float(w_bytes))
        per_wave = np.maximum(f32(2.0 * float(t) * wide * gpu.sms / float(peak)), feed)
        if parts is None:
            m_tiles, g = np.ceil(m * rq), groups
        else:  # every group's whole token tiles, one grid
            m_tiles, g = sum(np.ceil(np.asarray(r, f32) * rq) * np.asarray(gr, f32) for r, gr in parts), f32(1.0)
        time = _tile_times(m_tiles, inv_n, slots, inv_slots, per_wave, n=n, k=k, groups=g, k_split_max=f32(1.0),
                           k_half=k_half, can_split=False)
        time = np.where(offered, time, f32(np.inf))
        out = time if out is None else np.minimum(out, time)
    return out


def _fastest_tile(rows: Rows, n, k, gpu: Gpu, cal: Calibration, *, tiles, groups, peak, kernel, math, a_bytes, w_bytes, can_split):
    """The fastest of `tiles` at each element (the loop of _best_tile_time): each tile's time with the
    split-K the GEMM libraries allow, at its feed rate (cost.arrays.fastest stacks them or loops)."""
    f32 = np.float32
    # split-K: at most the split factor the GEMM libraries pick (gemm_max_split_k, fitted per family)
    k_split_max = np.maximum(np.minimum(np.floor(k / f32(256.0)), f32(np.floor(cal.gemm_max_split_k))), f32(1.0))
    k_half = f32(cal.gemm_k_half(kernel))
    per_tile, columns = _per_tile(tiles, gpu, q=rows.q, peak=float(peak), math=math, a_bytes=float(a_bytes), w_bytes=float(w_bytes))
    tile_time = partial(_tile_times, n=n, k=k, groups=groups, k_split_max=k_split_max, k_half=k_half, can_split=can_split)
    return fastest(rows, per_tile, columns, tile_time, shapes=(n, k, groups))


@lru_cache(maxsize=512)  # a search prices each GEMM format's tiles in every chunk
def _per_tile(tiles, gpu: Gpu, *, q, peak, math, a_bytes, w_bytes):
    """Per tile: 1 / its M in row quanta of q, 1 / its N, its CTA slots and 1 / them, and its time per
    K step and wave (float32 scalars); and each of those over the tiles, as a float32 array."""
    f32 = np.float32
    per_tile = tuple((f32((q or 1) / tm), f32(1.0 / tn), f32(gpu.sms // ctas), f32(1.0 / (gpu.sms // ctas)),
                      f32(2.0 * tm * tn * gpu.sms / (ctas * peak * tile_feed(tm, tn, gpu, math=math, a_bytes=a_bytes, w_bytes=w_bytes))))
                     for tm, tn, ctas in tiles)
    columns = tuple(np.array(col, f32) for col in zip(*per_tile, strict=True))
    for c in columns:
        c.flags.writeable = False  # shared by every call with these tiles
    return per_tile, columns


def _tile_times(m_tiles, inv_n, slots, inv_slots, per_wave, *, n, k, groups, k_split_max, k_half, can_split):
    """One tile's time (or every tile's, along a leading axis), its whole tiles along M given."""
    f32 = np.float32
    count = m_tiles * (np.ceil(n * inv_n) * groups)  # output tiles
    if can_split:
        # split-K / stream-K when there are too few output tiles to fill the GPU
        split = np.minimum(np.maximum(np.floor(slots / np.maximum(count, f32(1.0))), f32(1.0)), k_split_max)
        waves = np.ceil(count * split * inv_slots)
        return waves * (k / split + k_half) * per_wave
    # per wave: one tile's K main loop plus a fixed prologue/epilogue cost of k_half steps
    return np.ceil(count * inv_slots) * ((k + k_half) * per_wave)


# What a GEMM reads of a profile: all but the collectives' fields (collective_time's) and the per-engine
# host costs; the GEMM prices kept within reuse_gemm_prices() (cost.reuse), None elsewhere.
_GEMM_FIELDS = tuple(f.name for f in fields(Calibration)
                     if f.name not in BACKEND_KEYED and not f.name.startswith(("comm_", "custom_ar_", "scale_out_")))
_GEMMS: ContextVar[PriceMemo | None] = ContextVar("gemm_prices", default=None)


def reuse_gemm_prices():
    """Within the block gemm_time prices each distinct input once and returns the same arrays again
    (shared: callers read them, as every caller does): a serving fit (measure.calibrate) varies the
    collectives' latencies, which re-prices every step but none of its GEMMs. Off elsewhere."""
    return reusing(_GEMMS, _GEMM_FIELDS, 1 << 16)  # entries of a few small arrays each


def gemm_time(m, n, k, gpu: Gpu, cal: Calibration, *, math: str, a_bytes, w_bytes, c_bytes=2.0,
              groups=1.0, distinct_groups=None, eff_scale=1.0, kernel: str | None = None, swap_ab: bool | None = None,
              overhead_s=None, fused_quant: bool | str | None = None, engine: Engine | None = None, quant_rows=None, token_tile=None,
              even_grid: bool = False, tuned: bool = False, parts=None):
    """C[m,n] = A[m,k] B[k,n], repeated over `groups` independent problems (grouped/batched GEMM):
    _gemm_time's (time, compute time, memory time), reused within reuse_gemm_prices(). `quant_rows`: the rows an
    activation quantisation of its own reads where they are not A's (None: A's rows over the groups). `parts`: with
    `token_tile`, the launch's groups of unequal rows, ((rows, groups), ...), on one grid (_token_tile_time); `m` and
    `groups` then still give its work (their rows over the groups: the parts' total). `even_grid`: `token_tile` is
    Marlin's block and its blocks are spread evenly over its grid (_marlin_grid_time); `tuned`: `token_tile` is
    TRTLLM-Gen's heuristic tile and the autotuner takes the fastest of it and the ladder's next two (_token_tile_time)."""
    def price():
        return _gemm_time(m, n, k, gpu, cal, math=math, a_bytes=a_bytes, w_bytes=w_bytes, c_bytes=c_bytes, groups=groups,
                          distinct_groups=distinct_groups, eff_scale=eff_scale, kernel=kernel, swap_ab=swap_ab, overhead_s=overhead_s,
                          fused_quant=fused_quant, engine=engine, quant_rows=quant_rows, token_tile=token_tile, even_grid=even_grid,
                          tuned=tuned, parts=parts)

    memo = _GEMMS.get()
    if memo is None:
        return price()
    key = (gpu, memo.cal_key(cal), None if engine is None else engine.name, math, kernel, swap_ab, fused_quant, overhead_s is None,
           *(array_key(x.m if isinstance(x, Tokens) else x) for x in (m, n, k, a_bytes, w_bytes, c_bytes, groups, eff_scale)),
           array_key(-1.0 if distinct_groups is None else distinct_groups), array_key(0.0 if overhead_s is None else overhead_s),
           array_key(-1.0 if quant_rows is None else quant_rows), array_key(-1.0 if token_tile is None else token_tile), even_grid, tuned,
           -1 if parts is None else len(parts), *(array_key(x) for part in (parts or ()) for x in part))
    return memo.get(key, price)


def _gemm_time(m, n, k, gpu: Gpu, cal: Calibration, *, math: str, a_bytes, w_bytes, c_bytes=2.0,
              groups=1.0, distinct_groups=None, eff_scale=1.0, kernel: str | None = None, swap_ab: bool | None = None,
              overhead_s=None, fused_quant: bool | str | None = None, engine: Engine | None = None, quant_rows=None, token_tile=None,
              even_grid: bool = False, tuned: bool = False, parts=None):
    """C[m,n] = A[m,k] B[k,n], repeated over `groups` independent problems (grouped/batched GEMM).

    Compute: FLOPs padded to whole CTA tiles (tile quantisation) and whole waves over the SMs (wave
    quantisation), with split-K when there are too few tiles to fill the GPU; the best of the GPU's
    tile shapes is taken, as cuBLAS/CUTLASS heuristics do, each at the rate shared memory feeds it
    (tile_feed), over K padded to TMA's 16-byte rows (tma_padded). Memory: A, B and C are all counted
    (the output too). `distinct_groups` is how many groups' weights are actually read (MoE decode).
    """
    # float32 inside: times need ~7 significant digits, and the tile loop is the cost model's hot path
    f32 = np.float32
    tokens = m if isinstance(m, Tokens) else Tokens(m)
    m = tokens.m
    n = np.asarray(n, dtype=f32)
    k_in = np.asarray(k, dtype=f32)
    k = tma_padded(k_in, a_bytes, w_bytes).astype(f32)
    padded = k > k_in  # the activation is copied into a padded buffer first (below)
    groups = np.asarray(groups, dtype=f32)
    dg = groups if distinct_groups is None else np.asarray(distinct_groups, dtype=f32)
    live = (n > 0) & (k > 0) & (groups > 0)  # per plan in a search; M per deployment, where some element has no rows
    if not (tokens.positive and live.all()):
        live = (m > 0) & live
    kernel = kernel or gemm_kernel(math)  # the math's own family (INT8: the per-tensor FP8 one)
    peak = peak_rate(gpu, cal, math, kernel, eff_scale)
    best = _best_tile_time(tokens, n, k, gpu, cal, groups=groups, peak=peak, kernel=kernel, math=math, a_bytes=a_bytes,
                           w_bytes=w_bytes, swap_ab=swap_ab, token_tile=token_tile, even_grid=even_grid, tuned=tuned, parts=parts)
    rows = m if groups.ndim == 0 and groups == 1.0 else m * groups  # A's rows over the groups (m * 1 is m)
    nbytes = _gemm_bytes(rows, n, k, a_bytes=a_bytes, w_bytes=w_bytes, c_bytes=c_bytes, distinct_groups=dg)
    t_mem = nbytes * f32(1.0 / (gpu.hbm_bandwidth_bytes_per_s * cal.gemm_bw(kernel)))
    # compute and memory overlap imperfectly near the ridge point: a p-norm blend (p -> inf is max)
    p = f32(cal.gemm_blend_p)
    hi = np.maximum(np.maximum(best, t_mem), f32(1e-30))
    fixed = cal.gemm_overhead(kernel) if overhead_s is None else overhead_s
    if engine is not None and overhead_s is None:
        # in a serving step a quantised GEMM's own launch costs what a BF16 GEMM's does: the excess of
        # its table rows is the dynamic scale and quantise launches those rows time (Engine.fusions)
        fixed = min(fixed, cal.gemm_overhead("bf16"))
    # (best^p + t_mem^p)^(1/p) with the larger term's ratio exactly 1: two powers instead of three
    # (a power costs ~30 multiplies; this is the search's hottest line), the same float32 result
    t = hi * np.power(f32(1.0) + np.power(np.minimum(best, t_mem) / hi, p), f32(1.0) / p) + f32(fixed)
    if quantise_kernel(engine, a_bytes, kernel=kernel, fused=fused_quant):
        # FP8/FP4 activations: the BF16 input is quantised by its own kernel first (TensorRT-LLM's
        # Linear runs fp8/fp4 quantize ops before the GEMM), one read of A in BF16 and one write; of `quant_rows` where
        # the pass reads other rows than the GEMM's (a grouped GEMM's input quantised before its tokens are routed)
        q_rows = rows if quant_rows is None else np.asarray(quant_rows, dtype=f32)
        t = t + q_rows * k * f32((2.0 + a_bytes) / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)) + f32(cal.kernel_overhead_s)
    if np.any(padded):
        # the padded copy of A: one read and one write, one more launch
        copy = rows * k * f32(2.0 * a_bytes / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)) + f32(cal.kernel_overhead_s)
        t = t + np.where(padded, copy, f32(0.0))
    return masked(live, t, best, t_mem, shape=np.broadcast_shapes(m.shape, live.shape))


def vllm_token_quant(m, k, gpu: Gpu, cal: Calibration):
    """What vLLM's dynamic per-token FP8 quantise kernel (its per-tensor FP8 linear's activations: Fp8LinearMethod takes
    per-token scales where the scheme is dynamic and CUTLASS runs, quantization/fp8.py) costs beyond the one pass
    gemm_time prices for a quantise kernel: it reads each row twice, once for the row's absmax and once to convert
    (dynamic_per_token_scaled_fp8_quant_kernel_strided, "1) per-token absmax" / "2) quantize", against SGLang's
    per_token_quant_fp8, which keeps the row in shared memory), so M x K BF16 bytes more; and it runs one CTA per
    token (dim3 grid(num_tokens), a block-wide cub reduction in each), a time per token (quant_token_s_vllm):
    vllm-project/vllm csrc/quantization/w8a8/fp8/common.cu@cda1b34. The H100 per-engine GEMM table's vLLM rows at
    K 32 take 14.2 us at M 1,280 and 25.3 us at 3,072 (N 128), SGLang's 7.5 us at 1,281.
    Table-only: the kernel tables' vLLM rows (the collector's bare linear layer) take it, no serving step does. In serving,
    vLLM's torch.compile passes fuse the per-token quantise into the RMSNorm before the QKV and gate-up GEMMs
    (vllm/compilation/fusion.py RMSNormDynamicQuantPattern, GroupShape.PER_TOKEN@ef0feb37) and into the SiLU-and-mul
    before the down GEMM (activation_quant_fusion.py@0a1ee72), which Engine.fusions prices; the o_proj input alone stays
    unfused (fusion_attn.py's attention + quant fusion is off by default), and pricing this kernel there would move the
    Blackwell vLLM FP8 serving runs, whose campaigns it was not fitted on. quant_token_s_vllm (fitted 5.41 ns, range
    0.1-20 ns) stands for the time per token of the kernel's CTAs, one per token (its launch on an SM, the block reduction
    and the two passes' latency beyond the bandwidth priced); its holdout (alternate rows fitted, the rest priced) is
    interpolation inside the table's M range, not extrapolation."""
    m, k = np.asarray(m, float), np.asarray(k, float)
    return m * k * 2.0 / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff) + m * cal.quant_token_s_vllm


def gemm_bytes(m, n, k, *, a_bytes, w_bytes, c_bytes, groups, distinct_groups):
    """Bytes moved: A and C for every group, B (weights) for the groups whose weights are read.
    Keeps the dtype of its array arguments (float32 in the hot path, float64 in reports)."""
    return _gemm_bytes(m * groups, n, k, a_bytes=a_bytes, w_bytes=w_bytes, c_bytes=c_bytes, distinct_groups=distinct_groups)


def _gemm_bytes(rows, n, k, *, a_bytes, w_bytes, c_bytes, distinct_groups):
    """gemm_bytes of A's rows over the groups (m x groups)."""
    dt = np.result_type(rows, np.float32)
    return rows * (k * dt.type(a_bytes) + n * dt.type(c_bytes)) + distinct_groups * (k * n * dt.type(w_bytes))


def gemm_flops_bytes(m, n, k, *, a_bytes, w_bytes, c_bytes=2.0, groups=1.0, distinct_groups=None):
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    groups = np.asarray(groups, dtype=float)
    dg = groups if distinct_groups is None else np.asarray(distinct_groups, dtype=float)
    return 2.0 * m * n * k * groups, gemm_bytes(m, n, k, a_bytes=a_bytes, w_bytes=w_bytes, c_bytes=c_bytes, groups=groups, distinct_groups=dg)


def expert_formats(engine: Engine | None, gpu: Gpu, prec, *, gated: bool = True, kernel: str | None = None) -> tuple[str, str]:
    """The formats `engine` holds a MoE's routed experts in on `gpu` at EP 1 and at EP > 1 (Engine.moe_weight: the
    checkpoint's, or the one its MoE kernel converts them to at load, spec.engines.base.MOE_UPCAST), for a gated (SwiGLU)
    MoE or not; `kernel` the checkpoint's GEMM kernel family (default: its weight and activation as `gpu` runs them).
    The one derivation cost.ffns (held_as), cost.memory (expert_weight_bytes) and serve.estimate's notes read."""
    if engine is None:
        return prec.weight.name, prec.weight.name
    if kernel is None:
        from llm_codesign.spec.precision import gemm_math

        kernel = gemm_kernel(gemm_math(prec.weight, prec.activation, gpu), prec.weight.name, fp4_math=gpu.supports("fp4"))
    off, on = (engine.moe_weight(gpu.family, kernel, weight=prec.weight.name, ep=x, gated=gated) for x in (False, True))
    return off, on
