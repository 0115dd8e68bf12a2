"""`compare`: a few models x precisions x GPUs at one SLO, side by side on accuracy, throughput and interactivity."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import typer

from llm_codesign.cli.common import (
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
)
from llm_codesign.errors import InputError
from llm_codesign.render.accuracy import drop_pct
from llm_codesign.spec.engines import check_kv_format, engine_for
from llm_codesign.spec.plan import MAX_GPUS

MAX_COMBINATIONS = 48  # each combination is one whole deployment search


def compare_rows(model_refs: list[str], gpu_refs: list[str], weight_formats: list[str] | None, *, num_gpus: int, isl: int,
                 osl: int, engines: dict, min_tps_user: float | None = None, max_ttft_ms: float | None = None,
                 calibration: str | None = None, gpu_hour_price: str | None = None, unpriced: frozenset[str] = frozenset(),
                 kv_dtype: str | None = None) -> list[dict]:
    """For each model x precision x GPU, the deployment with the most output tok/s/GPU that meets the SLO
    (None where none does), with its tok/s/user, TTFT, output tokens per joule (serve.energy), its cost
    at `gpu_hour_price` where given (None on the GPUs of `unpriced`, which it has no price for), the intervals of its metrics, and the model's accuracy at that precision (and the one
    measure the model's rows are compared on: accuracy_compared). `engines`: each GPU's engine (by its reference), resolved
    once at the edge. `kv_dtype`: every row's KV-cache format (default: each precision's own)."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.accuracy_model import accuracy_of
    from llm_codesign.explore.search import SearchSpace, default_precisions, search
    from llm_codesign.measure.intervals import table_for
    from llm_codesign.spec.precision import Precision, executable, get_dtype

    kv = get_dtype(kv_dtype, "kv_dtype") if kv_dtype else None
    for mref in model_refs if kv else ():  # a KV format some GPU's engine does not hold for some model: refused before any search
        for gref in gpu_refs:
            check_kv_format(engines[gref], _gpu(gref), kv.name, _model(mref))
    rows = []
    for mref in model_refs:
        m = _model(mref)
        for gref in gpu_refs:
            g = _gpu(gref)
            engine = engines[gref]
            cal, table = calibration_for(g, calibration), table_for(calibration, gpu=g)
            price = None if g.id in unpriced else gpu_hour_price
            if weight_formats:
                precs = [m.default_precision if w == m.default_precision.weight.name
                         else Precision.of(w, kv="fp8" if g.supports("fp8") else None) for w in weight_formats]
            else:
                precs = list(default_precisions(m, g))
            if kv:  # the KV format named, as pareto's --kv-dtype: rows that then coincide are one row
                precs = list(dict.fromkeys(replace(p, kv=kv) for p in precs))
            for p in precs:
                p = p.on(g)  # the activation that runs on this GPU (MXFP4: W4A4 on CDNA4), as the row prices it
                acc = accuracy_of(m, p)
                row = {"model": m.name, "gpu": g.id, "num_gpus": num_gpus, "engine": engine.name, "precision": p.label(), "weight_dtype": p.weight.name,
                       "activation_dtype": p.activation.name, "kv_dtype": p.kv.name, "accuracy": acc, "best": None,
                       # a format the GPU cannot run, priced as engines map it (NVFP4 as MXFP4 on CDNA4), as estimate says it
                       "precision_notes": list(executable(p, g)[1])}
                try:
                    r = search(m, g, cal, SearchSpace(num_gpus, precisions=(p,)), isl=isl, osl=osl, engine=engine,
                               min_tps_user=min_tps_user, max_ttft_ms=max_ttft_ms)
                except InputError as e:  # no valid plan for this model on these GPUs: say so in the row
                    row["why_none"] = str(e)
                    rows.append(row)
                    continue
                if r.points:  # the best point, with its metrics' intervals
                    top = replace(r, points=(max(r.priced(price).points, key=lambda q: q.output_tok_s_per_gpu),)).banded(m, table=table)
                    best = top.points[0].to_dict()
                    row["best"] = {k: best[k] for k in ("output_tok_s_per_gpu", "tok_s_per_user", "ttft_ms", "tpot_ms", "energy", "cost",
                                                        "deployment", "intervals") if k in best}
                    if g.id in unpriced:
                        row["best"]["cost"] = None
                else:
                    row["why_none"] = "no deployment meets the SLO"
                rows.append(row)
    accuracy_compared(rows)
    return rows


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
                                          "sigma": a["drop_uncertainty_pct"], "source": a["drop_source"]}
            else:
                r["accuracy_compared"] = {"kind": "n/a", "source": "none"}


def _accuracy_cell(c: dict) -> str:
    if c["kind"] == "score":
        return f"{c['value']:g}"
    if c["kind"] == "n/a":
        return "n/a"
    if c["source"] == "reference":
        return "ref" if c["precision"] == c["against"] else drop_pct(0.0)  # the reference, or a format of its class
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
    return out


def _plan_cell(dep: dict) -> str:
    """'TP2 x4' over '48 each': the point whole, as `estimate --tp 2 --concurrency 48` (per instance) or `export` prices it
    again; the plan alone ("TP2") left its instances and batch to --json."""
    return f"{dep['plan']} x{dep['replicas']}\n{dep['concurrency_per_instance']} each"


def _lo_hi(b: dict, value: float) -> str:
    """A tok/s/GPU's 80% interval, with its centre where the prediction lies outside it (render.intervals.CENTRE)."""
    from llm_codesign.render.intervals import off_centre

    return f"{b['lo80']:.0f}-{b['hi80']:.0f}" + (f" c{b['centre']:.0f}" if off_centre(b, value) else "")


@app.command()
def compare(
    model: str = typer.Argument(..., help="Models, comma-separated."),
    gpu: str = typer.Option("h200", "--gpu", help="GPU ids, comma-separated."),
    gpus_: int = typer.Option(8, "--gpus", min=1, max=MAX_GPUS, help="GPUs per deployment (replicas fill them)."),
    weight_dtype: Optional[str] = typer.Option(None, "--weight-dtype",
                                               help="Weight formats, comma-separated (default: the checkpoint's and what each GPU runs natively)."),
    kv_dtype: Optional[str] = typer.Option(None, "--kv-dtype", help="KV-cache format of every row, one of --weight-dtype's (default: the "
                                           "checkpoint's with its own weights, FP8 with the others where the GPU runs it)."),
    isl: int = O_ISL, osl: int = O_OSL, backend: Optional[str] = O_BACKEND,
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
    from llm_codesign.explore.pricing import gpu_hour_price as price_of
    from llm_codesign.spec.precision import get_dtype

    for name, v in (("min_tps_user", min_tps_user), ("max_ttft_ms", max_ttft_ms)):
        if v is not None and not (0 < v < float("inf")):
            raise InputError(name, v, "a positive finite number")
    models = [x.strip() for x in model.split(",") if x.strip()]
    gpus = [x.strip() for x in gpu.split(",") if x.strip()]
    formats = [get_dtype(x.strip(), "weight_dtype").name for x in weight_dtype.split(",") if x.strip()] if weight_dtype else None
    kv = get_dtype(kv_dtype, "kv_dtype").name if kv_dtype else None  # refused before any search
    if not models or not gpus:
        raise InputError("model" if not models else "gpu", model if not models else gpu, "at least one name")
    n = len(models) * len(gpus) * (len(formats) if formats else 3)
    if n > MAX_COMBINATIONS:
        raise InputError("model", model, f"at most {MAX_COMBINATIONS} model x GPU x precision combinations ({n} asked)")
    engines = {g: engine_for(_gpu(g), backend) for g in gpus}  # each GPU's, once: one it does not run fails before any search
    unpriced: list[str] = []  # GPUs the bundled prices cite no figure for (data/prices.toml: B300, MI355X): their cost is "-"
    for g in gpus:  # a price that cannot be read, or a GPU a number or the user's own price file does not price, fails before any search
        if gpu_hour_price is not None:
            try:
                price_of(_gpu(g), gpu_hour_price)
            except InputError as e:
                if gpu_hour_price != "bundled" or e.field != "gpu_hour_price" or len(unpriced) + 1 == len(gpus):
                    raise
                unpriced.append(_gpu(g).id)
    if plot_path:  # refused before the searches, not after
        from llm_codesign.outputs import check_writable
        from llm_codesign.render.report import plot_extra

        if not plot_path.endswith((".png", ".svg")):
            raise InputError("plot", plot_path, "a .png or .svg path")
        check_writable("plot", plot_path)
        plot_extra(plot_path)
        check_paths([("--plot", plot_path)], {"MODEL": models, "--gpu": gpus, "--calibration": calibration, "--gpu-hour-price": gpu_hour_price})
    rows = compare_rows(models, gpus, formats, num_gpus=gpus_, isl=isl, osl=osl, engines=engines, min_tps_user=min_tps_user,
                        max_ttft_ms=max_ttft_ms, calibration=calibration, gpu_hour_price=gpu_hour_price, unpriced=frozenset(unpriced),
                        kv_dtype=kv)
    slo = ", ".join(x for x in (f">= {min_tps_user:g} tok/s/user" if min_tps_user else "",
                                f"TTFT <= {max_ttft_ms:g} ms" if max_ttft_ms else "") if x) or "none"
    if plot_path:
        from llm_codesign.outputs import write_all
        from llm_codesign.render.compare_plot import draw_compare

        title = f"compare at ISL/OSL {isl}/{osl} on {gpus_} GPUs, SLO {slo}"
        write_all([(lambda p: draw_compare(rows, [_accuracy_cell(r["accuracy_compared"]) for r in rows], p, title=title), plot_path)])
    if as_json:
        return _dump({"isl": isl, "osl": osl, "num_gpus": gpus_, "min_tps_user": min_tps_user, "max_ttft_ms": max_ttft_ms,
                      "gpu_hour_price": gpu_hour_price, **({"unpriced_gpus": unpriced} if gpu_hour_price is not None else {}), "rows": rows})
    # one table per model, its name the title and what its accuracy cells are beneath: a long name
    # (qwen3-235b-a22b-nvfp4) takes no column's width, so 80 columns hold every figure whole; the
    # columns take one width in every table, so the models still line up
    one_gpu = len({r["gpu"] for r in rows}) == 1
    priced = gpu_hour_price is not None
    columns = (("" if one_gpu else "gpu:k ") + "W|A/KV:k accuracy:k tok/s|/GPU:n tok/s|/user:n TTFT|ms:n tok/J:n"
               + (" $/Mtok:n" if priced else "") + " plan:t")
    cells = [[*(() if one_gpu else (r["gpu"],)), f"{r['weight_dtype']}\n{r['activation_dtype']}/{r['kv_dtype']}", _accuracy_cell(r["accuracy_compared"]),
              *((f"{b['output_tok_s_per_gpu']:.0f}\n{_lo_hi(b['intervals']['output_tok_s_per_gpu'], b['output_tok_s_per_gpu'])}", f"{b['tok_s_per_user']:.1f}", f"{b['ttft_ms']:.0f}", f"{b['energy']['tokens_per_joule']:.2f}",
                 *((f"{b['cost']['usd_per_m_output_tokens']:.3f}" if b["cost"] else "-",) if priced else ()), _plan_cell(b["deployment"]))
                if b else ("-", "-", "-", "-", *(("-",) if priced else ()), r.get("why_none", "-")))] for r in rows for b in (r["best"],)]
    heads = [max(len(x) for x in spec.rsplit(":", 1)[0].split("|")) for spec in columns.split()]
    widths = [max([h] + [len(line) for c in cells for line in c[i].split("\n")]) for i, h in enumerate(heads)]
    con = _console()
    engines = dict.fromkeys((r["gpu"], r["engine"]) for r in rows)  # the engine once where every GPU runs the same one
    one_engine = len({e for _, e in engines}) == 1
    on = " / ".join(f"{gpus_}x {g}" + ("" if one_engine else f" ({e})") for g, e in engines) + (f", {rows[0]['engine']}" if one_engine else "")
    con.print(f"compare at ISL/OSL {isl}/{osl} on {on}, SLO {slo}", highlight=False)
    notes = _accuracy_notes(rows)
    for name in dict.fromkeys(r["model"] for r in rows):
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
              + " and plan are that deployment's; plan: x its instances, beneath the requests in flight in each.", highlight=False)
    # the GPUs whose interval is widened beyond the runs it came from (an H200 row has no serving run of its family):
    # pareto and estimate said so, compare did not, beside a B200 row whose band had no such stretch
    beyond: dict[str, list[str]] = {}
    for r in rows:
        for why in ((r["best"] or {}).get("intervals", {}).get("output_tok_s_per_gpu", {}).get("widened") or []):
            beyond.setdefault(why, []).append(r["gpu"] if one_gpu or len({x["model"] for x in rows}) == 1 else f"{r['model']} on {r['gpu']}")
    ran = {}
    for r in rows:
        for note in r["precision_notes"]:
            ran.setdefault(note, []).append(r["gpu"] if len({x["model"] for x in rows}) == 1 else f"{r['model']} on {r['gpu']}")
    for note, at in ran.items():
        con.print(f"[yellow]precision as run: {', '.join(dict.fromkeys(at))}: {note}[/yellow]", highlight=False)
    if beyond:
        con.print("intervals widened beyond the runs: " + "; ".join(f"{', '.join(dict.fromkeys(at))}: {why}" for why, at in beyond.items()),
                  highlight=False)
    if unpriced:
        con.print(f"$/Mtok -: the bundled prices (data/prices.toml) cite no GPU-hour price for {', '.join(unpriced)}; a price file "
                  "(--gpu-hour-price FILE) can give one.", highlight=False)
    from llm_codesign.render.intervals import CENTRE, off_centre

    if any(b and off_centre(b["intervals"]["output_tok_s_per_gpu"], b["output_tok_s_per_gpu"]) for b in (r["best"] for r in rows)):
        con.print(f"c<n>: the interval's centre, where the prediction lies outside it ({CENTRE}).", highlight=False)
    if plot_path:
        con.print(f"wrote plot: {plot_path}", highlight=False)
