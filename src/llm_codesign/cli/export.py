"""The `export` command (a deployment -> the engine's launch configuration) and `import` (an exported
file -> the deployment it starts, priced again as `estimate` prices it)."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer

from llm_codesign.cli.common import (
    MAX_CONCURRENCY,
    O_A,
    O_ACC,
    O_ADP,
    O_ARRIVAL,
    O_CAL,
    O_DRAFT,
    O_EP,
    O_GPU,
    O_GPUS,
    O_ISL,
    O_K,
    O_KV,
    O_KVP,
    O_MNT,
    O_MTP,
    O_OSL,
    O_PP,
    O_PREFIX,
    O_RATES,
    O_SPEC,
    O_TP,
    O_W,
    _console,
    _deployment,
    _dump,
    _gpu,
    _model,
    app,
    check_paths,
    check_replica_gpus,
    on_gpus,
    plan_note_line,
    priced_with,
    tokens_option,
    vendor_engines,
)
from llm_codesign.errors import InputError, parse_nested, read_text
from llm_codesign.spec.engines import ENGINES, EXPORTABLE, TRTLLM, VENDOR_NAMES, engine_for, engines_on
from llm_codesign.spec.engines.head_dims import head_dim_note
from llm_codesign.spec.plan import precision_notes


def _check_out(out: str, inputs: dict, *, as_json: bool = False) -> None:
    """-o checked before any work: writable, no input's path, and standard output (`-`) not also the JSON's."""
    from llm_codesign.outputs import check_writable

    check_writable("out", out, stdout=True)
    if out == "-" and as_json:
        raise InputError("out", out, "a file path with --json (standard output carries the JSON)")
    check_paths([("--out", out)], inputs)


# what each engine's file is (explore/export_engines: SGLang's render writes a `#!/bin/sh` script, the others YAML), and the
# extensions that say another kind: `-o sg.yaml` held a shell script its launch line ran as `sh sg.yaml`
_SCRIPT_ENGINES = ("sglang",)
_WRONG_SUFFIX = {"script": (".yaml", ".yml", ".json", ".toml"), "yaml": (".sh", ".bash", ".json", ".toml")}


def _check_suffix(out: str, engine: str) -> None:
    """-o's extension refused (one line, before any work) where it names another kind than the file written: a shell
    script for SGLang, YAML for the others. No extension, or one not listed, is taken as given."""
    if out == "-":
        return
    kind = "script" if engine in _SCRIPT_ENGINES else "yaml"
    suffix = Path(out).suffix.lower()
    if suffix in _WRONG_SUFFIX[kind]:
        what = f"a .sh path ({engine}'s launch file is a shell script)" if kind == "script" else f"a .yaml path ({engine}'s launch file is YAML)"
        raise InputError("out", out, what)


def _file_name(out: str) -> str:
    """The name the file launches itself by (`vllm serve --config NAME`): config.yaml on standard output."""
    return "config.yaml" if out == "-" else Path(out).name


def _written() -> str:
    """The registered engines `export` writes a launch configuration for (spec.engines.EXPORTABLE, read there as importing
    the builders would slow every command's start), as its help lists them; then the others, priced only."""
    rest = [ENGINES[n].title for n in ENGINES if n not in EXPORTABLE]
    return f"{', '.join(EXPORTABLE[:-1])} or {EXPORTABLE[-1]}" + (f" ({' and '.join(rest)} priced, not exported)" if rest else "")


# export's default SLO where neither a batch nor an SLO is given: a reader's pace (a person reads 4-5
# words, about 6 tokens, a second; 20 tok/s/user streams well ahead of them) and a first token within
# 2 s. Not the offline max-throughput batch, which on 8x H200 runs Llama-3.1-70B at ~10 tok/s/user and
# ~3 s to the first token: a batch job's settings, not a server's.
INTERACTIVE_SLO = {"min_tps_user": 20.0, "max_ttft_ms": 2000.0}


@app.command()
def export(
    model: str = typer.Argument(..., help="Registry name, Hugging Face id or config.json path."),
    gpu: str = O_GPU, gpus_: Optional[int] = O_GPUS,
    backend: Optional[str] = typer.Option(None, "--backend", "--engine", help=f"{_written()}: the engine the file starts (default: "
                                          f"{vendor_engines()}; with --prefill/--decode, the engine of Dynamo's workers); "
                                          f"dynamo: Dynamo with {TRTLLM.name} workers."),
    out: str = typer.Option(..., "-o", "--out", help="The file to write (YAML; a shell script for SGLang); - for standard output."),
    tp: Optional[int] = O_TP, pp: Optional[int] = O_PP, ep: Optional[int] = O_EP, moe_tp: Optional[int] = O_MTP,
    attention_dp: Optional[int] = O_ADP, kvp: Optional[int] = O_KVP,
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    isl: int = O_ISL, osl: int = O_OSL, arrival: str = O_ARRIVAL, prefix_hit: float = O_PREFIX,
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, max=MAX_CONCURRENCY,
                                              help="Requests in flight per instance, the engine's max batch (omit: the plans the "
                                                   "flags leave open and every batch are searched, and the point with the most "
                                                   "tok/s/GPU that meets the SLO is exported)."),
    min_tps_user: Optional[float] = typer.Option(None, "--min-tps-user", help="SLO: minimum tokens/s per user (with --max-ttft-ms "
                                                 "omitted too: 20 tok/s/user and TTFT <= 2000 ms)."),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", help="SLO: maximum TTFT in ms."),
    replicas: Optional[int] = typer.Option(None, "--replicas", min=1, max=1 << 16,
                                           help="With --concurrency: instances of this configuration (stated in the file); default 1."),
    spec: Optional[str] = O_SPEC, draft_len: Optional[int] = O_K, acceptance: Optional[float] = O_ACC,
    acceptance_rates: Optional[str] = O_RATES, draft_model: Optional[str] = O_DRAFT, max_num_tokens: Optional[int] = O_MNT,
    cpp: bool = typer.Option(False, "--cpp", help="Chunked pipeline parallelism for prefill (with --concurrency; SGLang runs it, "
                             "TensorRT-LLM and vLLM have no option for it: refused)."),
    cuda_graph_max_bs: Optional[int] = typer.Option(None, "--cuda-graph-max-bs", min=0, max=MAX_CONCURRENCY,
                                                    help="The largest decode batch per rank replayed from a CUDA graph, as estimate's "
                                                         "(Dynamo: the decode workers'), written and priced (0: graphs off). Default: graphs "
                                                         "padded up to the batch per rank where the engine's default capture misses it."),
    max_batch: Optional[int] = typer.Option(None, "--max-batch", min=1, max=MAX_CONCURRENCY,
                                            help="The engine's batch cap per attention-DP rank, as estimate's (Dynamo: the decode "
                                                 "workers'; the SLO search: its batches up to it), written and priced."),
    chunked_prefill: Optional[bool] = typer.Option(None, "--chunked-prefill/--no-chunked-prefill",
                                                   help="Whether the engine splits a prompt over steps, as estimate's (Dynamo: both pools'; "
                                                        "TensorRT-LLM enable_chunked_prefill; SGLang --no-chunked-prefill writes "
                                                        "--chunked-prefill-size -1, vLLM enable-chunked-prefill false and max-model-len "
                                                        "at its step budget). Default: the engine's."),
    prefill: Optional[str] = typer.Option(None, "--prefill", help="Dynamo: prefill instance plan, e.g. tp=8,ep=8."),
    decode: Optional[str] = typer.Option(None, "--decode", help="Dynamo: decode instance plan, e.g. attention_dp=8,ep=8."),
    prefill_instances: int = typer.Option(1, "--prefill-instances", min=1, max=1 << 16, help="Dynamo: prefill workers of the --prefill plan."),
    decode_instances: int = typer.Option(1, "--decode-instances", min=1, max=1 << 16, help="Dynamo: decode workers of the --decode plan."),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the deployment and the predicted figures."),
):
    """The engine's launch configuration for a deployment, stated as `estimate` takes it.

    Without --concurrency, the frontier point with the most tok/s/GPU that meets the SLO, at the checkpoint's
    precision unless --weight-dtype/--kv-dtype name another."""
    from llm_codesign.explore.export import dynamo_workers, engine_spec, export_config, export_dynamo, exportable, workload_said
    from llm_codesign.spec.plan import Workload

    if backend is not None and backend not in exportable():  # offered: those this GPU runs (Dynamo's default workers: TensorRT-LLM)
        runs = engines_on(_gpu(gpu))
        why = f" ({ENGINES[backend].title} has no launch-configuration writer: it is priced, not exported)" if backend in ENGINES else ""
        raise InputError("backend", backend, "one of: " + ", ".join(n for n in exportable() if (TRTLLM.name if n == "dynamo" else n) in runs) + why)
    for name, v in (("min_tps_user", min_tps_user), ("max_ttft_ms", max_ttft_ms)):
        if v is not None and not (0 < v < float("inf")):
            raise InputError(name, v, "a positive finite number")
    from llm_codesign.spec.harness import check_arrival

    check_arrival(arrival)  # estimate's check and line: the predicted TTFT turns on it
    Workload(isl=isl, osl=osl, prefix_hit=prefix_hit, arrival=arrival)  # estimate's checks of the workload, before any search
    # the file's header names an arrival and prefix hits other than the defaults, as export-point's and the page's (crev12 #6)
    said = workload_said(arrival, prefix_hit)
    disagg = backend == "dynamo" or prefill is not None or decode is not None
    if disagg and prefix_hit:  # disagg prices no prefix cache (lc.disagg refuses it too)
        raise InputError("prefix_hit", prefix_hit, "0 with a Dynamo deployment: disagg prices no prefix cache")
    slo_given = min_tps_user is not None or max_ttft_ms is not None
    if slo_given and (disagg or concurrency is not None):
        raise InputError("min_tps_user" if min_tps_user is not None else "max_ttft_ms", min_tps_user if min_tps_user is not None else max_ttft_ms,
                         "unset with " + ("a Dynamo deployment (it exports the --concurrency given; the disaggregated point that meets an SLO: "
                                                          "pareto --disagg --json, then export-point --series disagg --index N)" if disagg else
                                          "--concurrency (the SLO chooses the batch; give one or the other)"))
    if concurrency is None and not disagg:
        if replicas is not None:
            raise InputError("replicas", replicas, "set with --concurrency only (without it, the frontier point chosen states its instances)")
        if cpp:
            raise InputError("cpp", cpp, "set with --concurrency only (the frontier search prices no chunked pipeline parallelism)")
    _check_out(out, {"MODEL": model, "--gpu": gpu, "--calibration": calibration}, as_json=as_json)
    m = _model(model)
    backend = backend or engine_for(_gpu(gpu)).name
    _check_suffix(out, "dynamo" if disagg else backend)  # before the search, as -o's other checks
    chosen = None
    if disagg:
        g = _gpu(gpu)
        ours = [n for n in dynamo_workers() if n in engines_on(g)]  # the Dynamo workers this GPU runs, none on some
        either = ", ".join(ours[:-1]) + " or " + ours[-1] if len(ours) > 1 else "".join(ours)
        none_here = f"none of Dynamo's workers ({', '.join(dynamo_workers())}) runs on {g.name}, which runs {', '.join(engines_on(g))}"
        if backend == "dynamo" and TRTLLM.name not in engines_on(g):  # else engine_for names 'trtllm', which no one typed
            raise InputError("backend", backend, f"an engine that runs on {g.name}: dynamo's workers are {TRTLLM.title}'s, "
                                                 f"which runs on {' or '.join(VENDOR_NAMES[v] for v in TRTLLM.vendors)} GPUs only "
                                                 + (f"(Dynamo with {either} workers: --backend {either} with --prefill/--decode)" if ours
                                                    else f"({none_here})"))
        worker = engine_for(g, TRTLLM.name if backend == "dynamo" else backend).name
        if worker not in dynamo_workers():
            raise InputError("backend", worker, f"{either} (Dynamo's worker engine)" if ours else f"an engine Dynamo runs: {none_here}")
        engine, priced = "dynamo", worker
        text, summary = _dynamo(m, gpu, prefill=prefill, decode=decode, n_pre=prefill_instances, n_dec=decode_instances,
                                concurrency=concurrency or 64, isl=isl, osl=osl, backend=worker, weight_dtype=weight_dtype,
                                activation_dtype=activation_dtype, kv_dtype=kv_dtype, spec=spec, draft_len=draft_len, acceptance=acceptance,
                                acceptance_rates=acceptance_rates, draft_model=draft_model, max_num_tokens=max_num_tokens,
                                calibration=calibration, export_dynamo=export_dynamo, arrival=arrival,
                                launch=dict(cuda_graph_max_bs=cuda_graph_max_bs, max_batch=max_batch, chunked_prefill=chunked_prefill))
    else:
        engine = priced = backend
        capture = None
        dep = _deployment(m, gpu, gpus_, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp, weight_dtype=weight_dtype,
                          activation_dtype=activation_dtype, kv_dtype=kv_dtype, backend=engine, spec=spec, draft_len=draft_len, acceptance=acceptance,
                          acceptance_rates=acceptance_rates, draft_model=draft_model, max_num_tokens=max_num_tokens, cpp=cpp)
        check_replica_gpus(dep, gpus_ if concurrency is not None else None, replicas)  # --gpus is one instance's with --concurrency
        plan_note_line(dep)
        from llm_codesign.explore.export import refuse_cpp, refuse_headless_draft

        refuse_headless_draft(dep)  # before the search or pricing: no file could be written (crev10 #6)
        refuse_cpp(dep, dep.backend)  # nor a file that runs unpipelined what is priced pipelined (crev11 #5)
        if cuda_graph_max_bs is not None or max_batch is not None or chunked_prefill is not None:  # as estimate states them
            from dataclasses import replace

            dep = replace(dep, cuda_graph_max_bs=cuda_graph_max_bs, max_batch=max_batch, chunked_prefill=chunked_prefill)
        plan_note = dep.plan_note
        if concurrency is None:
            from llm_codesign.explore.search import refuse_without_decode
            from llm_codesign.serve.metrics import no_decode, without_decode

            refuse_without_decode(osl, min_tps_user=min_tps_user)  # no tok/s/user at OSL 1 to hold an SLO on
            slo = {"min_tps_user": min_tps_user, "max_ttft_ms": max_ttft_ms} if slo_given else dict(INTERACTIVE_SLO)
            if no_decode(osl):  # the default's tok/s/user floor has nothing to hold: its TTFT bound alone
                slo["min_tps_user"] = None
            launch = {k: v for k, v in (("cuda_graph_max_bs", cuda_graph_max_bs), ("max_batch", max_batch),
                                        ("chunked_prefill", chunked_prefill)) if v is not None}
            point = _slo_point(m, dep, fixed=dict(tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp), isl=isl,
                               osl=osl, slo=slo, calibration=calibration, gpus_value=gpus_, arrival=arrival, launch=launch, prefix_hit=prefix_hit)
            dep, conc, n_rep = point.deployment, point.concurrency, point.replicas
            predicted = {"ttft_ms": point.ttft_s * 1e3, "tpot_ms": point.tpot_s * 1e3, "tok_s_per_user": point.tok_s_per_user,
                         "output_tok_s_per_gpu": point.output_tok_s_per_gpu}
            intervals = point.to_dict().get("intervals")
            if no_decode(osl):  # one output token: no TPOT nor tok/s/user, as estimate's answer (serve.metrics.without_decode)
                predicted, intervals = without_decode(predicted), without_decode({"intervals": intervals})["intervals"]
            chosen = {"slo": slo, "default": not slo_given, "plan": dep.plan.label(), "replicas": n_rep, "concurrency": conc}
            r = _point_answer(m, dep, Workload(isl=isl, osl=osl, concurrency=conc, prefix_hit=prefix_hit, arrival=arrival), calibration=calibration)
        else:
            from llm_codesign.api import estimate as run
            from llm_codesign.explore.search import capture_line, with_capture

            wl = Workload(isl=isl, osl=osl, concurrency=concurrency, prefix_hit=prefix_hit, arrival=arrival)
            asked, dep = dep, with_capture(dep, concurrency)  # priced with the capture the file writes
            r = run(m, dep, wl, calibration=calibration).to_dict()
            if dep != asked:  # estimate at these flags prices the engine's default capture: both said (crev10 #2)
                capture = capture_line(dep, run(m, asked, wl, calibration=calibration).to_dict(), r)
            conc, n_rep = int(r["concurrency"]), replicas or 1
            predicted = {k: r[k] for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")}
            intervals = r.get("intervals")
        summary = {"deployment": dep.to_dict(), "concurrency": conc, "replicas": n_rep, "predicted": predicted}
        if notes := precision_notes(m, dep):  # a format the engines run otherwise, as estimate's precision_notes (crev9 #7)
            summary["precision_notes"] = list(notes)
        from llm_codesign.serve.estimate import fitted_ttft_notes

        if notes := fitted_ttft_notes(r):  # a fitted TTFT share whose mechanism is open, as estimate says it (newc11 #9)
            summary["fitted_notes"] = notes
        if "pipeline_note" in r:  # one request's chunks over the PP stages, as priced and as the file runs them (estimate's)
            summary["pipeline_note"] = r["pipeline_note"]
        if plan_note:  # the GPUs read off tp x attention_dp (spec.plan.attention_dp_note), as estimate --json says it
            summary["plan_note"] = plan_note
        if intervals:
            summary["intervals"] = intervals
        if chosen:
            summary["chosen_by"] = chosen
        if capture:
            summary["capture"] = capture
        if not chosen and r.get("over_capacity"):  # what estimate says of requests the deployment cannot run at once
            summary["over_capacity"] = r["over_capacity"]
        if not chosen and r.get("queue"):  # and of TTFT's wait for a slot (render.intervals.queue_text)
            summary["queue"] = r["queue"]
        text = export_config(m, dep, engine=engine, concurrency=conc, replicas=n_rep, file_name=_file_name(out),
                             extra={"isl": isl, "osl": osl, **said, "predicted": predicted, **priced_with(calibration)})
    from llm_codesign.outputs import write_text

    write_text(out, text, executable=text.startswith("#!"))
    es = engine_spec(engine)
    launch = next((line[len("# launch: "):] for line in text.splitlines() if line.startswith("# launch: ")),
                  f"sh {'FILE' if out == '-' else shlex.quote(out)}")
    if out != "-" and _file_name(out) in (words := shlex.split(launch)):
        # the file's own line names it beside itself; the one printed here, where the user is, by the path written
        # ("vllm serve --config v.yaml" for -o /tmp/run/v.yaml ran from /tmp/run only; SGLang's `sh PATH` had the path)
        launch = shlex.join(out if w == _file_name(out) else w for w in words)
    if as_json:
        return _dump({"engine": engine, "version": es["version"], "engine_release": ENGINES[priced].release, "file": out, "launch": launch,
                      **summary})
    from llm_codesign.render.intervals import ONE_TOKEN, capped_footnote, queue_text, short

    p = summary["predicted"]
    b = {**p, "intervals": summary.get("intervals")}  # each figure with its 80% interval, where it has one
    con = _console(stderr=out == "-")
    if chosen:
        from llm_codesign.explore.search import searched_defaults

        con.print(_chosen_line(chosen, precision=dep.precision, checkpoints=weight_dtype is None and kv_dtype is None,
                               others=searched_defaults(m, dep.gpu, dep.engine)), highlight=False)
    # the checkpoint the weights are read from, where it is not the model's own (explore.export.launched): every engine's
    weights = next((f"{line[2:]}\n" for line in text.splitlines() if line.startswith("# weights: ")), "")
    con.print(f"wrote {engine} configuration{_read_at(engine, es['version'], priced)}: {'standard output' if out == '-' else out}\nlaunch: {launch}\n"
              f"{weights}"
              f"predicted{_priced_as(priced)}: TTFT {p['ttft_ms']:.0f} ms{queue_text(summary)}{short(b, 'ttft_ms')}, "
              # one output token: no decode step, no TPOT nor tok/s/user (null in the file's header: serve.metrics.without_decode)
              + (f"TPOT {ONE_TOKEN}, " if p["tpot_ms"] is None else
                 f"TPOT {p['tpot_ms']:.2f} ms{short(b, 'tpot_ms')}, {p['tok_s_per_user']:.1f} tok/s/user{short(b, 'tok_s_per_user')}, ")
              + f"{p['output_tok_s_per_gpu']:.0f} tok/s/GPU{short(b, 'output_tok_s_per_gpu')} at {summary['concurrency']} requests",
              highlight=False)
    from llm_codesign.render.intervals import arrival_footer

    con.print(arrival_footer(arrival), highlight=False)  # the arrival the predicted TTFT turns on (newc4 #1: 1912 ms in waves, 130 in a loop)
    for note in summary.get("fitted_notes", ()):
        con.print(f"[yellow]note: {note}[/yellow]", highlight=False)
    for note in summary.get("precision_notes", ()):  # the file runs them so (W16A8's activations at BF16: crev9 #7)
        con.print(f"note: {note}", highlight=False)
    if "pipeline_note" in summary:
        con.print(f"note: {summary['pipeline_note']}", highlight=False)
    if caps := capped_footnote([("", summary.get("intervals"))]):  # the bounds above that stop at the ideal step
        con.print(caps, highlight=False)
    if "capture" in summary:  # the decode pool's capture, as disagg takes it
        con.print(summary["capture"], highlight=False)
    if "over_capacity" in summary:
        con.print(f"[yellow]at {summary['concurrency']} requests: {summary['over_capacity']}[/yellow]", highlight=False)
    kv = summary["decode"]["kv_dtype"] if disagg else dep.precision.kv.name  # the priced decode Deployment's (frev9 #5)
    if note := head_dim_note(m, priced, _gpu(gpu), kv):  # lint R4's head size on the engine's attention kernels, as estimate says it
        con.print(f"[yellow]{note}[/yellow]", highlight=False)


def _slo_text(slo: dict) -> str:
    parts = [f">= {slo['min_tps_user']:g} tok/s/user" if slo.get("min_tps_user") is not None else "",
             f"TTFT <= {slo['max_ttft_ms']:g} ms" if slo.get("max_ttft_ms") is not None else ""]
    return " and ".join(x for x in parts if x)


def _priced_as(engine: str) -> str:
    """' (vllm, defaults as 0.11-0.14)': the releases whose defaults the predicted figures price (Engine.release), beside
    the newer release the file's options are read at (_read_at): the file writes the priced values where they differ."""
    return f" ({engine}, defaults as {ENGINES[engine].release})"


def _read_at(engine: str, version: str, priced: str | None = None) -> str:
    """' (options as trtllm 1.4.0rc4 reads them; priced at 1.3.0rc1-1.3.0rc27)': the releases whose
    defaults the predicted figures price (Engine.release; `priced`: the engine priced, Dynamo's workers') and the release
    whose options the file is written from (data/engines/NAME.toml), both said plainly, and which to run to compare with
    the prediction where the file's release is one the prediction prices (SGLang 0.5.23). It read "options read at trtllm
    1.4.0rc4; newer releases may differ" above "defaults as 1.3.0rc1-1.3.0rc27", and no release to install (newc8 #14):
    the file sets the values priced for what it writes (batch, step budget, KV share, capture), not a default it leaves
    unset, which the file's release may change. One line at 100 columns for vLLM (the README's)."""
    priced = priced or engine
    release = ENGINES[priced].release
    at = release if priced == engine else f"{priced} {release}"  # the predicted line names them defaults: "defaults as ..."
    if priced == engine and _within(version, release):
        return f" (options as {engine} {version} reads them, priced at {at}: run {version} to compare)"
    return f" (options as {engine} {version} reads them; priced at {at})"


def _version_key(v: str) -> tuple | None:
    """'1.3.0rc27' -> ((1, 3, 0), 27), '0.5.23' -> ((0, 5, 23), inf): a release candidate before its release; None where
    `v` is no dotted version (ATOM's commit)."""
    import re

    m = re.fullmatch(r"(\d+(?:\.\d+)*)(?:rc(\d+))?", v.strip())
    if not m:
        return None
    return tuple(int(x) for x in m.group(1).split(".")), int(m.group(2)) if m.group(2) else float("inf")


def _within(version: str, release: str) -> bool:
    """Whether `version` lies in Engine.release's range 'LO-HI' (or is the one release named); a bound of fewer parts
    holds its patch releases (0.14 holds 0.14.1)."""
    lo, _, hi = release.partition("-")
    v, a, b = _version_key(version), _version_key(lo), _version_key(hi or lo)
    if v is None or a is None or b is None:
        return False
    n = len(b[0])
    cut = (v[0][:n], v[1] if len(v[0]) == n else float("-inf"))  # 0.14.1 against 0.14: (0, 14) at its earliest
    return a <= v and cut <= b


def _precision_words(precision, checkpoints: bool, others=()) -> str:
    """The exported point's precision (W:/A:/KV:), and, where the checkpoint's was kept, how to export another: export
    searches plans and batches at one precision while `pareto` searches precisions too, so pareto's best point at the same
    SLO may be another precision's (llama-3.1-70b on 8x H200 at 50 tok/s/user: pareto's TP2 x4 FP8 at 1634 tok/s/GPU,
    export's BF16 TP8 at 812). `others`: the precisions pareto searches besides it (search.default_precisions: the
    formats the GPU runs natively), the only ones suggested: FP8 was suggested on an A100, which refuses it."""
    if precision is None:
        return ""
    if not checkpoints:
        return f", {precision.label()}"
    flags = [f"--weight-dtype {p.weight.name} --kv-dtype {p.kv.name}" for p in others if p != precision]
    if not flags:
        return f", {precision.label()} (the checkpoint's)"
    return f", {precision.label()} (the checkpoint's; pareto searches precisions too: {' or '.join(flags)} exports another)"


def _chosen_line(chosen: dict, *, precision=None, checkpoints: bool = True, others=()) -> str:
    """Which frontier point export chose and why (the SLO, and whether it was the default), at which precision."""
    why = (f"{_slo_text(chosen['slo'])}, the interactive default (--min-tps-user/--max-ttft-ms set another, --concurrency a batch)"
           if chosen["default"] else _slo_text(chosen["slo"]))
    x = f" x{chosen['replicas']}" if chosen["replicas"] > 1 else ""
    return (f"chose {chosen['plan']}{x} at {chosen['concurrency']} requests per instance{_precision_words(precision, checkpoints, others)}: "
            f"the frontier point with the most tok/s/GPU that meets {why}")


def _slo_point(m, dep, *, fixed: dict, isl: int, osl: int, slo: dict, calibration, gpus_value, arrival: str, launch: dict | None = None,
               prefix_hit: float = 0.0):
    """The frontier point with the most output tok/s/GPU that meets `slo`: the plans the fixed sizes
    leave open on dep.num_gpus GPUs (replicas of smaller instances fill them) x every batch, at dep's
    precision, speculation (its draft length) and step token budget, each point priced with and stating the `launch`
    options given (search's: export's --cuda-graph-max-bs, --max-batch, --chunked-prefill); with a batch cap, the batches a
    rank runs up to it (past it the rest wait: no more tok/s/GPU, a longer TTFT)."""
    from dataclasses import replace

    from llm_codesign.cli.common import nothing_found
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.search import SearchSpace, search
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.plan import check_whole_prompt

    launch = launch or {}
    check_whole_prompt(dep, isl, osl=osl)  # a request the launch schedules whole over its budget, refused as estimate refuses it

    space = SearchSpace.build(m, dep.gpu, num_gpus=dep.num_gpus, spec=dep.spec, draft_len=dep.spec.k if dep.spec else None, **fixed)
    space = replace(space, precisions=(dep.precision,), spec_ks=(dep.spec.k,) if dep.spec else space.spec_ks)
    if "max_batch" in launch:
        space = replace(space, batches=tuple(b for b in space.batches if b <= launch["max_batch"]) or (launch["max_batch"],))
    r = search(m, dep.gpu, calibration_for(dep.gpu, calibration), space, isl=isl, osl=osl, engine=get_engine(dep.backend),
               max_num_tokens=dep.max_num_tokens, arrival=arrival, prefix_hit=prefix_hit, launch=launch, **slo)
    if not r.points:
        raise nothing_found([r.to_dict()], gpus_value or dep.num_gpus, slo)
    from llm_codesign.measure.intervals import table_for

    # with its metrics' intervals, as the frontier's points carry them
    best = replace(r, points=(max(r.points, key=lambda q: q.output_tok_s_per_gpu),)).banded(m, table=table_for(calibration, gpu=dep.gpu))
    return best.points[0]


def _dynamo(m, gpu, *, prefill, decode, n_pre, n_dec, concurrency, isl, osl, backend, weight_dtype, activation_dtype, kv_dtype,
            spec, draft_len, acceptance, acceptance_rates, draft_model, max_num_tokens, calibration, export_dynamo, arrival, launch=None):
    """Dynamo's file of the two pools and its predicted figures, priced by disagg's one path (price_pools). `launch`: export's
    --cuda-graph-max-bs and --max-batch, the decode workers' capture and batch cap per rank (disagg's --decode-cuda-graph-max-bs
    and --decode-max-batch), and --chunked-prefill, both pools' (the prefill pool's is the one it prices), written as priced."""
    from llm_codesign.cli.common import _gpu, _precision, _spec
    from llm_codesign.explore.disagg_search import price_pools
    from llm_codesign.explore.export_engines.base import launch_batch, per_rank
    from llm_codesign.explore.search import with_capture
    from llm_codesign.spec.engines import check_runs
    from llm_codesign.spec.harness import DEFAULT_ARRIVAL
    from llm_codesign.spec.plan import Deployment, Plan, attention_dp_note

    if not prefill or not decode:
        raise InputError("prefill/decode", f"{prefill or '(none)'} / {decode or '(none)'}", "both plans of a Dynamo disaggregated "
                         "deployment, e.g. --prefill tp=8 --decode tp=8")
    g = _gpu(gpu)
    prec = _precision(m, weight_dtype, activation_dtype, kv_dtype, g)
    sd = _spec(spec, draft_len, acceptance, acceptance_rates, draft_model, model=m)
    pp_, dp_ = Plan.parse(prefill, m, "prefill"), Plan.parse(decode, m, "decode")
    for pool, plan in (("prefill", pp_), ("decode", dp_)):  # a pool's GPUs read off tp x attention_dp, as disagg says it
        if note := attention_dp_note(plan):
            typer.echo(f"note: {pool}: {note}", err=True)
    launch = launch or {}
    chunked, cap = launch.get("chunked_prefill"), launch.get("max_batch")
    pre = Deployment(gpu=g, num_gpus=int(pp_.gpus), plan=pp_, precision=prec, backend=backend, spec=sd, max_num_tokens=max_num_tokens,
                     chunked_prefill=chunked)
    dec = Deployment(gpu=g, num_gpus=int(dp_.gpus), plan=dp_, precision=prec, backend=backend, spec=sd, max_num_tokens=max_num_tokens,
                     chunked_prefill=chunked, max_batch=cap, cuda_graph_max_bs=launch.get("cuda_graph_max_bs"))
    check_runs(pre.engine, g, prec=prec, moe=m.is_moe)  # a format whose MoE kernel the engine lacks here, as lc.deployment's
    # the decode workers' CUDA graphs padded up to their batch per rank where the engine's default misses it (as a search's
    # points state theirs): the export writes it, and disagg's one code path (price_pools) prices it, so that this
    # prediction is disagg's with --decode-cuda-graph-max-bs N (it rebuilt the pools and gave 66.2 ms TPOT where disagg
    # gave 98.8, review 2026-12-06)
    dec = with_capture(dec, concurrency, instances=n_dec)
    # the decode workers priced at the batch cap the file writes (launch_batch, as import reads it back): vLLM's stated
    # max-num-seqs shrinks its sampler warm-up and frees KV cache (leftD), so the default's price was not the file's
    cap = launch_batch(dec, per_rank(concurrency, 1, instances=n_dec), int(dec.plan.adp))
    r = price_pools(m, g, prefill=pp_, decode=dp_, precision=prec, engine=backend, spec=sd, max_num_tokens=max_num_tokens,
                    prefill_instances=n_pre, decode_instances=n_dec, concurrencies=[concurrency], isl=isl, osl=osl,
                    calibration=calibration, decode_cuda_graph_max_bs=dec.cuda_graph_max_bs, arrival=arrival, decode_max_batch=cap,
                    chunked_prefill=chunked)
    row = r.rows[0]
    predicted = {k: row[k] for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")}
    text = export_dynamo(m, prefill=pre, decode=dec, prefill_instances=n_pre, decode_instances=n_dec, concurrency=concurrency,
                         extra={"isl": isl, "osl": osl, **({} if arrival == DEFAULT_ARRIVAL else {"arrival": arrival}), "predicted": predicted,
                                **priced_with(calibration)})
    summary = {"prefill": pre.to_dict() | {"instances": n_pre}, "decode": dec.to_dict() | {"instances": n_dec},
               "concurrency": concurrency, "predicted": predicted}
    if dec.cuda_graph_max_bs is not None and launch.get("cuda_graph_max_bs") is None:
        n = dec.cuda_graph_max_bs
        summary["capture"] = f"decode priced with graphs padded to {n} a rank (disagg --decode-cuda-graph-max-bs {n})"
    return text, summary


def _disagg_point(r: dict, p: dict, index: int, out: str, engine: str | None) -> None:
    """export-point --series disagg: Dynamo's file of a disaggregated frontier point, its pools' plans, instances and
    batch priced again by export --backend dynamo's one path (_dynamo -> price_pools), as that command with the point's
    --prefill/--decode/--concurrency writes it (newc6 #15)."""
    from llm_codesign.explore.export import export_dynamo
    from llm_codesign.outputs import write_text
    from llm_codesign.spec.harness import DEFAULT_ARRIVAL

    rec, worker = p["deployment"], r.get("backend")
    if engine and engine not in ("dynamo", worker):
        raise InputError("backend", engine, f"dynamo (with the {worker} workers the frontier was priced for)")
    _check_suffix(out, "dynamo")
    sizes = ("tp", "pp", "ep", "moe_tp", "attention_dp", "kvp")
    plan = {k: ",".join(f"{s}={rec[k][s]}" for s in sizes) for k in ("prefill", "decode")}
    conc = int(rec["concurrency_per_instance"])
    text, _ = _dynamo(_model(r["model"]), rec["gpu"], prefill=plan["prefill"], decode=plan["decode"], n_pre=int(rec["prefill"]["instances"]),
                      n_dec=int(rec["decode"]["instances"]), concurrency=conc, isl=r.get("isl"), osl=r.get("osl"), backend=worker,
                      weight_dtype=rec["weight_dtype"], activation_dtype=rec["activation_dtype"], kv_dtype=rec["kv_dtype"],
                      spec=rec.get("spec"), draft_len=rec.get("draft_len") or None, acceptance=rec.get("acceptance"),
                      acceptance_rates=",".join(f"{x!r}" for x in rec["acceptance_rates"]) if rec.get("acceptance_rates") else None,
                      draft_model=rec.get("draft_model"), max_num_tokens=rec.get("max_num_tokens"),
                      calibration=r.get("calibration"), export_dynamo=export_dynamo, arrival=r.get("arrival") or DEFAULT_ARRIVAL)
    write_text(out, text, executable=text.startswith("#!"))
    con = _console(stderr=out == "-")
    con.print(f"wrote dynamo configuration ({worker} workers) of disaggregated point {index} ({rec['plan']}, "
              f"{conc} requests, x{rec.get('replicas', 1)}): {'standard output' if out == '-' else out}")
    if p.get("disagg_command"):  # the disagg that prices the point again, its decode capture included (crev9 #1)
        con.print(f"priced again by: {p['disagg_command']}", highlight=False, soft_wrap=True)


from llm_codesign.explore.export import command_line as _command_line  # noqa: E402 (where it was)


def _exists(path: str) -> bool:
    """Whether `path` names an existing file or folder; a name the OS refuses (over 255 characters: "File name too
    long") names none."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):  # ValueError: an embedded NUL
        return False


@app.command("import")
def import_(
    path: str = typer.Argument(..., help="A file `llm-codesign export` wrote, or an engine's own configuration: a `vllm serve MODEL ...` "
                               "command line (in a file, or quoted as the argument) or its --config YAML, a `python -m sglang.launch_server ...` command line, a TensorRT-LLM "
                               "extra_llm_api_options YAML or `trtllm-serve` command."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="The GPU an engine's configuration runs on (it names none); an export states its own (another is refused)."),
    model: Optional[str] = typer.Option(None, "--model", help="The model served, where the configuration names none (a TensorRT-LLM YAML) "
                                        "or one the registry does not know (a local checkpoint path)."),
    backend: Optional[str] = typer.Option(None, "--backend", "--engine", help="The engine of a YAML whose keys do not tell (default: "
                                          "found from the file)."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, max=MAX_CONCURRENCY,
                                              help="Requests in flight per instance: a benchmark's global count over the replicas; of an engine's own launch line with "
                                              "data parallelism (--data-parallel-size, --dp-size: one endpoint), the endpoint's, split over its ranks "
                                              "(default: an export's own, else the configuration's max batch)."),
    isl: Optional[int] = tokens_option(None, "--isl", hi=None, help="Input tokens per request (default: the export's, else 1024)."),
    osl: Optional[int] = tokens_option(None, "--osl", hi=None, help="Output tokens per request (default: the export's, else 1024)."),
    acceptance: Optional[float] = typer.Option(None, "--acceptance", help="Mean accepted tokens per step of the configuration's "
                                               "speculative decoding (an engine's configuration states none; default: the published one where bundled, "
                                               "DeepSeek-V3/R1's MTP)."),
    acceptance_rates: Optional[str] = O_RATES,
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
    arrival: Optional[str] = typer.Option(None, "--arrival", help="How requests arrive: waves, closed_loop or burst, as estimate "
                                          "takes it (default: the export's, else waves)."),
    prefix_hit: Optional[float] = typer.Option(None, "--prefix-hit", help="Share of each prompt already in the prefix cache "
                                               "(0 to <1), as estimate takes it (default: the export's, else 0)."),
):
    """The deployment an engine configuration starts, priced as `estimate` prices it.

    The configuration: an export, or the engine's own command line or YAML; options the model does not hold are
    listed as ignored."""
    from llm_codesign.api import estimate
    from llm_codesign.explore.disagg_search import priced_pools
    from llm_codesign.explore.export import import_config

    kw = dict(price=estimate, price_pools=priced_pools, gpu=_gpu(gpu) if gpu is not None else None, model=model, backend=backend, concurrency=concurrency,
              isl=isl, osl=osl, acceptance=acceptance, acceptance_rates=acceptance_rates, calibration=calibration, arrival=arrival,
              prefix_hit=prefix_hit)
    if _command_line(path):
        # the command line itself (`import 'vllm serve MODEL --tensor-parallel-size 8'`), as the help says it is taken:
        # import_config reads it as text (shlex, never run), as lc.import_config does. Asked before Path.exists(), which
        # raised "File name too long" past 255 characters
        imp = import_config(path, **kw)
    elif not _exists(path):
        raise InputError("path", path, "an existing file (an export, an engine's YAML or command line) or an engine's command line "
                                       "itself: 'vllm serve MODEL ...', 'python -m sglang.launch_server ...' or 'trtllm-serve MODEL ...'")
    else:  # one code path with lc.import_config (explore.export.import_config), priced as estimate prices
        imp = import_config(path, **kw)
    r = imp.to_dict()
    if as_json:
        return _dump(r)
    _import_lines(imp, r)


def _import_lines(imp, r: dict) -> None:
    """import's text: one line of the deployment and its figures, each with its 80% interval as estimate and disagg give it
    (a Dynamo file's tok/s/user and tok/s/GPU too, crev10 #7), the arrival its TTFT assumes where it is not the default
    (crev10 #1; --json always has it), then what it says of the file."""
    from llm_codesign.render.intervals import ONE_TOKEN, arrival_footer, capped_footnote, queue_text, short
    from llm_codesign.spec.harness import DEFAULT_ARRIVAL

    con = _console()
    d = imp.deployment
    tpot = f"{ONE_TOKEN}, " if r["tpot_ms"] is None else f"{r['tpot_ms']:.2f} ms{short(r, 'tpot_ms')}, "
    if imp.engine == "dynamo":
        rate = "" if r["tpot_ms"] is None else f"{r['tok_s_per_user']:.1f} tok/s/user{short(r, 'tok_s_per_user')}, "
        con.print(f"{r['model']}: prefill {imp.prefill_instances}x {imp.prefill.plan.label()}, decode {imp.decode_instances}x "
                  f"{d.plan.label()} ({d.engine.priced_as}): {r['concurrency']} requests ({imp.batch}), TTFT {r['ttft_ms']:.0f} ms"
                  f"{short(r, 'ttft_ms')}, TPOT {tpot}{rate}{r['output_tok_s_per_gpu']:.0f} tok/s/GPU{short(r, 'output_tok_s_per_gpu')}",
                  highlight=False)
    else:
        # each figure with its 80% interval, as estimate gives it (the 95% and the runs they come from: --json)
        con.print(on_gpus(imp.model.name, d.num_gpus, d.gpu.name, d.plan.label(), imp.replicas)
                  + f", {d.precision.label()}, {ENGINES[imp.engine].priced_as}: {_requests(r['concurrency'], imp.replicas, imp.batch, r.get('endpoint_concurrency'))}, "
                  f"TTFT {r['ttft_ms']:.0f} ms{queue_text(r)}{short(r, 'ttft_ms')}, TPOT {tpot}"
                  + f"{r['output_tok_s_per_gpu']:.0f} tok/s/GPU{short(r, 'output_tok_s_per_gpu')}", highlight=False)
    if r["arrival"] != DEFAULT_ARRIVAL:  # the arrival TTFT turns on where not the default: the export's (its header's) or --arrival
        con.print(arrival_footer(r["arrival"]), highlight=False)
    if r.get("prefix_hit"):  # the prefix hits TTFT turns on: the export's (its header's) or --prefix-hit, as pareto says them
        con.print(f"{r['prefix_hit']:.0%} prefix-cache hits: that share of each prompt is not prefilled", highlight=False)
    for note in r.get("notes") or ():  # a Dynamo file's: what disagg prints under its table
        con.print(note, highlight=False)
    if r.get("over_capacity"):  # what estimate and export say of the requests the deployment cannot run at once
        con.print(f"[yellow]at {r['concurrency']} requests: {r['over_capacity']}[/yellow]", highlight=False)
    if r.get("attention_note"):  # lint R4's head size on the engine's attention kernels, as estimate says it
        con.print(f"[yellow]{r['attention_note']}[/yellow]", highlight=False)
    if r.get("chunking_note"):  # SGLang's chunking off, a prompt past its prefill budget (serve.estimate, as estimate says it)
        con.print(r["chunking_note"], highlight=False)
    if "spec" in r and imp.engine != "dynamo":  # the speculation priced and where its acceptance came from (fixA13: never said)
        s = r["spec"]
        said = {"export": "the export's acceptance", "given": "the acceptance given",
                "published": f"acceptance not given, so the published one: {s['acceptance_source']}"}[s["acceptance_from"]]
        con.print(f"speculation priced: {s['method']} k={s['draft_len']}, {r['accepted_per_step']:.2f} tokens/step ({said})", highlight=False)
    if caps := capped_footnote([("", r.get("intervals"))], ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu")):
        con.print(caps, highlight=False)
    if imp.ignored:
        con.print(f"ignored (not modelled): {', '.join(imp.ignored)}", highlight=False)
    if imp.note:
        con.print(imp.note, highlight=False)


def _frontier_model(r: dict, given: str | None) -> str:
    """The model a saved frontier's point is exported for: --model, else the reference its commands name (model_ref: a
    config.json's absolute path), else its name (a registry one). A frontier of a shape no file names (a dict) needs
    --model, said in one line rather than as 'custom' not found."""
    from llm_codesign.explore.frontier import UNNAMED_MODEL

    ref = given or r.get("model_ref") or r.get("model")
    if ref == UNNAMED_MODEL:
        raise InputError("model", None, f"the config.json of {r.get('model')!r} (--model PATH): the frontier was searched from a shape "
                                        "no file names (a Python dict or ModelSpec)")
    return ref


def _requests(concurrency: int, replicas: int, source: str, endpoint: int | None = None) -> str:
    """import's requests in flight: per instance, and across the replicas behind a load balancer where there are several
    (a benchmark's global --max-concurrency 48 on 2 replicas is 24 per instance, newc5 #9); `source`: where the count came
    from; `endpoint`: a launch line's data-parallel server's count, split over its ranks (newc11 #11)."""
    if replicas <= 1:
        return f"{concurrency} requests ({source})"
    if endpoint:
        return f"{concurrency} requests on the busiest data-parallel rank ({source})"
    return f"{concurrency} requests per instance ({concurrency * replicas} across {replicas} replicas; {source})"


def _point_answer(m, dep, wl, *, calibration) -> dict:
    """estimate's answer (Estimate.to_dict) at a chosen point's deployment and workload `wl`: its notes of a fitted TTFT
    share (serve.estimate.fitted_ttft_notes), which a frontier's point does not carry."""
    from llm_codesign.api import estimate as run

    return run(m, dep, wl, calibration=calibration).to_dict()


@app.command("export-point")
def export_point(
    path: str = typer.Argument(..., help="A frontier as `pareto --json` writes it (`pareto --out DIR`: DIR/frontier.json)."),
    index: int = typer.Option(..., "--index", help="The frontier point, in its series' order (0: the throughput end, the last or -1: "
                              "the interactive end, as Python indexes): each point of `pareto --json` states its series and index."),
    out: str = typer.Option(..., "-o", "--out", help="The file to write; - for standard output."),
    engine: Optional[str] = typer.Option(None, "--backend", "--engine", help=_written() + " (default: the frontier's engine)."),
    series: str = typer.Option("aggregated", "--series", help="aggregated: the frontier of aggregated plans; disagg: the "
                               "disaggregated frontier of `pareto --disagg --json`, written as Dynamo's file."),
    model: Optional[str] = typer.Option(None, "--model", help="The model's config.json, where the frontier's names none here "
                                        "(one searched from a Python dict, or a path moved since; default: the frontier's model_ref)."),
    draft_model: Optional[str] = typer.Option(None, "--draft-model", help="The EAGLE-3 head's repository, where the frontier "
                                              "searched --spec eagle3 without one (the file names it; the price is the point's)."),
):
    """The engine's launch configuration of one frontier point: its plan, precision, step token budget and batch."""
    import json

    from llm_codesign.explore.export import engine_spec, point_config, point_index, with_drafter
    from llm_codesign.explore.frontier import estimate_command
    from llm_codesign.outputs import write_text
    from llm_codesign.spec.harness import DEFAULT_ARRIVAL
    from llm_codesign.spec.plan import Deployment

    _check_out(out, {"PATH": path})
    # the folder `pareto --out DIR` wrote holds it as frontier.json; its frontier.csv carries no point's record (newc10 #12)
    what = "the JSON of `llm-codesign pareto --json`, or the frontier.json `pareto --out DIR` writes beside frontier.csv"
    if str(path).lower().endswith(".csv"):
        raise InputError("path", path, what)
    try:
        doc = parse_nested(json.loads, read_text(path, "path", what), "path", path)
    except json.JSONDecodeError as e:
        raise InputError("path", path, f"{what} ({type(e).__name__})") from None
    if series not in ("aggregated", "disagg"):
        raise InputError("series", series, "aggregated or disagg (the disaggregated frontier of pareto --disagg --json)")
    results = doc.get("comparisons") or [doc] if isinstance(doc, dict) else []
    points = [(r, p) for r in results for p in r.get("frontier", []) if (r.get("mode") == "disaggregated") == (series == "disagg")]
    if not points:
        raise InputError("path", path, "a pareto --disagg --json result (a disaggregated frontier)" if series == "disagg" else
                         "a pareto --json result with an aggregated frontier")
    index = point_index(index, len(points), of=f"the {series} series",
                        where="; each point of pareto --json states its `series` and `index`: --series and --index")
    r, p = points[index]
    if r.get("calibration_unrecorded"):  # the launch file's header would claim the bundled profile for its figures
        raise InputError("path", path, f"a frontier priced with the bundled profile or a profile's file (this one: {r['calibration_unrecorded']}, "
                                       "which no path names; write it and search again)")
    rec = p["deployment"]
    r = {**r, "model": _frontier_model(r, model)}  # the reference the commands and the file name it by (crev10 #3)
    if series == "disagg":
        return _disagg_point(r, p, index, out, engine)
    dep = with_drafter(Deployment.from_dict(rec), draft_model)
    if engine and engine != dep.backend:
        raise InputError("backend", engine, f"the engine the frontier was priced for ({dep.backend}); search again with --backend {engine}")
    _check_suffix(out, dep.backend)
    m = _model(r["model"])
    # as lc.export_point writes it (explore.export.point_config), with the profile the frontier was priced with (pareto --json)
    _, text = point_config(m, dep, concurrency=int(rec["concurrency_per_instance"]), replicas=int(rec.get("replicas", 1)), isl=r.get("isl"),
                           osl=r.get("osl"), predicted={k: p[k] for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")},
                           calibration=r.get("calibration"), file_name=_file_name(out), arrival=r.get("arrival"), prefix_hit=r.get("prefix_hit", 0.0))
    write_text(out, text, executable=text.startswith("#!"))
    es = engine_spec(dep.backend)
    con = _console(stderr=out == "-")
    con.print(f"wrote {dep.backend} configuration{_read_at(dep.backend, es['version'])} of point {index} ({rec['plan']}, {rec['concurrency_per_instance']} "
              f"requests, max_num_tokens {rec['max_num_tokens']}, x{rec.get('replicas', 1)}): {'standard output' if out == '-' else out}")
    # the estimate that prices the point again, its capture included (a frontier's JSON from before it carried one: built)
    cmd = p.get("estimate_command") or estimate_command(r["model"], rec, isl=r.get("isl", 1024), osl=r.get("osl", 1024),
                                                        prefix_hit=r.get("prefix_hit", 0.0), calibration=r.get("calibration"),
                                                        arrival=r["arrival"] if r.get("arrival", DEFAULT_ARRIVAL) != DEFAULT_ARRIVAL else None)
    con.print(f"priced again by: {cmd}", highlight=False, soft_wrap=True)
