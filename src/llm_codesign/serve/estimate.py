"""One deployment end to end: metrics, memory, bottlenecks, breakdown, speculation break-even."""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import binding_resource, engine_budget, op_step_time, pdl_per_launch
from llm_codesign.serve.invariants import check_estimate
from llm_codesign.serve.metrics import BATCH_GRID, decode_operators, evaluate
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Workload, reason_text, validity
from llm_codesign.spec.precision import executable


def check(model: ModelSpec, dep: Deployment) -> None:
    code = int(validity(model, dep.gpu, dep.plan, dep.num_gpus).reshape(-1)[0])
    if code >= 0:
        raise InputError("deployment", dep.plan.label() + f" on {dep.num_gpus} GPU{'s' if dep.num_gpus != 1 else ''}", reason_text(model, dep.gpu, code))


def _refuse_unfit(dep: Deployment, m) -> None:
    """One line on why not even one sequence fits, with what it needs and what the engine leaves."""
    gb = 1e9
    mem = dep.gpu.memory_bytes
    budget, frac, _ = engine_budget(dep.gpu, engine=dep.engine, max_num_tokens=dep.max_num_tokens, plan=dep.plan, spec=dep.spec)[1]
    # TensorRT-LLM's fraction is of what weights and activations leave; the others cap the whole
    frac = 1.0 if budget == "free" else float(np.asarray(frac).reshape(-1)[0])
    need = float(m.weights_bytes.reshape(-1)[0] + m.activation_bytes.reshape(-1)[0] + m.kv_bytes_per_seq.reshape(-1)[0])
    raise InputError("deployment", dep.plan.label() + f" on {dep.num_gpus}x{dep.gpu.id}",
                     f"needs {need / gb:.0f} GB per GPU for one sequence, {dep.gpu.name} reports {mem / gb:.0f} GB"
                     + (f" ({frac * mem / gb:.0f} GB usable by {dep.backend})" if frac < 1 else "")
                     + ": add GPUs, raise TP/EP/PP or lower the precision")


def prefill_ops(model: ModelSpec, dep: Deployment, cal: Calibration, workload: Workload):
    """The operators of one prefill chunk of one request, priced with the calibration the serving
    metrics use inside a step (the engine's in-step calibration, Engine.costs)."""
    chunk = Batch(pf_tokens=min(workload.isl, dep.step_tokens), pf_seqs=1, pf_ctx=0)
    return forward_ops(model, dep.gpu, dep.engine.costs(cal).cal, dep.precision, dep.plan.broadcast(), b=chunk)


def estimate(model: ModelSpec, dep: Deployment, workload: Workload, *, calibration: Calibration, breakdown: bool = False) -> dict:
    """What `dep` delivers on `workload`: the metrics at its concurrency (or at the offline maximum
    throughput), memory per GPU, the binding resource of each phase, speculation's break-even and,
    with `breakdown`, per-operator times of the decode step."""
    check(model, dep)
    model.check_context(workload.isl, workload.osl)
    cal, isl, osl = calibration, workload.isl, workload.osl
    adp = int(np.asarray(dep.plan.adp))
    grid = BATCH_GRID * adp
    r = evaluate(model, dep, workload, calibration=cal, concurrency=grid)
    max_conc = int(r.max_concurrency.reshape(-1)[0])
    if max_conc < 1:
        _refuse_unfit(dep, r)
    concurrency = workload.concurrency
    if concurrency is None:
        concurrency = int(grid[int(np.argmax(np.where(r.fits, r.output_tok_s_per_gpu, -1)))])
        mode = "offline-max-throughput"
    else:
        mode = "concurrency"
    one = evaluate(model, dep, workload, calibration=cal, concurrency=concurrency)
    s = lambda k: float(np.asarray(getattr(one, k)).reshape(-1)[0])  # noqa: E731
    # the bottlenecks are read from the very steps the metrics time (decode: the step at this load)
    dec_ops = decode_operators(model, dep, workload, concurrency, calibration=cal)
    pf_ops = prefill_ops(model, dep, cal, workload)
    per = pdl_per_launch(dep.gpu, dep.engine.costs(cal))  # each operator as the step prices it
    gb = 1e9
    out = {
        "model": model.name, "gpu": dep.gpu.id, "num_gpus": dep.num_gpus, "plan": dep.plan.label(),
        "precision": dep.precision.label(), "backend": dep.backend, "mode": mode,
        "isl": isl, "osl": osl, "concurrency": concurrency, "max_num_tokens": dep.step_tokens,
        "ttft_ms": s("ttft_s") * 1e3, "tpot_ms": s("tpot_s") * 1e3, "tok_s_per_user": s("tok_s_per_user"),
        "output_tok_s_per_gpu": s("output_tok_s_per_gpu"), "io_tok_s_per_gpu": s("io_tok_s_per_gpu"),
        "tokens_per_joule_bound": s("tokens_per_joule_bound"), "max_batch": max_conc,
        "memory": {"weights_gb": s("weights_bytes") / gb, "kv_gb": (s("kv_bytes") - s("state_bytes")) / gb,
                   "state_gb": s("state_bytes") / gb,
                   "activations_gb": s("activation_bytes") / gb, "free_gb": s("free_bytes") / gb,
                   "capacity_gb": dep.gpu.memory_bytes / gb},
        "decode_bound": binding_resource(dec_ops, per), "prefill_bound": binding_resource(pf_ops, per),
        "accepted_per_step": s("accepted_per_step"), "fits": concurrency <= max_conc,
        # a format this GPU cannot execute is priced as the engines map it, and the answer says so
        "precision_notes": list(executable(dep.precision, dep.gpu)[1]),
    }
    if concurrency > max_conc:
        out["over_capacity"] = _over_capacity(dep, max_conc, isl, osl)
    if dep.spec is not None:
        out["spec"] = _spec_break_even(model, dep, workload, cal, r=r, grid=grid, concurrency=concurrency)
    if breakdown:
        out["breakdown"] = [{"name": op.name, "kind": op.kind, "time_ms": float(np.sum(op_step_time(op, per))) * 1e3,
                             "flops": float(np.sum(op.flops * op.count)), "bytes": float(np.sum(op.bytes * op.count))}
                            for op in dec_ops if float(np.sum(op_step_time(op, per))) > 0]
    return check_estimate(model, dep, out)


def _over_capacity(dep: Deployment, max_conc: int, isl: int, osl: int) -> str:
    """Priced, not refused: what the engine does with requests its KV cache cannot hold (Engine.admission)."""
    held = f"the KV cache holds {max_conc} sequences of {isl}+{osl} tokens"
    if dep.engine.admission is not None:
        return (f"{held}; {dep.backend} admits requests before their whole KV cache fits and preempts when "
                "blocks run out, so the admitted requests share the decode slots (longer TPOT)")
    return f"{held}; {dep.backend} reserves ISL+OSL per request, so the rest wait for whole requests to finish (longer TTFT)"


def _spec_break_even(model: ModelSpec, dep: Deployment, workload: Workload, cal: Calibration, *, r, grid, concurrency) -> dict:
    """Speculation's TPOT speedup over the same deployment without it (`r`: its metrics over `grid`),
    at this concurrency, at one request, and the first concurrency at which it stops paying."""
    from dataclasses import replace

    base = evaluate(model, replace(dep, spec=None), workload, calibration=cal, concurrency=grid)
    speedup = base.tpot_s / r.tpot_s
    fits = r.fits
    loses = np.nonzero((speedup < 1.0) & fits)[0]
    return {"method": dep.spec.method, "draft_len": dep.spec.k,
            "speedup_at_concurrency": float(np.interp(concurrency, grid, speedup)),
            "speedup_at_1": float(speedup[0]),
            "stops_paying_at_concurrency": int(grid[loses[0]]) if len(loses) else None}
