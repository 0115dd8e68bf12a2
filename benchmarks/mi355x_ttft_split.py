"""Where the MI355X campaign's first-token error lies, and what a first token is priced of (issue 39).

    python benchmarks/mi355x_ttft_split.py              # the split, then the parts of a few settings' TTFT
    python benchmarks/mi355x_ttft_split.py --rows       # and every newer-build row, measured beside priced

The split: the signed and absolute median TTFT / TPOT errors of the newer builds' runs (SGLang's from GitHub Actions
run id 2.1e10, every ATOM run: benchmarks/fit_amd_serving.py's set) per engine x weight format x ISL x concurrency band,
priced by `validate`'s own path (measure.validate.predict_serving, the bundled profile). The parts: for one run of each
listed setting, one request's whole-prompt prefill step by operator (the step's kernels as cost.ops.forward_ops builds
them for the engine; step_overhead, eager launches and the per-sequence cost are in the step, not the op list), the front
end's work (ttft_overhead) and the decode steps a request waits (wait_steps). docs/modelling-notes.md#mxpf-ttft-split.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from crossval_campaigns import newer_build

from llm_codesign.cost.ops import forward_ops
from llm_codesign.measure import campaigns
from llm_codesign.measure.validate import _resolve, predict_serving, read_rows
from llm_codesign.serve import aggregated as agg
from llm_codesign.spec.plan import Plan

RUNS = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements" / "serving_inferencex_mi355x.csv"
BANDS = ((1, 4, "1-4"), (5, 32, "5-32"), (33, 10**9, "33+"))
# (engine, weights, ISL, concurrency, TP): the settings whose first token is taken apart
PARTS = (("atom", "fp8_block", 1024, 4, 8), ("atom", "mxfp4", 1024, 4, 8), ("atom", "fp8_block", 8192, 4, 8),
         ("atom", "mxfp4", 8192, 4, 4), ("sglang", "fp8_block", 1024, 4, 8), ("sglang", "mxfp4", 1024, 4, 4),
         ("sglang", "mxfp4", 8192, 4, 8))


def newer(r: dict) -> bool:
    return newer_build(r)  # campaign C's builds (benchmarks/crossval_campaigns.py)


def band(c: float) -> str:
    return next(name for lo, hi, name in BANDS if lo <= c <= hi)


def stats(e_ttft: np.ndarray, e_tpot: np.ndarray) -> str:
    return (f"n={len(e_ttft):3d}  TTFT {np.median(np.abs(e_ttft)):5.1f}% ({np.median(e_ttft):+5.1f})  "
            f"TPOT {np.median(np.abs(e_tpot)):5.1f}% ({np.median(e_tpot):+5.1f})")


def split(rows: list[dict], preds: list[dict], show_rows: bool) -> list[tuple]:
    keep = [(r, p) for r, p in zip(rows, preds, strict=True) if p and newer(r)]
    err = {m: np.array([100.0 * (p[m] / float(r[m]) - 1.0) for r, p in keep]) for m in ("ttft_ms", "tpot_ms")}
    keys = [(r["backend"], r["weight_dtype"], int(r["isl"]), band(float(r["concurrency"]))) for r, _ in keep]
    print("newer builds, all:", stats(err["ttft_ms"], err["tpot_ms"]))
    for depth in (1, 2, 3, 4):
        print()
        for k in sorted({k[:depth] for k in keys}):
            i = np.array([kk[:depth] == k for kk in keys])
            print(f"  {' / '.join(map(str, k)):32s}", stats(err["ttft_ms"][i], err["tpot_ms"][i]))
    if show_rows:
        print("\nrun id, engine, weights, ISL/OSL, concurrency, TP: TTFT measured -> priced (error %), TPOT measured -> priced")
        for (r, p), e in sorted(zip(keep, err["ttft_ms"], strict=True), key=lambda x: (x[0][0]["backend"], x[0][0]["weight_dtype"],
                                                                                       int(x[0][0]["isl"]), campaigns.inferencex_run_id(x[0][0]["source"]))):
            print(f"  {float(campaigns.inferencex_run_id(r['source'])):.4e} {r['backend']:6s} {r['weight_dtype']:9s} {r['isl']}/{r['osl']} c={r['concurrency']:>3s} TP{r['tp']}: "
                  f"{float(r['ttft_ms']):7.1f} -> {p['ttft_ms']:7.1f} ({e:+6.1f})  {float(r['tpot_ms']):6.2f} -> {p['tpot_ms']:6.2f}")
    return keep


def parts(rows: list[dict]) -> None:
    seen = set()
    for r in rows:
        key = (r["backend"], r["weight_dtype"], int(r["isl"]), int(float(r["concurrency"] or 0)), int(r["tp"]))
        if key not in PARTS or key in seen or not newer(r):
            continue
        seen.add(key)
        model, gpu, prec, _, engine, cal = _resolve(r, None, None)
        for fusion in campaigns.fusions_off(campaigns.settings(r)):
            engine = engine.without(fusion)
        costs = engine.costs(cal)
        tp, isl = int(r["tp"]), float(r["isl"])
        sh = Plan(tp, 1, int(r["ep"]), tp // int(r["ep"]), 1, 1).broadcast()
        b = agg.prefill_batch(tokens=isl, isl=isl, chunk=isl)
        ops = forward_ops(model, gpu, costs.cal, prec, sh, b=b, engine=costs.engine, sample=True)
        per = agg.pdl_per_launch(gpu, costs)
        step = float(np.sum(agg.prefill_step(model, gpu, prec, sh, costs=costs, tokens=isl, isl=isl, chunk=isl)))
        by_op: dict[str, float] = {}
        for op in ops:
            name = op.name.split("/", 1)[-1]
            by_op[name] = by_op.get(name, 0.0) + float(np.sum(agg.op_step_time(op, per)))
        print(f"\n{' '.join(map(str, key))} ({prec.on(gpu).label()}): measured TTFT {float(r['ttft_ms']):.1f} ms; one prompt's prefill step "
              f"{step * 1e3:.1f} ms, front end {costs.ttft_overhead * 1e3:.1f} ms, wait {float(costs.wait_steps(1, 4)):.2f} decode steps")
        for name, t in sorted(by_op.items(), key=lambda x: -x[1])[:10]:
            print(f"    {name:28s} {t * 1e3:7.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="list every newer-build row")
    a = ap.parse_args()
    rows = read_rows(RUNS)
    preds, _ = predict_serving(rows)
    split(rows, preds, a.rows)
    parts(rows)


if __name__ == "__main__":
    main()
