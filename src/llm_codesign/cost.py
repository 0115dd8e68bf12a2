"""Array-valued cost formulas: GEMM (tile + wave quantisation), attention, elementwise, collectives.

Every function takes numpy arrays (or scalars) and broadcasts, so one code path prices one
deployment or a million. Times in seconds, sizes in bytes and FLOPs. Each returns
(time, compute_time, memory_time) so callers can name the binding resource.
"""
from __future__ import annotations

import numpy as np

from .calibration import Calibration
from .hardware import Gpu


def _ceil_div(a, b):
    return np.ceil(np.asarray(a, dtype=float) / b)


def gemm_kernel(math: str, weight_dtype: str = "") -> str:
    """Kernel family whose efficiency/overhead apply: block-scaled FP8 (DeepGEMM-style) differs from
    per-tensor FP8; FP4 covers NVFP4 and MXFP4."""
    if math == "fp8" and weight_dtype == "fp8_block":
        return "fp8_block"
    return math


def gemm_time(m, n, k, gpu: Gpu, cal: Calibration, math: str, a_bytes, w_bytes, c_bytes=2.0,
              groups=1.0, distinct_groups=None, eff_scale=1.0, kernel: str | None = None):
    """C[m,n] = A[m,k] B[k,n], repeated over `groups` independent problems (grouped/batched GEMM).

    Compute: FLOPs padded to whole CTA tiles (tile quantisation) and whole waves over the SMs (wave
    quantisation), with split-K when there are too few tiles to fill the GPU; the best of the GPU's
    tile shapes is taken, as cuBLAS/CUTLASS heuristics do. Memory: A, B and C are all counted
    (the output too). `distinct_groups` is how many groups' weights are actually read (MoE decode).
    """
    m = np.asarray(m, dtype=float)
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    groups = np.asarray(groups, dtype=float)
    dg = groups if distinct_groups is None else np.asarray(distinct_groups, dtype=float)
    live = (m > 0) & (n > 0) & (k > 0) & (groups > 0)
    kernel = kernel or math
    peak = gpu.peak(math) * cal.gemm_eff(kernel) * eff_scale
    # split-K keeps >= 256 of K per split; block-scaled kernels (fp8_block, fp4) do not split K
    k_split_max = np.maximum(np.floor(k / 256.0), 1.0) if kernel in ("bf16", "fp8") else 1.0
    k_half = cal.gemm_k_half(kernel)
    best = None
    for tm, tn, ctas in gpu.tiles:
        slots = gpu.sms // ctas
        tiles = np.ceil(m * (1.0 / tm)) * (np.ceil(n * (1.0 / tn)) * groups)
        # split-K / stream-K when there are too few output tiles to fill the GPU
        split = np.minimum(np.maximum(np.floor(slots / np.maximum(tiles, 1.0)), 1.0), k_split_max)
        waves = np.ceil(tiles * split * (1.0 / slots))
        # per wave: one tile's K/split main loop, with a fixed prologue/epilogue cost of k_half
        # K-steps (efficiency k/(k + k_half)); time = waves * 2 tm tn (k/split + k_half) / per-SM rate
        t = waves * (k / split + k_half) * (2.0 * tm * tn * gpu.sms / (ctas * peak))
        best = t if best is None else np.minimum(best, t)
    flops_mem = m * k * a_bytes * groups + dg * k * n * w_bytes + m * n * c_bytes * groups
    t_mem = flops_mem / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    # compute and memory overlap imperfectly near the ridge point: a p-norm blend (p -> inf is max)
    p = cal.gemm_blend_p
    hi = np.maximum(best, t_mem)
    t = hi * np.power(np.power(best / np.maximum(hi, 1e-30), p) + np.power(t_mem / np.maximum(hi, 1e-30), p), 1.0 / p)
    t = t + cal.gemm_overhead(kernel)
    return np.where(live, t, 0.0), np.where(live, best, 0.0), np.where(live, t_mem, 0.0)


def gemm_flops_bytes(m, n, k, a_bytes, w_bytes, c_bytes=2.0, groups=1.0, distinct_groups=None):
    groups = np.asarray(groups, dtype=float)
    dg = groups if distinct_groups is None else np.asarray(distinct_groups, dtype=float)
    flops = 2.0 * np.asarray(m, float) * n * k * groups
    nbytes = np.asarray(m, float) * k * a_bytes * groups + dg * np.asarray(k, float) * n * w_bytes + np.asarray(m, float) * n * c_bytes * groups
    return flops, nbytes


def attention_decode_time(flops, nbytes, gpu: Gpu, cal: Calibration, seq_heads=0.0):
    """Decode attention: KV-cache read at a fraction of HBM bandwidth, or its math, whichever binds,
    plus a cost per (sequence x query head) work item (softmax/reduction, CTA scheduling) that
    dominates at large batch with short contexts."""
    flops = np.asarray(flops, float)
    t_c = flops / (gpu.peak("bf16") * cal.attn_decode_flops_eff)
    t_m = np.asarray(nbytes, float) / (gpu.hbm_bandwidth_bytes_per_s * cal.attn_decode_bw_eff)
    live = flops > 0
    t = np.maximum(t_c, t_m) + cal.attn_overhead_s + np.asarray(seq_heads, float) * cal.attn_decode_head_s
    return np.where(live, t, 0.0), np.where(live, t_c, 0.0), np.where(live, t_m, 0.0)


def attention_prefill_time(flops, nbytes, gpu: Gpu, cal: Calibration, math: str = "bf16", seq_heads=0.0, keys=None):
    """Prefill (context) attention: FlashAttention-style, compute-bound at a fraction of peak that
    ramps with the keys each query attends to (short rows leave the softmax pipeline idle), plus a
    cost per (sequence x query head) work item."""
    flops = np.asarray(flops, float)
    ramp = 1.0 if keys is None else 1.0 + cal.attn_prefill_s_half / np.maximum(np.asarray(keys, float), 1.0)
    t_c = flops / (gpu.peak(math) * cal.attn_prefill_eff) * ramp
    t_m = np.asarray(nbytes, float) / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    live = flops > 0
    t = np.maximum(t_c, t_m) + cal.attn_prefill_overhead_s + np.asarray(seq_heads, float) * cal.attn_prefill_head_s
    return np.where(live, t, 0.0), np.where(live, t_c, 0.0), np.where(live, t_m, 0.0)


def elementwise_time(nbytes, kernels, gpu: Gpu, cal: Calibration):
    nbytes = np.asarray(nbytes, float)
    t_m = nbytes / (gpu.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    live = nbytes > 0
    return np.where(live, t_m + kernels * cal.kernel_overhead_s, 0.0), np.zeros_like(t_m), np.where(live, t_m, 0.0)


def _link(n, gpu: Gpu, cal: Calibration):
    """Bandwidth and latency of a collective over n GPUs: NVLink/xGMI inside the scale-up domain."""
    inside = np.asarray(n) <= gpu.scale_up_domain
    bw = np.where(inside, gpu.scale_up_bandwidth_bytes_per_s, gpu.scale_out_bandwidth_bytes_per_s) * cal.comm_bw_eff
    lat = np.where(inside, cal.comm_latency_s, cal.scale_out_latency_s)
    return bw, lat


_ALGO = {
    # (bytes factor as a function of n, latency steps as a function of n); ring for bandwidth,
    # log-depth latency (NCCL picks tree/NVLS for small messages)
    "all_reduce": (lambda n: 2.0 * (n - 1) / n, lambda n: np.log2(np.maximum(n, 2.0))),
    "all_gather": (lambda n: (n - 1) / n, lambda n: np.log2(np.maximum(n, 2.0))),
    "reduce_scatter": (lambda n: (n - 1) / n, lambda n: np.log2(np.maximum(n, 2.0))),
    "all_to_all": (lambda n: (n - 1) / n, lambda n: np.log2(np.maximum(n, 2.0))),
    "p2p": (lambda n: np.ones_like(n), lambda n: np.ones_like(n)),
}
COLLECTIVES = tuple(_ALGO)


def collective_time(op: str, nbytes, n, gpu: Gpu, cal: Calibration):
    """Time of one collective on `nbytes` per GPU over `n` GPUs (0 when n == 1 and op is not p2p)."""
    n = np.asarray(n, dtype=float)
    nbytes = np.asarray(nbytes, dtype=float)
    bw, lat = _link(n, gpu, cal)
    fb, fl = _ALGO[op]
    t = fl(n) * lat + fb(n) * nbytes / bw
    live = (n > 1) & (nbytes > 0)
    return np.where(live, t, 0.0)
