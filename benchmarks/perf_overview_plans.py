"""Which plan the perf overview's v1.0 MoE rows ran, read from the rows themselves (issue 39: MoE at max throughput on
Hopper). The v1.0 page gives MoE plans as TP only while its reproduction section runs MoE models with `--ep` and
`enable_attention_dp` (data/measurements/SOURCES.md). A level error common to both GPUs cancels in the ratio of one
setting's H100 and H200 throughput (same model, plan, lengths, release), so that ratio, measured against each reading's
predicted one, says which reading a row fits whatever the model's level:

    python benchmarks/perf_overview_plans.py

prints, per model and ISL/OSL, the measured H100 / H200 ratio, the ratio each reading (perf_overview_batch.replan:
converted, tp-ep, adp-ep; and the converted and adp-ep plans with a BF16 KV cache) predicts, and each reading's signed error on both GPUs; then per model the median
|log(predicted ratio / measured ratio)| under each reading. Finding: docs/modelling-notes.md#perf-overview-plans.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from perf_overview_batch import replan

from llm_codesign.measure.validate import predict_serving, read_rows

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "src" / "llm_codesign" / "data" / "measurements" / "trtllm_perf_overview.csv"
# a reading: the plan (perf_overview_batch.replan) and the KV cache's number format (None: the row's, FP8 as converted)
READINGS = {"converted": ("converted", None), "tp-ep": ("tp-ep", None), "adp-ep": ("adp-ep", None),
            "converted, BF16 KV": ("converted", "bf16"), "adp-ep, BF16 KV": ("adp-ep", "bf16")}
MODELS = ("llama-4-maverick", "llama-4-scout", "qwen3-235b-a22b")


def gpu_ratio(rows: list[dict], values, *, num: str = "h100", den: str = "h200") -> dict:
    """{(model, isl, osl): value on `num` / value on `den`} over the settings both GPUs have, `values` in row order."""
    by = {(r["model"], int(r["isl"]), int(r["osl"]), r["gpu"]): float(v) for r, v in zip(rows, values, strict=True)}
    return {k[:3]: v / by[(*k[:3], den)] for k, v in by.items() if k[3] == num and (*k[:3], den) in by}


def main() -> None:
    rows = [r for r in read_rows(ROWS) if "_v1_0_" in r["source"] and r["model"] in MODELS and r["gpu"] in ("h100", "h200")]
    measured = [float(r["output_tok_s_per_gpu"]) for r in rows]
    pred = {}
    for name, (plan, kv) in READINGS.items():
        preds, _ = predict_serving([{**replan(r, plan), **({"kv_dtype": kv} if kv else {})} for r in rows])
        pred[name] = [p["output_tok_s_per_gpu"] if p else np.nan for p in preds]
    ratio_m = gpu_ratio(rows, measured)
    ratio_p = {plan: gpu_ratio(rows, v) for plan, v in pred.items()}
    err = {plan: {(r["model"], int(r["isl"]), int(r["osl"]), r["gpu"]): 100 * (p / m - 1) for r, p, m in zip(rows, v, measured, strict=True)}
           for plan, v in pred.items()}
    print("| model | ISL/OSL | measured H100/H200 | " + " | ".join(f"{p} ratio" for p in READINGS) + " | "
          + " | ".join(f"{p} error % H100 / H200" for p in READINGS) + " |")
    print("|---|---|---|" + "---|" * (2 * len(READINGS)))
    for k in sorted(ratio_m):
        e = " | ".join(f"{err[p][(*k, 'h100')]:+.0f} / {err[p][(*k, 'h200')]:+.0f}" for p in READINGS)
        print(f"| {k[0]} | {k[1]}/{k[2]} | {ratio_m[k]:.2f} | " + " | ".join(f"{ratio_p[p][k]:.2f}" for p in READINGS) + f" | {e} |")
    print("\n| model | pairs | " + " | ".join(f"{p}: median abs log ratio miss" for p in READINGS) + " |\n|---|---|" + "---|" * len(READINGS))
    for m in MODELS:
        ks = [k for k in ratio_m if k[0] == m]
        miss = [np.median([abs(np.log(ratio_p[p][k] / ratio_m[k])) for k in ks]) for p in READINGS]
        print(f"| {m} | {len(ks)} | " + " | ".join(f"{x:.2f}" for x in miss) + " |")


if __name__ == "__main__":
    main()
