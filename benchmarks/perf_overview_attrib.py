"""Where the perf overview's Hopper MoE rows err, part by part of the decode step (issue 39: MoE at max throughput on
Hopper). For each row, as `validate` prices it (perf_overview_batch: trtllm-bench's limits, the running batch the
prediction picks), the decode step at that batch split into decode attention, the routed experts, the collectives, the
other GEMMs and the rest; then, for each part alone, the factor it would have to grow by for the step to give the
measured throughput at that batch (throughput taken as batch / step: exact for decode-bound rows, an upper bound of the
factor where prefill shares the time). A factor far above what the kernel tables allow for a part rules the part out
as the row's cause on its own.

    python benchmarks/perf_overview_attrib.py [--models M,M] [--gpus G,G] [--tables v1_0] [--plan converted|adp-ep]
    python benchmarks/perf_overview_attrib.py --variants [--plan ...]

--variants prices the rows under readings no source has settled, as sensitivities (median |error| and signed, per GPU and
model): GQA decode on TensorRT-LLM's masked MHA kernel for every layer (XQA's supportConfigCommon refuses a
position_embedding_type outside the RoPE types, kernelUtils.cpp@029e0a7c, and a layer whose RoPE runs outside the op,
Qwen3's fused QK-norm + RoPE and Llama 4's QK-norm layers, passes learned_absolute: TrtllmAttention), and Qwen3-235B's
checkpoint as Qwen's own block-scaled FP8 (128 x 128), with its KV cache FP8 or BF16 (no kv_cache_quant_algo).

Finding: docs/modelling-notes.md#moeh100-attribution.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dataclasses import replace  # noqa: E402

import perf_overview_batch as B  # noqa: E402

from llm_codesign.cost.calibration import calibration_for  # noqa: E402
from llm_codesign.measure import validate as V  # noqa: E402
from llm_codesign.serve.aggregated import Serving, evaluate  # noqa: E402
from llm_codesign.spec.harness import OFFLINE_ARRIVAL  # noqa: E402
from llm_codesign.spec.plan import Plan  # noqa: E402

PARTS = ("attention", "experts", "comm", "gemm", "rest")


def part_of(op) -> str:
    """The attribution part of one step operator: decode attention, the routed experts' grouped GEMMs, a collective,
    another GEMM, or the rest (norms, routing, permutes, the sampler, fitted host costs)."""
    if op.kind == "attention":
        return "attention"
    if op.kind == "comm":
        return "comm"
    if op.kind == "gemm":
        return "experts" if op.role.startswith("experts") else "gemm"
    return "rest"


def need(pred: float, meas: float, step: float, part: float) -> float:
    """The factor `part` (s of a `step` s decode step) alone must grow by for the step to give `meas` where the model
    gives `pred` at the same batch: step x pred / meas = step + part x (f - 1); inf where the part is nil, below 1
    where the row is slow (the part must shrink)."""
    if part <= 0.0:
        return float("inf")
    return 1.0 + step * (pred / meas - 1.0) / part


def split_steps(rows: list[dict], diag: list[dict]) -> list[dict]:
    """Each diagnosed row's decode step at its predicted running batch, summed by part (s per step)."""
    out = []
    groups, _ = V._grouped(rows, None, None, V.row_problem)
    by_id = {id(d["row"]): d for d in diag}
    for (model, gpu, prec, engine, spec, cal), idx in groups:
        sub = [rows[i] for i in idx if id(rows[i]) in by_id]
        if not sub:
            continue
        a, isl, osl = B._row_arrays(sub)
        per_rank, tokens, flags = V.bench_limits(model, gpu, prec, a, np.arange(len(sub)), isl=isl, osl=osl, sub=sub)
        plan = Plan(*(x[:, None] for x in (a["tp"], a["pp"], a["ep"], a["moe_tp"], a["attention_dp"], np.ones(len(sub), dtype=np.int64))))
        running = np.array([by_id[id(r)]["running"] for r in sub], float)[:, None]
        ev = evaluate(model, Serving(gpu=gpu, prec=prec, plan=plan, engine=engine, spec=spec, max_num_tokens=tokens[:, None]), cal=cal,
                      concurrency=running, isl=isl[:, None], osl=osl[:, None], flags=flags, arrival=OFFLINE_ARRIVAL, offline=True,
                      with_ops=True)
        tot = {p: np.zeros(len(sub)) for p in PARTS}
        for op in ev["ops"]:
            t = np.broadcast_to(np.asarray(op.time, float) * np.asarray(op.count, float), (len(sub), 1))[:, 0]
            tot[part_of(op)] += t
        step = np.broadcast_to(np.asarray(ev["step_s"], float), (len(sub), 1))[:, 0]
        for j, r in enumerate(sub):
            d = by_id[id(r)]
            parts = {p: float(tot[p][j]) for p in PARTS}
            parts["rest"] += max(float(step[j]) - sum(parts.values()), 0.0)  # host costs beyond the kernels
            out.append(d | {"step_s": float(step[j]), "parts": parts})
    return out


# the readings --variants prices: (name, the row's replacement columns by model, decode on the masked MHA kernel)
VARIANTS = (("as priced", {}, False), ("masked MHA decode", {}, True),
            ("Qwen3 block FP8", {"qwen3-235b-a22b": {"weight_dtype": "fp8_block"}}, False),
            ("Qwen3 block FP8, BF16 KV", {"qwen3-235b-a22b": {"weight_dtype": "fp8_block", "kv_dtype": "bf16"}}, False))


def summary(rows: list[dict], preds: list[dict]) -> dict:
    """(GPU, model) -> (rows, median |error| %, median signed error %) of output tok/s per GPU."""
    out = {}
    for key in sorted({(r["gpu"], r["model"]) for r in rows}):
        e = np.array([100.0 * (p["output_tok_s_per_gpu"] / float(r["output_tok_s_per_gpu"]) - 1.0)
                      for r, p in zip(rows, preds, strict=True) if p and (r["gpu"], r["model"]) == key])
        if e.size:
            out[key] = (e.size, float(np.median(np.abs(e))), float(np.median(e)))
    return out


def variants(rows: list[dict]) -> None:
    """Each VARIANTS reading's summary, one line per (reading, GPU, model)."""
    mmha = lambda g: replace(calibration_for(g), attn_decode_max_group=0.5)  # noqa: E731  every group on the masked MHA kernel
    print("| reading | gpu | model | rows | median abs error % | signed % |\n|---|---|---|---|---|---|")
    for name, cols, on_mmha in VARIANTS:
        sub = [{**r, **cols.get(r["model"], {})} for r in rows]
        preds, _ = V.predict_serving(sub, cal_override=mmha if on_mmha else None)
        for (g, m), (n, ape, signed) in summary(sub, preds).items():
            print(f"| {name} | {g} | {m} | {n} | {ape:.1f} | {signed:+.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="llama-4-maverick,llama-4-scout,qwen3-235b-a22b")
    ap.add_argument("--gpus", default="h100,h200")
    ap.add_argument("--tables", default="v1_0", help="the perf-overview releases, comma-separated (v0_17, v0_20, v1_0)")
    ap.add_argument("--plan", choices=("converted", "tp-ep", "adp-ep"), default="converted")
    ap.add_argument("--variants", action="store_true", help="price the rows under the unsettled readings (module docstring)")
    args = ap.parse_args()
    models, gpus, tables = args.models.split(","), args.gpus.split(","), args.tables.split(",")
    rows = [B.replan(r, args.plan) for r in V.read_rows(B.ROWS)
            if r["model"] in models and r["gpu"] in gpus and B._version(r["source"]) in tables]
    if args.variants:
        variants(rows)
        return
    res = sorted(split_steps(rows, B.diagnose(rows)), key=lambda d: (d["row"]["model"], d["row"]["gpu"], d["row"]["source"]))
    print("| model | gpu | table | ISL/OSL | error % | running | step ms | attention / experts / comm / GEMM / rest ms "
          "| factor each part alone needs: attention / experts / comm / GEMM |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in res:
        r, p, s = d["row"], d["parts"], d["step_s"]
        f = [need(d["predicted"], d["measured"], s, p[k]) for k in PARTS[:4]]
        print(f"| {r['model']} | {r['gpu']} | {B._version(r['source'])} | {r['isl']}/{r['osl']} | {d['error_pct']:+.1f} | {d['running']:,.0f} "
              f"| {s * 1e3:.1f} | " + " / ".join(f"{p[k] * 1e3:.1f}" for k in PARTS) + " | "
              + " / ".join("–" if not np.isfinite(x) else f"x{x:.2f}" for x in f) + " |")


if __name__ == "__main__":
    main()
