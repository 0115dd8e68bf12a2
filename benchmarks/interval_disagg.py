"""The disaggregated runs' intervals by load band (issue 40, docs/modelling-notes.md#dband-load, #dband2-load,
#dband2-load). The disaggregated runs are held out of every serving fit (interval_folds' module docstring) and no fold
holds them out of the slices, so they are scored here two ways with the bundled profile's residuals: in sample (the
slices built on all 175) and leave-one-run-out (each run's slices, spread pool and envelope built on the other 174; the
between-group terms, and every other mode's slices, the shipped intervals.toml's: no disaggregated run is a fold's test
run, so they do not move). Every run is scored, the one whose TTFT its repeat does not reproduce (intervals.unreproduced)
included: the variants differ in what builds the slices. Variants: `main` (85a81b4b: no pooled band, every run in the
slices), `flag` (the unreproduced run out of the slices' quantiles), `flag + lower` (and the 5-32 band pooled with 1-4,
LOAD_POOLS as shipped), `flag + upper` (5-32 pooled with 33+) for every metric. Per load band and metric: runs, the share inside the 80%
and 95% intervals and the median width hi/lo of each (a factor); then the 5-32 band's variant chosen nested: for each of
its runs, the pooling (none, lower, upper) whose leave-one-run-out coverage on the band's other runs lies nearest the
stated levels (per metric, summed over the levels; ties to the narrower), that run scored with it; `flag + shipped` is the
sides POOL_SIDE ships (TTFT upper, the rest lower).
`python benchmarks/interval_disagg.py` (a few minutes on one core)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interval_folds import FILES, MEAS, disagg_scores  # noqa: E402

from llm_codesign.measure import intervals as iv  # noqa: E402
from llm_codesign.measure.validate import predict_serving, read_rows  # noqa: E402

SHIPPED_SIDE = dict(iv.POOL_SIDE)
POOLS = {"none": None, "lower": "load_below", "upper": "load_above"}
VARIANTS = {"main": (False, "none"), "flag": (True, "none"), "flag + lower": (True, "lower"), "flag + upper": (True, "upper"),
            "flag + shipped (TTFT upper, the rest lower)": (True, "shipped")}


def score(records: list, loo: bool) -> dict:
    """interval_folds.disagg_scores with the shipped table's other modes."""
    return disagg_scores(records, iv.bundled(), loo=loo)


def nested(by_pool: dict[str, dict], load: str = "5-32") -> dict:
    """The `load` band's runs each scored with the pooling chosen on the band's other runs (module docstring)."""
    out: dict = {}
    for m in iv.METRICS:
        runs = sorted({i for s in by_pool.values() for i in s.get((load, m), ([],) * 5)[4]})
        for i in runs:
            def cost(name, m=m, i=i):
                d = by_pool[name][load, m]
                keep = [k for k, j in enumerate(d[4]) if j != i]
                return (sum(abs(np.mean([d[j][k] for k in keep]) - lvl / 100) for j, lvl in enumerate(iv.LEVELS)),
                        float(np.median([d[2][k] for k in keep])))
            pick = min(by_pool, key=cost)
            d = by_pool[pick][load, m]
            k = d[4].index(i)
            e = out.setdefault(m, ([], [], [], [], []))
            for j in range(4):
                e[j].append(d[j][k])
            e[4].append(pick)
    return out


def main() -> None:
    rows = read_rows(MEAS / FILES["disagg"])
    preds = predict_serving(rows)[0]
    flagged = iv.unreproduced(rows, preds)
    for i, why in flagged.items():
        print(f"unreproduced: {iv._run_id(rows[i])} {rows[i]['gpu']} {rows[i]['concurrency']} requests {rows[i]['isl']}/{rows[i]['osl']}: {why}")
    ttft = iv.REPEAT_TTFT
    iv.REPEAT_TTFT = math.inf
    plain = iv.residuals(rows, preds)
    iv.REPEAT_TTFT = ttft
    records = iv.residuals(rows, preds)
    loo_by_pool = {}
    for name, (flag, pools) in VARIANTS.items():
        iv.POOL_SIDE = SHIPPED_SIDE if pools == "shipped" else dict.fromkeys(iv.METRICS, POOLS[pools])
        for loo in (False, True):
            s = score(records if flag else plain, loo)
            if loo and flag and pools in POOLS:
                loo_by_pool[pools] = s
            print(f"\n{name}, {'leave-one-run-out' if loo else 'in sample'}")
            print("| load | metric | runs | inside 80 / 95% | width 80 / 95% (hi/lo, median) |")
            print("|---|---|---|---|---|")
            for (load, m), d in sorted(s.items(), key=lambda kv: (iv.METRICS.index(kv[0][1]), kv[0][0])):
                print(f"| {load} | {iv.LABELS[m]} | {len(d[0])} | {100 * np.mean(d[0]):.1f} / {100 * np.mean(d[1]):.1f} | "
                      f"x{np.median(d[2]):.2f} / x{np.median(d[3]):.2f} |")
    iv.POOL_SIDE = SHIPPED_SIDE
    print("\n5-32, the pooling chosen nested (leave-one-run-out)")
    print("| metric | runs | inside 80 / 95% | width 80 / 95% | chosen |")
    print("|---|---|---|---|---|")
    for m, d in sorted(nested(loo_by_pool).items(), key=lambda kv: iv.METRICS.index(kv[0])):
        picks = {p: d[4].count(p) for p in dict.fromkeys(d[4])}
        print(f"| {iv.LABELS[m]} | {len(d[0])} | {100 * np.mean(d[0]):.1f} / {100 * np.mean(d[1]):.1f} | "
              f"x{np.median(d[2]):.2f} / x{np.median(d[3]):.2f} | {', '.join(f'{p} {n}' for p, n in picks.items())} |")


if __name__ == "__main__":
    main()
