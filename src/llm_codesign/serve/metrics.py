"""`evaluate(model, deployment, workload)`: typed, array-valued serving metrics of one Deployment
under one Workload, in SI units — the one entry from the spec types into the serving model."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from llm_codesign.cost.calibration import Calibration, calibration_for
from llm_codesign.errors import InputError
from llm_codesign.outputs import bound_columns, predictable_column
from llm_codesign.serve.aggregated import Serving, deployment_ops
from llm_codesign.serve.aggregated import evaluate as _evaluate
from llm_codesign.serve.invariants import check_metrics
from llm_codesign.spec.engines import check_kv_format
from llm_codesign.spec.harness import OFFLINE_ARRIVAL
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Workload

# the batch grid offline max throughput is searched over (requests in flight per attention-DP rank)
GB = 1e9  # memory as the reports state it
# sorted(set()), not np.unique: the same values, without numpy.ma's import (np.unique's) in every process
BATCH_GRID = np.array(sorted({*range(1, 17), *np.round(np.geomspace(16, 65536, 120)).tolist()}), dtype=np.int64)


@dataclass(frozen=True)
class Metrics:
    """Serving metrics, each an array over the concurrencies evaluated (size 1 for one load). Times in
    seconds, rates per second, memory in bytes per GPU."""
    concurrency: np.ndarray  # requests in flight across the deployment
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    tok_s_per_user: np.ndarray
    output_tok_s_per_gpu: np.ndarray
    io_tok_s_per_gpu: np.ndarray
    # output tokens per joule of a GPU drawing its TDP: a lower bound on the GPU's own tokens per joule
    # (serve.energy prices the power a deployment draws; estimate and every frontier point report it)
    tokens_per_joule_at_tdp: np.ndarray
    accepted_per_step: np.ndarray  # tokens a decode step emits (1 without speculation)
    weights_bytes: np.ndarray
    kv_bytes: np.ndarray  # KV cache and recurrent state of the running sequences
    kv_bytes_per_seq: np.ndarray
    state_bytes: np.ndarray  # the recurrent-state part of kv_bytes
    activation_bytes: np.ndarray
    free_bytes: np.ndarray
    max_concurrency: np.ndarray  # the most requests the KV cache holds
    # the most requests that run at once: what the KV cache holds and what the step token budget decodes beside the
    # prompts arriving (max_concurrency is the former: lint and the search read it as capacity)
    max_batch: np.ndarray
    budget_binds: np.ndarray  # the step token budget, not the KV cache or the batch limit, sets max_batch
    # the load runs at once: the KV cache and the batch limits (launch cap, step budget) hold it (a search's and offline's
    # "fits"; estimate's Estimate.fits is the memory's alone, kv_seqs)
    fits: np.ndarray
    kv_seqs: np.ndarray  # the requests the KV cache holds whole (ISL+OSL each) over the deployment, whatever the batch limits

    def to_dict(self) -> dict:
        """Plain Python: a float/int/bool per field for one load, lists for several."""
        def plain(a):
            a = np.asarray(a)
            return a.reshape(-1)[0].item() if a.size == 1 else a.reshape(-1).tolist()
        return {f.name: plain(getattr(self, f.name)) for f in fields(self)}

    def to_pandas(self):
        """One row per load (pandas is an optional dependency)."""
        import pandas as pd

        return pd.DataFrame({f.name: np.asarray(getattr(self, f.name)).reshape(-1) for f in fields(self)})


# each engine's launch option for Deployment.kv_fraction (spec.harness.SchedulerFlags.kv_fraction)
FRACTION_OPTION = {"sglang": "--mem-fraction-static", "vllm": "--gpu-memory-utilization",
                    "trtllm": "kv_cache_config.free_gpu_memory_fraction"}


def _refuse_tight_fraction(dep: Deployment, activations: float) -> None:
    """SGLang's mem_fraction_static caps weights and KV pool, and what it leaves (1 - fraction of the GPU) is all its
    activations, CUDA graphs and context get (ModelRunnerKVCacheMixin._profile_available_bytes sizes the pool as free
    memory less pre-load memory x (1 - fraction), model_executor/model_runner_kv_cache_mixin.py:85-120@0.5.14). A
    fraction leaving less than a step's activations starts a server that runs out of memory capturing its graphs or on
    its first full chunk (its hint: "set --mem-fraction-static to a smaller value", runner_backend_utils/__init__.py:
    14-29@0.5.14): refused in one line naming the option and the fractions that fit, where the deployment states it
    (its own, static_fraction, reserves 1.5 MiB per chunk token, more than a step's activations). Here, under evaluate, so
    that lc.evaluate refuses it as estimate does."""
    budget = dep.engine.kv_budget[0]
    if budget != "static" or dep.kv_fraction is None:
        return
    mem, stated = dep.gpu.memory_bytes, float(dep.kv_fraction)
    if activations <= (1.0 - stated) * mem:
        return
    top = np.floor((1.0 - activations / mem) * 1000.0) / 1000.0
    raise InputError(FRACTION_OPTION.get(dep.engine.name, "kv_fraction"), stated,
                     f"it leaves {(1.0 - stated) * mem / GB:.1f} GB of the {dep.gpu.name}'s {mem / GB:.0f} GB beside weights and KV cache, "
                     f"and the activations of a step of {dep.rank_step_tokens:g} tokens and the CUDA context take {activations / GB:.1f} GB: "
                     + (f"at most {top:.3f}, or a smaller step budget" if top > 0 else "a smaller step budget"))


def evaluate(model: ModelSpec, deployment: Deployment, workload: Workload, *, calibration: Calibration | str | None = None,
             concurrency=None, offline: bool | None = None) -> Metrics:
    """Metrics of `deployment` serving `workload`. `concurrency` (an int or an array; a user's is checked where it
    enters, spec.plan.check_concurrency) overrides the workload's, priced as the workload's would be (its arrival); with
    neither, the offline maximum throughput: the load of the batch grid that fits and gives the most output tokens/s per
    GPU, priced as the offline benchmark runs it (OFFLINE_ARRIVAL, every request queued). `offline`: price the loads given
    as that benchmark's (estimate's search of an offline knee); None: offline only where neither gives a load (fixA13:
    an array of concurrencies on a load-less workload was priced offline, its arrival ignored)."""
    dep = deployment
    # a KV-cache format the engine holds for this model's attention (Engine.kv_formats: vLLM's NVFP4 cache, not for MLA)
    check_kv_format(dep.engine, dep.gpu, dep.precision.kv.name, model)
    cal = calibration if isinstance(calibration, Calibration) else calibration_for(dep.gpu, calibration)
    conc = workload.concurrency if concurrency is None else concurrency
    offline = conc is None if offline is None else offline
    kw = dict(cal=cal, isl=workload.isl, osl=workload.osl, prefix_hit=workload.prefix_hit,
              arrival=OFFLINE_ARRIVAL if offline else workload.arrival, offline=offline)
    if conc is None:
        grid = BATCH_GRID * int(np.asarray(dep.plan.adp))
        r = _evaluate(model, Serving.of(dep), concurrency=grid, **kw)
        conc = int(grid[int(np.argmax(np.where(r["fits"], r["output_tok_s_per_gpu"], -1)))])
    conc = np.asarray(conc, dtype=np.int64)
    r = _evaluate(model, Serving.of(dep), concurrency=conc, **kw)
    _refuse_tight_fraction(dep, float(np.max(r["activation_bytes"])))
    shape = np.broadcast(conc, r["ttft_s"]).shape
    val = {f.name: np.broadcast_to(np.asarray(r[f.name] if f.name != "concurrency" else conc), shape) for f in fields(Metrics)}
    return check_metrics(model, dep, Metrics(**val), workload=workload)  # no impossible answer leaves the core (issue 20)


def decode_operators(model: ModelSpec, deployment: Deployment, workload: Workload, concurrency: int, *,
                     calibration: Calibration) -> list:
    """The operators of the decode step the metrics at `concurrency` time (per GPU, the in-step
    calibration, draft and verify included): what a breakdown or a bottleneck is read from."""
    # energy() prices the same evaluation (deployment_ops keeps it): a list of its own, the operators shared
    return list(deployment_ops(model, deployment, workload, cal=calibration, concurrency=concurrency)["ops"])


# the metrics only a decode step makes: a request of one output token (OSL 1) takes it from its prefill and decodes nothing
DECODE_METRICS = ("tpot_ms", "tok_s_per_user")
# why a request of one output token has none of them, in the one wording every surface says it in (the CLI's tables,
# render.intervals.NO_DECODE; the page's schema, web.app; the search's refusals, explore.search)
NO_DECODE_WHY = "the one output token comes from the prefill: no decode step runs"


def no_decode(osl) -> bool:
    """Whether a request of `osl` output tokens runs no decode step: its one token comes from the prefill."""
    return osl <= 1


def records_frame(records: list[dict]):
    """A DataFrame of `records` (to_records') where a None stays None: pandas would read a column of figures and Nones
    as floats and NaN, so tokens_per_joule_node on an MI300X (no system rating bundled: power.toml [node]) or TPOT at
    OSL 1 said null in the JSON and the records but NaN in the frame (newc10 #14); such a column is kept as objects
    (isna() still finds them). pandas is an optional dependency."""
    import pandas as pd

    df = pd.DataFrame(records)
    for col in {k for r in records for k, v in r.items() if v is None}:
        if df[col].dtype != object:
            df[col] = pd.Series([r.get(col) for r in records], index=df.index, dtype=object)
    return df


def without_decode(d: dict) -> dict:
    """An answer's or a row's dict (to_dict's) as it is said at OSL 1, where no decode step runs: TPOT and tok/s/user are
    undefined, so None (JSON null, a CSV's blank cell, as tokens_per_joule_node where no rating is bundled; the tables'
    dash), their intervals left out, no eager-decode note (no decode step to miss a CUDA graph) and no operator's share of
    TPOT. The arrays the search and the other metrics are made of keep the decode step's figures: a prefill-only
    request's TTFT, tok/s/GPU and energy do not read them."""
    out = {**d, **{k: None for k in DECODE_METRICS if k in d}}
    out.pop("eager_decode", None)
    if isinstance(out.get("intervals"), dict):
        out["intervals"] = {k: v for k, v in out["intervals"].items() if k not in DECODE_METRICS}
    for key in ("breakdown", "point_breakdown"):
        if isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in o.items() if k != "tpot_ms"} if isinstance(o, dict) else o for o in out[key]]
    return out


def interval_columns(bands: dict | None) -> dict:
    """An answer's intervals (measure.intervals.band, per metric) as flat columns: `{metric}_lo80` ... `{metric}_hi95`,
    `{metric}_predictable` (outputs.predictable_column), and why they are widened beyond the runs, every metric's
    reasons once, in `interval_widened` (empty where none is)."""
    if not bands:
        return {}
    cols = {c: b[e] for m, b in bands.items() for e, c in bound_columns(m).items()}  # outputs' one naming table
    cols |= {predictable_column(m): b.get("predictable") for m, b in bands.items()}
    return cols | {"interval_widened": "; ".join(dict.fromkeys(str(w) for b in bands.values() for w in b.get("widened", ())))}
