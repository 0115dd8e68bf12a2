"""One deployment end to end: metrics, memory, bottlenecks, breakdown, speculation break-even."""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import _sharding, binding_resource, engine_budget, evaluate
from llm_codesign.spec import engines
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, reason_text, validity

BATCH_GRID = np.unique(np.concatenate([np.arange(1, 17), np.round(np.geomspace(16, 65536, 120))])).astype(np.int64)


def check(model: ModelSpec, dep: Deployment) -> None:
    code = int(validity(model, dep.gpu, dep.plan, dep.num_gpus).reshape(-1)[0])
    if code >= 0:
        raise InputError("deployment", dep.plan.label() + f" on {dep.num_gpus} GPUs", reason_text(model, dep.gpu, code))


def estimate(model: ModelSpec, dep: Deployment, cal: Calibration, isl: int, osl: int,
             concurrency: int | None = None, breakdown: bool = False) -> dict:
    for name, v in (("isl", isl), ("osl", osl)):
        if v is None or v < 1:
            raise InputError(name, v, "a positive integer number of tokens")
    if concurrency is not None and concurrency < 1:
        raise InputError("concurrency", concurrency, "a positive integer (or omit it for offline max throughput)")
    check(model, dep)
    kw = dict(backend=dep.backend, max_num_tokens=dep.max_num_tokens, cpp=dep.cpp)
    adp = int(np.asarray(dep.plan.adp))
    grid = BATCH_GRID * adp
    r = evaluate(model, dep.gpu, cal, dep.precision, dep.plan, grid, isl, osl, spec=dep.spec, **kw)
    max_conc = int(r["max_concurrency"].reshape(-1)[0])
    gb = 1e9
    if max_conc < 1:
        mem = dep.gpu.memory_bytes
        budget, frac, _ = engine_budget(dep.backend, dep.gpu, dep.max_num_tokens, dep.plan, dep.spec)[1]
        # TensorRT-LLM's fraction is of what weights and activations leave; the others cap the whole
        frac = 1.0 if budget == "free" else float(np.asarray(frac).reshape(-1)[0])
        need = float(r["weights_bytes"].reshape(-1)[0] + r["activation_bytes"].reshape(-1)[0] + r["kv_bytes_per_seq"].reshape(-1)[0])
        raise InputError("deployment", dep.plan.label() + f" on {dep.num_gpus}x{dep.gpu.id}",
                         f"needs {need / gb:.0f} GB per GPU for one sequence, {dep.gpu.name} reports {mem / gb:.0f} GB"
                         + (f" ({frac * mem / gb:.0f} GB usable by {dep.backend})" if frac < 1 else "")
                         + ": add GPUs, raise TP/EP/PP or lower the precision")
    if concurrency is None:
        ok = r["fits"]
        i = int(np.argmax(np.where(ok, r["output_tok_s_per_gpu"], -1)))
        concurrency = int(grid[i])
        mode = "offline-max-throughput"
    else:
        mode = "concurrency"
    one = evaluate(model, dep.gpu, cal, dep.precision, dep.plan, concurrency, isl, osl, spec=dep.spec, with_ops=True, **kw)
    s = lambda k: float(np.asarray(one[k]).reshape(-1)[0])  # noqa: E731
    sh = _sharding(dep.plan)
    c_rank = min(concurrency, max_conc) / adp / int(np.asarray(dep.plan.pp))  # the sequences that decode at once
    dec_ops = forward_ops(model, dep.gpu, cal, dep.precision, sh, Batch(dec_seqs=c_rank, dec_ctx=isl + osl / 2))
    pf_ops = forward_ops(model, dep.gpu, cal, dep.precision, sh, Batch(pf_tokens=min(isl, dep.step_tokens), pf_seqs=1, pf_ctx=0))
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
        "decode_bound": binding_resource(dec_ops), "prefill_bound": binding_resource(pf_ops),
        "accepted_per_step": s("accepted_per_step"), "fits": concurrency <= max_conc,
    }
    if concurrency > max_conc:
        # priced, not refused: what the engine does with requests its KV cache cannot hold (engines.ADMISSION)
        held = f"the KV cache holds {max_conc} sequences of {isl}+{osl} tokens"
        if engines.admission(dep.backend) is not None:
            out["over_capacity"] = (f"{held}; {dep.backend} admits requests before their whole KV cache fits and preempts when "
                                    "blocks run out, so the admitted requests share the decode slots (longer TPOT)")
        else:
            out["over_capacity"] = f"{held}; {dep.backend} reserves ISL+OSL per request, so the rest wait for whole requests to finish (longer TTFT)"
    if dep.spec is not None:
        base = evaluate(model, dep.gpu, cal, dep.precision, dep.plan, grid, isl, osl, **kw)
        speedup = base["tpot_s"] / r["tpot_s"]
        fits = r["fits"]
        loses = np.nonzero((speedup < 1.0) & fits)[0]
        out["spec"] = {"method": dep.spec.method, "draft_len": dep.spec.k,
                       "speedup_at_concurrency": float(np.interp(concurrency, grid, speedup)),
                       "speedup_at_1": float(speedup[0]),
                       "stops_paying_at_concurrency": int(grid[loses[0]]) if len(loses) else None}
    if breakdown:
        out["breakdown"] = [{"name": op.name, "kind": op.kind, "time_ms": float(np.sum(op.total_time)) * 1e3,
                             "flops": float(np.sum(op.flops * op.count)), "bytes": float(np.sum(op.bytes * op.count))}
                            for op in one["ops"] if float(np.sum(op.total_time)) > 0]
    return out
