"""`compare`'s answer: a few models x precisions x GPUs at one SLO, each combination's best deployment side by side
on accuracy, throughput and interactivity. The one code path of `llm-codesign compare` (which prints it) and
`lc.compare` (which returns it): `ask` checks and resolves the question before any search, `compare` runs it."""
from __future__ import annotations

from dataclasses import dataclass, replace

from llm_codesign.errors import InputError
from llm_codesign.spec.engines import Engine, check_kv_format, engine_for
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL, check_arrival
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import MAX_STEP_TOKENS, check_sizes

MAX_COMBINATIONS = 48  # each combination is one whole deployment search


@dataclass(frozen=True)
class Ask:
    """A checked question: the models, each GPU with its engine, the weight formats (None: each model's defaults on each
    GPU), the KV format, the SLO and the price (`unpriced`: GPU ids the bundled prices cite no figure for)."""
    models: tuple[ModelSpec, ...]
    gpus: tuple[tuple[Gpu, Engine], ...]
    weight_formats: tuple[str, ...] | None
    kv_dtype: str | None
    num_gpus: int
    isl: int
    osl: int
    min_tps_user: float | None
    max_ttft_ms: float | None
    gpu_hour_price: str | None
    unpriced: tuple[str, ...]
    arrival: str = DEFAULT_ARRIVAL


def ask(models: list, gpus: list, weight_formats: list[str] | None = None, *, kv_dtype: str | None = None, num_gpus: int = 8,
        isl: int = 1024, osl: int = 1024, engine: str | None = None, min_tps_user: float | None = None,
        max_ttft_ms: float | None = None, gpu_hour_price: str | float | None = None, model_value=None, gpu_value=None,
        arrival: str = DEFAULT_ARRIVAL) -> Ask:
    """Every check `compare` makes before its searches, each refusal naming the field as both callers name it (`model`,
    `gpu`, `weight_dtype`, ...; `model_value`/`gpu_value`: the value as the caller wrote it, the CLI's comma list)."""
    from llm_codesign.explore.pricing import gpu_hour_price as price_of
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import get_dtype
    from llm_codesign.spec.registry import get_model

    for name, v in (("min_tps_user", min_tps_user), ("max_ttft_ms", max_ttft_ms)):
        if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf")):
            raise InputError(name, v, "a positive finite number")
    arrival = check_arrival(arrival)  # estimate's check and words (spec.harness)
    check_sizes(num_gpus=num_gpus)
    check_sizes(MAX_STEP_TOKENS, isl=isl, osl=osl)
    from llm_codesign.explore.search import refuse_without_decode

    refuse_without_decode(osl, min_tps_user=min_tps_user)  # no tok/s/user at OSL 1 to hold an SLO on
    formats = tuple(get_dtype(x, "weight_dtype").name for x in weight_formats) if weight_formats else None
    kv = get_dtype(kv_dtype, "kv_dtype").name if kv_dtype else None  # refused before any search
    if not models or not gpus:
        raise InputError("model" if not models else "gpu", (model_value if not models else gpu_value), "at least one name")
    n = len(models) * len(gpus) * (len(formats) if formats else 3)
    if n > MAX_COMBINATIONS:
        raise InputError("model", model_value if model_value is not None else models,
                         f"at most {MAX_COMBINATIONS} model x GPU x precision combinations ({n} asked)")
    gs = [g if isinstance(g, Gpu) else get_gpu(g) for g in gpus]
    pairs = tuple((g, engine_for(g, engine)) for g in gs)  # each GPU's engine, once: one it does not run fails before any search
    unpriced: list[str] = []  # GPUs the bundled prices cite no figure for (data/prices.toml: B300, MI355X): their cost is None
    for g in gs:  # a price that cannot be read, or a GPU a number or the user's own price file does not price, fails here
        if gpu_hour_price is not None:
            try:
                price_of(g, gpu_hour_price)
            except InputError as e:
                if gpu_hour_price != "bundled" or e.field != "gpu_hour_price" or len(unpriced) + 1 == len(gs):
                    raise
                unpriced.append(g.id)
    ms = tuple(m if isinstance(m, ModelSpec) else get_model(m) for m in models)
    if kv:  # a KV format some GPU's engine does not hold for some model (vLLM's MLA backends take no NVFP4): refused before any search
        for m in ms:
            for g, eng in pairs:
                check_kv_format(eng, g, kv, m)
    return Ask(models=ms, gpus=pairs, weight_formats=formats, kv_dtype=kv, num_gpus=num_gpus, isl=isl, osl=osl, min_tps_user=min_tps_user,
               max_ttft_ms=max_ttft_ms, gpu_hour_price=None if gpu_hour_price is None else str(gpu_hour_price), unpriced=tuple(unpriced), arrival=arrival)


@dataclass(frozen=True)
class Comparison:
    """`compare`'s answer: per model x precision x GPU a row (`rows`, dicts as `compare --json` prints them) holding the
    deployment with the most output tok/s/GPU that meets the SLO (`best`, None where none does, `why_none` then says
    why), its metrics' 80% and 95% intervals, and the model's accuracy at that precision (`accuracy_compared`: the one
    measure a model's rows are compared on)."""
    isl: int
    osl: int
    num_gpus: int
    min_tps_user: float | None
    max_ttft_ms: float | None
    gpu_hour_price: str | None
    unpriced_gpus: tuple[str, ...]
    rows: tuple[dict, ...]
    arrival: str = DEFAULT_ARRIVAL

    def to_dict(self) -> dict:
        """What `compare --json` prints."""
        return {"isl": self.isl, "osl": self.osl, "arrival": self.arrival, "num_gpus": self.num_gpus, "min_tps_user": self.min_tps_user,
                "max_ttft_ms": self.max_ttft_ms, "gpu_hour_price": self.gpu_hour_price,
                **({"unpriced_gpus": list(self.unpriced_gpus)} if self.gpu_hour_price is not None else {}), "rows": list(self.rows)}

    def to_records(self) -> list[dict]:
        """One flat dict of plain values per row, no pandas needed: the combination, its compared accuracy
        (`accuracy_kind`, `accuracy_value`, ...), the best deployment's metrics (ms), record, energy and cost, and each
        metric's 80% and 95% bounds (`ttft_ms_lo80` ... `output_tok_s_per_gpu_hi95`, `interval_widened`), as
        Frontier.to_records; a row without a deployment has None metrics and `why_none`."""
        from llm_codesign.explore.frontier import point_row

        out = []
        for r in self.rows:
            head = {k: r[k] for k in ("model", "gpu", "num_gpus", "engine", "engine_release", "precision", "weight_dtype", "activation_dtype", "kv_dtype")}
            acc = {f"accuracy_{k}": v for k, v in r["accuracy_compared"].items()}
            best = r["best"]
            metrics = ({k: v for k, v in point_row(best).items() if not k.startswith("accuracy")} if best else
                       dict.fromkeys(("output_tok_s_per_gpu", "tok_s_per_user", "ttft_ms", "tpot_ms")))
            out.append(head | acc | metrics | {"precision_notes": "; ".join(r["precision_notes"]), "why_none": r.get("why_none")})
        return out

    def to_pandas(self):
        """`to_records()` as a DataFrame, one row per model x precision x GPU (pandas is an optional dependency)."""
        from llm_codesign.serve.metrics import records_frame  # a None stays None, as in to_records and the JSON

        return records_frame(self.to_records())


def compare(a: Ask, *, calibration=None) -> Comparison:
    """For each model x precision x GPU of `a`, the deployment with the most output tok/s/GPU that meets the SLO
    (None where none does), with its tok/s/user, TTFT, output tokens per joule (serve.energy), its cost at the price
    where given (None on the GPUs it has no price for), the intervals of its metrics, and the model's accuracy at that
    precision (and the one measure the model's rows are compared on: accuracy_compared). `calibration`: a profile's
    path, a Calibration or None (the bundled fit)."""
    from llm_codesign.cost.calibration import Calibration, calibration_for
    from llm_codesign.explore.accuracy_model import accuracy_of
    from llm_codesign.explore.search import SearchSpace, default_precisions, search, slo_shortfall
    from llm_codesign.measure.intervals import table_for
    from llm_codesign.serve.metrics import no_decode, without_decode
    from llm_codesign.spec.precision import Precision, executable, get_dtype

    kv = get_dtype(a.kv_dtype, "kv_dtype") if a.kv_dtype else None
    rows = []
    for m in a.models:
        for g, engine in a.gpus:
            cal = calibration if isinstance(calibration, Calibration) else calibration_for(g, calibration)
            table = table_for(calibration, gpu=g)
            price = None if g.id in a.unpriced else a.gpu_hour_price
            if a.weight_formats:
                precs = [m.default_precision if w == m.default_precision.weight.name
                         else Precision.of(w, kv="fp8" if g.supports("fp8") else None) for w in a.weight_formats]
            else:
                precs = list(default_precisions(m, g))
            if kv:  # the KV format named, as pareto's --kv-dtype: rows that then coincide are one row
                precs = list(dict.fromkeys(replace(p, kv=kv) for p in precs))
            for p in precs:
                p = p.on(g)  # the activation that runs on this GPU (MXFP4: W4A4 on CDNA4), as the row prices it
                row = {"model": m.name, "gpu": g.id, "num_gpus": a.num_gpus, "engine": engine.name,
                       "engine_release": engine.release, "precision": p.label(),
                       "weight_dtype": p.weight.name, "activation_dtype": p.activation.name, "kv_dtype": p.kv.name,
                       "accuracy": accuracy_of(m, p), "best": None,
                       # a format the GPU cannot run, priced as engines map it (NVFP4 as MXFP4 on CDNA4), as estimate says it
                       "precision_notes": list(executable(p, g)[1])}
                try:
                    r = search(m, g, cal, SearchSpace(a.num_gpus, precisions=(p,)), isl=a.isl, osl=a.osl, engine=engine,
                               min_tps_user=a.min_tps_user, max_ttft_ms=a.max_ttft_ms, arrival=a.arrival)
                except InputError as e:  # no valid plan for this model on these GPUs: say so in the row
                    row["why_none"] = str(e)
                    rows.append(row)
                    continue
                if r.points:  # the best point, with its metrics' intervals
                    top = replace(r, points=(max(r.priced(price).points, key=lambda q: q.output_tok_s_per_gpu),)).banded(m, table=table)
                    best = top.points[0].to_dict()
                    row["best"] = {k: best[k] for k in ("output_tok_s_per_gpu", "tok_s_per_user", "ttft_ms", "tpot_ms", "energy", "cost",
                                                        "deployment", "intervals") if k in best} | _closed_loop(m, top.points[0], a, cal) \
                        | _fitted(m, top.points[0], a, cal)
                    if g.id in a.unpriced:
                        row["best"]["cost"] = None
                    if no_decode(a.osl):  # one output token: no TPOT nor tok/s/user (null), as estimate says it
                        row["best"] = without_decode(row["best"])
                else:  # how near the fitting deployments came, as pareto's line says it (search.slo_shortfall)
                    short = slo_shortfall([r.to_dict()], {"min_tps_user": a.min_tps_user, "max_ttft_ms": a.max_ttft_ms})
                    row["why_none"] = "no deployment meets the SLO" + (
                        "" if short is None else (f": {'; '.join(short[2])}" if short[2] else "") + f" (loosen {short[3]})")
                rows.append(row)
    accuracy_compared(rows)
    return Comparison(isl=a.isl, osl=a.osl, num_gpus=a.num_gpus, min_tps_user=a.min_tps_user, max_ttft_ms=a.max_ttft_ms,
                      gpu_hour_price=a.gpu_hour_price, unpriced_gpus=a.unpriced, rows=tuple(rows), arrival=a.arrival)


def _closed_loop(m: ModelSpec, point, a: Ask, cal) -> dict:
    """{"ttft_closed_loop_ms": the TTFT of `point`'s deployment at its requests in flight in a closed loop} where the
    question's GPUs run different engines under another arrival; else {}. SGLang in waves serialises its front end over a
    wave's requests (docs/modelling-notes.md#serial-front-end): compare's TTFT* column then reads an engine's arrival
    artefact as the GPU's (newc7 #14: MI355X 4,310 ms beside B200's 367 ms on Llama-3.1-70B); the closed loop, as
    estimate's 'TTFT, closed loop' row prices it, sets the GPUs apart on that alone."""
    from llm_codesign.serve.estimate import estimate
    from llm_codesign.spec.plan import Workload

    if a.arrival == "closed_loop" or len({e.name for _, e in a.gpus}) < 2:
        return {}
    w = Workload(isl=a.isl, osl=a.osl, concurrency=int(point.concurrency), arrival="closed_loop")
    return {"ttft_closed_loop_ms": estimate(m, point.deployment, w, calibration=cal).ttft_s * 1e3}


def _fitted(m: ModelSpec, point, a: Ask, cal) -> dict:
    """{"fitted_notes": estimate's notes of a fitted TTFT share whose mechanism is open at `point`'s deployment and requests
    (serve.estimate.fitted_ttft_notes: SGLang's per-request cost, TensorRT-LLM's attention-DP hold)} where it has any;
    else {}. A frontier's point carries none, and compare ranked an MI355X row's 4.4 s TTFT, 80% of it the fitted
    per-request cost, without a word (newc11 #9)."""
    from llm_codesign.serve.estimate import estimate, fitted_ttft_notes
    from llm_codesign.spec.plan import Workload

    if point.concurrency is None:
        return {}
    w = Workload(isl=a.isl, osl=a.osl, concurrency=int(point.concurrency), arrival=a.arrival)
    notes = fitted_ttft_notes(estimate(m, point.deployment, w, calibration=cal).to_dict())
    return {"fitted_notes": notes} if notes else {}


def accuracy_compared(rows: list[dict]) -> None:
    """Sets each row's `accuracy_compared`: the one measure its model's rows are compared on. A score
    on the benchmark (and setting) every row of the model was published with; else each precision's
    drop against the model's reference precision (published pairs on shared benchmarks, or the proxy's);
    else n/a. A model's rows never mix benchmarks: BF16's MMLU beside FP8's OpenLLM average would
    make FP8 look the more accurate."""
    by_model: dict[str, list[dict]] = {}
    for r in rows:
        by_model.setdefault(r["model"], []).append(r)
    for group in by_model.values():
        keys = [[(s["benchmark"], s["setting"]) for s in r["accuracy"]["scores"]] for r in group]
        common = [k for k in keys[0] if all(k in ks for ks in keys[1:])]
        for r, ks in zip(group, keys, strict=True):
            a = r["accuracy"]
            if common:
                b, setting = common[0]
                r["accuracy_compared"] = {"kind": "score", "benchmark": b, "setting": setting,
                                          "value": a["scores"][ks.index(common[0])]["score"], "source": "published"}
            elif a["relative_drop_pct"] is not None:
                r["accuracy_compared"] = {"kind": "drop", "precision": a["precision"], "against": a["reference_precision"],
                                          "value": a["relative_drop_pct"],
                                          "sigma": a["drop_uncertainty_pct"], "source": a["drop_source"],
                                          "band": a.get("drop_band", False)}
            else:
                r["accuracy_compared"] = {"kind": "n/a", "source": "none", "precision": a["precision"],
                                          "against": a["reference_precision"]}
