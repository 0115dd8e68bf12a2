"""The `sweep` command: models x GPUs x precisions x engines x workloads, searched in tasks that each keep
their own Pareto frontier, in-process or on a Dask cluster, streamed to Parquet."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import typer

from llm_codesign.cli.common import (
    O_CAL,
    O_PREFIX,
    _console,
    _dump,
    _gpu,
    app,
    check_paths,
    nothing_found,
    token_list,
    vendor_engines,
)
from llm_codesign.errors import InputError, MissingInput
from llm_codesign.spec.engines import engine_for, engine_names


@app.command()
def sweep(
    # positional as every other command takes its model (newc9 #14: `sweep llama-3.1-8b` read as no --models)
    model: Optional[list[str]] = typer.Argument(None, metavar="MODEL", show_default=False,
                                                help="Models, as --models takes them (sweep llama-3.1-8b qwen3-8b, or one comma-separated)."),
    models: Optional[str] = typer.Option(None, "--models", help="Models, comma-separated (registry names, Hugging Face ids, config "
                                         "paths); or given positionally."),
    gpu: str = typer.Option(..., "--gpu", help="GPU ids, comma-separated."),
    gpus_: int = typer.Option(8, "--gpus", min=1, max=1 << 16, help="GPUs per deployment (replicas of smaller instances fill them)."),
    precisions: Optional[str] = typer.Option(None, "--precisions", help="Weight formats, comma-separated (default: the checkpoint's "
                                             "and what each GPU runs natively; each with BF16 and FP8 KV cache)."),
    backend: Optional[str] = typer.Option(None, "--backend", "--engine", help="Engines, comma-separated: " + ", ".join(engine_names())
                                          + f" (default: each GPU's, {vendor_engines()})."),
    isl: str = typer.Option("1024", "--isl", help="Input tokens per request, comma-separated (paired with --osl; 1k = 1,024 tokens, InferenceX's 1k)."),
    osl: str = typer.Option("1024", "--osl", help="Output tokens per request, comma-separated (paired with --isl; 1k = 1,024 tokens)."),
    max_num_tokens_grid: Optional[str] = typer.Option(None, "--max-num-tokens-grid", help="Step token budgets searched: a list or auto."),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", help="SLO: maximum TTFT in ms."),
    min_tps_user: Optional[float] = typer.Option(None, "--min-tps-user", help="SLO: minimum tokens/s per user."),
    gpu_hour_price: Optional[str] = typer.Option(None, "--gpu-hour-price", help="Dollars per GPU-hour, bundled, or a price file."),
    out: str = typer.Option(..., "-o", "--out", help="Parquet file (.parquet) of every task's frontier rows, each metric with its 80% and 95% bounds (_lo80 ... _hi95), "
                              "_predictable and why the bands widen (interval_widened)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="local (a Dask LocalCluster) or tcp://HOST:PORT "
                                            "(default: DASK_SCHEDULER_ADDRESS, else in-process)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, max=4096, help="Threads of the local cluster."),
    prefix_hit: float = O_PREFIX,
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the totals as JSON."),
):
    """Search many combinations at once; every task Pareto-reduces its chunk, the rows stream to Parquet."""
    from llm_codesign.explore.search import budget_grid
    from llm_codesign.explore.sweep import execute, plan_tasks, stderr_progress, write_parquet
    from llm_codesign.outputs import check_writable

    check_writable("out", out)  # before the tasks run, not after
    if not out.lower().endswith(".parquet"):  # the rows are Parquet whatever the name says (frev12 #3: x.csv held Parquet)
        raise InputError("out", out, "a .parquet path (sweep writes its rows as Parquet)")
    names = lambda s: list(dict.fromkeys(x.strip() for x in s.split(",") if x.strip()))  # noqa: E731  (a repeat once)
    models = ",".join([*(model or ()), *([models] if models else [])])  # the positional ones and --models', together
    if not names(models) and not models:
        raise MissingInput("models", "give one or more models, positionally (sweep llama-3.1-8b) or as --models NAME[,NAME]")
    if not names(models):  # "--models ,"
        raise InputError("models", models, "one or more models, comma-separated")
    check_paths([("--out", out)], {"--models": names(models), "--gpu": names(gpu), "--calibration": calibration,
                                   "--gpu-hour-price": gpu_hour_price})
    if not names(gpu):  # else no task and no engine: "--gpu ," was priced as no plan fitting 8 GPUs
        raise InputError("gpu", gpu, "one or more GPU ids, comma-separated")
    if backend is not None and not names(backend):  # "--backend ," likewise
        raise InputError("backend", backend, "one or more engines, comma-separated")
    isls, osls = token_list("--isl", isl), token_list("--osl", osl)
    if len(isls) != len(osls) and 1 not in (len(isls), len(osls)):
        raise InputError("isl/osl", f"{isl} / {osl}", "lists of one length (pairs), or one of them a single value")
    n = max(len(isls), len(osls))
    workloads = list(zip(isls * n if len(isls) == 1 else isls, osls * n if len(osls) == 1 else osls, strict=True))
    # the GPUs by the engines they run: each GPU's vendor's without --backend, else every engine named, each checked to run there
    by_engines: dict[str, list[str]] = {}
    for g in names(gpu):
        engines = [engine_for(_gpu(g)).name] if backend is None else [engine_for(_gpu(g), b).name for b in names(backend)]
        by_engines.setdefault(",".join(engines), []).append(g)
    tasks = [replace(t, index=i) for i, t in enumerate(  # numbered across the groups, as one plan numbers its own
        t for engines, gpus in by_engines.items()
        for t in plan_tasks(names(models), gpus, num_gpus=gpus_, precisions=names(precisions) if precisions else None,
                            backends=names(engines), workloads=workloads, step_tokens=budget_grid(max_num_tokens_grid),
                            max_ttft_ms=max_ttft_ms, min_tps_user=min_tps_user, calibration=calibration,
                            gpu_hour_price=gpu_hour_price, prefix_hit=prefix_hit))]
    if gpu_hour_price is not None:  # a GPU the price file does not list fails now, not in a worker
        from llm_codesign.explore.pricing import gpu_hour_price as price_of
        from llm_codesign.spec.hardware import get_gpu

        for g in {t.gpu for t in tasks}:
            price_of(get_gpu(g), gpu_hour_price)
    slo = {"min_tps_user": min_tps_user, "max_ttft_ms": max_ttft_ms}
    models_of = lambda t: [{"model": m, "gpu": g, "num_gpus": gpus_, "fitting": t["fitting"]}  # noqa: E731
                           for m in names(models) for g in names(gpu)]
    totals = write_parquet(execute(tasks, scheduler=scheduler, workers=workers), out, progress=stderr_progress(len(tasks)),
                           on_empty=lambda t: nothing_found(models_of(t), gpus_, slo))
    totals |= {"file": out, "scheduler": scheduler or "in-process"}
    if as_json:
        return _dump(totals)
    _console().print(f"wrote {out}: {totals['rows']:,} frontier rows of {totals['tasks']} tasks ({totals['evaluated']:,} deployments "
                     f"evaluated, {totals['seconds']:.1f} s of task time)")
    for why in totals.get("refused", ()):  # a cell the engine has no kernel for: empty, said (the others' rows kept)
        _console().print(f"note: no rows for {why}", highlight=False)
