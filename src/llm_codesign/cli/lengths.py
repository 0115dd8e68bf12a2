"""The `mix` command: one deployment serving requests of many lengths (a CSV, or ISL/OSL distributions)."""
from __future__ import annotations

from typing import Optional

import typer

from llm_codesign.cli.common import (
    MAX_CONCURRENCY,
    O_A,
    O_ACC,
    O_ADP,
    O_BACKEND,
    O_CAL,
    O_CHUNKED,
    O_DRAFT,
    O_EP,
    O_GPU,
    O_GPUS_ONE,
    O_K,
    O_KV,
    O_KVP,
    O_MIX_ARRIVAL,
    O_MNT,
    O_MTP,
    O_PP,
    O_RATES,
    O_SPEC,
    O_TP,
    O_W,
    _console,
    _deployment,
    _dump,
    _model,
    _table,
    app,
    plan_note_line,
)


@app.command()
def mix(
    model: str = typer.Argument(..., help="Registry name, Hugging Face id or config.json path."),
    gpu: str = O_GPU, gpus_: Optional[int] = O_GPUS_ONE,
    tp: Optional[int] = O_TP, pp: Optional[int] = O_PP, ep: Optional[int] = O_EP, moe_tp: Optional[int] = O_MTP,
    attention_dp: Optional[int] = O_ADP, kvp: Optional[int] = O_KVP,
    weight_dtype: Optional[str] = O_W, activation_dtype: Optional[str] = O_A, kv_dtype: Optional[str] = O_KV,
    lengths: Optional[str] = typer.Option(None, "--lengths", help="CSV of requests: columns isl, osl (and count or weight)."),
    isl_dist: Optional[str] = typer.Option(None, "--isl-dist", help="fixed:N, uniform:LO,HI or lognormal:median=M,sigma=S."),
    osl_dist: Optional[str] = typer.Option(None, "--osl-dist", help="Same forms as --isl-dist."),
    concurrency: int = typer.Option(64, "--concurrency", min=1, max=MAX_CONCURRENCY, help="Requests in flight."),
    backend: Optional[str] = O_BACKEND, spec: Optional[str] = O_SPEC, draft_len: Optional[int] = O_K,
    acceptance: Optional[float] = O_ACC, acceptance_rates: Optional[str] = O_RATES, draft_model: Optional[str] = O_DRAFT,
    max_num_tokens: Optional[int] = O_MNT, chunked_prefill: Optional[bool] = O_CHUNKED,
    calibration: Optional[str] = O_CAL, arrival: Optional[str] = O_MIX_ARRIVAL, as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (what the table shows, and more)."),
):
    """What one deployment delivers on a mix of request lengths: TTFT percentiles, TPOT, tok/s/GPU."""
    from llm_codesign.explore.lengths import check_lengths
    from llm_codesign.explore.lengths import mix as run

    check_lengths(lengths, isl_dist, osl_dist, cli=True)  # before the model is read, as before: lc.mix checks them again
    m = _model(model)
    dep = _deployment(m, gpu, gpus_, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp, weight_dtype=weight_dtype,
                      activation_dtype=activation_dtype, kv_dtype=kv_dtype, backend=backend, spec=spec, draft_len=draft_len, acceptance=acceptance,
                      acceptance_rates=acceptance_rates, draft_model=draft_model, max_num_tokens=max_num_tokens, cpp=False)
    plan_note_line(dep)
    if chunked_prefill is not None:  # as estimate's: the launch's enable_chunked_prefill (TensorRT-LLM refuses a longer prompt)
        from dataclasses import replace

        dep = replace(dep, chunked_prefill=chunked_prefill)
    # one code path with lc.mix (explore.lengths.mix)
    r = run(m, dep, lengths=lengths, isl_dist=isl_dist, osl_dist=osl_dist, concurrency=concurrency, calibration=calibration,
            arrival=arrival).to_dict()
    if as_json:
        return _dump(r)
    t = _table(f"{m.name} on {dep.num_gpus}x {dep.gpu.name}, {r['plan']}, {r['precision_as_run']}, {dep.backend}: {r['lengths']} "
               f"(mean ISL {r['mean_isl']:.0f}, OSL {r['mean_osl']:.0f}), {concurrency} requests",
               "TTFT_mean:n TTFT_p50:n TTFT_p90:n TTFT_p99:n TPOT:n tok/s/user:n tok/s/GPU:n fits:k",
               "Times in ms. Each length priced as if the batch held it alone, then mixed by request share "
               "(explore/lengths.py); TPOT is per output token after each request's first. Beneath: the 80% interval of the mean TTFT, TPOT and rates.")
    from llm_codesign.measure.intervals import METRICS
    from llm_codesign.render.intervals import ONE_TOKEN, basis_rows, one_token, short_range

    tt, b = r["ttft_ms"], r["intervals"]
    # every request one output token: no TPOT nor decode rate to show (null in --json), as estimate's
    one = all(one_token(x["osl"]) for x in r["per_length"])
    t.add_row(f"{tt['mean']:.0f}", f"{tt['p50']:.0f}", f"{tt['p90']:.0f}", f"{tt['p99']:.0f}", ONE_TOKEN if one else f"{r['tpot_ms']:.2f}",
              ONE_TOKEN if one else f"{r['tok_s_per_user']:.1f}", f"{r['output_tok_s_per_gpu']:.0f}",
              "yes" if r["fits"] else f"{(1 - r['share_not_fitting']) * 100:.0f}%")
    lo_hi = [short_range(b[k], k) if (b or {}).get(k) else "" for k in METRICS]  # or "no interval: 95% spans x35", as estimate's
    if one:
        lo_hi[1] = lo_hi[2] = ""
    t.add_row(lo_hi[0], "", "", "", *lo_hi[1:], "")
    # the approximation the percentiles rest on, said beside them, not in the caption alone (newc5 #20): a long prompt is
    # priced in a batch of prompts as long as it, so the upper percentiles read high and the short prompts' TTFT low
    _console().print(f"TTFT percentiles ({r['arrival']}): each length priced as if the whole batch held it alone, then mixed "
                     "by request share: a long prompt's TTFT overstated, a short one's understated.", highlight=False)
    _console().print(t)
    for k, v in basis_rows(b):  # the runs the intervals come from
        _console().print(f"{k}: {v}", highlight=False)
    _console().print("intervals as estimate's at the mix's mean ISL and OSL: every run measured one length", highlight=False)
