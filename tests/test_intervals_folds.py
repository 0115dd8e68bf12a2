"""The held-out folds that measure the intervals' between-group terms (benchmarks/interval_folds.py): each
fold weighs its random-effects weight (alike where the folds differ far beyond their noise), a fold's coverage takes its terms from the folds sharing no measured run with it, and
every campaign the validation sets hold is a fold (the three serving campaigns, MI355X's among them, and
the TensorRT-LLM perf overview's releases)."""
import importlib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folds_mod(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("interval_folds")


def test_each_group_weighs_alike(folds_mod):
    # group a: 1, 2, 3, 4 (1/8 each); group b: 10 (1/2). Cumulative 1/8, 2/8, 3/8, 4/8, 1: the 50% point is 4 and
    # the 80% point 10, where pooling the five runs alike would give the 4th of 5 (4) at 80%
    groups = [np.array([4.0, 1.0, 3.0, 2.0]), np.array([10.0])]
    assert folds_mod.pooled(groups, 50) == 4.0 and folds_mod.pooled(groups, 80) == 10.0
    assert folds_mod.pooled([np.array([1.0, 2.0, 3.0, 4.0, 10.0])], 80) == 4.0


def test_a_group_weighs_its_random_effects_weight(folds_mod):
    # DerSimonian-Laird by hand: groups (0, 2), (4, 6), (0, 2, 0, 2) of 2, 2 and 4 runs, means 1, 5, 1; within
    # spread s2 = (2 + 2 + 4) / (8 - 3) = 1.6; w = n / s2 = 1.25, 1.25, 2.5 (sum 5), weighted mean 2; Q = 1.25 + 11.25
    # + 2.5 = 15; tau2 = (15 - 2) / (5 - 9.375 / 5) = 4.16; n0 = s2 / tau2 = 5/13; weights n / (n + n0)
    groups = [np.array([0.0, 2.0]), np.array([4.0, 6.0]), np.array([0.0, 2.0, 0.0, 2.0])]
    assert folds_mod.re_weights(groups, [2, 2, 4]) == pytest.approx([26 / 31, 26 / 31, 52 / 57], rel=1e-12)
    # groups whose means agree (tau2 = 0) weigh as their runs; one group, or no spread at all, weighs alike
    assert list(folds_mod.re_weights([np.array([0.0, 2.0]), np.array([1.0, 1.0])], [2, 2])) == [2.0, 2.0]
    assert list(folds_mod.re_weights([np.array([0.0, 0.0]), np.array([0.0])], [2, 1])) == [1.0, 1.0]
    # pooled with weights 1 and 3: (1, 2, 3, 4) 1/16 each, 10 at 3/4: the 20% point 4, the 50% point 10 (alike: 4)
    four_one = [np.array([4.0, 1.0, 3.0, 2.0]), np.array([10.0])]
    assert folds_mod.pooled(four_one, 20, [1, 3]) == 4.0 and folds_mod.pooled(four_one, 50, [1, 3]) == 10.0
    assert folds_mod.pooled(four_one, 50) == 4.0


def test_a_small_fold_no_longer_sets_the_term_alone(folds_mod):
    # fold a: 2 runs needing 0 and 3; fold b: 8 runs needing 1 or 2; both means 1.5, so tau2 = 0 and each run weighs
    # alike (0.1): cumulative 0.1 at 0, 0.5 at 1, 0.9 at 2, the 80% term 2. Each fold alike (the old weights) put a's
    # 3 at 1/4 and 2 only at 0.75: the 80% term was 3.
    Fold = folds_mod.Fold
    a, b = Fold("a", "campaign", [], [], frozenset({("A", "x")})), Fold("b", "campaign", [], [], frozenset({("B", "x")}))

    def scored(needs):
        return ({}, {"tpot_ms": {"need80": np.array(needs), "why": np.array(["campaign"] * len(needs), object)}})

    t = folds_mod.between([a, b], {"a": scored([0.0, 3.0]), "b": scored([1.0] * 4 + [2.0] * 4)}, levels=(80,))
    assert (t["campaign"]["t80"], t["campaign"]["n"], t["campaign"]["groups"]) == (2.0, 10, 2)


def test_an_edge_fold_measures_its_own_term_only(folds_mod):
    # an edge fold's slices are its own campaign's, so its runs with no reason measure no campaign shift: of fold e's
    # runs only those beyond the range (why "load") count, toward the load term; fold c's campaign runs toward the campaign term
    Fold = folds_mod.Fold
    c, e = Fold("c", "campaign", [], [], frozenset({("A", "x")})), Fold("e", "load", [], [], frozenset({("B", "x")}), ("load",))

    def scored(needs, why):
        return ({}, {"tpot_ms": {"need80": np.array(needs), "why": np.array(why, object)}})

    t = folds_mod.between([c, e], {"c": scored([1.0, 2.0], ["campaign", "load"]), "e": scored([7.0, 5.0, 0.0], ["load", "load", "campaign"])},
                          levels=(80,))
    assert {k: (v["t80"], v["n"], v["groups"]) for k, v in t.items()} == {"campaign": (1.0, 1, 1), "load": (7.0, 3, 2)}


def test_a_folds_terms_come_from_the_folds_sharing_no_run_with_it(folds_mod):
    Fold = folds_mod.Fold

    def fold(name, groups):
        return Fold(name, "campaign", [], [], frozenset(groups))

    f1, f2, f3, f4 = fold("f1", {("A", "bw")}), fold("f2", {("A", "bw")}), fold("f3", {("B", "bw")}), fold("f4", {("C", "x")})

    def scored(needs, why):
        return ({}, {"tpot_ms": {"need50": np.array(needs), "need80": np.array(needs), "why": np.array([why] * len(needs), object)}})

    scores = {"f1": scored([0.1, 0.2, 0.3, 0.4], "campaign"), "f2": scored([5.0], "campaign"),
              "f3": scored([1.0], "family,kernel"), "f4": scored([0.5, 0.6], "campaign")}
    every = folds_mod.between([f1, f2, f3, f4], scores, levels=(50, 80))
    # campaign runs of f1 (1/12 each), f2 (1/3), f4 (1/6 each): cumulative to 0.5 at 0.5, 0.67 at 0.6, 1 at 5.0
    assert {k: (v["t50"], v["t80"], v["n"], v["groups"]) for k, v in every.items()} == {
        "campaign": (0.5, 5.0, 7, 3), "family": (1.0, 1.0, 1, 1), "kernel": (1.0, 1.0, 1, 1)}
    # f1's coverage: f2 measures the same runs (campaign A on Blackwell), so only f3 and f4 give its terms
    cross = folds_mod.between([f1, f2, f3, f4], scores, levels=(50, 80), exclude=f1)
    assert (cross["campaign"]["t50"], cross["campaign"]["t80"], cross["campaign"]["groups"]) == (0.5, 0.6, 1)


def test_every_campaign_is_a_fold_mi355x_and_the_perf_overview_releases_too(folds_mod):
    sets = folds_mod.residual_sets()
    fl = folds_mod.folds(sets)
    camp = {f.name: f for f in fl if f.kind == "campaign"}
    assert list(camp) == ["campaign A (clean Blackwell sample), fit on B", "campaign B (InferenceX Blackwell), fit on A",
                          "campaign C (InferenceX MI355X), fit on A+B", "campaign TensorRT-LLM perf overview v0.17",
                          "campaign TensorRT-LLM perf overview v0.20", "campaign TensorRT-LLM perf overview v1.0"]
    c = camp["campaign C (InferenceX MI355X), fit on A+B"]
    assert c.groups == {("C", "cdna4")} and len(c.test) == len(sets["C"])
    # C's runs as its fit takes them (newc9 #6): of the 326 rows, 69 MTP rows record no acceptance (unpriced) and SGLang's
    # ROCm 0.5.2 / 0.5.5.post3 runs (88 + 9) are left out: SGLang 0.5.6.post1's 63 and 0.5.8's 61, ATOM's 36 = 160
    from collections import Counter
    assert Counter(x.engine for x, _ in sets["C"]) == {"sglang": 124, "atom": 36}
    # priced with the fit that left C out (docs/crossval.md), not the bundled profile fitted on it
    assert [r for _, r in c.test] != [r for _, r in sets["C"]]
    # trained on the other two campaigns priced with that same fit, never on C's own runs
    assert not any(x[0].family == "cdna4" and x[0].mode == "serving" for x in c.train)
    # the releases split the offline runs between them, each held out of its own fold's training
    rel = [camp[f"campaign TensorRT-LLM perf overview {v}"] for v in ("v0.17", "v0.20", "v1.0")]
    assert sum(len(f.test) for f in rel) == len(sets["offline"])
    assert all(not {id(x) for x in f.test} & {id(x) for x in f.train} for f in rel)
    assert {f.name for f in fl if f.kind == "family"} == {"family ada", "family ampere", "family blackwell", "family blackwell_sm120",
                                                         "family hopper"}
    assert {f.name for f in fl if f.kind == "engine"} == {"engine atom", "engine sglang", "engine trtllm", "engine vllm"}
    # the edges of each campaign's loads and lengths: trained on its own runs on the near side of the cuts (and the offline and
    # disaggregated runs), priced with the fit on those, the far side held out; each measures its own term only. MI355X's
    # top of load has no fold: no run above its engines' 75th percentile is priced
    edges = {f.name: f for f in fl if f.kind in ("load", "low_load", "lengths")}
    assert sorted(edges) == sorted(f"{e} of {folds_mod.NAMES[k]}" for k in "ABC" for e in folds_mod.EDGES if (k, e) != ("C", "load top"))
    top = edges["load top of B (InferenceX Blackwell)"]
    assert (top.kind, top.terms, top.groups) == ("load", ("load",), {("B", "blackwell")})
    assert {c.concurrency for c, _ in top.test} == {128.0, 256.0}  # above the 75th percentile, 64, of both engines (its 512s are speculative rows with no acceptance: unpriced)
    assert max(c.concurrency for c, _ in top.train if c.mode == "serving") == 64.0
    assert [r for _, r in top.test] != [r for _, r in sets["B"]][:len(top.test)]  # priced with the fit below the cut
    low = edges["lengths bottom of A (clean Blackwell sample)"]
    assert {c.isl for c, _ in low.train if c.mode == "serving"} == {8192.0, 15000.0} and max(c.isl for c, _ in low.test) < 8192


def test_the_readme_quotes_the_in_sample_coverage_the_report_prints(monkeypatch):
    # the README's "Of the 2,048 serving runs ... 84.1% ... 99.7% the 95%" was summed by hand from validate --serving --json;
    # benchmarks/validation_report.py now prints it (in_sample_coverage) with the shipped table, and the README quotes that
    import re

    from llm_codesign.measure import intervals

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    line = importlib.import_module("validation_report").in_sample_coverage(intervals.bundled())[0]
    runs, cov80, n, cov95 = re.search(r"of the ([\d,]+) serving runs .*?([\d.]+)% of their ([\d,]+) TTFT and TPOT measurements fall "
                                      r"inside the 80% interval, ([\d.]+)% inside the 95%", line).groups()
    assert n.replace(",", "") == str(2 * int(runs.replace(",", "")))  # every run measures both
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"Of the {runs} serving runs it was built from, {cov80}% of TTFT and TPOT measurements fall inside the 80% interval, " \
           f"{cov95}% the 95%" in readme


def test_a_95_term_below_the_80_is_raised_to_it(folds_mod):
    # cov40's campaign term: 0.0306 at 80%, 0.0079 at 95% measured beyond the wider 95% bounds; stored nested
    assert folds_mod.nested_terms({80: 0.0306, 95: 0.0079}) == {"t80": 0.0306, "t95": 0.0306}
    assert folds_mod.nested_terms({95: 0.5211, 80: 0.1154}) == {"t80": 0.1154, "t95": 0.5211}
