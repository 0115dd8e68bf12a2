"""The intervals' floors and words (crev9 #2, #6, #11): a prefix-cache hit's TTFT floor on the tokens prefilled, its
reason, what a band took of each reason's term, and a reason whose factors differ by metric said once."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

import llm_codesign as lc
from llm_codesign.measure import intervals as iv
from llm_codesign.render.intervals import _plain, basis_rows, said_once

M8 = "llama-3.1-8b"


def _dep():
    return lc.deployment(lc.get_model(M8), gpu="b200")


def test_the_ttft_floor_prices_the_tokens_not_in_the_prefix_cache():
    m, dep = lc.get_model(M8), _dep()
    whole = iv.ideal(m, dep, 8, isl=8192, osl=256)
    hit = iv.ideal(m, dep, 8, isl=8192, osl=256, prefix_hit=0.99)
    # cached: floor(8192 x 0.99) = floor(8110.08) = 8110, so 82 tokens prefilled: the floor of an 82-token prompt
    assert hit["ttft_ms"] == pytest.approx(iv.ideal(m, dep, 8, isl=82, osl=256)["ttft_ms"])
    # 82 tokens prefill in a weight read: 2 bytes x 7,504,658,432 active params / 8.0e12 B/s (B200 HBM) = 1.876 ms,
    # against the whole prompt's 58.6 ms (its FLOPs), which had sat above the 95%-hit prediction (crev9 #2)
    assert hit["ttft_ms"] == pytest.approx(1.876, rel=2e-3) and whole["ttft_ms"] > 30 * hit["ttft_ms"]
    # the decode step reads the cached tokens' KV as well: TPOT's floor does not move
    assert hit["tpot_ms"] == whole["tpot_ms"]


def test_a_prefix_hit_answer_keeps_its_lower_bound_and_says_no_run_used_a_prefix_cache():
    m, dep = lc.get_model(M8), _dep()
    e = lc.estimate(M8, dep, lc.Workload(isl=8192, osl=256, concurrency=8, prefix_hit=0.99))
    b = e.intervals["ttft_ms"]
    # the floor (1.88 ms) lies below the band: the 80% bound is the runs' spread, not the prediction (31.4 ms) itself
    assert b["lo95"] < b["lo80"] < e.ttft_s * 1e3 < b["hi80"] and b.get("capped") is None
    why = [w for w in b["widened"] if w.kind.startswith("prefix")]
    # 82 prefilled under 1/2 of TensorRT-LLM's smallest measured ISL 1,024 (512): the lengths term measures that, and its
    # 0.0285 / 0.0572 (the 2026-12-07 folds), a distance term measured apart from the Hopper family term 0.0529 / 0.1858,
    # adds in quadrature to it (fixD): hypot(0.0529, 0.0285) = 0.0601 over the campaign's 0.0317, hypot(0.1858, 0.0572) = 0.1944
    assert [(w.kind, w.term) for w in why] == [("prefix_lengths", "lengths")]
    assert str(why[0]).startswith("no measured serving run with prefix-cache hits (99% of each prompt: 82 of its 8,192 tokens prefilled)")
    assert str(why[0]).endswith(f"(x1.03/x1.05 at 80/95%: {iv.QUADRATURE[True]})")
    T = iv.bundled()["between"]
    assert iv.between(["family", "lengths"], iv.bundled())[95] == pytest.approx(math.hypot(T["family"]["t95"], T["lengths"]["t95"]))
    # half the prompt cached: 4,096 prefilled, within the measured ISLs: no term measures it; said, and the band is the one
    # the same question has without the reason (its ratios to the prediction)
    half = lc.Workload(isl=8192, osl=256, concurrency=8, prefix_hit=0.5)
    ctx = iv.context(m, dep.gpu, dep.precision, engine=dep.backend, concurrency=8, isl=8192, osl=256, arrival="waves", prefix_hit=0.5)
    w = [x for x in iv.reasons(ctx, iv.bundled()) if x.kind.startswith("prefix")]
    assert [(x.kind, x.factors) for x in w] == [("prefix", ())]
    assert str(w[0]) == ("no measured serving run with prefix-cache hits (50% of each prompt: 4,096 of its 8,192 tokens prefilled): "
                         "no held-out fold measures a term for it, so not widened for it")
    assert iv.between([x.term for x in iv.reasons(ctx, iv.bundled())], iv.bundled()) == iv.between(
        [x.term for x in iv.reasons(iv.context(m, dep.gpu, dep.precision, engine=dep.backend, concurrency=8, isl=8192, osl=256,
                                               arrival="waves"), iv.bundled())], iv.bundled())
    assert "prefix-cache hits (50%" in " ".join(lc.estimate(M8, dep, half).intervals["tpot_ms"]["widened"])


def test_standing_says_which_reason_the_band_took():
    base = {80: 0.0309, 95: 0.0309}  # the campaign term
    # a kernel reason 0.1394 / 0.361 beside a model one 0.0646 / 0.201: the band takes the kernel's, the model's within it
    top = {80: 0.1394, 95: 0.361}
    assert iv.standing(top, top, base, (80, 95)) == "the largest term, the band's"
    assert iv.standing({80: 0.0646, 95: 0.201}, top, base, (80, 95)) == "within a larger reason's term, not widened for it"
    # the lengths term 0.024 / 0.0293 is under the campaign's 0.0309 at both levels
    assert iv.standing({80: 0.024, 95: 0.0293}, top, base, (80, 95)) == "within the campaign term every band takes, not widened for it"
    # low_load 0.0892 / 0.0892 beside a family reason 0.0725 / 0.2635: the largest at 80% only
    assert iv.standing({80: 0.0892, 95: 0.0892}, {80: 0.0892, 95: 0.2635}, base, (80, 95)) == (
        "the band's term at 80%; within a larger reason's at 95%")


def test_the_binding_reason_is_marked_and_the_others_within_it_in_the_band():
    # 70B FP8 on MI355X with SGLang: the dense model's per-request cost (model term) and no fp8 GEMM table on CDNA4
    # (kernel term 0.1394 / 0.361 > model 0.0646 / 0.201): the band is the kernel term's alone, x1.15 / x1.43
    ctx = iv.Context("serving", "sglang", "cdna4", "dense", "33+", "balanced", ("dense", "gqa"), "fp8", model="llama-3.1-70b",
                     concurrency=64.0, isl=1024.0, osl=1024.0, arrival="waves")
    b = iv.band("ttft_ms", 100.0, ctx)
    notes = {w.kind: w.note for w in b["widened"]}
    assert notes.get("kernel") == "the largest term, the band's"
    assert notes.get("request_cost") == "within a larger reason's term, not widened for it"
    k = iv.bundled()["between"]["kernel"]
    assert iv.between([w.term for w in b["widened"]], iv.bundled()) == {80: k["t80"], 95: k["t95"]}


def test_a_reason_whose_factors_differ_by_metric_is_said_once_with_them_labelled():
    eager = iv.Widening("eager", "no decode run without CUDA graphs: ... in quadrature on top of the others")
    fam = iv.Widening("family", "no serving run on any Hopper GPU", factors=(1.08, 1.30), levels=(80, 95), note="the largest term, the band's")
    bands = {m: {"source": "x", "lo80": 1.0, "hi80": 2.0, "lo95": 0.5, "hi95": 3.0,
                 "widened": [fam, replace(eager, factors=f, levels=(80, 95))]}
             for m, f in (("ttft_ms", (1.04, 1.07)), ("tpot_ms", (1.59, 2.04)), ("tok_s_per_user", (1.59, 2.04)))}
    assert said_once(bands) == [
        "no serving run on any Hopper GPU (x1.08/x1.30 at 80/95%: the largest term, the band's)",
        "no decode run without CUDA graphs: ... in quadrature on top of the others (TTFT x1.04/x1.07 at 80/95%; "
        "TPOT, tok/s/user x1.59/x2.04 at 80/95%)"]
    rows = [v for k, v in basis_rows(bands) if k == "beyond the runs"]
    assert len(rows) == 2 and rows[1].count("no decode run without CUDA graphs") == 1
    # the words alone, from a Widening or its JSON text, with or without what the band took
    assert _plain(str(fam)) == "no serving run on any Hopper GPU" == fam.plain


def test_estimate_says_the_eager_reason_once():
    # 78 requests on 70B FP8 TP4 H200: a decode batch its CUDA graphs miss (crev9 #11's reproducer); its TTFT and TPOT
    # moves differ, and the reason was printed twice, once per factor
    m = lc.get_model("llama-3.1-70b")
    dep = lc.deployment(m, gpu="h200", num_gpus=4, tp=4, weight_dtype="fp8", kv_dtype="fp8")
    e = lc.estimate(m, dep, lc.Workload(concurrency=78))
    assert len({str(w) for b in e.intervals.values() for w in b["widened"] if w.kind == "eager"}) == 2
    rows = [v for k, v in basis_rows(e.intervals) if "without CUDA graphs" in v]
    assert len(rows) == 1 and "(TTFT x" in rows[0] and "; TPOT, tok/s/user, tok/s/GPU x" in rows[0]


def test_a_frontiers_reason_whose_standing_differs_by_point_is_said_once():
    from llm_codesign.render.intervals import MIXED_NOTE, merged

    alone = iv.Widening("family", "no serving run on any Hopper GPU", factors=(1.08, 1.30), levels=(80, 95))
    beside = replace(alone, note="within a larger reason's at 80%; the band's term at 95%")  # a point at one request
    assert merged([alone, beside, alone]) == [f"no serving run on any Hopper GPU (x1.08/x1.30 at 80/95%: {MIXED_NOTE})"]
    assert merged([alone, alone]) == ["no serving run on any Hopper GPU (x1.08/x1.30 at 80/95%)"]


def test_a_rows_reason_in_quadrature_at_one_load_and_alone_at_the_next_is_said_once():
    """fixT: QUADRATURE's note holds a parenthesis ("(each measured without the other)"), which _plain's and said_across's
    match stopped at: the page and disagg printed a disaggregated table's kernel reason once a row (MI355X, 1 and 512
    requests: in quadrature with the low-load term at 1, the band's alone at 512)."""
    from llm_codesign.render.intervals import MIXED_NOTE, said_across

    why = "no GEMM bf16 kernel table on CDNA4"
    quad = f"{why} (x1.12/x1.36 at 80/95%: {iv.QUADRATURE[False]})"
    assert _plain(quad) == why
    alone = f"{why} (x1.12/x1.36 at 80/95%: {iv.STANDING['band']})"
    assert said_across([quad, alone]) == [f"{why} (x1.12/x1.36 at 80/95%: the band's term at every load, in quadrature with "
                                          "the lengths or load term past the runs (each measured without the other) at some)"]
    within = f"{why} (x1.12/x1.36 at 80/95%: {iv.STANDING['larger']})"
    # the band's at one load, within another reason's at the next: MIXED_NOTE's words, as before
    assert said_across([alone, within]) == [f"{why} (x1.12/x1.36 at 80/95%: {MIXED_NOTE.replace('points', 'loads')})"]
    assert said_across([quad, quad]) == [quad]
