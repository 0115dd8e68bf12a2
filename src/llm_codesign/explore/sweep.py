"""Sweeps beyond one search: models x GPUs x precisions x engines x workloads, cut into tasks that each
search one chunk of the space (one instance size of one combination) and keep only its Pareto frontier.

The frontier of a union is the frontier of the union of its parts' frontiers, so reducing every task
locally loses no point of any combination's frontier, and only frontier rows ever leave a task: a sweep
of 10^8 deployments holds one chunk's arrays (search.CHUNK deployments) per worker and streams the rows
to Parquet (`write_parquet`) as the tasks finish, in task order. The tasks run in-process by default, on
a local Dask cluster (`scheduler="local"`) or on an existing one (`"tcp://HOST:PORT"`, or
DASK_SCHEDULER_ADDRESS): the same function over the same tasks, so every scheduler gives the same rows."""
from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from llm_codesign.errors import InputError
from llm_codesign.measure.intervals import METRICS  # the metrics a row carries bounds of: the frontier's, one definition
from llm_codesign.outputs import bound_columns, predictable_column, write_all

# the columns of a sweep's rows, in order (Parquet schema: see _schema)
COLUMNS = (
    ("task", "int64"), ("model", "string"), ("gpu", "string"), ("num_gpus", "int64"), ("backend", "string"), ("isl", "int64"),
    ("osl", "int64"), ("prefix_hit", "float64"), ("weight_dtype", "string"), ("activation_dtype", "string"), ("kv_dtype", "string"), ("plan", "string"),
    ("tp", "int64"), ("pp", "int64"), ("ep", "int64"), ("moe_tp", "int64"), ("attention_dp", "int64"), ("kvp", "int64"),
    ("instance_gpus", "int64"), ("replicas", "int64"), ("concurrency_per_instance", "int64"), ("max_num_tokens", "int64"),
    ("spec", "string"), ("draft_len", "int64"), ("tok_s_per_user", "float64"), ("output_tok_s_per_gpu", "float64"),
    ("ttft_ms", "float64"), ("tpot_ms", "float64"), ("accuracy_source", "string"), ("accuracy_drop_pct", "float64"),
    ("usd_per_m_output_tokens", "float64"), ("usd_per_m_tokens", "float64"),
    # each metric's 80% and 95% bounds and whether its 95% is narrow enough to be a prediction (measure.intervals.band,
    # as pareto's points carry them), and why the bands widen beyond the runs: Frontier.to_records' names (newc7 #10)
    *((c, "float64") for m in METRICS for c in bound_columns(m).values()),
    *((predictable_column(m), "bool") for m in METRICS), ("interval_widened", "string"),
)


@dataclass(frozen=True)
class Task:
    """One chunk of a sweep, in plain types so it travels to any worker."""
    index: int
    model: str
    gpu: str
    num_gpus: int
    instance_gpus: int
    weight_dtype: str
    activation_dtype: str
    kv_dtype: str
    backend: str
    isl: int
    osl: int
    step_tokens: tuple[int, ...] = ()
    max_ttft_ms: float | None = None
    min_tps_user: float | None = None
    calibration: str | None = None
    gpu_hour_price: str | None = None
    prefix_hit: float = 0.0


def plan_tasks(models: Iterable[str], gpus: Iterable[str], *, num_gpus: int, precisions: Iterable[str] | None = None,
               backends: Iterable[str] = ("trtllm",), workloads: Iterable[tuple[int, int]] = ((1024, 1024),),
               step_tokens: tuple[int, ...] = (), max_ttft_ms: float | None = None, min_tps_user: float | None = None,
               calibration: str | None = None, gpu_hour_price: str | None = None, prefix_hit: float = 0.0) -> list[Task]:
    """Every task of a sweep, checked before any runs (names resolve, lengths are positive, the prefix-cache
    hit rate is a share in [0, 1), each engine runs each model's head size on each GPU: head_dims.check_head_dims,
    the refusal search applies)."""
    from llm_codesign.explore.search import divisors, parse_precisions, refuse_without_decode, searched_defaults
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.engines.head_dims import check_head_dims
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import Workload
    from llm_codesign.spec.registry import get_model

    if num_gpus < 1:
        raise InputError("gpus", num_gpus, "a positive integer")
    workloads = [(int(i), int(o)) for i, o in workloads]
    for isl, osl in workloads:
        if isl < 1 or osl < 1:
            raise InputError("isl/osl", (isl, osl), "positive token counts")
        refuse_without_decode(osl, frontier="a sweep, whose every task Pareto-reduces tok/s/GPU against tok/s/user")
        Workload(isl=isl, osl=osl, prefix_hit=prefix_hit)
    backends = [get_engine(b).name for b in backends]
    tasks = []
    for mref, gref in itertools.product(models, gpus):
        m, g = get_model(mref), get_gpu(gref)
        for backend in backends:  # lint R4's error, as search refuses it, before any task runs (not mid-sweep, nothing written)
            check_head_dims(m, backend, g)
        if precisions:
            precs = [p for w in precisions for p in parse_precisions(w, None, None, m, g)]
        else:
            precs = list(searched_defaults(m, g))  # pareto's: less the formats whose accuracy nothing measures
        for prec, backend, (isl, osl), n in itertools.product(precs, backends, workloads, divisors(num_gpus)):
            tasks.append(Task(len(tasks), mref, g.id, num_gpus, n, prec.weight.name, prec.activation.name, prec.kv.name, backend,
                              isl, osl, tuple(step_tokens), max_ttft_ms, min_tps_user, calibration, gpu_hour_price, prefix_hit))
    return tasks


def run_task(task: Task) -> dict:
    """Search one chunk and keep its frontier: {"task", "rows", "evaluated", "seconds"}. A chunk with no
    valid plan (this instance size does not divide the model) has no rows."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.pricing import cost_of
    from llm_codesign.explore.search import SearchSpace, search
    from llm_codesign.measure.intervals import table_for
    from llm_codesign.serve.metrics import interval_columns
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import precision_for
    from llm_codesign.spec.registry import get_model

    t0 = time.perf_counter()
    m, g = get_model(task.model), get_gpu(task.gpu)
    prec = precision_for(m, task.weight_dtype, task.activation_dtype, task.kv_dtype, gpu=g)
    space = SearchSpace(task.num_gpus, instance_gpus=(task.instance_gpus,), precisions=(prec,), step_tokens=task.step_tokens)
    try:
        r = search(m, g, calibration_for(g, task.calibration), space, isl=task.isl, osl=task.osl, engine=get_engine(task.backend),
                   max_ttft_ms=task.max_ttft_ms, min_tps_user=task.min_tps_user, prefix_hit=task.prefix_hit)
    except InputError as e:
        if e.field in ("gpus", "deployment"):  # no plan of this size: an empty chunk, not an error
            return {"task": task.index, "rows": [], "evaluated": 0, "fitting": 0, "seconds": time.perf_counter() - t0}
        if e.field in ("weight_dtype", "activation_dtype", "attn_weight_dtype"):  # a format this engine has no kernel for on
            # this GPU (Engine.precision_refusal): that cell is empty and said in the totals, the others' rows kept
            return {"task": task.index, "rows": [], "evaluated": 0, "fitting": 0, "seconds": time.perf_counter() - t0,
                    "refused": f"{task.gpu} {task.backend} {task.weight_dtype}: {e}"}
        raise
    r = r.banded(m, table=table_for(task.calibration, gpu=g))  # each point's intervals, as pareto's (api.pareto)
    rows = []
    for p in (q.to_dict() for q in r.points):  # the rows hold what --json prints
        d, a = p["deployment"], p.get("accuracy") or {}
        row = {"task": task.index, "model": m.name, "gpu": g.id, "num_gpus": task.num_gpus, "backend": task.backend,
               "isl": task.isl, "osl": task.osl, "prefix_hit": task.prefix_hit, **{k: d[k] for k in ("weight_dtype", "activation_dtype", "kv_dtype", "plan", "tp", "pp",
                                                                       "ep", "moe_tp", "attention_dp", "kvp", "instance_gpus", "replicas",
                                                                       "concurrency_per_instance", "max_num_tokens", "spec", "draft_len")},
               **{k: p[k] for k in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms")},
               "accuracy_source": a.get("source"), "accuracy_drop_pct": a.get("relative_drop_pct")}
        c = cost_of(g, task.gpu_hour_price, p["output_tok_s_per_gpu"], task.isl, task.osl) if task.gpu_hour_price else None
        row["usd_per_m_output_tokens"] = c["usd_per_m_output_tokens"] if c else None
        row["usd_per_m_tokens"] = c["usd_per_m_tokens"] if c else None
        iv = p.get("intervals") or {}
        rows.append(row | interval_columns(iv))
    return {"task": task.index, "rows": rows, "evaluated": r.evaluated, "fitting": r.fitting,
            "seconds": time.perf_counter() - t0}


def _client(scheduler: str, workers: int | None, processes: bool = False):
    """A Dask client: a LocalCluster for "local" (threads of one process, or with `processes` one
    single-threaded worker process each), the scheduler at that address otherwise."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("scheduler", scheduler, "in-process (omit it), or install the dist extra for Dask: "
                         "pip install 'llm-codesign[dist]'") from None
    if scheduler == "local":
        n = workers or os.cpu_count() or 1
        if processes:  # tasks that are mostly Python (the calibration fits) hold the GIL: a process each
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
        else:  # threads in one process by default: the numpy kernels release the GIL, and nothing is pickled
            cluster = LocalCluster(n_workers=1, threads_per_worker=n, processes=False, dashboard_address=None)
        return Client(cluster), cluster
    if not scheduler.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        raise InputError("scheduler", scheduler, "local, or a Dask scheduler address such as tcp://HOST:8786")
    try:
        return Client(scheduler, timeout="10s"), None
    except (OSError, TimeoutError) as e:
        raise InputError("scheduler", scheduler, f"a Dask scheduler that answers ({type(e).__name__})") from None


def execute(tasks: list[Task], *, scheduler: str | None = None, workers: int | None = None, window: int | None = None,
            fn: Callable[[Task], dict] = run_task, processes: bool = False) -> Iterator[dict]:
    """Run `fn` over the tasks and yield the results in task order, whatever the scheduler. At most
    `window` tasks are in flight (default 4 per worker thread), so results wait for their turn in a
    bounded buffer. `processes`: a local cluster of worker processes instead of threads (fn and the
    tasks are then pickled; an existing cluster's workers are what it is)."""
    scheduler = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    if scheduler in (None, "", "none", "serial"):
        for t in tasks:
            yield fn(t)
        return
    client, cluster = _client(scheduler, workers, processes)
    try:
        n = max(1, sum(client.nthreads().values()))
        window = window or 4 * n
        futures = []
        it = iter(tasks)
        for t in itertools.islice(it, window):
            futures.append(client.submit(fn, t, pure=False))
        while futures:
            f = futures.pop(0)
            yield f.result()
            f.release()
            nxt = next(it, None)
            if nxt is not None:
                futures.append(client.submit(fn, nxt, pure=False))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _schema():
    import pyarrow as pa

    kinds = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string(), "bool": pa.bool_()}
    return pa.schema([(name, kinds[kind]) for name, kind in COLUMNS])


def write_parquet(results: Iterable[dict], path: str, *, progress: Callable[[dict], None] | None = None,
                  on_empty: Callable[[dict], BaseException] | None = None) -> dict:
    """Stream the rows of each task's result to one Parquet file as they come (outputs.write_all: a
    temporary file renamed into place at the end, nothing half-written); returns the totals. A sweep in
    which no task has a row raises `on_empty(totals)` where given (the CLI's one line naming the GPU
    count or the SLO), writing nothing."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("out", path, "a path once the dist extra is installed for Parquet: pip install 'llm-codesign[dist]'") from None
    schema = _schema()
    totals = {"tasks": 0, "rows": 0, "evaluated": 0, "fitting": 0, "seconds": 0.0}

    def write(tmp) -> None:
        with pq.ParquetWriter(tmp, schema) as w:
            for r in results:
                if r["rows"]:
                    w.write_table(pa.Table.from_pylist(r["rows"], schema=schema))
                totals["tasks"] += 1
                totals["rows"] += len(r["rows"])
                totals["evaluated"] += r["evaluated"]
                totals["fitting"] += r.get("fitting", len(r["rows"]))
                totals["seconds"] += r["seconds"]
                if r.get("refused") and r["refused"] not in totals.setdefault("refused", []):
                    totals["refused"].append(r["refused"])
                if progress:
                    progress(totals)
        if on_empty is not None and not totals["rows"]:
            raise on_empty(totals)

    write_all([(write, path)])
    return totals


def frontier(df, keys=("model", "gpu", "num_gpus", "backend", "isl", "osl")):
    """The Pareto frontier (tok/s/user x tok/s/GPU) of each group of a sweep's rows (a DataFrame)."""
    from llm_codesign.explore.search import pareto_mask

    parts = [g[pareto_mask(g["tok_s_per_user"].to_numpy(), g["output_tok_s_per_gpu"].to_numpy())]
             for _, g in df.groupby(list(keys), sort=True)]
    import pandas as pd

    return pd.concat(parts).sort_values([*keys, "tok_s_per_user"]).reset_index(drop=True) if parts else df.iloc[:0]


def stderr_progress(total_tasks: int) -> Callable[[dict], None]:
    """A progress line on stderr every second of a sweep that runs that long, and then one at the end; a
    sweep done within its first second prints nothing (as pareto's search), so its one error line stays one."""
    t0 = time.perf_counter()
    last = [t0]
    shown = [False]

    def show(t: dict) -> None:
        now = time.perf_counter()
        if now - last[0] >= 1.0 or (t["tasks"] == total_tasks and shown[0]):
            last[0], shown[0] = now, True
            print(f"sweep: {t['tasks']}/{total_tasks} tasks, {t['evaluated']:,} deployments, {t['rows']:,} frontier rows, "
                  f"{now - t0:.1f} s", file=sys.stderr, flush=True)

    return show
