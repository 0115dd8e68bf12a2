"""Commands that prove the model: `validate` against measurements, `calibrate` to re-fit it, and
`bench` to measure this machine's kernels in the tables' own columns."""
from __future__ import annotations

from typing import Optional

import typer

from llm_codesign.cli.common import O_CAL, _console, _dump, _int_list, _progress, _table, app, check_paths
from llm_codesign.errors import InputError


def _write_predictions(path: str, rows: list[dict], preds: list[dict]) -> None:
    """Input rows plus `predicted_<metric>` columns (measure.validate.predicted_rows), written whole or not at all."""
    from llm_codesign.measure.validate import predicted_rows
    from llm_codesign.outputs import write_rows

    out = predicted_rows(rows, preds)
    keys = list(rows[0].keys())
    write_rows(path, keys + sorted({k for r in out for k in r} - set(keys)), out)


def _print_report(rep: dict, title: str, *, stderr: bool = False) -> None:
    """The report's tables, on stderr where the predictions went to standard output (--out -)."""
    from llm_codesign.measure.accuracy import LABELS
    from llm_codesign.measure.audit import DISCORDANT_RATIO, REPEAT_METRICS

    con = _console(stderr=stderr)
    # group names kept whole (`model qwen3-235b-a22b` folded mid-name in a boxed table at 80 columns)
    # the rows left out said where the count is read, their reasons under the table (newc5 #22: "257 of 326" and nothing
    # near it on the 69)
    left = f"; {len(rep['unmodeled'])} left out, why beneath" if rep["unmodeled"] else ""
    t = _table(f"{title}: {rep['modeled']} of {rep['rows']} rows modelled{left}", "group:k metric:k n:n median|APE_%:n p90|APE_%:n signed|%:n",
               "APE: absolute percentage error; signed: median of the signed error, positive where predicted above measured")
    for metric, st in rep["overall"].items():
        t.add_row("[b]overall[/b]", LABELS.get(metric, metric), str(st["n"]), f"{st['median_ape']:.1f}", f"{st['p90_ape']:.1f}",
                  f"{st['signed_median_pe']:+.1f}")
    by = rep["by"]
    items = by.items() if all(isinstance(v, dict) and all(isinstance(x, dict) and "n" not in x for x in v.values()) for v in by.values()) else [("", by)]
    for key, groups in items:
        for g, ms in groups.items():
            for metric, st in ms.items():
                t.add_row(f"{key} {g}".strip(), LABELS.get(metric, metric), str(st["n"]), f"{st['median_ape']:.1f}", f"{st['p90_ape']:.1f}", f"{st['signed_median_pe']:+.1f}")
    con.print(t)
    if rep["unmodeled"]:
        from collections import Counter

        n_un = len(rep["unmodeled"])
        con.print(f"{n_un} row{'s' if n_un > 1 else ''} not modelled:")
        lines: dict[str, list[int]] = {}
        for u in rep["unmodeled"]:
            lines.setdefault(u["reason"], []).append(u["row"] + 2)  # the file's line: the header is line 1
        for reason, n in Counter(u["reason"] for u in rep["unmodeled"]).most_common():
            # which rows, where the reason does not say (a backend's or a plan's reason names none)
            at = "" if reason.startswith("line ") else _lines(lines[reason])
            con.print(f"  {n:5d}  {reason}{at}", highlight=False)
    if rep.get("memory_refused"):
        _print_memory_refused(con, rep["memory_refused"])
    checks = rep.get("data_checks") or {}
    if any(checks.get(k) for k in ("replanned", "repeat", "conflict", "suspect", "inconsistent", "unrecorded", "unplanned")):
        con.print(f"data checks: {checks['repeat']} rows repeat another row's measurement, {checks['conflict']} give another row's "
                  f"measurement under a different plan, {checks['replanned']} carry a plan their run name contradicts, "
                  f"{checks['inconsistent']} contradict their own run series at every reading of their concurrency, "
                  f"{checks['unrecorded']} have a run name that records none, {checks['unplanned']} belong to a series that records "
                  f"TP sizes its model's heads do not divide, {checks['suspect']} are kept but doubtful "
                  "(--clean fixes or drops the others; --json lists them all)")
    if checks.get("unparsed_builds"):
        con.print(f"data checks: {len(checks['unparsed_builds'])} TensorRT-LLM builds in serving_measured_blackwell.builds.csv read as "
                  f"no release ({', '.join(checks['unparsed_builds'])}): priced as no build recorded", highlight=False)
    repeats = checks.get("repeatability") or {}
    spreads = [(LABELS[m], repeats[m]) for m in REPEAT_METRICS if (repeats.get(m) or {}).get("model_median_ape") is not None]
    if spreads:
        said = "; ".join(f"{name} {st['median_ape']:.1f}% (p90 {st['p90_ape']:.1f}%), the model {st['model_median_ape']:.1f}% "
                         f"(p90 {st['model_p90_ape']:.1f}%)" for name, st in spreads)
        con.print(f"repeat runs: {repeats['settings']} settings measured more than once ({repeats['rows']} runs) lie from their "
                  f"setting's median run by a median {said}; {len(repeats['discordant'])} settings' runs differ by over "
                  f"{DISCORDANT_RATIO:g}x (--json lists them)")


@app.command()
def validate(
    kernels: Optional[str] = typer.Option(None, "--kernels", help="Kernel CSV (gemm, attention, collectives, moe or ep_comm "
                                          "columns), or the name of a bundled one (e.g. hopper/comm, the engines' own "
                                          "all-reduce; hopper/ep_comm, DeepEP's dispatch and combine)."),
    serving: Optional[str] = typer.Option(None, "--serving", help="Serving-measurement CSV in the canonical columns, or the name of a "
                                          "bundled one (e.g. serving_inferencex_mi355x.csv)."),
    out: Optional[str] = typer.Option(None, "--out", help="Write the input rows plus predictions and their intervals here: "
                                      "predicted_<metric>_lo and _hi the 80%, _lo95 and _hi95 the 95% (CSV; - for standard output)."),
    clean: bool = typer.Option(False, "--clean", help="Serving: re-derive plans from the run names that state them, keep each measurement once, and drop runs whose own series rules out every reading of their concurrency, whose run name records none, or whose series is recorded mostly at TP sizes the heads do not divide (llm_codesign.measure.audit)."),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
):
    """Predict published measurements and report the errors, and how many runs fall inside the stated intervals."""
    from llm_codesign.measure.serving_check import validate_serving
    from llm_codesign.measure.validate import kernel_report, serving_file
    from llm_codesign.spec.validation import check_result

    if (kernels is None) == (serving is None):
        raise InputError("validate", "--kernels/--serving", "exactly one of --kernels FILE or --serving FILE")
    if clean and kernels:
        raise InputError("clean", "--kernels", "used with --serving (it checks serving rows)")
    serving = serving_file(serving) if serving is not None else None
    if out:
        from llm_codesign.outputs import check_writable

        check_writable("out", out, stdout=True)
        if out == "-" and as_json:
            raise InputError("out", out, "a file path with --json (standard output carries the JSON)")
        check_paths([("--out", out)], {"--kernels": kernels, "--serving": serving, "--calibration": calibration})
    if kernels:
        rep, rows, pred = kernel_report(kernels, calibration)
        preds = [{"predicted_ms": (float(p) if p == p else "")} for p in pred]
        title = f"kernel validation ({rep['kind']})"
        # the table, as --json, shows only finite figures: one line naming the figure otherwise, before anything is written
        check_result(rep)
    else:  # each prediction with its 80% interval beside it, the report checked as the kernels' (measure.validate)
        rows, preds, rep = validate_serving(serving, calibration, clean=clean)
        title = "serving validation"
    if out:
        _write_predictions(out, rows, preds)
    if as_json:
        return _dump(rep)
    _print_report(rep, title, stderr=out == "-")
    if "interval_coverage" in rep:
        _print_coverage(rep["interval_coverage"], stderr=out == "-")
    if serving:
        _print_columns(rep["columns"], _console(stderr=out == "-"))
        _print_arrival(rows, _console(stderr=out == "-"))
    if out and out != "-":
        # the level of predicted_<metric>_lo/_hi, issue 40's names, which a newcomer could not tell (frontier.csv's say _lo80),
        # beside the 95% named as a frontier's (outputs.VALIDATE_BOUND_SUFFIX, newc11 #13); and what the file is, whatever its
        # name says: `--out val` wrote a CSV under no extension, unsaid (newc9 #16)
        _console().print(f"wrote {out} (CSV, one row per " + ("run: the input's columns, predicted_<metric>, its 80% interval "
                         "predicted_<metric>_lo and _hi, its 95% _lo95 and _hi95)" if serving else
                         "kernel measurement: the input's columns and predicted_ms)"),
                         highlight=False)


def _lines(lines: list[int], shown: int = 5) -> str:
    """ ' (line 8)', ' (lines 8, 9, 10, 11, 12 and 3 more)': which rows of the file a reason is about."""
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return f" (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:shown]))}{more})"


def _print_columns(columns: dict, con) -> None:
    """A line on a serving file's columns that nothing reads and on the measured metrics it has no column for
    (measure.validate.columns_read)."""
    from llm_codesign.measure.validate import METRICS

    unread, absent = columns["not_read"], columns["absent_metrics"]
    said = []
    if unread:
        said.append(f"not read: {', '.join(unread)} (the measured metrics' columns are {', '.join(METRICS)})")
    if absent:
        said.append(f"no {', '.join(absent)} column{'s' if len(absent) > 1 else ''}, so {'those are' if len(absent) > 1 else 'it is'} "
                    "not compared")
    if said:
        con.print("columns " + "; ".join(said), highlight=False)


def _print_arrival(rows: list[dict], con) -> None:
    """A line on the serving runs at a concurrency priced with the tool's default arrival because neither the row (its
    `arrival` column) nor its bundled campaign (measure.campaigns.campaign_of) says how its requests arrived:
    twelve MI355X bench_serving runs priced so erred 316% on TTFT, 15% with arrival=closed_loop."""
    from llm_codesign.measure.campaigns import campaign_of
    from llm_codesign.measure.validate import row_problem
    from llm_codesign.spec.harness import DEFAULT_ARRIVAL

    # a row validate rejects (concurrency 'abc') is never priced, and campaign_of would parse its numbers: skipped
    n = sum(1 for i, r in enumerate(rows) if row_problem(r, i + 2) is None and (r.get("concurrency") or "").strip()
            and not (r.get("arrival") or "").strip() and "arrival" not in (campaign_of(r) or {}))
    if n:
        con.print(f"arrival: {n} run{'s' if n > 1 else ''} at a concurrency state{'' if n > 1 else 's'} no `arrival` column and no "
                  f"bundled campaign of {'theirs' if n > 1 else 'its'} sets one, so {'they are' if n > 1 else 'it is'} priced as {DEFAULT_ARRIVAL} (identical requests "
                  "kept in step, as aiperf and trtllm-bench run them); a bench_serving --max-concurrency run is a closed loop: "
                  "arrival=closed_loop (its first tokens queue less)", highlight=False)


def _print_coverage(found: dict, *, stderr: bool) -> None:
    """The share of measured runs inside the intervals the predictions state (measure.intervals)."""
    from llm_codesign.measure.intervals import LABELS

    if found:
        _console(stderr=stderr).print("interval coverage (stated 80% / 95%): " + "; ".join(
            f"{LABELS[m]} {100 * f['inside80'] / f['n']:.1f}% / {100 * f['inside95'] / f['n']:.1f}% of {f['n']} measured runs"
            for m, f in found.items()), highlight=False)


@app.command()
def calibrate(
    kernels: Optional[list[str]] = typer.Option(None, "--kernels", help="Kernel CSVs or bundled tables' names, e.g. hopper/comm or hopper/ep_comm (repeat the option)."),
    serving: Optional[str] = typer.Option(None, "--serving", help="Serving measurements to fit step overheads on: a CSV in the canonical columns, or the name of a bundled one (as validate takes)."),
    output: str = typer.Option(..., "-o", "--output", help="Profile .toml to write; - for standard output."),
    hold_out: Optional[list[str]] = typer.Option(None, "--hold-out", help="Leave this model's serving rows out of the fit, to judge it out of sample (repeat the option)."),
    clean: bool = typer.Option(False, "--clean", help="Fit the serving rows' clean form: plans re-derived from the run names that state them, each measurement once, without runs whose own series rules out every reading of their concurrency, whose run name records none, or whose series is recorded mostly at TP sizes the heads do not divide (llm_codesign.measure.audit)."),
    force: bool = typer.Option(False, "--force", help="Write the profile even when a fit is worse than the starting profile on the same rows (its banded median, or a figure validate prints on them), lands a kernel efficiency or a serving parameter on a bound of its range (not one of the limits a quantity rests at: docs/howto/calibrate.md), fits more serving parameters than the runs' measured TTFTs and TPOTs, or ends its serving search still gaining (never one whose error is not a finite figure)."),
    calibration: Optional[str] = O_CAL,
):
    """Re-fit the efficiency parameters from measurements; use the profile with --calibration."""
    from llm_codesign.measure.calibrate import FLOORED, SERVING_BOUNDS, fit_profile, scope_words, serving_words, underdetermined
    from llm_codesign.outputs import check_writable, write_text

    if not kernels and not serving:
        raise InputError("calibrate", None, "at least one --kernels FILE or --serving FILE")
    check_writable("output", output, stdout=True)  # before minutes of fitting, not after
    check_paths([("--output", output)], {"--kernels": kernels, "--serving": serving, "--calibration": calibration})
    if hold_out and not serving:
        raise InputError("hold-out", hold_out[0], "used with --serving (it leaves serving rows out of the fit)")
    if clean and not serving:
        raise InputError("clean", "--kernels", "used with --serving (it checks serving rows)")
    # one progress display for both fits (stderr: a bar on a terminal, a line every 5 s otherwise)
    prog, cb = _progress()
    if prog:
        prog.start()
    try:  # the fit lc.calibrate makes (measure.calibrate.fit_profile)
        profile = fit_profile(kernels, serving, hold_out=hold_out, clean=clean, force=force, calibration=calibration, output=output,
                              progress=cb)
    finally:
        if prog:
            prog.stop()
    text, srv, srv_rows = profile.text, profile.serving, list(profile.serving_rows)
    write_text(output, text)
    con = _console(stderr=output == "-")
    for r in profile.report:
        if r["kind"] == "serving":  # the serving fit's own measure, against the profile it started from
            err = f"error {r['median_ape']:.1f}% (banded median), starting profile {r['start_median_ape']:.1f}%"
        else:
            err = f"median APE {r['median_ape']:.1f}%  p90 {r['p90_ape']:.1f}%"
        con.print(f"{r['family']:10s} {r['kind']:18s} {r['rows']:6d} rows  {err}")
    if srv:
        # the fitted ones, per engine where they are (an engine's documented values, measure.calibrate.NOT_FITTED, are not
        # listed), then those no run responds to, kept at the starting profile's values (measure.calibrate.fit_profile)
        rep = next(r for r in profile.report if r["kind"] == "serving")
        moved = {b.name: ({e: x for e, x in srv[b.name].items() if f"{b.name}:{e}" in rep["fitted"]} if isinstance(srv.get(b.name), dict)
                          else srv.get(b.name)) for b in SERVING_BOUNDS if b.name in rep["fitted"] or isinstance(srv.get(b.name), dict)}
        con.print("serving: " + ("; ".join(serving_words(n, v) for n, v in moved.items() if v != {}) or "nothing fitted"), highlight=False)
        con.print(f"fitted: {', '.join(rep['fitted']) or 'none'}; kept at {'the profile given' if calibration else 'the bundled fit'}'s "
                  f"values (no run responds to them): {', '.join(rep['held']) or 'none'}", highlight=False)
        # where each fitted value applies: the GPU families its runs were on only (measure.calibrate.to_toml)
        for x in scope_words(rep.get("scope", {}), srv):
            con.print(f"written for {x}", highlight=False)
        for x in rep.get("limits", []):  # fitted values on a limit of their range, and what that means (measure.calibrate.limit_notes)
            con.print(f"{'warning' if x.startswith(FLOORED) else 'note'}: {x}", highlight=False)
        if said := underdetermined(rep):  # written with --force only (doubtful refuses it otherwise)
            con.print(f"warning: {said}", highlight=False)
        if rep.get("scope"):
            con.print("every other engine and GPU family keeps " + ("the profile given" if calibration else "the bundled fit")
                      + "'s serving values", highlight=False)
        _print_checks(profile.checks, con)
    for x in profile.left_out:
        con.print(f"note: {x}", highlight=False)
    if srv:
        _print_own_intervals(text, con)
        from llm_codesign.measure.validate import columns_read

        _print_columns(columns_read(srv_rows), con)
        _print_arrival(srv_rows, con)
    con.print(f"wrote {'standard output' if output == '-' else output}")


def _print_checks(checks: dict, con) -> None:
    """validate's figures on the fitted rows, with the starting profile and the new one (measure.calibrate.own_check),
    and one line where the new one is worse on any of them."""
    from llm_codesign.measure.calibrate import worse
    from llm_codesign.measure.intervals import LABELS

    def said(f: dict) -> str:  # a figure the profile has none of reads "none", not "nan%"
        x = {k: f"{f[k]:.1f}" if k in f and f[k] == f[k] else "none" for k in ("median_ape", "p90_ape", "inside80", "inside95")}
        pc = {k: v + "%" if v != "none" else v for k, v in x.items()}
        return f"median {pc['median_ape']}, p90 {pc['p90_ape']}, inside 80%/95% {x['inside80']}/{pc['inside95']}"

    before, after = checks.get("before", {}), checks.get("after", {})
    for m, a in after.items():
        b = before.get(m, {})
        con.print(f"validate on these {a['n']} runs, {LABELS[m]}: starting profile {said(b)}; new profile {said(a)}", highlight=False)
    bad = worse(before, after)
    if bad:
        con.print(f"warning: the new profile is worse than the starting one on its own runs: {'; '.join(bad)}", highlight=False)


def _print_own_intervals(text: str, con) -> None:
    """What the profile's own intervals cover: its answers there take them instead of the bundled ones."""
    import tomllib

    from llm_codesign.measure.intervals import MIN_ROWS, OWN_MIN_ROWS, engine_title, family_name

    own = tomllib.loads(text)["intervals"]
    # the engine x GPU family slices, the ones answers take (intervals._slice): "vLLM on Waves GPUs" (engine x arrival) and
    # "blackwell on 5-32 GPUs" (family x load) were listed too
    env = own.get("envelope", {})
    def classes(mode, e, f):  # the model classes of those runs (intervals.profile_section), where recorded
        c = env.get(mode, {}).get("classes", {}).get(f"{e}|{f}")
        return f" ({' and '.join('MoE' if x == 'moe' else x for x in c)} models)" if c else ""
    cover = sorted({f"{engine_title(e)} on {family_name(f)} GPUs{classes(mode, e, f)}" for cells in own["slices"].values() for k in cells
                    if k.count("|") == 2 for mode, e, f in [k.split("|")]
                    if e in env.get(mode, {}).get("engines", ()) and f in env.get(mode, {}).get("families", ())})
    if cover:
        con.print(f"intervals: answers with this profile on {', '.join(cover)} take the bands of its own runs instead of the bundled ones "
                  f"(the 95% too from {MIN_ROWS} runs; below, the bundled 95%), and say so; every other engine and GPU family keeps the "
                  "bundled bands and their widenings", highlight=False)
    else:  # it read "answers ... on none of its engines and GPU families (too few runs) take the bands of its own runs"
        runs = own.get("envelope", {}).get("serving", {}).get("runs", {})
        have = ", ".join(f"{n} with {engine_title(k.split('|')[0])} on {family_name(k.split('|')[1])} GPUs" for k, n in sorted(runs.items()))
        con.print(f"intervals: a band of the profile's own needs {OWN_MIN_ROWS} runs of one engine on one GPU family" + (f"; it has {have}" if have else "")
                  + ", so answers with this profile keep the bundled bands and their widenings, and say so", highlight=False)


def _nk_list(value: str) -> list[tuple[int, int]]:
    try:
        out = [tuple(int(v) for v in x.lower().split("x")) for x in value.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or any(len(t) != 2 or min(t) <= 0 for t in out):
        raise InputError("nk", value, "comma-separated NxK pairs, e.g. 4096x4096,14336x4096")
    return out


@app.command()
def bench(
    kind: str = typer.Argument(..., help="gemm or decode"),
    out: str = typer.Option(..., "-o", "--out", help="CSV to write, in the kernel tables' columns; - for standard output."),
    system: Optional[str] = typer.Option(None, "--system", help="Catalog GPU id for the rows (default: from the CUDA device name)."),
    device: str = typer.Option("auto", "--device", help="auto, cuda or cpu."),
    model: Optional[str] = typer.Option(None, "--model", help="Take the shapes from this model (its projections / attention heads at --tp)."),
    tp: int = typer.Option(1, "--tp", help="Tensor-parallel size for --model shapes."),
    dtype: str = typer.Option("bfloat16", "--dtype", help="gemm: bfloat16 or fp8."),
    m: str = typer.Option("1,16,64,256,1024,4096", "--m", help="gemm: token counts (M)."),
    nk: str = typer.Option("4096x4096,14336x4096,4096x14336", "--nk", help="gemm: NxK pairs (ignored with --model)."),
    batch: str = typer.Option("1,8,32,128", "--batch", help="decode: sequences per step."),
    context: str = typer.Option("1024,4096,16384", "--context", help="decode: cached tokens per sequence."),
    heads: int = typer.Option(32, "--heads", help="decode: query heads (ignored with --model)."),
    kv_heads: int = typer.Option(8, "--kv-heads", help="decode: KV heads (ignored with --model)."),
    head_dim: int = typer.Option(128, "--head-dim", help="decode: head dimension (ignored with --model)."),
    warmup: int = typer.Option(3, "--warmup", min=0, help="Untimed runs of each shape before the timed ones."),
    repeat: int = typer.Option(10, "--repeat", min=1, help="Timed runs of each shape (their median is recorded)."),
):
    """Measure GEMMs or decode attention on this machine; `validate`/`calibrate --kernels` read the CSV."""

    from llm_codesign.measure.bench import DECODE_COLUMNS, GEMM_COLUMNS, bench_decode, bench_gemm, linear_shapes
    from llm_codesign.outputs import check_writable, write_rows

    if kind not in ("gemm", "decode"):
        raise InputError("kind", kind, "gemm or decode")
    check_writable("out", out, stdout=True)  # before minutes of measuring, not after
    check_paths([("--out", out)], {"--model": model})
    if tp <= 0:
        raise InputError("tp", tp, "a positive integer")
    spec = None
    if model:
        from llm_codesign.cli.common import _model

        spec = _model(model)
    if kind == "gemm":
        shapes = linear_shapes(spec, tp) if spec else _nk_list(nk)
        rows = bench_gemm(_int_list("m", m), shapes, dtype, device, system, warmup=warmup, repeat=repeat)
        cols = GEMM_COLUMNS
    else:
        if spec:
            from llm_codesign.spec.kinds import GQA

            a = next((layer.attn for layer, _ in spec.groups if isinstance(layer.attn, GQA)), None)
            if a is None:
                raise InputError("model", model, "a model with GQA/MHA attention layers for decode benchmarks")
            if a.heads % tp:
                raise InputError("tp", tp, f"a divisor of the model's {a.heads} attention heads")
            heads, kv_heads, head_dim = a.heads // tp, max(a.kv_heads // tp, 1), a.head_dim
        rows = bench_decode(_int_list("batch", batch), _int_list("context", context), heads, kv_heads=kv_heads, head_dim=head_dim,
                            device=device, system=system, warmup=warmup, repeat=repeat)
        cols = DECODE_COLUMNS
    write_rows(out, cols, rows)
    where = "standard output" if out == "-" else out
    _console(stderr=out == "-").print(f"wrote {len(rows)} {kind} measurements ({rows[0]['system']}, {rows[0]['trtllm_version']}) to {where}")


def _print_memory_refused(con, refused: list[dict]) -> None:
    """Runs the memory model refuses that ran all the same: priced with its check bypassed and counted, each reason once
    with its rows (the file's lines) and by how much the memory model is short for one sequence."""
    n = len(refused)
    con.print(f"[yellow]{n} row{'s' if n > 1 else ''} the memory model says cannot run, priced with its memory check bypassed and "
              f"counted above: if {'they' if n > 1 else 'it'} ran, the memory model is short there[/yellow]", highlight=False)
    by: dict[str, list[dict]] = {}
    for u in refused:
        by.setdefault(u["reason"], []).append(u)
    for reason, us in by.items():
        short = max(u["short_gb"] for u in us) * 1e9 / 2**30  # in GiB, as the reason beside it (newc5 #10)
        con.print(f"  {len(us):5d}  {reason}{_lines([u['row'] + 2 for u in us])}; short by {short:.1f} GiB per GPU for one sequence",
                  highlight=False)
