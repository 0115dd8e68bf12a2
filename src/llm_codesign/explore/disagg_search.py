"""The disaggregated frontier: every pair of prefill and decode plans, instance counts, decode batches
and draft lengths on a GPU count, priced with the pools of `serve.disagg` and reduced to the Pareto
frontier of output tok/s/GPU versus tok/s/user."""
from __future__ import annotations

import time
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.errors import InputError
from llm_codesign.explore.frontier import DisaggPoint, Frontier
from llm_codesign.explore.search import (
    SEARCH_GRAPHS,
    file_capture,
    not_searched,
    op_rows,
    plans,
    point_graphs,
    reachable,
    roofline_bound,
    searched_precisions,
    select_frontier,
    thinned_cloud,
)
from llm_codesign.serve.aggregated import cost_overlaps, decode_step, pdl_per_launch
from llm_codesign.serve.disagg import decode_pool, first_token, kv_hand_off, prefill_pool
from llm_codesign.spec.engines import TRTLLM, Engine, EngineCosts, check_runs
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan, Workload, precision_notes
from llm_codesign.spec.precision import Precision


class _Units(NamedTuple):
    """Units of n_p prefill and n_d decode instances whose GPUs divide the total: each unit's prefill
    and decode plan (indices into the plans), n_p, n_d and its GPUs."""
    ip: np.ndarray
    id_: np.ndarray
    npp: np.ndarray
    ndd: np.ndarray
    U: np.ndarray


def search_disagg(model: ModelSpec, gpu: Gpu, cal: Calibration, space, *, isl: int, osl: int, engine: Engine = TRTLLM,
                  max_num_tokens: int | None = None, min_tps_user: float | None = None, max_ttft_ms: float | None = None,
                  max_instances: int = 4) -> Frontier:
    """The disaggregated frontier on space.num_gpus GPUs: units of n_p prefill and n_d decode
    instances (1..max_instances each, of any valid plans, the unit's GPUs dividing the total;
    replicas of the unit fill it) at every decode batch and draft length. Each pool is priced once
    per plan (and batch); the units combine them in closed form."""
    t0 = time.perf_counter()
    N = space.num_gpus
    plan, inst = plans(model, gpu, space, engine=engine)
    costs = engine.costs(cal)
    precs, accs = searched_precisions(model, gpu, space, engine=engine)
    ks = np.asarray(space.spec_ks if space.spec is not None else (0,), dtype=np.int64)
    B, K = len(space.batches), len(ks)
    g = inst.astype(float)
    units = _units(g, N, max_instances)
    cols = {k: [] for k in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_s", "tpot_s", "unit", "batch", "k", "prec", "fits")}
    for pi, prec in enumerate(precs):
        priced = _price_units(model, gpu, prec, plan, costs=costs, units=units, g=g, space=space, ks=ks, lengths=(isl, osl),
                              max_num_tokens=max_num_tokens)
        for key, v in priced.items():
            cols[key].append(v)
        m_i, b_i, k_i = np.meshgrid(np.arange(len(units.U)), np.arange(B), np.arange(K), indexing="ij")
        cols["unit"].append(m_i.reshape(-1))
        cols["batch"].append(b_i.reshape(-1))
        cols["k"].append(k_i.reshape(-1))
        cols["prec"].append(np.full(m_i.size, pi))
    c = {k: np.concatenate(v) for k, v in cols.items()}
    sel, front = select_frontier(c, min_tps_user, max_ttft_ms)
    pool = dict(gpu=gpu, backend=engine.name, max_num_tokens=max_num_tokens)
    points = tuple(_with_energy(model, cal, _point(space, c, j, plan=plan, units=units, g=g, ks=ks, precs=(precs, accs), pool=pool),
                                isl=isl, osl=osl) for j in front)
    return Frontier(model=model.name, gpu=gpu, num_gpus=N, workload=Workload(isl=isl, osl=osl), backend=engine.name, points=points,
                    evaluated=int(len(c["fits"])), fitting=int(c["fits"].sum()), seconds=time.perf_counter() - t0,
                    cloud=thinned_cloud(c, sel), roofline_bound=roofline_bound(model, gpu, precs, N, context=isl + osl / 2.0), mode="disaggregated",
                    reachable=reachable(c, min_tps_user, max_ttft_ms, precs) if not len(sel) else {},
                    not_searched=not_searched(model, gpu, space, engine))


def _units(g: np.ndarray, N: int, max_instances: int) -> _Units:
    """Every (prefill plan, decode plan, n_p, n_d) whose GPUs (`g` per plan's instance) divide N."""
    P = len(g)
    ip, id_, npp, ndd = (a.reshape(-1) for a in np.meshgrid(np.arange(P), np.arange(P), np.arange(1, max_instances + 1),
                                                             np.arange(1, max_instances + 1), indexing="ij"))
    U = npp * g[ip] + ndd * g[id_]
    keep = (U <= N) & (N % np.maximum(U, 1) == 0)
    if not len(U[keep]):
        raise InputError("gpus", N, "a GPU count that holds at least one prefill and one decode instance")
    return _Units(ip[keep], id_[keep], npp[keep], ndd[keep], U[keep])


def _price_units(model: ModelSpec, gpu: Gpu, prec: Precision, plan: Plan, *, costs: EngineCosts, units: _Units, g, space, ks,
                 lengths, max_num_tokens) -> dict:
    """One precision's columns over (units, batches, draft lengths), flat: each pool priced once per
    plan (the decode pool per batch and draft length), the units combined in closed form."""
    isl, osl = lengths
    spec, batches = space.spec, np.asarray(space.batches, dtype=np.int64)
    ip, id_, npp, ndd, U = units
    P, B, K = len(g), len(batches), len(ks)
    sizes = np.stack(plan.arrays(), axis=1)  # (P, 6): tp, pp, ep, moe_tp, adp, kvp
    adp = sizes[:, 4].astype(float)
    pf = prefill_pool(model, gpu, prec, plan, costs=costs, isl=isl, max_num_tokens=max_num_tokens)
    # the decode workers' batch cap as each point's file writes it (vLLM's max-num-seqs = the batch a rank, explore.search.
    # file_capture), which sizes their sampler warm-up (memory.activation_bytes) as its import prices it
    sub = plan.take(np.s_[:, None, None])
    filed = file_capture(costs.engine, batches[None, :, None], gpu=gpu, plan=sub, k=ks[None, None, :])
    dec = decode_pool(model, gpu, prec, sub, costs=costs,
                      per_instance=batches[None, :, None] * adp[:, None, None], isl=isl, osl=osl, spec=spec,
                      spec_k=ks[None, None, :] if spec is not None else None, max_num_tokens=max_num_tokens,
                      cuda_graph_max_bs=SEARCH_GRAPHS, max_batch=filed.get("max_batch"))  # captured up to each point's batch, as its export writes (_point)
    tpot = np.broadcast_to(dec["tpot"], (P, B, K))[id_]  # (M, B, K)
    C = batches[None, :, None] * adp[id_, None, None] * ndd[:, None, None]
    base = (pf["t_alone"] - pf["t_idle"])[ip][:, None, None]  # first_token adds the idle extra where an arrival finds the pool idle
    t_kv = kv_hand_off(model, gpu, costs.cal, prec, isl, prefill_gpus=g[ip], total_gpus=U, decode_plan=plan.take(id_))[:, None, None]
    t_dec = np.broadcast_to(dec["t_stage"], (P, B, K))[id_] * sizes[id_, 1, None, None]  # one decode iteration
    decode_time = max(osl - 1, 0) * tpot
    pre = {k: pf[k][ip, None, None] for k in ("per_instance", "t_step", "queue_s", "t_alone", "t_loaded", "t_idle", "adp", "at_random")}
    rate, ttft, *_ = first_token(C, base, t_kv, t_decode_step=t_dec, decode_time=decode_time, prefill=pre, n_p=npp[:, None, None],
                                   on_arrival=costs.engine.first_token_on_kv_arrival, front=costs.ttft_overhead,
                                   overlaps=cost_overlaps(costs.engine, DEFAULT_ARRIVAL))
    fits = np.broadcast_to(dec["fits"], (P, B, K))[id_] & pf["fits"][ip, None, None]
    shape = (len(U), B, K)
    return {"tok_s_per_user": np.broadcast_to(1.0 / tpot, shape).reshape(-1),
            "output_tok_s_per_gpu": np.broadcast_to(rate * osl / U[:, None, None], shape).reshape(-1),
            "ttft_s": np.broadcast_to(ttft, shape).reshape(-1), "tpot_s": np.broadcast_to(tpot, shape).reshape(-1),
            "fits": np.broadcast_to(fits, shape).reshape(-1)}


def _point(space, c: dict, j: int, *, plan: Plan, units: _Units, g, ks, precs, pool: dict) -> DisaggPoint:
    """Frontier point `j` of the columns `c`: its metrics and its unit: one instance of each pool (its
    GPU, plan, precision, engine and step budget; the decode pool's speculation at the point's draft
    length), the instances of each, the requests in flight per unit and its precision's accuracy, as the
    aggregated frontier's points carry it (`precs`: the precisions and their accuracy, explore.search.searched_precisions)."""
    from llm_codesign.explore.accuracy_model import point_accuracy

    spec, batches = space.spec, np.asarray(space.batches, dtype=np.int64)
    adp = np.asarray(plan.adp, float)
    ip, id_, npp, ndd, U = units
    u, b, kk = int(c["unit"][j]), int(c["batch"][j]), int(c["k"][j])
    prec, acc = (x[int(c["prec"][j])] for x in precs)
    k = int(ks[kk]) if spec is not None else 0
    pre = Deployment(num_gpus=int(g[ip[u]]), plan=plan.at(ip[u]), precision=prec, **pool)
    # the decode workers' capture where the engine's default misses a batch of the grid (explore.search.point_graphs), padded
    # up to the point's own batch per rank as an aggregated point's (search._point; the record said 16384, the grid's
    # largest): the search priced every batch captured (SEARCH_GRAPHS), and a capture at the batch misses no step either
    de = Deployment(num_gpus=int(g[id_[u]]), plan=plan.at(id_[u]), precision=prec, spec=spec.at(k) if spec is not None and k else None, **pool)
    de = replace(de, cuda_graph_max_bs=point_graphs(de.engine, int(batches[b]), gpu=de.gpu, plan=de.plan, k=float(k), largest=np.max(batches)))
    return DisaggPoint(pre, de, prefill_instances=int(npp[u]), decode_instances=int(ndd[u]), replicas=space.num_gpus // int(U[u]),
                       concurrency=int(batches[b] * adp[id_[u]] * ndd[u]), accuracy=point_accuracy(acc),
                       **{m: float(c[m][j]) for m in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_s", "tpot_s")})


def _with_energy(model: ModelSpec, cal: Calibration, p: DisaggPoint, *, isl: int, osl: int) -> DisaggPoint:
    """The point with its unit's energy (serve.energy.disagg_energy) charged to its output tok/s per GPU."""
    from llm_codesign.serve.energy import disagg_energy

    e = disagg_energy(model, p.prefill, p.decode, calibration=cal, prefill_instances=p.prefill_instances, decode_instances=p.decode_instances,
                      concurrency=p.concurrency, isl=isl, osl=osl, output_tok_s_per_gpu=p.output_tok_s_per_gpu)
    return replace(p, energy={k: e[k] for k in ("tokens_per_joule", "tokens_per_joule_node", "tokens_per_joule_at_tdp", "gpu_w")},
                   notes=precision_notes(model, p.decode))  # estimate's notes, the model's (frev #6)


def decode_breakdown(model: ModelSpec, cal: Calibration, point: DisaggPoint, *, isl: int, osl: int) -> list[dict]:
    """Per-operator time (ms per step, one GPU) of a disaggregated point's decode instance, priced
    from its Deployment, each row with `tpot_ms`, its share of the point's TPOT: the decode pool's per-token factor
    from its own sums (TPOT / the rows' step sum), so that the rows sum to the disaggregated TPOT (the report's
    breakdown table reads it). The pool's parts beyond its operators (host, draft) are not priced apart here: each
    operator carries its share of them."""
    dep = point.decode
    _, pp, _, _, adp, _ = dep.plan.sizes
    per_rank = point.concurrency / point.decode_instances / adp / pp
    k = np.asarray(float(dep.spec.k if dep.spec else 0))
    costs = dep.engine.costs(cal)
    ops = decode_step(model, dep.gpu, dep.precision, dep.plan.broadcast(), costs=costs, b=per_rank, ctx=isl + osl / 2.0, k=k, spec=dep.spec)[2]
    rows = op_rows(ops, "decode/", pdl_per_launch=pdl_per_launch(dep.gpu, costs))
    per_token = point.tpot_s / (sum(x["time_ms"] for x in rows) / 1e3)
    return [x | {"tpot_ms": x["time_ms"] * per_token} for x in rows]


def price_pools(model: ModelSpec, gpu: Gpu, *, prefill: Plan | str, decode: Plan | str, decode_gpu: Gpu | None = None,
                precision: Precision, engine: str | None = None, spec=None, max_num_tokens: int | None = None,
                decode_max_num_tokens: int | None = None, prefill_instances: int = 1, decode_instances: int = 1,
                concurrencies=(1, 8, 32, 128, 512), isl: int = 1024, osl: int = 1024, decode_max_batch: int | None = None,
                arrival: str = DEFAULT_ARRIVAL, prefill_routing: str | None = None, decode_recv_interval: int = 1, decode_moe_a2a: str = "",
                calibration=None, decode_cuda_graph_max_bs: int | None = None, decode_piecewise_graphs: bool = False,
                chunked_prefill: bool | None = None):
    """One disaggregated deployment over `concurrencies`: one instance of each pool built from its plan (`tp=4,ep=4`
    text, as `disagg --prefill/--decode` takes it, or a Plan) on its GPU (`decode_gpu`: the decode pool's where it
    differs), one engine on both (spec.engines.engine_for_pools), priced by serve.disagg.estimate_disagg and each row
    banded with its metrics' 80% and 95% intervals (measure.intervals.band_disagg_rows). The one code path of `disagg`,
    `lc.disagg` and the page's disaggregated estimate. `calibration`: a profile's path, a Calibration or None;
    `decode_cuda_graph_max_bs` the decode workers' padded CUDA-graph capture per rank (None: the engine's default; 0: off),
    `decode_piecewise_graphs` whether they replay vLLM's piecewise graphs (Deployment.piecewise_graphs); `chunked_prefill` both
    pools' launch option (Deployment.chunked_prefill; None: the engine's default), the prefill pool's priced."""
    from llm_codesign.spec.engines import engine_for_pools, get_engine

    dg = decode_gpu or gpu
    one = dict(precision=precision, backend=engine_for_pools(gpu, dg, engine).name, spec=spec)
    notes = _engine_notes(gpu, dg, engine, one["backend"])
    plans_ = [p if isinstance(p, Plan) else Plan.parse(p, model, name) for name, p in (("prefill", prefill), ("decode", decode))]
    # the prefill pool's speculation as its engine launches it on the pool's stages (Engine.prefill_spec: SGLang's prefill
    # nodes take PP with MTP, without a priced draft)
    pre = dict(one, spec=get_engine(one["backend"]).prefill_spec(int(np.max(plans_[0].pp)), spec))
    if spec is not None and pre["spec"] is None:
        notes.append(f"prefill pool {plans_[0].label()} with {spec.method}: {get_engine(one['backend']).title} launches it on its "
                     "prefill-only servers alone (disaggregation-mode prefill, from 0.5.23); no prefill pool's draft is priced")
    pools = (Deployment(gpu=gpu, num_gpus=int(plans_[0].gpus), plan=plans_[0], max_num_tokens=max_num_tokens, chunked_prefill=chunked_prefill, **pre),
             Deployment(gpu=dg, num_gpus=int(plans_[1].gpus), plan=plans_[1], max_num_tokens=decode_max_num_tokens or max_num_tokens,
                        cuda_graph_max_bs=decode_cuda_graph_max_bs, piecewise_graphs=decode_piecewise_graphs, chunked_prefill=chunked_prefill, **one))
    for d in pools:  # a format whose MoE kernel the engine lacks on either pool's GPU, as lc.deployment's
        check_runs(d.engine, d.gpu, prec=d.precision, moe=model.is_moe)
    return priced_pools(model, *pools, prefill_instances=prefill_instances, decode_instances=decode_instances, concurrencies=concurrencies,
                        isl=isl, osl=osl, decode_max_batch=decode_max_batch, arrival=arrival, prefill_routing=prefill_routing,
                        decode_recv_interval=decode_recv_interval, decode_moe_a2a=decode_moe_a2a, calibration=calibration, notes=notes)


def priced_pools(model: ModelSpec, prefill: Deployment, decode: Deployment, *, prefill_instances: int, decode_instances: int,
                 concurrencies, isl: int, osl: int, arrival: str = DEFAULT_ARRIVAL, calibration=None, notes=(),
                 decode_max_batch: int | None = None, prefill_routing: str | None = None, decode_recv_interval: int = 1,
                 decode_moe_a2a: str = ""):
    """price_pools on one instance of each pool already built (`import` of a Dynamo file reads them, launch options and all):
    serve.disagg.estimate_disagg, each row banded (measure.intervals.band_disagg_rows), `notes` before the estimate's."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.measure.accuracy import disagg_measured
    from llm_codesign.measure.intervals import band_disagg_rows
    from llm_codesign.serve.disagg import DisaggEstimate, estimate_disagg
    from llm_codesign.serve.metrics import no_decode, without_decode

    def cal(g):
        return calibration if isinstance(calibration, Calibration) else calibration_for(g, calibration)

    r = estimate_disagg(model, prefill, decode, calibration=cal(prefill.gpu), decode_calibration=cal(decode.gpu), prefill_instances=prefill_instances,
                        decode_instances=decode_instances, concurrencies=list(concurrencies), isl=isl, osl=osl,
                        decode_max_batch=decode_max_batch, arrival=arrival, prefill_routing=prefill_routing,
                        decode_recv_interval=decode_recv_interval, decode_moe_a2a=decode_moe_a2a)
    band_disagg_rows(r["rows"], model, decode, isl=isl, osl=osl, calibration=calibration, arrival=arrival, prefill=prefill,
                     prefill_instances=prefill_instances, decode_instances=decode_instances)
    if no_decode(osl):  # one output token, from the prefill: no TPOT nor tok/s/user (null), as estimate's answer says it
        r["rows"] = [without_decode(row) for row in r["rows"]]
    r["notes"] = list(notes) + r["notes"]
    r["measured"] = "" if calibration else disagg_measured()  # the bundled profile's error; a profile of one's own has its own
    return DisaggEstimate(**{k: tuple(v) if k in ("notes", "rows") else v for k, v in r.items()})


def _engine_notes(gpu: Gpu, decode_gpu: Gpu, asked: str | None, chosen: str) -> list[str]:
    """One line where no engine was named and the pools' GPUs moved both pools off the prefill GPU's own engine
    (spec.engines.engine_for_pools: TensorRT-LLM does not run on an MI355X, so an H200 + MI355X pair runs vLLM on both),
    as estimate names the engine it prices; the engines both run, for --backend."""
    from llm_codesign.spec.engines import engine_for, engines_on

    own = engine_for(gpu).name
    if asked is not None or chosen == own:
        return []
    both = [n for n in engines_on(gpu) if n in engines_on(decode_gpu)]
    return [f"engine: {chosen} on both pools, not {own} (the {gpu.name}'s own): {own} does not run on the {decode_gpu.name}; "
            f"--backend picks one both run: {', '.join(both)}"]
