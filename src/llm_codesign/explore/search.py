"""Deployment search: enumerate every valid plan x batch x precision x speculation, evaluate them in
vectorised chunks, and keep the Pareto frontier of output tok/s/GPU versus tok/s/user."""
from __future__ import annotations

import contextlib
import itertools
import os
import time
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.errors import InputError
from llm_codesign.explore.frontier import Frontier, FrontierPoint
from llm_codesign.serve.aggregated import (
    Serving,
    default_capture,
    evaluate,
    evaluate_for,
    graph_misses,
    max_running,
    op_step_time,
    pdl_per_launch,
    read_only,
)
from llm_codesign.serve.invariants import check_values, weight_floor_s
from llm_codesign.spec.engines import TRTLLM, Engine, check_kv_format, check_runs
from llm_codesign.spec.engines.head_dims import check_head_dims
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL, DEFAULT_FLAGS, SchedulerFlags
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import (
    MAX_STEP_TOKENS,
    REASONS,
    Deployment,
    Plan,
    SpecDecoding,
    Workload,
    check_sizes,
    check_spec_model,
    checkpoint_precision,
    divisors,
    precision_for,
    precision_notes,
    quant_group,
    reason_text,
    validity,
)
from llm_codesign.spec.precision import Precision, get_dtype
from llm_codesign.spec.validation import as_float

CHUNK = 1 << 17  # deployments per vectorised pass: bounds peak memory (~60 ops x a few arrays each)
THREADED_CHUNK = 1 << 16  # the least a chunk holds to be priced beside others on threads
# sorted(set()), not np.unique: the same values, without numpy.ma's import (np.unique's) in every process
BATCHES = np.array(sorted({*range(1, 9), *np.round(np.geomspace(8, 16384, 48)).tolist()}), dtype=np.int64)


DRAFT_LENGTHS = (1, 2, 3, 4, 5)  # the draft lengths a search with speculation tries, beside none


@dataclass(frozen=True)
class SearchSpace:
    """What a search spans: plans on `num_gpus` GPUs (sizes None: every divisor), precisions,
    speculation's draft lengths, batches and step token budgets. `build` makes it from a pareto
    search's options, as the CLI, the Python API and the page give them."""
    num_gpus: int
    tp: tuple[int, ...] | None = None  # None: every divisor
    pp: tuple[int, ...] | None = None
    ep: tuple[int, ...] | None = None
    moe_tp: tuple[int, ...] | None = None
    adp: tuple[int, ...] | None = None
    kvp: tuple[int, ...] | None = None
    instance_gpus: tuple[int, ...] | None = None  # GPUs per model instance (replicas fill num_gpus)
    precisions: tuple[Precision, ...] = ()
    spec: SpecDecoding | None = None
    spec_ks: tuple[int, ...] = (0,)
    batches: tuple[int, ...] = field(default_factory=lambda: tuple(int(b) for b in BATCHES))
    # step token budgets (max_num_tokens, the chunked-prefill size) searched; empty: the one search() is given
    step_tokens: tuple[int, ...] = ()
    # the weight formats are the defaults' (searched_defaults), as `precisions` empty: a KV format alone named (build)
    default_weights: bool = field(default=False, compare=False)

    @classmethod
    def build(cls, model: ModelSpec, gpu: Gpu, *, num_gpus: int, instance_gpus: tuple[int, ...] | None = None, tp: int | None = None,
              pp: int | None = None, ep: int | None = None, moe_tp: int | None = None, attention_dp: int | None = None,
              kvp: int | None = None, weight_dtype: str | None = None, activation_dtype: str | None = None, kv_dtype: str | None = None,
              spec: SpecDecoding | None = None, draft_len: int | None = None, step_tokens: tuple[int, ...] = ()) -> "SearchSpace":
        """The space of `pareto` (the command, llm_codesign.pareto and the page's /api/pareto): a size
        given fixes it; a precision given fixes that part (parse_precisions: otherwise the
        checkpoint's own and the formats the GPU runs natively); with `spec`, no speculation and
        `draft_len` drafts, or every length of DRAFT_LENGTHS; `step_tokens` the budgets searched."""
        check_sizes(gpus=num_gpus, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp,
                    **{f"instance_gpus[{i}]": n for i, n in enumerate(instance_gpus or ())})
        check_sizes(MAX_STEP_TOKENS, **{f"step_tokens[{i}]": n for i, n in enumerate(step_tokens)})
        check_spec_model(model, spec)
        one = (lambda v: None if v is None else (v,))  # noqa: E731
        ks = (0,) if spec is None else (0, draft_len) if draft_len else (0, *DRAFT_LENGTHS)
        return cls(num_gpus, one(tp), one(pp), one(ep), one(moe_tp), one(attention_dp), one(kvp), instance_gpus=instance_gpus,
                   precisions=parse_precisions(weight_dtype, activation_dtype, kv_dtype, model, gpu), spec=spec, spec_ks=ks,
                   step_tokens=tuple(step_tokens), default_weights=weight_dtype is None)


def plans(model: ModelSpec, gpu: Gpu, space: SearchSpace, *, engine: Engine = TRTLLM) -> tuple[Plan, np.ndarray]:
    """Every valid plan (as arrays) that `engine` launches (Engine.runs_plans: not TensorRT-LLM's attention DP x TP) and its
    instance size; where the space's fixed sizes leave only plans the engine does not launch, its one-line refusal, and
    where they leave only plans whose shards split an INT checkpoint's quantization groups, that one (quant_groups)."""
    a = _plan_rows(model, space)
    plan = Plan(*(a[:, i] for i in range(6)))
    code = validity(model, gpu, plan, a[:, 6])
    ok = code < 0
    runs = engine.runs_plans(plan, moe=model.is_moe)
    if (ok & ~runs).any() and not (ok & runs).any():
        check_runs(engine, gpu, plan.at(int(np.argmax(ok & ~runs))), moe=model.is_moe)
    ok &= runs
    if not ok.any():
        grouped = code == REASONS.index("quant_groups")
        if grouped.any():
            raise InputError("deployment", plan.label(int(np.argmax(grouped))), reason_text(model, gpu, REASONS.index("quant_groups")))
        raise InputError("deployment", f"{space.num_gpus}x{gpu.id}", "no valid plan: the fixed parallel sizes do not divide this model's heads/experts/layers")
    a = a[ok]
    return Plan(*(a[:, i] for i in range(6))), a[:, 6]


def group_skips(model: ModelSpec, gpu: Gpu, space: SearchSpace) -> tuple[str, ...]:
    """The line a frontier says where plans were left out because their shards split the checkpoint's quantization groups
    (spec.plan.quant_group: vLLM refuses them at load), with how many; none where no plan was."""
    if not quant_group(model):
        return ()
    a = _plan_rows(model, space)
    code = validity(model, gpu, Plan(*(a[:, i] for i in range(6))), a[:, 6])
    n = int((code == REASONS.index("quant_groups")).sum())
    return (f"{n} plan{'s' if n != 1 else ''} left out: {reason_text(model, gpu, REASONS.index('quant_groups'))}",) if n else ()


def _plan_rows(model: ModelSpec, space: SearchSpace) -> np.ndarray:
    """The space's plans before validity: rows of (tp, pp, ep, moe_tp, adp, kvp, instance GPUs)."""
    N = space.num_gpus
    if N < 1:
        raise InputError("gpus", N, "a positive integer")
    inst = space.instance_gpus or tuple(d for d in divisors(N))
    rows = []
    for n in inst:
        if space.instance_gpus is None and N % n:
            continue
        ds = divisors(n)
        tps, pps, adps, kvps = ([x for x in ds if opt is None or x in opt] for opt in (space.tp, space.pp, space.adp, space.kvp))
        for tp, pp, adp, kvp in itertools.product(tps, pps, adps, kvps):
            if tp * pp * adp * kvp != n:
                continue
            stage = n // pp
            if model.is_moe:
                for ep in (x for x in ds if space.ep is None or x in space.ep):
                    if stage % ep == 0 and (space.moe_tp is None or stage // ep in space.moe_tp):
                        rows.append((tp, pp, ep, stage // ep, adp, kvp, n))
            elif adp == 1 and space.ep in (None, (1,)) and space.moe_tp in (None, (1,)):
                # dense models: attention DP inside an instance is the same as more replicas
                rows.append((tp, pp, 1, 1, adp, kvp, n))
    if not rows:
        raise InputError("gpus", N, "a GPU count that admits at least one plan with the fixed sizes")
    return np.asarray(rows, dtype=np.int64)


def default_precisions(model: ModelSpec, gpu: Gpu) -> tuple[Precision, ...]:
    """The checkpoint's own precision plus the lower-precision formats this GPU runs natively."""
    out = [model.default_precision]
    # a re-quantised format at the attention of the checkpoint it launches (checkpoint_precision: Maverick's FP8 is Meta's,
    # self_attn BF16; newc12 #1. deepseek-r1's NVFP4 keeps q_a/q_b/kv_a/kv_b BF16, o_proj NVFP4: priced per projection,
    # attn_in_weight, partial_attn_note says it)
    if gpu.supports("fp8"):
        out.append(checkpoint_precision(model, Precision.of("fp8", kv="fp8"), gpu))
    if "nvfp4" in gpu.fp4_formats:
        out.append(checkpoint_precision(model, Precision.of("nvfp4", kv="fp8"), gpu))
    elif "mxfp4" in gpu.fp4_formats:
        # an MXFP4 checkpoint runs as it states, not re-quantised W4A4: gpt-oss's clamped-SwiGLU experts on AITER's BF16
        # activations (the path SGLang's mxfp4.py _apply_aiter takes, sglang 0.5.23; FP8 or MXFP4 from 256 tokens on gfx950,
        # priced per step: cost.ffns.aiter_quantised_activation), its attention in BF16; it priced every layer W4A4 under the
        # checkpoint's score
        own = model.default_precision.weight.name == "mxfp4"
        out.append(replace(model.default_precision, kv=get_dtype("fp8", "kv_dtype")) if own
                   else checkpoint_precision(model, Precision.of("mxfp4", activation="mxfp4", kv="fp8"), gpu))  # AMD's: attention BF16 (MLA)
    uniq = []
    for p in out:
        if p not in uniq:
            uniq.append(p)
    return tuple(uniq)


def unmeasured_defaults(model: ModelSpec, gpu: Gpu) -> list[tuple[Precision, str]]:
    """The formats of default_precisions whose accuracy on this checkpoint nothing measures (explore.accuracy_model's
    drop_unmeasured: per-tensor FP8 of a block-FP8 checkpoint such as DeepSeek-R1's, lead 2026-12-07 #3), each with
    one line saying so and how to search it anyway (naming its weight format)."""
    from llm_codesign.explore.accuracy_model import accuracy_of

    out = []
    for p in default_precisions(model, gpu):
        why = accuracy_of(model, p).get("drop_unmeasured")
        if why:
            w = p.weight.name
            out.append((p, f"W {w} not searched: {why.split(';')[0]}, whose accuracy is unmeasured (not 0); --weight-dtype {w} "
                           f"(weight_dtype \"{w}\" in lc.pareto and the page) searches it"))
    return out


def searched_defaults(model: ModelSpec, gpu: Gpu, engine: Engine | None = None) -> tuple[Precision, ...]:
    """The precisions a search takes where no weight format is named: default_precisions (those `engine`, where given,
    has a kernel for on `gpu`: Engine.precision_refusal) less those whose accuracy nothing measures (unmeasured_defaults):
    a frontier of them would recommend, without a measured score behind it, a format a user of the checkpoint does not run
    (DeepSeek-R1's every H200 point at per-tensor FP8, +63% tok/s/GPU over its own block FP8, newc7 #3). In its place the
    checkpoint's own weights with its KV-cache format (FP8 KV: the cache format is a precision of its own, accuracy_model's
    KV term) where it runs them, so the search keeps the cache it offered. Every default where that leaves none (an NVFP4
    checkpoint on an H200 under TensorRT-LLM runs only the per-tensor FP8)."""
    def runs(p):
        return engine is None or engine.precision_refusal(p, gpu) is None

    defaults = [p for p in default_precisions(model, gpu) if runs(p)]
    left = {p: replace(model.default_precision, kv=p.kv) for p, _ in unmeasured_defaults(model, gpu)}
    kept = [left[p] if p in left else p for p in defaults if p not in left or runs(left[p])]
    return tuple(dict.fromkeys(kept or defaults)) or default_precisions(model, gpu)


def not_searched(model: ModelSpec, gpu: Gpu, space: SearchSpace, engine: Engine | None = None) -> tuple[str, ...]:
    """The lines a frontier says of the defaults searched_defaults left out (none where a weight format was named)."""
    if space.precisions and not space.default_weights:
        return ()
    kept = {p.weight.name for p in searched_defaults(model, gpu, engine)}
    return tuple(line for p, line in unmeasured_defaults(model, gpu) if p.weight.name not in kept)


def pareto_mask(x, y) -> np.ndarray:
    """Points not dominated (both objectives maximised); ties keep one representative."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    keep = np.zeros(len(x), dtype=bool)
    if len(x) == 0:
        return keep
    # O(n) pre-filter: bucket x; a point is dominated when a bucket of strictly larger x holds a
    # point with at least its y (then only the few survivors are sorted)
    lo, hi = float(np.min(x)), float(np.max(x))
    nb = 2048
    b = ((x - lo) * ((nb - 1) / (hi - lo)) if hi > lo else np.zeros_like(x)).astype(np.int64)
    bmax = np.full(nb, -np.inf)
    np.maximum.at(bmax, b, y)
    right = np.concatenate([np.maximum.accumulate(bmax[::-1])[::-1][1:], [-np.inf]])
    cand = y > right[b]
    idx = np.nonzero(cand)[0]
    order = idx[np.lexsort((-y[idx], -x[idx]))]  # x descending, then y descending
    ys = y[order]
    prev = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    keep[order] = ys > prev
    return keep


class _Grid(NamedTuple):
    """What a search spans: the plans (arrays) and the GPUs of each plan's instance, the batches per
    attention-DP rank, the draft lengths, the precisions and the step token budgets."""
    plan: Plan
    inst: np.ndarray
    batches: np.ndarray
    ks: np.ndarray
    precs: tuple
    budgets: tuple


def search(model: ModelSpec, gpu: Gpu, cal: Calibration, space: SearchSpace, *, isl: int, osl: int,
           engine: Engine = TRTLLM, max_num_tokens: int | None = None, min_tps_user: float | None = None,
           max_ttft_ms: float | None = None, progress=None, max_accuracy_drop: float | None = None, prefix_hit: float = 0.0,
           arrival: str = DEFAULT_ARRIVAL, launch: dict | None = None) -> Frontier:
    """Evaluate the whole space; return the frontier, each point with its deployment and accuracy, and the cloud.
    max_accuracy_drop (percent, against the model's best precision) keeps only the precisions known to be within it.
    prefix_hit: the share of each prompt already in the prefix cache, not prefilled (as estimate's Workload); `arrival`:
    how requests reach each deployment (spec.harness.ARRIVALS), its TTFT turns on it. `launch`: launch options every point
    states and is priced with (export's --cuda-graph-max-bs, --max-batch, --chunked-prefill: cuda_graph_max_bs, max_batch,
    chunked_prefill, as Deployment's; none given: the search's own, graphs padded to each point's batch)."""
    # an SLO that is NaN or negative filtered nothing, or everything, without a word
    if min_tps_user is not None:
        as_float("min_tps_user", min_tps_user, lo=0.0)
    if max_ttft_ms is not None:
        as_float("max_ttft_ms", max_ttft_ms, lo=0.0, lo_open=True)
    model.check_context(isl, osl)
    check_head_dims(model, engine.name, gpu)  # lint R4's error, as estimate refuses it
    workload = Workload(isl=isl, osl=osl, prefix_hit=prefix_hit, arrival=arrival)  # the frontier's (arrival checked here, before any search)
    t0 = time.perf_counter()
    plan, inst = plans(model, gpu, space, engine=engine)
    precs, accs = searched_precisions(model, gpu, space, engine=engine, max_accuracy_drop=max_accuracy_drop)
    ks = np.asarray(space.spec_ks if space.spec is not None else (0,), dtype=np.int64)
    grid = _Grid(plan, inst, np.asarray(space.batches, dtype=np.int64), ks, precs, tuple(space.step_tokens) or (max_num_tokens,))
    c, total = _evaluate_grid(model, gpu, cal, space, grid, isl=isl, osl=osl, engine=engine, prefix_hit=prefix_hit, arrival=workload.arrival,
                              progress=progress, launch=launch or {})
    sel, front = select_frontier(c, min_tps_user, max_ttft_ms)
    points = tuple(_point(model, gpu, space, grid, c=c, j=j, accs=accs, engine=engine, isl=isl, launch=launch or {}) for j in front)
    points = with_energy(model, cal, points, workload)
    return Frontier(model=model.name, gpu=gpu, num_gpus=space.num_gpus, workload=workload, min_gpus=min(space.instance_gpus or (0,)) or None,
                    backend=engine.name, points=points, evaluated=int(total), fitting=int(c["fits"].sum()), seconds=time.perf_counter() - t0,
                    cloud=thinned_cloud(c, sel), roofline_bound=roofline_bound(model, gpu, precs, space.num_gpus, accepted=max(
                        [space.spec.at(int(k)).accepted() for k in ks if k] if space.spec else [], default=1.0), context=isl + osl / 2.0),
                    reachable=reachable(c, min_tps_user, max_ttft_ms, precs) if not len(sel) else {},
                    not_searched=not_searched(model, gpu, space, engine) + group_skips(model, gpu, space))


def searched_precisions(model: ModelSpec, gpu: Gpu, space: SearchSpace, *, engine: Engine,
                        max_accuracy_drop: float | None = None) -> tuple:
    """The precisions searched (the space's, else the defaults), each settled on `gpu` (Precision.on: a space built
    from Precision.of("mxfp4") leaves its activation to the GPU), and the accuracy known of each, keeping only those
    within `max_accuracy_drop` percent where it is given. A KV-cache format `engine` does not hold on `gpu` is refused
    (check_kv_format: the defaults' BF16 and FP8 every engine holds where they are offered), and a format it has no
    kernel for there (Engine.precision_refusal) too where named, else left out."""
    from llm_codesign.explore.accuracy_model import accuracy_of

    precs = tuple(p.on(gpu) for p in space.precisions or searched_defaults(model, gpu, engine))
    for kv in dict.fromkeys(p.kv.name for p in precs):
        check_kv_format(engine, gpu, kv, model)
    # a format the engine has no kernel for on this GPU (TensorRT-LLM's FP8 on Ampere, NVFP4 before Blackwell): refused where
    # the space names it or leaves no other, else not searched (an NVFP4 checkpoint on an H100 is searched at the FP8 the GPU runs)
    runs = [p for p in precs if engine.precision_refusal(p, gpu, moe=model.is_moe) is None]
    if space.precisions or not runs:
        for p in precs:
            check_runs(engine, gpu, prec=p, moe=model.is_moe)
    precs = tuple(runs)
    accs = [accuracy_of(model, p) for p in precs]
    if max_accuracy_drop is not None:
        keep = [i for i, a in enumerate(accs) if a["relative_drop_pct"] is not None and not a.get("drop_band")
                and a["relative_drop_pct"] <= max_accuracy_drop]  # a proxy band's centre is not known to be within it
        if not keep:
            known = ", ".join(f"{p.weight.name}: " + ("unknown" if a["relative_drop_pct"] is None else f"{a['relative_drop_pct']:.2f}%")
                              for p, a in zip(precs, accs, strict=True))
            raise InputError("max_accuracy_drop", max_accuracy_drop, f"a drop that admits one precision of {model.name} ({known})")
        precs, accs = tuple(precs[i] for i in keep), [accs[i] for i in keep]
    return precs, accs


def _evaluate_grid(model: ModelSpec, gpu: Gpu, cal: Calibration, space: SearchSpace, grid: _Grid, *, isl, osl, engine: Engine,
                   prefix_hit, progress, arrival: str = DEFAULT_ARRIVAL, launch: dict | None = None) -> tuple[dict, int]:
    """Every deployment of the grid in vectorised chunks: the columns select_frontier reads (and each
    deployment's flat index, precision and budget), and how many were evaluated. Batches beyond what
    any plan of a chunk runs at once are judged by the memory fit alone (they fit none) and left out
    of the columns."""
    plan, batches, ks = grid.plan, grid.batches, grid.ks
    P, B, K = len(grid.inst), len(batches), len(ks)
    total = P * B * K * len(grid.precs) * len(grid.budgets)
    # broadcast as (plans, batches, draft lengths): per-plan quantities (GEMM N and K, weights) are
    # computed once per plan, only token-dependent terms at full size; chunks of up to CHUNK
    # deployments, or on several threads as many chunks as the threads share evenly
    groups = list(itertools.product(enumerate(grid.budgets), enumerate(grid.precs)))
    counts, workers = _chunking(P * B * K, len(groups), threads())
    jobs = []
    for ((bi, budget), (pi, prec)), m in zip(groups, counts, strict=True):
        step = max(1, CHUNK // (B * K)) if workers == 1 else -(-P // m)
        jobs += [(bi, budget, pi, prec, slice(s, min(s + step, P))) for s in range(0, P, step)]
    # on threads the largest chunks first, so that the last ones are the small ones the threads share
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][4].start - jobs[i][4].stop)

    err = np.geterr()  # numpy's floating-point error handling is per thread (a context variable): the caller's, on every thread

    def run(job) -> dict:
        bi, budget, pi, prec, sl = job
        sub = plan.take(np.s_[sl, None, None])
        spec, spec_k = (space.spec, ks[None, None, :]) if space.spec else (None, None)
        with np.errstate(**err):
            # batches past what the roomiest plan of the chunk runs at once fit none of them: not priced
            # each point with the CUDA graphs its export writes (padded up to its batch per rank, export_engines/trtllm.py; at
            # vLLM's max-num-seqs = the batch, file_capture), which its Deployment carries (_point): no batch runs eagerly
            at = Serving(gpu=gpu, prec=prec, plan=sub, engine=engine, spec=spec, spec_k=spec_k, max_num_tokens=budget,
                         **{"cuda_graph_max_bs": SEARCH_GRAPHS, **(launch or {})})
            held = _held_batches(model, at, batches=batches, ks=ks, launch=launch, isl=isl, osl=osl)
            at = replace(at, **file_capture(engine, batches[None, held, None], gpu=gpu, plan=sub, k=ks[None, None, :], launch=launch))
            r = evaluate(model, at, cal=cal, concurrency=batches[None, held, None] * np.asarray(sub.adp), isl=isl, osl=osl,
                         prefix_hit=prefix_hit, arrival=arrival)
        # each column over the (plans, batches priced, k) block, its elements' flat indices in the whole grid
        shape = (sl.stop - sl.start, len(held), K)
        # a draft length the engine launches on the plan's stages (Engine.runs_spec: SGLang's none under PP), as estimate's
        col = {"tok_s_per_user": r["tok_s_per_user"], "output_tok_s_per_gpu": r["output_tok_s_per_gpu"], "ttft_s": r["ttft_s"],
               "tpot_s": r["tpot_s"], "fits": r["fits"] & engine.runs_spec(np.asarray(sub.pp), ks[None, None, :])}
        idx = ((np.arange(sl.start, sl.stop)[:, None, None] * B + held[None, :, None]) * K + np.arange(K)[None, None, :]).reshape(-1)
        return {**{k: np.broadcast_to(v, shape).reshape(-1) for k, v in col.items()}, "idx": idx,
                "prec": np.full(idx.size, pi, dtype=np.int16), "budget": np.full(idx.size, bi, dtype=np.int16), "grid": (sl.stop - sl.start) * B * K}

    cols: dict[str, list] = {}
    done = 0
    parts: list = [None] * len(jobs)
    with _pool(workers) as pool:
        for i, part in zip(order, pool.map(run, [jobs[i] for i in order]), strict=True):
            done += part.pop("grid")
            parts[i] = part
            if progress:
                progress(done, total)
    for part in parts:  # in the jobs' order: the same columns, whatever the threads
        for k, v in part.items():
            cols.setdefault(k, []).append(v)
    return {k: np.concatenate(v) for k, v in cols.items()}, total


def _held_batches(model: ModelSpec, at: Serving, *, batches, ks, launch: dict | None, isl, osl) -> np.ndarray:
    """The indices of `batches` some plan of `at`'s chunk runs whole at the cap its file writes (file_capture: vLLM's
    max-num-seqs = the batch, which also sizes its sampler warm-up, memory.activation_bytes; above its default 1,024 too,
    Engine.batch_limit): the rest fit none of them and are not priced."""
    capped = file_capture(at.engine, batches[None, :, None], gpu=at.gpu, plan=at.plan, k=ks[None, None, :], launch=launch)
    most = max_running(model, replace(at, **{k: v for k, v in capped.items() if k == "max_batch"}), isl=isl, osl=osl)
    return np.nonzero(np.any(np.asarray(most) >= batches[None, :, None], axis=(0, 2)))[0]


def _chunking(size: int, groups: int, workers: int) -> tuple[list[int], int]:
    """The chunks each of `groups` (precision, step budget) groups of `size` deployments is cut into
    on `workers` threads, and the threads worth starting. The fewest chunks of at most 1.5 CHUNK
    deployments each, then one more chunk in one group after another until the threads share them
    evenly, largest first (no thread left alone with a last chunk: 6-11% faster than chunks of CHUNK
    on DeepSeek-R1 32-72 GPUs on two threads; halving every group instead cost one chunk's fixed
    Python per group). One thread where a chunk would hold under THREADED_CHUNK deployments, whose
    numpy calls are too short to overlap (the threads would only contend for the GIL); on one thread
    the caller cuts chunks of CHUNK deployments and reads no counts."""
    counts = [max(1, -(-size * 2 // (CHUNK * 3)))] * groups
    i = 0
    while workers > 1 and sum(counts) % workers:
        counts[i] += 1
        i = (i + 1) % groups
    if workers > 1 and size / max(counts) >= THREADED_CHUNK:
        return counts, workers
    return counts, 1


def threads() -> int:
    """Threads a search prices its chunks on: LLM_CODESIGN_THREADS, else the CPUs this process may
    run on, at most 4 (each holds a chunk's operators, ~190 MB for DeepSeek-R1 with MTP). numpy
    releases the GIL inside each array operation, so chunks overlap."""
    raw = os.environ.get("LLM_CODESIGN_THREADS")
    if raw is None or not raw.strip():
        return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1), 4))
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if not 1 <= n <= 256:
        raise InputError("LLM_CODESIGN_THREADS", raw, "an integer from 1 to 256 (threads a search runs on)")
    return n


@contextlib.contextmanager
def _pool(workers: int):
    """A thread pool's map, or the builtin map on one thread (no pool to start or join)."""
    if workers <= 1:
        yield types.SimpleNamespace(map=map)
        return
    from concurrent.futures import ThreadPoolExecutor  # here: its import (logging's too) is a search on one thread's 10 ms

    with ThreadPoolExecutor(workers, thread_name_prefix="llm-codesign-search") as ex:
        yield ex


def _point(model: ModelSpec, gpu: Gpu, space: SearchSpace, grid: _Grid, *, c: dict, j: int, accs: list, engine: Engine,
           isl: int = 0, launch: dict | None = None) -> FrontierPoint:
    """Frontier point `j` of the columns `c`: its deployment (its step token budget resolved, as a
    record rebuilds it), its metrics (checked against the serving invariants) and its precision's accuracy. An `isl`-token
    prompt over the engine's default budget where it schedules prompts whole by default (TensorRT-LLM) was priced chunked
    (spec.plan.states_whole_prompts): the record states chunked prefill on, so that it rebuilds, and launches, as priced."""
    from llm_codesign.explore.accuracy_model import point_accuracy

    B, K, plan = len(grid.batches), len(grid.ks), grid.plan
    ip, rest = divmod(int(c["idx"][j]), B * K)
    ib, ik = divmod(rest, K)
    sub = plan.at(ip)
    k = int(grid.ks[ik]) if space.spec else 0
    n_inst = int(grid.inst[ip])
    spec = space.spec.at(k) if space.spec and k else None
    budget = grid.budgets[int(c["budget"][j])]
    # the capture its export writes, padded up to its own batch per rank (newc6 #4: the record said 16384, the search's
    # largest); priced alike, as a capture at or above the batch misses no step (_frontier_priced prices them together)
    graphs = point_graphs(engine, int(grid.batches[ib]), gpu=gpu, plan=sub, k=k, largest=np.max(grid.batches))
    filed = {k_: _scalar(v) for k_, v in file_capture(engine, int(grid.batches[ib]), gpu=gpu, plan=sub, k=k, launch=launch).items()}
    one = Deployment(gpu=gpu, num_gpus=n_inst, plan=sub, precision=grid.precs[int(c["prec"][j])], backend=engine.name, spec=spec,
                     max_num_tokens=engine.launch_step_tokens(gpu, (launch or {}).get("chunked_prefill")) if budget is None else budget,
                     **{"cuda_graph_max_bs": graphs, **filed},
                     chunked_prefill=True if budget is None and not engine.chunks_prefill and isl / sub.kvp > engine.step_tokens(gpu) else None)
    if launch:  # the launch options the search priced every point with, stated as given (search's `launch`)
        one = replace(one, **launch)
    vals = {k: float(c[k][j]) for k in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_s", "tpot_s")}
    # the frontier is what leaves the search: guarded here, not the whole space (issue 20)
    check_values(f"pareto {model.name} {sub.label()} on {n_inst}x{gpu.id}", vals, floor_s=weight_floor_s(model, one),
                 accepted=spec.accepted() if spec else 1.0)
    return FrontierPoint(one, replicas=max(space.num_gpus // n_inst, 1) if space.num_gpus % n_inst == 0 else 1,
                         concurrency=int(grid.batches[ib] * sub.adp), **vals, accuracy=point_accuracy(accs[int(c["prec"][j])]),
                         notes=precision_notes(model, one))


# a search prices each deployment with the CUDA graphs the export of its point writes, padded up to the point's batch per
# rank (point_graphs): no batch it runs misses them, as with a capture of every batch
SEARCH_GRAPHS = float("inf")


def point_graphs(engine: Engine, batch: int, *, gpu: Gpu, plan: Plan, k=0.0, largest=None) -> int | None:
    """The capture a point states (Deployment.cuda_graph_max_bs), so that an estimate of it prices what the search did:
    graphs padded up to the point's own `batch` per rank where the engine's default capture on this GPU and `plan` misses
    some batch up to `largest` (the search's largest batch per rank, the same answer for every load of a plan, so that a
    frontier's points of one plan stay one deployment, search._frontier_priced; `batch` where not given) (TensorRT-LLM's
    gaps; SGLang's and vLLM's caps, serve.aggregated.default_capture), else None (the default, which captures them)."""
    top, padded = default_capture(engine, gpu, plan, k=k)
    need = batch if largest is None else largest
    return None if padded and bool(np.all(np.asarray(top, float) >= need)) else int(batch)


def row_graphs(engine: Engine, batch: int, *, gpu: Gpu, plan: Plan, k=0.0) -> int | None:
    """The capture one deployment at `batch` requests a rank states (a design row's): graphs padded up to `batch` where the
    engine's default capture on this GPU and `plan` does not replay that batch (serve.aggregated.graph_misses at the
    default flags: above TensorRT-LLM's 128 or in its unpadded gaps, above SGLang's and vLLM's caps), else None (the
    default's, which prices it alike). A frontier's points state point_graphs' instead: one capture for every load of a plan."""
    return int(batch) if bool(np.any(graph_misses(batch, DEFAULT_FLAGS, default_capture(engine, gpu, plan, k=k)))) else None


def file_capture(engine: Engine, batch, *, gpu: Gpu, plan: Plan, k=0.0, launch: dict | None = None) -> dict:
    """Where `engine` sizes its default capture from the batch cap its file writes (Engine.capture_from_batch_cap: vLLM's
    max_cudagraph_capture_size = min(2 x max_num_seqs x (1 + k), 512; 1,024 on Blackwell) tokens, spec.engines.vllm.
    graphs_default), the launch a point at `batch` requests a rank states, as its export writes it: max_batch, the cap
    (launch_batch: the `launch`'s where it states one, else the batch), and cuda_graph_max_bs NaN where the default at
    that cap captures the batch, else the batch (padded graphs, written_capture); arrays over `batch` and `k` (one pass
    over a search's grid). {} elsewhere, or where the launch states its capture. At a 512-token chunk the default's
    512-token capture ran each chunk as graph pieces where the file's max-num-seqs 241 captures 482 (crev11 #4)."""
    launch = launch or {}
    if not engine.capture_from_batch_cap or "cuda_graph_max_bs" in launch:
        return {}
    b = np.asarray(batch, float)
    cap = np.broadcast_to(np.asarray(launch.get("max_batch", b), float), b.shape)
    top, padded = default_capture(engine, gpu, plan, k=k, flags=SchedulerFlags(max_running_requests=cap))
    return {"max_batch": cap, "cuda_graph_max_bs": np.where(padded & (np.asarray(top, float) >= b), np.nan, b)}


def _scalar(v):
    """file_capture's value at one point as a Deployment states it: an int, None where NaN (the engine's default)."""
    v = float(np.asarray(v).reshape(-1)[0])
    return None if np.isnan(v) else int(v)


def with_capture(dep: Deployment, concurrency: int, *, instances: int = 1) -> Deployment:
    """`dep` with the decode capture its export writes at `concurrency` requests over `instances` instances (point_graphs
    at the batch per rank, ceil(ceil(C / instances) / attention-DP ranks), as the exporters' per_rank counts it), so that
    what export predicts is what its file runs: the engine's default where it captures that batch, else padded graphs up
    to it (an export at 600 requests wrote TensorRT-LLM's max_batch_size 600 but was priced eager, TPOT 129.5 against its
    import's 99.2 ms, review 2026-12-06). A capture `dep` states already is kept. One helper for export's fixed plan and
    its --prefill/--decode pools. The batch cap the file writes (launch_batch: vLLM's max-num-seqs, which sets vLLM's
    capture, min(2 x max_num_seqs, 512) tokens, spec.engines.vllm.graphs_default) is priced too: at 16 requests the
    default's 512-token capture held a 512-token chunk the file's 32 runs eager (TTFT 236 -> 254 ms, crev11 #4)."""
    from llm_codesign.explore.export_engines.base import per_rank

    rank = per_rank(concurrency, int(np.asarray(dep.plan.adp).reshape(-1)[0]), instances=instances)
    stated = {f: v for f in ("max_batch", "cuda_graph_max_bs") if (v := getattr(dep, f)) is not None}
    if filed := file_capture(dep.engine, rank, gpu=dep.gpu, plan=dep.plan, k=float(dep.draft_len), launch=stated):
        return replace(dep, **{f: _scalar(v) for f, v in filed.items()})  # the file's max-num-seqs and capture, as a search's point
    if dep.cuda_graph_max_bs is not None:
        return dep
    return replace(dep, cuda_graph_max_bs=point_graphs(dep.engine, rank, gpu=dep.gpu, plan=dep.plan, k=float(dep.draft_len)))


def capture_line(dep: Deployment, default: dict | None, file: dict | None = None) -> str | None:
    """What an export priced with the capture and batch cap it writes (with_capture) says beside estimate's answer at the
    same flags (`default`), which prices the engine's default launch; `file`: the export's own answer. Padded graphs:
    llama-3.1-70b on 4x H200 FP8 at 78 requests, TPOT 14.52 ms padded to 78 against 29.32 ms with TensorRT-LLM's default
    (1-32, 64, 128 unpadded: 78 decodes eager), the 2x crev10 #2 found unsaid. vLLM's max-num-seqs: besides its capture,
    a stated cap sizes the sampler's warm-up (max_num_seqs rows of logits, not the default 1,024), which frees KV cache
    (leftD): Llama-3.1-70B on 2 H100s, 2,048 / 1,024 at 16 requests, the file's 16 hold 12 sequences and give TTFT
    4,132 ms and 178 tok/s/GPU, estimate at the default 11, 7,486 ms and 165 (frev13), so both are said. None where the
    file's figures print as the default's: padding to the concurrency changes nothing where the batch that runs (the KV
    cache's 274 of 300 requests on SGLang's default 256, admitted ones sharing slots) decodes alike (frev10 #6)."""
    def shown(r, k):
        return None if r is None or r.get(k) is None else f"{r[k]:.2f}"

    keys = ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu")
    n = dep.cuda_graph_max_bs
    if default is not None and file is not None and all(shown(default, k) == shown(file, k) for k in (keys if n is None else keys[1:2])):
        return None
    if n is not None:
        was = "" if shown(default, "tpot_ms") is None else f"; estimate's default capture (without it): TPOT {default['tpot_ms']:.2f} ms"
        return f"priced with graphs padded to {n} a rank, as the file writes them (estimate --cuda-graph-max-bs {n}){was}"
    # vLLM's default capture at the max-num-seqs the file writes (with_capture, crev11 #4), and its sampler's warm-up
    own = int(dep.engine.max_batch(dep.gpu))
    was = "" if default is None else (
        f"; estimate at vLLM's default launch (max-num-seqs {own:,}): TTFT {default['ttft_ms']:.0f} ms"
        + ("" if default.get("tpot_ms") is None else f", TPOT {default['tpot_ms']:.2f} ms")
        + f", {default['output_tok_s_per_gpu']:.0f} tok/s/GPU" + (f", largest batch {default['max_batch']:,}" if "max_batch" in default else ""))
    kv = [((r or {}).get("memory") or {}).get("kv_gb", 0.0) for r in (default, file)]
    freed = (f", and its sampler's warm-up on {dep.max_batch} rows of logits, not {own:,}, leaves the KV cache "
             f"{kv[1]:.1f} GB a GPU, not {kv[0]:.1f}") if kv[1] > kv[0] else ""  # where the warm-up, not the budget's forward, sized the reserve
    return f"priced at the file's max-num-seqs {dep.max_batch} (estimate --max-batch {dep.max_batch}): vLLM's capture from it{freed}{was}"


# The plan search visits every (TP, PP, attention DP, KV-parallel[, EP]) factorisation of each
# instance size before pricing the valid ones: pareto --gpus 8-72 on a MoE model visits ~1.0e6 in
# ~5 s; 8-4096 would visit ~7e9 (35 s and 1.5 GB before the bound existed).
MAX_SEARCH_VISITS = 4_000_000


def _n_divisors(n: int) -> int:
    c, i = 0, 1
    while i * i <= n:
        if n % i == 0:
            c += 1 if i * i == n else 2
        i += 1
    return c


def search_visits(inst, n_gpus: int, free: int) -> tuple[int, int]:
    """(plan candidates the search visits, instance sizes) for instance sizes `inst` (None: the divisors of n_gpus) with
    `free` parallel sizes left to search, counted up to the first sum past MAX_SEARCH_VISITS."""
    sizes = list(inst) if inst else [d for d in range(1, int(n_gpus ** 0.5) + 1) if n_gpus % d == 0]
    if not inst:
        sizes += [n_gpus // d for d in sizes]
    visits = 0
    for n in sizes:
        visits += _n_divisors(n) ** free
        if visits > MAX_SEARCH_VISITS:
            break
    return visits, len(sizes)


def check_search_size(value, inst, n_gpus: int, *, fixed: int, free_ep: bool, field: str, narrow: str) -> None:
    """Refuses, before it starts, a search of more than MAX_SEARCH_VISITS plan candidates, in one line naming `field` (the
    CLI's gpus, the page's num_gpus) and what narrows it (`narrow`: the caller's words for fixing sizes). `fixed`: how many
    of TP, PP, attention DP and KV-parallel are fixed; `free_ep`: whether EP is searched too."""
    free = 4 - fixed + free_ep
    visits, n_sizes = search_visits(inst, n_gpus, free)
    if visits > MAX_SEARCH_VISITS:
        raise InputError(field, value, f"a search of at most {MAX_SEARCH_VISITS:,} plan candidates ({n_sizes:,} instance sizes "
                         f"with {free} free parallel sizes exceed it): narrow the range (e.g. 8-72) or {narrow}")


AUTO_BUDGETS = (1024, 2048, 4096, 8192, 16384)  # the chunk sizes engines default to across GPUs (Engine.step_tokens)


def budget_grid(grid: str | None, fixed: int | None = None) -> tuple[int, ...]:
    """The step token budgets a search covers, from `--max-num-tokens-grid`: none (the engine's default
    or the one fixed budget), a comma-separated list, or `auto`."""
    if grid is None:
        return ()
    if fixed is not None:
        raise InputError("max_num_tokens_grid", grid, "either --max-num-tokens or --max-num-tokens-grid, not both")
    if grid.strip().lower() == "auto":
        return AUTO_BUDGETS
    try:
        vals = sorted({int(x) for x in grid.split(",") if x.strip()})
    except ValueError:
        vals = []
    if not vals or vals[0] < 1 or vals[-1] > 1 << 24:
        raise InputError("max_num_tokens_grid", grid, "auto, or comma-separated token budgets from 1 to 16,777,216, e.g. 2048,8192")
    return tuple(vals)


def refuse_without_decode(osl: int, *, min_tps_user=None, frontier: str | bool = False, plot=None) -> None:
    """At OSL 1 (serve.metrics.no_decode) a request decodes nothing: refuses what needs a tok/s/user, each where asked:
    an SLO on it (`min_tps_user`), a frontier (pareto's and sweep's trade tok/s/GPU against it; `frontier` may name the
    command that needs one) and compare's chart (its x axis)."""
    from llm_codesign.serve.metrics import NO_DECODE_WHY, no_decode

    if not no_decode(osl):
        return
    if frontier:
        what = frontier if isinstance(frontier, str) else "a frontier, which trades tok/s/GPU against tok/s/user"
        raise InputError("osl", osl, f"at least 2 for {what}: at OSL 1 there is no tok/s/user ({NO_DECODE_WHY}); "
                                         "estimate and compare price OSL 1")
    if min_tps_user is not None:
        raise InputError("min_tps_user", min_tps_user, f"left out at OSL 1: there is no tok/s/user to hold ({NO_DECODE_WHY}); "
                                                       "--max-ttft-ms bounds the first token")
    if plot:
        raise InputError("plot", plot, f"left out at OSL 1: the chart's x axis is tok/s/user, and there is none ({NO_DECODE_WHY})")


def select_frontier(c: dict, min_tps_user: float | None, max_ttft_ms: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the deployments that fit and meet the SLOs, and of their Pareto frontier sorted by
    tok/s/user (columns: fits, tok_s_per_user, output_tok_s_per_gpu, ttft_s)."""
    ok = c["fits"].copy()
    if min_tps_user is not None:
        ok &= c["tok_s_per_user"] >= min_tps_user
    if max_ttft_ms is not None:
        ok &= c["ttft_s"] * 1e3 <= max_ttft_ms
    sel = np.nonzero(ok)[0]
    front = sel[pareto_mask(c["tok_s_per_user"][sel], c["output_tok_s_per_gpu"][sel])] if len(sel) else sel
    return sel, front[np.argsort(c["tok_s_per_user"][front])]


def reachable(c: dict, min_tps_user: float | None, max_ttft_ms: float | None, precs=()) -> dict:
    """The best each SLO given reaches over the deployments that fit (columns as select_frontier's), what the one
    line names when none meets them: the most tok/s/user (`tok_s_per_user`), the least TTFT (`ttft_ms`), and with both
    given the most tok/s/user within the TTFT (`tok_s_per_user_within_ttft`; absent where none is within it); and the
    precisions searched (`precisions`, their labels: the best depends on them)."""
    fits = np.asarray(c["fits"], bool)
    if not fits.any():
        return {}
    tps, ttft = np.asarray(c["tok_s_per_user"], float)[fits], np.asarray(c["ttft_s"], float)[fits] * 1e3
    out = {"precisions": [p.label() for p in precs]} if len(precs) else {}
    if min_tps_user is not None:
        out["tok_s_per_user"] = float(np.max(tps))
    if max_ttft_ms is not None:
        out["ttft_ms"] = float(np.min(ttft))
    if min_tps_user is not None and max_ttft_ms is not None and (ttft <= max_ttft_ms).any():
        out["tok_s_per_user_within_ttft"] = float(np.max(tps[ttft <= max_ttft_ms]))
    return out


def searched_what(results: list[dict]) -> str:
    """What searches (Frontier.to_dict()s) spanned, for a line on their fitting deployments: model on N x GPU, and where
    the SLOs filtered them all the precisions searched (reachable's `precisions`): export's SLO search spans one and
    pareto's the defaults, so their best figures differ (131.4 against 195.4 tok/s/user for 70B on 8 H200, review
    2026-12-06)."""
    what = ", ".join(sorted({f"{r['model']} on {r['num_gpus']}x {r['gpu']}" for r in results})) or "the combinations given"
    precs = list(dict.fromkeys(p for r in results for p in (r.get("reachable") or {}).get("precisions", ())))
    return what + (f" in {' or '.join(precs)}" if precs else "")


def slo_shortfall(results: list[dict], slo: dict) -> tuple[str, object, list[str], str] | None:
    """Where searches' fitting deployments (Frontier.to_dict()s' `fitting`) all miss the SLOs given (`slo`: min_tps_user,
    max_ttft_ms, None where not given): the field to name and its value, what each unmet SLO's best reaches over them
    (reachable; or, each met alone, the most tok/s/user within the TTFT) and the flags to loosen. None where none fits
    or no SLO is given."""
    fitting = sum(int(r.get("fitting", 0)) for r in results)
    given = {k: v for k, v in slo.items() if v is not None}
    if not (fitting and given):
        return None
    flags = " / ".join(f"--{k.replace('_', '-')}" for k in given)
    k, v = next(iter(given.items()))
    # the best each SLO reaches over the fitting deployments (reachable), so that the user knows how far to loosen it (it
    # said "loosen --min-tps-user" alone at 100,000 tok/s/user, ~195 reachable: newcomer review 2026-12-06)
    reach = [r.get("reachable") or {} for r in results]
    best = {m: f(x[m] for x in reach if m in x) for m, f in (("tok_s_per_user", max), ("ttft_ms", min),
                                                               ("tok_s_per_user_within_ttft", max)) if any(m in x for x in reach)}
    unmet = {}  # each SLO no deployment meets alone: the field the line names, with the best reached
    if "min_tps_user" in given and best.get("tok_s_per_user", np.inf) < given["min_tps_user"]:
        unmet["min_tps_user"] = f"the most any reaches is {best['tok_s_per_user']:,.1f} tok/s/user"
    if "max_ttft_ms" in given and best.get("ttft_ms", -np.inf) > given["max_ttft_ms"]:
        unmet["max_ttft_ms"] = f"the least TTFT any reaches is {best['ttft_ms']:,.1f} ms"
    said = list(unmet.values())
    if unmet:
        k = next(iter(unmet))
        v = given[k]
        flags = " / ".join(f"--{u.replace('_', '-')}" for u in unmet)
    elif "tok_s_per_user" in best and "ttft_ms" in best:  # each met alone, not both by one deployment
        said.append(f"each is met alone, not together: within {given['max_ttft_ms']:,g} ms TTFT the most any reaches is "
                    f"{best['tok_s_per_user_within_ttft']:,.1f} tok/s/user")
    return k, v, said, flags


def thinned_cloud(c: dict, sel: np.ndarray, most: int = 4000) -> dict:
    """A fixed-seed sample of the fitting deployments, for plots."""
    idx = sel if len(sel) <= most else sel[np.random.default_rng(0).choice(len(sel), most, replace=False)]
    return {"tok_s_per_user": c["tok_s_per_user"][idx].tolist(), "output_tok_s_per_gpu": c["output_tok_s_per_gpu"][idx].tolist()}


from llm_codesign.cost.roofline import ideal_step, weights_read  # noqa: E402, F401  (the cost layer's; weights_read re-exported)


def roofline_bound(model: ModelSpec, gpu: Gpu, precs, num_gpus: int, accepted: float = 1.0, *, context: float = 0.0) -> dict:
    """Ideal frontier at B requests in flight, each with `context` cached tokens (the workload's mean, isl + osl / 2, as
    the serving model prices its decode steps): a step >= max(weights and KV cache it reads / aggregate bandwidth,
    its FLOPs / aggregate peak) (cost.roofline.ideal_step), emitting up to `accepted` tokens per request (the
    best speculation searched; 1 without). MoE layers read only the experts B tokens pick (weights_read),
    so no deployment of the search lies above it. Over several precisions, the fastest at each B."""
    b = np.geomspace(1, 65536, 64)
    t = None
    for p in precs:
        tp = ideal_step(model, gpu, p, num_gpus, b, accepted=accepted, context=context)
        t = tp if t is None else np.minimum(t, tp)
    return {"tok_s_per_user": (accepted / t).tolist(), "output_tok_s_per_gpu": (accepted * b / t / num_gpus).tolist()}


def parse_precisions(weight: str | None, activation: str | None, kv: str | None, model: ModelSpec, gpu: Gpu):
    if weight is None and activation is None and kv is None:
        return ()
    if weight is None:  # the defaults' formats, less those nothing measures the accuracy of (searched_defaults)
        ws = sorted({p.weight.name for p in searched_defaults(model, gpu)})
    else:
        ws = [get_dtype(weight, "weight_dtype").name]
    kvs = [kv] if kv else ["bf16", "fp8"] if gpu.supports("fp8") else ["bf16"]
    # precision_for keeps what the checkpoint keeps wider when its own weight format is named; on this GPU, so that
    # a sweep's task records the activations it runs (MXFP4's: Precision.on)
    return tuple(precision_for(model, w, activation, k, gpu=gpu).on(gpu) for w in ws for k in kvs)


class _Priced(NamedTuple):
    """A group of a frontier's deployments priced together (_frontier_priced): evaluate_for's dict
    (read only) over their plans (rows) and loads (columns), the shape of that grid, each cell's point
    (a row's last load repeats to fill it; read only) and the group's PDL credit per launch."""
    r: Mapping
    shape: tuple
    cell: np.ndarray
    pdl: float


@lru_cache(maxsize=32)  # a comparison's frontiers: each priced for its energy, then again for its breakdowns
def _frontier_priced(model: ModelSpec, cal: Calibration, points: tuple, workload: Workload) -> tuple:
    """Each (deployment, concurrency) of `points` with its operators: the deployments that differ in
    their plan alone priced in one evaluation, their plans as rows and their loads as columns, as a
    search's grid prices them (elementwise: the same values bit for bit as pricing each deployment
    alone, tests/test_search.py); per point, (its group, its flat cell). DeepSeek-R1 on 32 GB200's 23
    frontier deployments: 2 evaluations, not 23 (0.31 -> 0.06 s)."""
    groups: dict[Serving, dict[Deployment, list[int]]] = {}
    for i, (dep, conc) in enumerate(points):
        # a capture at or above the point's batch per rank misses no step, as the search's largest batch (BATCHES) does, so
        # the points of one plan at their own captures (_point) still price in one evaluation; where the file's batch cap
        # sizes the capture (file_capture: vLLM's), each cell's cap and capture, as the search priced it
        cap, rank = dep.cuda_graph_max_bs, -(-int(conc) // int(np.asarray(dep.plan.adp).reshape(-1)[0]))
        cells = dep.engine.capture_from_batch_cap
        key = replace(Serving.of(dep), plan=Plan(), cuda_graph_max_bs=None if cells else int(BATCHES[-1]) if cap and cap >= rank else cap,
                      max_batch=None if cells else dep.max_batch)
        groups.setdefault(key, {}).setdefault(dep, []).append(i)  # a vLLM point's own row: its cap varies along the rows
    out: list = [None] * len(points)
    for at, deps in groups.items():
        width = max(len(idx) for idx in deps.values())
        cell = np.array([idx[min(j, len(idx) - 1)] for idx in deps.values() for j in range(width)]).reshape(len(deps), width)
        plan = Plan(*(np.array([d.plan.at(0).sizes[f] for d in deps], dtype=np.int64)[:, None] for f in range(6)))
        conc = np.array([points[i][1] for i in cell.reshape(-1)], dtype=np.int64).reshape(cell.shape)
        if at.engine.capture_from_batch_cap:  # each cell's cap and capture (inf, NaN where its point states none)
            at = replace(at, **{f: np.array([none if (v := getattr(points[i][0], f)) is None else float(v) for i in cell.reshape(-1)])
                                .reshape(cell.shape) for f, none in (("max_batch", np.inf), ("cuda_graph_max_bs", np.nan))})
        cell.flags.writeable = False  # held by the cache, as the evaluation is (read_only)
        r = read_only(evaluate_for(model, replace(at, plan=plan), workload, cal=cal, concurrency=conc))
        g = _Priced(r, cell.shape, cell, pdl_per_launch(at.gpu, at.engine.costs(cal)))
        for row, idx in enumerate(deps.values()):
            for j, i in enumerate(idx):
                out[i] = (g, row * width + j)
    return tuple(out)


def with_energy(model: ModelSpec, cal: Calibration, points: tuple, workload: Workload) -> tuple:
    """Each frontier point with its energy (serve.energy) charged to its own output tok/s per GPU: the
    points priced together (_frontier_priced)."""
    from llm_codesign.serve.energy import energy_of

    priced = _frontier_priced(model, cal, tuple((p.deployment, p.concurrency) for p in points), workload)
    energies: dict[int, dict] = {}  # per group (by id: the groups are held by `priced`), each energy array over its cells
    out = list(points)
    for i, (g, f) in enumerate(priced):
        if id(g) not in energies:
            tok = np.array([points[c].output_tok_s_per_gpu for c in g.cell.reshape(-1)]).reshape(g.shape)
            e = energy_of(g.r, points[i].deployment.gpu, g.pdl, tok)
            energies[id(g)] = {k: getattr(e, k) for k in ("tokens_per_joule", "tokens_per_joule_node", "tokens_per_joule_at_tdp", "gpu_w")}
        out[i] = replace(points[i], energy={k: None if v is None else float(np.broadcast_to(v, g.shape).reshape(-1)[f])
                                            for k, v in energies[id(g)].items()})
    return tuple(out)


def point_breakdown(model: ModelSpec, cal: Calibration, dep: Deployment, concurrency: int, *, isl: int, osl: int,
                    prefix_hit: float = 0.0) -> list[dict]:
    """Per-operator time (ms per step, one GPU) of a frontier point and the rest of its TPOT (point_breakdowns): one instance of `dep` with
    `concurrency` requests in flight, `prefix_hit` of each prompt found in the prefix cache (as the search's)."""
    return point_breakdowns(model, cal, [(dep, concurrency)], Workload(isl=isl, osl=osl, prefix_hit=prefix_hit))[0]


def point_breakdowns(model: ModelSpec, cal: Calibration, points: list[tuple[Deployment, int]], workload: Workload) -> list[list[dict]]:
    """`point_breakdown` of many (deployment, concurrency) points serving `workload` (a frontier's own,
    its prefix hits with it: Frontier.workload), priced together (_frontier_priced: a frontier's, priced
    for its energy already, are not priced again): the operator rows (op_rows), then the rest of the decode step and of
    TPOT (serve.estimate.step_rows), each row with `tpot_ms`, its share of TPOT, which they sum to."""
    from llm_codesign.serve.estimate import step_rows

    priced = _frontier_priced(model, cal, tuple((dep, int(c)) for dep, c in points), workload)
    out = []
    for (dep, _), (g, f) in zip(points, priced, strict=True):
        ops = op_rows(g.r["ops"], at=f, n=g.shape, pdl_per_launch=g.pdl)
        # the rest of the step and of TPOT, as estimate's breakdown has them (serve.estimate.step_rows): each row's share of TPOT
        per_token, rest = step_rows(g.r, dep, dep.engine.costs(cal), op_sum=sum(x["time_ms"] for x in ops) / 1e3, at=f, n=g.shape)
        out.append([x | {"tpot_ms": x["time_ms"] * per_token} for x in ops] + [o.to_dict() for o in rest if o.phase == "decode"])
    return out


def op_rows(ops, prefix: str = "", *, at: int = 0, n: int | tuple = 1, pdl_per_launch: float = 0.0) -> list[dict]:
    """Operators that take time, slowest first: name, kind and ms per step on one GPU (of point `at`,
    a flat index where the operators were priced for `n` points at once, a count or a shape), as the
    step prices them (op_step_time: less what programmatic dependent launch saves, `pdl_per_launch` s per launch)."""
    rows = [{"name": prefix + op.name, "kind": op.kind,
             "time_ms": float(np.broadcast_to(op_step_time(op, pdl_per_launch), n).reshape(-1)[at]) * 1e3} for op in ops]
    return sorted((x for x in rows if x["time_ms"] > 0), key=lambda x: -x["time_ms"])
