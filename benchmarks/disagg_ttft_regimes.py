"""Why the disaggregated runs' TTFT residuals spread at 33+ requests (issue 39 mechanism 5, issue 40;
docs/modelling-notes.md#disaggslot-regimes): each priced run of serving_disagg_blackwell.csv (the bundled profile, as
measure.validate.predict_disagg prices it) sorted by the regime serve.disagg.evaluate_disagg finds it in, and per regime
the measured / predicted TTFT (median, min, max). Regimes: `prefill-bound` (the loop's rate within 1% of the prefill
pool's capacity), `past slots` (more requests than slots, the slot wait priced: over 1% of TTFT), `exact fill` (the requests
equal the decode slots, so no slot wait is priced), `within` (neither pool binds). Where a pool binds, TTFT is what the cycle leaves,
C / rate - (OSL - 1) x TPOT, so an error e in TPOT moves TTFT by e x decode time / TTFT: the `with measured TPOT` column
re-prices each bound run's TTFT with its measured TPOT at the priced rate (slot-bound: the slots / the measured decode time).
`python benchmarks/disagg_ttft_regimes.py` (seconds)."""
from __future__ import annotations

import numpy as np

from llm_codesign.measure import validate as V


def priced() -> list[dict]:
    """Each priced disaggregated run: its row, prediction and evaluate_disagg's parts (captured per group)."""
    rows = V.read_rows("serving_disagg_blackwell.csv")
    calls, evaluate = [], V.evaluate_disagg

    def keep(*a, **k):
        calls.append(evaluate(*a, **k))
        return calls[-1]

    V.evaluate_disagg = keep
    try:
        preds = V.predict_serving(rows)[0]
    finally:
        V.evaluate_disagg = evaluate
    groups, _ = V._grouped(rows, None, None, V._disagg_problem)
    out = []
    for (_, idx), res in zip(groups, calls, strict=True):
        for j, i in enumerate(idx):
            if preds[i]:
                part = {k: float(np.broadcast_to(v, (len(idx),))[j]) for k, v in res.items() if np.ndim(v) <= 1 and k != "fits"}
                out.append({"row": rows[i], "pred": preds[i], "part": part})
    return out


def regime(x: dict) -> str:
    """The pool that binds the run's loop (module docstring)."""
    C, p = float(x["row"]["concurrency"]), x["part"]
    if p["request_rate"] >= 0.99 * p["prefill_capacity_req_s"]:
        return "prefill-bound"
    if p["decode_slot_wait_s"] > 0.01 * p["ttft_s"]:
        return "past slots"
    return "exact fill" if C == p["max_concurrency"] else "within"


def measured_tpot_ttft(x: dict) -> float:
    """The run's TTFT (ms) with its measured TPOT where a pool binds: C / rate - decode time, the rate the slots' (slots over
    the measured decode time) or the prefill pool's; the prediction elsewhere."""
    r, p = x["row"], x["part"]
    C, decode = float(r["concurrency"]), (float(r["osl"]) - 1.0) * float(r["tpot_ms"]) / 1e3
    kind = regime(x)
    if kind == "past slots":
        return 1e3 * (max(C / p["max_concurrency"] - 1.0, 0.0) * decode + p["ttft_s"] - p["decode_slot_wait_s"])
    if kind == "prefill-bound":
        return 1e3 * max(C / p["request_rate"] - decode, p["ttft_s"] - p["prefill_wait_s"])
    return x["pred"]["ttft_ms"]


def main() -> None:
    runs = [x for x in priced() if float(x["row"]["concurrency"]) >= 33]
    print("| regime (33+ requests) | runs | measured / predicted TTFT: median, min, max | in-sample width q90/q10, q97.5/q2.5 "
          "| with measured TPOT: median, min, max |")
    print("|---|---|---|---|---|")
    for kind in ("within", "prefill-bound", "past slots", "exact fill", "all"):
        sub = [x for x in runs if kind in ("all", regime(x))]
        a = np.array([float(x["row"]["ttft_ms"]) / x["pred"]["ttft_ms"] for x in sub])
        b = np.array([float(x["row"]["ttft_ms"]) / measured_tpot_ttft(x) for x in sub])
        q = np.quantile(np.log(a), [0.025, 0.1, 0.9, 0.975])
        print(f"| {kind} | {len(sub)} | x{np.median(a):.2f}, x{a.min():.2f}, x{a.max():.1f} | x{np.exp(q[2] - q[1]):.1f}, "
              f"x{np.exp(q[3] - q[0]):.0f} | x{np.median(b):.2f}, x{b.min():.2f}, x{b.max():.1f} |")
    print("\nexact fill (TensorRT-LLM's and SGLang's):")
    print("| run | GPU | ISL/OSL | requests = slots | decode instances x ranks x batch | TTFT measured / predicted ms | TPOT measured / predicted |")
    print("|---|---|---|---|---|---|---|")
    for x in sorted((x for x in priced() if regime(x) == "exact fill"), key=lambda x: float(x["row"]["concurrency"])):
        r = x["row"]
        run = r["source"].split("/runs/")[-1].split(" ")[0].replace("/attempts/", "/")
        print(f"| {run} | {r['gpu']} | {r['isl']}/{r['osl']} | {r['concurrency']} | {r['decode_instances']} x {r['decode_attention_dp']} x "
              f"{r['decode_max_batch'] or '-'} | {float(r['ttft_ms']):,.0f} / {x['pred']['ttft_ms']:,.0f} | "
              f"{float(r['tpot_ms']):.1f} / {x['pred']['tpot_ms']:.1f} |")


if __name__ == "__main__":
    main()
