"""Which part of the KV cache carries the perf overview's MoE level error (issue 39: MoE at max throughput on Hopper).
The offline rows of the PyTorch-flow releases (v0.20, v1.0) and the v0.17 Mixtral rows, on H100, H200, B200 and GB200,
each priced under three readings of its KV cache:

- "fp8": as converted (the checkpoint's FP8 cache, data/measurements/SOURCES.md);
- "fp8, half the cache": the same FP8 reads, with trtllm-bench's KV fraction halved, so the cache holds half the
  requests (the "free" budget's KV memory is fraction x (HBM - weights - activations): memory.fit), the capacity part
  of a 2-byte cache alone;
- "bf16": a 2-byte cache, half the requests and twice the bytes each decode step reads;

and the v1.0 MoE rows with TP > 1 under both plans (perf_overview_batch.replan: "converted", "adp-ep"). Dense rows keep
their plan. Prints per GPU, release and model the median |error| and signed median of output tok/s per GPU.

    python benchmarks/perf_overview_kv.py [--gpus h100,h200,b200,gb200]

Finding: docs/modelling-notes.md#perf-overview-kv.
"""
from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from perf_overview_batch import replan

from llm_codesign.measure.validate import predict_serving, read_rows
from llm_codesign.spec.engines import trtllm_bench
from llm_codesign.spec.registry import get_model

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "src" / "llm_codesign" / "data" / "measurements" / "trtllm_perf_overview.csv"
# the KV readings: (the cache's number format for the row, None: the row's own; the scale on trtllm-bench's KV fraction)
READINGS = {"fp8": (None, 1.0), "fp8, half the cache": (None, 0.5), "bf16": ("bf16", 1.0)}
PLANS = ("converted", "adp-ep")


def release(source: str) -> str:
    """'v1_0' from 'trtllm_perf_overview_v1_0_total.csv:12 (...)'."""
    return source.split("_total")[0].split("overview_")[-1]


def kept(r: dict, gpus: tuple[str, ...]) -> bool:
    """The rows read: the GPUs asked for, quantised weights (FP8 / NVFP4, whose KV format the converter assumes FP8), the
    PyTorch-flow releases, and v0.17 for the Mixtral rows (the only FP8 MoE rows before v0.20)."""
    return (r["gpu"] in gpus and r["weight_dtype"] in ("fp8", "nvfp4")
            and (release(r["source"]) in ("v0_20", "v1_0") or r["model"].startswith("mixtral")))


@contextmanager
def kv_fraction_scaled(scale: float):
    """trtllm-bench's KV fraction (validate.bench_limits reads trtllm_bench.KV_FRACTION at each call) times `scale`."""
    before = trtllm_bench.KV_FRACTION
    trtllm_bench.KV_FRACTION = before * scale
    try:
        yield
    finally:
        trtllm_bench.KV_FRACTION = before


def summarise(rows: list[dict], preds: list[float]) -> dict:
    """{(gpu, release, model): (n, median |error| %, signed median error %)} over the rows with a prediction (NaN: none)."""
    errs: dict[tuple, list[float]] = {}
    for r, p in zip(rows, preds, strict=True):
        if np.isfinite(p):
            errs.setdefault((r["gpu"], release(r["source"]), r["model"]), []).append(100.0 * (p / float(r["output_tok_s_per_gpu"]) - 1.0))
    return {k: (len(v), float(np.median(np.abs(v))), float(np.median(v))) for k, v in sorted(errs.items())}


def priced(rows: list[dict], plan: str, kv: str | None, scale: float) -> list[float]:
    """Each row's predicted output tok/s per GPU under one plan and KV reading (NaN where unmodelled)."""
    moe = {m: get_model(m).is_moe for m in {r["model"] for r in rows}}
    rs = [{**(replan(r, plan) if moe[r["model"]] else r), **({"kv_dtype": kv} if kv else {})} for r in rows]
    with kv_fraction_scaled(scale):
        preds, _ = predict_serving(rs)
    return [p["output_tok_s_per_gpu"] if p else np.nan for p in preds]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="h100,h200,b200,gb200")
    args = ap.parse_args()
    rows = [r for r in read_rows(ROWS) if kept(r, tuple(args.gpus.split(",")))]
    cols = [(plan, name) for plan in PLANS for name in READINGS]
    res = {c: summarise(rows, priced(rows, c[0], *READINGS[c[1]])) for c in cols}
    print("| gpu | release | model | rows | " + " | ".join(f"{p}, {n}" for p, n in cols) + " |")
    print("|---|---|---|---|" + "---|" * len(cols))
    for k in res[cols[0]]:
        cells = " | ".join(f"{res[c][k][1]:.1f} ({res[c][k][2]:+.1f})" for c in cols)
        print(f"| {k[0]} | {k[1]} | {k[2]} | {res[cols[0]][k][0]} | {cells} |")


if __name__ == "__main__":
    main()
