"""`evaluate(model, deployment, workload)`: typed, array-valued serving metrics of one Deployment
under one Workload, in SI units — the one entry from the spec types into the serving model."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from llm_codesign.cost.calibration import Calibration, calibration_for
from llm_codesign.serve.aggregated import Serving
from llm_codesign.serve.aggregated import evaluate as _evaluate
from llm_codesign.serve.invariants import check_metrics
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Workload

# the batch grid offline max throughput is searched over (requests in flight per attention-DP rank)
BATCH_GRID = np.unique(np.concatenate([np.arange(1, 17), np.round(np.geomspace(16, 65536, 120))])).astype(np.int64)


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
    fits: np.ndarray  # the load fits the KV cache

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


def evaluate(model: ModelSpec, deployment: Deployment, workload: Workload, *, calibration: Calibration | str | None = None,
             concurrency=None) -> Metrics:
    """Metrics of `deployment` serving `workload`. `concurrency` (an int or an array; a user's is checked where it
    enters, spec.plan.check_concurrency) overrides the workload's; with neither, the offline maximum throughput: the load of the batch grid that fits
    and gives the most output tokens/s per GPU."""
    dep = deployment
    cal = calibration if isinstance(calibration, Calibration) else calibration_for(dep.gpu, calibration)
    conc = workload.concurrency if concurrency is None else concurrency
    kw = dict(cal=cal, isl=workload.isl, osl=workload.osl, prefix_hit=workload.prefix_hit, arrival=workload.priced_arrival,
              offline=workload.concurrency is None)
    if conc is None:
        grid = BATCH_GRID * int(np.asarray(dep.plan.adp))
        r = _evaluate(model, Serving.of(dep), concurrency=grid, **kw)
        conc = int(grid[int(np.argmax(np.where(r["fits"], r["output_tok_s_per_gpu"], -1)))])
    conc = np.asarray(conc, dtype=np.int64)
    r = _evaluate(model, Serving.of(dep), concurrency=conc, **kw)
    shape = np.broadcast(conc, r["ttft_s"]).shape
    val = {f.name: np.broadcast_to(np.asarray(r[f.name] if f.name != "concurrency" else conc), shape) for f in fields(Metrics)}
    return check_metrics(model, dep, Metrics(**val))  # no impossible answer leaves the core (issue 20)


def decode_operators(model: ModelSpec, deployment: Deployment, workload: Workload, concurrency: int, *,
                     calibration: Calibration) -> list:
    """The operators of the decode step the metrics at `concurrency` time (per GPU, the in-step
    calibration, draft and verify included): what a breakdown or a bottleneck is read from."""
    return _evaluate(model, Serving.of(deployment), cal=calibration, concurrency=np.asarray(concurrency, dtype=np.int64), isl=workload.isl,
                     osl=workload.osl, with_ops=True, prefix_hit=workload.prefix_hit, arrival=workload.priced_arrival,
                     offline=workload.concurrency is None)["ops"]
