"""Shape search: model shapes at a parameter budget and equal quality proxy, ranked by the
frontier value they reach at a serving SLO on a GPU. Shapes x deployments x batches are evaluated
as one broadcast through the same cost model as `pareto` (shape axis first), in chunks."""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.errors import InputError
from llm_codesign.explore import accuracy_model, quality
from llm_codesign.explore.search import BATCHES, divisors
from llm_codesign.serve.aggregated import evaluate
from llm_codesign.spec.engines import TRTLLM, Engine
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import GQA, DenseFfn, MoE
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Plan, validity
from llm_codesign.spec.precision import Precision

REGIMES = {
    # objective, constraint; ISL/OSL of the regime
    "latency": ("tok_s_per_user", "min_tps_gpu", 1024, 1024),
    "throughput": ("output_tok_s_per_gpu", "min_tps_user", 1024, 1024),
    "long-context": ("output_tok_s_per_gpu", "min_tps_user", 32768, 1024),
}


@dataclass(frozen=True)
class Slo:
    regime: str = "throughput"
    min_tps_user: float = 20.0  # a comfortable reading speed; the throughput regime's floor
    min_tps_gpu: float = 50.0  # the latency regime's floor on cost
    isl: int | None = None
    osl: int | None = None

    def lengths(self) -> tuple[int, int]:
        _, _, i, o = REGIMES[self.regime]
        return self.isl or i, self.osl or o


def candidates(params: float, *, moe: bool, tol: float = 0.1, vocab: int = 128256, max_candidates: int = 20000,
               head_dims=(64, 128, 256), kv_heads=(4, 8, 16), dense_hidden=None, layers=None) -> dict[str, np.ndarray]:
    """Shape grid within params*(1 +- tol): hidden and widths in multiples of 128/256."""
    if params <= 0:
        raise InputError("params", params, "a positive parameter budget, e.g. 70e9")
    H = np.asarray(dense_hidden if dense_hidden is not None else np.arange(1024, 24577, 128))
    L = np.asarray(layers if layers is not None else np.arange(8, 161, 2))
    rows = []
    if not moe:
        for h, nl, r, kv, hd in itertools.product(H, L, np.arange(2.5, 4.51, 0.25), kv_heads, head_dims):
            rows.append((h, nl, int(round(r * h / 256) * 256), kv, 0, 0, 0, 0, hd))
    else:
        for h, nl, E, k, er, sh, kv in itertools.product(H[::2], L[::2], (64, 128, 256), (4, 8), (0.25, 0.375, 0.5), (0, 1), kv_heads):
            ei = int(round(er * h / 128) * 128)
            rows.append((h, nl, 0, kv, E, k, ei, sh * ei, 128))
    c = shapes(np.asarray(rows, dtype=np.int64), vocab)
    ok = (np.abs(c["total_params"] / params - 1) <= tol) & _well_formed(c)
    idx = np.nonzero(ok)[0]
    if len(idx) > max_candidates:  # keep an even spread over the grid
        idx = idx[np.linspace(0, len(idx) - 1, max_candidates).astype(int)]
    return {k: v[idx] for k, v in c.items()}


SHAPE_COLUMNS = ("hidden", "layers", "inter", "kv_heads", "experts", "top_k", "expert_inter", "shared_inter", "head_dim")


def shapes(rows: np.ndarray, vocab: int) -> dict[str, np.ndarray]:
    """Shape arrays (columns SHAPE_COLUMNS; experts = 0 for dense) with heads and parameter counts
    (GQA attention, gated FFN/experts, router, untied embedding and LM head)."""
    c = {k: rows[:, i] for i, k in enumerate(SHAPE_COLUMNS)}
    h, kv, hd = c["hidden"], c["kv_heads"], c["head_dim"]
    c["heads"] = heads = h // hd
    attn = h * heads * hd + h * kv * hd * 2 + heads * hd * h
    moe = c["experts"] > 0
    ffn_t = np.where(moe, c["experts"] * 3 * h * c["expert_inter"] + 3 * h * c["shared_inter"] + h * c["experts"], 3 * h * c["inter"])
    ffn_a = np.where(moe, c["top_k"] * 3 * h * c["expert_inter"] + 3 * h * c["shared_inter"] + h * c["experts"], 3 * h * c["inter"])
    c["total_params"] = c["layers"] * (attn + ffn_t) + 2 * vocab * h
    c["active_params"] = c["layers"] * (attn + ffn_a) + vocab * h
    return c


def _well_formed(c: dict) -> np.ndarray:
    h, hd, heads, kv = c["hidden"], c["head_dim"], c["heads"], c["kv_heads"]
    return (h % hd == 0) & (heads % 8 == 0) & (heads >= kv) & (heads % kv == 0)


def _model(c: dict, sl, vocab: int, *, moe: bool) -> ModelSpec:
    col = lambda k: c[k][sl][:, None, None]  # noqa: E731  shape axis first
    attn = GQA(heads=col("heads"), kv_heads=col("kv_heads"), head_dim=col("head_dim"), v_head_dim=col("head_dim"))
    if moe:
        # one top-k for the chunk (grouped by top-k by the caller)
        ffn = MoE(experts=col("experts"), top_k=int(c["top_k"][sl][0]), expert_inter=col("expert_inter"), shared_inter=col("shared_inter"))
    else:
        ffn = DenseFfn(inter=col("inter"))
    return ModelSpec("candidate", col("hidden"), vocab, ((Layer(attn, ffn), col("layers")),))


def _plans(num_gpus: int, gpu: Gpu, *, moe: bool, long_context: bool) -> tuple[Plan, np.ndarray]:
    rows = []
    for n in divisors(num_gpus):
        ds = divisors(n)
        for tp, pp, adp, kvp in itertools.product(ds, ds, ds if moe else (1,), ds if long_context else (1,)):
            if tp * pp * adp * kvp != n or tp * kvp > gpu.scale_up_domain:
                continue
            if moe:
                for ep in ds:
                    if (n // pp) % ep == 0:
                        rows.append((tp, pp, ep, n // pp // ep, adp, kvp, n))
            else:
                rows.append((tp, pp, 1, 1, adp, kvp, n))
    a = np.asarray(rows, dtype=np.int64)
    return Plan(*(a[:, i] for i in range(6))), a[:, 6]


def objective(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, plan: Plan, *, inst: np.ndarray, slo: Slo,
              engine: Engine = TRTLLM, batches=BATCHES):
    """Best value of the regime's metric over every deployment meeting the SLO, per shape (axis 0)."""
    isl, osl = slo.lengths()
    obj_name, cons, _, _ = REGIMES[slo.regime]
    P = len(inst)
    pa = plan.take(np.s_[None, :, None])
    conc = np.asarray(batches)[None, None, :] * np.asarray(plan.adp)[None, :, None]
    r = evaluate(model, gpu, cal, prec, pa, concurrency=conc, isl=isl, osl=osl, engine=engine)
    ok = (validity(model, gpu, pa, inst[None, :, None]) < 0) & r["fits"]
    if cons == "min_tps_user":
        ok = ok & (r["tok_s_per_user"] >= slo.min_tps_user)
    else:
        ok = ok & (r["output_tok_s_per_gpu"] >= slo.min_tps_gpu)
    val = np.where(ok, r[obj_name], -np.inf)
    shape = val.shape
    flat = val.reshape(shape[0], -1)
    best = flat.argmax(axis=1)
    bp, bb = np.divmod(best, shape[2])
    return flat.max(axis=1), bp, bb, P


# A design search prices shapes x plans x batches, ~3.5 us per deployment on one core of the 2-core
# development machine (1e12 MoE on 8 GPUs: 3,496 shapes x 50 plans x 55 batches = 9.6e6 in ~36 s; on 72
# GB200s the same shapes meet 1,000 plans, 1.9e8 deployments, which had not finished after 580 s).
# Past this bound a search is refused before it starts, naming the flag that narrows it.
MAX_DEPLOYMENTS = 16_000_000


def check_size(shapes: int, plans: int, num_gpus: int, *, field: str = "max_candidates", flag: str = "--max-candidates") -> None:
    """Refuses a search of `shapes` shapes (or NSGA-II trials) over `plans` plans that would price more
    than MAX_DEPLOYMENTS deployments: one line with the count that fits."""
    total = shapes * plans * len(BATCHES)
    if total > MAX_DEPLOYMENTS:
        cap = max(1, MAX_DEPLOYMENTS // (plans * len(BATCHES)))
        what = "shapes" if field == "max_candidates" else "trials"
        raise InputError(field, f"{shapes:,} {what}" if what == "shapes" else shapes, f"at most {cap:,} {what} on {num_gpus} GPUs ({plans:,} plans x {len(BATCHES)} batches each; "
                         f"a search of at most {MAX_DEPLOYMENTS:,} deployments, this one {total:,}): lower {flag} or --gpus")


def design(params: float, gpu: Gpu, cal: Calibration, num_gpus: int, slo: Slo, *, baseline: ModelSpec | None = None,
           moe: bool = False, prec: Precision | None = None, budget_tol: float = 0.1, quality_tol: float = 0.002,
           quality_file: str | None = None, engine: Engine = TRTLLM, max_candidates: int = 20000, top: int = 10,
           progress=None, chunk: int = 16, proxy_file: str | None = None, scheduler: str | None = None,
           workers: int | None = None) -> dict:
    """The `top` shapes at the budget ranked by the regime's objective. The shape chunks run on the sweep
    executor (explore.sweep.execute): in-process by default, on Dask with `scheduler` ("local" or an address)."""
    t0 = time.perf_counter()
    if slo.regime not in REGIMES:
        raise InputError("regime", slo.regime, "one of: " + ", ".join(REGIMES))
    prec = prec or (baseline.default_precision if baseline else Precision.of("bf16"))
    qc = quality.constants(quality_file)
    pc = accuracy_model.proxy_constants(proxy_file)  # the accuracy proxy's constants, a user's overrides on top
    vocab = baseline.vocab if baseline else 128256
    cand = candidates(params, moe=moe, tol=budget_tol, vocab=vocab, max_candidates=max_candidates)
    plan, inst = _plans(num_gpus, gpu, moe=moe, long_context=slo.regime == "long-context")
    bq = accuracy_model.model_loss(baseline, prec.weight.name, c=qc, pc=pc) if baseline is not None else None
    on = dict(gpu=gpu, cal=cal, prec=prec, plan=plan, inst=inst, slo=slo, engine=engine)  # what every shape is priced on
    cand, q, obj, bplan, bbatch, evaluated = evaluate_shapes(cand, gpu, cal, prec, plan, inst=inst, slo=slo, vocab=vocab, moe=moe,
                                                             engine=engine, qc=qc, bq=bq, quality_tol=quality_tol, progress=progress,
                                                             chunk=chunk, pc=pc, num_gpus=num_gpus, scheduler=scheduler, workers=workers)
    if not len(q):
        raise InputError("params", params, "a budget and tolerances that admit at least one shape at the baseline's quality "
                         "(raise --quality-tol or --budget-tol)")
    if not np.isfinite(obj).any():
        raise _nothing_meets(slo, len(q), params, num_gpus, gpu)  # shapes fit (checked before the search), none meets the floor
    return _result(cand, q, obj, best=(bplan, bbatch), evaluated=evaluated, baseline=baseline, bq=bq, moe=moe, params=params,
                   num_gpus=num_gpus, top=top, t0=t0, **on)


def _fits_any(cand, gpu, cal, prec, plan, *, inst, slo, vocab, moe, engine) -> bool:
    """Whether any of the smallest shapes (by total parameters: the least weight memory at one precision,
    and the KV cache of a few requests is megabytes against their gigabytes) has a deployment that fits in
    memory, at no throughput floor. One chunk, under a second: where none does, no larger shape can."""
    small = np.argsort(cand["total_params"], kind="stable")[:16]
    if moe:  # one top-k per chunk, as in evaluate_shapes
        small = small[cand["top_k"][small] == cand["top_k"][small[0]]]
    sub = {k: v[small] for k, v in cand.items()}
    v, *_ = objective(_model(sub, slice(None), vocab, moe=moe), gpu, cal, prec, plan, inst=inst,
                      slo=Slo(slo.regime, 0.0, 0.0, slo.isl, slo.osl), engine=engine)
    return bool(np.isfinite(v).any())


def _nothing_fits(params, prec, num_gpus, gpu) -> InputError:
    return InputError("gpus", num_gpus, f"enough GPUs for a {params / 1e9:,.4g}B-parameter shape to fit: at {prec.label()} no shape's "
                      f"weights and KV cache fit any plan on {num_gpus}x {gpu.id} (more --gpus, or a smaller --weight-dtype)")


def _nothing_meets(slo, n_shapes: int, params, num_gpus, gpu) -> InputError:
    _, cons, _, _ = REGIMES[slo.regime]
    floor = slo.min_tps_user if cons == "min_tps_user" else slo.min_tps_gpu
    return InputError(cons, floor, f"a floor that a deployment of one of the {n_shapes:,} shapes at {params / 1e9:,.4g}B params on "
                      f"{num_gpus}x {gpu.id} meets (lower --{cons.replace('_', '-')})")


def _price_chunk(sel, *, cand, gpu, cal, prec, plan, inst, slo, vocab, moe, engine):
    """One chunk of shapes priced over every deployment: (sel, objective, best plan, best batch, plans)."""
    sub = {k: v[sel] for k, v in cand.items()}
    v, bp, bb, P = objective(_model(sub, slice(None), vocab, moe=moe), gpu, cal, prec, plan, inst=inst, slo=slo, engine=engine)
    return sel, v, bp, bb, P


def evaluate_shapes(cand: dict, gpu, cal, prec, plan, *, inst, slo, vocab, moe, engine, qc, bq, quality_tol, progress=None, chunk=16,
                    pc: dict | None = None, num_gpus: int | None = None, scheduler: str | None = None,
                    workers: int | None = None):
    """Quality filter, then the SLO objective of every remaining shape over every deployment (refused up
    front past MAX_DEPLOYMENTS), chunk by chunk on the sweep executor."""
    from functools import partial

    from llm_codesign.explore.sweep import execute

    # the same accuracy proxy as estimate/pareto/lint: fewer KV heads and coarser experts cost accuracy here
    q = accuracy_model.shape_loss(cand, prec.weight.name, qc, pc)
    keep = q <= bq * (1 + quality_tol) if bq is not None else np.ones(len(q), dtype=bool)
    cand = {k: v[keep] for k, v in cand.items()}
    q = q[keep]
    n = len(q)
    num_gpus = num_gpus if num_gpus is not None else int(np.max(inst, initial=0))
    check_size(n, len(inst), num_gpus)
    if n and not _fits_any(cand, gpu, cal, prec, plan, inst=inst, slo=slo, vocab=vocab, moe=moe, engine=engine):  # before minutes of search, not after
        raise _nothing_fits(float(np.median(cand["total_params"])), prec, num_gpus, gpu)
    obj = np.full(n, -np.inf)
    bplan = np.zeros(n, dtype=np.int64)
    bbatch = np.zeros(n, dtype=np.int64)
    # chunks never mix top-k values (the MoE routing width is a scalar of the operator graph)
    groups = [np.nonzero(cand["top_k"] == k)[0] for k in np.unique(cand["top_k"])] if moe else [np.arange(n)]
    chunks = [g[s:s + chunk] for g in groups for s in range(0, len(g), chunk)]
    evaluated = done = 0
    price = partial(_price_chunk, cand=cand, gpu=gpu, cal=cal, prec=prec, plan=plan, inst=inst, slo=slo, vocab=vocab, moe=moe,
                    engine=engine)
    for sel, v, bp, bb, P in execute(chunks, scheduler=scheduler, workers=workers, fn=price):
        obj[sel], bplan[sel], bbatch[sel] = v, bp, bb
        evaluated += len(sel) * P * len(BATCHES)
        done += len(sel)
        if progress:
            progress(done, n)
    return cand, q, obj, bplan, bbatch, evaluated


def _result(cand, q, obj, *, best, evaluated, plan, inst, gpu, cal, prec, slo, baseline, bq, moe, params, num_gpus,
            engine, top, t0) -> dict:
    """The ranked designs (`best`: each shape's best plan and batch), with the baseline's own value."""
    bplan, bbatch = best
    base = None
    if baseline is not None:
        base_v, bp, bb, _ = objective(baseline, gpu, cal, prec, plan, inst=inst, slo=slo, engine=engine)
        base = {"name": baseline.name, "total_params": int(baseline.total_params), "active_params": int(baseline.active_params),
                "quality_proxy": bq, "objective": float(base_v[0]) if np.isfinite(base_v[0]) else None,
                "deployment": _dep(plan, inst, int(bp[0]), int(bb[0]))}
    rank = np.argsort(-obj)[:top]
    bo = base["objective"] if base and base["objective"] else None
    designs = []
    for i in rank:
        if not np.isfinite(obj[i]):
            continue
        shape = {k: int(cand[k][i]) for k in ("hidden", "layers", "heads", "kv_heads", "head_dim")}
        if moe:
            shape.update({k: int(cand[k][i]) for k in ("experts", "top_k", "expert_inter", "shared_inter")})
        else:
            shape["inter"] = int(cand["inter"][i])
        designs.append({"shape": shape, "total_params": int(cand["total_params"][i]), "active_params": int(cand["active_params"][i]),
                        "quality_proxy": float(q[i]), "objective": float(obj[i]),
                        "gain_pct": (100.0 * (obj[i] / bo - 1.0)) if bo else None,
                        "deployment": _dep(plan, inst, int(bplan[i]), int(bbatch[i]))})
    obj_name, cons, _, _ = REGIMES[slo.regime]
    return {"regime": slo.regime, "objective": obj_name, "constraint": {cons: slo.min_tps_user if cons == "min_tps_user" else slo.min_tps_gpu},
            "isl_osl": slo.lengths(), "gpu": gpu.id, "num_gpus": num_gpus, "precision": prec.label(), "params": params,
            "candidates": int(len(q)), "evaluated": int(evaluated), "seconds": time.perf_counter() - t0,
            "baseline": base, "designs": designs}


def design_nsga2(params: float, gpu: Gpu, cal: Calibration, num_gpus: int, slo: Slo, *, baseline: ModelSpec | None = None,
                 moe: bool = False, prec: Precision | None = None, budget_tol: float = 0.1, quality_tol: float = 0.002,
                 quality_file: str | None = None, engine: Engine = TRTLLM, trials: int = 300, top: int = 10, seed: int = 0,
                 progress=None, proxy_file: str | None = None) -> dict:
    """Optuna NSGA-II over a continuous shape space too large to enumerate: two objectives (the SLO
    objective up, the quality proxy down) with the budget and the quality tolerance as constraints.
    Each trial prices one shape over every deployment through the same vectorised `objective`."""
    try:
        import optuna
    except ImportError:
        raise InputError("search", "nsga2", "the dist extra: pip install 'llm-codesign[dist]'") from None
    t0 = time.perf_counter()
    if slo.regime not in REGIMES:
        raise InputError("regime", slo.regime, "one of: " + ", ".join(REGIMES))
    if params <= 0:
        raise InputError("params", params, "a positive parameter budget, e.g. 70e9")
    prec = prec or (baseline.default_precision if baseline else Precision.of("bf16"))
    qc = quality.constants(quality_file)
    pc = accuracy_model.proxy_constants(proxy_file)  # the accuracy proxy's constants, a user's overrides on top
    vocab = baseline.vocab if baseline else 128256
    bq = accuracy_model.model_loss(baseline, prec.weight.name, c=qc, pc=pc) if baseline is not None else None
    plan, inst = _plans(num_gpus, gpu, moe=moe, long_context=slo.regime == "long-context")
    check_size(trials, len(inst), num_gpus, field="trials", flag="--trials")
    on = dict(gpu=gpu, cal=cal, prec=prec, plan=plan, inst=inst, slo=slo, engine=engine)  # what every shape is priced on
    seen: dict[tuple, tuple] = {}

    def run(trial):
        row = _trial_shape(trial, moe=moe, params=params, vocab=vocab)
        c = shapes(np.asarray([row], dtype=np.int64), vocab)
        ql = float(accuracy_model.shape_loss(c, prec.weight.name, qc, pc)[0])
        # constraints <= 0 are feasible: budget, quality, a well-formed head layout
        cons = [abs(float(c["total_params"][0]) / params - 1) - budget_tol,
                (ql / bq - 1 - quality_tol) if bq is not None else -1.0, 0.0 if _well_formed(c)[0] else 1.0]
        _constrain(trial, cons)
        v = -np.inf
        if max(cons) <= 0:
            v, bp, bb, _ = objective(_model(c, slice(None), vocab, moe=moe), gpu, cal, prec, plan, inst=inst, slo=slo, engine=engine)
            v = float(v[0])
            seen[row] = (c, ql, v, int(bp[0]), int(bb[0]))
        if progress:
            progress(trial.number + 1, trials)
        return (v if np.isfinite(v) else 0.0), ql

    study = optuna.create_study(directions=["maximize", "minimize"], sampler=_nsga2_sampler(optuna, seed))
    study.optimize(run, n_trials=trials)
    if not seen:
        raise InputError("params", params, f"a budget and tolerances that admit a shape (no feasible one in {trials} trials)")
    vals = list(seen.values())
    cand = {k: np.concatenate([x[0][k] for x in vals]) for k in vals[0][0]}
    q, obj, bplan, bbatch = (np.array([x[i] for x in vals]) for i in (1, 2, 3, 4))
    if not np.isfinite(obj).any():
        fits = _fits_any(cand, gpu, cal, prec, plan, inst=inst, slo=slo, vocab=vocab, moe=moe, engine=engine)
        raise _nothing_meets(slo, len(q), params, num_gpus, gpu) if fits else _nothing_fits(params, prec, num_gpus, gpu)
    r = _result(cand, q, obj, best=(bplan, bbatch), evaluated=len(vals) * len(inst) * len(BATCHES), baseline=baseline, bq=bq,
                moe=moe, params=params, num_gpus=num_gpus, top=top, t0=t0, **on)
    r["trials"] = trials
    return r


def _trial_shape(trial, *, moe: bool, params: float, vocab: int) -> tuple:
    """One NSGA-II trial's shape (a SHAPE_COLUMNS row): widths and heads suggested, the depth the
    one (even) layer count that comes nearest the budget, so the budget constraint mostly holds."""
    h = trial.suggest_int("hidden", 1024, 24576, step=128)
    hd = trial.suggest_categorical("head_dim", [64, 128, 256])
    kv = trial.suggest_categorical("kv_heads", [4, 8, 16])
    if moe:
        E = trial.suggest_categorical("experts", [32, 64, 128, 256, 512])
        k = trial.suggest_categorical("top_k", [1, 2, 4, 8])
        ei = max(int(round(trial.suggest_float("expert_ratio", 0.125, 1.0) * h / 128) * 128), 128)
        row = [h, 2, 0, kv, E, k, ei, trial.suggest_categorical("shared", [0, 1]) * ei, hd]
    else:
        row = [h, 2, int(round(trial.suggest_float("ffn_ratio", 2.0, 5.0) * h / 256) * 256), kv, 0, 0, 0, 0, hd]
    per = shapes(np.asarray([row], dtype=np.int64), vocab)
    per_layer = (float(per["total_params"][0]) - 2 * vocab * h) / 2
    row[1] = int(np.clip(round((params - 2 * vocab * h) / max(per_layer, 1.0) / 2) * 2, 2, 400))
    return tuple(row)


def _constrain(trial, cons: list) -> None:
    """A trial's constraints as the installed optuna takes them."""
    if hasattr(trial, "set_constraint"):  # optuna >= 5: one named constraint each
        for name, value in zip(("budget", "quality", "heads"), cons, strict=True):
            trial.set_constraint(name, value)
    else:
        trial.set_user_attr("constraints", cons)


def _nsga2_sampler(optuna, seed: int):
    # ERROR, not WARNING: optuna logs a trial that Ctrl-C interrupts as a warning with its traceback before
    # re-raising the KeyboardInterrupt, which the CLI turns into one line and exit 130
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if hasattr(optuna.trial.Trial, "set_constraint"):
        return optuna.samplers.NSGAIISampler(seed=seed)
    return optuna.samplers.NSGAIISampler(seed=seed, constraints_func=lambda t: t.user_attrs["constraints"])


def _dep(plan: Plan, inst, ip: int, ib: int) -> dict:
    p = plan.at(ip)
    return {"plan": p.label(), "instance_gpus": int(inst[ip]), "tp": p.tp, "pp": p.pp, "ep": p.ep, "moe_tp": p.moe_tp,
            "attention_dp": p.adp, "kvp": p.kvp, "concurrency_per_instance": int(BATCHES[ib] * p.adp)}


def to_model(d: dict, vocab: int, name: str = "design") -> ModelSpec:
    s = d["shape"]
    attn = GQA(heads=s["heads"], kv_heads=s["kv_heads"], head_dim=s["head_dim"], v_head_dim=s["head_dim"])
    ffn = (MoE(experts=s["experts"], top_k=s["top_k"], expert_inter=s["expert_inter"], shared_inter=s["shared_inter"]) if "experts" in s
           else DenseFfn(inter=s["inter"]))
    return ModelSpec(name, s["hidden"], vocab, ((Layer(attn, ffn), s["layers"]),))


def hf_config(d: dict, vocab: int) -> dict:
    """A Hugging Face config.json for a design (Llama layout for dense, Qwen3-MoE layout for MoE)."""
    s = d["shape"]
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": s["hidden"], "num_hidden_layers": s["layers"],
           "num_attention_heads": s["heads"], "num_key_value_heads": s["kv_heads"], "head_dim": s["head_dim"], "vocab_size": vocab,
           "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 131072,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    if "experts" in s:
        cfg.update({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_experts": s["experts"],
                    "num_experts_per_tok": s["top_k"], "moe_intermediate_size": s["expert_inter"], "intermediate_size": s["expert_inter"],
                    "shared_expert_intermediate_size": s["shared_inter"], "decoder_sparse_step": 1, "mlp_only_layers": []})
    else:
        cfg["intermediate_size"] = s["inter"]
    return cfg
