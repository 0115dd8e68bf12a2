"""Where the disaggregated first tokens miss, SGLang's and TensorRT-LLM's side by side: every priced row of the shipped
disaggregated runs (data/measurements/serving_disagg_blackwell.csv, never fitted) at or under `--max-concurrency`, with its
pools, build (the image tag the row names; campaigns.toml's sglang_build for the December 2025 runs that name none),
measured and priced TTFT and the priced parts (serve.disagg.evaluate_disagg's: the lone prefill, the front end's work
paid, the KV transfer, the decode admission less the transfer, the prefill step and queue waits), then the signed
miss by engine, GPU and ISL. Nothing is priced differently: validate's own predict_disagg runs, and its call to
evaluate_disagg is recorded to read the parts (docs/modelling-notes.md#dlow-sglang-low-load).

    python benchmarks/disagg_sglang_split.py [--max-concurrency 8]
"""
from __future__ import annotations

import argparse
import re
from collections import defaultdict
from importlib.resources import files

import numpy as np

import llm_codesign.measure.validate as V
from llm_codesign.measure import campaigns

PARTS = ("prefill_alone_s", "front_end_s", "kv_transfer_s", "decode_admission_s", "prefill_step_wait_s", "prefill_wait_s")


def priced_parts(rows: list[dict]) -> list[dict]:
    """validate's predictions for `rows` with evaluate_disagg's parts per row (ms), keyed as PARTS."""
    calls = []
    orig = V.evaluate_disagg

    def record(*a, **k):
        r = orig(*a, **k)
        calls.append((k, r))
        return r

    V.evaluate_disagg = record
    try:
        preds, _ = V.predict_disagg(rows)
    finally:
        V.evaluate_disagg = orig
    # predict_disagg prices one group per call, its rows in order: match each call's rows back by (isl, C, pools)
    out = [dict(p) for p in preds]
    used = set()
    for k, r in calls:
        n = np.broadcast(np.asarray(k["concurrency"]), np.asarray(r["ttft_s"])).shape
        ttft = np.broadcast_to(r["ttft_s"], n) * 1e3
        for j in range(n[0]):
            for i, p in enumerate(out):
                if i in used or not p or abs(p["ttft_ms"] - ttft[j]) > 1e-9:
                    continue
                p.update({key: float(np.broadcast_to(r[key], n)[j]) * 1e3 for key in PARTS})
                used.add(i)
                break
    return out


def build(row: dict) -> str:
    m = re.search(r"image=\S*?:v?([\w.\-]+)", row.get("source", ""))
    return m.group(1) if m else campaigns.settings(row).get("sglang_build", "?")


def plan(row: dict, pool: str) -> str:
    """A pool as `n x TPt EPe` or `n x DPd EPe`, from the row's recorded columns."""
    tp, adp, ep = (int(float(row[f"{pool}_{k}"] or 1)) for k in ("tp", "attention_dp", "ep"))
    return f"{row[pool + '_instances']} x " + (f"DP{adp}" if adp > 1 else f"TP{tp}") + (f" EP{ep}" if ep > 1 else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-concurrency", type=int, default=8)
    args = ap.parse_args()
    path = files("llm_codesign.data.measurements") / "serving_disagg_blackwell.csv"
    rows = V.read_rows(str(path))
    preds = priced_parts(rows)
    print("| engine | GPU | weights | ISL | C | prefill (n x plan) | decode (n x plan) | build | TTFT measured | priced | miss | "
          "prefill | front end | KV | admission less KV | step + queue |")
    print("|" + "---|" * 16)
    miss = defaultdict(list)
    for r, p in sorted(zip(rows, preds, strict=True), key=lambda rp: (rp[0]["backend"], rp[0]["gpu"], int(rp[0]["isl"]),
                                                                        int(rp[0]["concurrency"]))):
        if not p or "prefill_alone_s" not in p:
            continue
        c, measured = int(r["concurrency"]), float(r["ttft_ms"])
        miss[(r["backend"], r["gpu"], int(r["isl"]), c <= args.max_concurrency)].append((measured - p["ttft_ms"]) / measured)
        if c > args.max_concurrency:
            continue
        print(f"| {r['backend']} | {r['gpu']} | {r['weight_dtype']} | {r['isl']} | {c} | {plan(r, 'prefill')} | {plan(r, 'decode')} | "
              f"{build(r)} | {measured:.0f} | {p['ttft_ms']:.0f} | {measured - p['ttft_ms']:+.0f} | {p['prefill_alone_s']:.1f} | "
              f"{p['front_end_s']:.1f} | {p['kv_transfer_s']:.1f} | {p['decode_admission_s'] - p['kv_transfer_s']:.1f} | "
              f"{p['prefill_step_wait_s'] + p['prefill_wait_s']:.1f} |")
    print(f"\nmedian signed miss (measured - priced) / measured, at or under {args.max_concurrency} requests and above:")
    for (eng, gpu, isl, low), v in sorted(miss.items()):
        print(f"  {eng:7s} {gpu:6s} {isl:5d} {'low ' if low else 'high'}: {100 * np.median(v):+6.1f}% ({len(v)} rows)")


if __name__ == "__main__":
    main()
