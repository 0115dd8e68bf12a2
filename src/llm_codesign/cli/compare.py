"""`compare`: a few models x precisions x GPUs at one SLO, side by side on accuracy, throughput and interactivity."""
from __future__ import annotations

from typing import Optional

import typer

from llm_codesign.cli.common import (
    DEFAULT_GPU,
    GRAPHS_NOTE,
    O_ARRIVAL,
    O_BACKEND,
    O_CAL,
    O_ISL,
    O_OSL,
    _console,
    _dump,
    _gpu,
    _model,
    _table,
    app,
    check_paths,
    defaulted,
    say_notes,
)
from llm_codesign.errors import InputError
from llm_codesign.explore.compare import MAX_COMBINATIONS, accuracy_compared  # noqa: F401 (compare's names, where they were)
from llm_codesign.measure.intervals import Widening
from llm_codesign.render.accuracy import drop_pct
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.plan import MAX_GPUS


def said_once(reasons: list) -> list:
    """One GPU's widening reasons over its rows, each said once: a reason whose parts (its `what`, "; "-joined as
    measure.intervals joins the kernel tables a question lacks) another of the same term and note holds too is left out.
    An MI300X's BF16 row lacks the GEMM and attention tables, its other row the attention table alone: "no attention
    kernel table on CDNA3" was said twice for the one GPU (review fixB13 #5). Reasons without their fields (text): by text."""
    def key(w):
        return (w.kind, w.quantity, w.span, w.factors, w.levels, w.note) if isinstance(w, Widening) else str(w)

    def parts(w):
        return set(w.what.split("; ")) if isinstance(w, Widening) else {str(w)}

    out = []
    for i, w in enumerate(reasons):
        held = [v for j, v in enumerate(reasons) if j != i and key(v) == key(w) and parts(w) <= parts(v)]
        if not any(parts(w) < parts(v) or str(v) == str(w) and v in out for v in held):
            out.append(w)
    return out


def _accuracy_cell(c: dict) -> str:
    if c["kind"] == "score":
        return f"{c['value']:g}"
    if c["kind"] == "n/a":  # no score and no pair: unmeasured, never a 0% borrowed from its format class
        return "unmeasured"
    if c["source"] == "reference":
        return "ref" if c["precision"] == c["against"] else drop_pct(0.0)  # the reference, or a format of its class
    if c.get("band"):  # no published pair (post-training MXFP4's proxy): its 1-sigma range, no centre to read as measured (newc5 #6)
        return f"unmeasured\n-{max(c['value'] - c['sigma'], 0.0):.0f}% to -{c['value'] + c['sigma']:.0f}%"
    return "-" + drop_pct(c["value"], c["sigma"] if c["source"] == "proxy" else None)


def _accuracy_notes(rows: list[dict]) -> dict[str, str]:
    """What each model's accuracy cells are, by model."""
    out: dict[str, str] = {}
    for r in rows:
        c = r["accuracy_compared"]
        if c["kind"] == "score":
            out[r["model"]] = f"accuracy: {c['benchmark']}, published for every precision shown ({c['setting']})"
        elif c["kind"] == "drop" and r["model"] not in out:
            scored = any(x["accuracy"]["scores"] for x in rows if x["model"] == r["model"])
            out[r["model"]] = (f"accuracy: the change against {c['against']} (ref), from published pairs or the proxy's (± 1 "
                               "sigma); " + ("no one benchmark has a score published at every precision shown" if scored else
                                             f"no benchmark score is published for {r['model']} at any precision shown"))
    for r in rows:  # a row with no accuracy source at all: why, once per model (accuracy_of's note)
        c = r["accuracy_compared"]
        if c["kind"] == "n/a" and r["accuracy"].get("drop_unmeasured"):
            why = f"{c['precision']}: unmeasured, {r['accuracy']['drop_unmeasured']}"
            if why not in out.get(r["model"], ""):  # once per model, however many GPUs' rows share the format
                out[r["model"]] = f"{out[r['model']]}; {why}" if r["model"] in out else f"accuracy: {why}"
    for model in out:  # a format with no published pair: its band is a proxy's, said under its table (accuracy_model.format_drops)
        banded = sorted({r["accuracy_compared"]["precision"] for r in rows if r["model"] == model and r["accuracy_compared"].get("band")})
        if banded:
            out[model] += (f"; {', '.join(banded)}: a proxy band, unmeasured (no published pair): post-training MXFP4 lags NVFP4 by "
                           "about 10% (Chhugani et al. 2026, arXiv:2603.08713), added to NVFP4's published drop, ± the whole gap")
    return out


def _plan_cell(dep: dict) -> str:
    """'TP2 x4' over '48 each': the point whole, as `estimate --tp 2 --concurrency 48` (per instance) or `export` prices it
    again; the plan alone ("TP2") left its instances and batch to --json."""
    return f"{dep['plan']} x{dep['replicas']}\n{dep['concurrency_per_instance']} each"


def _lo_hi(b: dict, value: float) -> str:
    """A tok/s/GPU's 80% interval, with its centre where the prediction lies outside it (render.intervals.CENTRE)."""
    from llm_codesign.render.intervals import off_centre

    return f"{b['lo80']:.0f}-{b['hi80']:.0f}" + (f" c{b['centre']:.0f}" if off_centre(b, value) else "")


def engines_footnote(engines: dict, arrival: str) -> str:
    """The line under a comparison whose rows run different engines (`engines`: (GPU, engine) pairs): the GPUs' TTFT
    and TPOT differ by engine as well as by GPU, and SGLang's front end serialises a wave's arrivals
    (docs/modelling-notes.md#serial-front-end), so the same engine on every GPU (--backend) sets the GPUs alone apart."""
    by = {}
    for g, e in engines:
        by.setdefault(e, []).append(g)
    said = "; ".join(f"{e} on {', '.join(gs)}" for e, gs in by.items())
    waves = " SGLang in waves serialises its front end over a wave's requests;" if arrival == "waves" and "sglang" in by else ""
    return (f"rows run different engines: {said}. Their TTFT and TPOT differ by engine as well as by GPU;{waves} "
            "--backend prices every GPU on one engine.")


def unique_refs(refs, resolve) -> list[str]:
    """The names `refs` once each by what `resolve` makes of them (the first spelling kept): `h100,H100` is one GPU,
    `qwen3-0.6b,Qwen/Qwen3-0.6B` one model (ModelSpec compares by its fields). A name that does not resolve is kept as
    typed, to be refused where every name is checked, in that check's words."""
    seen: dict = {}
    for ref in refs:
        try:
            key = resolve(ref)
            hash(key)
        except (InputError, TypeError):
            key = ("as typed", ref)
        seen.setdefault(key, ref)
    return list(seen.values())


@app.command()
def compare(
    model: str = typer.Argument(..., help="Models, comma-separated."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help=f"GPU ids, comma-separated (default {DEFAULT_GPU}, said on the first line)."),
    gpus_: int = typer.Option(8, "--gpus", min=1, max=MAX_GPUS, help="GPUs per deployment (replicas fill them)."),
    weight_dtype: Optional[str] = typer.Option(None, "--weight-dtype",
                                               help="Weight formats, comma-separated (default: the checkpoint's and what each GPU runs natively)."),
    kv_dtype: Optional[str] = typer.Option(None, "--kv-dtype", help="KV-cache format of every row, one of --weight-dtype's (default: the "
                                           "checkpoint's with its own weights, FP8 with the others where the GPU runs it)."),
    isl: int = O_ISL, osl: int = O_OSL, backend: Optional[str] = O_BACKEND, arrival: str = O_ARRIVAL,
    min_tps_user: Optional[float] = typer.Option(None, "--min-tps-user", help="SLO: minimum tokens/s per user."),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", help="SLO: maximum TTFT in ms."),
    plot_path: Optional[str] = typer.Option(None, "--plot", help="A chart of the rows (.png or .svg): tok/s/GPU against tok/s/user, "
                                            "each point with its accuracy."),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
    gpu_hour_price: Optional[str] = typer.Option(None, "--gpu-hour-price",
                                                 help="Dollars per GPU-hour, `bundled` (the cited data/prices.toml) or a price file: "
                                                      "adds $ per million output tokens of each best deployment."),
):
    """Models x precisions x GPUs at one SLO, side by side: accuracy, tok/s/GPU, tok/s/user."""
    from llm_codesign.explore import compare as cmp
    from llm_codesign.render.intervals import arrival_footer

    # a repeat once (the first), by what it names: "qwen3-0.6b,Qwen/Qwen3-0.6B" is one model, "h100,H100" one GPU
    models = unique_refs((x.strip() for x in model.split(",") if x.strip()), _model)
    gpu, gpu_note = defaulted(gpu, "--gpu", DEFAULT_GPU)
    gpus = unique_refs((x.strip() for x in gpu.split(",") if x.strip()), _gpu)
    formats = [x.strip() for x in weight_dtype.split(",") if x.strip()] if weight_dtype else None
    # every check before any search, as lc.compare makes them (explore.compare.ask)
    question = cmp.ask(models, gpus, formats, kv_dtype=kv_dtype, num_gpus=gpus_, isl=isl, osl=osl, engine=backend,
                       min_tps_user=min_tps_user, max_ttft_ms=max_ttft_ms, gpu_hour_price=gpu_hour_price, model_value=model, gpu_value=gpu,
                       arrival=arrival)
    unpriced = list(question.unpriced)
    from llm_codesign.explore.search import refuse_without_decode
    from llm_codesign.render.intervals import DASH, NO_DECODE, one_token

    refuse_without_decode(osl, plot=plot_path)  # the chart's x axis is tok/s/user
    one = one_token(osl)  # one output token: each row's tok/s/user is null (serve.metrics.without_decode), a dash here
    if plot_path:  # refused before the searches, not after
        from llm_codesign.outputs import check_writable
        from llm_codesign.render.report import plot_extra

        if not plot_path.endswith((".png", ".svg")):
            raise InputError("plot", plot_path, "a .png or .svg path")
        check_writable("plot", plot_path)
        plot_extra(plot_path)
        check_paths([("--plot", plot_path)], {"MODEL": models, "--gpu": gpus, "--calibration": calibration, "--gpu-hour-price": gpu_hour_price})
    answer = cmp.compare(question, calibration=calibration)
    rows = list(answer.rows)
    slo = ", ".join(x for x in (f">= {min_tps_user:g} tok/s/user" if min_tps_user else "",
                                f"TTFT <= {max_ttft_ms:g} ms" if max_ttft_ms else "") if x) or "none"
    if plot_path:
        from llm_codesign.outputs import write_all
        from llm_codesign.render.compare_plot import draw_compare

        title = f"compare at ISL/OSL {isl}/{osl} on {gpus_} GPUs, SLO {slo}"
        write_all([(lambda p: draw_compare(rows, [_accuracy_cell(r["accuracy_compared"]) for r in rows], p, title=title), plot_path)])
    say_notes(gpu_note)  # once nothing is left to refuse
    if as_json:
        return _dump(answer.to_dict())
    # one table per model, its name the title and what its accuracy cells are beneath: a long name
    # (qwen3-235b-a22b-nvfp4) takes no column's width, so 80 columns hold every figure whole; the
    # columns take one width in every table, so the models still line up
    one_gpu = len({r["gpu"] for r in rows}) == 1
    priced = gpu_hour_price is not None
    engines = dict.fromkeys((r["gpu"], r["engine"]) for r in rows)  # the engine once where every GPU runs the same one
    one_engine = len({e for _, e in engines}) == 1
    # TTFT* where the rows' engines differ: the note that says why sits above the table, not under its footers (newc5 #5)
    columns = (("" if one_gpu else "gpu:k ") + "W|A/KV:k accuracy:k tok/s|/GPU:n tok/s|/user:n " + ("TTFT|ms" if one_engine else "TTFT*|ms") + ":n tok/J:n"
               + (" $/Mtok:n" if priced else "") + " plan:t")
    cells = [[*(() if one_gpu else (r["gpu"],)), f"{r['weight_dtype']}\n{r['activation_dtype']}/{r['kv_dtype']}", _accuracy_cell(r["accuracy_compared"]),
              *((f"{b['output_tok_s_per_gpu']:.0f}\n{_lo_hi(b['intervals']['output_tok_s_per_gpu'], b['output_tok_s_per_gpu'])}", DASH if one else f"{b['tok_s_per_user']:.1f}", f"{b['ttft_ms']:.0f}", f"{b['energy']['tokens_per_joule']:.2f}",
                 *((f"{b['cost']['usd_per_m_output_tokens']:.3f}" if b["cost"] else "-",) if priced else ()), _plan_cell(b["deployment"]))
                if b else ("-", "-", "-", "-", *(("-",) if priced else ()), r.get("why_none", "-")))] for r in rows for b in (r["best"],)]
    heads = [max(len(x) for x in spec.rsplit(":", 1)[0].split("|")) for spec in columns.split()]
    widths = [max([h] + [len(line) for c in cells for line in c[i].split("\n")]) for i, h in enumerate(heads)]
    con = _console()
    # each engine with the releases its defaults are priced at (Engine.release; newcomer finding #14)
    on = (" / ".join(f"{gpus_}x {g}" + ("" if one_engine else f" ({e}, defaults as {get_engine(e).release})") for g, e in engines)
          + (f", {get_engine(rows[0]['engine']).priced_as}" if one_engine else ""))
    con.print(f"compare at ISL/OSL {isl}/{osl} on {on}, SLO {slo}", highlight=False)
    if not one_engine:  # a GPU's default engine differs: its TTFT and TPOT differ by the engine too, not the GPU alone (newc4 #1)
        con.print("* " + engines_footnote(engines, question.arrival), highlight=False)
        loop = [f"{r['gpu']} {r['weight_dtype']} {r['best']['ttft_closed_loop_ms']:,.0f} ms" for r in rows if (r["best"] or {}).get("ttft_closed_loop_ms") is not None]
        if loop:  # the same deployments' TTFT with staggered arrivals: what sets the GPUs apart without an engine's waves artefact
            # the TTFT* note's second line, indented under it: one "*" for the one starred column (crev11, noted)
            con.print(f"  TTFT in a closed loop (each row's deployment, arrivals staggered): {'; '.join(dict.fromkeys(loop))}", highlight=False)
    notes = _accuracy_notes(rows)
    if len(names := list(dict.fromkeys(r["model"] for r in rows))) > 1:
        # each model's cells are on its own measure (its benchmark, or its change against its own reference precision); the
        # proxy's loss is a shape's, blind to training data, so it is no cross-model score either (newcomer review, designq)
        con.print(f"accuracy is compared within each model only, not across the {len(names)} models: each table's cells are on "
                  "that model's own benchmark or against its own reference precision", highlight=False)
    for name in names:
        t = _table(f"[b]{name}[/b]", columns, title_justify="left")
        for col, w in zip(t.columns[:-1], widths, strict=False):  # the plan, last, wraps between its words where it must
            col.min_width = w
        for r, c in zip(rows, cells, strict=True):
            if r["model"] == name:
                t.add_row(*c)
        con.print(t)
        if name in notes:
            con.print(notes[name], highlight=False)
    con.print("W: weight format, A/KV beneath: activation and KV-cache formats. tok/s/GPU: the deployment that meets the SLO with the most output tokens/s per GPU, its 80% "
              "interval beneath; "
              "tok/s/user, TTFT, tok/J (output tokens per joule of the GPU at its modelled power)"
              + (f", $/Mtok (per million output tokens at {gpu_hour_price} GPU-hour prices)" if priced else "")
              + " and plan are that deployment's; plan: x its instances, beneath the requests in flight in each."
              + (f" tok/s/user: {NO_DECODE}." if one else ""), highlight=False)
    con.print(arrival_footer(question.arrival), highlight=False)  # the arrival its TTFT turns on (--arrival, the searches price it)
    con.print(GRAPHS_NOTE, highlight=False)
    # the GPUs whose interval is widened beyond the runs it came from (an H200 row has no serving run of its family):
    # pareto and estimate said so, compare did not, beside a B200 row whose band had no such stretch
    own: dict[str, list] = {}  # each GPU's (or model on a GPU's) reasons, in the rows' order
    for r in rows:
        at = r["gpu"] if one_gpu or len({x["model"] for x in rows}) == 1 else f"{r['model']} on {r['gpu']}"
        own.setdefault(at, []).extend((r["best"] or {}).get("intervals", {}).get("output_tok_s_per_gpu", {}).get("widened") or [])
    beyond: dict[str, list[str]] = {}
    for at, reasons in own.items():
        for why in said_once(reasons):
            beyond.setdefault(why, []).append(at)
    ran = {}
    for r in rows:
        for note in (r["precision_notes"] if r["best"] else ()):  # a row refused has no price to say how it ran
            ran.setdefault(note, []).append(r["gpu"] if len({x["model"] for x in rows}) == 1 else f"{r['model']} on {r['gpu']}")
    for r in rows:  # a fitted share of a row's TTFT whose mechanism is open, as estimate says it (newc11 #9)
        for note in (r["best"] or {}).get("fitted_notes", ()):
            con.print(f"[yellow]TTFT of {r['gpu']} {r['weight_dtype']}" + (f" ({r['model']})" if len(names) > 1 else "")
                      + f": {note}[/yellow]", highlight=False)
    for note, at in ran.items():
        con.print(f"[yellow]precision as run: {', '.join(dict.fromkeys(at))}: {note}[/yellow]", highlight=False)
    if beyond:
        con.print("intervals widened beyond the runs: " + "; ".join(f"{', '.join(dict.fromkeys(at))}: {why}" for why, at in beyond.items()),
                  highlight=False)
    if unpriced:
        con.print(f"$/Mtok -: the bundled prices (data/prices.toml) cite no GPU-hour price for {', '.join(unpriced)}; a price file "
                  "(--gpu-hour-price FILE) can give one.", highlight=False)
    from llm_codesign.render.intervals import CENTRE, capped_footnote, off_centre

    if any(b and off_centre(b["intervals"]["output_tok_s_per_gpu"], b["output_tok_s_per_gpu"]) for b in (r["best"] for r in rows)):
        con.print(f"c<n>: the interval's centre, where the prediction lies outside it ({CENTRE}).", highlight=False)
    # the tok/s/GPU bounds printed beneath that stop at the ideal step, as estimate's "bounds capped" row says them
    caps = capped_footnote([(f"{r['model']} on {r['gpu']}, {r['weight_dtype']}/{r['kv_dtype']}", r["best"]["intervals"])
                            for r in rows if r["best"]], ("output_tok_s_per_gpu",))
    if caps:
        con.print(caps, highlight=False)
    if plot_path:
        con.print(f"wrote plot: {plot_path}", highlight=False)
