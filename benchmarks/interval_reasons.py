"""How a held-out run's reasons to widen combine, and why some folds' intervals are too wide (issue 40).

Run: python benchmarks/interval_reasons.py   (no GPU, ~3 min; the folds and cross-fitting of interval_folds.py)
Prints, on the shipped cross-fitted folds (docs/validation_report.md's fold tables):
1. per campaign/family cell (and engine vllm) the share of held-out runs inside the 80% / 95% interval with no
   between-group term, with the campaign term alone and with the shipped rule (the largest of the campaign term and
   the terms of the run's reasons): what the slice alone already covers, what the terms add;
2. per reason kind, the share of its held-out runs x metrics where it is the run's only reason;
3. the variants measured (docs/modelling-notes.md#interval-combine), each against the shipped one: cells meeting both
   targets (20 campaign/family, 66 others), 80% met, 95% met, median 80% width over the prediction, in-sample
   coverage of the three serving campaigns' TTFT and TPOT with the table every fold builds:
   - centre: a slice across engine x family groups (the HIERARCHY levels without engine or family, where a question
     on a new family or engine lands) keeps its median but takes its spread from its residuals less their own
     group's median (the within-group spread of a random-effects decomposition; the between-group shift is the term);
   - combo: a question with several reasons takes the term measured on the held-out runs with exactly that
     combination of reasons, where one was measured, else the largest of its reasons' terms;
   - quadrature: the reasons' terms added in quadrature (independent group effects), at least the campaign term;
   - joint: the terms backfitted so that each reason's held-out runs are covered at the level under the rule applied
     (the largest term of a run's reasons), not each measured alone;
   - centre + joint.
Nothing here is shipped: measure/intervals.py is unchanged (none of the variants raised the cells meeting both).
"""
from __future__ import annotations

import math
import sys
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import interval_folds as F  # noqa: E402

from llm_codesign.measure import intervals as iv  # noqa: E402

SHIPPED_BUILD, SHIPPED_BETWEEN_F, SHIPPED_BETWEEN_IV = iv.build, F.between, iv.between
ACROSS = [lv for lv in iv.HIERARCHY if not {"engine", "family"} <= set(lv)]


def centred_build(records, *, min_rows=iv.MIN_ROWS, levels=iv.LEVELS):
    """iv.build with each slice across engine x family groups spread as its residuals less their group's median."""
    t = SHIPPED_BUILD(records, min_rows=min_rows, levels=levels)
    res: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for ctx, rs in records:
        for m, r in rs.items():
            for lv in ACROSS:
                res.setdefault((m, ctx.key(lv)), []).append((r, f"{ctx.engine}|{ctx.family}"))
    for (m, key), xs in res.items():
        if key in t["slices"][m]:
            r, g = np.array([x for x, _ in xs]), np.array([k for _, k in xs])
            med, d = float(np.median(r)), r.copy()
            for k in np.unique(g):
                d[g == k] = r[g == k] - np.median(r[g == k]) + med
            t["slices"][m][key] = {**t["slices"][m][key], **iv.cell(d, levels=levels), "q500": round(med, 4)}
    return t


def _why(w: str, f) -> frozenset:
    return frozenset(set(w.split(",")) & set(f.terms)) - {"campaign"}


def combo_between(fold_list, scores, *, levels=iv.LEVELS, exclude=None):
    """The shipped terms plus one per combination of two or more reasons, over the held-out runs with exactly it."""
    out = SHIPPED_BETWEEN_F(fold_list, scores, levels=levels, exclude=exclude)
    use = [f for f in fold_list if exclude is None or not (f.groups & exclude.groups)]
    seen = {_why(w, f) for f in use for s in scores[f.name][1].values() for w in s["why"]}
    for ks in (k for k in seen if len(k) >= 2):
        groups, runs = {lvl: [] for lvl in levels}, []
        for f in use:
            per = [(s, np.array([_why(w, f) == ks for w in s["why"]], bool)) for s in scores[f.name][1].values()]
            if any(m.any() for _, m in per):
                runs.append(max(int(m.sum()) for _, m in per))
                for lvl in levels:
                    groups[lvl].append(np.concatenate([s[f"need{lvl}"][m] for s, m in per]))
        out["+".join(sorted(ks))] = {f"t{lvl}": F.pooled(groups[lvl], lvl, F.re_weights(groups[lvl], runs)) for lvl in levels}
    return out


def combo_iv_between(why, table, *, own=False, levels=iv.LEVELS):
    key, terms = "+".join(sorted(set(why))), table.get("between", {})
    if len(set(why)) < 2 or key not in terms:
        return SHIPPED_BETWEEN_IV(why, table, own=own, levels=levels)
    out, floor = {}, 0.0
    for lvl in sorted(levels):
        floor = out[lvl] = max([floor, terms[key][f"t{lvl}"]] + ([] if own else [terms.get("campaign", {}).get(f"t{lvl}", 0.0)]))
    return out


def quadrature_iv_between(why, table, *, own=False, levels=iv.LEVELS):
    terms, out, floor = table.get("between", {}), {}, 0.0
    for lvl in sorted(levels):
        summed = math.sqrt(sum(terms[k][f"t{lvl}"] ** 2 for k in set(why) if k in terms))
        floor = out[lvl] = max(floor, summed, 0.0 if own else terms.get("campaign", {}).get(f"t{lvl}", 0.0))
    return out


def joint_between(fold_list, scores, *, levels=iv.LEVELS, exclude=None, iters=50):
    """The shipped terms backfitted (Gauss-Seidel from the shipped ones): each kind's term the pooled quantile of its runs'
    need left uncovered by the largest of the campaign term and their other reasons' terms."""
    out = SHIPPED_BETWEEN_F(fold_list, scores, levels=levels, exclude=exclude)
    use = [f for f in fold_list if exclude is None or not (f.groups & exclude.groups)]
    data = {}
    for kind in out:
        rows = []
        for f in use:
            if kind not in f.terms:
                continue
            per = [(s, np.array([kind in w.split(",") for w in s["why"]], bool)) for s in scores[f.name][1].values()]
            if any(m.any() for _, m in per):
                rows.append(({lvl: np.concatenate([s[f"need{lvl}"][m] for s, m in per]) for lvl in levels},
                             [_why(w, f) for s, m in per for w, x in zip(s["why"], m, strict=True) if x], max(int(m.sum()) for _, m in per)))
        data[kind] = rows
    for lvl in levels:
        tau = {k: out[k][f"t{lvl}"] for k in out}
        for _ in range(iters):
            old = dict(tau)
            for kind, rows in data.items():
                groups = []
                for need, why, _ in rows:
                    cover = np.array([max([tau[j] for j in w if j != kind and j in tau] + ([tau["campaign"]] if kind != "campaign" else []),
                                          default=0.0) for w in why])
                    groups.append(np.where(need[lvl] > cover, need[lvl], 0.0))
                tau[kind] = F.pooled(groups, lvl, F.re_weights(groups, [r for *_, r in rows]))
            if max(abs(tau[k] - old[k]) for k in tau) < 1e-9:
                break
        for k in out:
            out[k][f"t{lvl}"] = tau[k]
    return out


def measure(label: str, fl, sets) -> dict:
    """validation_report.py's fold figures (coverage at DIAGRAM_LEVELS, the shipped table from LEVELS) and the in-sample ones."""
    rows = F.coverage(fl, F.scored(fl, levels=F.DIAGRAM_LEVELS), levels=F.DIAGRAM_LEVELS)
    sc = F.scored(fl)
    table = tomllib.loads(iv.to_toml(F.shipped(sets, fl, sc), []))
    n = i80 = i95 = 0
    for k in F.SERVING:
        s = iv.scores(sets[k], table)
        for m in ("ttft_ms", "tpot_ms"):
            n, i80, i95 = n + len(s[m]["inside80"]), i80 + s[m]["inside80"].sum(), i95 + s[m]["inside95"].sum()
    tested = [r for r in rows if r["kind"] in ("campaign", "family")]
    other = [r for r in rows if r["kind"] not in ("campaign", "family")]
    out = {"both": sum(F._met(r) == "both" for r in tested), "80": sum(F._met(r) in ("both", "80%") for r in tested),
           "95": sum(F._met(r) in ("both", "95%") for r in tested), "other": sum(F._met(r) == "both" for r in other), "n_other": len(other),
           "w20": float(np.median([r["width80"] for r in tested])), "w_all": float(np.median([r["width80"] for r in rows])),
           "in80": 100 * i80 / n, "in95": 100 * i95 / n,
           "terms": {k: (math.exp(v["t80"]), math.exp(v["t95"])) for k, v in table["between"].items() if "+" not in k}}
    print(f"{label}: 20 cells both {out['both']} (80% {out['80']}, 95% {out['95']}); other {out['other']} of {out['n_other']}; "
          f"median 80% width {out['w20']:.3f} (20 cells), {out['w_all']:.3f} (all); in sample {out['in80']:.1f} / {out['in95']:.1f}%")
    print("   cells: " + "; ".join(f"{r['fold'].split(',')[0].replace('campaign TensorRT-LLM perf overview', 'perf')} "
                                    f"{iv.LABELS[r['metric']]} {100 * r['cov80']:.0f}/{100 * r['cov95']:.0f}"
                                    for r in tested if r["metric"] != "tok_s_per_user"))
    print("   terms 80/95: " + ", ".join(f"{k} x{a:.2f}/x{b:.2f}" for k, (a, b) in out["terms"].items()))
    return out


def decomposition(fl, sc) -> None:
    print("fold | metric | inside 80/95% with no term | campaign term alone | shipped rule")
    for f in fl:
        if f.kind not in ("campaign", "family") and f.name != "engine vllm":
            continue
        t, _ = sc[f.name]
        b = SHIPPED_BETWEEN_F(fl, sc, exclude=f)
        got = {lab: iv.scores(f.test, t | {"between": terms}) for lab, terms in (("none", {}), ("campaign", {"campaign": b["campaign"]}), ("full", b))}
        for m in got["none"]:
            if m == "tok_s_per_user":
                continue
            print(f"{f.name} | {iv.LABELS[m]} | " + " | ".join(f"{100 * got[lab][m]['inside80'].mean():.1f} / {100 * got[lab][m]['inside95'].mean():.1f}"
                                                         for lab in ("none", "campaign", "full")))


def shares(fl, sc) -> None:
    print("kind | held-out runs x metrics | its only reason (%)")
    for kind in iv.WIDEN:
        whys = [_why(w, f) for f in fl if kind in f.terms for s in sc[f.name][1].values() for w in s["why"]]
        mine = [w for w in whys if kind in w]
        if mine:
            print(f"{kind} | {len(mine)} | {100 * sum(len(w) == 1 for w in mine) / len(mine):.1f}")


if __name__ == "__main__":
    sets = F.residual_sets()
    fl = F.folds(sets)
    sc = F.scored(fl)
    decomposition(fl, sc)
    shares(fl, sc)
    measure("shipped", fl, sets)
    iv.build = centred_build
    measure("centre", fl, sets)
    iv.build = SHIPPED_BUILD
    F.between, iv.between = combo_between, combo_iv_between
    measure("combo", fl, sets)
    F.between, iv.between = SHIPPED_BETWEEN_F, quadrature_iv_between
    measure("quadrature", fl, sets)
    F.between, iv.between = joint_between, SHIPPED_BETWEEN_IV
    measure("joint", fl, sets)
    iv.build = centred_build
    measure("centre + joint", fl, sets)
