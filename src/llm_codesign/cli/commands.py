"""Command line: every command renders results computed by the core; errors are one line, exit 2.

The commands live here (specs, roofline, estimate, pareto), in cli_accuracy (validate, calibrate)
and cli_design (lint, design); importing those modules registers their commands on the shared app."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Optional

import typer

from llm_codesign.cli.common import (
    DEFAULT_GPU,
    DEFAULT_MODEL,
    DISAGG_GRAPHS_NOTE,
    GRAPHS_NOTE,
    MAX_CONCURRENCY,
    MAX_GPUS,
    O_A,
    O_ACC,
    O_ADP,
    O_ARRIVAL,
    O_BACKEND,
    O_CAL,
    O_CHUNKED,
    O_DRAFT,
    O_EP,
    O_GPU,
    O_GPUS_ONE,
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
    _fmt,
    _gpu,
    _model,
    _precision,
    _progress,
    _spec,
    _table,
    app,
    check_paths,
    check_replica_gpus,
    check_search_size,
    defaulted,
    nothing_found,
    on_gpus,
    plan_note_line,
    say_notes,
    tokens_option,
)
from llm_codesign.errors import InputError
from llm_codesign.render.accuracy import NO_ACCURACY, accuracy_said, drop_text
from llm_codesign.spec.engines import check_runs, engine_choices, engine_for, get_engine
from llm_codesign.spec.harness import DEFAULT_ARRIVAL

O_PRICE_HELP = ("Dollars per GPU-hour, `bundled` (the cited data/prices.toml) or a price file: adds $ per million output "
                "tokens and per million tokens in+out.")


@app.command()
def gpus(as_json: bool = typer.Option(False, "--json", help="Emit JSON.")):
    """List the GPU catalog (--json: with the engines that run on each and the one priced where --backend is not given)."""
    from llm_codesign.spec.hardware import catalog

    rows = [g.to_dict() | engine_choices(g) for g in catalog().values()]
    if as_json:
        return _dump(rows)
    t = _table("GPU catalog", "id:k name:t BF16:n FP8:n FP4:n HBM:n GiB:n TB/s:n dom:n GB/s:n TDP:n",
               "BF16, FP8, FP4: dense peak TFLOP/s. HBM: GB as sold; GiB: as nvidia-smi or rocm-smi reports it. TB/s: HBM "
               "bandwidth. dom: GPUs in the scale-up domain (NVLink, AMD's Infinity Fabric; PCIe within a server for PCIe cards); GB/s: its bandwidth per "
               "direction. TDP: watts.")
    # a name folds between its words, never inside one ("Blackwell" whole: newc5 #21); the id beside it is the one to type
    t.columns[1].min_width = max(len(w) for g in rows for w in g["name"].split())
    for g in rows:
        p = g["peak_tflops"]
        t.add_row(g["id"], g["name"], f"{p.get('bf16', 0):.0f}", f"{p.get('fp8', 0):.0f}" if "fp8" in p else "-",
                  f"{p.get('fp4', 0):.0f}" if "fp4" in p else "-", f"{g['hbm_gb']:.0f}", f"{g['memory_gib']:.1f}", f"{g['hbm_tb_s']:.2f}",
                  str(g["scale_up_domain"]), f"{g['scale_up_gb_s']:.0f}", f"{g['tdp_w']:.0f}")
    _console().print(t)


@app.command()
def engines(as_json: bool = typer.Option(False, "--json", help="Emit JSON.")):
    """List the serving engines priced: what each is, the GPUs it runs on, the releases its defaults are read from, its
    default step budget and how it sizes its KV cache (--json: with the KV-cache formats it holds on each GPU)."""
    from llm_codesign.spec.engines import ENGINES, EXPORTABLE, VENDOR_ENGINE, VENDOR_NAMES, engines_on
    from llm_codesign.spec.hardware import catalog

    gpus = list(catalog().values())
    rows = []
    for e in ENGINES.values():
        on = [g for g in gpus if e.name in engines_on(g)]
        rows.append({"name": e.name, "title": e.title, "about": "; ".join(x for x in (e.about, e.name not in EXPORTABLE and "priced, not exported") if x), "aliases": list(e.aliases), "versions": e.versions,
                     "gpus": [g.id for g in on], "families": sorted({g.family for g in on}),
                     "default_on": [v for v, n in VENDOR_ENGINE.items() if n == e.name],
                     "step_tokens": {g.id: e.step_tokens(g) for g in on}, "kv_budget": e.kv_budget_text(),
                     "kv_formats": {g.id: list(e.kv_formats(g)) for g in on}})
    if as_json:
        return _dump(rows)
    t = _table("Serving engines", "name:k what:t GPUs:t defaults_from:t step_tokens:t KV_cache:t",
               "GPUs: the families it runs on. step tokens: its default budget a step (by GPU memory where it varies). KV cache: "
               "the share of memory it gives it by default. --json: each GPU, and the KV-cache formats it holds there.")
    for r in rows:
        steps = sorted(set(r["step_tokens"].values()))
        t.add_row(r["name"], f"{r['title']}: {r['about']}" + "".join(f"; default on {VENDOR_NAMES[v]}" for v in r["default_on"]),
                  ", ".join(r["families"]), r["versions"], "-".join(str(x) for x in steps[::max(len(steps) - 1, 1)]), r["kv_budget"])
    _console().print(t)


@app.command()
def models(as_json: bool = typer.Option(False, "--json", help="Emit JSON.")):
    """List the bundled models with total and active parameters."""
    from llm_codesign.spec.registry import list_models

    rows = list_models()
    if as_json:
        return _dump(rows)
    # the ids are copied: each whole. Where the table with them is wider than the console (80 columns: "meta-llama/Lla" over
    # "ma-3.1-8B", newc5 #21) they are listed beneath it, a model a line, instead of folded mid-word in a narrow column
    ids = {m["name"]: m["hf_ids"][:2] for m in rows}
    con = _console()
    cells = [((m["name"], "-", "-", "-", "[red]unsupported[/red]") if m.get("error") else
              (m["name"], f"{m['total_params'] / 1e9:.1f}B", f"{m['active_params'] / 1e9:.2f}B", str(m["layers"]), m["precision"]))
             for m in rows]
    # the width the ids need whole: the widest of each column's cells (the precision at its 14), a 2-space gap between
    need = sum(max(len(c[i]) for c in cells) for i in range(4)) + 14 + max(len(x) for v in ids.values() for x in v) + 2 * 5
    beside = need <= con.width
    t = _table("Bundled models", "name:k total:n active:n layers:n default_precision:t" + (" Hugging_Face_ids:k" if beside else ""))
    t.columns[4].max_width = 14  # the precision wrapped between its words ("W:bf16 A:bf16" a line)
    for m, c in zip(rows, cells, strict=True):
        t.add_row(*c, *(("\n".join(ids[m["name"]]),) if beside else ()))
    con.print(t)
    if not beside:
        con.print("Hugging Face ids:", highlight=False)
        for name, hf in ids.items():
            con.print(f"  {name}: {', '.join(hf)}", highlight=False)  # wrapped between ids, never inside one


@app.command()
def roofline(
    model: str = typer.Argument(..., help="Registry name, Hugging Face id or config.json path."),
    gpu: str = typer.Option(..., "--gpu", help="GPU id (see `gpus`) or a GPU .toml."),
    phase: str = typer.Option("decode", help="decode or prefill."),
    # --concurrency and --isl (every other command's words, newc5 #13): a decode step holds every request in flight, and its
    # first step's cache is the prompt; a prefill step of `batch` prompts of `context` tokens is a wave's
    batch: int = typer.Option(1, "--batch", "--concurrency", min=1, max=MAX_CONCURRENCY, help="Sequences in the step (--concurrency: the requests in flight)."),
    context: int = tokens_option(1024, "--context", "--isl", help="Context per sequence (decode: cached tokens; prefill: prompt); "
                                 "--isl: the prompt's length."),
    # estimate's plan options, filled in by the same rule (spec.plan.fill_plan), so that a MoE's roofline is EP's too (newc8 #10)
    tp: Optional[int] = O_TP, pp: Optional[int] = O_PP, ep: Optional[int] = O_EP, moe_tp: Optional[int] = O_MTP,
    attention_dp: Optional[int] = O_ADP, kvp: Optional[int] = O_KVP,
    weight_dtype: Optional[str] = typer.Option(None, help="bf16, fp8, fp8_block, nvfp4, mxfp4, int4, int8."),
    activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    calibration: Optional[str] = typer.Option(None, help="Calibration profile .toml."),
    backend: Optional[str] = O_BACKEND,
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
):
    """Per-operator roofline of one forward step, and its floor: the weights and KV cache it reads over HBM bandwidth or
    its FLOPs at peak, whichever is longer (activations left out; the table's bytes count them). Modelled times are the
    engine's kernels and collectives, as estimate prices them (no step overheads): the plan's too, --batch spread over
    its attention-DP ranks, its experts and their all-to-all where EP places them."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.roofline import NOT_RUN
    from llm_codesign.cost.roofline import roofline as run

    m, g = _model(model), _gpu(gpu)
    eng = engine_for(g, backend)
    prec = _precision(m, weight_dtype, activation_dtype, kv_dtype, g)
    check_runs(eng, g, prec=prec, moe=m.is_moe)  # a format the engine has no kernel for here, refused as estimate refuses it
    plan, note = _roofline_plan(m, g, eng, prec, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp)
    r = run(m, g, calibration_for(g, calibration), prec, phase, batch=batch, context=context, plan=plan, engine=eng) | {"engine": eng.name}
    r |= {"plan_note": note} if note else {}  # as estimate --json carries it (frev #8a)
    if as_json:
        return _dump(r)
    ridges = sorted({round(o["ridge_point"]) for o in r["ops"]}, reverse=True)
    per_rank = f" ({r['batch_per_rank']} a rank)" if r["attention_dp"] > 1 else ""
    count = f"{r['num_gpus']}x " if r["num_gpus"] != r["tp"] else ""  # a TP plan's GPUs are its label's (the title as before)
    t = _table(f"{m.name} on {count}{g.name}: {phase}, batch {batch}{per_rank}, context {context}, {r['plan']}, {r['precision']}, {eng.name}",
               "operator:t n:n FLOPs:n bytes:n FLOP/B:n bound:n ideal_us:n modelled_us:n %pk:n",
               f"n: layers running the operator. FLOP/B: arithmetic intensity, against the ridge point (peak FLOP/s "
               f"over bandwidth at the operator's precision: {', '.join(map(str, ridges))} FLOP/B here). "
               "ideal us: all n at their roofline, max(FLOPs/peak, bytes/bandwidth) (a collective: none; the floor below "
               f"leaves communication and activations out). modelled us: {eng.name}'s kernels and collectives as estimate "
               "prices them (tiles, waves, fitted efficiencies, fixed costs; no step overheads, host or scheduler terms: "
               "`estimate --breakdown` has them). %pk: share of peak FLOP/s."
               + (" *: the kernel's own rates (tiles, waves, efficiency) bind the other side of the ridge "
                  "(its ridge: kernel_ridge_point in --json)." if any(o.get("kernel_ridge_point") for o in r["ops"]) else "")
               + (" latency: over half the modelled time is neither roof but the kernel's fixed cost (launch, prologue, "
                  "tail), as at a small batch." if any(o["bound"] == "latency" for o in r["ops"]) else "")
               # newc9 #17: MLA's kv_up in a decode step, its weights read inside mla_q_absorb and mla_v_up
               + (" not run: no rows this step, nothing moved: MLA's kv_up in a decode step (absorbed, its W_UK and W_UV read "
                  "inside mla_q_absorb and mla_v_up), those two in a prefill (which up-projects the latent instead)."
                  if any(o["bound"] == NOT_RUN for o in r["ops"]) else ""))
    for o in r["ops"]:
        t.add_row(o["name"], f"{o['layers']:.0f}", _fmt(o["flops"]), _fmt(o["bytes"], "B"), f"{o['intensity']:.1f}",
                  o["bound"], f"{o['ideal_time_s'] * 1e6:.1f}", f"{o['time_s'] * 1e6:.1f}", f"{o['pct_of_peak']:.1f}")
    tt = r["totals"]
    t.add_row("[b]total[/b]", "", _fmt(tt["flops"]), _fmt(tt["bytes"], "B"), f"{tt['intensity']:.1f}", "",
              f"[b]{tt['ideal_time_s'] * 1e6:.1f}[/b]", f"[b]{tt['time_s'] * 1e6:.1f}[/b]", "")
    _console().print(t)
    # the floor's own count (cost.roofline.step_floor, the one every interval's floor takes), not the table's bytes
    f = tt["floor"]
    parts = ", ".join(f"{name} {_fmt(f[key], 'B')}" for name, key in (("weights", "weights"), ("KV cache", "kv"), ("state", "state")) if f[key])
    _console().print(f"roofline floor (max of FLOPs/peak, bytes/bandwidth): {tt['bound_time_s'] * 1e3:.3f} ms: "
                     f"{_fmt(f['bytes'], 'B')} moved at least ({parts}) over {g.hbm_bandwidth_bytes_per_s / 1e12:.2f} TB/s, "
                     f"{_fmt(f['flops'])} FLOPs per GPU")
    if not f["fits"]:
        _console().print(f"[yellow]the batch cannot be held: weights and KV cache {_fmt(f['weights'] + f['kv'] + f['state'], 'B')} "
                         f"a GPU against its {_fmt(g.hbm_bytes, 'B')} of HBM; lower --batch or --context[/yellow]")


def _roofline_plan(m, g, eng, prec, **sizes):
    """roofline's plan: its sizes filled in as estimate's (spec.plan.fill_plan) and checked as estimate checks them
    (serve.estimate.check: divisibility, the scale-up domain, both sides' GPUs, with the plans that agree), the line on
    tp x attention_dp GPUs said as estimate says it (spec.plan.attention_dp_note): (the plan, that line or None)."""
    from llm_codesign.serve.estimate import check
    from llm_codesign.spec.engines import check_kv_format
    from llm_codesign.spec.plan import Deployment, attention_dp_note, fill_plan

    plan, n = fill_plan(m, **sizes)
    check_kv_format(None, g, prec.kv.name)  # the GPU's own formats first, as roofline's own check names them
    dep = Deployment(gpu=g, num_gpus=n, plan=plan, precision=prec, backend=eng.name, plan_note=attention_dp_note(plan))
    check(m, dep)
    plan_note_line(dep)
    return plan, dep.plan_note


def _rank_share(r: dict) -> str:
    """'; 2048 a rank' where the engine splits the server's budget over its attention-DP ranks (SGLang)."""
    k = r["rank_step_tokens"]
    return "" if k == r["max_num_tokens"] else f"; {k} a rank"


@app.command()
def estimate(
    model: str = typer.Argument(..., help="Registry name (see `models`), Hugging Face id or config.json path."), gpu: str = O_GPU,
    gpus_: Optional[int] = O_GPUS_ONE,
    tp: Optional[int] = O_TP, pp: Optional[int] = O_PP, ep: Optional[int] = O_EP, moe_tp: Optional[int] = O_MTP,
    attention_dp: Optional[int] = O_ADP, kvp: Optional[int] = O_KVP,
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    isl: int = O_ISL, osl: int = O_OSL,
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1, max=MAX_CONCURRENCY,
                                              help="Requests in flight, per instance with --replicas (omit: offline max throughput)."),
    replicas: int = typer.Option(1, "--replicas", min=1, max=MAX_GPUS, help="Copies of the instance behind a load balancer, as "
                                 "export's: it is priced once (tok/s/GPU and per user unchanged), the GPUs, requests in flight "
                                 "and total tok/s said for all of them."),
    backend: Optional[str] = O_BACKEND, spec: Optional[str] = O_SPEC, draft_len: Optional[int] = O_K,
    acceptance: Optional[float] = O_ACC, acceptance_rates: Optional[str] = O_RATES, draft_model: Optional[str] = O_DRAFT,
    max_num_tokens: Optional[int] = O_MNT, cpp: bool = typer.Option(False, "--cpp", help="Chunked pipeline parallelism for prefill."),
    calibration: Optional[str] = O_CAL, breakdown: bool = typer.Option(False, "--breakdown", help="TPOT and TTFT part by part: the decode step's operators, the host, the drafts, the prompts' stalls, the waits."),
    gpu_hour_price: Optional[str] = typer.Option(None, "--gpu-hour-price", help=O_PRICE_HELP),
    prefix_hit: float = O_PREFIX, arrival: str = O_ARRIVAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
    cuda_graph_max_bs: Optional[int] = typer.Option(
        None, "--cuda-graph-max-bs", min=0, max=MAX_CONCURRENCY,
        help="Largest decode batch per rank replayed from a CUDA graph, smaller ones padded up; 0: graphs off, every step eager, "
             "as disagg's --decode-cuda-graph-max-bs and Deployment.cuda_graph_max_bs (SGLang --cuda-graph-max-bs-decode, "
             "--cuda-graph-max-bs before 0.5.23; TensorRT-LLM cuda_graph_config max_batch_size with enable_padding); larger ones "
             "run eagerly. Default: the "
             "engine's (TensorRT-LLM's LLM API: 1-32, 64 and 128, unpadded; SGLang's by GPU memory and TP: 256 at TP < 4 "
             "and 512 on H100 / H200, 512 on B200; vLLM's 512, 1,024 on B200 / B300, over 1 + the draft length)."),
    max_batch: Optional[int] = typer.Option(
        None, "--max-batch", min=1, max=MAX_CONCURRENCY,
        help="The engine's batch cap, requests each attention-DP rank runs at once (TensorRT-LLM max_batch_size, vLLM "
             "--max-num-seqs, SGLang --max-running-requests over its attention-DP ranks; import reads it): requests past it "
             "wait for a slot (longer TTFT). Default: the engine's own limit and the KV cache's."),
    chunked_prefill: Optional[bool] = O_CHUNKED,
):
    """What one deployment delivers: TTFT, TPOT, tok/s/user, tok/s/GPU, memory, bottlenecks."""
    from llm_codesign.api import estimate as run
    from llm_codesign.explore.lint import scale_block_notes
    from llm_codesign.serve.estimate import replicas_record
    from llm_codesign.spec.plan import Workload

    m = _model(model)
    dep = _deployment(m, gpu, gpus_, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp, weight_dtype=weight_dtype,
                      activation_dtype=activation_dtype, kv_dtype=kv_dtype, backend=backend, spec=spec, draft_len=draft_len, acceptance=acceptance,
                      acceptance_rates=acceptance_rates, draft_model=draft_model, max_num_tokens=max_num_tokens, cpp=cpp)
    check_replica_gpus(dep, gpus_, replicas)
    plan_note_line(dep)
    if cuda_graph_max_bs is not None or max_batch is not None or chunked_prefill is not None:
        from dataclasses import replace

        dep = replace(dep, cuda_graph_max_bs=cuda_graph_max_bs, max_batch=max_batch, chunked_prefill=chunked_prefill)
    wl = Workload(isl=isl, osl=osl, concurrency=concurrency, prefix_hit=prefix_hit, arrival=arrival)
    est = run(m, dep, wl, calibration=calibration, breakdown=breakdown)
    if gpu_hour_price is not None:  # explore/pricing.py: the GPU time of serving charged to the tokens
        from dataclasses import replace

        from llm_codesign.explore.pricing import cost_of

        est = replace(est, cost=cost_of(dep.gpu, gpu_hour_price, est.output_tok_s_per_gpu, isl, osl))
    r = est.to_dict()  # the table shows what --json prints (and the API: Estimate.to_dict), the shape's rows beside it
    if replicas > 1:
        r["replicas"] = replicas_record(r, dep.num_gpus, replicas)
    if as_json:
        return _dump(r)
    from rich.table import Table

    from llm_codesign.render.intervals import ONE_TOKEN, basis_rows, duration, inline, one_token, queue_text

    # the formats the model prices (Estimate.to_dict's precision_as_run, the web page's too)
    t = Table(title=f"{on_gpus(m.name, dep.num_gpus, dep.gpu.name, r['plan'], replicas)}, {r['precision_as_run']}, {dep.engine.priced_as}",
              show_header=False)
    # identifiers (a checkpoint's id, a basis's source) wrap, never cut: piped at 80 columns the value column read
    # "RedHatAI/Meta-Llama-3.1-70B-Instruct-F…" (rich's default overflow, "ellipsis"; newcomer review 2026-12-06 item 12)
    t.add_column("metric", overflow="fold")
    t.add_column("value", justify="right", overflow="fold")
    beside = _beside_rows(m, dep, wl, r, calibration=calibration)
    # the shape's size beside its speed (ModelSpec: every weight; active, what one token reads: top-k experts, the LM head
    # and not the input embedding's lookup), so an architect's "~30B active" reads off the row (`models --json` for a
    # bundled one's counts)
    for k, v in (("parameters", f"{m.total_params / 1e9:.1f}B total, {m.active_params / 1e9:.1f}B active"), ("mode", r["mode"]), ("concurrency", _knee_text(r) if r.get("offline_knee") else _concurrency_text(r)), ("ISL / OSL", f"{isl} / {osl}"),
                 # each metric with its 80% and 95% intervals (measure.intervals)
                 *((("replicas", _replicas_text(r["replicas"])),) if "replicas" in r else ()),
                 ("step token budget", f"{r['max_num_tokens']} ({r['backend']})" + _rank_share(r)), ("TTFT", duration(r["ttft_ms"]) + queue_text(r) + inline(r, "ttft_ms")),
                 # the arrival the TTFT turns on, said where it is read (the basis row's trailing "in waves" hid it)
                 *((("arrival", r["arrival_text"]),) if r["arrival_text"] else ()), *beside["ttft"],
                 # one output token: no second token, so no TPOT nor decode rate (--json keeps the model's numbers)
                 ("TPOT", ONE_TOKEN if one_token(osl) else duration(r["tpot_ms"], "tpot_ms") + inline(r, "tpot_ms")), *beside["tpot"],
                 ("tokens/s per user", ONE_TOKEN if one_token(osl) else f"{r['tok_s_per_user']:.1f}" + inline(r, "tok_s_per_user")),
                 ("output tokens/s per GPU", f"{r['output_tok_s_per_gpu']:.1f}" + inline(r, "output_tok_s_per_gpu")),
                 ("input+output tokens/s per GPU", f"{r['io_tok_s_per_gpu']:.1f}"),
                 *_energy_rows(r),
                 # what sets it (Estimate.batch_limit: the step budget, a cap or the KV cache; newc9 #1: not always memory)
                 ("largest batch", _largest_batch_text(r)),
                 ("memory per GPU", _memory_text(r["memory"], dep.gpu)),
                 ("decode step bound by", _bound_text(r, "decode")), ("prefill bound by", _bound_text(r, "prefill"))):
        t.add_row(k, str(v))
    if "eager_decode" in r:  # a decode batch the CUDA graphs miss runs eagerly: why TPOT jumps, and the capture that avoids it
        t.add_row("CUDA graphs", f"[yellow]{r['eager_decode']['note']}[/yellow]")
    if "spec" in r:
        s = r["spec"]
        t.add_row("speculation", f"{s['method']} k={s['draft_len']}, {r['accepted_per_step']:.2f} tokens/step, "
                  f"speed-up {s['speedup_at_concurrency']:.2f}x here, {s['speedup_at_1']:.2f}x at batch 1")
        if s.get("acceptance_source"):  # no --acceptance given: the published one it used, with its source
            t.add_row("acceptance", f"published: {s['acceptance_source']}")
        t.add_row("speculation stops paying at", str(s["stops_paying_at_concurrency"] or "never within the batch that fits")
                  + spec_losing_text(s.get("losing_loads") or ()))
    if "cost" in r:
        c = r["cost"]
        t.add_row("cost", f"${c['usd_per_m_output_tokens']:.3f} per M output tokens, ${c['usd_per_m_tokens']:.3f} per M tokens "
                  f"in+out (${c['usd_per_gpu_hour']:.2f}/GPU-hour: {c['price_source']})")
    for k, v in _accuracy_rows(r["accuracy"]):
        t.add_row(k, v)
    for note in r["precision_notes"]:
        t.add_row("precision as run", f"[yellow]{note}[/yellow]")
    if "request_cost_note" in r:  # an engine's fitted per-request cost, a material share of TTFT (serve.estimate.request_cost_note)
        t.add_row("fitted request cost", f"[yellow]{r['request_cost_note']}[/yellow]")
    if "rank_skew_note" in r:  # an engine's fitted rank skew, a material share of TTFT (serve.estimate.rank_skew_note)
        t.add_row("fitted rank skew", f"[yellow]{r['rank_skew_note']}[/yellow]")
    if "adp_hold_note" in r:  # a fitted attention-DP hold priced in TTFT, its cause not read (serve.estimate.adp_hold_note)
        t.add_row("fitted attention-DP wait", f"[yellow]{r['adp_hold_note']}[/yellow]")
    for note in scale_block_notes(m, dep.precision):  # lint R4 on the format it runs: a width its scale blocks miss
        t.add_row("shape as run", f"[yellow]{note}[/yellow]")
    if "attention_note" in r:  # lint R4's head size on the engine's attention kernels (spec.engines.head_dims)
        t.add_row("shape as run", f"[yellow]{r['attention_note']}[/yellow]")
    if "offline_note" in r:  # offline: its tok/s/GPU over the batch's life, not a served loop's (serve.estimate.offline_note)
        t.add_row("offline tok/s/GPU", r["offline_note"])
    if "chunking_note" in r:  # SGLang's chunking off: its prefill budget, a prompt past it run whole (serve.estimate.chunking_note)
        t.add_row("chunked prefill", r["chunking_note"])
    if "pipeline_note" in r:  # how one request's chunks cross the PP stages, as priced (serve.estimate.pipeline_note)
        t.add_row("PP prefill", r["pipeline_note"])
    for k, v in basis_rows(r["intervals"], r):
        t.add_row(k, v)
    _console().print(t)
    if breakdown:
        _print_breakdown(r)


def _memory_text(mem: dict, gpu) -> str:
    """estimate's memory row in GiB, the unit nvidia-smi / rocm-smi report the capacity in, the data sheet's GB beside it:
    "85.5 GB usable" beside "80 GB on the data sheet" read as more usable than installed (newc5 #10; H100: 85.5e9 B =
    79.6 GiB, NVIDIA's "80 GB" being GiB). The parts are Memory's bytes (memory_gb: 1e9) converted, so they still sum."""
    from llm_codesign.spec.engines.base import GIB

    g = lambda key: mem[key] * 1e9 / GIB  # noqa: E731
    return (f"weights {g('weights_gb'):.1f} GiB, KV {g('kv_gb'):.1f} GiB"
            + (f", recurrent state {g('state_gb'):.1f} GiB" if mem["state_gb"] else "")
            # the rest of the capacity (Memory.reserve): without it the parts summed to 10% less than the capacity they
            # were stated against
            + f", activations {g('activations_gb'):.1f} GiB"
            + (f", engine reserve {g('reserve_gb'):.1f} GiB" if mem["reserve_gb"] >= 0.05 else "")
            + f", free {g('free_gb'):.1f} of {g('capacity_gb'):.1f} GiB (the capacity nvidia-smi / rocm-smi report; "
              f"{gpu.hbm_bytes / 1e9:.0f} GB on the data sheet)")


def _beside_rows(m, dep, wl, r: dict, *, calibration) -> dict[str, tuple]:
    """Rows estimate prices beside its answer where the default alone misleads (newc5 #5, #18): the closed loop's TTFT
    where the arrival moves it by more than x1.5 (ARRIVAL_NOTE_RATIO), and TensorRT-LLM's TPOT with the padded capture its
    export writes where the default capture leaves the batch eager. Each priced by the same estimate, not guessed."""
    return {"ttft": _closed_loop_row(m, dep, wl, r, calibration=calibration), "tpot": _padded_row(m, dep, wl, r, calibration=calibration)}


# the ratio of TTFTs under the run's arrival and a closed loop above which estimate prices both: "waves" keeps identical
# requests in step, a closed loop with spread lengths (vllm bench serve --max-concurrency) staggers them. A display
# threshold, not a model constant: within x1.5 the two differ by less than TTFT's own 80% band either side (vLLM 70B TP8
# H100, one request: 62.8 ms, 38.5-104 ms, x1.6 / x1.7; measure.intervals)
ARRIVAL_NOTE_RATIO = 1.5


def _closed_loop_row(m, dep, wl, r: dict, *, calibration) -> tuple:
    """("TTFT, closed loop", its TTFT and the first-token part that differs most) where `wl`'s arrival moves TTFT by more
    than ARRIVAL_NOTE_RATIO against a closed loop; () for a closed loop or the offline maximum."""
    from dataclasses import replace

    from llm_codesign.api import estimate as run
    from llm_codesign.render.intervals import duration

    if wl.arrival == "closed_loop" or wl.concurrency is None:
        return ()
    loop = run(m, dep, replace(wl, arrival="closed_loop"), calibration=calibration, breakdown=True).to_dict()
    ratio = r["ttft_ms"] / loop["ttft_ms"]
    if max(ratio, 1.0 / ratio) <= ARRIVAL_NOTE_RATIO:
        return ()
    own = r if r.get("breakdown") else run(m, dep, wl, calibration=calibration, breakdown=True).to_dict()
    parts = lambda x: {o["name"]: o["time_ms"] for o in x["breakdown"] if o["phase"] == "first token"}  # noqa: E731
    a, b = parts(own), parts(loop)
    k = max(set(a) | set(b), key=lambda k: abs(a.get(k, 0.0) - b.get(k, 0.0)))  # why: the part that moves most
    return (("TTFT, closed loop", f"{duration(loop['ttft_ms'])} ({wl.arrival} x{ratio:.2f}; {k.removeprefix('first/')} "
             f"{a.get(k, 0.0):.1f} vs {b.get(k, 0.0):.1f} ms)"),)


def _padded_row(m, dep, wl, r: dict, *, calibration) -> tuple:
    """("TPOT, padded graphs", TPOT with the padded capture TensorRT-LLM's export writes, explore.search.with_capture) where
    the engine's default capture (1-32, 64, 128 unpadded) leaves this batch eager and the user set no capture; ()
    otherwise. The eager launches are priced, not measured (docs/modelling-notes.md#cg128-default-graphs)."""
    from llm_codesign.api import estimate as run
    from llm_codesign.explore.search import with_capture
    from llm_codesign.render.intervals import duration

    # the eager note also stands where the launches hide under the kernels at the priced cost (eagerfix: only the range's
    # upper end shows): nothing to pad away there
    if (dep.engine.name != "trtllm" or "eager_decode" not in r or dep.cuda_graph_max_bs is not None or wl.concurrency is None
            or r["eager_decode"].get("extra_ms_per_step", 0.0) <= 0):
        return ()
    padded = with_capture(dep, wl.concurrency)
    tpot = run(m, padded, wl, calibration=calibration).to_dict()["tpot_ms"]
    return (("TPOT, padded graphs", f"{duration(tpot, 'tpot_ms')} with cuda_graph_config enable_padding: true, max_batch_size "
             f"{padded.cuda_graph_max_bs} (as export writes it; --cuda-graph-max-bs {padded.cuda_graph_max_bs} here)"),)


def _bound_text(r: dict, phase: str) -> str:
    """A "bound by" row: the resource, and where starred (serve.estimate._starred, roofline's `*`) why, with the kernel
    tables the band says are missing where one is (its widening's "no ... kernel table": the rate assumed, not timed).
    newc11 #12: "compute" alone read as "FP4 math would help, HBM would not" for 5.9 FLOP/B against a ridge of 315."""
    bound, why = r[f"{phase}_bound"], (r.get("bound_why") or {}).get(phase)
    if not why:
        return bound
    metric = "tpot_ms" if phase == "decode" else "ttft_ms"
    widened = ((r.get("intervals") or {}).get(metric) or {}).get("widened") or ()
    table = "MoE" if "moe/" in why else "attention" if "core_" in why else "GEMM"  # the starred operator's kernel table
    missing = list(dict.fromkeys(p.strip() for w in widened for p in str(w).split(" (x")[0].split(";")
                                 if "kernel table" in p and f"no {table} " in p))
    return f"{bound} ({why}" + (f"; the rate assumed: {', '.join(missing)})" if missing else ")")


def spec_losing_text(runs) -> str:
    """The loads at which speculation does not pay (SpecPayoff.losing_loads: runs of (first, last)), after the "stops
    paying at" row's first: a CUDA graph one side captures and the other misses can make it lose at one load and pay
    again above (fixA13). The page's twin: app.js specLosingText."""
    if not runs:
        return ""
    shown = [str(a) if a == b else f"{a}-{b}" for a, b in runs[:4]]
    return f" (loses at {', '.join(shown)}{', ...' if len(runs) > 4 else ''})"


def _largest_batch_text(r: dict) -> str:
    """The "largest batch" row: what sets it (max_batch_text), and where requests are past it what the engine does with
    them (over_capacity; the step budget's is the row's own words, so only its outcome is added). The page's twin:
    app.js largestBatchText."""
    if "in_step" in r:  # requests in step past the full context's count: the engine preempts (serve.estimate._in_step, newc11 #7)
        return f"{r['max_batch_text']}[yellow]; {r['in_step']}[/yellow]"
    if "over_capacity" not in r:
        return r["max_batch_text"]
    rest = WAIT_REST if r["max_batch_by"] == "step budget" else f": {r['over_capacity']}"
    return f"[yellow]{r['max_batch_text']}{rest}[/yellow]"


WAIT_REST = "; the rest wait for whole requests to finish (longer TTFT)"


def _concurrency_text(r: dict):
    """The concurrency row: the instance's, and with replicas "64 per replica (128 in all)", as import says it."""
    d = r.get("replicas")
    return f"{r['concurrency']:,} per replica ({d['concurrency']:,} in all)" if d and r["concurrency"] is not None else r["concurrency"]


def _knee_text(r: dict) -> str:
    """The concurrency, offline with the knee it is (serve.estimate.offline_knee): 'batch 1504 (the largest batch is 2453;
    2453 gives +3% at 1.6x the TPOT; ...)', the largest batch being the "largest batch" row's (max_batch)."""
    k = r.get("offline_knee")
    if k is None:
        return str(r["concurrency"])
    if k["max_batch"] == k["batch"]:
        return f"batch {k['batch']} (the most tok/s/GPU)"
    where = f"the largest batch is {k['max_batch']}" if k["at_max_batch"] else f"the most tok/s/GPU at {k['max_batch']}"
    # at OSL 1 no decode step runs (TPOT n/a): the cost of the larger batch is its TTFT
    ratio = f"{k['tpot_ratio']:.1f}x the TPOT" if r.get("tpot_ms") is not None else f"{k['ttft_ratio']:.1f}x the TTFT"
    return (f"batch {k['batch']} ({where}; {k['max_batch']} gives +{k['gain']:.0%} at {ratio}; "
            f"the smallest batch within {k['fraction']:.0%} of the most tok/s/GPU)")


def _replicas_text(d: dict) -> str:
    """The replicas row: 2 x 8 = 16 GPUs, 128 requests in flight (64 each), 10,000 output tok/s in all."""
    return (f"{d['count']} x {d['instance_gpus']} = {d['gpus']} GPUs, {d['concurrency']:,} requests in flight "
            f"({d['concurrency'] // d['count']:,} per instance), {d['output_tok_s']:,.0f} output tok/s in all")


def _print_breakdown(r: dict) -> None:
    """estimate's --breakdown: the decode step's operators (slowest first), then the rest of the step and of TPOT, each row's
    ms in a step of one GPU and its share of TPOT, summing to it; then the first token's parts, summing to TTFT; what each
    part beyond the operators is, beneath (serve.estimate.step_rows: the sums the metrics were made of)."""
    from llm_codesign.render.intervals import one_token, table_time
    from llm_codesign.serve.estimate import decode_rows

    con = _console()
    # one output token: no decode step follows the first token, so TPOT is n/a (as the table says) and has no parts
    dec = [] if one_token(r["osl"]) else decode_rows(r["breakdown"])
    bt = _table("decode: time per step (one GPU) and its share of TPOT", "part:t kind:k ms/step:n ms_of|TPOT:n")
    for o in dec:
        # a part per output token (kind "per token") has no time in a step: its ms/step cell is blank, its TPOT share stands
        bt.add_row(o["name"], o["kind"], "" if o["kind"] == "per token" else f"{o['time_ms']:.3f}", f"{o['tpot_ms']:.3f}")
    bt.add_row("TPOT", "", "", f"{sum(o['tpot_ms'] for o in dec):.3f}", style="bold")
    if dec:
        con.print(bt)
    for o in dec:
        if "what" in o:
            con.print(f"{o['name']}: {o['what']}.", highlight=False)
    first = [o for o in r["breakdown"] if o["phase"] == "first token"]
    ft = _table("first token: its parts", "part:t ms:n")
    # beyond 10 s a time takes its own unit, as the estimate's table writes TTFT (render.intervals.table_time)
    for o in first:
        ft.add_row(o["name"], table_time(o["time_ms"], 3))
    ft.add_row("TTFT", table_time(sum(o["time_ms"] for o in first), 3), style="bold")
    con.print(ft)
    for o in first:
        con.print(f"{o['name']}: {o['what']}.", highlight=False)


def _energy_rows(r: dict) -> list[tuple[str, str]]:
    """estimate's row on output tokens per joule (serve.energy): the GPU alone at the power it is
    modelled to draw, with the node's share where its DGX rating is bundled, and at TDP."""
    p, node = r["power"], r["tokens_per_joule_node"]
    if node is None:  # said, not dropped (newc10 #14): no AMD or PCIe system's maximum input power is bundled
        return [("output tokens/J: GPU, @TDP", f"{r['tokens_per_joule']:.2f} at {p['gpu_w']:.0f} W, {r['tokens_per_joule_at_tdp']:.2f}; "
                 f"+node: none, no {r['gpu']} system rating bundled (DGX only)")]
    return [("output tokens/J: GPU, +node, @TDP",
             f"{r['tokens_per_joule']:.2f} at {p['gpu_w']:.0f} W, {node:.2f}, {r['tokens_per_joule_at_tdp']:.2f}")]


def _accuracy_rows(a: dict) -> list[tuple[str, str]]:
    """estimate's rows on the model's accuracy at this precision (llm_codesign.explore.accuracy_model)."""
    rows = []
    if a["scores"]:
        s = a["scores"][0]
        more = f" (+{len(a['scores']) - 1} more in --json)" if len(a["scores"]) > 1 else ""
        rows.append(("accuracy (published)", f"{s['benchmark']} {s['score']:g}{more}, {s['checkpoint']}"))
    if a["relative_drop_pct"] is not None:
        rows.append((f"accuracy drop vs {a['reference_precision']} ({a['drop_source']})",
                     f"{a['relative_drop_pct']:.2f}% ± {a['drop_uncertainty_pct']:.2f}%"))
    out = ", outside the published envelope" if "envelope" in a else ""
    rows.append(("accuracy proxy loss", f"{a['proxy_loss']:.4f} ± {a['proxy_loss_uncertainty']:.4f} nats/token (proxy{out})"))
    if out:
        rows.append(("accuracy envelope", f"[yellow]{a['envelope_note']}[/yellow]"))
    if a.get("note"):
        rows.append(("accuracy note", f"[yellow]{a['note']}[/yellow]"))
    return rows


def _pareto_runs(model_refs, gpu_refs, *, space: dict, limits: dict, workload, engines: dict, calibration, disagg: bool,
                 gpu_hour_price) -> tuple[list, Callable[[], dict]]:
    """Every model on every GPU: llm_codesign.pareto over SearchSpace.build(**space) (and the
    disaggregated search over the same space with `disagg`), priced per GPU hour where asked, and a
    function giving each frontier point's per-operator breakdown keyed 'result:point' (the report's:
    priced when it is written, after the figure's process has its job). `limits`: max_num_tokens and
    the SLO filters (and max_accuracy_drop, the aggregated search's alone). `engines`: each GPU's engine (by its
    reference), resolved once at the edge."""
    from dataclasses import replace

    from llm_codesign.api import pareto as run
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.frontier import model_reference
    from llm_codesign.explore.search import point_breakdowns

    isl, osl = workload.isl, workload.osl
    results, pending = [], []  # pending: (result index, its breakdowns' pricing)
    prog, cb = _progress()
    if prog:
        prog.start()
    try:
        for mref in model_refs:
            m = _model(mref)
            for gref in gpu_refs:
                g = _gpu(gref)
                cal, engine = calibration_for(g, calibration), engines[gref]
                # the profile by name, so that its points' intervals are the profile's own (measure.intervals.table_for)
                r = run(m, g, workload=workload, engine=engine.name, calibration=calibration, progress=cb, **space, **limits).priced(gpu_hour_price)
                r = replace(r, model_ref=model_reference(mref, m))  # the path typed, which its commands name (crev10 #3)
                # at the frontier's own workload, its prefix hits with it (as its points and their energy were priced)
                pending.append((len(results), lambda m=m, cal=cal, r=r: point_breakdowns(
                    m, cal, [(p.deployment, p.concurrency) for p in r.points], r.workload)))
                results.append(r)
                if disagg:  # the same space's disaggregated frontier, as llm_codesign.pareto(disagg=True) searches it
                    from llm_codesign.explore.disagg_search import decode_breakdown

                    rd = run(m, g, workload=workload, engine=engine.name, calibration=calibration, disagg=True, **space,
                             **{k: v for k, v in limits.items() if k != "max_accuracy_drop"}).priced(gpu_hour_price)
                    rd = replace(rd, model_ref=model_reference(mref, m))
                    pending.append((len(results), lambda m=m, cal=cal, rd=rd: [
                        decode_breakdown(m, cal, p, isl=isl, osl=osl) for p in rd.points]))
                    results.append(rd)
    finally:
        if prog:
            prog.stop()

    def breakdowns() -> dict:
        return {f"{i}:{j}": rows for i, price in pending for j, rows in enumerate(price())}

    return results, breakdowns


@app.command()
def pareto(
    model: Optional[str] = typer.Argument(None, help=f"Model(s), comma-separated to compare (default {DEFAULT_MODEL}, said on the first line)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help=f"GPU id(s), comma-separated to compare (default {DEFAULT_GPU}, said on the first line)."),
    gpus_: str = typer.Option("8", "--gpus", help="GPUs (replicas of smaller instances fill them), or a range of instance sizes, e.g. 8-72."),
    tp: Optional[int] = O_TP, pp: Optional[int] = O_PP, ep: Optional[int] = O_EP, moe_tp: Optional[int] = O_MTP,
    attention_dp: Optional[int] = O_ADP, kvp: Optional[int] = O_KVP,
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    isl: int = O_ISL, osl: int = O_OSL, backend: Optional[str] = O_BACKEND,
    spec: Optional[str] = O_SPEC, draft_len: Optional[int] = typer.Option(None, "--draft-len", min=1, max=16, help="Fix k (default: sweep 1..5)."),
    acceptance: Optional[float] = typer.Option(None, "--acceptance", help="Mean accepted tokens per step (1..k+1) at --draft-len (default "
                                               "3); the other draft lengths searched take its flat rate per position (--acceptance-rates "
                                               "gives each position its own)."),
    acceptance_rates: Optional[str] = O_RATES, draft_model: Optional[str] = O_DRAFT,
    max_num_tokens: Optional[int] = O_MNT,
    max_num_tokens_grid: Optional[str] = typer.Option(None, "--max-num-tokens-grid",
                                                      help="Search the step token budget too: comma-separated budgets, or auto (1024-16384)."),
    min_tps_user: Optional[float] = typer.Option(None, "--min-tps-user", help="SLO: minimum tokens/s per user."),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", help="SLO: maximum TTFT in ms."),
    max_accuracy_drop: Optional[float] = typer.Option(None, "--max-accuracy-drop",
                                                      help="Keep precisions within this accuracy drop (percent) of the model's best precision "
                                                           "(published pairs, else the proxy; unknown drops are left out)."),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for frontier.csv, frontier.png, report.html and frontier.json (--json's "
                                      "answer, which export-point reads; created if missing)."),
    csv_path: Optional[str] = typer.Option(None, "--csv", help="The frontier's points as CSV, with each metric's 80% interval."), plot_path: Optional[str] = typer.Option(None, "--plot", help=".png or .svg"),
    html_path: Optional[str] = typer.Option(None, "--html", help="A self-contained HTML report: the figure, the points, each point's operators."),
    disagg: bool = typer.Option(False, "--disagg", help="Also the disaggregated frontier (prefill and decode instances)."),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
    gpu_hour_price: Optional[str] = typer.Option(None, "--gpu-hour-price", help=O_PRICE_HELP),
    prefix_hit: float = O_PREFIX, arrival: str = O_ARRIVAL,
):
    """Throughput-vs-interactivity Pareto frontier over every valid deployment."""
    from pathlib import Path

    from llm_codesign.explore.search import budget_grid
    from llm_codesign.outputs import check_writable, write_all
    from llm_codesign.render.plot import PlotProcess
    from llm_codesign.render.report import plot_extra, write_csv, write_html, write_plot
    from llm_codesign.spec.plan import Workload

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
    if max_num_tokens is not None and max_num_tokens < 1:
        raise InputError("max_num_tokens", max_num_tokens, "a positive integer")
    # a comma separates models to compare, unless the whole argument is a path (a folder may hold a comma)
    if max_accuracy_drop is not None and not (max_accuracy_drop >= 0 and max_accuracy_drop < float("inf")):
        raise InputError("max_accuracy_drop", max_accuracy_drop, "a finite percentage >= 0")
    # a repeat once, by what it names (compare.unique_refs): "qwen3-0.6b,Qwen/Qwen3-0.6B" and "h100,H100" are searched once
    from llm_codesign.cli.compare import unique_refs

    (model, model_note), (gpu, gpu_note) = defaulted(model, "MODEL", DEFAULT_MODEL), defaulted(gpu, "--gpu", DEFAULT_GPU)
    model_refs = [model] if Path(model).exists() else unique_refs((m for m in model.split(",") if m.strip()), _model)
    gpu_refs = [gpu] if Path(gpu).is_file() else unique_refs((g for g in gpu.split(",") if g.strip()), _gpu)
    if not model_refs:
        raise InputError("model", model, "a model, or models separated by commas")
    if not gpu_refs:
        raise InputError("gpu", gpu, "a GPU id (see `llm-codesign gpus`), or ids separated by commas")
    if isl < 1 or osl < 1:
        raise InputError("isl/osl", (isl, osl), "positive token counts")
    from llm_codesign.explore.search import refuse_without_decode

    refuse_without_decode(osl, frontier=True)  # before any output is checked or search run, as lc.pareto refuses it
    # the checks estimate's workload gets (prefix_hit in [0, 1), arrival one of spec.harness.ARRIVALS)
    workload = Workload(isl=isl, osl=osl, prefix_hit=prefix_hit, arrival=arrival)
    if prefix_hit and disagg:
        raise InputError("prefix_hit", prefix_hit, "0 with --disagg (the disaggregated search prices no prefix cache)")
    if arrival != DEFAULT_ARRIVAL and disagg:
        raise InputError("arrival", arrival, f"{DEFAULT_ARRIVAL} with --disagg (the disaggregated search prices its pools at it)")
    if max_num_tokens_grid and disagg:
        raise InputError("max_num_tokens_grid", max_num_tokens_grid,
                         "unset with --disagg (the disaggregated search prices one step budget: --max-num-tokens)")
    # a published acceptance is the default for one model's search (spec.plan.published_acceptance); several name theirs
    sd = _spec(spec, draft_len, acceptance, acceptance_rates, draft_model, model=_model(model_refs[0]) if len(model_refs) == 1 else None)
    # the search space's options, as llm_codesign.pareto and the page give them (SearchSpace.build)
    space = dict(num_gpus=n_gpus, instance_gpus=inst, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp,
                 weight_dtype=weight_dtype, activation_dtype=activation_dtype, kv_dtype=kv_dtype, spec=sd, draft_len=draft_len,
                 step_tokens=budget_grid(max_num_tokens_grid, max_num_tokens))
    paths = {"csv": csv_path, "plot": plot_path, "html": html_path}
    if out is not None:  # its folders are created only when the results are written (write_all); "" refused there
        check_writable("out", out, folder=True)
        paths = {"csv": csv_path or str(Path(out) / "frontier.csv"), "plot": plot_path or str(Path(out) / "frontier.png"),
                 "html": html_path or str(Path(out) / "report.html"),
                 # --json's answer beside them: export-point reads it, the CSV holds no record of a point (newc10 #12)
                 "json": str(Path(out) / "frontier.json")}
    if paths["plot"] and not paths["plot"].endswith((".png", ".svg")):
        raise InputError("plot", paths["plot"], "a .png or .svg path")
    for key, p in paths.items():  # every output checked before the search, not after
        if p is not None:
            check_writable(key, p)
    given = {"csv": csv_path, "plot": plot_path, "html": html_path, "json": None}  # a path --out chose is --out's
    check_paths([(f"--{k}" if given[k] else "--out", p) for k, p in paths.items()],
                {"MODEL": model_refs, "--gpu": gpu_refs, "--calibration": calibration, "--gpu-hour-price": gpu_hour_price})
    check_search_size(gpus_, inst or None, n_gpus, fixed=sum(x is not None for x in (tp, pp, attention_dp, kvp)),
                      free_ep=ep is None and moe_tp is None)
    # each GPU's engine resolved once, here at the edge: an engine a GPU does not run refused before any search
    engines = {gref: engine_for(_gpu(gref), backend) for gref in gpu_refs}
    if paths["plot"]:
        plot_extra(paths["plot"])  # refused before the search, not after it
    # the figure's own process imports matplotlib on another core while the search runs (render.plot)
    plotter = PlotProcess.started() if paths["plot"] else None
    try:
        limits = dict(max_num_tokens=max_num_tokens, min_tps_user=min_tps_user, max_ttft_ms=max_ttft_ms, max_accuracy_drop=max_accuracy_drop)
        results, breakdowns = _pareto_runs(model_refs, gpu_refs, space=space, limits=limits, workload=workload, engines=engines,
                                           calibration=calibration, disagg=disagg, gpu_hour_price=gpu_hour_price)
        # what --json prints (with the profile it was priced with, for export-point to record) and the tables show
        slim = _numbered([r.to_dict() for r in results])
        if not any(r.points for r in results):  # nothing to show: one line naming what to change, nothing written
            raise nothing_found(slim, gpus_, {"min_tps_user": min_tps_user, "max_ttft_ms": max_ttft_ms})
        jobs = []  # all of them written, or none; the figure first, so that its process draws while the rest is written
        if paths["plot"]:
            jobs.append((lambda p: write_plot(results, p, process=plotter), paths["plot"]))
        if paths["csv"]:
            jobs.append((lambda p: write_csv(results, p), paths["csv"]))
        if paths["html"]:
            jobs.append((lambda p: write_html(results, breakdowns(), p, profile=calibration), paths["html"]))
        doc = slim[0] if len(slim) == 1 else {"comparisons": slim, "evaluated": sum(r["evaluated"] for r in slim),
                                              "seconds": sum(r["seconds"] for r in slim), "frontier": [p for r in slim for p in r["frontier"]]}
        if paths.get("json"):
            jobs.append((lambda p: Path(p).write_text(json.dumps(doc, indent=2, default=float, allow_nan=False) + "\n"), paths["json"]))
        con, tables = None if as_json else _console(), None

        def render_tables():
            # while the figure's process draws (rich's import and layout are a tenth of a second each),
            # printed once every file is in place: on an error nothing but its line is printed
            nonlocal tables
            if con is not None:
                with con.capture() as tables:
                    _print_frontiers(con, slim, isl=isl, osl=osl, prefix_hit=prefix_hit, names={(g := _gpu(r)).id: g.name for r in gpu_refs})

        write_all(jobs, meanwhile=render_tables)
    finally:
        if plotter is not None:
            plotter.close()
    say_notes(model_note, gpu_note)  # once nothing is left to refuse
    if as_json:
        return _dump(doc)
    con.file.write(tables.get())
    if note := acceptance_note(sd, draft_len):
        con.print(note, highlight=False)
    for key, p in paths.items():
        if p:
            con.print(f"wrote {key}: {p}")


def acceptance_note(sd, draft_len: int | None) -> str | None:
    """How the acceptance given was carried to each draft length searched (SpecDecoding.at: a mean at one k read as a flat
    rate per position, rates past the last given held at it), said where the search ran other lengths than it was
    given for: --acceptance 2.6 at k=3 is 0.717 a position, 3.05 tokens a step at k=5, which the frontier's "k=5" hid
    (newc4 #7). Acceptance usually falls with position, so a flat rate flatters the longer drafts."""
    from llm_codesign.explore.search import DRAFT_LENGTHS

    src = f"speculation: acceptance not given, so the published one: {sd.source}" if sd is not None and sd.source else None
    if sd is None or draft_len:
        return src
    per_k = ", ".join(f"k={k} {float(sd.accepted(k)):.2f}" for k in DRAFT_LENGTHS)
    if sd.mean_accepted is None and len(sd.rates) >= max(DRAFT_LENGTHS):  # a rate for every position searched
        return src and f"{src}; tokens a step {per_k}"
    rate = float(sd.rates[-1]) if sd.rates else float(sd._rates()[0])
    read = (f"--acceptance {sd.mean_accepted:g} read as the mean at k={sd.k}, a flat {rate:.3f} a position" if sd.mean_accepted is not None
            else f"--acceptance-rates past position {len(sd.rates)} held at its last, {rate:.3f}")
    return (f"{src + '. ' if src else ''}speculation: {read}; tokens a step {per_k}. Acceptance usually falls with position: --acceptance-rates r1,...,r5 "
            "(or --draft-len to search one length) prices each position as measured.")


def _frontier_band(fr: list[dict]) -> str:
    """The 80% interval of tok/s/GPU at a frontier's two ends, each with its centre where the prediction lies
    outside it (render.intervals), and every reason the points' intervals were widened."""
    from llm_codesign.render.intervals import CENTRE, capped_footnote, frontier_reasons, off_centre

    (lo, lo_c), (hi, hi_c) = ((b, f" (centred on {b['centre']:.0f})" if off_centre(b, p["output_tok_s_per_gpu"]) else "")
                              for p in (fr[-1], fr[0]) for b in (p["intervals"]["output_tok_s_per_gpu"],))
    why = frontier_reasons(fr)
    # the two ends' bounds printed here that stop at the ideal step, as estimate's "bounds capped" row says them
    caps = capped_footnote([("the interactive end", fr[-1]["intervals"]), ("the throughput end", fr[0]["intervals"])],
                           ("output_tok_s_per_gpu",))
    return (f"80% interval of tok/s/GPU: {lo['lo80']:.0f}-{lo['hi80']:.0f}{lo_c} at the interactive end, {hi['lo80']:.0f}-"
            f"{hi['hi80']:.0f}{hi_c} at the throughput end (every point's, on every metric, in --json)"
            + "".join(f"; {x}" for x in (*_profile_bands(fr), *why)) + (f"; {CENTRE}" if lo_c or hi_c else "")
            + (f"; {caps.removesuffix('.')}" if caps else ""))


def _profile_bands(fr: list[dict]) -> list[str]:
    """Whose runs a frontier priced with --calibration takes its bands from, as estimate's interval basis says it
    (measure.intervals: "the bundled profile's (not P's: WHY) N serving runs ..." or "P's own N ..."): a pareto with a
    profile too small for bands of its own read as if its bands were the profile's."""
    import re

    said = []
    for src in dict.fromkeys(p["intervals"]["output_tok_s_per_gpu"].get("source", "") for p in fr):
        if m := re.match(r"the bundled profile's \(not (.+?)'s: (.+)\) [\d,]+ ", src):
            said.append(f"bands from the bundled profile's runs (not {m[1]}'s: {m[2]})")
        elif m := re.match(r"(.+?)'s own [\d,]+ ", src):
            said.append(f"bands from {m[1]}'s own runs")
    return list(dict.fromkeys(said))


# pareto's table's values, each to its digits
_FRONTIER_VALUES = (("tok_s_per_user", 1), ("output_tok_s_per_gpu", 0), ("ttft_ms", 0), ("tpot_ms", 2))


def _numbered(results: list[dict]) -> list[dict]:
    """`results` with each point's `index` counted as export-point counts it (--series, --index): over its series' frontiers
    in the JSON's order (several GPUs' or models'), where each Frontier.to_dict counts its own (crev11 #9)."""
    seen = {"aggregated": 0, "disagg": 0}
    for r in results:
        series = "disagg" if r.get("mode") == "disaggregated" else "aggregated"
        for p in r["frontier"]:
            p |= {"series": series, "index": seen[series]}
            seen[series] += 1
    return results


def _print_frontiers(con, results: list[dict], *, isl: int, osl: int, prefix_hit: float, names: dict[str, str]) -> None:
    """Each search's frontier as a table (every point's in --json), its cost line, or why it is empty; `names`: each GPU's
    name by id, as estimate's title names it ("H200 SXM")."""
    from llm_codesign.render.intervals import arrival_footer, unpredictable, unpredictable_footnote

    if any(r.get("mode") == "disaggregated" for r in results):  # its table starts ~40 lines down (newc5 #21): said at the top
        con.print("--disagg: each aggregated frontier below is followed by its disaggregated one (prefill and decode "
                  "instances), further down", highlight=False)
    for r in results:
        mode = " disaggregated" if r.get("mode") == "disaggregated" else ""
        hit = f", {prefix_hit:.0%} prefix-cache hits" if r.get("prefix_hit") else ""
        fr = r["frontier"]
        # about 24 rows, evenly spaced, and always both ends (the throughput end and the interactive end)
        shown = fr[::max(1, len(fr) // 24)]
        shown += fr[len(fr) - 1:] if fr and shown[-1] is not fr[-1] else []
        # a value whose 95% interval spans more than x20 marked, as estimate says "not predictable here" (the footnote says it)
        rows = [(*(f"{p[k]:.{n}f}{unpredictable((p.get('intervals') or {}).get(k))}" for k, n in _FRONTIER_VALUES),
                 d["plan"], str(d["replicas"]), str(d["concurrency_per_instance"]), f"{d['weight_dtype']}/{d['kv_dtype']}",
                 f"{d['spec']} k={d['draft_len']}" if d["spec"] else "-", drop_text(p.get("accuracy")),
                 str(d["instance_gpus"] * d["replicas"]))
                for p in shown for d in (p["deployment"],)]
        columns = "tok/s/user:n tok/s/GPU:n TTFT:n TPOT:n plan:t x:n batch:n W/KV:k spec:k drop:k GPUs:n".split()
        # the precision, speculation and accuracy columns where they differ between points; where every
        # point shares one, it is said once beneath (a frontier of one precision fits 80 columns so)
        shared = [i for i in (7, 8, 9) if len(rows) > 1 and len({row[i] for row in rows}) == 1]
        # a range of GPUs (--gpus 8-16): each point's own count beside its plan, what its tok/s/GPU divides by (newc6 #20)
        ranged = bool(r.get("min_gpus"))
        keep = [i for i in (0, 1, 2, 3, 4, *((10,) if ranged else ()), 5, 6, 7, 8, 9) if i not in shared]
        notes = {7: "W/KV: weight / KV-cache precision.",
                 9: "drop: accuracy against the model's best precision, published or the proxy's (± 1 sigma); n/a: neither."}
        # the search's size on a line of its own, as design's title (a fold broke a figure from its unit)
        gpus = f"{r['min_gpus']}-{r['num_gpus']}" if ranged else f"{r['num_gpus']}"
        t = _table(f"Pareto frontier{mode}: {r['model']} on {gpus}x {names[r['gpu']]}, {get_engine(r['backend']).priced_as}, ISL/OSL {isl}/{osl}{hit}\n"
                   f"({r['evaluated']:,} deployments in {r['seconds']:.2f} s)", " ".join(columns[i] for i in keep))
        for row in rows:
            t.add_row(*(row[i] for i in keep))
        con.print(t)
        if len(rows) < len(fr):
            con.print(f"{len(rows)} of {len(fr)} frontier points shown; --json or --csv for all", highlight=False)
        if rows:  # the key to the columns (an empty frontier says why below)
            gpus_key = ["GPUs: the point's, x times the plan's (tok/s/GPU divides by them)."] if ranged else []
            con.print(" ".join(["TTFT, TPOT: ms. x: instances of the plan.", *gpus_key, "batch: requests per instance.",
                                *(notes[i] for i in (7, 9) if i in keep)]), highlight=False)
            con.print(arrival_footer(r.get("arrival", DEFAULT_ARRIVAL)), highlight=False)  # the arrival its TTFT turns on (--arrival)
            if line := unpredictable_footnote([p.get("intervals") for p in shown], [k for k, _ in _FRONTIER_VALUES]):
                con.print(line, highlight=False)
            con.print(DISAGG_GRAPHS_NOTE if r.get("mode") == "disaggregated" else GRAPHS_NOTE, highlight=False)
        if shared:
            # a shared drop of "best" reads "drop none (the model's best precision)", not "drop best"
            said = {"-": "none", "best": "none (the model's best precision)", "n/a": f"n/a ({NO_ACCURACY})"}
            con.print("every point: " + ", ".join(f"{columns[i].split(':')[0]} {said.get(rows[0][i], rows[0][i])}" for i in shared),
                      highlight=False)
        _print_frontier_footers(con, fr)
        for line in r.get("not_searched", ()):  # a default format left out: its accuracy is unmeasured (search.not_searched)
            con.print(f"note: {line}", highlight=False)
        if not fr:  # one comparison of several is empty (all of them empty is refused above)
            con.print("[yellow]no deployment meets the SLO filters[/yellow]" if r.get("fitting") else
                      f"[yellow]no deployment of {r['model']} fits on {r['num_gpus']}x {r['gpu']}: weights and KV cache exceed the "
                      "memory of every plan; give more GPUs (--gpus) or a smaller precision (--weight-dtype)[/yellow]")


def _print_frontier_footers(con, fr: list[dict]) -> None:
    """A frontier's accuracy, precision, cost, energy and interval lines beneath its table, each where the search priced it."""
    sources = {f"{p['deployment']['weight_dtype']}/{p['deployment']['kv_dtype']}": p.get("accuracy") or {} for p in fr}
    for prec, acc in sources.items():
        con.print(f"accuracy at {prec}: {accuracy_said(acc)}", highlight=False)
    for note in dict.fromkeys(n for p in fr for n in p.get("precision_notes", ())):  # a format priced as another, as estimate says it
        con.print(f"[yellow]precision as run: {note}[/yellow]", highlight=False)
    if fr and "cost" in fr[0]:
        usd = [p["cost"]["usd_per_m_output_tokens"] for p in fr]
        c = fr[0]["cost"]
        con.print(f"cost at ${c['usd_per_gpu_hour']:.2f}/GPU-hour ({c['price_source']}): ${min(usd):.3f} per M output tokens "
                  f"at the throughput end to ${max(usd):.3f} at the interactive end (every point's in --json)")
    if fr and "energy" in fr[0]:  # serve.energy: the power each point's GPUs are modelled to draw
        e = [p["energy"] for p in fr]
        node = f"; with the node's share {e[0]['tokens_per_joule_node']:.2f} to {e[-1]['tokens_per_joule_node']:.2f}" \
            if e[0]["tokens_per_joule_node"] is not None else ""
        con.print(f"output tokens per joule, GPU alone: {e[0]['tokens_per_joule']:.2f} at the throughput end to "
                  f"{e[-1]['tokens_per_joule']:.2f} at the interactive end{node} (every point's in --json)", highlight=False)
    if fr and "intervals" in fr[0]:  # how far to trust the frontier (measure.intervals), its two ends
        con.print(_frontier_band(fr), highlight=False)


# registered after the commands above, so `--help` lists them in workflow order
from llm_codesign.cli import accuracy, compare, design  # noqa: E402, F401, I001
from llm_codesign.cli import disagg as disagg_command  # noqa: E402, F401, I001 (pareto has a --disagg flag)
from llm_codesign.cli import export, lengths, serve, sweep  # noqa: E402, F401, I001


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


