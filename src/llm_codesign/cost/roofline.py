"""Per-operator roofline of one forward step: FLOPs, bytes, intensity, ridge point, bound, time."""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.errors import InputError
from llm_codesign.spec.engines import check_kv_format
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision, executable, gemm_math


def roofline(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, phase: str = "decode", *,
             batch: int = 1, context: int = 1024, tp: int = 1) -> dict:
    if phase not in ("decode", "prefill"):
        raise InputError("phase", phase, "decode or prefill")
    if batch < 1:
        raise InputError("batch", batch, "a positive integer")
    if context < 1:
        raise InputError("context", context, "a positive integer")
    check_kv_format(None, gpu, prec.kv.name)  # no engine here: a KV-cache format this GPU holds (NVFP4 on an MI355X was priced)
    if phase == "decode":
        b = Batch(dec_seqs=batch, dec_ctx=context)
    else:
        b = Batch(pf_tokens=batch * context, pf_seqs=batch, pf_ctx=0)
    # MoE experts shard like the rest of the layer (MoE-TP = TP) on the same GPUs
    ops = forward_ops(model, gpu, cal, prec, Plan(tp=tp, moe_tp=tp if model.is_moe else 1), b=b)
    bw = gpu.hbm_bandwidth_bytes_per_s
    prec = executable(prec, gpu)[0]  # the math the GPU really runs (the operators are priced so too)
    rows = []
    for op in ops:
        n = float(np.asarray(op.count).reshape(-1)[0])
        f = float(np.asarray(op.flops).reshape(-1)[0]) * n
        by = float(np.asarray(op.bytes).reshape(-1)[0]) * n
        t = float(np.asarray(op.time).reshape(-1)[0]) * n
        if t == 0 and f == 0 and by == 0:
            continue
        # the math the GEMM was priced with (router, LM head: BF16), at the first load as its figures are
        math = str(np.ravel(op.math)[0]) if op.kind == "gemm" else "bf16"
        peak = gpu.peak(math)
        intensity = f / by if by else float("inf")
        kernel_ridge = None
        if op.kind == "comm":
            bound = "comm"
        else:
            # the label follows the roofline columns (intensity against the ridge); where the kernel's
            # own rates (tile and wave quantisation, fitted efficiencies) bind the other way, it says so
            # with the kernel's ridge: its attainable FLOP/s over its attainable bandwidth
            tc, tm = float(np.sum(op.t_compute)) * n, float(np.sum(op.t_memory)) * n
            bound = "compute" if intensity >= peak / bw else "memory"
            modelled = "compute" if tc >= tm else "memory"
            if modelled != bound and tc > 0 and tm > 0:
                kernel_ridge = (f / tc) / (by / tm)
                bound = f"{modelled}*"  # the CLI caption explains the star
        rows.append({"name": op.name, "kind": op.kind, "layers": n, "flops": f, "bytes": by,
                     "intensity": intensity, "ridge_point": peak / bw, "math": math, "kernel_ridge_point": kernel_ridge,
                     "bound": bound, "time_s": t, "pct_of_peak": 100.0 * f / t / peak if t and f else 0.0,
                     "pct_of_bandwidth": 100.0 * by / t / bw if t and op.kind != "comm" else 0.0})
    tf = sum(r["flops"] for r in rows)
    tb = sum(r["bytes"] for r in rows if r["kind"] != "comm")
    tt = sum(r["time_s"] for r in rows)
    return {"model": model.name, "gpu": gpu.id, "phase": phase, "batch": batch, "context": context, "tp": tp,
            "precision": prec.label(), "ops": rows,
            "totals": {"flops": tf, "bytes": tb, "time_s": tt, "intensity": tf / tb if tb else 0.0,
                       "bound_time_s": max(tf / gpu.peak(gemm_math(prec.weight, prec.activation, gpu)), tb / bw)}}


def weights_read(model: ModelSpec, tokens) -> np.ndarray:
    """Parameters one step over `tokens` tokens reads at least: every weight but the input embedding (a
    gather) and the routed experts none of them picks, E * (1 - (1 - k/E)^tokens) experts per MoE layer
    (cost.ffns.distinct_experts, the cost model's own count). Batches split over instances or
    attention-DP ranks read no fewer (that count is concave in tokens). A profile with routing skew
    (moe_routing_alpha > 0; serving's default is 0) reads fewer distinct experts, and its points may lie
    above this bound."""
    from llm_codesign.cost.ffns import distinct_experts
    from llm_codesign.spec.kinds import MoE

    tokens = np.asarray(tokens, float)
    read = np.full(tokens.shape, float(model.total_params - model.embedding_params + model.vocab * model.hidden * model.tie_embeddings))
    for layer, n in model.groups:
        f = layer.ffn
        if isinstance(f, MoE) and f.experts:
            one = f.mats * model.hidden * f.expert_inter
            read -= n * one * (f.experts - distinct_experts(f.experts, f.top_k, tokens))
    return read


def ideal_step(model: ModelSpec, gpu: Gpu, prec, num_gpus: int, batch, *, accepted=1.0) -> np.ndarray:
    """The shortest decode step `num_gpus` GPUs allow at `batch` requests (array ok) emitting `accepted` tokens each:
    the weights it reads at least (weights_read) over their aggregate HBM bandwidth, or its FLOPs (2 x active params a
    token) at their aggregate peak at `prec`'s GEMM math, whichever is longer. Prefill, the KV cache's reads and the
    steps' overheads left out: a lower bound on any step (explore.search.roofline_bound's and measure.intervals.ideal's)."""
    b = np.asarray(batch, float)
    peak = gpu.peak(gemm_math(prec.weight, prec.activation, gpu))
    return np.maximum(weights_read(model, b) * prec.weight.bytes_per_weight() / (num_gpus * gpu.hbm_bandwidth_bytes_per_s),
                      2 * model.active_params * b * accepted / (num_gpus * peak))
