"""Array-valued cost formulas: GEMM (tile + wave quantisation), attention, elementwise, collectives.

Every function takes numpy arrays (or scalars) and broadcasts, so one code path prices one
deployment or a million. Times in seconds, sizes in bytes and FLOPs. Each returns
(time, compute_time, memory_time) so callers can name the binding resource.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import fields
from functools import lru_cache
from typing import NamedTuple

import numpy as np

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


def quantise_kernel(engine: Engine | None, a_bytes: float, *, kernel: str = "", fused: bool | None = None) -> bool:
    """Whether FP8/FP4 activations are quantised by a kernel of their own before a GEMM: in the kernel
    tables' rows (`engine` None), for block-scaled FP8 (per 1x128 group at run time) everywhere, and in
    the steps of engines that do not fuse it into the previous kernel (`fused`: the caller knows, else
    the engine's act_quant, Engine.fusions)."""
    if a_bytes >= 2.0:
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
    (vLLM FLASHINFER_TRTLLM_MXFP4_BF16), priced as a BF16 GEMM reading 4-bit weights."""
    if math == "fp8" and weight_dtype == "fp8_block":
        return "fp8_block"
    if math == "bf16" and (weight_dtype == "int4" or (weight_dtype in ("mxfp4", "nvfp4") and not fp4_math)):
        return "w4a16"
    return math


class Tokens:
    """A GEMM's M as the GEMMs of one step share it (a search's chunk: every attention and dense GEMM
    of a layer takes the step's tokens, at full size): float32 once, whether every element has rows,
    and its whole tile rows per row quantum with their least and most once. gemm_time takes it
    wherever it takes M."""

    __slots__ = ("m", "positive", "_rows")

    def __init__(self, m):
        self.m = np.asarray(m, dtype=np.float32)
        self.positive = self.m.size > 0 and bool(self.m.min() > 0)  # False on NaN
        self._rows: dict[int, _Rows] = {}

    def rows(self, q: int) -> "_Rows":
        """M in whole rows of q (q = 0: M as it is), with their least and most where q > 0."""
        if q not in self._rows:
            if q:
                j = np.ceil(self.m * np.float32(1.0 / q))
                self._rows[q] = _Rows(j, q, (float(j.min()), float(j.max())) if j.size else None)
            else:
                self._rows[q] = _Rows(self.m, 0)
        return self._rows[q]


def _best_tile_time(m: Tokens, n, k, gpu: Gpu, cal: Calibration, *, groups, peak, kernel, math, a_bytes, w_bytes, swap_ab):
    """Compute time of the fastest of the GPU's tiles (float32 arrays), tile and wave quantised, with
    split-K for dense BF16/FP8 kernels and each tile at its shared-memory feed rate. M enters only as
    whole tile rows, ceil(M / tile M), so where N, K and the groups vary along fewer elements than M
    (a search's chunk: per plan against plans x batches x k) the tiles are priced once per distinct
    (N, K, groups) and whole-row count and gathered (_tabulated): the same values."""
    tiles = _candidate_tiles(gpu, math, float(a_bytes), float(w_bytes))
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
        return _tile_loop(rows, n, k, gpu, cal, tiles=tiles, groups=groups, peak=peak, kernel=kernel, math=math, a_bytes=a_bytes,
                          w_bytes=w_bytes, can_split=can_split)

    q = min(t[0] for t in tiles)
    if any(t[0] & (t[0] - 1) for t in tiles):  # a tile M not a power of two (a GPU file's own): M as it is
        return price(m.rows(0), n, k, groups)
    return _tabulated(price, m.rows(q), n, k, groups)


class _Rows(NamedTuple):
    """M as the tile loop reads it: `j` = ceil(M / q), whole rows of q, where every tile's M is a
    power-of-two multiple of q (ceil(ceil(x) / r) = ceil(x / r), and exact in float32); M itself where
    q = 0."""
    j: object
    q: int
    span: tuple[float, float] | None = None  # j's least and most, where known


def _tabulated(price, rows: _Rows, n, k, groups):
    """price(rows, n, k, groups) over their broadcast, priced on a table of the distinct (n, k, groups)
    by the row counts between the least and the most, and gathered where that table is much smaller
    than the elements (bit for bit the same: the tile loop reads M only through the row counts);
    else priced directly."""
    j = rows.j
    full = np.broadcast_shapes(np.shape(j), np.shape(n), np.shape(k), np.shape(groups))
    per = np.broadcast_shapes(np.shape(n), np.shape(k), np.shape(groups))
    size = int(np.prod(full))
    if size < 4096 or np.shape(j) != full or 16 * int(np.prod(per)) > size:
        return price(rows, n, k, groups)
    lo, hi = rows.span or (float(j.min()), float(j.max()))
    if not (0.0 <= lo and hi - lo < size / 4.0):  # NaN, negative or too many row counts: price them as they are
        return price(rows, n, k, groups)
    width = int(hi - lo) + 1
    row, distinct = _distinct_rows((n, k, groups), per)
    if len(distinct[0]) * width * 4 > size or hi + len(distinct[0]) * width >= 2.0**24:  # float32 indices stay exact integers
        return price(rows, n, k, groups)
    counts = np.arange(lo, hi + 1.0, dtype=np.float32)[None, :]
    table = price(_Rows(counts, rows.q), *(d[:, None] for d in distinct))
    # each element's cell, computed in float32 (exact integers below 2**24), for the gather
    # (exact integers in float32 either way: the per-row base first, one full-size add)
    at = ((row * np.float32(width) - np.float32(lo)) + j).astype(np.intp) if np.ndim(row) else (j - np.float32(lo)).astype(np.intp)
    return np.take(np.broadcast_to(table, (len(distinct[0]), width)).reshape(-1), at)


def _distinct_rows(arrays, shape):
    """The distinct combinations of `arrays` (broadcast to `shape`, float32): each element's index
    into them (a float32 array of `shape`, 0 where there is one) and the combinations, one array each."""
    flat = [np.broadcast_to(np.asarray(x, np.float32), shape).reshape(-1) for x in arrays]
    varying = [i for i, x in enumerate(flat) if x.size > 1 and (x != x[0]).any()]
    if not varying:
        return 0, [x[:1] for x in flat]
    if len(varying) <= 2:  # one integer key: the float32 bit patterns side by side
        key = sum(flat[i].view(np.uint32).astype(np.uint64) << np.uint64(32 * s) for s, i in enumerate(varying))
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, inv = np.unique(np.stack(flat), axis=1, return_index=True, return_inverse=True)
    return inv.reshape(shape).astype(np.float32), [x[first] for x in flat]


TILE_BATCH = 1 << 16  # the most elements x tiles priced in one pass over every tile (above: one pass per tile)


def _tile_loop(rows: _Rows, n, k, gpu: Gpu, cal: Calibration, *, tiles, groups, peak, kernel, math, a_bytes, w_bytes, can_split):
    """The fastest of `tiles` at each element (the loop of _best_tile_time). Small arrays (a table of
    distinct GEMMs, a chunk's per-plan shapes) take every tile at once along a leading axis, large
    ones one tile at a time; the same float32 operations on the same values either way."""
    f32 = np.float32
    # split-K: at most the split factor the GEMM libraries pick (gemm_max_split_k, fitted per family)
    k_split_max = np.maximum(np.minimum(np.floor(k / f32(256.0)), f32(np.floor(cal.gemm_max_split_k))), f32(1.0))
    k_half = f32(cal.gemm_k_half(kernel))
    per_tile, columns = _per_tile(tiles, gpu, q=rows.q, peak=float(peak), math=math, a_bytes=float(a_bytes), w_bytes=float(w_bytes))
    kw = dict(n=n, k=k, groups=groups, k_split_max=k_split_max, k_half=k_half, can_split=can_split)
    if len(tiles) * np.broadcast(rows.j, n, k, groups).size <= TILE_BATCH:
        ax = (slice(None),) + (None,) * max(np.ndim(rows.j), np.ndim(n), np.ndim(k), np.ndim(groups))
        rq, inv_n, slots, inv_slots, per_wave = (col[ax] for col in columns)
        return _tile_times(np.ceil(rows.j * rq), inv_n, slots, inv_slots, per_wave, **kw).min(axis=0)
    best = None
    m_tiles: dict = {}  # whole tiles along M, once per tile M
    for rq, inv_n, slots, inv_slots, per_wave in per_tile:
        if rq not in m_tiles:
            m_tiles[rq] = np.ceil(rows.j * rq)
        t = _tile_times(m_tiles[rq], inv_n, slots, inv_slots, per_wave, **kw)
        best = t if best is None else np.minimum(best, t)
    return best


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
              overhead_s=None, fused_quant: bool | None = None, engine: Engine | None = None):
    """C[m,n] = A[m,k] B[k,n], repeated over `groups` independent problems (grouped/batched GEMM):
    _gemm_time's (time, compute time, memory time), reused within reuse_gemm_prices()."""
    def price():
        return _gemm_time(m, n, k, gpu, cal, math=math, a_bytes=a_bytes, w_bytes=w_bytes, c_bytes=c_bytes, groups=groups,
                          distinct_groups=distinct_groups, eff_scale=eff_scale, kernel=kernel, swap_ab=swap_ab, overhead_s=overhead_s,
                          fused_quant=fused_quant, engine=engine)

    memo = _GEMMS.get()
    if memo is None:
        return price()
    key = (gpu, memo.cal_key(cal), None if engine is None else engine.name, math, kernel, swap_ab, fused_quant, overhead_s is None,
           *(array_key(x.m if isinstance(x, Tokens) else x) for x in (m, n, k, a_bytes, w_bytes, c_bytes, groups, eff_scale)),
           array_key(-1.0 if distinct_groups is None else distinct_groups), array_key(0.0 if overhead_s is None else overhead_s))
    return memo.get(key, price)


def _gemm_time(m, n, k, gpu: Gpu, cal: Calibration, *, math: str, a_bytes, w_bytes, c_bytes=2.0,
              groups=1.0, distinct_groups=None, eff_scale=1.0, kernel: str | None = None, swap_ab: bool | None = None,
              overhead_s=None, fused_quant: bool | None = None, engine: Engine | None = None):
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
    kernel = kernel or math
    peak = gpu.peak(math) * cal.gemm_eff(kernel) * eff_scale
    best = _best_tile_time(tokens, n, k, gpu, cal, groups=groups, peak=peak, kernel=kernel, math=math, a_bytes=a_bytes,
                           w_bytes=w_bytes, swap_ab=swap_ab)
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
        # Linear runs fp8/fp4 quantize ops before the GEMM), one read of A in BF16 and one write
        t = t + rows * k * f32((2.0 + a_bytes) / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)) + f32(cal.kernel_overhead_s)
    if np.any(padded):
        # the padded copy of A: one read and one write, one more launch
        copy = rows * k * f32(2.0 * a_bytes / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)) + f32(cal.kernel_overhead_s)
        t = t + np.where(padded, copy, f32(0.0))
    return _masked(live, t, best, t_mem, shape=np.broadcast_shapes(m.shape, live.shape))


def _masked(live, *times, shape=None):
    """Each time where `live`, else 0 (no work, no launch), in its own dtype; where everything is live,
    as in most of a search's chunks, the times as they are (three passes fewer), broadcast to `shape`
    (live's own by default)."""
    if np.all(live):
        shape = np.shape(live) if shape is None else shape
        return tuple(t if np.shape(t) == shape else np.broadcast_to(t, np.broadcast_shapes(shape, np.shape(t))) for t in times)
    return tuple(np.where(live, t, 0.0) for t in times)


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


def decode_work_items(tokens, kv_heads, q_heads, cal: Calibration, kv_fp8: bool):
    """Work items of a decode-attention kernel: per KV head, its query group in slices of up to
    `attn_decode_group_*` heads (1: one query head per item as in masked multi-head attention;
    large: the whole group in one tensor-core tile, as TensorRT-LLM's XQA does for GQA/MQA).
    Groups wider than `attn_decode_max_group` fall back to one item per query head."""
    g = cal.attn_decode_group_fp8 if kv_fp8 else cal.attn_decode_group_bf16
    kv = np.asarray(kv_heads, float)
    group = np.asarray(q_heads, float) / np.maximum(kv, 1.0)
    per_kv = np.where(group > cal.attn_decode_max_group, group, np.ceil(group / g - 1e-9))
    return np.asarray(tokens, float) * kv * per_kv


def attention_decode_time(flops, nbytes, gpu: Gpu, cal: Calibration, *, seq_heads=0.0, kv_fp8: bool = False, group=1.0):
    """Decode attention: KV-cache read at a fraction of HBM bandwidth, or its math, whichever binds,
    plus a cost per work item (softmax/reduction, CTA scheduling) that dominates at large batch
    with short contexts. Query groups wider than the tensor-core kernels take (`group` query heads
    per KV head > attn_decode_max_group) run per-head math at their own, lower rate."""
    flops = np.asarray(flops, float)
    # FP8 KV: the kernel (TensorRT-LLM XQA) runs its MMAs in FP8 where the GPU has it, and pays for
    # dequantisation, seen as its own bandwidth efficiency
    fp8 = kv_fp8 and gpu.supports("fp8")
    eff = np.where(np.asarray(group, float) > cal.attn_decode_max_group, cal.attn_decode_wide_flops_eff, cal.attn_decode_flops_eff)
    t_c = flops / (gpu.peak("fp8" if fp8 else "bf16") * eff)
    t_m = np.asarray(nbytes, float) / (gpu.hbm_bandwidth_bytes_per_s * (cal.attn_decode_bw_eff_fp8 if fp8 else cal.attn_decode_bw_eff))
    live = flops > 0
    t = np.maximum(t_c, t_m) + cal.attn_overhead_s + np.asarray(seq_heads, float) * cal.attn_decode_head_s
    return _masked(live, t, t_c, t_m)


def attention_prefill_time(flops, nbytes, gpu: Gpu, cal: Calibration, *, math: str = "bf16", seq_heads=0.0, keys=None, scores=None):
    """Prefill (context) attention: FlashAttention-style, compute-bound at a fraction of peak that
    ramps with the keys each query attends to (short rows leave the softmax pipeline idle), plus a
    cost per (sequence x query head) work item. FP8 has its own fraction of the FP8 peak. `scores`
    (query-key pairs) add the softmax's exponentials, which run on the special-function units at a
    small fraction of the matmul rate (FlashAttention-3, Shah et al. 2024, sec. 3.1: H100 SXM5 989
    TFLOPS of FP16 matmul against 3.9 TFLOPS of exp), so narrow heads pay more per FLOP."""
    flops = np.asarray(flops, float)
    ramp = 1.0 if keys is None else 1.0 + cal.attn_prefill_s_half / np.maximum(np.asarray(keys, float), 1.0)
    eff = cal.attn_prefill_eff_fp8 if math == "fp8" else cal.attn_prefill_eff
    t_exp = 0.0 if scores is None else np.asarray(scores, float) * cal.attn_prefill_score_s
    t_c = (flops / (gpu.peak(math) * eff) + t_exp) * ramp
    t_m = np.asarray(nbytes, float) / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    live = flops > 0
    t = np.maximum(t_c, t_m) + cal.attn_prefill_overhead_s + np.asarray(seq_heads, float) * cal.attn_prefill_head_s
    return _masked(live, t, t_c, t_m)


def elementwise_time(nbytes, kernels, gpu: Gpu, cal: Calibration):
    """Memory-bound passes over `nbytes` in `kernels` launches: no compute time (a scalar 0)."""
    nbytes = np.asarray(nbytes, float)
    t_m = nbytes / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    t, t_m = _masked(nbytes > 0, t_m + kernels * cal.kernel_overhead_s, t_m)
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


def collective_time(op: str, nbytes, n, gpu: Gpu, cal: Calibration, *, engine: Engine | None = None):
    """Time of one collective on `nbytes` per GPU over `n` GPUs (0 when n == 1), in `engine`'s step
    (None: NCCL's, as the kernel tables measured).

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
                                    engine=engine)
        return out
    inside = n <= float(gpu.scale_up_domain)
    # an engine's own all-reduce inside one scale-up domain, NCCL elsewhere: where it runs at every
    # element (a search's decode steps), NCCL is not priced
    own = engine.own_allreduce(nbytes, n, gpu.family) & inside if op == "all_reduce" and engine is not None else None
    if own is not None and own.all():
        t = _custom_all_reduce(nbytes, n, gpu, cal)
    else:
        t = _nccl_time(op, nbytes, n, gpu, cal, inside=inside)
        if own is not None and own.any():
            t = np.where(own, _custom_all_reduce(nbytes, n, gpu, cal), t)
    if count < live.size:
        return np.where(live, t, 0.0)
    return t if np.shape(t) == live.shape else np.broadcast_to(t, live.shape)


def _nccl_time(op: str, nbytes, n, gpu: Gpu, cal: Calibration, *, inside):
    """NCCL's time for collective_time at its live elements: inside the scale-up domain where `inside`,
    hierarchically beyond it."""
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
    t = one_level(m_in, nbytes, gpu.scale_up_bandwidth_bytes_per_s, lat_in)
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


def _custom_all_reduce(nbytes, n, gpu: Gpu, cal: Calibration):
    """An engine's own all-reduce inside one scale-up domain, where it runs one instead of NCCL
    (Engine.own_allreduce): one-shot, each GPU reading every peer's whole buffer and reducing
    locally, (n - 1) x bytes over its link after one flag exchange; two-shot, a reduce-scatter then an
    all-gather through the peers' buffers, 2 (n - 1) / n x bytes after two. Both fixed costs are
    flat in the GPU count (the flags go to all peers at once), unlike NCCL's ring (collective_time
    prices NCCL where the engine does not run its own). The engines switch between their two kernels where they measured the crossover (vLLM's 256/512 KiB,
    TensorRT-LLM's tuned table), so a step pays the faster of the two: pricing the kernel the
    threshold names would let a larger message cost less wherever these two formulas cross elsewhere."""
    bw = gpu.scale_up_bandwidth_bytes_per_s * cal.custom_ar_bw_eff
    one = cal.custom_ar_latency_s + np.maximum(n - 1.0, 0.0) * nbytes / np.maximum(bw, 1e-9)
    two = cal.custom_ar_twoshot_latency_s + 2.0 * np.maximum(n - 1.0, 0.0) / np.maximum(n, 1.0) * nbytes / np.maximum(bw, 1e-9)
    return np.minimum(one, two)
