"""The disaggregated runs' intervals by load band (issue 40, docs/modelling-notes.md#dband-load): main's walk (HIERARCHY:
a thin load band drops to the engine's runs of every load) against LOAD_FIRST_MODES' (a thin load band pools across
engines first). The disaggregated runs are held out of every serving fit (interval_folds' module docstring) and no fold
holds them out of the slices, so they are scored here two ways with the bundled profile's residuals: in sample (the
slices built on all 175) and leave-one-run-out (each run's slices, spread pool and envelope built on the other 174; the
between-group terms, and every other mode's slices, the shipped intervals.toml's: no disaggregated run is a fold's test
run, so they do not move). Per load band and metric: runs, the share inside the 80% and 95% intervals and the median
width hi/lo of each (a factor). `python benchmarks/interval_disagg.py` (about 1 min on one core)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interval_folds import FILES, MEAS  # noqa: E402

from llm_codesign.measure import intervals as iv  # noqa: E402
from llm_codesign.measure.validate import predict_serving, read_rows  # noqa: E402

VARIANTS = {"main (HIERARCHY)": (), "load first": ("disaggregated",)}


def table_on(records: list, base: dict) -> dict:
    """`base` (the shipped table) with its disaggregated slices, spread pools and envelope built on `records`."""
    t = iv.build(records)
    slices = {m: {k: v for k, v in base["slices"][m].items() if not k.startswith("disaggregated")} | t["slices"][m]
              for m in iv.METRICS}
    spread = {k: v for k, v in base["spread"].items() if "|disaggregated|" not in k} | t["spread"]
    env = dict(base["envelope"]) | {"disaggregated": t["envelope"]["disaggregated"]}
    return base | {"slices": slices, "spread": spread, "envelope": env}


def score(records: list, loo: bool) -> dict:
    """{(load, metric): (inside80, inside95, width80, width95)} lists over the records."""
    base = iv.bundled()
    full = table_on(records, base)
    out: dict = {}
    for i, (ctx, res) in enumerate(records):
        t = table_on(records[:i] + records[i + 1:], base) if loo else full
        for m, r in res.items():
            b = iv.band(m, 1.0, ctx, table=t)
            d = out.setdefault((ctx.load, m), ([], [], [], []))
            for j, lvl in enumerate(iv.LEVELS):
                d[j].append(math.log(b[f"lo{lvl}"]) <= r <= math.log(b[f"hi{lvl}"]))
                d[2 + j].append(b[f"hi{lvl}"] / b[f"lo{lvl}"])
    return out


def main() -> None:
    rows = read_rows(MEAS / FILES["disagg"])
    records = iv.residuals(rows, predict_serving(rows)[0])
    for name, modes in VARIANTS.items():
        iv.LOAD_FIRST_MODES = modes
        for loo in (False, True):
            s = score(records, loo)
            print(f"\n{name}, {'leave-one-run-out' if loo else 'in sample'}")
            print("| load | metric | runs | inside 80 / 95% | width 80 / 95% (hi/lo, median) |")
            print("|---|---|---|---|---|")
            for (load, m), d in sorted(s.items(), key=lambda kv: (iv.METRICS.index(kv[0][1]), kv[0][0])):
                print(f"| {load} | {iv.LABELS[m]} | {len(d[0])} | {100 * np.mean(d[0]):.1f} / {100 * np.mean(d[1]):.1f} | "
                      f"x{np.median(d[2]):.2f} / x{np.median(d[3]):.2f} |")


if __name__ == "__main__":
    main()
