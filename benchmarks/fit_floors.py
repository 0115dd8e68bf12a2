"""The one-token step against the H100 kernel tables: does an MLA module or a MoE block need a floor?

    python benchmarks/fit_floors.py            # price data/measurements/kernels_hopper/floors.csv, fit the floors
    python benchmarks/fit_floors.py --extract SHARED_DIR   # first rewrite floors.csv from the shared tables

floors.csv holds the one-token rows of two tables of the H100 kernel database in aiconfigurator-core 0.12.0
(Apache-2.0; the shared validation data's kernels_hopper/ tables, whose README gives the sources): TensorRT-LLM
1.3.0rc20's MLA generation module (mla_generation_module_perf: projections, RoPE and KV append, the MLA
kernel, the absorbed BMMs, the output projection; DeepSeek-V3's shape at 1-128 heads per GPU, contexts up to
8k) and its MoE block (moe_perf, balanced routing, gated CUTLASS kernels, BF16 / FP8 / block-FP8). Each row is
priced by the model without a floor (the kernel tables' kernels, no engine: measure.kernel_tables for the MoE
block, cost.ops for the module), and the floor is the value whose max(model, floor) has the least median
absolute log error on the rows, searched on a grid over its stated range (30-80 us, 15-80 us).

Finding (docs/modelling-notes.md#one-token-floors): both land on the lower bound of their range, i.e. the model
without a floor already prices the one-token module (MLA: 5.7% median error) or prices it above the tables
(MoE block: +51%), so no floor is part of the model.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import sys
from pathlib import Path

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.measure.kernel_tables import predict
from llm_codesign.measure.stats import error_stats
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ROOT / "src" / "llm_codesign" / "data" / "measurements" / "kernels_hopper" / "floors.csv"
COLUMNS = ("table", "framework", "version", "kernel_source", "dtype", "kv_cache_dtype", "num_heads", "context", "num_tokens", "hidden_size",
           "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "latency_ms")
RANGES = {"mla_module_floor_s": (30e-6, 80e-6), "moe_block_floor_s": (15e-6, 80e-6)}


def extract(shared: Path) -> None:
    """The one-token rows floors.csv keeps, from the shared tables (their own columns renamed)."""
    out = []
    with gzip.open(shared / "mla.csv.gz", "rt") as f:
        for r in csv.DictReader(f):
            if (r["source_table"] == "mla_generation_module_perf" and r["framework"] == "trtllm" and r["batch_size"] == "1"
                    and int(r["step"]) <= 8192 and r["gemm_type"] in ("fp8_block", "bfloat16")):
                out.append({"table": "mla_generation_module", "framework": "trtllm", "version": r["version"], "kernel_source": r["kernel_source"],
                            "dtype": r["gemm_type"], "kv_cache_dtype": r["kv_cache_dtype"], "num_heads": r["num_heads"], "context": r["step"],
                            "num_tokens": "1", "latency_ms": r["latency_ms"]})
    with gzip.open(shared / "moe.csv.gz", "rt") as f:
        for r in csv.DictReader(f):
            if (r["source_table"] == "moe_perf" and r["framework"] == "trtllm" and r["num_tokens"] == "1" and r["distribution"] == "balanced"
                    and r["kernel_source"] == "moe_torch_flow_cutlass" and r["moe_dtype"] in ("bfloat16", "fp8", "fp8_block")):
                out.append({"table": "moe", **{k: r[k] for k in ("framework", "version", "kernel_source", "num_tokens", "hidden_size", "inter_size",
                                                                  "topk", "num_experts", "moe_tp_size", "moe_ep_size", "latency_ms")},
                            "dtype": r["moe_dtype"]})
    with FLOORS.open("w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows({k: row.get(k, "") for k in COLUMNS} for row in out)
    print(f"wrote {len(out)} rows to {FLOORS.relative_to(ROOT)}")


def mla_module(rows, cal) -> np.ndarray:
    """The model's MLA module (attention-part operators, no all-reduce) of DeepSeek-V3 at one decode token."""
    model, gpu = get_model("deepseek-v3"), get_gpu("h100")
    out = []
    for r in rows:
        heads = int(r["num_heads"])
        prec = Precision.of("fp8" if r["dtype"] == "fp8_block" else "bf16", kv="fp8" if r["kv_cache_dtype"] == "fp8" else "bf16")
        if r["dtype"] == "fp8_block":
            prec = model.default_precision if r["kv_cache_dtype"] != "fp8" else Precision(
                weight=model.default_precision.weight, activation=model.default_precision.activation, kv=Precision.of("fp8").weight)
        ops = forward_ops(model, gpu, cal, prec, Plan(tp=128 // heads), b=Batch(dec_seqs=1.0, dec_ctx=float(r["context"])))
        out.append(sum(float(np.sum(op.time)) for op in ops if op.part == "attention" and op.kind != "comm" and op.name.startswith("layer0/")))
    return np.array(out)


def moe_block(rows, cal) -> np.ndarray:
    """The model's MoE block of each row's shape at one token (measure.kernel_tables, as the MoE table is priced)."""
    table = [{**r, "system": "h100_sxm", "moe_dtype": r["dtype"], "distribution": "balanced"} for r in rows]
    return predict("moe", table, lambda g: cal)[0] / 1e3


def fit(model_s: np.ndarray, y: np.ndarray, lo: float, hi: float) -> float:
    grid = np.linspace(lo, hi, 101)
    loss = [np.median(np.abs(np.log(np.maximum(model_s, g) / y))) for g in grid]
    return float(grid[int(np.argmin(loss))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extract", type=Path, help="rewrite floors.csv from this folder's mla.csv.gz and moe.csv.gz first")
    args = ap.parse_args()
    if args.extract:
        extract(args.extract)
    rows = list(csv.DictReader(FLOORS.open()))
    cal = calibration_for(get_gpu("h100"))
    for name, table, price in (("mla_module_floor_s", "mla_generation_module", mla_module), ("moe_block_floor_s", "moe", moe_block)):
        sub = [r for r in rows if r["table"] == table]
        y = np.array([float(r["latency_ms"]) for r in sub]) / 1e3
        m = price(sub, cal)
        ok = np.isfinite(m)
        floor = fit(m[ok], y[ok], *RANGES[name])
        before, after = error_stats(m[ok], y[ok]), error_stats(np.maximum(m[ok], floor), y[ok])
        print(f"{name} = {floor * 1e6:.1f}e-6  ({ok.sum()} rows; median APE {before['median_ape']:.1f}% -> {after['median_ape']:.1f}%, "
              f"signed {before['signed_median_pe']:+.1f}% -> {after['signed_median_pe']:+.1f}%; measured median {np.median(y[ok]) * 1e6:.1f} us)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
