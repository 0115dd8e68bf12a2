"""The perf overview's offline rows, one line each, as `validate` prices them (issue 39: Hopper MoE at max throughput):
measured and predicted output tok/s per GPU, trtllm-bench's own max_batch_size and max_num_tokens
(spec/engines/trtllm_bench.py), the requests the KV cache holds, the batch the prediction runs and its decode step;
then the running batch B* at which the model's own step and prefill times give the measured throughput with memory
unbounded, and the KV cache per GPU that batch holds against what the model leaves free for it. A row the model
cannot reach at any batch ("never") errs in its times, not in its memory.

    python benchmarks/perf_overview_batch.py [--models M,M] [--gpus G,G] [--plan converted|tp-ep|adp-ep]

--plan reads the v1.0 MoE rows with TP > 1 as converted (attention TP, experts split by TP), with their experts over
EP instead (the page's `--ep`), or with attention DP and EP (its options file); data/measurements/SOURCES.md.
Finding (docs/modelling-notes.md#perf-overview-batch): not GPU memory alone. v0.20's Maverick rows (TP on both GPUs)
run a few hundred requests on H100 and H200 alike and err more on H200; Qwen3-235B's throughput is out of reach at any
batch; v1.0's H100 / H200 split is what the page's attention-DP + EP plan does to each GPU (--plan adp-ep), under which
every GPU errs alike, +55-80%.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from llm_codesign.measure import validate as V
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.spec.harness import OFFLINE_ARRIVAL, SchedulerFlags
from llm_codesign.spec.plan import Plan

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "src" / "llm_codesign" / "data" / "measurements" / "trtllm_perf_overview.csv"
# the running batches B* is searched over, 2% apart; memory 20x the GPU's so that no batch is cut by the cache
SEARCH = np.unique(np.round(np.geomspace(4, 32768, 460)))
UNBOUNDED = 20.0


def replan(r: dict, plan: str) -> dict:
    """A v1.0 MoE row with TP > 1 under `plan` (the converter keeps "converted"); every other row as it is."""
    if plan == "converted" or "_v1_0_" not in r["source"] or int(r["tp"]) == 1:
        return r
    if plan == "tp-ep":
        return {**r, "ep": r["tp"], "moe_tp": "1"}
    return {**r, "tp": "1", "attention_dp": r["tp"], "ep": r["tp"], "moe_tp": "1"}


def _row_arrays(sub: list[dict]) -> tuple[dict, np.ndarray, np.ndarray]:
    a = {k: np.array([V._int(r, k) for r in sub]) for k in ("tp", "pp", "ep", "moe_tp", "attention_dp", "num_gpus")}
    return a, np.array([V._int(r, "isl") for r in sub], float), np.array([V._int(r, "osl") for r in sub], float)


def _group(objs: tuple, sub: list[dict], preds: list[dict]) -> list[dict]:
    """diagnose's figures for the rows `sub` of one priced group (`objs`: model, GPU, precision, engine, speculation,
    calibration) with their predictions."""
    model, gpu, prec, engine, spec, cal = objs
    a, isl, osl = _row_arrays(sub)
    per_rank, tokens, flags = V.bench_limits(model, gpu, prec, a, np.arange(len(sub)), isl=isl, osl=osl, sub=sub)
    plan = Plan(*(x[:, None] for x in (a["tp"], a["pp"], a["ep"], a["moe_tp"], a["attention_dp"], np.ones(len(sub), dtype=np.int64))))
    adp = a["attention_dp"][:, None]

    def run(g, conc, fl):
        return evaluate(model, Serving(gpu=g, prec=prec, plan=plan, engine=engine, spec=spec, max_num_tokens=tokens[:, None]), cal=cal,
                        concurrency=conc, isl=isl[:, None], osl=osl[:, None], flags=fl, arrival=OFFLINE_ARRIVAL, offline=True)

    # the batch the prediction runs: validate's grid and the tool's own limit, the best that fits
    grid = np.concatenate([V.BATCH_GRID[None, :] * adp, (per_rank * a["attention_dp"])[:, None]], axis=1)
    ev = run(gpu, grid, flags)
    thr = np.where(ev["fits"], ev["output_tok_s_per_gpu"], -1.0)
    best = np.argmax(thr, axis=1)[:, None]

    def at_best(k):
        return np.take_along_axis(np.broadcast_to(ev[k], thr.shape), best, 1)[:, 0]

    running = np.take_along_axis(grid, best, 1)[:, 0]
    free_kv, kv_seq = at_best("free_bytes") + at_best("kv_bytes"), at_best("kv_bytes_per_seq")
    # B*: memory unbounded, no harness limit; the throughput's running maximum, so the first batch reaching it. CUDA graphs
    # at every batch: trtllm-bench pads them up to its max_batch_size (validate.bench_limits), here unbounded
    u = run(replace(gpu, memory_bytes=gpu.memory_bytes * UNBOUNDED), SEARCH[None, :] * adp, SchedulerFlags(cuda_graph_max_bs=float("inf")))
    curve = np.maximum.accumulate(np.broadcast_to(u["output_tok_s_per_gpu"], (len(sub), SEARCH.size)), axis=1)
    out = []
    for j, (r, p) in enumerate(zip(sub, preds, strict=True)):
        if not p:
            continue
        y = float(r["output_tok_s_per_gpu"])
        k = int(np.searchsorted(curve[j], y))
        b_star = SEARCH[k] * a["attention_dp"][j] if k < SEARCH.size else np.inf
        out.append({"row": r, "measured": y, "predicted": p["output_tok_s_per_gpu"], "error_pct": 100.0 * (p["output_tok_s_per_gpu"] / y - 1.0),
                    "bench_batch": per_rank[j] * a["attention_dp"][j], "bench_tokens": tokens[j], "kv_requests": at_best("max_concurrency")[j],
                    "running": running[j], "step_ms": at_best("step_s")[j] * 1e3, "b_star": b_star,
                    "kv_at_b_star_gb": b_star / a["attention_dp"][j] * kv_seq[j] / 1e9, "free_kv_gb": free_kv[j] / 1e9, "unbounded_max": curve[j, -1]})
    return out


def diagnose(rows: list[dict]) -> list[dict]:
    """Per modelled row: the figures the module docstring lists (bytes per GPU, requests over every rank)."""
    preds, _ = V.predict_serving(rows)
    groups, _ = V._grouped(rows, None, None, V.row_problem)
    return [d for objs, idx in groups for d in _group(objs, [rows[i] for i in idx], [preds[i] for i in idx])]


def _version(source: str) -> str:
    return source.split("_total")[0].split("overview_")[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="llama-4-maverick,llama-4-scout,qwen3-235b-a22b")
    ap.add_argument("--gpus", default="h100,h200,b200")
    ap.add_argument("--plan", choices=("converted", "tp-ep", "adp-ep"), default="converted")
    args = ap.parse_args()
    models, gpus = args.models.split(","), args.gpus.split(",")
    rows = [replan(r, args.plan) for r in V.read_rows(ROWS) if r["model"] in models and r["gpu"] in gpus]
    res = sorted(diagnose(rows), key=lambda d: (d["row"]["model"], d["row"]["gpu"], d["row"]["source"]))
    print("| model | gpu | table | plan | ISL/OSL | measured | predicted | error % | bench batch / tokens | KV holds | runs | step ms "
          "| B* | KV at B* GB | free KV GB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d in res:
        r = d["row"]
        b = "never" if not np.isfinite(d["b_star"]) else f"{d['b_star']:,.0f}"
        kv = "–" if not np.isfinite(d["b_star"]) else f"{d['kv_at_b_star_gb']:.1f}"
        print(f"| {r['model']} | {r['gpu']} | {_version(r['source'])} | TP{r['tp']} EP{r['ep']} ADP{r['attention_dp']} | {r['isl']}/{r['osl']} "
              f"| {d['measured']:,.0f} | {d['predicted']:,.0f} | {d['error_pct']:+.1f} | {d['bench_batch']:,.0f} / {d['bench_tokens']:,.0f} "
              f"| {d['kv_requests']:,.0f} | {d['running']:,.0f} | {d['step_ms']:.1f} | {b} | {kv} | {d['free_kv_gb']:.1f} |")
    print("\n| model | gpu | table | rows | signed median error % | never reached |\n|---|---|---|---|---|---|")
    keys = sorted({(d["row"]["model"], d["row"]["gpu"], _version(d["row"]["source"])) for d in res})
    for m, g, v in keys:
        sel = [d for d in res if (d["row"]["model"], d["row"]["gpu"], _version(d["row"]["source"])) == (m, g, v)]
        print(f"| {m} | {g} | {v} | {len(sel)} | {np.median([d['error_pct'] for d in sel]):+.1f} | "
              f"{sum(not np.isfinite(d['b_star']) for d in sel)} |")


if __name__ == "__main__":
    main()
