"""The physical invariants every answer leaving the serving core must keep (issue 20): no metric NaN,
infinite or negative, no TPOT faster than the busiest GPU can stream the weights every decode
step reads, and no token rate whose GEMM FLOPs exceed the GPUs' tensor peak. Breaking one is a defect of the model, not of the input: `InvariantError`, never an
InputError, so it is never printed as a user's mistake."""
from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from llm_codesign.cost.memory import weight_bytes_per_gpu
from llm_codesign.spec.kinds import MoE
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Workload, cached_tokens
from llm_codesign.spec.precision import executable, gemm_math

# float32 kernels (cost.kernels f32) and summation order: a floor this close is the floor itself
REL_TOL = 1e-5
# Metrics fields that may legitimately be negative: the KV deficit of a load that does not fit
SIGNED = {"free_bytes"}


class InvariantError(RuntimeError):
    """An answer the hardware cannot produce reached the edge of the core: an internal error."""


def weight_floor_s(model: ModelSpec, dep: Deployment):
    """Seconds one decode step takes at least on the busiest GPU: the weights it reads every step
    (attention, dense FFNs, shared experts and the LM head of its pipeline stage; routed experts
    left out, as a step reads only the experts its tokens pick) over its HBM bandwidth."""
    sh = dep.plan.broadcast()
    dense = tuple((replace(layer, ffn=replace(layer.ffn, experts=0)) if isinstance(layer.ffn, MoE) else layer, n)
                  for layer, n in model.groups)
    # vocab 0 drops the embedding (a gather, not a read of the table) and the head, added back
    # as the LM head GEMM reads it (tied or not: forward_ops prices vocab x hidden in BF16)
    body = weight_bytes_per_gpu(replace(model, groups=dense, vocab=0), dep.precision, sh)  # the busiest stage's
    head = model.vocab * model.hidden * 2.0 / (np.asarray(sh.tp, float) * np.asarray(sh.kvp, float))
    pp = int(np.asarray(dep.plan.pp).reshape(-1)[0])
    stages = model.stage_counts(pp) if pp <= model.num_layers else ((),)
    # stages alike: each, the last included, reads its layers and the LM head; uneven ones: the
    # busiest stage's layers or the last stage's head, whichever is more (a floor, not the stage)
    read = body + head if all(st == stages[-1] for st in stages) else np.maximum(body, head)
    return read / dep.gpu.hbm_bandwidth_bytes_per_s


def compute_ceiling(model: ModelSpec, dep: Deployment, workload: Workload):
    """(GEMM FLOPs per output token, the GPU's dense FLOP/s at the math its GEMMs run): each request runs its ISL less its
    prefix hits and OSL - 1 decode tokens through the layers, at least 2 x their active weights a token (the weight GEMMs
    alone; attention and drafts only add), and the LM head once per output token: a prefill computes logits on each
    request's last prompt token only (the first output token), a decode step on every token it samples. Output tok/s/GPU x
    the first may not exceed the second (review rev12b #1: a one-token closed loop at 9.9 PFLOP/s on an MI300X)."""
    isl, osl = np.asarray(workload.isl, float), np.asarray(workload.osl, float)
    tokens = isl - cached_tokens(isl, workload.prefix_hit) + np.maximum(osl - 1.0, 0.0)
    # the head's logits on the last token of each prefilled sequence: TensorRT-LLM LogitsProcessor.forward, last_tokens =
    # cumsum(seq_lens) - 1 unless return_context_logits (tensorrt_llm/_torch/modules/logits_processor.py:21-28@0d4c7ac8;
    # SamplingParams.return_context_logits False by default); vLLM logits_indices = query_start_loc[1:] - 1
    # (vllm/v1/worker/gpu_model_runner.py:2195, :4207-4208@0.33.0); SGLang last_index = cumsum(extend_seq_lens) - 1 without
    # input logprobs (srt/layers/logits_processor.py:718-723@0.5.23). active_params counts the head once (vocab x hidden)
    head = float(model.vocab * model.hidden)
    layers = float(model.active_params) - head
    out = np.maximum(osl, 1.0)  # logits computed a request: one at prefill, one per decode step
    prec = executable(dep.precision, dep.gpu)[0]
    math = gemm_math(prec.weight, prec.activation or prec.weight, dep.gpu)
    return 2.0 * (layers * tokens + head * out) / out, dep.gpu.peak(math)


def check_compute(where: str, out_per_gpu, *, flops_per_token, peak) -> None:
    """InvariantError where `out_per_gpu` output tokens/s, at `flops_per_token` each, exceed `peak` FLOP/s."""
    rate = np.asarray(out_per_gpu, float) * np.asarray(flops_per_token, float)
    bad = rate > peak * (1.0 + REL_TOL)
    if np.any(bad):
        i = int(np.argmax(np.broadcast_to(bad, rate.shape).reshape(-1)))
        raise InvariantError(f"{where}: {rate.reshape(-1)[i] / 1e12:.4g} TFLOP/s of weight GEMMs a GPU, above its "
                             f"{peak / 1e12:.4g} TFLOP/s peak")


def check_values(where: str, values: dict, *, floor_s=None, accepted=1.0, signed=SIGNED) -> None:
    """Raise InvariantError when a value is NaN, infinite or negative (except `signed` ones), or when
    `tpot_s` (or `tpot_ms`) beats `floor_s` per accepted token."""
    for k, v in values.items():
        a = np.asarray(v)
        if a.dtype.kind not in "fiu":
            continue
        a = a.astype(float)
        if not np.all(np.isfinite(a)):
            raise InvariantError(f"{where}: {k} is not finite ({a.reshape(-1)[~np.isfinite(a.reshape(-1))][:3].tolist()})")
        if k not in signed and np.any(a < 0):
            raise InvariantError(f"{where}: {k} is negative ({float(np.min(a))!r})")
    if floor_s is None:
        return
    tpot = values.get("tpot_s")
    if tpot is None and "tpot_ms" in values:
        tpot = np.asarray(values["tpot_ms"], float) / 1e3
    if tpot is None:
        return
    floor = np.asarray(floor_s, float) / np.asarray(accepted, float)
    bad = np.asarray(tpot, float) < floor * (1.0 - REL_TOL)
    if np.any(bad):
        t, f = np.broadcast_arrays(np.asarray(tpot, float), floor)
        i = int(np.argmax(bad.reshape(-1)))
        raise InvariantError(f"{where}: TPOT {t.reshape(-1)[i] * 1e3:.4g} ms beats the busiest GPU's weight read "
                             f"{f.reshape(-1)[i] * 1e3:.4g} ms per accepted token")


def check_metrics(model: ModelSpec, dep: Deployment, metrics, where: str = "evaluate", *, workload: Workload | None = None):
    """`metrics` (serve.metrics.Metrics) unchanged, or InvariantError; the compute ceiling where `workload` is given."""
    where = f"{where} {model.name} {dep.plan.label()} on {dep.num_gpus}x{dep.gpu.id}"
    check_values(where, {f.name: getattr(metrics, f.name) for f in fields(metrics)},
                 floor_s=weight_floor_s(model, dep), accepted=metrics.accepted_per_step)
    if workload is not None:
        per, peak = compute_ceiling(model, dep, workload)
        check_compute(where, metrics.output_tok_s_per_gpu, flops_per_token=per, peak=peak)
    return metrics


def check_estimate(model: ModelSpec, est):
    """`est` (serve.estimate.Estimate) unchanged, or InvariantError: every figure it reports, the
    nested memory and speculation ones included."""
    dep, out = est.deployment, est.to_dict()
    flat = {k: v for k, v in out.items() if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)}
    flat.update({f"memory.{k}": v for k, v in out.get("memory", {}).items()})
    flat.update({f"spec.{k}": v for k, v in (out.get("spec") or {}).items() if isinstance(v, (int, float)) and v is not None})
    where = f"estimate {model.name} {dep.plan.label()} on {dep.num_gpus}x{dep.gpu.id}"
    check_values(where, flat, floor_s=weight_floor_s(model, dep), accepted=out.get("accepted_per_step", 1.0), signed=())
    per, peak = compute_ceiling(model, dep, est.workload)
    check_compute(where, est.output_tok_s_per_gpu, flops_per_token=per, peak=peak)
    p = out["power"]  # a board draws between its idle power and its TDP (serve.energy)
    if not p["idle_w"] * (1.0 - REL_TOL) <= p["gpu_w"] <= p["tdp_w"] * (1.0 + REL_TOL):
        raise InvariantError(f"{where}: gpu_w {p['gpu_w']!r} outside idle {p['idle_w']!r} .. TDP {p['tdp_w']!r}")
    return est
