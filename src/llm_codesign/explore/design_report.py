"""A design search's winners beside the shape they are measured against, in the three dimensions an
architect weighs: speed (each shape's frontier, and its best deployment at the SLO with the intervals),
quality (the proxy loss against the reference, with its band) and trust (its place in the published
envelope, what binds the winner, and the guideline findings with their predicted costs). `design --json`,
`design --report`, the API and the page carry the same record (`side_by_side`, added by `complete`)."""
from __future__ import annotations

from llm_codesign.cost.calibration import Calibration
from llm_codesign.explore import accuracy_model
from llm_codesign.explore.design import DEFAULT_VOCAB, REGIMES, Slo, at_best, reference_model, to_model
from llm_codesign.spec.engines import Engine
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import DenseFfn, MoE
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.precision import Precision

SIDE_BY_SIDE = 3  # the designs set beside the reference: the report's columns stay readable on a page
_BOUNDS = ("lo80", "hi80", "lo95", "hi95", "centre", "span95")


def _bounds(b: dict) -> dict:
    """A band's bounds, its 95% span and whether it is predictable here (measure.intervals.predictability), as a point's
    JSON carries them (branch uxleft: the side-by-side's points dropped span95 and predictable)."""
    return {k: float(b[k]) for k in _BOUNDS} | {"predictable": bool(b["predictable"])}
_DEPLOYMENT = ("plan", "instance_gpus", "replicas", "concurrency_per_instance")


def shape_of(m: ModelSpec) -> dict:
    """A ModelSpec's shape in the design rows' keys (explore.envelope.row_of for the attention; the FFN of its
    first layer of each kind), with the vocabulary."""
    from llm_codesign.explore.envelope import row_of

    r = row_of(m)
    s = {k: int(r[k]) for k in ("hidden", "layers", "heads", "kv_heads", "head_dim") if r.get(k) is not None}
    ffns = [layer.ffn for layer, _ in m.groups]
    moe = next((f for f in ffns if isinstance(f, MoE)), None)
    dense = next((f for f in ffns if isinstance(f, DenseFfn)), None)
    if moe is not None:
        s |= {"experts": moe.experts, "top_k": moe.top_k, "expert_inter": moe.expert_inter, "shared_inter": moe.shared_inter}
    if dense is not None:
        s["inter"] = dense.inter
    q = accuracy_model.query_width(m)  # the query width, as design's rows carry it (qwen3-32b's 1.6; Llama's a whole 1)
    q = None if q is None else round(q, 6)
    return s | ({"q_ratio": int(q) if q.is_integer() else q} if q is not None else {}) | {"vocab": m.vocab}


def _frontier(m: ModelSpec, gpu, cal, prec, *, num_gpus, slo, engine, table) -> tuple[list[dict], int]:
    """The shape's frontier at the design's precision and lengths (pareto's search), each point with its 80% and
    95% intervals; the deployments evaluated."""
    from llm_codesign.explore.search import SearchSpace, search

    isl, osl = slo.lengths()
    f = search(m, gpu, cal, SearchSpace(num_gpus, precisions=(prec,)), isl=isl, osl=osl, engine=engine).banded(m, table=table)
    pts = []
    for p in f.points:
        d = p.to_dict()
        pts.append({k: d[k] for k in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms")}
                   | {"deployment": {k: d["deployment"][k] for k in _DEPLOYMENT},
                      "intervals": {m_: _bounds(b) for m_, b in (d.get("intervals") or {}).items()}})
    return pts, int(f.evaluated)


def banded(rows: list[tuple[ModelSpec, dict, dict]], *, gpu, prec, engine, isl: int, osl: int, table) -> list[dict]:
    """The bands of design's deployments as estimate's are (api.estimate): each (model, its deployment as design's rows
    state it, {metric: value}) at the batch it runs (its requests: design prices no queue), with its plan's attention-DP
    ranks (priced_terms: the fitted hold's widening) and no eager term (design._priced prices every batch inside its
    graphs, the capture the deployment states), its TTFT's basis the default arrival's runs (at_best's search prices TTFT
    there, as Workload's), each held within what its GPUs allow at that batch (intervals.ideal, capped); design prices
    no speculation. Rows sharing a slice are looked up in one pass (intervals.banded_rows)."""
    from types import SimpleNamespace

    from llm_codesign.measure.intervals import banded_rows, context, ideal, priced_terms
    from llm_codesign.spec.harness import DEFAULT_ARRIVAL
    from llm_codesign.spec.plan import Plan

    contexts, bounds = [], []
    for m, dep, _ in rows:
        plan, conc = Plan.from_dict(dep), dep["concurrency_per_instance"]
        contexts.append(context(m, gpu, prec, engine=engine.name, concurrency=conc, isl=isl, osl=osl, arrival=DEFAULT_ARRIVAL,
                                **priced_terms(plan, osl=osl)))
        inst = SimpleNamespace(gpu=gpu, num_gpus=dep["instance_gpus"], precision=prec, plan=plan)
        bounds.append(ideal(m, inst, conc, isl=isl, osl=osl))
    return banded_rows([v for *_, v in rows], contexts, bounds, table=table)


def _at_slo(m: ModelSpec, gpu, cal, prec, *, num_gpus, slo, moe, engine, table) -> dict | None:
    """The shape's best deployment at the SLO (as design ranks it) with its four metrics' intervals there (`banded`)."""
    best = at_best(m, gpu, cal, prec, num_gpus=num_gpus, slo=slo, moe=moe, engine=engine)
    if best is None:
        return None
    isl, osl = slo.lengths()
    values = {k: best[k] for k in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms")}
    b = banded([(m, best["deployment"], values)], gpu=gpu, prec=prec, engine=engine, isl=isl, osl=osl, table=table)[0]
    basis = b[REGIMES[slo.regime][0]]  # the objective's runs (TTFT's are its arrival's own slice)
    return best | {"intervals": {k: _bounds(b[k]) for k in values},
                   "interval_basis": {"source": basis["source"], "widened": list(basis["widened"])}}


def _envelope(m: ModelSpec, scale: float) -> dict:
    """`m`'s place in the envelope at `scale` (the search's budget: the one envelope its rows are judged at)."""
    from llm_codesign.explore.envelope import envelope_at, features, position, row_of

    return position(envelope_at(float(scale), dense=not m.is_moe), features(row_of(m)) | {"hidden": float(m.hidden)})


def side_by_side(r: dict, *, params: float, gpu: Gpu, cal: Calibration, prec: Precision, num_gpus: int, slo: Slo, moe: bool,
                 engine: Engine, baseline: ModelSpec | None, budget_tol: float, table: dict, lint_regime: str,
                 quality_file: str | None = None, proxy_file: str | None = None, n: int = SIDE_BY_SIDE, linted: list | None = None) -> dict:
    """The reference (the baseline, else design's published or scaled model) and the top `n` designs of a
    `design` result `r`, each with its shape, frontier, best deployment at the SLO (gain over the reference's),
    proxy loss against the reference's with its 1-sigma band, envelope position and lint findings (explore.lint
    at `lint_regime`, each with its predicted cost; `linted`: the designs' findings complete() already has, in rank
    order); with what binds the winner."""
    from llm_codesign.explore import accuracy_model, quality
    from llm_codesign.explore.lint import design_point, lint

    ref = r["reference"]
    m0, name0, _ = reference_model(params, baseline=baseline, moe=moe, budget_tol=budget_tol, active=r.get("active_params"))
    vocab = baseline.vocab if baseline is not None else DEFAULT_VOCAB  # design's shapes take the baseline's vocabulary
    terms = accuracy_model.model_terms(m0, prec.weight.name, c=quality.constants(quality_file), pc=accuracy_model.proxy_constants(proxy_file))
    cols = [(m0, {"role": "baseline" if baseline is not None else "reference", "name": name0, "basis": ref["basis"],
                  "quality": {"loss": ref["quality_proxy"], "delta_pct": 0.0, "sigma_delta_pct": 0.0, "uncertainty_pct": 0.0,
                              "delta_band_pct": [0.0, 0.0], "passes": True, "resolved": True, "terms": [], "flat": [],
                              "extrapolated": accuracy_model.extrapolated(terms)}, "envelope": _envelope(m0, params)})]
    for j, d in enumerate(r["designs"][:n], 1):
        q = d["quality"]
        cols.append((to_model(d, vocab, f"design {j}"), {
            "role": "design", "name": f"design {j}", "rank": j,
            # the band is sigma_delta, the equal-quality test's (design's rows print the same)
            "quality": {"loss": q["loss"], "delta_pct": q["delta_pct"], "sigma_delta_pct": q["sigma_delta_pct"],
                        "uncertainty_pct": q["uncertainty_pct"], "terms": q["terms"], "flat": q["flat"],
                        "delta_band_pct": [q["delta_pct"] - q["sigma_delta_pct"], q["delta_pct"] + q["sigma_delta_pct"]], "passes": q["passes"], "resolved": q.get("resolved", True),
                        "extrapolated": q["extrapolated"], "test_band_na": q.get("test_band_na")},
            "envelope": d["envelope"], "versus_reference": d.get("versus_reference"),
            "gain_band": d.get("gain_band")}))
    out = []
    for k, (m, col) in enumerate(cols):
        at = _at_slo(m, gpu, cal, prec, num_gpus=num_gpus, slo=slo, moe=moe, engine=engine, table=table)
        frontier, evaluated = _frontier(m, gpu, cal, prec, num_gpus=num_gpus, slo=slo, engine=engine, table=table)
        # a design's findings as complete() priced them; the reference's at the deployment _at_slo picked (its own search's
        # point where none meets the floor)
        fs = (linted[k - 1] if linted is not None and k > 0 and k - 1 < len(linted) else
              lint(m, gpu, cal, lint_regime, prec=prec, proxy_file=proxy_file, gpus=num_gpus, engine=engine, slo=slo,
                   point=design_point(at["deployment"], slo=slo, gpu=gpu, num_gpus=num_gpus) if at else None))
        out.append(col | {"shape": shape_of(m), "total_params": int(m.total_params), "active_params": int(m.active_params),
                          "at_slo": at, "frontier": frontier, "evaluated": evaluated, "lint": [f.to_dict() for f in fs]})
    base = out[0]["at_slo"]["objective"] if out[0]["at_slo"] else None
    for c in out:
        c["gain_pct"] = 100.0 * (c["at_slo"]["objective"] / base - 1.0) if base and c["at_slo"] and c["role"] == "design" else None
    return {"objective": r["objective"], "constraint": r["constraint"], "isl_osl": list(slo.lengths()), "precision": r["precision"],
            "engine": engine.name, "rule": ref["rule"], "binds": r.get("binds", []), "extended": r.get("grid", {}).get("extended", []), "columns": out}


def complete(r: dict, *, params: float, gpu: Gpu, cal: Calibration, prec: Precision, num_gpus: int, slo: Slo, moe: bool,
             engine: Engine, baseline: ModelSpec | None, budget_tol: float, table: dict, quality_file: str | None = None,
             proxy_file: str | None = None, side: bool = True) -> dict:
    """A `design` result as `design --json` and the API give it: each row's lint counts and first finding, its
    objective's intervals (_row_bands: estimate's at its deployment) and, with `side`, the `side_by_side` record."""
    from llm_codesign.explore.lint import design_point, lint

    vocab = baseline.vocab if baseline is not None else DEFAULT_VOCAB
    lint_regime = slo.regime  # lint prices each regime's objective (long-context: GPU time per output token, as design's)
    linted = []
    for d in r["designs"]:
        # priced where design deployed the row (its plan and batch at `slo`), not at a second search at lint's defaults
        fs = lint(to_model(d, vocab), gpu, cal, lint_regime, prec=prec, proxy_file=proxy_file, gpus=num_gpus, engine=engine, slo=slo,
                  point=design_point(d["deployment"], slo=slo, gpu=gpu, num_gpus=num_gpus))
        linted.append(fs)
        d["lint"] = {"errors": sum(f.severity == "error" for f in fs), "warnings": sum(f.severity == "warning" for f in fs),
                     "top": fs[0].message if fs else None}
    _row_bands(r, params=params, gpu=gpu, prec=prec, engine=engine, baseline=baseline, moe=moe, budget_tol=budget_tol, table=table)
    r["budget"] = budget(r, params, budget_tol)
    if side and r["designs"]:
        r["side_by_side"] = side_by_side(r, params=params, gpu=gpu, cal=cal, prec=prec, num_gpus=num_gpus, slo=slo, moe=moe, engine=engine,
                                         baseline=baseline, budget_tol=budget_tol, table=table, lint_regime=lint_regime,
                                         quality_file=quality_file, proxy_file=proxy_file, linted=linted)
    return r


def budget(r: dict, params: float, tol: float) -> dict:
    """The parameter budget and the range the rows span (finding: rows 4.7% under a 30B budget read "at 30B"), and
    each row's gain at equal params, `gain_equal_params_pct` = (1 + gain) x its params / the reference's - 1: its
    objective per parameter against the reference's, first order (weight streaming sets decode's speed)."""
    who = r.get("baseline") or r["reference"]
    for d in r["designs"]:
        d["gain_equal_params_pct"] = (None if d.get("gain_pct") is None else
                                      100 * ((1 + d["gain_pct"] / 100) * d["total_params"] / who["total_params"] - 1))
    p = [d["total_params"] for d in r["designs"]]
    return {"params": params, "tol": tol, "rows": [min(p), max(p)] if p else None, "reference_params": who["total_params"]}


def gain_band(d: dict, b: dict, level: int = 80, *, shared: bool | None = None) -> dict:
    """A gain's own interval from the two predictions' (`d`, `b`: {"lo80", "hi80", ...} bands about values v_d, v_b):
    each band's log half-widths below and above its value added in quadrature, as for independent errors
    (ln(v_d / v_b) - hypot(ln(v_d/lo_d), ln(hi_b/v_b)) .. + hypot(ln(hi_d/v_d), ln(v_b/lo_b))). `shared`: both priced
    on one engine and GPU family (None: read from their interval slices being one). Then part of that error is
    common to both (the campaign and GPU-family widening: "no serving run on any Hopper GPU" on both H100 rows; the
    engine's bias) and cancels in the ratio, so the band is an upper bound (`shared_error`). The widening terms are
    not dropped before the quadrature: `band` adds them to each bound beyond the slice's own spread
    (measure.intervals.band), and the project has no paired runs of two shapes to say how much of that is common."""
    import math

    vd, vb = d["value"], b["value"]
    lo_d, hi_d, lo_b, hi_b = d[f"lo{level}"], d[f"hi{level}"], b[f"lo{level}"], b[f"hi{level}"]
    g = math.log(vd / vb)
    lo = g - math.hypot(math.log(vd / lo_d), math.log(hi_b / vb))
    hi = g + math.hypot(math.log(hi_d / vd), math.log(vb / lo_b))
    lo_pct, hi_pct = 100.0 * math.expm1(lo), 100.0 * math.expm1(hi)
    same = d.get("source") == b.get("source") if shared is None else bool(shared)
    return {f"gain_lo{level}": lo_pct, f"gain_hi{level}": hi_pct, "within_model_error": bool(lo_pct <= 0.0 <= hi_pct), "shared_error": same,
            "basis": "the two bands added in quadrature as independent errors" + ("; both on one engine and GPU family, whose shared "
                                                                                   "error cancels in the ratio: an upper bound" if same else "")}


def _row_bands(r: dict, *, params, gpu, prec, engine, baseline, moe, budget_tol, table) -> None:
    """Each row's objective with its intervals (`intervals`: {objective: band}) at its deployment, and what it is measured
    against, the baseline, else the reference shape (the nearest published model), alike (`banded`: estimate's bands
    of that shape at that deployment and capture); then each row's gain_band against it."""
    obj, (isl, osl) = r["objective"], r["isl_osl"]
    vocab = baseline.vocab if baseline is not None else DEFAULT_VOCAB
    who = r["baseline"] if r.get("baseline") else r["reference"]
    # a designed shape is named "" in its band's reasons ("no measured run of this designed shape")
    rows = [(to_model(d, vocab, ""), d) for d in r["designs"] if d.get("objective") is not None]
    if who.get("objective") is not None:
        m0 = baseline if baseline is not None else reference_model(params, baseline=None, moe=moe, budget_tol=budget_tol,
                                                                    active=r.get("active_params"))[0]
        rows.append((m0, who))
    got = banded([(m, d["deployment"], {obj: d["objective"]}) for m, d in rows], gpu=gpu, prec=prec, engine=engine, isl=isl,
                 osl=osl, table=table)
    for (_, d), b in zip(rows, got, strict=True):
        d["intervals"] = b
    if who.get("objective") is None:
        return
    b = who["intervals"][obj] | {"value": who["objective"]}
    for d in r["designs"]:
        if d.get("intervals") and d["gain_pct"] is not None:
            # every row and what it is measured against are priced on the search's one engine and GPU: shared error
            d["gain_band"] = gain_band(d["intervals"][obj] | {"value": d["objective"]}, b, shared=True)
