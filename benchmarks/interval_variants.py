"""How the between-group term combines with a slice's within-slice bound, and which terms: the variants of
docs/modelling-notes.md#cov40-linear (issue 40), on interval_folds' folds.

Run: python benchmarks/interval_variants.py   (no GPU; about a minute on 2 cores)
One residual computation (interval_folds.residual_sets); per fold, each held-out run's within-slice bounds at 80% and 95%
(measure.intervals.within, independent of the terms) and its reasons, once; then, per variant, the terms measured on the
folds sharing no measured run with the scored one (cross-fitted, as interval_folds.coverage) and the bands built from
them here (not through intervals.band): the combination in quadrature (main 74026da), added (shipped since cov40), added
with CQR's unfloored score, multiplicative; signed terms (each side's need at (100 + L) / 2); terms per metric kind
(TTFT; TPOT and the rates). Prints per variant the campaign/family cells meeting both targets / the 80% / the 95% (of
20), the other cells meeting both (of 66) and the median 80% width over the prediction (20 / all).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import interval_folds as F  # noqa: E402

from llm_codesign.measure import intervals as iv  # noqa: E402


def precompute(sets: dict) -> None:
    """Per fold: its held-out runs' residuals, slice medians, within-slice bounds and reasons (PRE, FOLDS)."""
    kt = iv.kernel_tables()
    for f in F.folds(sets):
        t = iv.build(f.train) | {"kernel_tables": kt}
        cols = {k: [] for k in ("metric", "r", "m", "b80", "a80", "b95", "a95", "why")}
        for ctx, res in f.test:
            for m, r in res.items():
                c, _, found, mine = iv.lookup(m, ctx, t)
                b80, a80 = iv.within(m, c, found, t, 80, own=mine)
                b95, a95 = iv.within(m, c, found, t, 95, own=mine)
                for k, v in (
                    ("metric", m),
                    ("r", r),
                    ("m", c["q500"]),
                    ("b80", b80),
                    ("a80", a80),
                    ("b95", b95),
                    ("a95", a95),
                    ("why", tuple(dict.fromkeys(w.term for w in iv.reasons(found, t)))),
                ):
                    cols[k].append(v)
        d = {k: np.array(v, float) for k, v in cols.items() if k not in ("metric", "why")}
        PRE[f.name] = {"fold": f, "d": d | {"metric": np.array(cols["metric"]), "why": cols["why"]}}
        FOLDS.append(f)


PRE: dict = {}
FOLDS: list = []
LV = (80, 95)
RATE = {"tok_s_per_user", "output_tok_s_per_gpu"}
TTFT = {"ttft_ms"}


def slow_sign(d):
    """+1 where r above the centre means slower than predicted (time metrics), -1 for rates"""
    return np.where(np.isin(d["metric"], list(RATE)), -1.0, 1.0)


COMB = ["quad"]


def needs(d, lvl):
    off = d["r"] - d["m"]
    side = np.where(off >= 0, d[f"a{lvl}"], d[f"b{lvl}"])
    if COMB[0] == "lin":
        return np.maximum(np.abs(off) - side, 0.0)
    if COMB[0] == "cqr":
        return np.abs(off) - side
    if COMB[0] == "mult":
        return np.log(np.maximum(np.abs(off) / np.maximum(side, 1e-3), 1.0))
    return np.sqrt(np.maximum(off**2 - side**2, 0.0))


def comb(w, k):
    if COMB[0] in ("lin", "cqr"):
        return np.maximum(w + k, 0.0)
    if COMB[0] == "mult":
        return w * np.exp(k)
    return np.hypot(w, k)


def has(d, kind):
    return np.array([kind in (w or ("campaign",)) if kind != "campaign" else (len(w) == 0) for w in d["why"]])


def measure(exclude, *, signed=False, split=None, weights="re", sym_kinds=(), split_kinds=None):
    """terms: {kind or (kind,part): {lvl: (t_lo, t_hi) in r-space orientation per metric handled in band}} -> here as
    {key: {lvl: {"sym": t} or {"slow": t, "fast": t}, "groups": g}}"""
    use = [f for f in FOLDS if exclude is None or not (f.groups & exclude.groups)]
    parts = {"all": None} | (split or {})
    out = {}
    for kind in iv.BETWEEN:
        for pname, pmetrics in parts.items():
            if pname != "all" and split_kinds is not None and kind not in split_kinds:
                continue
            gl = {lvl: [] for lvl in LV}
            gs = {lvl: [] for lvl in LV}
            gf = {lvl: [] for lvl in LV}
            runs = []
            for f in use:
                if kind not in f.terms:
                    continue
                d = PRE[f.name]["d"]
                mask = has(d, kind)
                if pmetrics is not None:
                    mask &= np.isin(d["metric"], pmetrics)
                if not mask.any():
                    continue
                runs.append(max(int((mask & (d["metric"] == m)).sum()) for m in iv.METRICS))
                ss = slow_sign(d)[mask]
                off = (d["r"] - d["m"])[mask]
                for lvl in LV:
                    nd = needs(d, lvl)[mask]
                    gl[lvl].append(nd)
                    slow = off * ss >= 0
                    gs[lvl].append(np.where(slow, nd, 0.0))
                    gf[lvl].append(np.where(~slow, nd, 0.0))
            if not gl[LV[0]]:
                continue
            rec = {"groups": len(gl[LV[0]])}
            for lvl in LV:
                w = F.re_weights(gl[lvl], runs) if weights == "re" else None
                if signed and kind not in sym_kinds:
                    tail = (100 + lvl) / 2
                    rec[lvl] = {"slow": F.pooled(gs[lvl], tail, w), "fast": F.pooled(gf[lvl], tail, w)}
                else:
                    t = F.pooled(gl[lvl], lvl, w)
                    rec[lvl] = {"slow": t, "fast": t}
            out[(kind, pname)] = rec
    return out


def term_of(terms, kinds, part):
    """per level (slow, fast): largest over campaign + kinds; floor monotone; unmeasured -> hypot campaign"""
    res = {}
    floor = [0.0, 0.0]
    for lvl in LV:
        ts = [0.0 if COMB[0] != "cqr" else -9.0]
        tf = list(ts)
        new = False
        for k in ("campaign", *kinds):
            rec = terms.get((k, part))
            if rec is None or rec["groups"] < 2:
                rec = terms.get((k, "all"))
            if rec is None:
                continue
            if rec["groups"] < 2 and k != "campaign":
                new = True
                continue
            ts.append(rec[lvl]["slow"])
            tf.append(rec[lvl]["fast"])
        s, f_ = max(ts), max(tf)
        if new:
            c = terms.get(("campaign", part)) or terms.get(("campaign", "all"))
            s, f_ = (
                float(comb(s, c[lvl]["slow"])) if COMB[0] != "mult" else s + c[lvl]["slow"],
                float(comb(f_, c[lvl]["fast"])) if COMB[0] != "mult" else f_ + c[lvl]["fast"],
            )
        floor = [max(floor[0], s), max(floor[1], f_)] if lvl != LV[0] else [s, f_]
        res[lvl] = tuple(floor)
    return res


def part_of(metric, split):
    if not split:
        return "all"
    return next(p for p, ms in split.items() if metric in ms)


def cover(f, terms, split=None, within_scale=None):
    d = PRE[f.name]["d"]
    n = len(d["r"])
    ss = slow_sign(d)
    cache = {}
    lo = np.full(n, np.inf)
    hi = np.full(n, -np.inf)
    inside = {}
    width = None
    K = [None] * n
    for i in range(n):
        key = (d["why"][i], part_of(d["metric"][i], split))
        if key not in cache:
            cache[key] = term_of(terms, *key)
        K[i] = cache[key]
    for lvl in LV:
        ks = np.array([K[i][lvl][0] for i in range(n)])
        kf = np.array([K[i][lvl][1] for i in range(n)])
        khi = np.where(ss > 0, ks, kf)
        klo = np.where(ss > 0, kf, ks)
        b, a = d[f"b{lvl}"], d[f"a{lvl}"]
        lo = np.minimum(lo, d["m"] - comb(b, klo))
        hi = np.maximum(hi, d["m"] + comb(a, khi))
        inside[lvl] = (lo <= d["r"]) & (d["r"] <= hi)
        if lvl == 80:
            width = np.exp(hi) - np.exp(lo)
    rows = []
    for m in iv.METRICS:
        mk = d["metric"] == m
        if not mk.any():
            continue
        rows.append(
            {
                "fold": f.name,
                "kind": f.kind,
                "metric": m,
                "n": int(mk.sum()),
                "cov80": float(inside[80][mk].mean()),
                "cov95": float(inside[95][mk].mean()),
                "width80": float(np.median(width[mk])),
            }
        )
    return rows


def run(label, show=False, **kw):
    split = kw.get("split")
    rows = []
    for f in FOLDS:
        terms = measure(f, **kw)
        rows += cover(f, terms, split)
    tested = [r for r in rows if r["kind"] in ("campaign", "family")]
    other = [r for r in rows if r not in tested]
    met = F._met
    b = sum(met(r) == "both" for r in tested)
    c80 = sum(met(r) in ("both", "80%") for r in tested)
    c95 = sum(met(r) in ("both", "95%") for r in tested)
    ob = sum(met(r) == "both" for r in other)
    print(
        f"{label:40s} 20: {b}/{c80}/{c95}  other66: {ob}  width {np.median([r['width80'] for r in tested]):.3f}/{np.median([r['width80'] for r in rows]):.3f}",
        flush=True,
    )
    if show:
        for r in tested:
            print(
                f"  {r['fold'][:36]:36s} {iv.LABELS[r['metric']]:10s} {100 * r['cov80']:5.1f} {100 * r['cov95']:5.1f} w{r['width80']:.2f} {met(r)}"
            )
    return rows


if __name__ == "__main__":
    precompute(F.residual_sets())
    SPLIT = {"ttft": ["ttft_ms"], "step": ["tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu"]}
    for how, label, kw in (
        ("quad", "main 74026da: in quadrature", {}),
        ("quad", "signed", {"signed": True}),
        ("quad", "signed, the campaign term symmetric", {"signed": True, "sym_kinds": ("campaign",)}),
        ("quad", "terms per metric kind", {"split": SPLIT}),
        ("quad", "the campaign term per metric kind", {"split": SPLIT, "split_kinds": ("campaign",)}),
        ("mult", "multiplicative", {}),
        ("lin", "added (shipped)", {}),
        ("cqr", "added, CQR's unfloored score", {}),
        ("lin", "added, signed", {"signed": True}),
        ("lin", "added, the campaign term per metric kind", {"split": SPLIT, "split_kinds": ("campaign",)}),
    ):
        COMB[0] = how
        run(label, **kw)
