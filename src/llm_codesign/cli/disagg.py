"""The `disagg` command: one disaggregated deployment (prefill and decode instances) over a range of
concurrencies."""
from __future__ import annotations

from typing import Optional

import typer

from llm_codesign.cli.common import (
    MAX_CONCURRENCY,
    MAX_STEP_TOKENS,
    O_A,
    O_ACC,
    O_BACKEND,
    O_CAL,
    O_DRAFT,
    O_GPU,
    O_ISL,
    O_K,
    O_KV,
    O_MNT,
    O_OSL,
    O_RATES,
    O_SPEC,
    O_W,
    _console,
    _dump,
    _gpu,
    _int_list,
    _model,
    _precision,
    _spec,
    _table,
    app,
)
from llm_codesign.errors import InputError
from llm_codesign.spec.harness import DEFAULT_ARRIVAL, MAX_RECV_INTERVAL


def _measured() -> str:
    """The bundled profile's error on the shipped disaggregated runs (data/calibration/accuracy.toml), as the page says it
    too (measure.accuracy.disagg_measured); a profile of one's own has its own (`validate --calibration`)."""
    from llm_codesign.measure.accuracy import disagg_measured

    said = disagg_measured()
    return f" {said}" if said else ""


@app.command()
def disagg(
    model: str = typer.Argument(..., help="Registry name, Hugging Face id or config.json path."),
    gpu: str = O_GPU,
    decode_gpu: Optional[str] = typer.Option(None, "--decode-gpu", help="The decode instances' GPU where it differs from --gpu "
                                             "(the prefill instances'), the same vendor's (one engine build runs both pools); the KV cache then crosses the NICs."),
    prefill: str = typer.Option(..., "--prefill", help="Prefill instance plan, e.g. tp=4 or tp=8,ep=8."),
    decode: str = typer.Option(..., "--decode", help="Decode instance plan, e.g. tp=8 or attention_dp=8,ep=8."),
    prefill_instances: int = typer.Option(1, "--prefill-instances", min=1, max=1 << 16, help="Prefill instances of the --prefill plan."),
    decode_instances: int = typer.Option(1, "--decode-instances", min=1, max=1 << 16, help="Decode instances of the --decode plan."),
    concurrency: str = typer.Option("1,8,32,128,512", "--concurrency", help="Requests in flight, a comma list."),
    isl: int = O_ISL, osl: int = O_OSL, weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A,
    kv_dtype: Optional[str] = O_KV, backend: Optional[str] = O_BACKEND, spec: Optional[str] = O_SPEC, draft_len: Optional[int] = O_K,
    acceptance: Optional[float] = O_ACC, acceptance_rates: Optional[str] = O_RATES, draft_model: Optional[str] = O_DRAFT,
    max_num_tokens: Optional[int] = O_MNT,
    decode_max_num_tokens: Optional[int] = typer.Option(None, "--decode-max-num-tokens", min=1, max=MAX_STEP_TOKENS,
                                                        help="The decode instances' token budget per step where it differs "
                                                        "from --max-num-tokens (recipes set the prefill's chunk alone)."),
    decode_max_batch: Optional[int] = typer.Option(None, "--decode-max-batch", min=1, max=MAX_CONCURRENCY, help="The decode instances' max batch per attention-DP "
                                                   "rank (the engine's max_batch_size); requests past it wait for a decode slot. "
                                                   "Default: only the KV cache limits it."),
    decode_cuda_graph_max_bs: Optional[int] = typer.Option(None, "--decode-cuda-graph-max-bs", min=0, max=MAX_CONCURRENCY,
                                                           help="The decode instances' CUDA graphs: padded up to this batch per "
                                                           "rank (0: off). Default: the engine's own capture; a batch above it "
                                                           "decodes without graphs."),
    decode_compilation_config: Optional[str] = typer.Option(
        None, "--decode-compilation-config", "--decode-cc", help="vLLM's --compilation-config of the decode workers, as JSON: its "
        "cudagraph_mode, read as import reads a vLLM launch (PIECEWISE: each layer's attention ops launched from the host between "
        "the graph pieces; NONE: graphs off; the FULL modes one full decode graph, the default). Default: vLLM's own."),
    decode_optimization_level: Optional[int] = typer.Option(
        None, "--decode-optimization-level", "--decode-O", min=0, max=3, help="vLLM's -O level of the decode workers: the "
        "cudagraph_mode it sets where --decode-compilation-config sets none (-O0 none, -O1 PIECEWISE, -O2 / -O3 FULL_AND_PIECEWISE)."),
    arrival: str = typer.Option(DEFAULT_ARRIVAL, "--arrival", help="How requests arrive: waves (identical requests kept in step, as a "
                                "fixed-length benchmark runs them) and closed_loop (a slot refilled as its request ends, lengths "
                                "spread) price alike here, the prefill pool's queue at the other requests' rate; burst: all sent "
                                "together, in lockstep waves."),
    prefill_routing: Optional[str] = typer.Option(None, "--prefill-routing", help="How a prefill instance under attention DP "
                                                  "spreads requests over its ranks: balanced (TensorRT-LLM; SGLang 0.5.12+'s "
                                                  "--load-balance-method round_robin) or random (SGLang's bootstrap room, which "
                                                  "0.5.8-0.5.9 use even under round_robin). Default: the engine's."),
    decode_recv_interval: int = typer.Option(1, "--decode-recv-interval", min=1, max=MAX_RECV_INTERVAL,
                                             help="Decode iterations between the decode workers' polls for new requests "
                                             "(SGLang only: --scheduler-recv-interval on the decode servers, which SGLang refuses "
                                             "under attention DP): a request waits for the next poll before its cache is "
                                             "pre-allocated and its prefill may start."),
    decode_moe_a2a: Optional[str] = typer.Option(None, "--decode-moe-a2a", show_default=False, help="The decode servers' MoE token exchange: "
                                       "deepep_low_latency (SGLang's --moe-a2a-backend deepep --deepep-mode low_latency, as "
                                       "the wide-EP decode recipes run it: each token's expert copies sent to their ranks "
                                       "in place of the all-gather and reduce-scatter of every rank's tokens; SGLang only, "
                                       "on a decode pool with attention DP and EP > 1). Default: the engine's own."),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
):
    """Disaggregated serving: prefill instances hand each prompt's KV cache to decode instances."""
    from llm_codesign.explore.disagg_search import price_pools

    m, g = _model(model), _gpu(gpu)
    dg = _gpu(decode_gpu) if decode_gpu else g
    conc = _int_list("concurrency", concurrency)
    decode_cuda_graph_max_bs, piecewise = _decode_mode(decode_compilation_config, decode_optimization_level, decode_cuda_graph_max_bs,
                                                       engine=(g, dg, backend))
    # the pools built and priced as lc.disagg and the page price them (explore.disagg_search.price_pools)
    answer = price_pools(m, g, prefill=prefill, decode=decode, decode_gpu=dg, precision=_precision(m, weight_dtype, activation_dtype, kv_dtype, g),
                         engine=backend, spec=_spec(spec, draft_len, acceptance, acceptance_rates, draft_model, model=m), max_num_tokens=max_num_tokens,
                         decode_max_num_tokens=decode_max_num_tokens, prefill_instances=prefill_instances, decode_instances=decode_instances,
                         concurrencies=conc, isl=isl, osl=osl, decode_max_batch=decode_max_batch, arrival=arrival,
                         prefill_routing=prefill_routing, decode_recv_interval=decode_recv_interval,
                         decode_moe_a2a=decode_moe_a2a or "", calibration=calibration, decode_cuda_graph_max_bs=decode_cuda_graph_max_bs,
                         decode_piecewise_graphs=piecewise)
    r = answer.to_dict()
    if as_json:
        return _dump(r)
    p, d = r["prefill"], r["decode"]
    from llm_codesign.render.intervals import DASH, NO_DECODE, one_token

    one = one_token(osl)  # one output token: no decode step, its TPOT and tok/s/user null (serve.metrics.without_decode)
    where = f"{r['num_gpus']}x {g.name}" if dg.id == g.id else f"{r['num_gpus']} GPUs (prefill on {g.name}, decode on {dg.name})"
    t = _table(f"{m.name} on {where}, {r['precision']}, {r['backend']}, ISL/OSL {isl}/{osl}: "
               f"prefill {p['instances']}x {p['plan']} ({p['capacity_req_s']:.2f} req/s), decode {d['instances']}x {d['plan']}"
               + (f" (max batch {d['max_batch']} per rank)" if "max_batch" in d else ""),
               "requests:n TTFT:n prefill:n KV|move:n queue:n slot|wait:n TPOT:n tok/s|/user:n tok/s|/GPU:n fits:k",
               "Times in ms (from 10 s in s or h): TTFT = queue (for the running prefill step and a prefill instance) + prefill + "
               "KV hand-off (the transfer and the decode worker's admission: at its step boundaries, or as the cache arrives where "
               "it pre-allocated it, SGLang's) + slot wait (for a decode slot, past what the decode pool holds) + the engine's "
               f"request overhead. fits: the decode pool holds every request at once ({d['max_concurrency']}). "
               f"req/s: {p['capacity_note']}."
               + (f" TPOT, tok/s/user: {NO_DECODE}." if one else "") + ("" if calibration else _measured()))
    from llm_codesign.render.intervals import table_time

    for row in r["rows"]:  # times past 10 s in s or h, as estimate's (render.intervals.table_time; the page's the same rule)
        t.add_row(str(row["concurrency"]), table_time(row["ttft_ms"]), table_time(row["prefill_ms"]), table_time(row["kv_transfer_ms"], 2),
                  table_time(row["prefill_wait_ms"]), table_time(row["decode_slot_wait_ms"]),
                  DASH if one else table_time(row["tpot_ms"], 2), DASH if one else f"{row['tok_s_per_user']:.1f}",
                  f"{row['output_tok_s_per_gpu']:.1f}", "yes" if row["fits"] else "no")
    _console().print(t)
    # the notes: where rows do not fit, the limit once and the loads it turns away (serve.disagg._slot_note), then what was
    # asked and changed nothing; the page shows the same lines
    for note in r["notes"]:  # a decode batch the workers' CUDA graphs miss runs eagerly: serve.disagg._eager_note's line, in yellow
        lit = note.startswith(("CUDA graphs: ", "Piecewise CUDA graphs: "))
        _console().print(f"[yellow]{note}[/yellow]" if lit else note, highlight=False, markup=lit)
    from llm_codesign.render.intervals import (
        CENTRE,
        basis_rows,
        duration,
        interval_text,
        off_centre,
        said_across,
        said_once,
        uninformative,
    )

    for row in r["rows"]:
        # a widened band says where its widening is named (beyond the runs, below), not "no measured run like it" above
        # the runs it is drawn from
        # one with no interval (render.intervals.no_interval) after its value, which the table holds but the line then reads alone
        b = {m: (f"{duration(row[m], m)}; " if uninformative(row["intervals"][m]) else "")
             + interval_text(row["intervals"][m], m, row[m], reasons_below=True) for m in ("ttft_ms", "tpot_ms") if m in row["intervals"]}
        _console().print(f"{row['concurrency']} request{'s' if row['concurrency'] != 1 else ''}: TTFT {b['ttft_ms']}"
                         + (f"; TPOT {b['tpot_ms']}" if "tpot_ms" in b else ""), highlight=False)
    if any(off_centre(row["intervals"][m], row[m]) for row in r["rows"] for m in ("ttft_ms", "tpot_ms") if m in row["intervals"]):
        _console().print(f"centred on: {CENTRE}", highlight=False)
    # each basis once, with the requests it serves where the rows' differ (their loads take different slices, as --json
    # says per row), then each reason once: a row beyond the runs' load names its own
    bases: dict[tuple[str, str], list[int]] = {}
    for row in r["rows"]:
        for x in basis_rows(row["intervals"]):
            if x[0] != "beyond the runs":
                bases.setdefault(x, []).append(row["concurrency"])
    split = len({tuple(c) for c in bases.values()}) > 1
    said = [(f"{k} ({', '.join(map(str, c))} request{'s' if c != [1] else ''})" if split and k != "centred on" else k, v)
            for (k, v), c in bases.items()]
    said += [("beyond the runs", f"[yellow]{x}[/yellow]") for x in said_across([w for row in r["rows"] for w in said_once(row["intervals"])])]
    for k, v in dict.fromkeys(said):
        # the runs the bands are drawn from, apart from what those runs lack (beyond the runs)
        _console().print(f"{k}: {'drawn ' + v if v.startswith('from ') and k != 'beyond the runs' else v}", highlight=False)


def _decode_mode(cc: str | None, level: int | None, max_bs: int | None, *, engine: tuple) -> tuple[int | None, bool]:
    """(decode_cuda_graph_max_bs, decode_piecewise_graphs) from the decode workers' vLLM flags, read as `import` reads a vLLM
    launch (explore.export_engines.vllm.graph_mode: compilation-config's cudagraph_mode, else the -O level's): PIECEWISE
    replays graph pieces, NONE turns the graphs off (0, where --decode-cuda-graph-max-bs sets none), any FULL mode one full
    decode graph. Only cudagraph_mode is read from the JSON; another field, or either flag on another engine than vLLM
    (`engine`: the GPUs and --backend, spec.engines.engine_for_pools), is refused in one line."""
    import json

    from llm_codesign.explore.export_engines.vllm import graph_mode
    from llm_codesign.spec.engines import engine_for_pools

    if cc is None and level is None:
        return max_bs, False
    name = engine_for_pools(*engine).name
    if name != "vllm":
        raise InputError("decode-compilation-config" if cc is not None else "decode-optimization-level", cc if cc is not None else level,
                         f"left out: it is a vLLM flag, and these pools run {name}")
    o: dict = {} if level is None else {"optimization-level": level}
    if cc is not None:
        try:
            parsed = json.loads(cc)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or set(parsed) - {"cudagraph_mode"}:
            raise InputError("decode-compilation-config", cc, 'a JSON mapping with cudagraph_mode alone, e.g. \'{"cudagraph_mode": '
                             '"PIECEWISE"}\' (the capture: --decode-cuda-graph-max-bs)')
        o["compilation-config"] = parsed
    mode = graph_mode(o)
    if mode == "NONE":  # vLLM then captures nothing, whatever the capture size (cudagraph_dispatcher.py:171-174@0.33.0)
        return 0, False
    if mode == "PIECEWISE" and max_bs == 0:  # said in the flags the user gave, not Deployment's piecewise_graphs (final review)
        raise InputError("decode-cuda-graph-max-bs", 0, "left out, or a capture above 0, with PIECEWISE decode graphs "
                         "(0 captures none: give cudagraph_mode NONE for no graphs)")
    return max_bs, mode == "PIECEWISE"
