"""Shape search: model shapes at a parameter budget and equal quality proxy, ranked by the
frontier value they reach at a serving SLO on a GPU. Shapes x deployments x batches are evaluated
as one broadcast through the same cost model as `pareto` (shape axis first), in chunks."""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.errors import InputError
from llm_codesign.explore import MAX_CANDIDATES, MAX_TOP, accuracy_model, quality
from llm_codesign.explore.envelope import reference_model
from llm_codesign.explore.search import BATCHES, SEARCH_GRAPHS, divisors, refuse_without_decode, row_graphs
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.spec.engines import TRTLLM, Engine, check_kv_format, check_runs
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import GQA, DenseFfn, MoE
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import MAX_GPUS, MAX_TOKENS, Plan, validity
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.validation import as_float, as_int

# the vocabulary of design's shapes without a baseline (with one they take its own): Llama 3's tokenizer, 128,000
# BPE tokens and 256 reserved special ones (meta-llama/Meta-Llama-3-8B config.json vocab_size 128256)
DEFAULT_VOCAB = 128256
BUDGET_TOL = 0.1  # design's default --budget-tol: shapes within 10% of the budget's parameters (lint R3's variants too)
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


# The shape grid's axes. Numeric axes extend by their step past an edge, geometric ones (x2); head sizes stay on
# the fast attention kernels' sizes (lint R4: FlashAttention-3 / TensorRT-LLM FMHA/XQA) and the shared expert is
# on or off: those two edges are real limits. The query width (query heads x head size / hidden) holds Llama's 1 and the
# reference's own (grid_axes' q_ratios: design's reference_q_ratio): the layouts of the published models, not a range.
DENSE_AXES = {"hidden": tuple(range(1024, 24577, 128)), "layers": tuple(range(8, 161, 2)),
              "ffn_ratio": tuple(2.5 + 0.25 * i for i in range(9)), "kv_heads": (4, 8, 16), "head_dim": (64, 128, 256), "q_ratio": (1.0,)}
MOE_AXES = {"hidden": tuple(range(1024, 24577, 256)), "layers": tuple(range(8, 161, 4)), "experts": (64, 128, 256), "top_k": (4, 8),
            "expert_ratio": (0.25, 0.375, 0.5), "shared": (0, 1), "kv_heads": (4, 8, 16), "q_ratio": (1.0,)}
# axis -> (how it extends, its least value): "step" adds the grid's own step, "x2" doubles or halves; None: fixed
EXTEND = {"hidden": ("step", 256), "layers": ("step", 2), "ffn_ratio": ("step", 1.0), "expert_ratio": ("step", 0.125),
          "kv_heads": ("x2", 1), "experts": ("x2", 2), "top_k": ("x2", 1), "head_dim": None, "shared": None, "q_ratio": None}
# axes with no edges: their values are layouts (the query width: Llama's and the reference's), not the ends of a range,
# so a winner at one of them is no grid edge to extend or to name as a limit
NO_EDGE = ("q_ratio",)
EXTEND_TOP = 10  # the best rows whose grid edges extend the grid (design's default table)
EXTEND_ROUNDS = 12  # extensions of one search at most (each prices a slice of new shapes)
EXTEND_SLICE = 128  # admitted shapes priced per extension slice at most (an even spread): bounds an open grid's extensions


def grid_axes(*, moe: bool, head_dims=None, kv_heads=None, dense_hidden=None, layers=None, q_ratios=None) -> dict[str, tuple]:
    axes = dict(MOE_AXES if moe else DENSE_AXES)
    if q_ratios is not None:
        axes["q_ratio"] = tuple(sorted({float(q) for q in q_ratios}))
    if kv_heads is not None:
        axes["kv_heads"] = tuple(kv_heads)
    if head_dims is not None and not moe:
        axes["head_dim"] = tuple(head_dims)
    if dense_hidden is not None:
        axes["hidden"] = tuple(int(h) for h in dense_hidden)
    if layers is not None:
        axes["layers"] = tuple(int(n) for n in layers)
    return axes


def grid_rows(axes: dict[str, tuple], *, moe: bool) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every combination of the axes' values as SHAPE_COLUMNS rows (FFN widths in multiples of 256, expert
    widths of 128; query heads q_ratio x hidden / head size; one numpy product: the dense grid holds ~1.1 million
    combinations per query width), those with a head layout (_well_formed), and each row's axis values."""
    names = list(axes)
    mesh = np.meshgrid(*(np.asarray(axes[k], float) for k in names), indexing="ij")
    g = {k: m.ravel() for k, m in zip(names, mesh, strict=True)}
    h = g["hidden"]
    z = np.zeros_like(h)
    hd = g["head_dim"] if not moe else z + 128
    q = query_heads_at(g.get("q_ratio", 1.0), h, hd)
    if not moe:
        inter = ffn_width(g["ffn_ratio"], h, moe=False)
        cols = (h, g["layers"], inter, g["kv_heads"], z, z, z, z, hd, q)
    else:
        ei = ffn_width(g["expert_ratio"], h, moe=True)
        cols = (h, g["layers"], z, g["kv_heads"], g["experts"], g["top_k"], ei, g["shared"] * ei, hd, q)
    # the rows with a head layout only (_well_formed's rule on the columns): most of a query width of 1.6's are none (its
    # 64 x 128 at 5120 needs a hidden a multiple of 640), and counting their parameters doubled the grid's seconds
    ok = _well_formed({"heads": q, "kv_heads": g["kv_heads"]})
    return np.stack(cols, axis=1)[ok].astype(np.int64), {k: v[ok] for k, v in g.items()}


def query_heads_at(q_ratio, hidden, head_dim):
    """The query heads of a query width `q_ratio` x hidden at `head_dim` (qwen3-32b's 1.6 at 5120 and 128: 64), 0 where
    the width is no whole number of heads: heads x head size is then q_ratio x hidden exactly, as the reference's."""
    n = np.asarray(q_ratio, float) * np.asarray(hidden, float) / np.asarray(head_dim, float)
    whole = np.abs(n - np.round(n)) < 1e-6
    return np.where(whole, np.round(n), 0.0)


def reference_q_ratio(m: ModelSpec) -> float | None:
    """The query width (query heads x head size / hidden) of a reference whose every attention layer is GQA, the layout
    design's grid takes beside Llama's 1 (accuracy_model.query_width: qwen3-32b 64 x 128 / 5120 = 1.6, qwen3-30b-a3b and
    qwen3-235b-a22b 32 x 128 / 2048 and 64 x 128 / 4096 = 2, catalog config.json num_attention_heads, head_dim and
    hidden_size); None for an MLA or non-attention mixer, a layout the grid's GQA rows cannot take (outside_grid)."""
    attn = [layer.attn for layer, _ in m.groups]
    return accuracy_model.query_width(m) if attn and all(isinstance(a, GQA) for a in attn) else None


def axis_step(axis: str, *, moe: bool):
    """The step of design's grid along `axis` (hidden 128, MoE 256; layers 2, MoE 4; ffn_ratio 0.25; expert_ratio 0.125):
    the step its extensions take too (EXTEND), so every value the grid reaches is a multiple of it above EXTEND's least."""
    v = (MOE_AXES if moe else DENSE_AXES)[axis]
    return v[1] - v[0]


def ffn_width(ratio, hidden, *, moe: bool):
    """An FFN width on design's grid: ratio x hidden rounded to 256 (an expert's to 128), as grid_rows builds its rows."""
    unit = 128 if moe else 256
    return np.round(ratio * hidden / unit) * unit


def widened_to(params: float, hidden: int, count, *, moe: bool, max_ratio: float = 16.0) -> int | None:
    """The narrowest FFN (expert) width design's grid reaches at `hidden` (ffn_width at the ratio axis's values and their
    extensions: multiples of its step from EXTEND's least) at which `count(width)`, a shape's parameters at that width,
    is at least `params`; None where none up to `max_ratio` x hidden is. How lint R3 sizes its shallower variant at no
    fewer parameters than the shape, so that the variant is a shape this grid holds."""
    axis = "expert_ratio" if moe else "ffn_ratio"
    step, least = axis_step(axis, moe=moe), EXTEND[axis][1]
    widths = np.unique(ffn_width(least + step * np.arange(int(round((max_ratio - least) / step)) + 1), hidden, moe=moe))
    return next((int(w) for w in widths if w > 0 and count(int(w)) >= params), None)


def in_budget(grid: tuple[np.ndarray, dict], params: float, tol: float, vocab: int, active: float | None = None) -> dict[str, np.ndarray]:
    """The grid rows within params*(1 +- tol) (and active*(1 +- tol) active parameters where `active` is given: a MoE
    budget of both) with a well-formed head layout, as shape arrays (with each shape's axis values under "ax_<axis>")."""
    rows, ax = grid
    c = shapes(rows, vocab) | {f"ax_{k}": v for k, v in ax.items()}
    ok = (np.abs(c["total_params"] / params - 1) <= tol) & _well_formed(c)
    if active is not None:
        ok &= np.abs(c["active_params"] / active - 1) <= tol
    return {k: v[ok] for k, v in c.items()}


def thin(c: dict, max_candidates: int) -> dict:
    """At most max_candidates shapes, an even spread over the grid's order."""
    n = len(c["hidden"])
    if n <= max_candidates:
        return c
    idx = np.linspace(0, n - 1, max_candidates).astype(int)
    return {k: v[idx] for k, v in c.items()}


def candidates(params: float, *, moe: bool, tol: float = 0.1, vocab: int = DEFAULT_VOCAB, max_candidates: int = 20000,
               head_dims=None, kv_heads=None, dense_hidden=None, layers=None) -> dict[str, np.ndarray]:
    """Shape grid within params*(1 +- tol): hidden and widths in multiples of 128/256."""
    if params <= 0:
        raise InputError("params", params, "a positive parameter budget, e.g. 70e9")
    axes = grid_axes(moe=moe, head_dims=head_dims, kv_heads=kv_heads, dense_hidden=dense_hidden, layers=layers)
    return thin(in_budget(grid_rows(axes, moe=moe), params, tol, vocab), max_candidates)


SHAPE_COLUMNS = ("hidden", "layers", "inter", "kv_heads", "experts", "top_k", "expert_inter", "shared_inter", "head_dim", "heads")


def shapes(rows: np.ndarray, vocab: int) -> dict[str, np.ndarray]:
    """Shape arrays (columns SHAPE_COLUMNS; experts = 0 for dense; rows without the query heads take hidden / head
    size, a query width of 1) with the query width q_ratio and parameter counts (GQA attention with its q and o
    projections hidden x heads x head size, gated FFN/experts, router, untied embedding and LM head)."""
    if rows.shape[1] == len(SHAPE_COLUMNS) - 1:
        rows = np.concatenate([rows, np.where(rows[:, 0] % rows[:, 8] == 0, rows[:, 0] // rows[:, 8], 0)[:, None]], axis=1)
    c = {k: rows[:, i] for i, k in enumerate(SHAPE_COLUMNS)}
    h, kv, hd, heads = c["hidden"], c["kv_heads"], c["head_dim"], c["heads"]
    c["q_ratio"] = heads * hd / h
    attn = h * heads * hd + h * kv * hd * 2 + heads * hd * h
    moe = c["experts"] > 0
    ffn_t = np.where(moe, c["experts"] * 3 * h * c["expert_inter"] + 3 * h * c["shared_inter"] + h * c["experts"], 3 * h * c["inter"])
    ffn_a = np.where(moe, c["top_k"] * 3 * h * c["expert_inter"] + 3 * h * c["shared_inter"] + h * c["experts"], 3 * h * c["inter"])
    c["total_params"] = c["layers"] * (attn + ffn_t) + 2 * vocab * h
    c["active_params"] = c["layers"] * (attn + ffn_a) + vocab * h
    return c


def _well_formed(c: dict) -> np.ndarray:
    heads, kv = c["heads"], c["kv_heads"]
    return (heads > 0) & (heads % 8 == 0) & (heads >= kv) & (heads % kv == 0)


def _model(c: dict, sl, vocab: int, *, moe: bool) -> ModelSpec:
    col = lambda k: c[k][sl][:, None, None]  # noqa: E731  shape axis first
    attn = GQA(heads=col("heads"), kv_heads=col("kv_heads"), head_dim=col("head_dim"), v_head_dim=col("head_dim"))
    if moe:
        # one top-k for the chunk (grouped by top-k by the caller)
        ffn = MoE(experts=col("experts"), top_k=int(c["top_k"][sl][0]), expert_inter=col("expert_inter"), shared_inter=col("shared_inter"))
    else:
        ffn = DenseFfn(inter=col("inter"))
    return ModelSpec("candidate", col("hidden"), vocab, ((Layer(attn, ffn), col("layers")),))


def plans_for(num_gpus: int, gpu: Gpu, *, moe: bool, long_context: bool) -> tuple[Plan, np.ndarray]:
    """The plans a search of `num_gpus` GPUs tries (every instance size dividing it: TP x PP x attention DP (MoE) x KVP
    (long context), TP x KVP within the scale-up domain; MoE with every EP over the stage's GPUs), as one Plan of
    arrays, with each plan's instance GPUs: design's and lint's operating point (explore.lint.operating_point)."""
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


def _priced(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, plan: Plan, *, inst: np.ndarray, slo: Slo,
            engine: Engine, batches) -> tuple[dict, np.ndarray]:
    """Every deployment (shape x plan x batch) evaluated, and which of them are valid, fit and meet the SLO's floor."""
    isl, osl = slo.lengths()
    _, cons, _, _ = REGIMES[slo.regime]
    pa = plan.take(np.s_[None, :, None])
    conc = np.asarray(batches)[None, None, :] * np.asarray(plan.adp)[None, :, None]
    # with the CUDA graphs a deployment exported at its batch captures (explore.search.SEARCH_GRAPHS): every batch of the grid
    # replays a graph (serve.aggregated._eager_misses: none at an infinite capture), so no row decodes outside its capture and
    # its bands carry no eager term (priced_terms' `eager` None), as a search's point's do. A row's batch above the engine's
    # default capture (TensorRT-LLM's 1-32, 64 and 128, unpadded: 8B's 241 a rank on an H100) is priced as the launch that
    # pads the graphs up to it runs it (the capture the row states: _dep's cuda_graph_max_bs, row_graphs; estimate at it
    # gives the row's figure and band, leftS2), not as the default launch, where the eager launches would be priced (leftS)
    r = evaluate(model, Serving(gpu=gpu, prec=prec, plan=pa, engine=engine, cuda_graph_max_bs=SEARCH_GRAPHS), cal=cal, concurrency=conc,
                 isl=isl, osl=osl)
    # the plans the engine launches (Engine.runs_plans: TensorRT-LLM's attention DP at TP 1 only), as pareto searches them
    ok = (validity(model, gpu, pa, inst[None, :, None]) < 0) & engine.runs_plans(pa, moe=model.is_moe) & r["fits"]
    if cons == "min_tps_user":
        ok = ok & (r["tok_s_per_user"] >= slo.min_tps_user)
    else:
        ok = ok & (r["output_tok_s_per_gpu"] >= slo.min_tps_gpu)
    return r, ok


def objective(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, plan: Plan, *, inst: np.ndarray, slo: Slo,
              engine: Engine = TRTLLM, batches=BATCHES):
    """Best value of the regime's metric over every deployment meeting the SLO, per shape (axis 0)."""
    obj_name = REGIMES[slo.regime][0]
    P = len(inst)
    r, ok = _priced(model, gpu, cal, prec, plan, inst=inst, slo=slo, engine=engine, batches=batches)
    val = np.where(ok, r[obj_name], -np.inf)
    shape = val.shape
    flat = val.reshape(shape[0], -1)
    best = flat.argmax(axis=1)
    bp, bb = np.divmod(best, shape[2])
    return flat.max(axis=1), bp, bb, P


def at_best(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, *, num_gpus: int, slo: Slo, moe: bool,
            engine: Engine = TRTLLM) -> dict | None:
    """One shape's best deployment at the regime's SLO, as `design` ranks it (the plans of a `moe` search),
    with its four metrics there; None where no deployment meets the floor."""
    plan, inst = plans_for(num_gpus, gpu, moe=moe, long_context=slo.regime == "long-context")
    r, ok = _priced(model, gpu, cal, prec, plan, inst=inst, slo=slo, engine=engine, batches=BATCHES)
    val = np.where(ok, r[REGIMES[slo.regime][0]], -np.inf)
    k = int(np.argmax(val.ravel()))
    if not np.isfinite(val.ravel()[k]):
        return None
    at = lambda key: float(np.broadcast_to(r[key], val.shape).ravel()[k])  # noqa: E731
    ip, ib = np.unravel_index(k, val.shape)[1:]
    dep = _dep(plan, inst, int(ip), int(ib), engine=engine, gpu=gpu)
    dep["batch"] = batch_binds(model, dep, gpu=gpu, cal=cal, prec=prec, slo=slo, engine=engine)
    return {"objective": float(val.ravel()[k]), "tok_s_per_user": at("tok_s_per_user"), "output_tok_s_per_gpu": at("output_tok_s_per_gpu"),
            "ttft_ms": 1e3 * at("ttft_s"), "tpot_ms": 1e3 * at("tpot_s"), "deployment": dep}


def batch_binds(model: ModelSpec, deployment: dict, *, gpu: Gpu, cal: Calibration, prec: Precision, slo: Slo,
                engine: Engine = TRTLLM) -> dict:
    """What stops a deployment's batch (`_dep`'s record) at its grid value: the next batch per attention-DP rank on
    BATCHES re-priced on the same plan. "floor": it misses the regime's floor (tok/s/user in the throughput regimes),
    which then caps the objective for every shape whose step time lets the same batch meet it; "memory": the KV cache
    or the engine's batch limit does not hold it (max_concurrency); "grid": the search's largest batch; None: the
    larger batch meets the floor and fits but scores less (the objective's own optimum)."""
    plan = Plan.from_dict(deployment)
    b = deployment["concurrency_per_instance"] // plan.adp
    ib = int(np.searchsorted(BATCHES, b))
    if ib + 1 >= len(BATCHES):
        return {"binds": "grid", "next_batch": None}
    nxt = int(BATCHES[ib + 1])
    _, cons, _, _ = REGIMES[slo.regime]
    floor = slo.min_tps_user if cons == "min_tps_user" else slo.min_tps_gpu
    metric = "tok_s_per_user" if cons == "min_tps_user" else "output_tok_s_per_gpu"
    r, ok = _priced(model, gpu, cal, prec, Plan(*(np.asarray([x]) for x in plan.sizes)), inst=np.asarray([deployment["instance_gpus"]]), slo=slo,
                    engine=engine, batches=(b, nxt))
    at = lambda key: float(np.broadcast_to(r[key], ok.shape)[0, 0, 1])  # noqa: E731  the next batch's
    out = {"next_batch": nxt * plan.adp, "next_" + metric: at(metric), "floor": floor, "max_concurrency": int(at("max_concurrency"))}
    if not (validity(model, gpu, plan, deployment["instance_gpus"]) < 0 and bool(np.ravel(r["fits"])[-1])):
        return out | {"binds": "memory"}
    return out | {"binds": "floor" if at(metric) < floor else None}


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


@dataclass(frozen=True)
class Reference:
    """What "equal quality" is judged against: a shape's proxy terms, and the rule (quality_delta)."""
    name: str
    basis: str
    model: ModelSpec
    terms: dict
    k: float  # a shape passes when its loss is at most k sigma_test (+ tol x the reference's loss) above this one's
    tol: float
    qc: dict | None = field(default=None, repr=False, compare=False)  # the constants the terms were drawn with
    pc: dict | None = field(default=None, repr=False, compare=False)
    # its training tokens (accuracy_model.training_tokens, as estimate prices it), every shape judged at them; None: the default
    tokens: float | None = None

    def to_dict(self) -> dict:
        m = self.model
        return {"name": self.name, "basis": self.basis, "shape": _spec_shape(m), "total_params": int(m.total_params),
                "active_params": int(m.active_params), "quality_proxy": float(self.terms["loss"]), "training_tokens": self.tokens,
                "rule": f"loss delta <= {self.k:g} x sigma_delta" + (f" + {self.tol:g} x the reference's loss" if self.tol else "")}


def _spec_shape(m: ModelSpec) -> dict:
    from llm_codesign.explore.envelope import row_of

    r = row_of(m)
    q = accuracy_model.query_width(m)
    return ({k: r[k] for k in ("hidden", "layers", "heads", "kv_heads", "head_dim", "experts", "top_k", "expert_inter") if k in r}
            | ({"q_ratio": _num(round(q, 6))} if q is not None else {}))


def reference(params: float, *, baseline: ModelSpec | None, moe: bool, weight_dtype: str, budget_tol: float, qc: dict, pc: dict,
              k: float = 1.0, tol: float = 0.0, active: float | None = None) -> Reference:
    """The baseline, or without one the published model of the search's kind (dense or MoE, full GQA attention)
    nearest the budget (total and, with `active`, active parameters): as it is when within the budget tolerance, else
    its shape scaled to the budget."""
    m, name, basis = reference_model(params, baseline=baseline, moe=moe, budget_tol=budget_tol, active=active)
    tok = accuracy_model.tokens_of(m)  # its quality proxy estimate's (newc11 #6); the shapes' delta to it does not move
    return Reference(name, basis, m, accuracy_model.model_terms(m, weight_dtype, c=qc, pc=pc, tokens=tok), k, tol, qc, pc, tokens=tok)


def judge(cand: dict, ref: Reference, *, weight_dtype: str, qc: dict, pc: dict, outside_envelope: bool, moe: bool = False,
          scale: float | None = None) -> dict:
    """Quality against the reference and place in the envelope, per shape, merged into the shape arrays
    ("q_*", "env_*" keys) with "admit": passes the quality test and lies inside (or the envelope is open). `scale`:
    the envelope every shape is judged at (a search's budget); None: each at its own total."""
    from llm_codesign.explore import envelope

    t = accuracy_model.shape_terms(cand, weight_dtype, qc, pc, ref_heads=accuracy_model.query_heads(ref.model), tokens=ref.tokens)
    qd = accuracy_model.quality_delta(t, ref.terms, k=ref.k, tol=ref.tol)
    n = len(cand["hidden"])
    # a search's rows at its budget's envelope, one for the search: judged each at its own total, rows 74.8B and 73.3B of
    # one 70B +-10% search met q/kv bounds 8 x1.5 and 16 x1.5 (qwen3-235b's 16 enters the window at ~74.5B); a dense
    # search's trunk bounds from the dense models (envelope.TRUNK_VARIABLES)
    f = envelope.shape_arrays(cand)
    viol = (envelope.violations_at(f, cand["total_params"], dense=not moe) if scale is None else
            envelope.violations(envelope.envelope_at(scale, dense=not moe), f))
    out = dict(cand)
    out["q_loss"] = np.broadcast_to(t["loss"], (n,)).astype(float)
    for key in ("delta", "sigma", "sigma_test", "passes", "resolved"):
        out[f"q_{key}"] = np.broadcast_to(qd[key], (n,))
    for key, v in qd["beyond"].items():
        out[f"qx_{key}"] = np.broadcast_to(v, (n,))
    for key, v in qd["beyond_scale"].items():  # the part of it beyond the scales the term was measured at
        out[f"qs_{key}"] = np.broadcast_to(v, (n,))
    for key, v in viol.items():
        out[f"env_{key}"] = np.broadcast_to(v, (n,))
    out["inside"] = ~np.any(np.stack([v > 0 for v in viol.values()]), axis=0) if viol else np.ones(n, dtype=bool)
    out["admit"] = out["q_passes"] & (out["inside"] | outside_envelope)
    return out


def quality_window(c: dict, ref: Reference, *, open_envelope: bool = False) -> dict | None:
    """The --quality-sigmas values that admit the same shapes as `ref.k` among judge()'s shapes the envelope lets through
    (every one with `open_envelope`, --outside-envelope): a shape with a test band (sigma_test > 0)
    passes from k = z = (delta - tol x the reference's loss) / sigma_test up, one without passes at every k or none, so
    the admitted set changes only at the banded shapes' z. {"k", "from", "to" (None: no banded shape beyond k), "shapes",
    "admitted", "no_band" and "no_band_admitted" (shapes k cannot move), "banded", "next": the first shape k would admit
    (its grid fields and z)}. An 8B search against llama-3.1-8b: every banded shape differs in KV heads, whose term
    (proxy.toml [kv_sharing], -0.22 +- 0.11 ln m per halving) needs z >= 2 less the budget's parameter credit (<= 0.1
    in ln N at +-10%), so 0 to 1.12 admit the same 90 shapes (modelling-notes #designG-small-budgets)."""
    seen = np.asarray(c["inside"], bool) | open_envelope
    if not seen.any():
        return None
    st, k = np.asarray(c["q_sigma_test"], float), float(ref.k)
    d = np.asarray(c["q_delta"], float) - ref.tol * float(ref.terms["loss"])
    band = seen & (st > 0)
    z = np.where(band, d / np.where(band, st, 1.0), np.nan)
    below, above = band & (z <= k), band & (z > k)
    nxt = int(np.argmin(np.where(above, z, np.inf))) if above.any() else None
    return {"k": k, "from": float(max(0.0, np.max(z[below]) if below.any() else 0.0)),
            "to": float(z[nxt]) if nxt is not None else None, "shapes": int(seen.sum()), "admitted": int((seen & c["q_passes"]).sum()),
            "no_band": int((seen & ~band).sum()), "no_band_admitted": int((seen & ~band & c["q_passes"]).sum()), "banded": int(band.sum()),
            "next": None if nxt is None else _shape_of(c, nxt) | {"z": float(z[nxt])}}


_SHAPE_KEYS = ("hidden", "layers", "heads", "kv_heads", "head_dim", "inter", "experts", "top_k", "expert_inter", "shared_inter")


def _shape_of(c: dict, i: int) -> dict:
    """Shape i of judge()'s arrays as the lines name it (render.design_lines.shape_label): its grid fields and query width."""
    return {key: int(c[key][i]) for key in _SHAPE_KEYS if key in c} | ({"q_ratio": _num(round(float(c["q_ratio"][i]), 6))} if "q_ratio" in c else {})


def _take(c: dict, idx) -> dict:
    return {k: v[idx] for k, v in c.items()}


def _cat(a: dict, b: dict) -> dict:
    return {k: np.concatenate([a[k], b[k]]) for k in a}


def q_ratios(ref: Reference) -> tuple[float, ...]:
    """The query widths design's grid holds: Llama's 1 and the reference's own (reference_q_ratio), so that the
    reference's layout and its neighbours are rows (a grid at 1 alone held no row of qwen3-32b's 1.6: 0 of 237 resolved)."""
    own = reference_q_ratio(ref.model)
    return (1.0,) if own is None or np.isclose(own, 1.0) else (1.0, own)


def _setup(params, baseline, moe, prec, *, budget_tol, quality_tol, quality_sigmas, outside_envelope, quality_file, proxy_file,
           active=None):
    """What both searches judge shapes by: the precision, the vocabulary, the reference, the envelope at the budget
    and judge()'s keywords."""
    from llm_codesign.explore.envelope import envelope_at

    if params <= 0:
        raise InputError("params", params, "a positive parameter budget, e.g. 70e9")
    prec = prec or (baseline.default_precision if baseline else Precision.of("bf16"))
    qc = quality.constants(quality_file)
    pc = accuracy_model.proxy_constants(proxy_file)  # the accuracy proxy's constants, a user's overrides on top
    ref = reference(params, baseline=baseline, moe=moe, weight_dtype=prec.weight.name, budget_tol=budget_tol, qc=qc, pc=pc,
                    k=quality_sigmas, tol=quality_tol, active=active)
    env = envelope_at(params, dense=not moe)
    jk = dict(ref=ref, weight_dtype=prec.weight.name, qc=qc, pc=pc, outside_envelope=outside_envelope, moe=moe, scale=float(params))
    return prec, (baseline.vocab if baseline else DEFAULT_VOCAB), ref, env, jk


def check_options(*, params, active_params=None, budget_tol=0.1, quality_tol=0.0, quality_sigmas=1.0, min_tps_user=20.0,
                  min_tps_gpu=50.0, num_gpus=8, isl=None, osl=None, max_candidates=20000, top=10) -> None:
    """design's numbers, each refused in one line before the shape grid (seconds) and the search (minutes): one check for
    `llm-codesign design` and llm_codesign.design (whose NaN budget reached the grid as a ValueError, 0 GPUs an IndexError)."""
    as_float("params", params, lo=1e6, hi=1e14, what="a total-parameter budget from 1e6 to 1e14, e.g. 70e9")
    if active_params is not None:
        as_float("active_params", active_params, lo=1e6, hi=1e14, what="an active-parameter budget from 1e6 to 1e14, e.g. 30e9")
    as_float("budget_tol", budget_tol, lo=0.0, hi=1.0, lo_open=True, what="a relative tolerance in (0, 1], e.g. 0.1")
    as_float("quality_tol", quality_tol, lo=0.0, hi=1.0, what="a relative tolerance in [0, 1], e.g. 0.002")
    as_float("quality_sigmas", quality_sigmas, lo=0.0, hi=10.0, what="a number of standard deviations in [0, 10], e.g. 1")
    as_float("min_tps_user", min_tps_user, lo=0.0, hi=1e7)
    as_float("min_tps_gpu", min_tps_gpu, lo=0.0, hi=1e9)
    as_int("num_gpus", num_gpus, hi=MAX_GPUS)  # as llm_codesign.design and the page name it (the CLI's --gpus is bounded first)
    for name, v in (("isl", isl), ("osl", osl)):
        if v is not None:
            as_int(name, v, hi=MAX_TOKENS)
    if osl is not None:  # every regime weighs tok/s/user (REGIMES: latency's objective, the others' floor)
        refuse_without_decode(osl, frontier="design, whose every regime weighs tok/s/user (latency's objective, the others' floor)")
    as_int("max_candidates", max_candidates, hi=MAX_CANDIDATES)
    as_int("top", top, hi=MAX_TOP)


def design(params: float, gpu: Gpu, cal: Calibration, num_gpus: int, slo: Slo, *, baseline: ModelSpec | None = None,
           moe: bool = False, prec: Precision | None = None, budget_tol: float = BUDGET_TOL, quality_tol: float = 0.0,
           quality_sigmas: float = 1.0, outside_envelope: bool = False,
           quality_file: str | None = None, engine: Engine = TRTLLM, max_candidates: int = 20000, top: int = 10,
           progress=None, chunk: int = 16, proxy_file: str | None = None, scheduler: str | None = None,
           workers: int | None = None, active_params: float | None = None, rank_all: bool = False) -> dict:
    """The `top` shapes at the budget ranked by the regime's objective, among those inside the published
    envelope (explore.envelope; `outside_envelope` opens it) whose proxy loss is no worse than the reference's
    beyond `quality_sigmas` of the difference's own uncertainty. A winner on an edge of the grid extends the
    grid past it, one step at a time, until it is interior or the edge is a real limit. The shape chunks run
    on the sweep executor (explore.sweep.execute): in-process by default, on Dask with `scheduler`."""
    t0 = time.perf_counter()
    if slo.regime not in REGIMES:
        raise InputError("regime", slo.regime, "one of: " + ", ".join(REGIMES))
    _check_active(active_params, params, moe)
    prec, vocab, ref, env, jk = _setup(params, baseline, moe, prec, budget_tol=budget_tol, quality_tol=quality_tol,
                                       quality_sigmas=quality_sigmas, outside_envelope=outside_envelope, quality_file=quality_file,
                                       proxy_file=proxy_file, active=active_params)
    prec = prec.on(gpu)  # an activation left to the GPU settled on it (MXFP4: W4A4 on CDNA4), so that the answer says what runs
    check_kv_format(engine, gpu, prec.kv.name)  # a KV-cache format the engine holds on this GPU, as estimate's
    check_runs(engine, gpu, prec=prec, moe=moe)  # and weights the engine has a kernel for here, as a Deployment refuses them
    axes = grid_axes(moe=moe, q_ratios=q_ratios(ref))
    grid = grid_rows(axes, moe=moe)
    allc = judge(in_budget(grid, params, budget_tol, vocab, active_params), **jk)
    screened = {"in_budget": int(len(allc["hidden"])), "inside_envelope": int(allc["inside"].sum()),
                "pass_quality": int(allc["q_passes"].sum()), "admitted": int(allc["admit"].sum()), "quality_limit": quality_window(allc, ref, open_envelope=outside_envelope)}
    cand = thin(_take(allc, allc["admit"]), max_candidates)
    screened["priced"] = int(len(cand["hidden"]))  # below "admitted" where max_candidates thinned them (an even spread)
    plan, inst = plans_for(num_gpus, gpu, moe=moe, long_context=slo.regime == "long-context")
    if not screened["in_budget"]:
        raise _none_in_budget(grid, params, budget_tol, vocab, moe=moe, active_params=active_params)
    if not len(cand["hidden"]):
        raise _none_admitted(allc, screened, params, ref, outside_envelope=outside_envelope, baseline=baseline, moe=moe)
    on = dict(gpu=gpu, cal=cal, prec=prec, plan=plan, inst=inst, slo=slo, engine=engine)  # what every shape is priced on
    pk = dict(on, vocab=vocab, moe=moe, chunk=chunk, num_gpus=num_gpus, scheduler=scheduler, workers=workers)
    obj, bplan, bbatch, evaluated = evaluate_shapes(cand, progress=progress, **pk)
    if not np.isfinite(obj).any():
        raise _nothing_meets(slo, len(obj), params, num_gpus, gpu)  # shapes fit (checked before the search), none meets the floor
    searched = len(obj)
    cand, obj, bplan, bbatch, ffn, more = _ffn_pass(cand, obj, bplan, bbatch, axes=axes, env=env, params=params, budget_tol=budget_tol,
                                                    active=active_params, judge_kw=jk, price_kw=pk)
    evaluated += more
    cand, obj, bplan, bbatch, grid, more = _extend_grid(cand, obj, bplan, bbatch, axes=axes, params=params, budget_tol=budget_tol, active=active_params,
                                                        judge_kw=jk, price_kw=pk, rank_all=rank_all)
    evaluated += more
    # what holds design 1 back, the row the report labels (ranked: resolved quality first, so not always the fastest)
    first = ranked(cand, obj, top=1, rank_all=rank_all)[0]
    if ffn:  # the pass's "best" is its fastest shape of any quality; design 1's ratio beside it (newc10 #9: 3.75 vs 7.5)
        ffn["design_1"] = _num(cand["ax_ffn_ratio"][first])
    binds, more = _binds(cand, obj, first=first, axes=axes, params=params,
                         budget_tol=budget_tol, active=active_params, judge_kw=jk, price_kw=pk, limits=grid["limits"])
    evaluated += more
    r = _result(cand, obj, best=(bplan, bbatch), evaluated=evaluated, baseline=baseline, ref=ref, moe=moe, params=params,
                num_gpus=num_gpus, top=top, t0=t0, rank_all=rank_all, **on)
    _add_batch_binds(r, vocab, baseline=baseline, ref=ref, gpu=gpu, cal=cal, prec=prec, slo=slo, engine=engine)
    r["candidates"] = searched  # the grid's shapes; the extensions' are counted under "grid"
    r |= {"screened": screened, "envelope": env.to_dict() | {"applied": not outside_envelope}, "grid": grid | {"ffn_pass": ffn}, "binds": binds,
          "active_params": active_params}
    return r


class ParamsValue(float):
    """A parameter budget as a refusal quotes it (errors.quoted: repr): 12e9 reads "12B", not "12000000000.0" (newc8
    #11); still the float, so a JSON error's value is the number given."""

    def __repr__(self) -> str:
        return f"{float(self) / 1e9:g}B"


def _none_admitted(allc: dict, screened: dict, params: float, ref, *, outside_envelope: bool, baseline: ModelSpec | None = None,
                   moe: bool = False) -> InputError:
    """Why no shape of the budget is admitted, the two tests apart: the envelope's count and the quality test's are of
    different shapes, not a funnel (judge: admit = q_passes & inside), so the refusal says that none passes both, and how
    far the nearest of each side lies from the other test: the best inside shape's loss against the reference's and the
    --quality-sigmas it needs (quality_delta: delta <= k x sigma_test + tol x the reference's loss), the bounds the best
    shape as good as the reference lies beyond (envelope.violations: log-distances)."""
    inside, passes = np.asarray(allc["inside"], bool), np.asarray(allc["q_passes"], bool)
    loss = float(ref.terms["loss"])
    need = (allc["q_delta"] - ref.tol * loss) / np.maximum(allc["q_sigma_test"], 1e-30)  # the k each shape passes at
    pool = np.ones_like(inside) if outside_envelope else inside
    said = [f"{screened['in_budget']:,} in the budget"]
    if not outside_envelope:
        said.append(f"{int(inside.sum()):,} inside the published envelope and {int(passes.sum()):,} as good as {ref.name}, none both")
    else:
        said.append(f"none as good as {ref.name} (the envelope open)")
    if pool.any():
        i = int(np.flatnonzero(pool)[np.argmin(need[pool])])
        said.append(f"the best{' inside' if not outside_envelope else ''} shape's loss is {100.0 * allc['q_delta'][i] / loss:+.2f}% over "
                    f"the reference's (it passes at --quality-sigmas {np.ceil(need[i] * 10.0) / 10.0:g})")
    if not outside_envelope and passes.any():
        keys = [k[4:] for k in allc if k.startswith("env_")]
        far = np.stack([np.asarray(allc[f"env_{k}"], float) for k in keys])
        j = int(np.flatnonzero(passes)[np.argmin(far[:, passes].sum(axis=0))])
        beyond = ", ".join(f"{k} x{np.exp(far[n, j]):.2f}" for n, k in enumerate(keys) if far[n, j] > 0)
        said.append(f"the nearest as good lies outside the envelope by {beyond}")
    said += _baseline_said(baseline, moe)  # why no shape of the grid can match it, and the search that has its FFN kind
    return InputError("params", ParamsValue(params), f"a budget and tolerances that admit at least one shape ({'; '.join(said)}): "
                      "raise --budget-tol or --quality-sigmas, or add --outside-envelope")


def _none_in_budget(grid, params, budget_tol, vocab, *, moe, active_params) -> InputError:
    """Why no shape of the grid is in the budget: the active budget where shapes hold the total, else the total the grid
    reaches (neither --quality-sigmas nor the envelope admits one)."""
    if active_params is not None and len(a := in_budget(grid, params, budget_tol, vocab)["active_params"]):
        return InputError("active_params", active_params, f"an active budget the MoE shapes of {params / 1e9:g}B total reach: "
                          f"{a.min() / 1e9:.3g}B to {a.max() / 1e9:.3g}B active (within --budget-tol {budget_tol:g} of them)")
    c = shapes(grid[0], vocab)
    n = c["total_params"][_well_formed(c)]
    return InputError("params", ParamsValue(params), f"a budget the {'MoE' if moe else 'dense'} shape grid reaches: its shapes hold "
                      f"{n.min() / 1e9:.3g}B to {n.max() / 1e9:,.0f}B parameters (within --budget-tol {budget_tol:g} of them)")


def _add_batch_binds(r: dict, vocab: int, *, baseline, ref, **priced_on) -> None:
    """What stops each row's batch one step up the grid (batch_binds), the baseline's and the reference's too: where the
    floor does, shapes that meet it at one batch score alike (moe30's design at 180B, FP8 KV on 8x B200: two shapes at
    14,524.8 tok/s/GPU, both at 751 per rank against 20 tok/s/user)."""
    for d in r["designs"]:
        d["deployment"]["batch"] = batch_binds(to_model(d, vocab), d["deployment"], **priced_on)
    for who, rec in ((baseline, r["baseline"]), (ref.model, r["reference"])):
        if rec and rec.get("objective") is not None:
            rec["deployment"]["batch"] = batch_binds(who, rec["deployment"], **priced_on)


def _check_active(active_params: float | None, params: float, moe: bool) -> None:
    """An active-parameter budget is a MoE search's, below its total budget."""
    if active_params is None:
        return
    if not moe:
        raise InputError("active_params", active_params, "a MoE search's budget (--moe): a dense shape's active parameters are its total")
    if not 0 < active_params < params:
        raise InputError("active_params", active_params, f"an active-parameter budget above 0 and below --params ({params / 1e9:g}B)")


def _next_value(axes: dict, axis: str, side: str):
    """The value one step past the grid's `side` edge on `axis`, or None where that edge is fixed or the least."""
    rule = EXTEND.get(axis)
    if rule is None:
        return None
    vals = axes[axis]
    kind, arg = rule
    if side == "max":
        return vals[-1] * 2 if kind == "x2" else vals[-1] + (vals[-1] - vals[-2] if len(vals) > 1 else vals[-1])
    nxt = vals[0] // 2 if kind == "x2" else vals[0] - (vals[1] - vals[0] if len(vals) > 1 else arg)
    return nxt if nxt >= arg else None


def _edges(c: dict, i: int, axes: dict) -> list[tuple[str, str]]:
    out = []
    for axis, vals in axes.items():
        if axis in NO_EDGE:
            continue
        v = c[f"ax_{axis}"][i]
        if len(vals) and np.isclose(v, vals[-1]):
            out.append((axis, "max"))
        if len(vals) and np.isclose(v, vals[0]):
            out.append((axis, "min"))
    return out


# the axes an extension slice keeps at the best rows' values (all but the axis it extends): the attention geometry and
# the MoE's expert layout; the trunk (hidden, layers) and the FFN widths move with the budget
LIKE_AXES = ("kv_heads", "head_dim", "q_ratio", "experts", "top_k", "shared")
LIKE_HIDDEN = 512  # and widths within this of the best rows' (4 dense grid steps, 2 MoE): the walk follows them (1024 found +27.0% on the 70B B200 throughput search, not +23.2%, at +42% CPU)


def _like(sl: dict, cand: dict, best: np.ndarray, axis: str, *, near_widths: bool = True) -> np.ndarray:
    """The slice's shapes whose LIKE_AXES values, `axis` aside, are those of one of the best rows: an extension prices
    what the best rows would become one step past the edge, not every attention layout there (a third of the CPU).
    `near_widths`: and widths within LIKE_HIDDEN of theirs (not for the FFN ratio's coarse pass, whose widths move)."""
    h = cand["hidden"][best]
    near = np.ones(len(sl["hidden"]), bool) if axis == "hidden" or not near_widths else \
        (sl["hidden"] >= h.min() - LIKE_HIDDEN) & (sl["hidden"] <= h.max() + LIKE_HIDDEN)
    keys = [f"ax_{k}" for k in LIKE_AXES if k != axis and f"ax_{k}" in sl]
    if not keys:
        return near
    mine = np.stack([sl[k] for k in keys], axis=1)
    theirs = np.unique(np.stack([cand[k][best] for k in keys], axis=1), axis=0)
    return near & (mine[:, None, :] == theirs[None, :, :]).all(axis=2).any(axis=1)


# The FFN ratio's coarse pass (dense searches): at a fixed budget a wider FFN buys fewer, wider-FFN layers, so the ratio
# moves the best width and depth together; the grid holds 2.5-4.5 and an extension walks one 0.25 step a round at the best
# rows' widths, so a better shape at another ratio and width (70B on 8 B200s, throughput: h6144 L66 at 7.5, +27.0%, against
# the h8192 row at 6.75, +23.2%) was never priced. The pass prices the envelope's whole FFN-ratio window at this step,
# at every width (the best rows' attention layouts), then the grid's own step around the best ratio.
FFN_COARSE = 1.0  # 4 grid steps: 5.5, 6.5, 7.5 above the grid at 70B (window 1.78-7.5)
FFN_FINE = 3  # grid steps (0.25) either side of the best ratio priced after it: the coarse step's points in between
FINE_TOP = 3  # the best rows whose layouts and widths (within LIKE_HIDDEN) the fine pass prices


def _ratio_window(env, axes: dict) -> tuple[float, float, float] | None:
    """The envelope's FFN-ratio window on the grid's step (its bounds rounded inward) and the step; None where the
    envelope has no FFN-ratio bound (a MoE search)."""
    b = env.bounds.get("ffn_ratio")
    if b is None:
        return None
    step = axis_step("ffn_ratio", moe=False)
    return float(np.ceil(b.lo / step - 1e-9) * step), float(np.floor(b.hi / step + 1e-9) * step), step


def _ffn_values(vals, lo: float, hi: float, *, centre: float | None = None, step: float = FFN_COARSE, count: int = 0) -> list[float]:
    """The FFN ratios a pass prices within [lo, hi] not in `vals` (already priced): every `step` from the grid's
    edges out to the window's (its edges included); with `centre`, `count` steps either side of it."""
    if centre is not None:
        out = [centre + k * step for k in range(-count, count + 1) if k]
    else:
        up = list(np.arange(max(vals) + step, hi + 1e-9, step))
        down = list(np.arange(min(vals) - step, lo - 1e-9, -step))
        out = up + ([hi] if max(vals) < hi and (not up or up[-1] < hi - 1e-9) else [])
        out += down + ([lo] if min(vals) > lo and (not down or down[-1] > lo + 1e-9) else [])
    have = np.asarray(vals, float)
    return sorted({round(float(v), 6) for v in out if lo - 1e-9 <= v <= hi + 1e-9 and not np.isclose(have, v).any()})


def _ffn_pass(cand, obj, bplan, bbatch, *, axes, env, params, budget_tol, judge_kw, price_kw, active=None):
    """The FFN ratio's coarse pass over the envelope's window, then the grid's step around the best ratio (FFN_COARSE);
    the ratio axis then spans every ratio priced. Returns the rows with the new ones, what the pass did and the
    deployments it priced."""
    win = _ratio_window(env, axes)
    if win is None or price_kw["moe"]:
        return cand, obj, bplan, bbatch, None, 0
    lo, hi, step = win
    done, evaluated, passes = list(axes["ffn_ratio"]), 0, {}
    for name in ("coarse", "fine"):
        # the coarse pass at the EXTEND_TOP best rows' layouts; the fine one at the FINE_TOP best's layouts and widths
        best = np.argsort(-np.where(np.isfinite(obj), obj, -np.inf), kind="stable")[:EXTEND_TOP if name == "coarse" else FINE_TOP]
        best = best[np.isfinite(obj[best])]
        vals = (_ffn_values(done, lo, hi) if name == "coarse" else
                _ffn_values(done, lo, hi, centre=float(cand["ax_ffn_ratio"][best[0]]), step=step, count=FFN_FINE))
        adm, n = _ffn_slice(vals, cand, best, coarse=name == "coarse", axes=axes, params=params, budget_tol=budget_tol,
                            judge_kw=judge_kw, price_kw=price_kw, active=active)
        passes[name] = {"ffn_ratio": [_num(v) for v in vals], "admitted": n, "priced": int(len(adm["hidden"]))}
        done += vals
        if len(adm["hidden"]):
            o, bp, bb, ev = evaluate_shapes(adm, **price_kw, check_fits=False)  # the first pass found shapes that fit
            cand, obj, bplan, bbatch = _cat(cand, adm), np.concatenate([obj, o]), np.concatenate([bplan, bp]), np.concatenate([bbatch, bb])
            evaluated += ev
    # the axis spans what was priced (at the grid's step), so the extensions and the neighbours (_binds) step from there
    a, b = min(done), max(done)
    axes["ffn_ratio"] = tuple(a + step * i for i in range(int(round((b - a) / step)) + 1))
    w = int(np.argmax(obj))
    info = {"window": [_num(lo), _num(hi)], "step": _num(FFN_COARSE), **passes, "best": _num(cand["ax_ffn_ratio"][w])}
    return cand, obj, bplan, bbatch, info, evaluated


def _ffn_slice(vals, cand, best, *, coarse: bool, axes, params, budget_tol, judge_kw, price_kw, active=None) -> tuple[dict, int]:
    """The admitted shapes at FFN ratios `vals` with one of the best rows' attention layouts (every width for the
    coarse pass; widths within LIKE_HIDDEN of theirs for the fine one), an even spread of at most EXTEND_SLICE per
    ratio; and how many were admitted."""
    if not vals:
        return {k: v[:0] for k, v in cand.items()}, 0
    moe, vocab = price_kw["moe"], price_kw["vocab"]
    sl = judge(in_budget(grid_rows({**axes, "ffn_ratio": tuple(vals)}, moe=moe), params, budget_tol, vocab, active), **judge_kw)
    like = sl["admit"] & _like(sl, cand, best, "ffn_ratio", near_widths=not coarse)
    parts = [thin(_take(sl, like & np.isclose(sl["ax_ffn_ratio"], v)), EXTEND_SLICE) for v in vals]
    return {k: np.concatenate([p[k] for p in parts]) for k in sl}, int(sl["admit"].sum())


def _why_not(sl: dict) -> dict:
    """Why a slice of shapes in the budget was not admitted: counts and the envelope bounds they break most."""
    n = len(sl["hidden"])
    out = {"in_budget": int(n), "outside_envelope": int((~sl["inside"]).sum()), "below_quality": int((~sl["q_passes"]).sum())}
    keys = [k for k in sl if k.startswith("env_")]
    hits = sorted(((int((sl[k] > 0).sum()), k[4:]) for k in keys), reverse=True)
    out["bounds"] = [b for cnt, b in hits if cnt == n and n] or [b for cnt, b in hits[:2] if cnt]
    return out


def _extend_grid(cand, obj, bplan, bbatch, *, axes, params, budget_tol, judge_kw, price_kw, active=None, rank_all=False):
    """Extends the grid past every edge the winner sits on, one step per round, pricing each new slice's
    admitted shapes, until the winner is interior or each edge it sits on is a real limit (no admitted shape
    one step past it: the budget, the envelope or quality; or a fixed axis). The limits it returns: design 1's
    (`ranked` with `rank_all`)."""
    moe, vocab = price_kw["moe"], price_kw["vocab"]
    extended, limits, evaluated = [], {}, 0
    for _ in range(EXTEND_ROUNDS):
        # every edge one of the EXTEND_TOP best sits on, not the winner's alone: a runner-up on an edge says the grid
        # stops where the objective still rises, whichever row the first pass happened to rank first (branch recon)
        best = np.argsort(-np.where(np.isfinite(obj), obj, -np.inf), kind="stable")[:EXTEND_TOP]
        best = best[np.isfinite(obj[best])]  # priced rows only: an unpriced one sets no edge and no layout (review rev12c #6)
        todo = list(dict.fromkeys(e for i in best for e in _edges(cand, int(i), axes) if e not in limits))
        if not todo:
            break
        added = 0
        for axis, side in todo:
            nxt = _next_value(axes, axis, side)
            if nxt is None:
                limits[(axis, side)] = {"axis": axis, "side": side, "value": _num(axes[axis][-1 if side == "max" else 0]),
                                        "why": "fixed: " + ("the fast attention kernels' head sizes (lint R4)" if axis == "head_dim"
                                                            else "the least value" if EXTEND.get(axis) else "on or off")}
                continue
            sl = judge(in_budget(grid_rows({**axes, axis: (nxt,)}, moe=moe), params, budget_tol, vocab, active), **judge_kw)
            like = sl["admit"] & _like(sl, cand, best, axis)
            # none like the best rows: the edge is still no limit while any shape past it is admitted (an even spread)
            adm = thin(_take(sl, like if like.any() else sl["admit"]), EXTEND_SLICE)
            step = {"axis": axis, "side": side, "to": _num(nxt), "admitted": int(len(adm["hidden"])), **_why_not(sl)}
            if not len(adm["hidden"]):
                limits[(axis, side)] = step | {"value": _num(axes[axis][-1 if side == "max" else 0]),
                                               "why": "no shape in the budget" if not step["in_budget"] else
                                               "every shape one step past it is outside the envelope or below the reference's quality"}
                continue
            axes[axis] = tuple(sorted((*axes[axis], nxt)))
            extended.append(step)
            o, bp, bb, ev = evaluate_shapes(adm, **price_kw)
            cand, obj, bplan, bbatch = _cat(cand, adm), np.concatenate([obj, o]), np.concatenate([bplan, bp]), np.concatenate([bbatch, bb])
            evaluated += ev
            added += len(o)
        if not added:
            break
    # the real limits design 1 sits on (ranked, as the report orders its rows: not always the fastest shape)
    w = ranked(cand, obj, top=1, rank_all=rank_all)[0]
    edges = [limits[e] for e in _edges(cand, w, axes) if e in limits]
    return cand, obj, bplan, bbatch, {"extended": extended, "limits": edges, "axes": {k: [_num(x) for x in (v[0], v[-1])] for k, v in axes.items()}}, evaluated


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() else x


def quality_why(delta: float, sigma: float, k: float) -> str:
    """Why a shape falls below the reference's quality: its proxy loss difference beyond k x the difference's
    sigma, or, where the sigma is 0 (no term the two differ in is uncertain), beyond the reference's with no band."""
    band = (f"beyond {k:g} x its sigma_delta {sigma:.2g}" if sigma > 0 else
            "above it, with no band (no term the two differ in has a stated uncertainty: sigma_delta is 0)")
    return f"proxy loss {delta:+.4f} against the reference's, {band}"


def _binds(cand, obj, *, first: int, axes, params, budget_tol, judge_kw, price_kw, limits, active=None) -> tuple[list[dict], int]:
    """Which constraints hold design 1 (`first`, cand's index of the top-ranked row: `ranked`) back: its neighbours one
    grid step along each axis that lie in the budget but were not admitted (outside the envelope, or below the
    reference's quality), priced; those that would beat it name the bound. Grid edges that are real limits come first.
    Design 1, not the fastest shape: with resolved quality ranked first the two differ, and the line read as design 1's
    while naming the fastest row's neighbours."""
    from llm_codesign.explore.envelope import describe, envelope_at, position, shape_arrays

    moe, vocab = price_kw["moe"], price_kw["vocab"]
    w = int(first)
    out = [{"kind": "grid edge", "axis": e["axis"], "side": e["side"], "value": e["value"], "why": e["why"],
            **({"bounds": e["bounds"]} if e.get("bounds") else {})} for e in limits]
    base = {a: cand[f"ax_{a}"][w] for a in axes}
    nb = []
    for axis, vals in axes.items():
        j = int(np.argmin(np.abs(np.asarray(vals, float) - base[axis])))
        for jj in (j - 1, j + 1):
            if 0 <= jj < len(vals):
                nb.append((axis, {**{a: (v,) for a, v in base.items()}, axis: (vals[jj],)}))
    if not nb:
        return out, 0
    sl = [judge(in_budget(grid_rows(g, moe=moe), params, budget_tol, vocab, active), **judge_kw) for _, g in nb]
    keep = [(axis, s) for (axis, _), s in zip(nb, sl, strict=True) if len(s["hidden"]) and not s["admit"][0]]
    if not keep:
        return out, 0
    c = {k: np.concatenate([s[k] for _, s in keep]) for k in keep[0][1]}
    o, _, _, ev = evaluate_shapes(c, **price_kw)
    cols = [k for k in SHAPE_COLUMNS if k in c and k in cand]
    for i, (axis, _) in enumerate(keep):
        # said only where the step changes design 1's shape (newc7 #13: "head_dim -> 128" beside rows that all had 128)
        if not (np.isfinite(o[i]) and o[i] > obj[w]) or all(c[k][i] == cand[k][w] for k in cols):
            continue
        gain = 100.0 * (o[i] / obj[w] - 1.0)
        what = {"axis": axis, "from": _num(base[axis]), "to": _num(c[f"ax_{axis}"][i]), "gain_pct": float(gain)}
        if not c["inside"][i]:
            pos = position(envelope_at(float(params), dense=not moe), shape_arrays(c), i)  # the search's envelope (judge)
            out.append({"kind": "envelope", **what, "bounds": [v["bound"] for v in pos["outside"]],
                        "why": "; ".join(describe(v) for v in pos["outside"])})
        if not c["q_passes"][i]:
            out.append({"kind": "quality", **what, "delta": float(c["q_delta"][i]), "sigma": float(c["q_sigma_test"][i]),
                        "why": quality_why(float(c["q_delta"][i]), float(c["q_sigma_test"][i]), judge_kw["ref"].k)})
    return out, ev


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


def evaluate_shapes(cand: dict, gpu, cal, prec, plan, *, inst, slo, vocab, moe, engine, progress=None, chunk=16,
                    num_gpus: int | None = None, scheduler: str | None = None, workers: int | None = None, check_fits: bool = True):
    """The SLO objective of every shape over every deployment (refused up front past MAX_DEPLOYMENTS), chunk by
    chunk on the sweep executor: (objective, best plan, best batch, deployments priced) per shape."""
    from functools import partial

    from llm_codesign.explore.sweep import execute

    n = len(cand["hidden"])
    num_gpus = num_gpus if num_gpus is not None else int(np.max(inst, initial=0))
    check_size(n, len(inst), num_gpus)
    if check_fits and n and not _fits_any(cand, gpu, cal, prec, plan, inst=inst, slo=slo, vocab=vocab, moe=moe, engine=engine):
        raise _nothing_fits(float(np.median(cand["total_params"])), prec, num_gpus, gpu)  # before minutes of search, not after
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
    return obj, bplan, bbatch, evaluated


def _quality_row(cand: dict, i: int, j: int, *, why: dict, f: dict, ref: Reference) -> dict:
    """Row i's quality against the reference (j: its place in `why`, accuracy_model.delta_terms of the ranked rows).
    sigma_delta (the test's band, each term's sigma at its studied edge: quality_delta's sigma_test) is the band the rows
    print and the test uses; "uncertainty" (quality_delta's sigma) adds what the test leaves out: flat terms' spread per
    e-fold and extrapolation. One key each (sigma / sigma_test, their old copies, are gone)."""
    bq = float(ref.terms["loss"])
    sd, ex = float(cand["q_sigma_test"][i]), sorted(k[3:] for k in cand if k.startswith("qx_") and cand[k][i] > 0)
    # q_width: flat everywhere (flat_range None), the KV-sharing term read at the reference's (accuracy_model._shape_arch)
    flat = [{"term": t, "value": float(np.exp(pos)), "reference": float(np.exp(np.ravel(ref.terms["position"][t][0])[0])),
             "flat_range": list(why["flat_range"][t]) if why["flat_range"][t] else None}
            for t, pos in (("aspect", np.log(f["aspect_ratio"][i])), ("head_dim", np.log(f["head_dim"][i])), ("q_width", np.log(cand["q_ratio"][i])))
            if t in why["flat"] and bool(why["flat"][t][j])]
    terms = sorted(({"term": t, "delta": float(v[j]), "delta_pct": 100.0 * float(v[j]) / bq}
                    for t, v in why["nats"].items() if abs(float(v[j])) > 1e-7), key=lambda x: -abs(x["delta"]))
    return {"loss": float(cand["q_loss"][i]), "delta": float(cand["q_delta"][i]), "delta_pct": 100.0 * float(cand["q_delta"][i]) / bq,
            "sigma_delta": sd, "sigma_delta_pct": 100.0 * sd / bq, "test_band_na": nil_band_why(100.0 * sd / bq, terms, flat),
            "uncertainty": float(cand["q_sigma"][i]), "uncertainty_pct": 100.0 * float(cand["q_sigma"][i]) / bq, "k": ref.k, "passes": bool(cand["q_passes"][i]),
            "resolved": bool(cand["q_resolved"][i]), "extrapolated": ex,
            # the terms applied beyond the scales their sources measured (in `extrapolated` too), with those scales
            "extrapolated_scale": [{"term": k[3:], "studied_params": list(ref.terms["scale"][k[3:]]["range"]), "at_params": float(cand["total_params"][i])}
                                   for k in sorted(cand) if k.startswith("qs_") and cand[k][i] > 0],
            # each term's part of the delta, largest first; a flat term's difference is the proxy's blind spot, not a 0
            "terms": terms, "flat": flat}


# what a nil test band is said as, per flat axis (accuracy_model.delta_terms' "flat"): the aspect ratio at the budget is depth
_NA_AXES = {"aspect": "depth", "head_dim": "head size", "q_width": "query width"}


def nil_band_why(sigma_delta_pct: float, terms: list[dict], flat: list[dict]) -> str | None:
    """Why a row that differs from the reference has no test band (sigma_delta under 0.005%, printed "0.00"), else None:
    it differs only in active parameters (the scaling law's own term, which accuracy_model.quality_delta takes as exact)
    or on axes the proxy is flat on (their spread enters the model error, err ±, not the test). h4096 L24 ffn22528
    against llama-3.1-8b read "-0.29±0.00", "better, exactly", with a model error of ±0.28% (newc9 #12)."""
    if round(sigma_delta_pct, 2) > 0 or not (terms or flat):  # a band to print, or the reference's own shape
        return None
    axes = [_NA_AXES[x["term"]] for x in flat]
    return f"{' and '.join(axes)} not in the proxy" if axes else "active parameters alone"


def _versus(cand: dict, i: int, *, ref: Reference, prec: Precision, moe: bool, ref_kv: float) -> dict:
    """Row i's parameters and KV-cache bytes per token against the reference's."""
    kv = kv_bytes_per_token(_model(cand, slice(i, i + 1), DEFAULT_VOCAB, moe=moe), prec)  # the vocabulary holds no KV
    return {"total_params_change_pct": 100.0 * (float(cand["total_params"][i]) / ref.model.total_params - 1.0),
            "active_params_change_pct": 100.0 * (float(cand["active_params"][i]) / ref.model.active_params - 1.0),
            "kv_bytes_per_token": kv, "reference_kv_bytes_per_token": ref_kv,
            "kv_change_pct": 100.0 * (kv / ref_kv - 1.0) if ref_kv else None}


def ranked(cand, obj, *, top: int, rank_all: bool = False) -> list[int]:
    """cand's indices of the `top` designs in the report's order: resolved rows first (accuracy_model.quality_delta), each
    set by the objective: a row whose quality the proxy cannot tell from the reference's ranks after every row whose
    quality it can (rank_all: by the objective alone); no row whose objective is not finite."""
    res = np.asarray(cand.get("q_resolved", np.ones(len(obj), bool)), bool)
    return [int(i) for i in np.lexsort((-obj, ~res | rank_all, ~np.isfinite(obj)))[:top] if np.isfinite(obj[i])]


def _result(cand, obj, *, best, evaluated, plan, inst, gpu, cal, prec, slo, baseline, ref, moe, params, num_gpus,
            engine, top, t0, rank_all=False) -> dict:
    """The ranked designs (`best`: each shape's best plan and batch), each with its quality against the
    reference and its place in the envelope, with the baseline's own value."""
    from llm_codesign.explore.envelope import envelope_at, position, shape_arrays

    bplan, bbatch = best
    base = None
    # the gain is over the baseline, else over the reference shape (the nearest published model) at the same SLO
    # on the plans of its own kind: a MoE baseline of a dense search priced without EP or attention DP read 359.8 tok/s/GPU
    # (moe30 on 8x B200, bf16) where its own plans give 5,141, and every design a +282% gain over it
    who = baseline if baseline is not None else ref.model
    bplans, binst = (plan, inst) if who.is_moe == moe else plans_for(num_gpus, gpu, moe=who.is_moe, long_context=slo.regime == "long-context")
    base_v, bp, bb, _ = objective(who, gpu, cal, prec, bplans, inst=binst, slo=slo, engine=engine)
    at = {"objective": float(base_v[0]) if np.isfinite(base_v[0]) else None, "deployment": _dep(bplans, binst, int(bp[0]), int(bb[0]), engine=engine, gpu=gpu)}
    if baseline is not None:
        base = {"name": baseline.name, "total_params": int(baseline.total_params), "active_params": int(baseline.active_params),
                "quality_proxy": float(ref.terms["loss"]), **at, "outside_grid": outside_grid(baseline), "is_moe": bool(baseline.is_moe),
                "hint": moe_hint(baseline, moe)}
    bo = at["objective"] or None
    f = shape_arrays(cand)
    env = envelope_at(float(params), dense=not moe)  # one envelope for the search, as judge() admits by
    res = np.asarray(cand.get("q_resolved", np.ones(len(obj), bool)), bool)
    rank = ranked(cand, obj, top=top, rank_all=rank_all)  # resolved rows first
    # why each row differs from the reference: the proxy's terms one by one (accuracy_model.delta_terms), with what
    # it costs in parameters and KV cache; the reference's terms at the search's weight format (Reference.terms)
    sub = {k: v[rank] for k, v in cand.items()}
    t = accuracy_model.shape_terms(sub, prec.weight.name, ref.qc, ref.pc, ref_heads=accuracy_model.query_heads(ref.model), tokens=ref.tokens)
    why = accuracy_model.delta_terms(t, ref.terms,
                                     active=sub["active_params"], ref_active=float(ref.model.active_params), c=ref.qc, pc=ref.pc) if rank else None
    ref_kv = kv_bytes_per_token(ref.model, prec)
    designs = []
    for j, i in enumerate(rank):
        shape = {k: int(cand[k][i]) for k in ("hidden", "layers", "heads", "kv_heads", "head_dim")} | {"q_ratio": _num(round(float(cand["q_ratio"][i]), 6))}
        if moe:
            shape.update({k: int(cand[k][i]) for k in ("experts", "top_k", "expert_inter", "shared_inter")})
        else:
            shape["inter"] = int(cand["inter"][i])
        quality_row = _quality_row(cand, i, j, why=why, f=f, ref=ref)
        versus = _versus(cand, i, ref=ref, prec=prec, moe=moe, ref_kv=ref_kv)
        designs.append({"shape": shape, "total_params": int(cand["total_params"][i]), "active_params": int(cand["active_params"][i]),
                        "quality_proxy": float(cand["q_loss"][i]), "quality": quality_row, "versus_reference": versus,
                        "envelope": position(env, f, int(i)),
                        "objective": float(obj[i]), "gain_pct": (100.0 * (obj[i] / bo - 1.0)) if bo else None,
                        "deployment": _dep(plan, inst, int(bplan[i]), int(bbatch[i]), engine=engine, gpu=gpu)})
    obj_name, cons, _, _ = REGIMES[slo.regime]
    return {"regime": slo.regime, "objective": obj_name, "constraint": {cons: slo.min_tps_user if cons == "min_tps_user" else slo.min_tps_gpu},
            "isl_osl": slo.lengths(), "gpu": gpu.id, "num_gpus": num_gpus, "precision": prec.label(), "params": params,
            "candidates": int(len(obj)), "evaluated": int(evaluated), "seconds": time.perf_counter() - t0,
            "baseline": base, "reference": ref.to_dict() | ({} if base else at) | {"kv_bytes_per_token": ref_kv}, "designs": designs,
            # none of the rows beats what they are measured against: said first (a 120B / 5B MoE search against
            # gpt-oss-120b listed -9.3%, -22.2%, ... as designs)
            "beats_reference": bool(bo) and any((d["gain_pct"] or 0.0) > 0 for d in designs),
            "resolved": _resolved(cand, obj, res, rank, bo), "rank_all": bool(rank_all)}


def _resolved(cand: dict, obj: np.ndarray, res: np.ndarray, rank: list[int], bo: float | None) -> dict:
    """The priced shapes whose equal quality the proxy resolves (err ± <= |loss| + ±test), over every one, not the rows
    shown (--rank-all's top rows may hold none of them): how many, the rows shown among them (1-based), whether one beats
    the reference, the best of them (its gain, shape and row, None where not shown) and the best unresolved gain, what the
    rows ranked after them would have headlined: said, so neither ranking hides the other (designG: --rank-all at 8B on
    one H100 shows ten unresolved rows, +67 to +83%, and the best resolved shape, +8.9%, on none of them)."""
    ok = np.isfinite(obj)
    gain = (lambda i: 100.0 * (float(obj[i]) / bo - 1.0)) if bo else (lambda i: None)  # noqa: E731
    best = int(np.argmax(np.where(res & ok, obj, -np.inf))) if (res & ok).any() else None
    fast = int(np.argmax(np.where(~res & ok, obj, -np.inf))) if (~res & ok).any() else None
    return {"shapes": int(res[ok].sum()), "of": int(ok.sum()), "rows": [j + 1 for j, i in enumerate(rank) if res[i]],
            "beats_reference": bool(bo) and bool((obj[res & ok] > bo).any()),
            "best_resolved_gain_pct": None if best is None else gain(best),
            "best_resolved_shape": None if best is None else _shape_of(cand, best),
            "best_resolved_row": rank.index(best) + 1 if best in rank else None,
            "best_unresolved_gain_pct": None if fast is None else gain(fast)}


def outside_grid(m: ModelSpec) -> list[str]:
    """The traits of a baseline no design row can take (the grid's shapes: full GQA attention in every layer, one FFN
    kind): gpt-oss-120b's sliding-window layers, MLA, chunked or recurrent mixers, mixed FFNs."""
    from llm_codesign.spec.kinds import MLA

    out = []
    attn = [layer.attn for layer, _ in m.groups]
    if any(isinstance(a, GQA) and a.window for a in attn):
        out.append("sliding-window attention layers")
    if any(isinstance(a, GQA) and a.attn_chunk for a in attn):
        out.append("chunked attention layers")
    if any(isinstance(a, MLA) for a in attn):
        out.append("MLA attention")
    if any(not isinstance(a, (GQA, MLA)) for a in attn):
        out.append("recurrent or other non-attention mixers")
    ffn = {type(layer.ffn) for layer, _ in m.groups}
    if len(ffn) > 1:
        out.append("dense and MoE FFN layers mixed")
    return out


def grid_said(name: str, traits: list[str]) -> str:
    """The sentence design says where a baseline has traits no row can take (outside_grid): after its rows, and in a
    refusal, where a MoE search against an MLA baseline dropped it (newc9 #10: "0 as good as dsv2l", with no word of why)."""
    return f"{name}'s {', '.join(traits)} are outside the shape grid (full GQA attention in every layer)"


def moe_hint(baseline: ModelSpec | None, moe: bool) -> str | None:
    """A MoE baseline in a dense search: the rows are dense shapes of the whole budget, reading every weight per token
    (DeepSeek-V2-Lite's 15.7B against its 2.4B active: -60% tok/s/GPU, newc9 #10); the search of its kind says so,
    at its active parameters (two significant figures, as one types them)."""
    if baseline is None or moe or not baseline.is_moe:
        return None
    return f"the baseline is MoE: --moe --active-params {baseline.active_params / 1e9:.2g}e9 searches MoE shapes"


def _baseline_said(baseline: ModelSpec | None, moe: bool) -> list[str]:
    """What a refusal adds of the baseline: its traits outside the grid, and the MoE search where it is MoE."""
    if baseline is None:
        return []
    traits = outside_grid(baseline)
    return ([grid_said(baseline.name, traits)] if traits else []) + ([h] if (h := moe_hint(baseline, moe)) else [])


def kv_bytes_per_token(m: ModelSpec, prec: Precision) -> float:
    """KV-cache bytes one token of context holds over every layer (each mixer's own values, at the KV format)."""
    return float(np.sum(m.kv_values_per_token())) * prec.kv.bytes_per_value()


def design_nsga2(params: float, gpu: Gpu, cal: Calibration, num_gpus: int, slo: Slo, *, baseline: ModelSpec | None = None,
                 moe: bool = False, prec: Precision | None = None, budget_tol: float = 0.1, quality_tol: float = 0.0,
                 quality_sigmas: float = 1.0, outside_envelope: bool = False,
                 quality_file: str | None = None, engine: Engine = TRTLLM, trials: int = 300, top: int = 10, seed: int = 0,
                 progress=None, proxy_file: str | None = None, active_params: float | None = None, rank_all: bool = False) -> dict:
    """Optuna NSGA-II over a continuous shape space too large to enumerate: two objectives (the SLO
    objective up, the quality proxy down) with the budget, the quality test against the reference (as `design`)
    and the envelope as constraints. Each trial prices one shape over every deployment through the same
    vectorised `objective`."""
    optuna = _import_optuna()
    t0 = time.perf_counter()
    if slo.regime not in REGIMES:
        raise InputError("regime", slo.regime, "one of: " + ", ".join(REGIMES))
    _check_active(active_params, params, moe)
    prec, vocab, ref, env, jk = _setup(params, baseline, moe, prec, budget_tol=budget_tol, quality_tol=quality_tol,
                                       quality_sigmas=quality_sigmas, outside_envelope=outside_envelope, quality_file=quality_file,
                                       proxy_file=proxy_file, active=active_params)
    prec = prec.on(gpu)  # as design's
    check_kv_format(engine, gpu, prec.kv.name)
    check_runs(engine, gpu, prec=prec, moe=moe)
    plan, inst = plans_for(num_gpus, gpu, moe=moe, long_context=slo.regime == "long-context")
    check_size(trials, len(inst), num_gpus, field="trials", flag="--trials")
    on = dict(gpu=gpu, cal=cal, prec=prec, plan=plan, inst=inst, slo=slo, engine=engine)  # what every shape is priced on
    seen: dict[tuple, tuple] = {}
    bq = float(ref.terms["loss"])
    qr = q_ratios(ref)
    hidden = _trial_widths(params, moe=moe, budget_tol=budget_tol, vocab=vocab, judge_kw=jk, active=active_params, q_ratios=qr)

    def run(trial):
        row = _trial_shape(trial, moe=moe, params=params, vocab=vocab, hidden=hidden, q_ratios=qr)
        c = judge(shapes(np.asarray([row], dtype=np.int64), vocab), **jk)
        ql = float(c["q_loss"][0])
        out = sum(float(c[k][0]) for k in c if k.startswith("env_"))
        # constraints <= 0 are feasible: budget, quality (as design's test), a well-formed head layout, the envelope
        # the budget: the total's and (--active-params) the active count's distance from theirs, the larger
        off = abs(float(c["active_params"][0]) / active_params - 1) if active_params is not None else 0.0
        cons = [max(abs(float(c["total_params"][0]) / params - 1), off) - budget_tol,
                float(c["q_delta"][0] - ref.k * c["q_sigma_test"][0]) / bq - ref.tol, 0.0 if _well_formed(c)[0] else 1.0,
                0.0 if outside_envelope else out]
        _constrain(trial, cons)
        v = -np.inf
        if max(cons) <= 0:
            v, bp, bb, _ = objective(_model(c, slice(None), vocab, moe=moe), gpu, cal, prec, plan, inst=inst, slo=slo, engine=engine)
            v = float(v[0])
            seen[row] = (c, v, int(bp[0]), int(bb[0]))
        if progress:
            progress(trial.number + 1, trials)
        return (v if np.isfinite(v) else 0.0), ql

    study = optuna.create_study(directions=["maximize", "minimize"], sampler=_nsga2_sampler(optuna, seed))
    study.optimize(run, n_trials=trials)
    if not seen:
        raise InputError("params", params, f"a budget and tolerances that admit a shape (no feasible one in {trials} trials"
                         + "".join(f"; {x}" for x in _baseline_said(baseline, moe)) + ")")
    r = _trials_result(list(seen.values()), vocab=vocab, baseline=baseline, ref=ref, moe=moe, params=params, num_gpus=num_gpus,
                       top=top, t0=t0, rank_all=rank_all, **on)
    r |= {"trials": trials, "envelope": env.to_dict() | {"applied": not outside_envelope}, "active_params": active_params}
    return r


def _trials_result(vals: list, *, vocab, baseline, ref, moe, params, num_gpus, top, t0, **on) -> dict:
    """design_nsga2's feasible trials (judged shape, objective, best plan and batch) ranked as `design` ranks its grid."""
    cand = {k: np.concatenate([x[0][k] for x in vals]) for k in vals[0][0]}
    obj, bplan, bbatch = (np.array([x[i] for x in vals]) for i in (1, 2, 3))
    if not np.isfinite(obj).any():
        fits = _fits_any(cand, on["gpu"], on["cal"], on["prec"], on["plan"], inst=on["inst"], slo=on["slo"], vocab=vocab, moe=moe,
                         engine=on["engine"])
        raise (_nothing_meets(on["slo"], len(obj), params, num_gpus, on["gpu"]) if fits
               else _nothing_fits(params, on["prec"], num_gpus, on["gpu"]))
    r = _result(cand, obj, best=(bplan, bbatch), evaluated=len(vals) * len(on["inst"]) * len(BATCHES), baseline=baseline, ref=ref,
                moe=moe, params=params, num_gpus=num_gpus, top=top, t0=t0, **on)
    _add_batch_binds(r, vocab, baseline=baseline, ref=ref, **{k: on[k] for k in ("gpu", "cal", "prec", "slo", "engine")})
    return r


def _trial_widths(params, *, moe, budget_tol, vocab, judge_kw, active=None, q_ratios=(1.0,)) -> tuple[int, int]:
    """The widths the grid's admitted shapes span (inside the envelope, as good as the reference): most random
    widths outside them leave a depth for the budget outside the envelope."""
    grid = judge(in_budget(grid_rows(grid_axes(moe=moe, q_ratios=q_ratios), moe=moe), params, budget_tol, vocab, active), **judge_kw)
    ok = grid["hidden"][grid["admit"]]
    return (int(ok.min()) // 128 * 128, -(-int(ok.max()) // 128) * 128) if len(ok) else (1024, 24576)


def _trial_shape(trial, *, moe: bool, params: float, vocab: int, hidden: tuple[int, int] = (1024, 24576), q_ratios=(1.0,)) -> tuple:
    """One NSGA-II trial's shape (a SHAPE_COLUMNS row): widths, heads and the query width (design's q_ratios) suggested
    (the width within `hidden`), the depth the one (even) layer count that comes nearest the budget, so the budget
    constraint mostly holds."""
    h = trial.suggest_int("hidden", hidden[0], hidden[1], step=128)
    hd = trial.suggest_categorical("head_dim", [64, 128, 256])
    kv = trial.suggest_categorical("kv_heads", [4, 8, 16])
    # the query width suggested only where the grid holds two (a one-value suggestion would move the sampler's stream)
    qr = float(trial.suggest_categorical("q_ratio", list(q_ratios)) if len(q_ratios) > 1 else q_ratios[0])
    # a well-formed head layout: heads a multiple of 8 and of the KV heads, q_ratio x hidden = heads x head size, the
    # hidden the nearest whole one to that (a ratio the hidden cannot meet exactly reads its own, heads x hd / hidden)
    unit = max(8, kv)
    heads = max(int(round(h * qr / hd / unit)) * unit, unit)
    h = int(round(heads * hd / qr))
    if moe:
        E = trial.suggest_categorical("experts", [32, 64, 128, 256, 512])
        k = trial.suggest_categorical("top_k", [1, 2, 4, 8])
        ei = max(int(round(trial.suggest_float("expert_ratio", 0.125, 1.0) * h / 128) * 128), 128)
        row = [h, 2, 0, kv, E, k, ei, trial.suggest_categorical("shared", [0, 1]) * ei, hd, heads]
    else:
        row = [h, 2, int(round(trial.suggest_float("ffn_ratio", 2.0, 5.0) * h / 256) * 256), kv, 0, 0, 0, 0, hd, heads]
    per = shapes(np.asarray([row], dtype=np.int64), vocab)
    per_layer = (float(per["total_params"][0]) - 2 * vocab * h) / 2
    row[1] = int(np.clip(round((params - 2 * vocab * h) / max(per_layer, 1.0) / 2) * 2, 2, 400))
    return tuple(row)


def _constrain(trial, cons: list) -> None:
    """A trial's constraints as the installed optuna takes them."""
    if hasattr(trial, "set_constraint"):  # optuna >= 5: one named constraint each
        for name, value in zip(("budget", "quality", "heads", "envelope"), cons, strict=True):
            trial.set_constraint(name, value)
    else:
        trial.set_user_attr("constraints", cons)


def _import_optuna():
    """optuna, the dist extra --search nsga2 runs on, or one line saying how to install it."""
    try:
        import optuna
    except ImportError:
        raise InputError("search", "nsga2", "the dist extra: pip install 'llm-codesign[dist]'") from None
    return optuna


def _nsga2_sampler(optuna, seed: int):
    # ERROR, not WARNING: optuna logs a trial that Ctrl-C interrupts as a warning with its traceback before
    # re-raising the KeyboardInterrupt, which the CLI turns into one line and exit 130
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if hasattr(optuna.trial.Trial, "set_constraint"):
        return optuna.samplers.NSGAIISampler(seed=seed)
    return optuna.samplers.NSGAIISampler(seed=seed, constraints_func=lambda t: t.user_attrs["constraints"])


def _dep(plan: Plan, inst, ip: int, ib: int, *, engine: Engine, gpu: Gpu) -> dict:
    """Deployment `ip` of `plan` at batch `ib` a rank, with the decode capture it was priced with (`cuda_graph_max_bs`):
    graphs padded up to its batch a rank where the engine's default capture misses it (explore.search.row_graphs; _priced's
    SEARCH_GRAPHS replays every batch), None where the default replays it, so that estimate at that capture prices the
    row's figure (leftS2)."""
    p = plan.at(ip)
    return {"plan": p.label(), "instance_gpus": int(inst[ip]), "tp": p.tp, "pp": p.pp, "ep": p.ep, "moe_tp": p.moe_tp,
            "attention_dp": p.adp, "kvp": p.kvp, "concurrency_per_instance": int(BATCHES[ib] * p.adp),
            "cuda_graph_max_bs": row_graphs(engine, int(BATCHES[ib]), gpu=gpu, plan=p)}


def to_model(d: dict, vocab: int, name: str = "design") -> ModelSpec:
    s = d["shape"]
    attn = GQA(heads=s["heads"], kv_heads=s["kv_heads"], head_dim=s["head_dim"], v_head_dim=s["head_dim"])
    ffn = (MoE(experts=s["experts"], top_k=s["top_k"], expert_inter=s["expert_inter"], shared_inter=s["shared_inter"]) if "experts" in s
           else DenseFfn(inter=s["inter"]))
    return ModelSpec(name, s["hidden"], vocab, ((Layer(attn, ffn), s["layers"]),))


# the baseline's fields that are not its shape: carried into the exported design as they stand, so the export changes
# the shape and nothing else (a 32768-token baseline once came back as 131072 from the Llama template below)
CARRIED = ("max_position_embeddings", "rope_theta", "rope_scaling", "vocab_size", "rms_norm_eps", "torch_dtype",
           "bos_token_id", "eos_token_id", "pad_token_id", "initializer_range")
# what the search priced and so the export keeps, said where the baseline differs: an untied head, gated SiLU, no
# attention bias (shapes()), the Llama / Qwen3-MoE layout
PRICED = ("model_type", "tie_word_embeddings", "hidden_act", "attention_bias")


def baseline_fields(base, raw: dict | None = None) -> dict:
    """The baseline's non-shape fields (CARRIED) to carry into an export: from its config.json as read (`raw`, a
    multimodal one's text_config), else its vocabulary alone (ModelSpec.max_context is the RoPE-scaled context, not
    max_position_embeddings: written as that, a YaRN baseline would be scaled twice)."""
    if base is None:
        return {}
    cfg = raw.get("text_config", raw) if isinstance(raw, dict) else {}
    out = {k: cfg[k] for k in CARRIED if cfg.get(k) is not None}
    out.setdefault("vocab_size", base.vocab)
    return out


def export_changes(cfg: dict, base, raw: dict | None = None) -> list[tuple[str, object, object]]:
    """(field, baseline's, export's) for each PRICED field the export sets otherwise than the baseline's config."""
    src = raw.get("text_config", raw) if isinstance(raw, dict) else {}
    was = {k: src.get(k) for k in PRICED}
    if base is not None and was["tie_word_embeddings"] is None:
        was["tie_word_embeddings"] = bool(base.tie_embeddings)
    return [(k, was[k], cfg.get(k, False)) for k in PRICED if was[k] is not None and was[k] != cfg.get(k, False)]


def hf_config(d: dict, vocab: int, carried: dict | None = None) -> dict:
    """A Hugging Face config.json for a design (Llama layout for dense, Qwen3-MoE layout for MoE); `carried`
    (baseline_fields) overrides the template's non-shape fields with the baseline's."""
    s = d["shape"]
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": s["hidden"], "num_hidden_layers": s["layers"],
           "num_attention_heads": s["heads"], "num_key_value_heads": s["kv_heads"], "head_dim": s["head_dim"], "vocab_size": vocab,
           "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 131072,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    cfg.update(carried or {})
    if "experts" in s:
        cfg.update({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_experts": s["experts"],
                    "num_experts_per_tok": s["top_k"], "moe_intermediate_size": s["expert_inter"], "intermediate_size": s["expert_inter"],
                    "shared_expert_intermediate_size": s["shared_inter"], "decoder_sparse_step": 1, "mlp_only_layers": []})
    else:
        cfg["intermediate_size"] = s["inter"]
    return cfg
