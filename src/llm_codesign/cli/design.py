"""Commands that judge and search model shapes: `lint` and `design`."""
from __future__ import annotations

import json
from typing import Optional

import typer

from llm_codesign.cli.common import (
    MAX_GPUS,
    O_A,
    O_BACKEND,
    O_CAL,
    O_GPU,
    O_KV,
    O_W,
    _console,
    _dump,
    _gpu,
    _model,
    _precision,
    _progress,
    _table,
    app,
    check_paths,
    tokens_option,
)
from llm_codesign.errors import InputError
from llm_codesign.explore import DESIGN_GPU, DESIGN_TOP, MAX_CANDIDATES, MAX_TOP
from llm_codesign.render.design_lines import (  # noqa: F401 (shared with design --report and the page)
    _TERM_NAMES,
    GRAPHS_LEGEND,
    _params,
    baseline_lines,
    bind_text,
    ffn_pass_line,
    graphs_said,
    objective_short,
    params_line,
    quality_rule_line,
    resolved_line,
    shape_label,
    versus_line,
    wins_by,
)
from llm_codesign.spec.engines import engine_for

O_PROXY = typer.Option(None, "--accuracy-proxy", help="Accuracy-proxy constants .toml (overrides data/accuracy/proxy.toml).")


# the envelope's variables (explore.envelope.VARIABLES, and Levine's depth threshold) as the design table names the bound
# a row breaks most, beneath its loss: at most 11 characters ("aspect>x3.6"), so the table keeps 80 columns
_BOUND_SHORT = {"aspect_ratio": "aspect", "layers": "layers", "q_per_kv": "q/kv", "kv_heads": "kv", "head_dim": "head",
                "ffn_ratio": "ffn", "experts": "E", "top_k": "k", "granularity": "G", "active_fraction": "active", "depth_threshold": "depth"}


def _envelope_cell(v: dict) -> str:
    """'aspect>x3.6': the variable, above its maximum (>) or below its minimum (<; the depth threshold is a minimum),
    and by what factor."""
    var, _, side = v["bound"].partition(".")
    by = f"{v['by']:.2g}" if v["by"] < 10 else f"{v['by']:.0f}"
    return f"{_BOUND_SHORT[var]}{'>' if side == 'max' else '<'}x{by}"


def _rows(nums: list[int]) -> str:
    """'row 3', 'rows 1-2, 4': design rows as ranges."""
    runs, out = [], []
    for n in nums:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    out = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    return ("row " if len(nums) == 1 else "rows ") + ", ".join(out)


def _batch_line(r: dict, short: str) -> str | None:
    """What stops each design's batch one step up the search's grid (explore.design.batch_binds), said once: where the
    floor binds, shapes that meet it at one batch on one plan score alike."""
    groups: dict = {}
    for j, d in enumerate(r["designs"], 1):
        groups.setdefault(d["deployment"]["batch"]["binds"], []).append(j)
    if not groups:
        return None
    cons = next(iter(r["constraint"]))
    floor = f"the {r['constraint'][cons]:g} {'tok/s/user' if cons == 'min_tps_user' else 'tok/s/GPU'} floor"
    said = {"floor": f"miss {floor} (the objective sits at the floor: shapes at one batch and plan score alike)",
            "memory": "outgrow the KV cache or the engine's batch limit", "grid": "are at the search's largest batch",
            None: f"meet the floor and fit but give less {short}"}
    parts = [f"{_rows(groups[k])} {said[k]}" for k in ("floor", "memory", "grid", None) if k in groups]
    return "batch: one step up the search's batch grid, " + "; ".join(parts)


def scale_line(d: dict) -> str | None:
    """One line: the proxy terms design 1 uses beyond the model sizes their sources measured them at (a KV-sharing
    coefficient from <= 11B models applied at 100B), each with its measured range; None where every term is inside."""
    xs = d["quality"].get("extrapolated_scale") or []
    if not xs:
        return None
    terms = ", ".join(f"{_TERM_NAMES.get(x['term'], x['term'])} " + (
        _params(x["studied_params"][0]) if x["studied_params"][0] == x["studied_params"][1] else
        f"{_params(x['studied_params'][0])}-{_params(x['studied_params'][1])}") for x in xs)
    return (f"scale: design 1's proxy terms measured at other model sizes, applied at {_params(xs[0]['at_params'])}: {terms} "
            "(x: extrapolated; err ± grows by 1 x the log-distance in size, as beyond any studied range; ±test keeps the "
            "measured band)")


def na_said(designs: list[dict]) -> str:
    """The legend's sentence for ±n/a, where a row has no test band (explore.design.nil_band_why), else ""."""
    why = sorted({d["quality"]["test_band_na"] for d in designs if d["quality"].get("test_band_na")})
    if not why:
        return ""
    return (f"±n/a: no test band ({'; '.join(why)}): the row differs from the reference only in active parameters, a term the "
            "test takes as exact, or on axes the proxy is flat on; err ± is its band. ")


def _margin(bound: str) -> str:
    """'x1.5' or '+-25%': the margin that widens `bound` past the published models (envelope.toml [policy], by the
    variable's kind, explore.envelope.VARIABLES)."""
    from llm_codesign.explore.envelope import VARIABLES, data

    pol = data()["policy"]
    return f"x{pol['ratio_margin']:g}" if VARIABLES[bound.split(".")[0]][0] == "ratio" else f"+-{100 * pol['count_margin']:g}%"


def _named(models, scale: float | None, total: float | None = None) -> str:
    """The published models that set a bound, each with its size where it lies more than 2x from the budget `scale`
    (min_models adds the nearest models when few lie in the window: a 70B envelope once came from llama-3.1-405b);
    `total`: the size of a model that is not an envelope row (one name)."""
    from llm_codesign.explore.envelope import data

    size = {r["name"]: float(r["total_params"]) for r in data()["model"]} | ({models[0]: total} if total else {})
    far = lambda n: scale and n in size and max(size[n] / scale, scale / size[n]) > 2.0  # noqa: E731
    return ", ".join(f"{n} ({size[n] / 1e9:,.3g}B)" if far(n) else n for n in models)


def envelope_said(env: dict) -> str:
    """The envelope exactly: which models it is drawn over and the margin (explore.envelope's policy)."""
    a = env["bounds"].get("aspect_ratio")
    kind = ("models (trunk: width, depth, aspect from the dense models; attention geometry from all)"
            if env.get("kind", "").startswith("trunk") else "models")
    out = (f"Every design lies inside the envelope: the published {kind} near {env['scale'] / 1e9:,.3g}B, ratios widened "
           f"x{env['ratio_margin']:g} and counts +-{100 * env['count_margin']:g}%")
    if a:
        out += (f" (aspect ratio at most {a['max']:.4g}: {env['ratio_margin']:g} x the largest published, "
                f"{a['published_max']:.4g}, {_named(a['max_set_by'], env['scale'])})")
    return out


def envelope_lines(designs: list[dict], scale: float | None = None) -> list[str]:
    """Rows at the edge of the envelope (within 5% of a limit, or on it) and rows beyond every published model on a
    bound (inside only by the margin), each said with the published value and who set it (with its size where it lies
    more than 2x from `scale`, the budget)."""
    edge: dict = {}
    beyond: dict = {}
    for j, d in enumerate(designs, 1):
        e = d["envelope"]
        if not e.get("inside"):
            continue
        if e.get("at_edge"):
            c = e["closest"]
            on = c["headroom"] <= 1 + 1e-9  # on the limit itself, not only within 5% of it
            edge.setdefault((c["bound"], round(c["limit"], 6), c.get("published"), tuple(c.get("set_by", ())), on), []).append(j)
        for x in e.get("beyond_published", []):
            beyond.setdefault((x["bound"], x["published"], tuple(x["set_by"])), []).append((j, x["value"], x))
    out = []
    for (bound, lim, pub, who, on), rows in edge.items():
        # the limit's precedent: the published extreme it widens and the models that set it (Levine's threshold has none)
        src = f": the published {pub:.4g} ({_named(who, scale)}) widened {_margin(bound)}" if pub is not None else ""
        out.append(f"envelope: {_rows(rows)} at the edge, {bound} {'on' if on else 'within 5% of'} its limit {lim:.4g}{src}")
    for (bound, pub, who), rows in beyond.items():
        vals = sorted(v for _, v, _ in rows)
        span = f"{vals[0]:.4g}" if len(vals) == 1 or abs(vals[-1] - vals[0]) < 1e-9 else f"{vals[0]:.4g}-{vals[-1]:.4g}"
        side = "above" if bound.endswith(".max") else "below"
        x = rows[0][2]
        # the set the bound is drawn from, counted, and a bundled model beyond it that is not one of its rows: "every
        # published model" read false beside bundled Gemma-2-27B's FFN ratio 8.0 (newc9 #11)
        n = len(x.get("drawn_over", ()))
        near = f" near {scale / 1e9:,.3g}B" if scale else ""
        count = f"{n}{near}; " if n else ""
        extra = "".join(f"; bundled but not an envelope row: {_named([b['name']], scale, b['total_params'])} at {b['value']:.4g}"
                        for b in x.get("bundled_beyond", ()))
        out.append(f"envelope: {_rows([j for j, _, _ in rows])} {side} every model the envelope draws {bound.split('.')[0]} from "
                   f"({count}{span} against {pub:.4g}, {_named(who, scale)}{extra}): inside only by the {_margin(bound)} margin")
    return out


def _span(ds: list[dict]) -> str:
    """The header's third line: the parameter range the rows span (params_line says it against the budget)."""
    p = [d["total_params"] for d in ds]
    return f"\nrows span {_params(min(p))}-{_params(max(p))} params" if p else ""


def export_line(carried: dict, changes: list) -> str:
    """What --export took from the baseline and what it set otherwise (explore.design.baseline_fields, export_changes)."""
    if not carried:
        return "export: design 1's shape on the Llama template (no baseline given)"
    out = "export: the shape is design 1's; from the baseline " + ", ".join(f"{k} {json.dumps(v)}" for k, v in carried.items())
    if "max_position_embeddings" not in carried:
        out += " (its config.json was not read: the template's max_position_embeddings 131072, rope_theta 5e5 stand)"
    if changes:
        out += "; changed, as the search priced it: " + ", ".join(f"{k} {json.dumps(a)} -> {json.dumps(b)}" for k, a, b in changes)
    return out


def _raw_config(ref: str | None) -> dict | None:
    """The baseline's config.json as written: a bundled model's (spec.registry), or the file --baseline names or a
    folder holding one; None for a Hub id (the export then says its config was not read)."""
    from pathlib import Path

    from llm_codesign.spec.registry import _data, _index

    key = (ref or "").strip().lower()
    p = _data().joinpath(_index()[key]["config"]) if key in _index() else Path(ref) if ref else None
    p = p / "config.json" if p and p.is_dir() else p
    try:
        return json.loads(p.read_text()) if p and p.is_file() else None
    except (OSError, ValueError):
        return None


@app.command()
def lint(
    model: str = typer.Argument(..., help="Registry name, Hugging Face id or config.json path."),
    gpu: str = O_GPU,
    regime: str = typer.Option("throughput", "--regime", help="latency, throughput or long-context."),
    fmt: str = typer.Option("table", "--format", help="table, json or sarif."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
    fail_on: Optional[str] = typer.Option(None, "--fail-on", help="Exit 1 when a finding reaches this severity: warning or error."),
    gpus_: Optional[int] = typer.Option(None, "--gpus", min=1, max=MAX_GPUS, help="GPUs the shape is deployed on: R2, R3 and R6 are "
                                        "priced at design's best deployment on them at the regime's SLO (default 8), R6's and R7's "
                                        "larger plans within them (default 8, the point's own)."),
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    calibration: Optional[str] = O_CAL, accuracy_proxy: Optional[str] = O_PROXY, backend: Optional[str] = O_BACKEND,
):
    """Check a model shape against the hardware guidelines, with the predicted cost of each finding."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.lint import COST_KEY, OBJECTIVE_KEY, RULES, SEVERITY_ORDER, Lint, lint_priced, to_sarif

    fmt = "json" if as_json else fmt
    if fmt not in ("table", "json", "sarif"):
        raise InputError("format", fmt, "table, json or sarif")
    if fail_on is not None and fail_on not in ("warning", "error"):
        raise InputError("fail_on", fail_on, "warning or error")
    m, g = _model(model), _gpu(gpu)
    # the engine named, else None: lint prices on the GPU's own, or on one that runs the shape where that one does not (R4)
    cal, prec = calibration_for(g, calibration), _precision(m, weight_dtype, activation_dtype, kv_dtype, g)
    eng = engine_for(g, backend) if backend else None
    findings, at, priced = lint_priced(m, g, cal, regime, prec=prec, proxy_file=accuracy_proxy, engine=eng, gpus=gpus_)
    answer = Lint(m, g, regime, (findings, at, priced), gpus=gpus_)  # where they were priced, and on what: every surface's
    if fmt == "json":  # as POST /api/lint answers; R2's, R3's and R6's figures carry the point they were priced at
        _dump(answer.to_dict())
    elif fmt == "sarif":
        _dump(to_sarif(findings, model))
    else:
        t = _table(f"lint: {m.name} on {g.name}, {regime} regime ({len(findings)} finding{'s' if len(findings) != 1 else ''})", "rule:t severity:k where:t cost_%:n finding:t fix:t",
                   f"{answer.caption}. {COST_KEY} {OBJECTIVE_KEY}")
        color = {"error": "red", "warning": "yellow", "info": "cyan"}
        for f in findings:
            oc = f.objective_cost()
            cost = f"{f.cost_pct:.1f}" + (f"\n-{oc['lost']:,.1f} {oc['unit']}" if oc else "")
            t.add_row(f"{f.rule} {RULES[f.rule][0]}", f"[{color[f.severity]}]{f.severity}[/]" + (f"\n{w}" if (w := _weight(f)) else ""), f.where, cost, f.message, f.fix)
        _console().print(t)
    if fail_on and any(SEVERITY_ORDER[f.severity] >= SEVERITY_ORDER[fail_on] for f in findings):
        raise typer.Exit(1)


def _stderr_is_terminal() -> bool:
    from rich.console import Console

    return Console(stderr=True).is_terminal


def _stage(line: str) -> None:
    """`line` on stderr where it is a terminal (a person waiting), else nothing (a log gets _progress's lines)."""
    if _stderr_is_terminal():
        typer.echo(line, err=True)


def _announced(cb, line: str):
    """`cb`, a search's progress callback, that first says `line` (_stage), once."""
    said = []

    def report(done, total):
        if not said:
            said.append(_stage(line))
        cb(done, total)

    return report


def _weight(f) -> str:
    """The severity's weight in words beside it (newc5 #22): severity says whether a plan can run, cost how much the shape
    pays, and they point different ways: an error at 0% is a plan that cannot run (R7: TP8 with 52 heads), not a free
    finding, and an info at 86.6% is a cost with nothing blocked. Only the first needs words: the % column beside it says
    every cost (a "costs 1.3%" here folded the rule's name mid-word at 80 columns)."""
    return "blocks a plan" if f.severity == "error" and f.cost_pct <= 0.05 else ""


@app.command()
def design(
    params: float = typer.Option(..., "--params", help="Total-parameter budget, e.g. 70e9."),
    gpu: str = typer.Option(DESIGN_GPU, "--gpu", help="GPU id (see `gpus`) or a GPU .toml file."),
    gpus_: int = typer.Option(8, "--gpus", min=1, max=MAX_GPUS, help="GPUs each design is deployed on (replicas of smaller instances fill them)."),
    regime: str = typer.Option("throughput", "--regime", help="latency, throughput or long-context."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Model to beat at equal quality proxy (default reference: the "
                                           "published model of the search's kind nearest the budget, scaled to it when outside --budget-tol)."),
    moe: bool = typer.Option(False, "--moe", help="Search MoE shapes (experts, top-k, expert width, shared expert)."),
    active_params: Optional[float] = typer.Option(None, "--active-params", help="MoE: an active-parameter budget as well, e.g. "
                                                  "30e9, within --budget-tol as the total (--params) is."),
    min_tps_user: float = typer.Option(20.0, "--min-tps-user", help="Throughput/long-context SLO: tokens/s per user."),
    min_tps_gpu: float = typer.Option(50.0, "--min-tps-gpu", help="Latency-regime floor: output tokens/s per GPU."),
    isl: Optional[int] = tokens_option(None, "--isl", help="Input tokens per request (default: the regime's, 1024; long-context 32768)."),
    osl: Optional[int] = tokens_option(None, "--osl", help="Output tokens per request (default: 1024)."),
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    budget_tol: float = typer.Option(0.1, "--budget-tol", help="Relative tolerance on total parameters (and active ones, --active-params)."),
    quality_sigmas: float = typer.Option(1.0, "--quality-sigmas", help="Equal quality: a shape's proxy loss at most this many "
                                         "sigma of the difference above the reference's (the sigma of the terms the two shapes differ in)."),
    quality_tol: float = typer.Option(0.0, "--quality-tol", help="An extra tolerance on the proxy loss, relative to the reference's, "
                                      "on top of --quality-sigmas."),
    outside_envelope: bool = typer.Option(False, "--outside-envelope", help="Search shapes outside the published models' "
                                          "envelope too (their accuracy is extrapolated)."),
    quality_file: Optional[str] = typer.Option(None, "--quality", help="Quality-proxy constants .toml (overrides)."),
    accuracy_proxy: Optional[str] = O_PROXY,
    max_candidates: int = typer.Option(20000, "--max-candidates", min=1, max=MAX_CANDIDATES,
                                       help="Grid search: at most this many shapes priced, an even spread over the grid."),
    top: int = typer.Option(DESIGN_TOP, "--top", min=1, max=MAX_TOP, help="Designs listed."),
    rank_all: bool = typer.Option(False, "--rank-all", help="Rank by the objective alone; default: rows whose quality the proxy "
                                  "resolves (err ± <= |loss| + ±test) first."),
    search_mode: str = typer.Option("grid", "--search", help="grid (enumerate every shape) or nsga2 (optuna, the dist extra)."),
    trials: int = typer.Option(300, "--trials", min=1, max=100_000, help="NSGA-II trials."),
    export: Optional[str] = typer.Option(None, "--export", help="Write the best design as a Hugging Face config.json; - for standard output."),
    plot_path: Optional[str] = typer.Option(None, "--plot", help="Frontiers of the top designs vs the baseline (.png/.svg)."),
    report: Optional[str] = typer.Option(None, "--report", help="A self-contained HTML page to forward (.html): the reference and "
                                         "the top 3 designs side by side (frontiers with their bands, speed at the SLO, quality "
                                         "with its band, envelope, lint findings with their costs); --json carries the same."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Grid search: price the shape chunks on Dask, local (a "
                                            "LocalCluster) or tcp://HOST:PORT (default: DASK_SCHEDULER_ADDRESS, else in-process)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, max=4096, help="Threads of the local cluster."),
    backend: Optional[str] = O_BACKEND, calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
):
    """Search model shapes that move the frontier out at equal quality proxy."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.design import (
        DEFAULT_VOCAB,
        Slo,
        baseline_fields,
        check_options,
        design_nsga2,
        export_changes,
        hf_config,
        to_model,
    )
    from llm_codesign.explore.design import design as run
    from llm_codesign.outputs import check_writable, write_all, write_text
    from llm_codesign.render.intervals import (
        UNINFORMATIVE_TEXT,
        capped_footnote,
        span_text,
        unpredictable,
        unpredictable_footnote,
    )

    # every option before the shape grid (seconds) and the search (minutes)
    check_options(params=params, active_params=active_params, budget_tol=budget_tol, quality_tol=quality_tol, quality_sigmas=quality_sigmas,
                  min_tps_user=min_tps_user, min_tps_gpu=min_tps_gpu, num_gpus=gpus_, isl=isl, osl=osl, max_candidates=max_candidates, top=top)
    if search_mode not in ("grid", "nsga2"):
        raise InputError("search", search_mode, "grid or nsga2")
    if plot_path and not plot_path.endswith((".png", ".svg")):
        raise InputError("plot", plot_path, "a .png or .svg path")
    if report and not report.endswith((".html", ".htm")):
        raise InputError("report", report, "an .html path")
    for name, p in (("export", export), ("plot", plot_path), ("report", report)):
        if p:
            check_writable(name, p, stdout=name == "export")
    if export == "-" and as_json:
        raise InputError("export", export, "a file path with --json (standard output carries the JSON)")
    check_paths([("--export", export), ("--plot", plot_path), ("--report", report)],
                {"--baseline": baseline, "--gpu": gpu, "--quality": quality_file, "--accuracy-proxy": accuracy_proxy,
                 "--calibration": calibration})
    g = _gpu(gpu)
    eng = engine_for(g, backend)
    base = _model(baseline) if baseline else None
    if base:
        prec = _precision(base, weight_dtype, activation_dtype, kv_dtype, g)
    else:
        from llm_codesign.spec.precision import Precision

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
    # a line on a terminal's stderr as each stage starts: 10-20 s on a busy machine said nothing (newc5 #21); the search's
    # at its first report, once its inputs are checked (bad input stays one line). Piped, _progress's line every 5 s
    # stands in and the output stays what a script reads
    cb = _announced(cb, f"design: searching shapes of {params / 1e9:g}B parameters on {gpus_}x {g.name} (progress every 5 s)")
    try:
        if search_mode == "nsga2":
            r = design_nsga2(params, g, cal, gpus_, slo, baseline=base, moe=moe, prec=prec, budget_tol=budget_tol, quality_tol=quality_tol,
                             quality_sigmas=quality_sigmas, outside_envelope=outside_envelope, quality_file=quality_file, engine=eng, trials=trials, top=top, progress=cb, proxy_file=accuracy_proxy, rank_all=rank_all,
                             active_params=active_params)
        else:
            r = run(params, g, cal, gpus_, slo, baseline=base, moe=moe, prec=prec, budget_tol=budget_tol, quality_tol=quality_tol,
                    quality_sigmas=quality_sigmas, outside_envelope=outside_envelope, quality_file=quality_file, engine=eng, max_candidates=max_candidates, top=top, progress=cb,
                    proxy_file=accuracy_proxy, scheduler=scheduler, workers=workers, active_params=active_params, rank_all=rank_all)
    finally:
        if prog:
            prog.stop()
    from llm_codesign.explore.design_report import complete
    from llm_codesign.measure.intervals import table_for

    _stage(f"design: pricing the report of the best {len(r['designs'])} shapes (their deployments, lint, intervals)")
    # each row's lint and intervals; the winners beside the reference where asked (a second or less: four shapes' frontiers)
    r = complete(r, params=params, gpu=g, cal=cal, prec=prec, num_gpus=gpus_, slo=slo, moe=moe, engine=eng, baseline=base,
                 budget_tol=budget_tol, table=table_for(calibration, gpu=g), quality_file=quality_file, proxy_file=accuracy_proxy,
                 side=bool(as_json or report))
    vocab = base.vocab if base else DEFAULT_VOCAB
    jobs = []  # every file written, or none
    if report and r["designs"]:
        from llm_codesign.render.design_report import write_design_html

        jobs.append((lambda p: write_design_html(r, p), report))
    if plot_path and r["designs"]:
        from dataclasses import replace

        from llm_codesign.explore.envelope import reference_model
        from llm_codesign.explore.search import SearchSpace, search
        from llm_codesign.render.report import write_plot

        # the baseline (else the reference) first, then designs 1-3: series i takes colour i, as design.html's columns do
        who, name, _ = reference_model(params, baseline=base, moe=moe, budget_tol=budget_tol, active=active_params)
        runs = [replace(search(who, g, cal, SearchSpace(gpus_, precisions=(prec,)), isl=r["isl_osl"][0], osl=r["isl_osl"][1], engine=eng),
                        model=f"{'baseline' if base else 'reference'} {name}")]
        for j, d in enumerate(r["designs"][:3]):
            res = search(to_model(d, vocab, f"design {j + 1}"), g, cal, SearchSpace(gpus_, precisions=(prec,)),
                         isl=r["isl_osl"][0], osl=r["isl_osl"][1], engine=eng)
            runs.append(replace(res, model=f"design {j + 1} ({d['shape']['hidden']}x{d['shape']['layers']})"))
        jobs.append((lambda p: write_plot(runs, p), plot_path))
    raw = _raw_config(baseline)
    carried = baseline_fields(base, raw)  # the baseline's context, RoPE and vocabulary, not the Llama template's
    cfg = hf_config(r["designs"][0], vocab, carried) if export and r["designs"] else None
    config = json.dumps(cfg, indent=2) + "\n" if cfg is not None else None
    if config is not None and export != "-":
        jobs.append((lambda p: p.write_text(config), export))
    write_all(jobs)
    if config is not None and export == "-":
        write_text(export, config)
    if as_json:
        return _dump(r)
    con = _console(stderr=export == "-")  # the table beside a config.json on standard output goes to stderr
    ref = r["reference"]
    short = objective_short(r["objective"])
    for line in baseline_lines(r):  # what the rows are measured against, as the page shows it (render.design_lines)
        con.print(line, highlight=False)
    env = r["envelope"]
    rows = []
    for j, d in enumerate(r["designs"], 1):
        shape, q, e = shape_label(d["shape"]), d["quality"], d["envelope"]
        where = "in" if e["inside"] else _envelope_cell(e["outside"][0])
        rows.append((str(j), shape, f"{d['total_params'] / 1e9:.1f}B", f"{d['active_params'] / 1e9:.1f}B",
                     f"{q['delta_pct']:+.2f}±" + ("n/a" if q.get("test_band_na") else f"{q['sigma_delta_pct']:.2f}") + (" ~" if q.get("flat") else "")
                     # x beside the band it widens (the test's keeps each term's measured sigma)
                     + f"\nerr ±{q['uncertainty_pct']:.2f}" + (" x" if q["extrapolated"] else "")
                     + ("" if q.get("resolved", True) else " ?"), where,
                     # whole tok/s from 1,000 up: the tenth is noise there, and it kept the deployment column whole at 80
                     f"{d['objective']:.{1 if d['objective'] < 1000 else 0}f}{unpredictable(d.get('intervals', {}).get(r['objective']))}",
                     f"{d['gain_pct']:+.1f}" if d["gain_pct"] is not None else "-",
                     f"{d['deployment']['plan']} B={d['deployment']['concurrency_per_instance']}"
                     + (f"\n{cg}" if (cg := graphs_said(d["deployment"])) else ""), f"{d['lint']['errors']}E {d['lint']['warnings']}W"))
    # where the rows differ in the envelope, each row's place in it beneath its loss (a column of its own cropped the lint
    # column at 80); every row inside it (a search inside it, the default) is said once in the caption, as pareto says a
    # shared column beneath, and the figures' headers take two lines: the table then fits 80 columns, lint included
    inside = all(row[5] == "in" for row in rows)
    rows = [(*row[:4], row[4] if inside else f"{row[4]}\n{row[5]}", *row[6:]) for row in rows]
    heads = f"{'|/'.join(short.rsplit('/', 1))}:n gain|%:n"
    columns = f"#:n shape:t params:n active:n {'loss_%|±test' if inside else 'loss_%|±test|envelope'}:n {heads} deployment:t lint:k"
    # the budget as asked, three significant figures as the params: line says it (a %.0f read 1.5e9 as "2B", newc11 #10)
    budget = f"{_params(params)} ± {100 * budget_tol:g}% params" + (f", {_params(active_params)} active" if active_params is not None else "")
    # the search's size on a line of its own: folded at 80 columns, one title broke "in 1.5 / s)" between a figure and its unit
    sc = r.get("screened", {})
    thinned = f", thinned to {sc['priced']:,} of {sc['admitted']:,} admitted" if sc.get("priced", 0) < sc.get("admitted", 0) else ""
    t = _table(f"designs at {budget} on {gpus_}x {g.name}, {regime} regime\n({r['candidates']:,} shapes{thinned}, "
               f"{r['evaluated']:,} deployments in {r['seconds']:.1f} s)" + _span(r["designs"]), columns,
               f"shape: hidden h, layers L, query/KV heads H (q: their width / hidden, where not 1), FFN width (experts E, top-k, expert width w, shared sh). loss %: the "
               f"proxy loss against {ref['name']}'s; ±test: sigma_delta, the band the equal-quality test uses; err ± beneath: the "
               "model's error of the delta, flat axes and extrapolation included, the band to read as evidence; x beside it: a term "
               "extrapolated beyond its studied range or the model sizes it was measured at; ?: quality not resolved (err ± wider than "
               "|loss| + ±test: the proxy cannot tell the row from the reference" + ("" if r.get("rank_all") else "; ranked after the resolved rows")
               + "); ~: the shapes differ on an axis the proxy is flat on (it cannot tell them apart). "
               + na_said(r["designs"])
               + (envelope_said(env) if inside else "envelope, beneath the loss: in, or the bound it breaks most, above its "
                  "maximum (>) or below its minimum (<), and by what factor (--json: every bound)") + " ("
               + ("searched inside it" if env["applied"] else "--outside-envelope") + f"). {short}: the regime's objective at its best "
               "deployment; gain % over the baseline (else the reference) at the same SLO. deployment: its plan, B requests an "
               f"instance; {GRAPHS_LEGEND}. lint: errors and warnings.")
    for row in rows:
        t.add_row(*row)
    con.print(t)
    # a row's objective whose 95% interval spans more than x20 marked, as estimate says "not predictable here"
    if line := unpredictable_footnote([d.get("intervals") for d in r["designs"]], [r["objective"]], "rows"):
        con.print(line, highlight=False)
    con.print(quality_rule_line(r), highlight=False)  # and the --quality-sigmas values that admit the same shapes
    if line := resolved_line(r):  # the test's band is narrower than the error: said, not hidden, as the page says it
        con.print(line, highlight=False)
    if line := params_line(r, short):
        con.print(line, highlight=False)
    if line := _batch_line(r, short):
        con.print(line)
    if line := ffn_pass_line(r.get("grid", {}).get("ffn_pass")):
        con.print(line)
    for x in r.get("grid", {}).get("extended", []):
        con.print(f"grid extended: {x['axis']} to {x['to']} (one of the 10 best sat on its {x['side']} edge; {x['admitted']} shapes admitted)")
    # design 1's edges and neighbours (explore.design._binds): with resolved quality ranked first it may not be the fastest row
    for x in r.get("binds", []):
        con.print(f"binds design 1: {bind_text(x)}")
    for line in envelope_lines(r["designs"], env["scale"]):
        con.print(line, highlight=False)
    if r["designs"]:  # how far to trust the objective (every row's in --json)
        b1 = r["designs"][0]["intervals"][r["objective"]]
        con.print(f"{short} of design 1: 80% interval {b1['lo80']:.1f}-{b1['hi80']:.1f}, 95% {b1['lo95']:.1f}-{b1['hi95']:.1f}"
                  + (UNINFORMATIVE_TEXT.format(span=span_text(b1["span95"])) if unpredictable(b1) else "")
                  + f" (from {b1['source']}{'; ' + '; '.join(b1['widened']) if b1['widened'] else ''})", highlight=False)
        if line := capped_footnote([("", {r["objective"]: b1})], levels=("80", "95")):  # a bound held at what its GPUs allow, as estimate says it
            con.print(line, highlight=False)
        con.print(versus_line(r), highlight=False)
        if line := scale_line(r["designs"][0]):
            con.print(line, highlight=False)
    if export and r["designs"]:
        con.print(export_line(carried, export_changes(cfg, base, raw)), highlight=False)
        con.print(f"wrote {'standard output' if export == '-' else export}")
    if plot_path and r["designs"]:
        con.print(f"wrote plot: {plot_path}")
    if report and r["designs"]:
        con.print(f"wrote report: {report}")
