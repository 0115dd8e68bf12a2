"""The Python API: what the CLI, the web page and a notebook call, over the private modules.

Every function takes a model as a registry name, a Hugging Face id, a config.json path, its contents as a dict or a
`ModelSpec`, and a GPU as a catalog id, a TOML path or a `Gpu`; the engine is `engine=` or `backend=` (the CLI's
`--engine` and `--backend`, the answers' `backend`); one left out is the GPU vendor's and one
that does not run on the GPU is refused (spec.engines.engine_for: SGLang on an MI355X, TensorRT-LLM refused there). Results are typed data in SI units:
`evaluate` returns array-valued `Metrics`, `estimate` an `Estimate`, `pareto` a `Frontier` whose
points (`FrontierPoint`) hold their `Deployment`; each result's `to_dict()` is what the matching
command's `--json` prints, and `to_pandas()` a table of plain values (a frontier's `to_records()` the same rows without
pandas). Bad arguments raise `InputError` in one line naming the field, the value and what is valid.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from inspect import signature
from pathlib import Path

from llm_codesign.cost.calibration import Calibration, calibration_for
from llm_codesign.errors import InputError
from llm_codesign.explore import DESIGN_GPU, DESIGN_TOP
from llm_codesign.explore.compare import Comparison
from llm_codesign.explore.export import ImportEstimate, recorded_profile, same_profile
from llm_codesign.explore.frontier import Frontier, FrontierPoint, model_reference
from llm_codesign.explore.lengths import Mix
from llm_codesign.explore.lint import Lint
from llm_codesign.measure.calibrate import Profile
from llm_codesign.serve.disagg import DisaggEstimate
from llm_codesign.serve.estimate import Estimate
from llm_codesign.serve.metrics import Metrics
from llm_codesign.serve.metrics import evaluate as _evaluate
from llm_codesign.spec.engines import engine_for
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.hardware import get_gpu as _get_gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import (
    MAX_STEP_TOKENS,
    Deployment,
    Plan,
    SpecDecoding,
    Workload,
    check_concurrency,
    check_sizes,
    engine_arg,
    spec_decoding,
)
from llm_codesign.spec.plan import deployment as _deployment
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model as _get_model

__all__ = ["Comparison", "Deployment", "DisaggEstimate", "Estimate", "Frontier", "FrontierPoint", "Gpu", "ImportEstimate", "InputError", "Metrics",
           "Mix", "ModelSpec", "Plan", "Precision", "Profile", "SpecDecoding", "Workload", "calibrate", "compare", "deployment", "design", "disagg",
           "estimate", "evaluate", "export_point", "get_gpu", "get_model", "import_config", "lint", "mix", "pareto", "validate_serving"]


def get_model(model: str | Path | dict | ModelSpec, *, name: str | None = None) -> ModelSpec:
    """A model from a registry name, a Hugging Face id, a config.json path, or a config.json's contents as a dict: a
    shape of one's own, nothing read or downloaded, e.g. `get_model({"model_type": "llama", "hidden_size": 6144,
    "num_hidden_layers": 60, "num_attention_heads": 48, "num_key_value_heads": 8, "intermediate_size": 16384,
    "vocab_size": 128256})` (a ModelSpec passes through). `name` names a dict's shape in answers (default: "custom");
    another model keeps its own name, by which its measured runs and published scores are found."""
    if name is not None and not isinstance(model, dict):
        raise InputError("name", name, "left out unless the model is a config dict (renamed, a bundled model would lose its "
                                       "measured runs and published scores)")
    m = model if isinstance(model, ModelSpec) else _get_model(model)
    if name is None:
        return m
    if not isinstance(name, str) or not name.strip():
        raise InputError("name", name, "a non-empty string")
    return replace(m, name=name.strip())


def deployment(model: str | Path | dict | ModelSpec, *, gpu: str | Gpu, **options) -> Deployment:
    """A validated Deployment (spec.plan.deployment fills in the sizes, precision and engine, as the engines do), its plan
    checked when built as `estimate` checks it (serve.estimate.check: the plan divides the model and fits the scale-up
    domain and the GPU count), so TP3 of a 64-head model or TP16 past 8 NVLink GPUs is refused here in the CLI's line, not
    when priced (newc5 #8). Memory is checked when priced (estimate's one-sequence fit): it needs the engine's costs, which
    an engine or layer kind registered after the deployment is built may not have yet (docs/howto/extend.md's order)."""
    from llm_codesign.serve.estimate import check

    m = get_model(model)
    dep = _deployment(m, gpu=gpu, **options)
    check(m, dep)
    return dep


deployment.__signature__ = signature(_deployment)  # its options are spec.plan.deployment's, as help() and the docs list them


def get_gpu(gpu: str | Gpu) -> Gpu:
    """A GPU from its catalog id (case-insensitive) or a TOML path (a Gpu passes through)."""
    return gpu if isinstance(gpu, Gpu) else _get_gpu(gpu)


PROFILE_WORDS = "None (the bundled profile), a Profile (lc.calibrate's) or a calibration profile's path"


def _ref(calibration, *, objects: bool = True):
    """A profile as the pricing reads it: a Profile (lc.calibrate's) by its path, a path as text, a Calibration (where
    `objects`) or None as given; anything else refused in one line (an int was a TypeError from the cache's file read)."""
    if isinstance(calibration, Profile):
        return calibration.as_path()
    if isinstance(calibration, Path):
        return str(calibration)
    if calibration is None or (isinstance(calibration, str) and calibration.strip()) or (objects and isinstance(calibration, Calibration)):
        return calibration
    raise InputError("calibration", calibration if isinstance(calibration, (str, int, float)) else type(calibration).__name__,
                     PROFILE_WORDS + (", or a Calibration" if objects else ""))


def _calibration(gpu: Gpu, calibration: Calibration | Profile | str | None) -> Calibration:
    calibration = _ref(calibration)
    return calibration if isinstance(calibration, Calibration) else calibration_for(gpu, calibration)


def _checked(deployment, workload) -> Workload:
    """The workload (the default where None) of a deployment and workload of the right types: a GPU id or a dict in
    their place was an AttributeError from deep in the cost model."""
    if not isinstance(deployment, Deployment):
        raise InputError("deployment", deployment, "a Deployment: lc.deployment(model, gpu=..., num_gpus=...)")
    return _workload(workload)


def _workload(workload, example: str = "isl=..., osl=..., concurrency=...") -> Workload:
    """The workload given (the default where None), refused where it is no Workload; `example`: the fields a call takes."""
    if workload is not None and not isinstance(workload, Workload):
        raise InputError("workload", workload, f"a Workload: lc.Workload({example})")
    return workload or Workload()


def evaluate(model: str | ModelSpec, deployment: Deployment, workload: Workload | None = None, *,
             calibration: Calibration | Profile | str | None = None, concurrency=None) -> Metrics:
    """Typed, array-valued serving metrics (SI units) of one deployment; `concurrency` may be an array."""
    w = _checked(deployment, workload)
    conc = None if concurrency is None else check_concurrency(concurrency, arrays=True)
    return _evaluate(get_model(model), deployment, w, calibration=_calibration(deployment.gpu, calibration), concurrency=conc)


def estimate(model: str | ModelSpec, deployment: Deployment, workload: Workload | None = None, *,
             calibration: Calibration | Profile | str | None = None, breakdown: bool = False) -> Estimate:
    """What one deployment delivers (`to_dict()`: what `llm-codesign estimate --json` prints): metrics,
    memory, bottlenecks, speculation's break-even, the accuracy of its precision and how far to trust
    each metric: its 80% and 95% intervals (`intervals`: measure.intervals, from the residuals of the runs
    most like it, which each metric's `source` and `n` name; a profile written by `calibrate --serving`
    narrows them where its own runs cover the question)."""
    from llm_codesign.explore.accuracy_model import accuracy_of
    from llm_codesign.measure import intervals
    from llm_codesign.serve.estimate import estimate as run

    m, w, dep = get_model(model), _checked(deployment, workload), deployment
    r = run(m, dep, w, calibration=_calibration(dep.gpu, calibration), breakdown=breakdown)
    # the load band of the batch that runs, not of the requests offered (intervals.running_load; the queue's cohorts ahead
    # are priced, Estimate.queue)
    running = intervals.running_load(w.concurrency, r.max_batch)
    ctx = intervals.context(m, dep.gpu, dep.precision, engine=dep.backend, concurrency=running, isl=w.isl, osl=w.osl,
                            spec=dep.spec is not None, arrival=w.arrival, prefix_hit=w.prefix_hit,
                            # the plan of ints estimate priced (a one-element array size: test_estimate), its eager decode
                            **intervals.priced_terms(r.deployment.plan, r.eager_decode, osl=w.osl))
    # TTFT's band about the TTFT once a request runs (what the runs measured), its queue added after (intervals.with_queue)
    queue_ms = r.queue["ttft_ms"] if r.queue else 0.0
    values = {"ttft_ms": r.ttft_s * 1e3 - queue_ms, "tpot_ms": r.tpot_s * 1e3, "tok_s_per_user": r.tok_s_per_user,
              "output_tok_s_per_gpu": r.output_tok_s_per_gpu}
    bands = intervals.bands(values, ctx, table=intervals.table_for(_ref(calibration), gpu=dep.gpu))
    # no rate's bound above what the GPUs allow at the batch that runs, no TPOT's below its ideal step, no TTFT's below
    # one prefill's (intervals.ideal),
    # here so that to_dict, --json, the web page and the table carry one band
    # offline, the knee's batch it reports (r.concurrency), not the KV cache's largest (fixA13: 8B H100 FP8 offline at
    # batch 372 had its TPOT floored and tok/s/user capped at batch 497's)
    batch = running or r.concurrency
    bands = intervals.capped(bands, values, intervals.ideal(m, dep, batch, isl=w.isl, osl=w.osl, accepted=r.accepted_per_step,
                                                                prefix_hit=w.prefix_hit))
    bands = intervals.queued(bands, values, queue_ms)  # the band covers the TTFT as quoted, queue included (newc7 #7)
    # the third dimension: published where known, else the proxy
    return replace(r, accuracy=accuracy_of(m, dep.precision), intervals=bands)


def pareto(model: str | ModelSpec, gpu: str | Gpu, *, num_gpus: int = 8, instance_gpus: tuple[int, ...] | None = None,
           workload: Workload | None = None, engine: str | None = None, tp: int | None = None, pp: int | None = None, ep: int | None = None,
           moe_tp: int | None = None, attention_dp: int | None = None, kvp: int | None = None, weight_dtype: str | None = None,
           activation_dtype: str | None = None, kv_dtype: str | None = None, spec: SpecDecoding | str | None = None,
           draft_len: int | None = None, acceptance: float | None = None, acceptance_rates: str | tuple | None = None,
           draft_model: str | None = None, max_num_tokens: int | None = None, step_tokens: tuple[int, ...] = (), min_tps_user: float | None = None,
           max_ttft_ms: float | None = None, max_accuracy_drop: float | None = None, calibration: Calibration | Profile | str | None = None,
           progress=None, backend: str | None = None, disagg: bool = False) -> Frontier:
    """The frontier over every valid plan x batch x precision (x draft length) on `num_gpus` GPUs, as
    `llm-codesign pareto` searches it (the same SearchSpace.build): fixed sizes (`tp=8`, ...) narrow the
    plans, `instance_gpus` the instance sizes (the CLI's `--gpus 8-72` is `num_gpus=72, instance_gpus=tuple(range(8, 73))`),
    precisions default to the checkpoint's own plus the formats the GPU runs natively, less a format whose accuracy on
    the checkpoint nothing measures (DeepSeek-R1's per-tensor FP8: `weight_dtype` names it; the Frontier's
    `not_searched` says it was left out), with `spec` draft lengths 1..5 (or `draft_len`; `draft_model`: the draft of `spec="draft"`) beside none, `step_tokens`
    searches step budgets too (the CLI's `--max-num-tokens-grid`);
    `workload` gives the lengths, the prefix cache's hit share and how requests arrive (`arrival`; no concurrency: every load is searched), `min_tps_user`/`max_ttft_ms` filter
    by SLO and `max_accuracy_drop` (%) keeps the precisions known to lose at most that much. `engine` defaults
    to the GPU vendor's and one that does not run on the GPU is refused (spec.engines.engine_for). Each point
    carries its metrics' 80% and 95% intervals (`intervals`, as `estimate`'s). `progress`, where given, is called as
    `progress(done, total)` on the calling thread with the deployments priced so far. With `disagg`, the disaggregated
    frontier over the same space instead (`pareto --disagg`'s second answer, explore.disagg_search.search_disagg: units
    of prefill and decode instances, `DisaggPoint`s), which prices one step budget, no prefix cache and every precision."""
    from llm_codesign.explore.search import SearchSpace, refuse_without_decode, search
    from llm_codesign.measure.intervals import table_for
    from llm_codesign.spec.plan import check_budget_holds

    given = _one(model, "model", "a model")
    m, g = get_model(given), get_gpu(_one(gpu, "gpu", "a GPU id"))
    w = _workload(workload, "isl=..., osl=...")
    # what the search does not price is refused rather than dropped without a word (the frontier was the same)
    if w.concurrency is not None:
        raise InputError("workload.concurrency", w.concurrency, "left out: a frontier searches every load (lc.estimate or lc.evaluate "
                                                                "price one)")
    check_sizes(num_gpus=num_gpus)  # named as this call names it, before SearchSpace.build checks it as the CLI's --gpus
    refuse_without_decode(w.osl, frontier=True)  # a frontier over tok/s/user, which one output token has none of
    _search_mode(disagg, progress, w, step_tokens, max_accuracy_drop)
    check_sizes(MAX_STEP_TOKENS, max_num_tokens=max_num_tokens)
    eng = engine_for(g, engine_arg(engine, backend))
    sd = spec if isinstance(spec, SpecDecoding) or spec is None else spec_decoding(
        spec, draft_len=draft_len, acceptance=acceptance, acceptance_rates=acceptance_rates, draft_model=draft_model, model=m)
    if sd is not None and draft_len:  # a fixed draft length the budget cannot hold is refused as estimate refuses it
        check_budget_holds(max_num_tokens, eng, draft_len)
    space = SearchSpace.build(m, g, num_gpus=num_gpus, instance_gpus=instance_gpus, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp,
                              attention_dp=attention_dp, kvp=kvp, weight_dtype=weight_dtype, activation_dtype=activation_dtype,
                              kv_dtype=kv_dtype, spec=sd, draft_len=draft_len, step_tokens=step_tokens)
    if disagg:
        from llm_codesign.explore.disagg_search import search_disagg

        f = search_disagg(m, g, _calibration(g, calibration), space, isl=w.isl, osl=w.osl, engine=eng, max_num_tokens=max_num_tokens,
                          min_tps_user=min_tps_user, max_ttft_ms=max_ttft_ms)
    else:
        f = search(m, g, _calibration(g, calibration), space, isl=w.isl, osl=w.osl, prefix_hit=w.prefix_hit, arrival=w.arrival, engine=eng,
                   max_num_tokens=max_num_tokens, min_tps_user=min_tps_user, max_ttft_ms=max_ttft_ms, max_accuracy_drop=max_accuracy_drop,
                   progress=progress)
    # each point's intervals, once per point after the search (not per evaluated deployment); the profile it was priced
    # with kept, for export_point to record
    # with the shape searched and how commands name it again (a config.json's path, not its stem: crev10 #3)
    return replace(f.banded(m, table=table_for(_ref(calibration), gpu=g)), calibration=calibration, model_spec=m,
                   model_ref=model_reference(given, m))


def _search_mode(disagg, progress, w: Workload, step_tokens, max_accuracy_drop) -> None:
    """pareto's `disagg` (a bool: "no" was truthy, the disaggregated search) and `progress`, and what the disaggregated
    search does not price, refused as `pareto --disagg` refuses it."""
    if not isinstance(disagg, bool):
        raise InputError("disagg", disagg, "True or False")
    if progress is not None and not callable(progress):
        raise InputError("progress", progress, "a function called as progress(done, total), or None")
    if not disagg:
        return
    if progress is not None:  # search_disagg reports no progress: refused rather than never called
        raise InputError("progress", getattr(progress, "__name__", type(progress).__name__),
                         "left out with disagg=True (the disaggregated search reports no progress)")
    for k, v, why in (("workload.prefix_hit", w.prefix_hit, "0 with disagg=True (the disaggregated search prices no prefix cache)"),
                      ("workload.arrival", w.arrival if w.arrival != DEFAULT_ARRIVAL else None,
                       f"{DEFAULT_ARRIVAL!r} with disagg=True (the disaggregated search prices its pools at that arrival)"),
                      ("step_tokens", step_tokens or None, "left out with disagg=True (it prices one step budget: max_num_tokens)"),
                      ("max_accuracy_drop", max_accuracy_drop, "left out with disagg=True (the disaggregated search keeps every "
                                                               "precision; each point's accuracy says its drop)")):
        if v:
            raise InputError(k, v, why)


def _unpriced(w: Workload, why: str, fields=("concurrency", "prefix_hit", "arrival")) -> None:
    """Refuses a workload's field the call does not price (`why` says what it prices instead) rather than dropping it
    without a word: each of `fields` must be left at Workload's default."""
    for k, default in (("concurrency", None), ("prefix_hit", 0.0), ("arrival", DEFAULT_ARRIVAL)):
        if k in fields and getattr(w, k) != default:
            raise InputError(f"workload.{k}", getattr(w, k), f"{default!r} (left out): {why}")


@contextmanager
def _named(inner: str, outer: str):
    """A refusal from below naming `inner` said as this call's keyword `outer` (a lower layer's name for it: the CLI's)."""
    try:
        yield
    except InputError as e:
        if e.field != inner:
            raise
        raise InputError(outer, e.value, e.valid) from None


def _names(value, field: str, what: str) -> list:
    """One name or object, or a list or tuple of them, or names in one string split at commas as the CLI splits them
    (`gpu="mi300x,h200"`, newc8 #16), unless the string is a file's path (which may hold a comma)."""
    if isinstance(value, (list, tuple)):
        if not value:  # an empty list was the defaults, silently
            raise InputError(field, value, f"{what}, or a non-empty list of them")
        return list(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(field, value, f"{what}, or a list of them")
    if isinstance(value, str) and "," in value and not Path(value).exists():
        parts = [p.strip() for p in value.split(",")]
        if not all(parts):
            raise InputError(field, value, f"{what}, or a list of them, or names between commas (none empty)")
        return parts
    return [value]


def _one(value, field: str, what: str):
    """lc.pareto's one model or GPU: a comma string (the CLI's list, which it runs one search an item) refused, naming
    the call that takes several."""
    if isinstance(value, str) and "," in value and not Path(value).exists():
        raise InputError(field, value, f"{what}, one a call (lc.compare takes several, as a list or a comma string)")
    return value


def compare(model, gpu="h200", *, num_gpus: int = 8, weight_dtype: str | list[str] | None = None, kv_dtype: str | None = None,
            workload: Workload | None = None, engine: str | None = None, min_tps_user: float | None = None, max_ttft_ms: float | None = None,
            calibration: Calibration | Profile | str | None = None, gpu_hour_price: str | float | None = None, backend: str | None = None):
    """Models x precisions x GPUs at one SLO, side by side, as `llm-codesign compare` searches them (explore.compare, one
    code path): `model` and `gpu` one or a list each (anything get_model and get_gpu take), `weight_dtype` the formats
    (default: each checkpoint's and what each GPU runs natively), `workload` the lengths and how requests arrive
    (`arrival`: its TTFT turns on it). Returns a `Comparison`: per
    model x precision x GPU the deployment with the most output tok/s/GPU that meets `min_tps_user`/`max_ttft_ms`, with
    its metrics' 80% and 95% intervals, its accuracy and, with `gpu_hour_price` (dollars, `bundled` or a price file), its
    cost; `to_dict()` is what `compare --json` prints, `to_records()`/`to_pandas()` a table of it."""
    from llm_codesign.explore import compare as run

    w = _workload(workload, "isl=..., osl=...")
    _unpriced(w, "`compare` prices the lengths and the arrival", fields=("concurrency", "prefix_hit"))
    formats = _names(weight_dtype, "weight_dtype", "a weight format") if weight_dtype is not None else None
    q = run.ask([get_model(m) for m in _names(model, "model", "a model")], _names(gpu, "gpu", "a GPU id"), formats, kv_dtype=kv_dtype, num_gpus=num_gpus, isl=w.isl,
                osl=w.osl, engine=engine_arg(engine, backend), min_tps_user=min_tps_user, max_ttft_ms=max_ttft_ms,
                gpu_hour_price=gpu_hour_price, model_value=model, gpu_value=gpu, arrival=w.arrival)
    return run.compare(q, calibration=_ref(calibration))


def disagg(model: str | ModelSpec, gpu: str | Gpu, *, prefill: str | Plan, decode: str | Plan, decode_gpu: str | Gpu | None = None,
           prefill_instances: int = 1, decode_instances: int = 1, concurrency=(1, 8, 32, 128, 512), workload: Workload | None = None,
           weight_dtype: str | None = None, activation_dtype: str | None = None, kv_dtype: str | None = None, engine: str | None = None,
           spec: SpecDecoding | str | None = None, draft_len: int | None = None, acceptance: float | None = None,
           acceptance_rates: str | tuple | None = None, draft_model: str | None = None, max_num_tokens: int | None = None,
           decode_max_num_tokens: int | None = None, decode_max_batch: int | None = None, prefill_routing: str | None = None,
           decode_recv_interval: int = 1, decode_moe_a2a: str = "", calibration: Calibration | Profile | str | None = None,
           backend: str | None = None, decode_cuda_graph_max_bs: int | None = None, decode_piecewise_graphs: bool = False) -> DisaggEstimate:
    """One disaggregated deployment, as `llm-codesign disagg` prices it (explore.disagg_search.price_pools, one code
    path): `prefill_instances` instances of the `prefill` plan (`"tp=4"`, `"tp=8,ep=8"` or a `Plan`) on `gpu` hand each
    prompt's KV cache to `decode_instances` of the `decode` plan (on `decode_gpu` where it differs), at each load of
    `concurrency` (requests in flight, one or a list); `workload` the lengths and how requests arrive
    (`arrival`), `decode_max_batch` the decode ranks' max batch, `decode_recv_interval` the decode iterations between the
    decode workers' polls for new requests (SGLang only, without attention DP: --scheduler-recv-interval), `decode_moe_a2a`
    the decode servers' MoE exchange ("" the engine's own; "deepep_low_latency": SGLang's --moe-a2a-backend deepep
    --deepep-mode low_latency, on a decode pool with attention DP and EP > 1), `decode_cuda_graph_max_bs` the decode workers'
    padded CUDA-graph capture per rank (None: the engine's own; 0: off), `decode_piecewise_graphs` whether they replay vLLM's
    piecewise graphs (-O1 or cudagraph_mode PIECEWISE: Deployment.piecewise_graphs). Returns a `DisaggEstimate`: per load TTFT and its
    parts, TPOT, tok/s/user, tok/s/GPU and their 80% and 95% intervals; `to_dict()` is what `disagg --json` prints."""
    from llm_codesign.spec.harness import MAX_RECV_INTERVAL
    from llm_codesign.spec.plan import MAX_CONCURRENCY
    from llm_codesign.spec.validation import as_int

    m, g = get_model(model), get_gpu(gpu)
    with _named("gpu", "decode_gpu"):
        dg = get_gpu(decode_gpu) if decode_gpu is not None else g
    w = _workload(workload, "isl=..., osl=..., arrival=...")
    _unpriced(w, "`disagg` takes its loads as concurrency= and prices no prefix cache", fields=("concurrency", "prefix_hit"))
    for name, p in (("prefill", prefill), ("decode", decode)):
        if not isinstance(p, (str, Plan)):
            raise InputError(name, p, "a plan as text, e.g. 'tp=4' or 'attention_dp=8,ep=8', or an lc.Plan")
    check_sizes(prefill_instances=prefill_instances, decode_instances=decode_instances)
    check_sizes(MAX_STEP_TOKENS, max_num_tokens=max_num_tokens, decode_max_num_tokens=decode_max_num_tokens)
    if decode_max_batch is not None:
        as_int("decode_max_batch", decode_max_batch, hi=MAX_CONCURRENCY, what=f"a positive integer up to {MAX_CONCURRENCY:,}")
    if decode_cuda_graph_max_bs is not None:
        as_int("decode_cuda_graph_max_bs", decode_cuda_graph_max_bs, lo=0, hi=MAX_CONCURRENCY,
               what=f"a whole number of requests from 0 (graphs off) to {MAX_CONCURRENCY:,}")
    as_int("decode_recv_interval", decode_recv_interval, hi=MAX_RECV_INTERVAL, what=f"a positive integer up to {MAX_RECV_INTERVAL:,}")
    conc = [int(c) for c in check_concurrency(concurrency, arrays=True).reshape(-1)]
    sd = spec if isinstance(spec, SpecDecoding) or spec is None else spec_decoding(
        spec, draft_len=draft_len, acceptance=acceptance, acceptance_rates=acceptance_rates, draft_model=draft_model, model=m)
    with _named("piecewise_graphs", "decode_piecewise_graphs"):  # the decode pool's Deployment refuses it (spec.plan)
        return _disagg_priced(m, g, dg, w, prefill=prefill, decode=decode, weight_dtype=weight_dtype, activation_dtype=activation_dtype,
                              kv_dtype=kv_dtype, engine=engine_arg(engine, backend), spec=sd, max_num_tokens=max_num_tokens,
                              decode_max_num_tokens=decode_max_num_tokens, prefill_instances=prefill_instances,
                              decode_instances=decode_instances, concurrencies=conc, decode_max_batch=decode_max_batch,
                              prefill_routing=prefill_routing, decode_recv_interval=decode_recv_interval,
                              decode_moe_a2a=decode_moe_a2a, calibration=_ref(calibration),
                              decode_cuda_graph_max_bs=decode_cuda_graph_max_bs, decode_piecewise_graphs=decode_piecewise_graphs)


def _disagg_priced(m, g, dg, w, *, weight_dtype, activation_dtype, kv_dtype, **kw) -> DisaggEstimate:
    """disagg's pools priced by explore.disagg_search.price_pools, its one code path."""
    from llm_codesign.explore.disagg_search import price_pools
    from llm_codesign.spec.plan import precision_for

    return price_pools(m, g, decode_gpu=dg, precision=precision_for(m, weight_dtype, activation_dtype, kv_dtype, gpu=g), isl=w.isl,
                       osl=w.osl, arrival=w.arrival, **kw)


def mix(model: str | ModelSpec, deployment: Deployment, *, lengths: str | Path | None = None, isl_dist: str | None = None,
        osl_dist: str | None = None, concurrency: int = 64, calibration: Calibration | Profile | str | None = None,
        arrival: str | None = None) -> Mix:
    """One deployment (one instance: `lc.deployment(...)`) serving requests of many lengths, as `llm-codesign mix` prices
    them (explore.lengths.mix, one code path): `lengths` a CSV of requests (columns isl, osl, and count or weight) or
    `isl_dist` and `osl_dist` (`fixed:N`, `uniform:LO,HI` or `lognormal:median=M,sigma=S`), at `concurrency` requests in
    flight, arriving as `arrival` says (waves, closed_loop or burst: Workload.arrival; None: waves where every request has one
    ISL and OSL, else closed_loop, explore.lengths.mix_arrival). Returns a `Mix`: TTFT mean and percentiles over the requests, TPOT per output token, tok/s/user, tok/s/GPU
    and each distinct length's figures; `to_dict()` is what `mix --json` prints."""
    from llm_codesign.explore.lengths import check_lengths
    from llm_codesign.explore.lengths import mix as run
    from llm_codesign.spec.plan import MAX_CONCURRENCY
    from llm_codesign.spec.validation import as_int

    if not isinstance(deployment, Deployment):
        raise InputError("deployment", deployment if isinstance(deployment, (str, int, float)) else type(deployment).__name__,
                         "a Deployment: lc.deployment(model, gpu=..., num_gpus=...)")
    check_lengths(lengths, isl_dist, osl_dist)
    as_int("concurrency", concurrency, hi=MAX_CONCURRENCY, what=f"requests in flight, an integer from 1 to {MAX_CONCURRENCY:,}")
    return run(get_model(model), deployment, lengths=lengths, isl_dist=isl_dist, osl_dist=osl_dist, concurrency=concurrency,
               calibration=_calibration(deployment.gpu, calibration), arrival=arrival)


def import_config(path: str | Path, *, gpu: str | Gpu | None = None, model: str | Path | dict | ModelSpec | None = None,
                  backend: str | None = None, concurrency: int | None = None, isl: int | None = None, osl: int | None = None,
                  acceptance: float | None = None, acceptance_rates: str | tuple | list | None = None,
                  calibration: str | Profile | None = None, engine: str | None = None, arrival: str | None = None,
                  prefix_hit: float | None = None) -> ImportEstimate:
    """The deployment an engine configuration starts, priced as `llm-codesign import` prices it (explore.export.
    import_config, one code path; `import` is Python's keyword): `path` a file `export` wrote, or the engine's own `vllm
    serve ...` / `sglang.launch_server ...` command line, vLLM `--config` YAML, TensorRT-LLM extra_llm_api_options YAML
    or `trtllm-serve` command; `gpu` the GPU an engine's configuration runs on (an export states its own), `model` the
    model where it names none or one the registry lacks (as get_model takes it: a name, a config.json path, its dict or
    a ModelSpec; an export's model by its name or its shape, which its header records for a shape the registry lacks),
    `backend` (or `engine`) the engine of a YAML whose keys do not
    tell (any of its names: an export's own, or on a Dynamo export dynamo or its workers'), `concurrency` requests per
    instance (default: an export's own, which its header records, else the configuration's max batch), `isl`/`osl`
    (default: the export's, else 1024), `arrival` (spec.harness.ARRIVALS) and `prefix_hit` (the share of each prompt in
    the prefix cache, 0 to <1; both default to the export's, which its header records, else waves and 0),
    `acceptance`/`acceptance_rates` its speculation's (one rate per draft token; an export's own only: it is priced at
    it). Returns an `ImportEstimate` (its `estimate` the Estimate with its
    intervals, `ignored` the options not modelled); `to_dict()` is what `import --json` prints."""
    from llm_codesign.explore.disagg_search import priced_pools
    from llm_codesign.explore.export import import_config as run
    from llm_codesign.explore.lengths import shown
    from llm_codesign.spec.plan import MAX_CONCURRENCY, MAX_STEP_TOKENS
    from llm_codesign.spec.validation import as_float, as_int

    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise InputError("path", shown(path), "an export's or an engine configuration's path")
    for k, v, what in (("backend", backend, "an engine's name (llm-codesign engines)"), ("engine", engine, "an engine's name (llm-codesign engines)")):
        if v is not None and not (isinstance(v, str) and v.strip()):
            raise InputError(k, shown(v), what + ", or None")
    if model is not None and not isinstance(model, (dict, ModelSpec)) and not (isinstance(model, (str, Path)) and str(model).strip()):
        raise InputError("model", shown(model), "a registry name, Hugging Face id, config.json path, its dict or a ModelSpec, or None")
    if concurrency is not None:
        as_int("concurrency", concurrency, hi=MAX_CONCURRENCY, what=f"requests in flight per instance, an integer from 1 to {MAX_CONCURRENCY:,}")
    for k, v in (("isl", isl), ("osl", osl)):
        if v is not None:
            as_int(k, v, hi=MAX_STEP_TOKENS, what=f"tokens per request, an integer from 1 to {MAX_STEP_TOKENS:,}")
    if acceptance is not None:
        as_float("acceptance", acceptance, lo=1.0, what="mean accepted tokens per step, a number of at least 1")
    g = get_gpu(gpu) if gpu is not None else None
    return run(str(path), price=estimate, price_pools=priced_pools, gpu=g, model=model, backend=engine_arg(engine, backend), concurrency=concurrency, isl=isl,
               osl=osl, acceptance=acceptance, acceptance_rates=acceptance_rates, calibration=_ref(calibration, objects=False), arrival=arrival,
               prefix_hit=prefix_hit)


def _texts(value, field: str, what: str) -> list[str]:
    """One name (a string or a path) or a list or tuple of them, as strings; None: none. A number there was a TypeError."""
    if value is None:
        return []
    items = [value] if isinstance(value, (str, Path)) else value if isinstance(value, (list, tuple)) else None
    if items is None or any(not isinstance(x, (str, Path)) or not str(x).strip() for x in items):
        raise InputError(field, value, f"{what}, or a list of them")
    return [str(x) for x in items]


def calibrate(*, kernels: str | list[str] | None = None, serving: str | None = None, output: str | None = None,
              hold_out: str | list[str] | None = None, clean: bool = False, force: bool = False,
              calibration: str | Profile | None = None, progress=None) -> Profile:
    """A calibration profile fitted to your own measurements, as `llm-codesign calibrate` fits it (measure.calibrate.
    fit_profile, one code path): `kernels` kernel CSVs (or bundled tables' names, e.g. "hopper/comm"), `serving` a
    serving CSV in the canonical columns (or a bundled one's name; `clean`: its clean form, `hold_out`: models left out
    of the fit), fitted from `calibration` (a profile; default the bundled fit). A fit whose error is not a finite
    figure is refused, and one worse than its start (its banded median, or a figure `validate` prints on its own runs),
    on a bound of its range, unconverged or with every host cost of an engine at its floor (the error lies in what the
    serving fit cannot move) unless `force`, as the CLI refuses them; the serving report's `limits` say each fitted value on a limit of its range and what it means. Returns the `Profile` (its TOML `text`, each fit's `report`; the serving report's `scope` names
    the GPU families each fitted value is written for, those its runs were on, and no other family's answers move),
    written to `output` only where given; pass it as `calibration=` to any function here. `progress(done, total)` is called as the fits go."""
    from llm_codesign.measure.calibrate import fit_profile
    from llm_codesign.outputs import check_writable

    ks, held = _texts(kernels, "kernels", "a kernel CSV's path or a bundled table's name"), _texts(hold_out, "hold_out", "a model's name")
    if not ks and not serving:
        raise InputError("kernels", kernels, "at least one kernel CSV (kernels=) or a serving CSV (serving=) to fit")
    if serving is not None and not isinstance(serving, (str, Path)):
        raise InputError("serving", serving, "a serving CSV's path or a bundled one's name")
    if held and not serving:
        raise InputError("hold_out", hold_out, "left out unless serving= is given (it leaves serving rows out of the fit)")
    if clean and not serving:
        raise InputError("clean", clean, "False unless serving= is given (it checks serving rows)")
    if isinstance(calibration, Calibration):
        raise InputError("calibration", "a Calibration", "a profile's path or a Profile (a fit starts from a profile file's values)")
    start = _ref(calibration, objects=False)
    if start is not None:  # read now: a missing file fails before minutes of fitting
        from llm_codesign.spec.hardware import catalog

        calibration_for(next(iter(catalog().values())), start)
    for k, v in (("clean", clean), ("force", force)):
        if not isinstance(v, bool):
            raise InputError(k, v, "True or False")
    if progress is not None and not callable(progress):
        raise InputError("progress", progress, "a function called as progress(done, total), or None")
    if output is not None:
        if not isinstance(output, (str, Path)) or not str(output).strip():
            raise InputError("output", output, "a file's path to write the profile to, or None")
        check_writable("output", output)  # before minutes of fitting, not after
    p = fit_profile(ks, None if serving is None else str(serving), hold_out=held, clean=clean, force=force,
                    calibration=start, output=output, progress=progress, force_words="force=True")
    return p.write(output) if output is not None else p


def export_point(frontier: Frontier, index: int, *, file_name: str | None = None, calibration: str | Profile | None = None,
                 draft_model: str | None = None) -> dict:
    """The engine's launch configuration of one point of an aggregated frontier (`frontier.points[index]`: 0 the
    throughput end, the last, -1, the interactive end), as `llm-codesign export-point` writes it from `pareto --json`
    (explore.export.point_config, one code path): its plan, precision, step token budget and batch, its predicted
    metrics in the header. Returns `{file name: text}`, nothing written; `file_name` is the name the file launches
    itself by (default: the engine's own; no folder, path separator or control character). The header records the
    profile the frontier was priced with (the Frontier keeps it: lc.pareto's `calibration`), as `pareto --json` records
    it; `calibration` may name that one again (a path, or a Profile written to one: an unwritten one given to pareto
    and written since), and another is refused, the launch file's figures being that profile's. `draft_model`: the
    EAGLE-3 head's repository where the frontier searched without one (export-point --draft-model, explore.export.with_drafter)."""
    from llm_codesign.explore.export import point_config, point_index, with_drafter

    if not isinstance(frontier, Frontier) or frontier.mode != "aggregated":
        raise InputError("frontier", type(frontier).__name__ if not isinstance(frontier, Frontier) else f"a {frontier.mode} Frontier",
                         "an aggregated Frontier (lc.pareto; a disaggregated deployment's files: `llm-codesign export --prefill/--decode`)")
    if not frontier.points:
        raise InputError("frontier", "no points", "a frontier with at least one point (no deployment met its SLO)")
    index = point_index(index, len(frontier.points), of="the frontier")
    if file_name is not None and (not isinstance(file_name, str) or file_name.strip() in ("", ".", "..") or "/" in file_name
                                  or "\\" in file_name or any(ord(c) < 32 or ord(c) == 127 for c in file_name)):
        raise InputError("file_name", file_name, "a file's name without a folder, path separator or control character, e.g. config.yaml")
    was, shown = frontier.calibration, calibration if isinstance(calibration, (str, int, float)) else type(calibration).__name__
    # the file's header must name the profile its figures were priced with: another one would price them otherwise
    other = ("left out or the profile the frontier was priced with ({}): the launch file records the profile of its "
             "predicted figures")
    if isinstance(was, Profile) and was.path is None and calibration is not None:
        if not (isinstance(calibration, Profile) and calibration.text == was.text):
            raise InputError("calibration", shown, other.format("an unwritten Profile: that one, written, profile.write(path)"))
        was = calibration  # priced with an unwritten Profile, given here as written since (Profile.write)
    priced = _recorded(was, frontier.gpu)
    if calibration is not None and not same_profile(_recorded(calibration, frontier.gpu), priced):
        raise InputError("calibration", shown, other.format(priced or "the bundled one"))
    calibration = priced
    p = frontier.points[index]
    d = p.to_dict()
    model = frontier.model_spec if frontier.model_spec is not None else get_model(frontier.model)  # the shape searched
    name, text = point_config(model, with_drafter(p.deployment, draft_model), concurrency=p.concurrency, replicas=p.replicas,
                              isl=frontier.workload.isl, osl=frontier.workload.osl, arrival=frontier.workload.arrival,
                              prefix_hit=frontier.workload.prefix_hit,
                              predicted={k: d[k] for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")},
                              calibration=calibration, file_name=file_name)
    return {name: text}


def _recorded(calibration, gpu: Gpu) -> str | None:
    """The profile a launch file records (explore.export.recorded_profile, the rule pareto --json records by): None for
    the bundled one, else a readable profile's path; one no path names (an unwritten Profile, a Calibration other than the
    bundled one) is refused."""
    path, unrecorded = recorded_profile(calibration if isinstance(calibration, (Calibration, Profile)) else _ref(calibration, objects=False), gpu)
    if unrecorded is not None:
        raise InputError("calibration", unrecorded, "a path, or a Profile written to one (lc.calibrate(output=...), profile.write(path)): "
                                                    "the file records it, so that `import` prices it alike")
    if path is not None:
        calibration_for(gpu, path)  # a missing or unreadable profile refused as every pricing call refuses it
    return path


def lint(model: str | ModelSpec, gpu: str | Gpu, *, regime: str = "throughput", weight_dtype: str | None = None,
         activation_dtype: str | None = None, kv_dtype: str | None = None, engine: str | None = None,
         calibration: Calibration | Profile | str | None = None, backend: str | None = None) -> Lint:
    """The guideline findings for a shape on a GPU (the `findings` of `llm-codesign lint --json`), each with its predicted
    cost and fix, as dicts, priced on `engine`
    (default: the GPU vendor's, or where its kernels take none of the shape's head sizes an engine that runs it, which R4
    names; one that does not run on the GPU is refused: spec.engines.engine_for). A list of them (explore.lint.Lint) that
    also says where they were priced: `engine`, `priced_at` and `caption`; `to_dict()` is what `lint --json` prints."""
    from llm_codesign.explore.lint import lint_priced
    from llm_codesign.spec.plan import precision_for

    m, g, name = get_model(model), get_gpu(gpu), engine_arg(engine, backend)
    found = lint_priced(m, g, _calibration(g, calibration), regime, prec=precision_for(m, weight_dtype, activation_dtype, kv_dtype, gpu=g),
                        engine=engine_for(g, name) if name else None)
    return Lint(m, g, regime, found)


def design(params: float, gpu: str | Gpu = DESIGN_GPU, *, num_gpus: int = 8, regime: str = "throughput", moe: bool = False,
           baseline: str | ModelSpec | None = None, weight_dtype: str | None = None, activation_dtype: str | None = None,
           kv_dtype: str | None = None, engine: str | None = None, isl: int | None = None, osl: int | None = None,
           min_tps_user: float = 20.0, min_tps_gpu: float = 50.0, budget_tol: float = 0.1, quality_tol: float = 0.0,
           quality_sigmas: float = 1.0, outside_envelope: bool = False, max_candidates: int = 20000, top: int = DESIGN_TOP,
           active_params: float | None = None, calibration: Calibration | Profile | str | None = None, progress=None,
           backend: str | None = None, rank_all: bool = False) -> dict:
    """Model shapes at a parameter budget, inside the published models' envelope (unless `outside_envelope`)
    and no worse in proxy loss than the baseline (without one, the nearest published model of the kind) beyond
    `quality_sigmas` of the difference's uncertainty (MoE: `active_params`, an active-parameter budget within `budget_tol`
    too), ranked by the frontier value they reach at the regime's
    SLO (the dict `llm-codesign design --json` prints): each row with its lint counts and its objective's 80% and
    95% intervals (`intervals`), and the top three beside the reference in `side_by_side` (explore.design_report).
    `progress`, where given, is called as `progress(done, total)` with the shapes priced so far. Rows whose quality the proxy
    resolves (err ± <= |loss| + ±test) rank first, the answer's `resolved` counting them (the rows shown among them, the best
    of them and the best unresolved gain); `rank_all` ranks by the objective alone (the CLI's --rank-all). `screened`'s
    `quality_limit` holds the `quality_sigmas` values that admit the same shapes. render.design_lines.quality_rule_line and
    resolved_line say both as the CLI and the page do."""
    from llm_codesign.explore.design import Slo, check_options
    from llm_codesign.explore.design import design as run
    from llm_codesign.explore.design_report import complete
    from llm_codesign.measure.intervals import table_for
    from llm_codesign.spec.plan import precision_for
    from llm_codesign.spec.precision import Precision as _P

    check_options(params=params, active_params=active_params, budget_tol=budget_tol, quality_tol=quality_tol, quality_sigmas=quality_sigmas,
                  min_tps_user=min_tps_user, min_tps_gpu=min_tps_gpu, num_gpus=num_gpus, isl=isl, osl=osl, max_candidates=max_candidates,
                  top=top)
    g = get_gpu(gpu)
    base = get_model(baseline) if baseline is not None else None
    prec = precision_for(base, weight_dtype, activation_dtype, kv_dtype, gpu=g) if base else (
        _P.of(weight_dtype or "bf16", activation_dtype, kv_dtype) if (weight_dtype or activation_dtype or kv_dtype) else None)
    slo, cal, eng = Slo(regime, min_tps_user, min_tps_gpu, isl, osl), _calibration(g, calibration), engine_for(g, engine_arg(engine, backend))
    prec = prec or (base.default_precision if base else _P.of("bf16"))  # what design prices: the baseline's, else BF16
    r = run(params, g, cal, num_gpus, slo, baseline=base, moe=moe, prec=prec, budget_tol=budget_tol, quality_tol=quality_tol,
            quality_sigmas=quality_sigmas, outside_envelope=outside_envelope, engine=eng, max_candidates=max_candidates, top=top,
            progress=progress, active_params=active_params, rank_all=_flag("rank_all", rank_all))
    # each row's lint and intervals, and the top designs beside the reference (explore.design_report), as `design --json`
    return complete(r, params=params, gpu=g, cal=cal, prec=prec, num_gpus=num_gpus, slo=slo, moe=moe, engine=eng, baseline=base,
                    budget_tol=budget_tol, table=table_for(_ref(calibration), gpu=g))


def _flag(name: str, value) -> bool:
    """A True/False keyword, anything else refused in one line (numpy's ~ of an int in the ranking read 1 as a mask)."""
    if not isinstance(value, bool):
        raise InputError(name, value, "True or False")
    return value


def validate_serving(path: str, *, calibration: str | Profile | None = None, clean: bool = False, runs: bool = False) -> dict:
    """Predict each run of a serving CSV (the canonical columns; `path` or the name of a bundled one) and report the
    errors and the share of runs inside the stated intervals, as `llm-codesign validate --serving FILE --json` does
    (`clean` as its `--clean`); `columns`: the file's columns nothing reads (`not_read`) and the measured metrics it has
    no column for (`absent_metrics`, not compared), measure.validate.columns_read. With `runs`, `runs` holds each row
    with its predictions and their 80% interval beside it (`predicted_tpot_ms`, `predicted_tpot_ms_lo`, ...: the rows
    `validate --out` writes, numeric columns as numbers), a table of measured against predicted. A file none of whose rows
    can be priced is refused."""
    from llm_codesign.measure.serving_check import validate_serving as run
    from llm_codesign.measure.validate import predicted_rows, typed_row

    with _named("serving", "path"):  # the CLI's --serving FILE is this call's `path`
        rows, preds, rep = run(path, _ref(calibration), clean=clean)
    return rep | {"runs": predicted_rows([typed_row(r) for r in rows], preds)} if runs else rep
