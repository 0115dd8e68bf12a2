"""Command line: every command renders results computed by the core; errors are one line, exit 2."""
from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from .errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Hardware-aware co-design of LLMs: roofline, estimate, pareto, lint, validate.")


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def _console():
    from rich.console import Console

    return Console()


def _dump(obj) -> None:
    typer.echo(json.dumps(obj, indent=2, default=float))


def _gpu(name):
    from .hardware import get_gpu

    return get_gpu(name)


def _model(ref):
    from .registry import get_model

    return get_model(ref)


def _precision(model, weight, activation, kv):
    from dataclasses import replace

    from .precision import Precision, get_dtype

    p = model.default_precision
    if weight:
        p = Precision.of(weight, activation, kv or p.kv.name)
    else:
        if activation:
            p = replace(p, activation=get_dtype(activation, "activation_dtype"))
        if kv:
            p = replace(p, kv=get_dtype(kv, "kv_dtype"))
    return p


def _spec(spec, draft_len, acceptance, acceptance_rates, draft_model):
    from .parallel import SpecDecoding

    if spec is None or spec == "none":
        if acceptance is not None or acceptance_rates:
            raise InputError("spec", spec, "--spec mtp|eagle3|draft when --acceptance or --acceptance-rates is given")
        return None
    rates = ()
    if acceptance_rates:
        try:
            rates = tuple(float(x) for x in acceptance_rates.split(","))
        except ValueError:
            raise InputError("acceptance_rates", acceptance_rates, "comma-separated probabilities, e.g. 0.8,0.6,0.5") from None
    k = draft_len or (len(rates) if rates else 3)
    return SpecDecoding(spec, k, acceptance, rates, draft_model)


@app.command()
def gpus(as_json: bool = typer.Option(False, "--json", help="Emit JSON.")):
    """List the GPU catalog."""
    from .hardware import catalog

    rows = [g.to_dict() for g in catalog().values()]
    if as_json:
        return _dump(rows)
    from rich.table import Table

    t = Table(title="GPU catalog (dense peaks)")
    for c in ("id", "name", "BF16 TF", "FP8 TF", "FP4 TF", "HBM GB", "TB/s", "scale-up", "GB/s (1 dir)", "TDP W"):
        t.add_column(c)
    for g in rows:
        p = g["peak_tflops"]
        t.add_row(g["id"], g["name"], f"{p.get('bf16', 0):.0f}", f"{p.get('fp8', 0):.0f}" if "fp8" in p else "-",
                  f"{p.get('fp4', 0):.0f}" if "fp4" in p else "-", f"{g['hbm_gb']:.0f}", f"{g['hbm_tb_s']:.2f}",
                  str(g["scale_up_domain"]), f"{g['scale_up_gb_s']:.0f}", f"{g['tdp_w']:.0f}")
    _console().print(t)


@app.command()
def models(as_json: bool = typer.Option(False, "--json", help="Emit JSON.")):
    """List the bundled models with total and active parameters."""
    from .registry import list_models

    rows = list_models()
    if as_json:
        return _dump(rows)
    from rich.table import Table

    t = Table(title="Bundled models")
    for c in ("name", "total", "active", "layers", "default precision", "Hugging Face ids"):
        t.add_column(c)
    for m in rows:
        if m.get("error"):
            t.add_row(m["name"], "-", "-", "-", "[red]unsupported[/red]", ", ".join(m["hf_ids"][:2]))
            continue
        t.add_row(m["name"], f"{m['total_params'] / 1e9:.1f}B", f"{m['active_params'] / 1e9:.2f}B", str(m["layers"]),
                  m["precision"], ", ".join(m["hf_ids"][:2]))
    _console().print(t)


def _fmt(x: float, unit: str = "") -> str:
    for s, d in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= d:
            return f"{x / d:.2f}{s}{unit}"
    return f"{x:.2f}{unit}"


@app.command()
def roofline(
    model: str = typer.Argument(..., help="Registry name, Hugging Face id or config.json path."),
    gpu: str = typer.Option(..., "--gpu", help="GPU id (see `gpus`) or a GPU .toml."),
    phase: str = typer.Option("decode", help="decode or prefill."),
    batch: int = typer.Option(1, help="Sequences in the step."),
    context: int = typer.Option(1024, help="Context per sequence (decode: cached tokens; prefill: prompt)."),
    tp: int = typer.Option(1, "--tp", "--tensor-parallel-size", help="Tensor parallel size."),
    weight_dtype: Optional[str] = typer.Option(None, help="bf16, fp8, fp8_block, nvfp4, mxfp4, int4."),
    activation_dtype: Optional[str] = typer.Option(None),
    kv_dtype: Optional[str] = typer.Option(None),
    calibration: Optional[str] = typer.Option(None, help="Calibration profile .toml."),
    as_json: bool = typer.Option(False, "--json"),
):
    """Per-operator roofline of one forward step."""
    from .calibration import calibration_for
    from .parallel import Plan, reason_text, validity
    from .roofline import roofline as run

    m, g = _model(model), _gpu(gpu)
    if tp < 1:
        raise InputError("tp", tp, "a positive integer")
    code = int(validity(m, g, Plan(tp=tp, moe_tp=tp if m.is_moe else 1), tp)[()])
    if code >= 0:
        raise InputError("tp", tp, reason_text(m, g, code))
    r = run(m, g, calibration_for(g, calibration), _precision(m, weight_dtype, activation_dtype, kv_dtype), phase, batch, context, tp)
    if as_json:
        return _dump(r)
    from rich.table import Table

    t = Table(title=f"{m.name} on {g.name}: {phase}, batch {batch}, context {context}, TP{tp}, {r['precision']}")
    for c in ("operator", "layers", "FLOPs", "bytes", "FLOP/B", "ridge", "bound", "time", "% peak"):
        t.add_column(c, justify="right" if c != "operator" else "left")
    for o in r["ops"]:
        t.add_row(o["name"], f"{o['layers']:.0f}", _fmt(o["flops"]), _fmt(o["bytes"], "B"), f"{o['intensity']:.1f}",
                  f"{o['ridge_point']:.0f}", o["bound"], f"{o['time_s'] * 1e6:.1f} us", f"{o['pct_of_peak']:.1f}")
    tt = r["totals"]
    t.add_row("[b]total[/b]", "", _fmt(tt["flops"]), _fmt(tt["bytes"], "B"), f"{tt['intensity']:.1f}", "", "",
              f"[b]{tt['time_s'] * 1e3:.3f} ms[/b]", "")
    _console().print(t)
    _console().print(f"roofline floor (max of FLOPs/peak, bytes/bandwidth): {tt['bound_time_s'] * 1e3:.3f} ms")


def _deployment(m, gpu, gpus_, tp, pp, ep, moe_tp, attention_dp, kvp, weight_dtype, activation_dtype, kv_dtype,
                backend, spec, draft_len, acceptance, acceptance_rates, draft_model, max_num_tokens, cpp):
    from .parallel import Deployment, Plan

    g = _gpu(gpu)
    for name, v in (("tp", tp), ("pp", pp), ("ep", ep), ("attention_dp", attention_dp), ("kvp", kvp)):
        if v is not None and v < 1:
            raise InputError(name, v, "a positive integer")
    tp_, pp_, ep_, adp_, kvp_ = tp or 1, pp or 1, ep or 1, attention_dp or 1, kvp or 1
    n = gpus_ or tp_ * pp_ * adp_ * kvp_
    if n < 1:
        raise InputError("gpus", n, "a positive integer")
    if tp is None and gpus_ and n % (pp_ * adp_ * kvp_) == 0:
        tp_ = n // (pp_ * adp_ * kvp_)
    if m.is_moe:
        mtp = moe_tp if moe_tp is not None else max(n // (ep_ * pp_), 1)
    else:
        mtp = moe_tp or 1
    return Deployment(gpu=g, num_gpus=n, plan=Plan(tp_, pp_, ep_, mtp, adp_, kvp_),
                      precision=_precision(m, weight_dtype, activation_dtype, kv_dtype), backend=backend,
                      spec=_spec(spec, draft_len, acceptance, acceptance_rates, draft_model),
                      max_num_tokens=max_num_tokens, cpp=cpp)


# shared option declarations (vLLM / TensorRT-LLM vocabulary)
O_GPU = typer.Option(..., "--gpu", help="GPU id (see `gpus`), comma list for pareto comparison, or a .toml.")
O_GPUS = typer.Option(None, "--gpus", help="Total GPUs.")
O_TP = typer.Option(None, "--tp", "--tensor-parallel-size", help="Attention tensor-parallel size.")
O_PP = typer.Option(None, "--pp", "--pipeline-parallel-size")
O_EP = typer.Option(None, "--ep", "--expert-parallel-size")
O_MTP = typer.Option(None, "--moe-tp", help="MoE tensor parallel (default: what EP and PP leave).")
O_ADP = typer.Option(None, "--attention-dp", help="Attention data-parallel ranks.")
O_KVP = typer.Option(None, "--kvp", help="Helix KV-parallel ranks (sequence-sharded KV cache).")
O_W = typer.Option(None, "--weight-dtype")
O_A = typer.Option(None, "--activation-dtype")
O_KV = typer.Option(None, "--kv-dtype")
O_ISL = typer.Option(1024, "--isl", help="Input tokens per request.")
O_OSL = typer.Option(1024, "--osl", help="Output tokens per request.")
O_BACKEND = typer.Option("trtllm", "--backend", help="trtllm, vllm or sglang.")
O_SPEC = typer.Option(None, "--spec", help="Speculative decoding: eagle3, mtp or draft.")
O_K = typer.Option(None, "--draft-len", help="Draft tokens per step.")
O_ACC = typer.Option(None, "--acceptance", help="Mean accepted tokens per step (1..k+1).")
O_RATES = typer.Option(None, "--acceptance-rates", help="Per-position acceptance rates r1,r2,...")
O_DRAFT = typer.Option(None, "--draft-model", help="Draft model for --spec draft.")
O_MNT = typer.Option(8192, "--max-num-tokens", help="Token budget per step (chunked prefill).")
O_CAL = typer.Option(None, "--calibration", help="Calibration profile .toml.")


@app.command()
def estimate(
    model: str = typer.Argument(...), gpu: str = O_GPU, gpus_: Optional[int] = O_GPUS,
    tp: Optional[int] = O_TP, pp: Optional[int] = O_PP, ep: Optional[int] = O_EP, moe_tp: Optional[int] = O_MTP,
    attention_dp: Optional[int] = O_ADP, kvp: Optional[int] = O_KVP,
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    isl: int = O_ISL, osl: int = O_OSL,
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="Requests in flight (omit: offline max throughput)."),
    backend: str = O_BACKEND, spec: Optional[str] = O_SPEC, draft_len: Optional[int] = O_K,
    acceptance: Optional[float] = O_ACC, acceptance_rates: Optional[str] = O_RATES, draft_model: Optional[str] = O_DRAFT,
    max_num_tokens: int = O_MNT, cpp: bool = typer.Option(False, "--cpp", help="Chunked pipeline parallelism for prefill."),
    calibration: Optional[str] = O_CAL, breakdown: bool = typer.Option(False, "--breakdown", help="Per-operator times."),
    as_json: bool = typer.Option(False, "--json"),
):
    """What one deployment delivers: TTFT, TPOT, tok/s/user, tok/s/GPU, memory, bottlenecks."""
    from .calibration import calibration_for
    from .estimate import estimate as run

    m = _model(model)
    dep = _deployment(m, gpu, gpus_, tp, pp, ep, moe_tp, attention_dp, kvp, weight_dtype, activation_dtype, kv_dtype,
                      backend, spec, draft_len, acceptance, acceptance_rates, draft_model, max_num_tokens, cpp)
    r = run(m, dep, calibration_for(dep.gpu, calibration), isl, osl, concurrency, breakdown)
    if as_json:
        return _dump(r)
    from rich.table import Table

    t = Table(title=f"{m.name} on {dep.num_gpus}x {dep.gpu.name}, {r['plan']}, {r['precision']}, {backend}", show_header=False)
    t.add_column("metric")
    t.add_column("value", justify="right")
    mem = r["memory"]
    for k, v in (("mode", r["mode"]), ("concurrency", r["concurrency"]), ("ISL / OSL", f"{isl} / {osl}"),
                 ("TTFT", f"{r['ttft_ms']:.1f} ms"), ("TPOT", f"{r['tpot_ms']:.2f} ms"),
                 ("tokens/s per user", f"{r['tok_s_per_user']:.1f}"), ("output tokens/s per GPU", f"{r['output_tok_s_per_gpu']:.1f}"),
                 ("input+output tokens/s per GPU", f"{r['io_tok_s_per_gpu']:.1f}"),
                 ("tokens per joule (TDP bound)", f"{r['tokens_per_joule_bound']:.2f}"),
                 ("largest batch that fits", r["max_batch"]),
                 ("memory per GPU", f"weights {mem['weights_gb']:.1f} GB, KV {mem['kv_gb']:.1f} GB, free {mem['free_gb']:.1f} GB of {mem['capacity_gb']:.0f} GB"),
                 ("decode step bound by", r["decode_bound"]), ("prefill bound by", r["prefill_bound"])):
        t.add_row(k, str(v))
    if "spec" in r:
        s = r["spec"]
        t.add_row("speculation", f"{s['method']} k={s['draft_len']}, {r['accepted_per_step']:.2f} tokens/step, "
                  f"speed-up {s['speedup_at_concurrency']:.2f}x here, {s['speedup_at_1']:.2f}x at batch 1")
        t.add_row("speculation stops paying at", str(s["stops_paying_at_concurrency"] or "never within the batch that fits"))
    _console().print(t)
    if breakdown:
        bt = Table(title="per-operator time per step (one GPU)")
        for c in ("operator", "kind", "time ms"):
            bt.add_column(c)
        for o in sorted(r["breakdown"], key=lambda o: -o["time_ms"]):
            bt.add_row(o["name"], o["kind"], f"{o['time_ms']:.3f}")
        _console().print(bt)


def _write_predictions(path: str, rows: list[dict], preds: list[dict]) -> None:
    """Input rows plus `predicted_<metric>` columns, written whole or not at all."""
    import csv
    import os
    import tempfile
    from pathlib import Path

    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise InputError("out", path, "a path in an existing folder")

    def name(k: str) -> str:
        return k if k.startswith("predicted") else f"predicted_{k}"

    keys = list(rows[0].keys())
    extra = sorted({name(k) for p in preds for k in p} - set(keys))
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".csv.tmp")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys + extra)
            w.writeheader()
            for r, p in zip(rows, preds, strict=True):
                w.writerow({**r, **{name(k): v for k, v in p.items()}})
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _print_report(rep: dict, title: str) -> None:
    from rich.table import Table

    con = _console()
    t = Table(title=f"{title}: {rep['modeled']} of {rep['rows']} rows modelled")
    for c in ("group", "metric", "n", "median APE %", "p90 APE %", "signed median %"):
        t.add_column(c, justify="right" if c != "group" else "left")
    for metric, st in rep["overall"].items():
        t.add_row("[b]overall[/b]", metric, str(st["n"]), f"{st['median_ape']:.1f}", f"{st['p90_ape']:.1f}", f"{st['signed_median_pe']:+.1f}")
    by = rep["by"]
    items = by.items() if all(isinstance(v, dict) and all(isinstance(x, dict) and "n" not in x for x in v.values()) for v in by.values()) else [("", by)]
    for key, groups in items:
        for g, ms in groups.items():
            for metric, st in ms.items():
                t.add_row(f"{key} {g}".strip(), metric, str(st["n"]), f"{st['median_ape']:.1f}", f"{st['p90_ape']:.1f}", f"{st['signed_median_pe']:+.1f}")
    con.print(t)
    if rep["unmodeled"]:
        from collections import Counter

        con.print(f"{len(rep['unmodeled'])} rows not modelled:")
        for reason, n in Counter(u["reason"] for u in rep["unmodeled"]).most_common():
            con.print(f"  {n:5d}  {reason}")


@app.command()
def validate(
    kernels: Optional[str] = typer.Option(None, "--kernels", help="Kernel CSV (gemm, attention, collectives or moe columns)."),
    serving: Optional[str] = typer.Option(None, "--serving", help="Serving-measurement CSV in the canonical columns."),
    out: Optional[str] = typer.Option(None, "--out", help="Write the input rows plus predictions here."),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json"),
):
    """Predict published measurements and report the errors."""
    from .validate import kernel_report, predict_serving, read_rows, serving_report

    if (kernels is None) == (serving is None):
        raise InputError("validate", "--kernels/--serving", "exactly one of --kernels FILE or --serving FILE")
    if kernels:
        rep, rows, pred = kernel_report(kernels, calibration)
        if out:
            _write_predictions(out, rows, [{"predicted_ms": (float(p) if p == p else "")} for p in pred])
        title = f"kernel validation ({rep['kind']})"
    else:
        rows = read_rows(serving)
        preds, unmodeled = predict_serving(rows, calibration)
        rep = serving_report(rows, preds, unmodeled)
        if out:
            _write_predictions(out, rows, preds)
        title = "serving validation"
    if as_json:
        return _dump(rep)
    _print_report(rep, title)


@app.command()
def calibrate(
    kernels: Optional[list[str]] = typer.Option(None, "--kernels", help="Kernel CSVs (repeat the option)."),
    serving: Optional[str] = typer.Option(None, "--serving", help="Serving measurements to fit step overheads on."),
    output: str = typer.Option(..., "-o", "--output", help="Profile .toml to write."),
    calibration: Optional[str] = O_CAL,
):
    """Re-fit the efficiency parameters from measurements; use the profile with --calibration."""
    from datetime import date
    from pathlib import Path

    from .calibrate import fit_kernels, fit_serving, to_toml
    from .kernels import read_csv
    from .validate import read_rows

    if not kernels and not serving:
        raise InputError("calibrate", None, "at least one --kernels FILE or --serving FILE")
    if not Path(output).resolve().parent.is_dir():
        raise InputError("output", output, "a path in an existing folder")
    kernels = kernels or []
    tables: dict[str, list[dict]] = {}
    for k in kernels:
        kind, rows = read_csv(k)
        tables.setdefault(kind, []).extend(rows)
    fams, report = fit_kernels(tables, calibration)
    srv = None
    if serving:
        if not fams:
            from .calibration import calibration_for
            from .hardware import catalog

            fams = {g.family: calibration_for(g, calibration) for g in catalog().values()}
        fams, srv = fit_serving(read_rows(serving), fams)
    header = (f"llm-codesign calibration profile, fitted {date.today().isoformat()} by `llm-codesign calibrate`\n"
              f"kernels: {', '.join(kernels) or 'none'}\nserving: {serving or 'none'}")
    text = to_toml(fams, report, header, srv)
    Path(output).write_text(text)
    con = _console()
    for r in report:
        con.print(f"{r['family']:10s} {r['kind']:18s} {r['rows']:6d} rows  median APE {r['median_ape']:.1f}%  p90 {r['p90_ape']:.1f}%")
    if srv:
        con.print(f"serving: step overhead {', '.join(f'{b} {v * 1e3:.2f} ms' for b, v in srv['step_overhead_s'].items())}; "
                  f"request overhead {', '.join(f'{b} {v * 1e3:.1f} ms' for b, v in srv['ttft_overhead_s'].items())}; "
                  f"prefill queue fraction {', '.join(f'{b} {v:.2f}' for b, v in srv['prefill_queue_fraction'].items())}; "
                  f"eager launch {', '.join(f'{b} {v * 1e6:.1f} us' for b, v in srv['eager_launch_s'].items())}")
    con.print(f"wrote {output}")


@app.command()
def lint(
    model: str = typer.Argument(..., help="Registry name, Hugging Face id or config.json path."),
    gpu: str = typer.Option(..., "--gpu"),
    regime: str = typer.Option("throughput", "--regime", help="latency, throughput or long-context."),
    fmt: str = typer.Option("table", "--format", help="table, json or sarif."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
    fail_on: Optional[str] = typer.Option(None, "--fail-on", help="Exit 1 when a finding reaches this severity: warning or error."),
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    calibration: Optional[str] = O_CAL,
):
    """Check a model shape against the hardware guidelines, with the predicted cost of each finding."""
    from .calibration import calibration_for
    from .lint import RULES, SEVERITY_ORDER, to_sarif
    from .lint import lint as run

    fmt = "json" if as_json else fmt
    if fmt not in ("table", "json", "sarif"):
        raise InputError("format", fmt, "table, json or sarif")
    if fail_on is not None and fail_on not in ("warning", "error"):
        raise InputError("fail_on", fail_on, "warning or error")
    m, g = _model(model), _gpu(gpu)
    findings = run(m, g, calibration_for(g, calibration), regime, _precision(m, weight_dtype, activation_dtype, kv_dtype))
    if fmt == "json":
        _dump({"model": m.name, "gpu": g.id, "regime": regime, "findings": [f.to_dict() for f in findings]})
    elif fmt == "sarif":
        _dump(to_sarif(findings, model))
    else:
        from rich.table import Table

        t = Table(title=f"lint: {m.name} on {g.name}, {regime} regime ({len(findings)} findings)")
        for c in ("rule", "severity", "where", "cost %", "finding", "fix"):
            t.add_column(c, overflow="fold")
        color = {"error": "red", "warning": "yellow", "info": "cyan"}
        for f in findings:
            t.add_row(f"{f.rule} {RULES[f.rule][0]}", f"[{color[f.severity]}]{f.severity}[/]", f.where, f"{f.cost_pct:.1f}", f.message, f.fix)
        _console().print(t)
    if fail_on and any(SEVERITY_ORDER[f.severity] >= SEVERITY_ORDER[fail_on] for f in findings):
        raise typer.Exit(1)


@app.command()
def design(
    params: float = typer.Option(..., "--params", help="Total-parameter budget, e.g. 70e9."),
    gpu: str = typer.Option("b200", "--gpu"), gpus_: int = typer.Option(8, "--gpus"),
    regime: str = typer.Option("throughput", "--regime", help="latency, throughput or long-context."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Model to beat at equal quality proxy."),
    moe: bool = typer.Option(False, "--moe", help="Search MoE shapes (experts, top-k, expert width, shared expert)."),
    min_tps_user: float = typer.Option(20.0, "--min-tps-user", help="Throughput/long-context SLO: tokens/s per user."),
    min_tps_gpu: float = typer.Option(50.0, "--min-tps-gpu", help="Latency-regime floor: output tokens/s per GPU."),
    isl: Optional[int] = typer.Option(None, "--isl"), osl: Optional[int] = typer.Option(None, "--osl"),
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    budget_tol: float = typer.Option(0.1, "--budget-tol", help="Relative tolerance on total parameters."),
    quality_tol: float = typer.Option(0.002, "--quality-tol", help="Relative tolerance on the quality proxy vs the baseline."),
    quality_file: Optional[str] = typer.Option(None, "--quality", help="Quality-proxy constants .toml (overrides)."),
    max_candidates: int = typer.Option(20000, "--max-candidates"), top: int = typer.Option(10, "--top"),
    search_mode: str = typer.Option("grid", "--search", help="grid (enumerate every shape) or nsga2 (optuna, the dist extra)."),
    trials: int = typer.Option(300, "--trials", help="NSGA-II trials."),
    export: Optional[str] = typer.Option(None, "--export", help="Write the best design as a Hugging Face config.json."),
    plot_path: Optional[str] = typer.Option(None, "--plot", help="Frontiers of the top designs vs the baseline (.png/.svg)."),
    backend: str = O_BACKEND, calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json"),
):
    """Search model shapes that move the frontier out at equal quality proxy."""
    from pathlib import Path

    from .calibration import calibration_for
    from .design import Slo, design_nsga2, hf_config, to_model
    from .design import design as run
    from .lint import lint as lint_run
    from .quality import model_loss

    g = _gpu(gpu)
    for name, p in (("export", export), ("plot", plot_path)):
        if p and not Path(p).resolve().parent.is_dir():
            raise InputError(name, p, "a path in an existing folder")
    if gpus_ < 1:
        raise InputError("gpus", gpus_, "a positive integer")
    base = _model(baseline) if baseline else None
    if base:
        prec = _precision(base, weight_dtype, activation_dtype, kv_dtype)
    else:
        from .precision import Precision

        prec = Precision.of(weight_dtype or "bf16", activation_dtype, kv_dtype)
    cal = calibration_for(g, calibration)
    prog, cb = _progress()
    if prog:
        prog.start()
    if search_mode not in ("grid", "nsga2"):
        raise InputError("search", search_mode, "grid or nsga2")
    if trials < 1:
        raise InputError("trials", trials, "a positive integer")
    slo = Slo(regime, min_tps_user, min_tps_gpu, isl, osl)
    try:
        if search_mode == "nsga2":
            r = design_nsga2(params, g, cal, gpus_, slo, base, moe, prec, budget_tol, quality_tol, quality_file, backend, trials, top,
                             progress=cb)
        else:
            r = run(params, g, cal, gpus_, slo, base, moe, prec, budget_tol, quality_tol, quality_file, backend, max_candidates, top, cb)
    finally:
        if prog:
            prog.stop()
    vocab = base.vocab if base else 128256
    for d in r["designs"]:
        fs = lint_run(to_model(d, vocab), g, cal, regime if regime != "long-context" else "throughput", prec)
        d["lint"] = {"errors": sum(f.severity == "error" for f in fs), "warnings": sum(f.severity == "warning" for f in fs),
                     "top": fs[0].message if fs else None}
    if export and r["designs"]:
        Path(export).write_text(json.dumps(hf_config(r["designs"][0], vocab), indent=2) + "\n")
    if plot_path and r["designs"]:
        from .report import write_plot
        from .search import SearchSpace, search

        runs = []
        for j, d in enumerate(r["designs"][:3]):
            res = search(to_model(d, vocab, f"design {j + 1}"), g, cal, SearchSpace(gpus_, precisions=(prec,)), *r["isl_osl"], backend)
            res["model"] = f"design {j + 1} ({d['shape']['hidden']}x{d['shape']['layers']})"
            runs.append(res)
        if base:
            res = search(base, g, cal, SearchSpace(gpus_, precisions=(prec,)), *r["isl_osl"], backend)
            res["model"] = f"baseline {base.name}"
            runs.append(res)
        write_plot(runs, plot_path)
    if as_json:
        return _dump(r)
    from rich.table import Table

    con = _console()
    b = r["baseline"]
    if b:
        con.print(f"baseline {b['name']}: {b['total_params'] / 1e9:.1f}B params, quality proxy {b['quality_proxy']:.4f}, "
                  f"{r['objective']} {b['objective'] or 0:.1f} ({b['deployment']['plan']}, batch {b['deployment']['concurrency_per_instance']})")
    t = Table(title=f"designs at {params / 1e9:.0f}B params on {gpus_}x {g.name}, {regime} regime ({r['candidates']:,} shapes, "
                    f"{r['evaluated']:,} deployments in {r['seconds']:.1f} s)")
    for c in ("#", "shape", "params", "active", "quality", r["objective"], "gain %", "deployment", "lint"):
        t.add_column(c, justify="right")
    for j, d in enumerate(r["designs"], 1):
        s = d["shape"]
        shape = f"h{s['hidden']} L{s['layers']} H{s['heads']}/{s['kv_heads']} " + (
            f"E{s['experts']} k{s['top_k']} w{s['expert_inter']}" + (f" +sh{s['shared_inter']}" if s["shared_inter"] else "") if "experts" in s else f"ffn{s['inter']}")
        t.add_row(str(j), shape, f"{d['total_params'] / 1e9:.1f}B", f"{d['active_params'] / 1e9:.1f}B", f"{d['quality_proxy']:.4f}",
                  f"{d['objective']:.1f}", f"{d['gain_pct']:+.1f}" if d["gain_pct"] is not None else "-",
                  f"{d['deployment']['plan']} B={d['deployment']['concurrency_per_instance']}", f"{d['lint']['errors']}E {d['lint']['warnings']}W")
    con.print(t)
    if base:
        con.print(f"quality proxy of the baseline: {model_loss(base, prec.weight.name):.4f} (designs kept within {quality_tol:.1%})")
    if export and r["designs"]:
        con.print(f"wrote {export}")
    if plot_path and r["designs"]:
        con.print(f"wrote plot: {plot_path}")


def _progress():
    """A rich progress bar on stderr for long searches (silent when stderr is not a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    con = Console(stderr=True)
    if not con.is_terminal:
        return None, None
    prog = Progress(TextColumn("searching"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"), TimeRemainingColumn(),
                    console=con, transient=True)
    task = prog.add_task("search", total=1)

    def cb(done, total):
        prog.update(task, completed=done, total=total)

    return prog, cb


def _ints(v: Optional[int]):
    return None if v is None else (v,)


@app.command()
def pareto(
    model: str = typer.Argument("llama-3.1-70b", help="Model(s), comma-separated to compare."),
    gpu: str = typer.Option("h200", "--gpu", help="GPU id(s), comma-separated to compare."),
    gpus_: str = typer.Option("8", "--gpus", help="GPUs (replicas of smaller instances fill them), or a range of instance sizes, e.g. 8-72."),
    tp: Optional[int] = O_TP, pp: Optional[int] = O_PP, ep: Optional[int] = O_EP, moe_tp: Optional[int] = O_MTP,
    attention_dp: Optional[int] = O_ADP, kvp: Optional[int] = O_KVP,
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    isl: int = O_ISL, osl: int = O_OSL, backend: str = O_BACKEND,
    spec: Optional[str] = O_SPEC, draft_len: Optional[int] = typer.Option(None, "--draft-len", help="Fix k (default: sweep 1..5)."),
    acceptance: Optional[float] = O_ACC, acceptance_rates: Optional[str] = O_RATES, draft_model: Optional[str] = O_DRAFT,
    max_num_tokens: int = O_MNT,
    min_tps_user: Optional[float] = typer.Option(None, "--min-tps-user", help="SLO: minimum tokens/s per user."),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", help="SLO: maximum TTFT in ms."),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for frontier.csv, frontier.png and report.html."),
    csv_path: Optional[str] = typer.Option(None, "--csv"), plot_path: Optional[str] = typer.Option(None, "--plot", help=".png or .svg"),
    html_path: Optional[str] = typer.Option(None, "--html"),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json"),
):
    """Throughput-vs-interactivity Pareto frontier over every valid deployment."""
    from pathlib import Path

    from .calibration import calibration_for
    from .report import write_csv, write_html, write_plot
    from .search import SearchSpace, parse_precisions, point_breakdown, search

    try:
        if "-" in gpus_:
            lo, hi = (int(x) for x in gpus_.split("-", 1))
            if not 1 <= lo <= hi:
                raise ValueError
            n_gpus, inst = hi, tuple(range(lo, hi + 1))
        else:
            n_gpus, inst = int(gpus_), None
    except ValueError:
        raise InputError("gpus", gpus_, "a positive integer or a range like 8-72") from None
    model_refs = [m for m in model.split(",") if m]
    gpu_refs = [g for g in gpu.split(",") if g]
    if isl < 1 or osl < 1:
        raise InputError("isl/osl", (isl, osl), "positive token counts")
    sd = _spec(spec, draft_len or (len(acceptance_rates.split(",")) if acceptance_rates else 3), acceptance, acceptance_rates, draft_model)
    ks = (0,) if sd is None else ((0, draft_len) if draft_len else (0, 1, 2, 3, 4, 5))
    paths = {"csv": csv_path, "plot": plot_path, "html": html_path}
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        paths = {"csv": csv_path or str(Path(out) / "frontier.csv"), "plot": plot_path or str(Path(out) / "frontier.png"),
                 "html": html_path or str(Path(out) / "report.html")}
    for key, p in paths.items():
        if p and not Path(p).resolve().parent.is_dir():
            raise InputError(key, p, "a path in an existing folder")
    if paths["plot"] and not paths["plot"].endswith((".png", ".svg")):
        raise InputError("plot", paths["plot"], "a .png or .svg path")
    results, breakdowns = [], {}
    prog, cb = _progress()
    if prog:
        prog.start()
    try:
        for mref in model_refs:
            m = _model(mref)
            for gref in gpu_refs:
                g = _gpu(gref)
                cal = calibration_for(g, calibration)
                space = SearchSpace(n_gpus, _ints(tp), _ints(pp), _ints(ep), _ints(moe_tp), _ints(attention_dp), _ints(kvp),
                                    instance_gpus=inst, precisions=parse_precisions(weight_dtype, activation_dtype, kv_dtype, m, g),
                                    spec=sd, spec_ks=ks)
                r = search(m, g, cal, space, isl, osl, backend, max_num_tokens, min_tps_user, max_ttft_ms, progress=cb)
                i = len(results)
                for j, p in enumerate(r["frontier"]):
                    breakdowns[f"{i}:{j}"] = point_breakdown(m, g, cal, p["deployment"], isl, osl, backend, sd, max_num_tokens)
                results.append(r)
    finally:
        if prog:
            prog.stop()
    if paths["csv"]:
        write_csv(results, paths["csv"])
    if paths["plot"]:
        write_plot(results, paths["plot"])
    if paths["html"]:
        write_html(results, breakdowns, paths["html"])
    if as_json:
        slim = [{k: v for k, v in r.items() if k not in ("cloud", "roofline_bound")} for r in results]
        return _dump(slim[0] if len(slim) == 1 else {"comparisons": slim, "evaluated": sum(r["evaluated"] for r in slim),
                                                      "seconds": sum(r["seconds"] for r in slim), "frontier": [p for r in slim for p in r["frontier"]]})
    from rich.table import Table

    con = _console()
    for r in results:
        t = Table(title=f"Pareto frontier: {r['model']} on {r['num_gpus']}x {r['gpu']}, ISL/OSL {isl}/{osl} "
                        f"({r['evaluated']:,} deployments in {r['seconds']:.2f} s)")
        for c in ("tok/s/user", "tok/s/GPU", "TTFT ms", "TPOT ms", "plan", "x", "batch", "precision", "spec"):
            t.add_column(c, justify="right")
        fr = r["frontier"]
        step = max(1, len(fr) // 24)
        for p in fr[::step]:
            d = p["deployment"]
            t.add_row(f"{p['tok_s_per_user']:.1f}", f"{p['output_tok_s_per_gpu']:.0f}", f"{p['ttft_ms']:.0f}", f"{p['tpot_ms']:.2f}",
                      d["plan"], str(d["replicas"]), str(d["concurrency_per_instance"]), f"{d['weight_dtype']}/{d['kv_dtype']}",
                      f"{d['spec']} k={d['draft_len']}" if d["spec"] else "-")
        con.print(t)
        if not fr:
            con.print("[yellow]no deployment meets the SLO filters[/yellow]")
    for key, p in paths.items():
        if p:
            con.print(f"wrote {key}: {p}")


def main() -> None:
    try:
        app(standalone_mode=True)
    except InputError as e:
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except OSError as e:  # unreadable/unwritable files named on the command line
        typer.echo(f"error: {e.filename or ''}: {e.strerror or e}", err=True)
        sys.exit(2)
    except Exception as e:  # a bug: one line for the user, the traceback on request
        import os

        if os.environ.get("LLM_CODESIGN_DEBUG"):
            raise
        typer.echo(f"internal error: {type(e).__name__}: {e} (set LLM_CODESIGN_DEBUG=1 for the traceback)", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
