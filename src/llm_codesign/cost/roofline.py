"""Per-operator roofline of one forward step: FLOPs, bytes, intensity, ridge point, bound, time."""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.errors import InputError
from llm_codesign.spec.engines import check_kv_format
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision, executable, gemm_math

# an operator whose modelled time is over twice its longer roof (FLOPs at the kernel's rate, bytes at its bandwidth) spends
# most of it on neither: the kernel's fixed cost (launch, prologue, tail, a split-K reduction) binds, as at batch 1
LATENCY_SHARE = 2.0


def roofline(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, phase: str = "decode", *,
             batch: int = 1, context: int = 1024, tp: int = 1, engine=None, plan: Plan | None = None) -> dict:
    """One step's operators ("ops": FLOPs, bytes, intensity, bound, time) and "totals": the operators' sums (their bytes
    count activations) and the floor, "bound_time_s" = floor_time of step_floor's count: weights and KV cache (and
    recurrent state) read, FLOPs, activations left out since fixroof (docs/modelling-notes.md#fixroof); "floor" holds
    that count and "fits", whether the busiest GPU's HBM holds its weights, KV cache and state at once. A `context`
    past the model's is refused as estimate refuses isl + osl (ModelSpec.check_context). `engine` (spec.engines.Engine)
    prices each operator with that engine's kernels and collectives, as estimate does (its fixed costs in); None: the
    kernel tables' and NCCL's. `plan` (one plan, spec.plan.fill_plan's): its sizes as estimate prices them, the `batch`
    spread over its attention-DP ranks (the busiest holds ceil(batch / attention_dp), as serve.aggregated._running), the
    experts and their exchange (all-to-all or all-gather) as its EP and MoE TP place them (cost.ffns); None: TP `tp` with
    MoE TP = TP."""
    if phase not in ("decode", "prefill"):
        raise InputError("phase", phase, "decode or prefill")
    if batch < 1:
        raise InputError("batch", batch, "a positive integer")
    if context < 1:
        raise InputError("context", context, "a positive integer")
    model.check_context(context, 0, field="context")  # estimate's refusal: 16.8M tokens of Llama-3.1-8B were priced
    check_kv_format(None, gpu, prec.kv.name)  # no engine here: a KV-cache format this GPU holds (NVFP4 on an MI355X was priced)
    # without a plan, MoE experts shard like the rest of the layer (MoE-TP = TP) on the same GPUs
    plan = plan if plan is not None else Plan(tp=tp, moe_tp=tp if model.is_moe else 1)
    rank = -(-batch // int(plan.adp))  # the busiest attention-DP rank's sequences; the MoE sees every rank's (cost.ffns)
    if phase == "decode":
        b = Batch(dec_seqs=rank, dec_ctx=context)
    else:
        b = Batch(pf_tokens=rank * context, pf_seqs=rank, pf_ctx=0)
    ops = forward_ops(model, gpu, cal, prec, plan, b=b, engine=engine)
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
        # a GEMM over no rows moves nothing (NOT_RUN; newc9 #17: MLA's kv_up counted 128 MB in a decode step)
        by = 0.0 if (idle := op.kind == "gemm" and f == 0 and t == 0) else by
        # the math the GEMM was priced with (router, LM head: BF16), at the first load as its figures are
        math = str(np.ravel(op.math)[0]) if op.kind == "gemm" else "bf16"
        peak = gpu.peak(math)
        intensity = f / by if by else (0.0 if idle else float("inf"))
        bound, kernel_ridge = ("comm", None) if op.kind == "comm" else (NOT_RUN, None) if idle else _bound(op, gpu, n, t)
        ideal = 0.0 if op.kind == "comm" else max(f / peak, by / bw)  # newc5 #3: the roofline's (time_s: modelled)
        rows.append({"name": op.name, "kind": op.kind, "layers": n, "flops": f, "bytes": by,
                     "intensity": intensity, "ridge_point": peak / bw, "math": math, "kernel_ridge_point": kernel_ridge,
                     "bound": bound, "time_s": t, "ideal_time_s": ideal, "pct_of_peak": 100.0 * f / t / peak if t and f else 0.0,
                     "pct_of_bandwidth": 100.0 * by / t / bw if t and op.kind != "comm" else 0.0})
    tf, tb = sum(r["flops"] for r in rows), sum(r["bytes"] for r in rows if r["kind"] != "comm")
    tt = sum(r["time_s"] for r in rows)
    floor = _command_floor(model, gpu, prec, phase=phase, batch=batch, context=context, plan=plan)
    return {"model": model.name, "gpu": gpu.id, "phase": phase, "batch": batch, "context": context, **plan.to_dict(),
            "plan": plan.label(), "num_gpus": int(plan.gpus),
            "batch_per_rank": rank, "precision": prec.label(), "ops": rows,
            "totals": {"flops": tf, "bytes": tb, "time_s": tt, "ideal_time_s": sum(r["ideal_time_s"] for r in rows), "intensity": tf / tb if tb else 0.0,
                       "bound_time_s": floor["time_s"], "floor": floor}}


# the bound of an operator the step does not run, a GEMM over no rows: MLA's kv_up in a decode step (absorbed: W_UK and
# W_UV read inside mla_q_absorb and mla_v_up), the absorbed products in a prefill (which up-projects the latent instead)
NOT_RUN = "not run"


class Side(NamedTuple):
    """Where one operator sits: `ridge_side`, compute where its intensity (FLOPs over bytes) reaches the GPU's ridge (the
    peak of its math over HBM bandwidth), else memory; `modelled`, the side its priced time binds (the kernel's compute
    part against its memory part); `kernel_ridge`, the kernel's own ridge (attainable FLOP/s over attainable bandwidth)
    where the two sides differ (its tiles, waves and efficiencies bind the other side of the GPU's ridge), else None."""
    ridge_side: str
    modelled: str
    intensity: float
    ridge: float
    kernel_ridge: float | None


def op_side(op, gpu: Gpu) -> Side:
    """One operator's Side: the one function roofline's bound column and estimate's "bound by" rows read (newc11 #12:
    estimate said a gpt-oss MXFP4 decode on an MI355X "bound by compute" where roofline starred 5.9 FLOP/B against 315)."""
    f, by = float(np.sum(op.flops)), float(np.sum(op.bytes))
    tc, tm = float(np.sum(op.t_compute)), float(np.sum(op.t_memory))
    math = str(np.ravel(op.math)[0]) if op.kind == "gemm" else "bf16"  # the router and LM head: BF16, as roofline prices them
    ridge = gpu.peak(math) / gpu.hbm_bandwidth_bytes_per_s
    intensity = f / by if by else float("inf")
    side, modelled = ("compute" if intensity >= ridge else "memory"), ("compute" if tc >= tm else "memory")
    kernel = (f / tc) / (by / tm) if modelled != side and tc > 0 and tm > 0 and by > 0 else None
    return Side(side, modelled, intensity, ridge, kernel)


def _bound(op, gpu: Gpu, n: float, t: float) -> tuple[str, float | None]:
    """An operator's label and, where starred, the kernel's ridge (op_side). The label follows the roofline columns (intensity
    against the ridge); where the kernel's own rates (tile and wave quantisation, fitted efficiencies) bind the other way
    it says so with the kernel's ridge, its attainable FLOP/s over its attainable bandwidth; over LATENCY_SHARE x its
    longer side it is neither roof (newc7 #5: a 1-row GEMM's launch and tail is most of it)."""
    tc, tm = float(np.sum(op.t_compute)) * n, float(np.sum(op.t_memory)) * n
    if t > LATENCY_SHARE * max(tc, tm):
        return "latency", None
    s = op_side(op, gpu)
    if s.kernel_ridge is not None:
        return f"{s.modelled}*", s.kernel_ridge  # the CLI caption explains the star
    return s.ridge_side, None


def _command_floor(model: ModelSpec, gpu: Gpu, prec: Precision, *, phase: str, batch: int, context: int, plan: Plan) -> dict:
    """The roofline command's floor: what the step must move and compute at least (step_floor, ideal_step's count), not
    the operators' bytes, which add activations (newc4 #3's my-30b: 11.324 ms from those against 11.096 from the weights
    and KV), its time, and "fits": the busiest GPU holds its weights, the batch's KV cache and state at once, else no
    engine runs this step (a lenient test: the headline capacity, no activations nor the engine's reserve; a decode
    step's KV as read, prefill's as written, its window's at most: what the cache holds either way)."""
    fl = step_floor(model, prec, tokens=batch * (context if phase == "prefill" else 1), seqs=batch,
                    context=0 if phase == "prefill" else context, prefill=phase == "prefill",
                    plan=plan, num_gpus=int(plan.gpus))
    floor = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in fl.items()}
    floor["time_s"] = float(np.asarray(floor_time(fl, gpu, prec)).reshape(-1)[0])
    floor["fits"] = floor["weights"] + floor["kv"] + floor["state"] <= gpu.hbm_bytes
    return floor


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


def _reads(attn) -> tuple[float, float]:
    """(KV values a cached token holds in one layer, all KV heads: GQA's heads x (K + V), MLA's latent; attention-core
    FLOPs a query token spends a key: 2 x heads x (query-key + value width), MLA's at its unabsorbed widths, fewer than
    its absorbed kernel's 2 x kv_lora_rank + rope_dim); a mixer with no cache (recurrent, none): (0, 0)."""
    from llm_codesign.spec.kinds import Attention

    if not isinstance(attn, Attention):
        return 0.0, 0.0
    return float(attn.kv_values_per_token()), 2.0 * attn.heads * (attn.head_dim + attn.v_head_dim)


def step_floor(model: ModelSpec, prec: Precision, *, tokens, seqs=None, context=0.0, prefill: bool = False,
               plan: Plan | None = None, num_gpus=1) -> dict:
    """What one step must at least move through HBM and compute on its busiest GPU: {"weights", "kv", "state" (bytes),
    "bytes" (their sum), "flops"}, arrays broadcast over tokens, seqs and context. The one count behind the roofline
    command's floor and ideal_step (every interval's and frontier's floor): they cannot disagree (finding 3 of newc4,
    docs/modelling-notes.md#fixroof). `prec` as the GPU runs it (spec.precision.executable).

    Decode, `tokens` query tokens (verified drafts included) of `seqs` requests (default one token each), each with
    `context` cached tokens (the batch's mean):
    - weights read once as the memory model holds them (cost.memory.weight_bytes_per_gpu: attention at prec.attn_in / prec.attn, FFN
      and experts at prec.weight, the LM head in BF16 as forward_ops prices it), the input embedding not at all (a
      gather), of the routed experts only those the tokens pick (weights_read's distinct_experts);
    - kv: each request's cache over the keys its mixer reads (Attention.decode_keys: at most a sliding window, a chunk's
      offset, DSA's top-k), at prec.kv a value, once per request however many tokens it verifies;
    - state: each request's recurrent state (Gated DeltaNet, Mamba-2) read once;
    - flops: 2 x active params a token (the LM head included) and attention's per key (_reads).
    Prefill, `tokens` prompt tokens of `seqs` requests over `context` cached ones each: the same weights; kv: each new
    token's KV written once (at most a window of them a request) and the cached keys read once; flops: the LM head on
    one token a request (engines keep the last position's logits), attention over its causal mean keys.
    Without `plan`: the whole split evenly over `num_gpus` (no plan's busiest GPU moves less: sharding only replicates).
    With `plan` (one plan): its busiest GPU's share: its stage's weights as its sharding holds them (MLA's latent and
    KV heads past their count replicated per TP rank; serve.invariants.weight_floor_s's head rule for uneven stages),
    the picked experts spread over every expert GPU, the cache of 1 / attention-DP of the requests. Left out:
    activations, norms, sampling, communication, DSA's indexer keys. The mean context stands for the batch's spread
    ones: exact for full attention, while a window's min(mean, w) can exceed the mean of min(c, w) (Jensen)."""
    from llm_codesign.cost.ffns import distinct_experts
    from llm_codesign.cost.memory import busiest_stage, state_bytes_per_seq, weight_bytes_per_gpu
    from llm_codesign.spec.kinds import MoE

    T = np.asarray(tokens, float)
    S = T if seqs is None else np.asarray(seqs, float)
    ctx = np.asarray(context, float)
    h, V = model.hidden, float(model.vocab * model.hidden)
    wf, kvb = prec.weight.bytes_per_weight(), prec.kv.bytes_per_value()
    experts = wf * sum(n * f.mats * h * f.expert_inter * distinct_experts(f.experts, f.top_k, T)
                       for layer, n in model.groups if isinstance(f := layer.ffn, MoE) and f.experts)
    dense = tuple((replace(layer, ffn=replace(layer.ffn, experts=0)) if isinstance(layer.ffn, MoE) else layer, n)
                  for layer, n in model.groups)
    body = replace(model, groups=dense, vocab=0)  # no embedding (a gather) and no head: the head is added in BF16
    keys, entries, head_tokens = _floor_keys(model, T, S, ctx, prefill=prefill)
    flops = (2.0 * (model.active_params - V) * T + 2.0 * V * head_tokens
             + sum(n * _reads(layer.attn)[1] * np.asarray(k, float) * T for (layer, n), k in zip(model.groups, keys, strict=True)))
    if plan is None:
        g = np.asarray(num_gpus, float)
        weights = (weight_bytes_per_gpu(body, prec, Plan()) + 2.0 * V + experts) / g
        kv = kvb * sum(n * _reads(layer.attn)[0] * e for (layer, n), e in zip(model.groups, entries, strict=True)) / g
        state = model.state_bytes_per_seq() * S / g
        return {"weights": weights, "kv": kv, "state": state, "bytes": weights + kv + state, "flops": flops / g}
    sh = plan.broadcast()
    tp, pp, ep, moe_tp, adp, kvp = (np.asarray(x, float) for x in sh.sizes)
    p0 = int(pp.reshape(-1)[0])
    stages = model.stage_counts(p0) if p0 <= model.num_layers else ((),)
    body_b, head = weight_bytes_per_gpu(body, prec, sh), 2.0 * V / (tp * kvp)
    weights = (body_b + head if all(st == stages[-1] for st in stages) else np.maximum(body_b, head)) + experts / (ep * moe_tp * pp)
    per_entry = [layer.attn.kv_bytes_per_gpu(tp, kvb) for layer, _ in model.groups]  # a rank's bytes a cache entry
    kv = busiest_stage(model, pp, [p * e for p, e in zip(per_entry, entries, strict=True)]) / (kvp * adp)
    state = state_bytes_per_seq(model, sh) * S / adp
    return {"weights": weights, "kv": kv, "state": state, "bytes": weights + kv + state, "flops": flops / (tp * adp * kvp * pp)}


def _floor_keys(model: ModelSpec, T, S, ctx, *, prefill: bool) -> tuple[list, list, np.ndarray]:
    """step_floor's reads per layer group: the keys a token attends to, the cache entries the step moves (all of the
    batch's requests) and the tokens the LM head runs on."""
    has = [_reads(layer.attn)[0] > 0 for layer, _ in model.groups]
    if not prefill:
        keys = [layer.attn.decode_keys(ctx) if c else 0.0 for (layer, _), c in zip(model.groups, has, strict=True)]
        return keys, [S * k for k in keys], T
    span = T / np.maximum(S, 1.0)  # a request's new tokens
    keys = [layer.attn.prefill_keys(ctx, span)[0] if c else 0.0 for (layer, _), c in zip(model.groups, has, strict=True)]
    win = [getattr(layer.attn, "window", 0) for layer, _ in model.groups]
    # cache entries a request's chunk writes (at most a window's) and reads (its cached keys, at most a window's)
    entries = [S * (np.minimum(span, w) + np.minimum(layer.attn.prefill_keys(ctx, span)[1], w)) if w else
               S * (span + layer.attn.prefill_keys(ctx, span)[1]) if c else 0.0
               for (layer, _), w, c in zip(model.groups, win, has, strict=True)]
    return keys, entries, S


def floor_time(floor: dict, gpu: Gpu, prec: Precision) -> np.ndarray:
    """A step_floor's seconds on `gpu`: its bytes over HBM bandwidth or its FLOPs at the peak of `prec`'s GEMM math,
    whichever is longer."""
    return np.maximum(floor["bytes"] / gpu.hbm_bandwidth_bytes_per_s,
                      floor["flops"] / gpu.peak(gemm_math(prec.weight, prec.activation, gpu)))


def ideal_step(model: ModelSpec, gpu: Gpu, prec, num_gpus: int, batch, *, accepted=1.0, context=0.0, plan: Plan | None = None) -> np.ndarray:
    """The shortest decode step `num_gpus` GPUs allow at `batch` requests (array ok) emitting `accepted` tokens each, each
    with `context` cached tokens (the batch's mean; 0: the cache's reads left out), under `plan` (None: any plan):
    step_floor's bytes over the aggregate HBM bandwidth or its FLOPs at the aggregate peak, whichever is longer
    (floor_time). Prefill and the steps' overheads left out: a lower bound on any step (explore.search.roofline_bound's
    and measure.intervals.ideal's). The roofline command prints the same count (roofline's totals["floor"])."""
    b = np.asarray(batch, float)
    return floor_time(step_floor(model, prec, tokens=b * accepted, seqs=b, context=context, plan=plan, num_gpus=num_gpus), gpu, prec)


def ideal_prefill(model: ModelSpec, gpu: Gpu, prec, num_gpus: int, isl, *, seqs=1.0, plan: Plan | None = None) -> np.ndarray:
    """The shortest prefill of `seqs` requests' `isl`-token prompts (arrays ok) on `num_gpus` GPUs (under `plan`; None:
    any): step_floor's prefill count (its KV written, causal attention's FLOPs, the LM head on one token a request) at
    floor_time. ideal_step over isl tokens instead counts the LM head on every prompt token: Llama-3.1-8B's 1,024 on an
    H100, 15.53 ms against this 14.726 ms, the roofline command's prefill floor (docs/modelling-notes.md#fixroof)."""
    s = np.asarray(seqs, float)
    return floor_time(step_floor(model, prec, tokens=np.asarray(isl, float) * s, seqs=s, prefill=True, plan=plan, num_gpus=num_gpus),
                      gpu, prec)
