"""The harness's arrival pattern in the intervals: as a slice dimension and as a reason to widen (issue 40,
docs/modelling-notes.md#interval-arrival).

Run: python benchmarks/interval_arrival.py   (no GPU, about 5 minutes on 2 cores)
One residual computation (interval_folds.residual_sets), then interval_folds' folds, coverage and shipped table under
each variant: per variant the campaign/family fold x metric cells (of 20) meeting both targets, the 80% and the 95%,
the other cells (of 66) meeting both, the median 80% width over the prediction (20 / all) and the three serving
campaigns' TTFT and TPOT inside the 80% / 95% interval in sample; then each cell that moves against main.
Variants:
- main: no arrival (HIERARCHY for every metric);
- slices, engine levels first (shipped): TTFT's levels naming the engine also by arrival, walked before the others;
- slices, every level first: every TTFT level also by arrival, walked before the others;
- slices, engine levels first, every metric;
- reason, TTFT / every metric: no arrival slices, and an answer whose arrival no training run of its engine (for an
  engine with none, of its mode) measured carries an "arrival" between-group term, measured on the held-out folds like
  the others;
- slices and the TTFT reason together.
"""
from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import interval_folds as F  # noqa: E402

from llm_codesign.measure import intervals as iv  # noqa: E402

ORIG = {k: getattr(iv, k) for k in ("hierarchy", "build", "reasons", "band", "WIDEN", "BETWEEN")}
ORIG_FOLDS = F.folds
CURRENT = [None]  # the metric band() was last asked about (scores() asks reasons() right after, for the same metric)


def hierarchy_variant(metrics: tuple[str, ...], engine_only: bool):
    def hierarchy(metric: str):
        if metric not in metrics:
            return iv.HIERARCHY
        return (*((*lv, "arrival") for lv in iv.HIERARCHY if "engine" in lv or not engine_only), *iv.HIERARCHY)
    return hierarchy


def with_reason(metrics: tuple[str, ...]) -> None:
    """The arrival reason on: the envelope records each mode's engines' arrivals, reasons() names a missing one for
    `metrics`, every fold but the edge folds measures its term."""
    def build(records, **kw):
        t = ORIG["build"](records, **kw)
        for mode in t["envelope"]:
            if isinstance(t["envelope"][mode], dict) and "engines" in t["envelope"][mode]:
                got: dict[str, set] = {}
                for c, _ in records:
                    if c.mode == mode and c.arrival:
                        got.setdefault(c.engine, set()).add(c.arrival)
                t["envelope"][mode]["arrivals"] = {e: sorted(a) for e, a in got.items()}
        return t

    def band(metric, *a, **k):
        CURRENT[0] = metric
        return ORIG["band"](metric, *a, **k)

    def reasons(ctx, table):
        out = ORIG["reasons"](ctx, table)
        arrivals = table["envelope"].get(ctx.mode, {}).get("arrivals")
        if CURRENT[0] in metrics and ctx.arrival and arrivals:
            have = arrivals.get(ctx.engine) or sorted({a for v in arrivals.values() for a in v})
            if ctx.arrival not in have:
                out.append(iv.Widening("arrival", f"no measured run of {ctx.engine} under a {ctx.arrival} arrival"))
        return out

    def folds(sets):
        return [replace(f, terms=(*f.terms, "arrival")) if f.terms == ORIG["BETWEEN"] else f for f in ORIG_FOLDS(sets)]

    iv.build, iv.band, iv.reasons, F.folds = build, band, reasons, folds
    iv.WIDEN, iv.BETWEEN = (*ORIG["WIDEN"], "arrival"), (*ORIG["BETWEEN"], "arrival")
    F.KIND_FOLDS["arrival"] = "held-out runs whose arrival no training run of their engine measured"


def reset() -> None:
    for k, v in ORIG.items():
        setattr(iv, k, v)
    F.folds = ORIG_FOLDS


def met(r: dict) -> str:
    return F._met(r)


def run(sets: dict) -> tuple[list[dict], tuple[float, float]]:
    fl = F.folds(sets)
    rows = F.coverage(fl, F.scored(fl, levels=F.DIAGRAM_LEVELS), levels=F.DIAGRAM_LEVELS)
    table = F.shipped(sets, fl, F.scored(fl))
    s = iv.scores([x for k in F.SERVING for x in sets[k]], table)
    ins = {lvl: np.concatenate([s[m][f"inside{lvl}"] for m in ("ttft_ms", "tpot_ms")]) for lvl in (80, 95)}
    return rows, (100 * ins[80].mean(), 100 * ins[95].mean())


VARIANTS = {"main": lambda: setattr(iv, "hierarchy", lambda m: iv.HIERARCHY),
            "slices, engine levels first (shipped)": lambda: setattr(iv, "hierarchy", hierarchy_variant(("ttft_ms",), True)),
            "slices, every level first": lambda: setattr(iv, "hierarchy", hierarchy_variant(("ttft_ms",), False)),
            "slices, engine levels first, every metric": lambda: setattr(iv, "hierarchy", hierarchy_variant(iv.METRICS, True)),
            "reason, TTFT": lambda: (setattr(iv, "hierarchy", lambda m: iv.HIERARCHY), with_reason(("ttft_ms",))),
            "reason, every metric": lambda: (setattr(iv, "hierarchy", lambda m: iv.HIERARCHY), with_reason(iv.METRICS)),
            "slices and the TTFT reason": lambda: (setattr(iv, "hierarchy", hierarchy_variant(("ttft_ms",), True)), with_reason(("ttft_ms",)))}

if __name__ == "__main__":
    sets = F.residual_sets()
    base = None
    for name, setup in VARIANTS.items():
        reset()
        setup()
        rows, ins = run(sets)
        t20 = [r for r in rows if r["kind"] in ("campaign", "family")]
        t66 = [r for r in rows if r["kind"] not in ("campaign", "family")]
        print(f"{name}: 20 cells both {sum(met(r) == 'both' for r in t20)}, 80% {sum(met(r) in ('both', '80%') for r in t20)}, "
              f"95% {sum(met(r) in ('both', '95%') for r in t20)}; other both {sum(met(r) == 'both' for r in t66)} of {len(t66)}; "
              f"median 80% width {statistics.median(r['width80'] for r in t20):.3f} / {statistics.median(r['width80'] for r in rows):.3f}; "
              f"in sample {ins[0]:.1f} / {ins[1]:.1f}%", flush=True)
        for a, b in zip(base or rows, rows, strict=True):
            if (met(a), round(a["cov80"], 3), round(a["cov95"], 3)) != (met(b), round(b["cov80"], 3), round(b["cov95"], 3)):
                print(f"  {a['fold']} {iv.LABELS[a['metric']]}: {100 * a['cov80']:.1f} / {100 * a['cov95']:.1f} ({met(a)}) -> "
                      f"{100 * b['cov80']:.1f} / {100 * b['cov95']:.1f} ({met(b)})")
        base = base or rows
    reset()
