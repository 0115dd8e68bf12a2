"""fixD: a distance term (a length or load past the runs) in quadrature with the others' largest; the lengths term grown
past the edge folds' 8x; a slice across families without the question's widens by the family term; mix's lengths
reasons said of its requests; a small profile's own spread said beside the bundled band."""
import math
from dataclasses import replace

import pytest

import llm_codesign as lc
from llm_codesign.measure import intervals as iv
from llm_codesign.spec.registry import get_model

TERMS = {"campaign": {"t80": 0.03, "t95": 0.04, "n": 10, "groups": 2, "folds": "x"},
         "kernel": {"t80": 0.12, "t95": 0.31, "n": 10, "groups": 2, "folds": "x"},
         "family": {"t80": 0.05, "t95": 0.19, "n": 10, "groups": 2, "folds": "x"},
         "engine": {"t80": 0.01, "t95": 0.01, "n": 10, "groups": 2, "folds": "x"},
         "lengths": {"t80": 0.05, "t95": 0.06, "n": 10, "groups": 2, "folds": "x"},
         "load": {"t80": 0.25, "t95": 1.40, "n": 10, "groups": 2, "folds": "x"}}


def test_a_distance_term_adds_in_quadrature_to_the_largest_other_and_the_others_stay_the_largest():
    t = {"between": TERMS}
    # kernel and family: measured on runs carrying each other, the largest (0.12 / 0.31), as before
    assert iv.between(["kernel", "family"], t) == pytest.approx({80: 0.12, 95: 0.31})
    # kernel and lengths, each measured without the other: hypot(0.12, 0.05) = 0.13, hypot(0.31, 0.06) = 0.31575
    assert iv.between(["kernel", "family", "lengths"], t) == pytest.approx({80: 0.13, 95: math.hypot(0.31, 0.06)})
    # a distance alone: the largest with the campaign term, as before (0.05 / 0.06)
    assert iv.between(["lengths"], t) == pytest.approx({80: 0.05, 95: 0.06})
    # the largest distance term, not their sum: load 0.25 with lengths 0.05 is 0.25; with kernel hypot(0.12, 0.25) = 0.27731
    assert iv.between(["load", "lengths"], t)[80] == pytest.approx(0.25)
    assert iv.between(["load", "lengths", "kernel"], t)[80] == pytest.approx(math.hypot(0.12, 0.25))
    # engine 0.01 with lengths 0.05: hypot 0.05099 over the campaign's 0.03; engine with nothing: the campaign's
    assert iv.between(["engine", "lengths"], t)[80] == pytest.approx(math.hypot(0.01, 0.05))
    assert iv.between(["engine"], t)[80] == pytest.approx(0.03)
    # a profile's own runs take no campaign term: hypot(0.12, 0.05) still, engine alone 0.01
    assert iv.between(["kernel", "lengths"], t, own=True)[80] == pytest.approx(0.13)
    assert iv.between(["engine"], t, own=True)[80] == pytest.approx(0.01)


def test_the_lengths_term_grows_with_the_log_distance_past_the_edge_folds_and_the_reasons_say_so():
    t = {"between": TERMS}
    near = iv.Widening("lengths", "x", quantity="ISL", span=(8192.0, 8192.0), ratio=8.0)
    far = replace(near, span=(100000.0, 100000.0), ratio=100000 / 8192)
    assert iv.grown([near], t) is t  # at the folds' 8x: as measured
    # 100,000 / 8,192 = 12.207x: ln 12.207 / ln 8 = 2.5020 / 2.0794 = 1.2032; 0.05 x 1.2032 = 0.06016, 0.06 x 1.2032 = 0.07219
    g = iv.grown([near, far], t)["between"]["lengths"]
    assert (g["t80"], g["t95"], g["n"]) == (pytest.approx(0.06016, abs=1e-5), pytest.approx(0.07219, abs=1e-5), 10)
    # with the kernel term (measured without it), in quadrature: hypot(0.12, 0.06016) = 0.13424 (0.13 at 8x)
    assert iv.between(["kernel", "lengths"], iv.grown([far], t))[80] == pytest.approx(0.13424, abs=1e-5)


def test_a_length_past_the_runs_on_a_gpu_with_no_kernel_tables_widens_the_band_and_says_how():
    # newc10 #4: Llama-3.1-8B on an MI300X, SGLang, 4 requests: the band of ISL 100,000 was ISL 1,024's
    ctx = lambda isl: iv.context(get_model("llama-3.1-8b"), lc.get_gpu("mi300x"), get_model("llama-3.1-8b").default_precision,
                                 engine="sglang", concurrency=4, isl=isl, osl=2000, arrival="waves")
    t = iv.bundled()
    b1, b100 = iv.band("tpot_ms", 10.0, ctx(1024), table=t), iv.band("tpot_ms", 10.0, ctx(100000), table=t)
    T = t["between"]
    g = math.log(100000 / 8192) / math.log(8)  # 1.2032
    kernel = max(T["kernel"]["t80"], T["family"]["t80"])
    k80 = math.hypot(kernel, T["lengths"]["t80"] * g)  # the band's term at 80%: the other reasons' largest with the grown lengths term
    lo1, lo100 = math.log(b1["lo80"] / b1["centre"]), math.log(b100["lo80"] / b100["centre"])
    assert lo100 - lo1 == pytest.approx(-(k80 - kernel), abs=1e-9)  # same slice: the bound moves by the term's growth alone
    isl = next(w for w in b100["widened"] if w.quantity == "ISL")
    assert "12.2x past it" in isl and "grown with the log-distance, x1.20 (ln 12.2 / ln 8)" in isl
    assert isl.note == iv.QUADRATURE[True]


def test_a_waves_ttft_band_from_another_familys_runs_widens_for_the_family():
    # crev10 #8: every CDNA4 serving run is a closed loop, so an MI355X TTFT in waves takes Blackwell's runs
    m = get_model("deepseek-r1")
    ctx = iv.context(m, lc.get_gpu("mi355x"), m.default_precision, engine="sglang", concurrency=64, isl=1024, osl=1024, arrival="waves")
    t = iv.bundled()
    b = iv.band("ttft_ms", 1000.0, ctx, table=t)
    assert "on Blackwell GPUs" in b["source"]
    w = b["widened"][0]
    assert (w.kind, w.plain) == ("family", "no serving run in waves on any CDNA4 GPU (the band is Blackwell's)")
    assert w.factors == pytest.approx((math.exp(t["between"]["family"]["t80"]), math.exp(t["between"]["family"]["t95"])))
    # in a closed loop its own CDNA4 runs answer: no family reason; TPOT has no arrival level (CDNA4's own runs)
    assert [x.kind for x in iv.band("ttft_ms", 1000.0, replace(ctx, arrival="closed_loop"), table=t)["widened"]] == []
    assert [x.kind for x in iv.band("tpot_ms", 10.0, ctx, table=t)["widened"]] == []
    # an H100's family reason (no Hopper serving run) stays the one: not said twice
    h = iv.context(get_model("llama-3.1-8b"), lc.get_gpu("h100"), get_model("llama-3.1-8b").default_precision, engine="trtllm",
                   concurrency=16, isl=1024, osl=1024, arrival="waves")
    assert [x.kind for x in iv.band("ttft_ms", 100.0, h, table=t)["widened"]] == ["family"]


def test_mix_says_its_requests_lengths_not_the_mean(tmp_path):
    # crev10 #9: 3 x (512, 128) and 1 x (4,096, 1,024): the mean OSL 352 = 0.75 x 128 + 0.25 x 1,024 is no request's;
    # 75% of the requests lie at OSL 128, 1,024 / 128 = 8.0x below vLLM's smallest measured OSL
    f = tmp_path / "m2.csv"
    f.write_text("isl,osl,count\n512,128,3\n4096,1024,1\n")
    dep = lc.deployment("qwen3-30b-a3b", gpu="h200", num_gpus=2, tp=2, ep=2, backend="vllm")
    d = lc.mix("qwen3-30b-a3b", dep, lengths=str(f), concurrency=16).to_dict()
    osl = [w for w in d["intervals"]["tpot_ms"]["widened"] if w.startswith("OSL")]
    assert len(osl) == 1 and osl[0].startswith("OSL 128 (75% of the requests; the mix's mean 352) below vLLM's smallest measured "
                                               "1,024 (serving runs; 8.0x past it, as far as the edge folds measure)")


def test_mix_says_the_requests_farthest_past_the_range_not_from_the_mean(tmp_path):
    # frev10 #1: 9 x ISL 200 and 1 x ISL 120,000 on vLLM (range 1,024-8,192): mean 0.9 x 200 + 0.1 x 120,000 = 12,180;
    # 200 lies 1,024 / 200 = 5.1x below, 120,000 lies 120,000 / 8,192 = 14.6x above: the 120,000s are said, grown
    # ln 14.648 / ln 8 = 2.6843 / 2.0794 = 1.29 (the mean's distance picked the 200s and dropped the 120,000s)
    f = tmp_path / "m.csv"
    f.write_text("isl,osl,count\n200,256,9\n120000,256,1\n")
    d = lc.mix("llama-3.1-8b", lc.deployment("llama-3.1-8b", gpu="h100", backend="vllm"), lengths=str(f), concurrency=16).to_dict()
    isl = [w for w in d["intervals"]["ttft_ms"]["widened"] if w.startswith("ISL")]
    assert len(isl) == 1 and isl[0].startswith(
        "ISL 120,000 (10% of the requests; the mix's mean 12,180) above vLLM's largest measured 8,192 (serving runs; 14.6x past it, "
        "the edge folds measure its term at 8x only: past it grown with the log-distance, x1.29 (ln 14.6 / ln 8))")


def test_the_edge_distance_text_and_growth_share_one_threshold():
    # frev10 #2: 8.3x is within 8 x 1.05 = 8.4: the text says the folds' distance and the term is not grown (was x1.018 =
    # ln 8.3 / ln 8); 8.5x is past it: ln 8.5 / ln 8 = 2.1401 / 2.0794 = 1.029, said and grown alike
    assert iv.growth(8.3) == 1.0 and iv._edge_distance("isl", 8.3).endswith("as far as the edge folds measure")
    assert iv.growth(8.5) == pytest.approx(1.029, abs=1e-3) and iv._edge_distance("isl", 8.5).endswith("x1.03 (ln 8.5 / ln 8)")


def test_a_small_profiles_own_spread_is_said_beside_the_bundled_band():
    # newc10 #15: 12 runs made no band (MIN_ROWS 39; since fixN3 a profile's slice takes 9, so a table of 12 runs and no slice
    # is one written before); their own 10th / 90th percentiles of log(measured / predicted)
    ctx = iv.Context("serving", "vllm", "cdna3", "dense", "5-32", "balanced", ("dense", "gqa"), "fp8")
    rs = [math.log(1 + x / 100) for x in (-8, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 9)]
    s = iv.own_spread([(ctx, {"tpot_ms": r}) for r in rs])["vllm|cdna3"]["tpot_ms"]
    # numpy's linear percentile over 12 sorted values: 10th at index 1.1 -> log(0.94) + 0.1 (log(0.95) - log(0.94)) = -0.06082;
    # 90th at index 9.9 -> log(1.02) + 0.9 (log(1.03) - log(1.02)) = 0.019803 + 0.9 x 0.009756 = 0.02858
    assert (s["n"], s["q100"], s["q900"]) == (12, pytest.approx(-0.0608, abs=1e-4), pytest.approx(0.0286, abs=1e-4))
    t = iv.bundled() | {"profile": "mine.toml", "own_runs": {"serving": {"vllm|cdna3": 12}}, "own_spread": {"serving": {"vllm|cdna3": {"tpot_ms": s}}}}
    # expm1(-0.0608) = -5.9%, expm1(0.0286) = +2.9%
    old = "a profile written by an older llm-codesign took 39 a slice; `calibrate --serving` again makes one from 9"
    assert iv._why_bundled("tpot_ms", ctx, t) == (f"no slice of its runs (12 with vLLM on CDNA3 GPUs; {old}); their TPOT, priced "
                                                   "with the profile fitted on them (in sample): 80% of the 12 within -5.9%/+2.9% of the prediction")
    assert iv._why_bundled("ttft_ms", ctx, t) == f"no slice of its runs (12 with vLLM on CDNA3 GPUs; {old})"
    t7 = t | {"own_runs": {"serving": {"vllm|cdna3": 7}}}  # under OWN_MIN_ROWS: too few (ceil(8 x 0.9) = 8 > 7)
    assert iv._why_bundled("ttft_ms", ctx, t7) == "too few of its runs (7 with vLLM on CDNA3 GPUs; 9 per slice needed)"


def test_a_reason_merged_over_points_says_how_the_band_took_it_where_every_point_took_it():
    from llm_codesign.render.intervals import MIXED_NOTE, _merged_note

    # the MI355X frontier's load reason: in quadrature with TTFT's family term, alone ("") on the rates: the band's at each
    assert _merged_note({"", iv.QUADRATURE[True]}) == ("the band's term at every point, in quadrature with the other reasons' "
                                                        "largest term (each measured without the other) at some")
    assert _merged_note({iv.QUADRATURE[True]}) == iv.QUADRATURE[True]
    assert _merged_note({""}) == "" and _merged_note({iv.STANDING["band"]}) == iv.STANDING["band"]
    # the band's at some, within another's at others: mixed, as before
    assert _merged_note({"", iv.STANDING["larger"]}) == MIXED_NOTE
