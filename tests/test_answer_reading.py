"""What a newcomer misread in an answer's intervals and basis (branch uxa): each printed value as the tables show it."""
from __future__ import annotations

import json
import math
import re

import pytest
from conftest import cli

from llm_codesign.measure import intervals as iv
from llm_codesign.render.intervals import ARRIVAL_TEXT, arrival_footer, basis_rows, duration, interval_text, short, short_range


def _text(*args: str) -> str:
    code, out, err = cli(*args)
    assert code == 0, err
    return " ".join(out.split())


def _row(text: str, key: str, value: str) -> bool:
    return f"│ {key} │ {value} │" in text


def test_estimate_names_the_arrival_its_ttft_turns_on():
    # llama-3.1-70b on 8x H200 at 128 requests with SGLang: 4223 ms in waves, 117.6 ms in a closed loop (the review's)
    args = ("estimate", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
            "--concurrency", "128", "--backend", "sglang")
    # waves are cohorts kept in step, not every request at once (that is burst: llama-3.1-8b on one H100 at 64 requests, TTFT
    # 200 ms in waves, 866 ms in a burst; it read "every request of a wave sent at once", newcomer review 2026-12-06 item 6)
    assert _row(_text(*args), "arrival", "waves: identical requests kept in step by a closed loop, refilled in the cohorts the "
                "first wave's prefill formed, as fixed-length benchmarks run them; --arrival burst for every request sent at once, "
                "closed_loop for one request per freed slot")
    assert _row(_text(*args, "--arrival", "closed_loop"), "arrival", ARRIVAL_TEXT["closed_loop"])
    assert ARRIVAL_TEXT["closed_loop"].startswith("closed loop: one request sent per freed slot")
    # offline: every request queued at once, no arrival to name
    assert "│ arrival │" not in _text("estimate", "llama-3.1-8b", "--gpu", "h100")


def test_compare_and_pareto_say_their_arrival_in_one_line():
    # ARRIVAL_TEXT's words, the one source (the review of uxa: the footer held its own copy)
    line = ("TTFT with requests arriving in waves (identical requests kept in step by a closed loop, refilled in the cohorts the "
            "first wave's prefill formed, as fixed-length benchmarks run them); --arrival burst for every request sent "
            "at once, closed_loop for one request per freed slot.")
    assert arrival_footer("waves") == line
    assert arrival_footer("closed_loop") == ("TTFT with requests arriving in closed loop (one request sent per freed slot, lengths "
                                             "spread (bench_serving --max-concurrency)); --arrival waves for identical "
                                             "requests kept in step, burst for every request sent at once.")
    assert line in _text("compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--weight-dtype", "fp8")
    assert line in _text("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--weight-dtype", "fp8", "--kv-dtype", "fp8")


def test_the_basis_names_the_load_band_not_a_measured_range():
    # "1-4 requests" is the band's name (intervals.BAND_NAMES), not the runs' range: TensorRT-LLM's smallest measured is 4
    text = _text("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "8", "--concurrency", "1", "--weight-dtype", "fp8", "--kv-dtype", "fp8")
    assert "from 112 serving runs with TensorRT-LLM, on Blackwell GPUs, in the load band 1-4 requests │" in text
    assert "concurrency 1 below TensorRT-LLM's smallest measured 4 (serving runs)" in text


def test_an_unmeasured_spec_term_widens_on_top_of_the_campaign_term():
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    # one group, the 5 published runs (7 measurements), as interval_folds.shipped writes it with the 256 bundled MTP runs
    # that record no acceptance (69 MI355X, 91 Blackwell, 96 disaggregated: InferenceX publishes none; newc9 #4)
    spec_term = {"t80": 0.0, "t95": 0.0, "n": 7, "groups": 1, "folds": "5 published runs with speculative decoding", "unpriced": 256}
    t = iv.bundled() | {"between": {**iv.bundled()["between"], "spec": spec_term}}
    assert not iv.measured(t["between"]["spec"])
    camp = t["between"]["campaign"]
    # the campaign term as the table holds it (its 95% never below its 80%: `between`'s floor), read here so that a
    # regeneration of intervals.toml moves the expected values with it
    c80, c95 = camp["t80"], max(camp["t80"], camp["t95"])
    a80, a95 = c80 * (math.sqrt(2) - 1), c95 * (math.sqrt(2) - 1)  # what C once more in quadrature adds: hypot(C, C) - C

    def spec_band(spec: bool):
        ctx = iv.context(get_model("llama-3.1-8b"), get_gpu("b200"), Precision.of("fp8", kv="fp8"), engine="trtllm",
                         concurrency=16, isl=1024, osl=1024, spec=spec, arrival="waves")
        return ctx, iv.band("tpot_ms", 10.0, ctx, table=t)

    ctx, b = spec_band(True)
    plain_ctx, plain = spec_band(False)
    assert not [w for w in plain["widened"] if w.kind == "spec"]
    spec = [w for w in b["widened"] if w.kind == "spec"]
    assert str(spec[0]) == ("speculative decoding: no serving run with it among the band's runs (256 bundled runs used MTP but "
                            "record no acceptance rate: not priced, in no band); its term not measured (one group: 5 published "
                            "runs with speculative decoding): widened by the campaign term once more, in quadrature on top of the others: a new group and a new "
                            f"campaign; its factor what that adds to the campaign term (x{math.exp(a80):.2f}/x{math.exp(a95):.2f} at 80/95%)")
    # what the band takes of it, not the campaign term's own factor: hypot(C, C) - C = C x (sqrt 2 - 1) (crev11, noted)
    assert spec[0].factors == pytest.approx((math.exp(a80), math.exp(a95)))
    # the band with --spec is wider than the same question without it: each bound's distance from the slice's median
    # is within + hypot(T, campaign) where it was within + T (T: the question's term without spec; the two group terms
    # independent, in quadrature, and added beyond the slice's own bound)
    k = iv.between([w.kind for w in plain["widened"]], t)
    slice_, _, found, mine = iv.lookup("tpot_ms", ctx, t)
    for lvl, c in ((80, c80), (95, c95)):
        below, above = iv.within("tpot_ms", slice_, found, t, lvl, own=mine)
        if lvl == 80:  # 80's bounds are its own (95's may hold a wider 80%'s)
            assert math.log(b["hi80"] / 10.0) == pytest.approx(slice_["q500"] + above + math.hypot(k[80], c))
            assert math.log(plain["hi80"] / 10.0) == pytest.approx(slice_["q500"] + above + k[80])
            assert math.log(b["lo80"] / 10.0) == pytest.approx(slice_["q500"] - below - math.hypot(k[80], c))
    assert b["hi80"] > plain["hi80"] and b["lo80"] < plain["lo80"] and b["hi95"] > plain["hi95"] and b["lo95"] < plain["lo95"]
    # a profile's own runs carry no campaign term: an unmeasured reason still widens them by it, on top of the others
    fam = t["between"]["family"]
    assert iv.between(["spec"], t, own=True) == pytest.approx({80: c80, 95: c95})
    assert iv.between(["spec", "family"], t, own=True) == pytest.approx(
        {80: math.hypot(fam["t80"], c80), 95: max(math.hypot(fam["t80"], c80), math.hypot(fam["t95"], camp["t95"]))})


def test_a_measured_spec_term_widens_by_its_own_value_and_says_what_it_rests_on():
    # two groups measure a term (a profile's, or a table with speculative runs that record their acceptance): it widens
    # by its own value (0.2 > the campaign's 0.1), no quadrature, and names its runs; no unpriced runs, no count said
    between = {"campaign": {"t80": 0.1, "t95": 0.1, "n": 10, "groups": 2, "folds": "x"},
               "spec": {"t80": 0.2, "t95": 0.3, "n": 40, "groups": 2, "folds": "5 published runs and 30 of mine"}}
    t = iv.bundled() | {"between": between}
    ctx = iv.Context("serving", "trtllm", "blackwell", "dense", "5-32", "balanced", ("dense", "gqa"), "fp8", spec=True, model="llama-3.1-8b")
    spec = [w for w in iv.reasons(ctx, t) if w.kind == "spec"]
    assert spec == ["speculative decoding: no serving run with it among the band's runs; its term from 5 published runs and 30 of mine"]
    assert iv.between(["spec"], t) == {80: 0.2, 95: 0.3}


def test_times_of_ten_seconds_or_more_read_in_seconds_and_hours():
    assert [duration(x) for x in (27.64, 9999.0, 13401.7, 13401712.1)] == ["27.6 ms", "9999.0 ms", "13.4 s", "3.7 h"]
    assert duration(6.554, "tpot_ms") == "6.55 ms"
    b = {"lo80": 6.48e6, "hi80": 2.66e7, "lo95": 739220.0, "hi95": 215376490.0, "centre": 1.3e7}
    # 739220 ms = 739 s; 215376490 ms = 59.8 h; 6.48e6 ms = 1.8 h
    # 215376490 / 739220 = x291.4 past x20: no interval, that 95% span quoted (frev #4) and the 80% range (newc6 #13)
    assert interval_text(b, "ttft_ms") == "no interval: the runs like it are too few or too spread (95% spans x291; 80%: 1.8-7.4 h)"
    # the cause is said where the band was widened for a reason (measure.intervals.reasons), each by name
    assert interval_text(b | {"widened": ["x", "y"]}, "ttft_ms").endswith("(95% spans x291; 80%: 1.8-7.4 h); beyond its runs: x; y")
    # 6e7 / 6e6 = 10, under x20: both intervals (6e6 ms = 1.7 h, 6e7 ms = 16.7 h)
    assert interval_text(b | {"lo95": 6e6, "hi95": 6e7}, "ttft_ms") == "80%: 1.8-7.4 h, 95%: 1.7-16.7 h"

    # a one-line summary withholds the band where estimate does (newc8 #6): 2.15e8 / 1e6 = x215 past x20; 6e7 / 6e6 = x10 not
    assert short({"intervals": {"ttft_ms": b | {"lo95": 1e6}}}, "ttft_ms") == " (no interval: 95% spans x215)"
    assert short({"intervals": {"ttft_ms": b | {"lo95": 6e6, "hi95": 6e7}}}, "ttft_ms") == " (80%: 1.8-7.4 h)"
    assert short({"intervals": {"ttft_ms": {"lo80": 95.0, "hi80": 160.0}}}, "ttft_ms") == " (80%: 95.0-160)"  # ms unsaid, as before


def test_a_rates_bounds_stop_at_the_ideal_step_in_every_consumer():
    # llama-3.1-8b, BF16 on one L40S, one request (100 would fit; on an H100 since the 2026-12-07 folds the 95% bands stay
    # under its ceiling, so nothing is capped there). The ideal step (cost.roofline.ideal_step) reads every
    # weight but the input embedding, (8029995008 - 525336576) x 2 B = 15.009 GB, and the request's KV cache at its mean
    # context 1024 + 1024 / 2 = 1,536 tokens, 1,536 x 32 layers x 8 KV heads x 256 (K and V of 128) x 2 B = 201.3 MB
    # (docs/modelling-notes.md#fixroof), over 0.864 TB/s: 17.6049 ms (its FLOPs at peak are far shorter): 1 / 17.6049 ms =
    # 56.80 tok/s/user, x 1 request = 56.80 tok/s/GPU, TPOT at least 17.60 ms.
    # Applied where the bands are attached (api.estimate), so --json, lc.estimate, the web page and the table carry one band
    # (the review of uxa: the table alone was capped, 309 vs 223). At 100,000 requests (225 running) the 95% bands no
    # longer reach the ceiling 225 / 4.4804 ms since the between-group term is added beyond the slice's bound
    # (docs/modelling-notes.md#cov40-linear: the load term x11.10 -> x4.00 at 95%); one request's do.
    from llm_codesign.render.intervals import interval_text

    step = ((8029995008 - 525336576) * 2 + 1536 * 32 * 8 * 256 * 2) / 0.864e12
    args = ("estimate", "llama-3.1-8b", "--gpu", "l40s", "--concurrency", "1")
    text, d = _text(*args), json.loads(cli(*args, "--json")[1])
    b = d["intervals"]
    assert d["max_batch"] == 100
    assert b["tok_s_per_user"]["capped"] == pytest.approx(1 / step, rel=1e-4) == pytest.approx(56.80, abs=0.005)
    assert b["output_tok_s_per_gpu"]["capped"] == pytest.approx(1 / step, rel=1e-4)
    assert b["tpot_ms"]["capped"] == pytest.approx(step * 1e3, rel=1e-4)
    for m in ("tok_s_per_user", "output_tok_s_per_gpu"):  # no bound above the ceiling, none below the prediction's
        assert max(b[m]["hi80"], b[m]["hi95"]) <= b[m]["capped"] + 1e-9 and b[m]["capped"] >= d[m]
    assert min(b["tpot_ms"]["lo80"], b["tpot_ms"]["lo95"]) >= b["tpot_ms"]["capped"] - 1e-9
    for m, key in (("tok_s_per_user", "tokens/s per user"), ("output_tok_s_per_gpu", "output tokens/s per GPU")):
        assert _row(text, key, f"{d[m]:.1f}; {interval_text(b[m], m, d[m])}")  # the table shows --json's band
    # TTFT's floor, one 1,024-token prefill at the L40S's BF16 peak (cost.roofline.ideal_prefill): the layers' 2 x
    # (7,504,658,432 - 525,336,576 LM head) x 1,024, the head's 2 x 525,336,576 on the last token only, causal attention's
    # 32 x 2 x 32 heads x 256 x 1,024 x 512.5 mean keys, over 3.62e14 = 40.25 ms (docs/modelling-notes.md#dband-load, #fixroof)
    first = (2 * (7504658432 - 525336576) * 1024 + 2 * 525336576 + 32 * 2 * 32 * 256 * 1024 * 512.5) / 3.62e14
    assert b["ttft_ms"]["capped"] == pytest.approx(first * 1e3, rel=1e-4) == b["ttft_ms"]["lo80"] == b["ttft_ms"]["lo95"]
    assert _row(text, "bounds capped", "TTFT from 40.2 ms, TPOT from 17.60 ms, tok/s/user at 56.8, tok/s/GPU at 56.8: what the "
                "GPUs allow at the batch that runs (the weights and the KV cache of each request at its mean context a step "
                "reads over HBM bandwidth, or its FLOPs at peak; for TTFT, one prefill of the prompt so, mostly its FLOPs)")
    far = json.loads(cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "100000", "--json")[1])
    # its TTFT is hours of queue (444 cohorts of the 225 that run): the band is the TTFT runs' once a request runs plus the
    # queue at TPOT's spread (uxleft2, intervals.with_queue), a band, where the TTFT runs' x11 spread over the whole read
    # "no interval"
    t = far["intervals"]["ttft_ms"]
    assert t["widened"] and t["queue_ms"] == far["queue"]["ttft_ms"] > 0.99 * far["ttft_ms"]
    assert t["lo80"] <= far["ttft_ms"] <= t["hi80"] and not interval_text(t, "ttft_ms").startswith("no interval: ")
    # mix carries the same ceiling at its batch
    mix = json.loads(cli("mix", "llama-3.1-8b", "--gpu", "l40s", "--isl-dist", "fixed:1024", "--osl-dist", "fixed:1024",
                         "--concurrency", "1", "--json")[1])["intervals"]
    assert mix["tok_s_per_user"]["capped"] == pytest.approx(1 / step, rel=1e-4)


def test_a_cap_never_falls_below_the_prediction_or_the_centre():
    band = {"lo80": 80.0, "hi80": 120.0, "lo95": 60.0, "hi95": 150.0, "centre": 110.0, "widened": []}
    # a ceiling of 100 under the prediction 105 and the centre 110: the band stops at 110, not below its own centre
    out = iv.capped({"tok_s_per_user": band}, {"tok_s_per_user": 105.0}, {"tok_s_per_user": 100.0})["tok_s_per_user"]
    assert (out["hi80"], out["hi95"], out["lo80"], out["capped"]) == (110.0, 110.0, 80.0, 110.0)
    # TPOT's floor likewise never above the prediction (9 ms) nor the centre (9.5 ms)
    t = {"lo80": 8.0, "hi80": 12.0, "lo95": 6.0, "hi95": 15.0, "centre": 9.5, "widened": []}
    out = iv.capped({"tpot_ms": t}, {"tpot_ms": 9.0}, {"tpot_ms": 10.0})["tpot_ms"]
    assert (out["lo80"], out["lo95"], out["hi80"], out["capped"]) == (9.0, 9.0, 12.0, 9.0)
    # within the bounds: untouched, no "capped" key
    assert iv.capped({"tpot_ms": t}, {"tpot_ms": 9.0}, {"tpot_ms": 5.0}) == {"tpot_ms": t}


def test_one_output_token_has_no_tpot_to_show():
    text = _text("estimate", "llama-3.1-8b", "--gpu", "h100", "--isl", "1", "--osl", "1", "--concurrency", "1")
    assert _row(text, "TPOT", "n/a (one output token)") and _row(text, "tokens/s per user", "n/a (one output token)")
    # mix as estimate: its TPOT and tok/s/user cells, not the model's numbers; --json's are null (no decode step, branch dosl1)
    args = ("mix", "llama-3.1-8b", "--gpu", "h100", "--isl-dist", "uniform:500,1500", "--osl-dist", "fixed:1")
    d = json.loads(cli(*args, "--json")[1])
    text = _text(*args)
    assert f"{d['ttft_ms']['p99']:.0f} n/a (one output token) n/a (one output token) {d['output_tok_s_per_gpu']:.0f} yes" in text
    assert d["tpot_ms"] is None and d["tok_s_per_user"] is None


def test_the_title_prints_the_activation_the_model_prices():
    # H100 has no FP4 math: NVFP4 weights run W4A16 in vLLM (Marlin; spec.precision.executable), so A:bf16, not A:nvfp4
    # (TensorRT-LLM has no such kernel and refuses it: tests/test_engine_runs.py)
    text = _text("estimate", "llama-3.1-8b", "--gpu", "h100", "--weight-dtype", "nvfp4", "--backend", "vllm")
    assert "llama-3.1-8b on 1x H100 SXM, TP1, W:nvfp4 A:bf16 KV:bf16 as run, vllm" in text
    assert "W:nvfp4 A:nvfp4" not in text


def test_mix_shows_its_80_percent_intervals_and_their_basis():
    args = ("mix", "llama-3.1-8b", "--gpu", "h100", "--isl-dist", "uniform:500,1500", "--osl-dist", "fixed:500")
    d = json.loads(cli(*args, "--json")[1])
    b = d["intervals"]
    assert set(b) == set(iv.METRICS) and b["tpot_ms"]["lo80"] < d["tpot_ms"] < b["tpot_ms"]["hi80"]
    text = _text(*args)
    # each band's 80% interval, or "no interval: 95% spans x35" where estimate withholds it (render.intervals.short_range, newc8 #6)
    row = [short_range(b[m], m) for m in iv.METRICS]
    assert f"{row[0]} {row[1]} {row[2]} {row[3]}" in text  # beneath TTFT mean, TPOT, tok/s/user, tok/s/GPU
    for k, v in basis_rows(b):
        assert " ".join(f"{k}: {v}".split()).replace("[yellow]", "").replace("[/yellow]", "") in text
    assert "intervals as estimate's at the mix's mean ISL and OSL: every run measured one length" in text


def test_an_interval_wider_than_twentyfold_is_not_predictable_here():
    wide = {"lo80": 60.0, "hi80": 2000.0, "lo95": 24.0, "hi95": 25869.0, "centre": 300.0}  # disagg's, the review's
    # 25869 / 24 = 1077.9 past x20: no interval, the 95% bounds left out (newc6 #13), its span x1078 and the 80% range;
    # newc5 #17's 487 ms-32.7 s: 67.1, none either; 479 / 24 = 19.96, under x20: both intervals
    assert interval_text(wide, "ttft_ms") == "no interval: the runs like it are too few or too spread (95% spans x1078; 80%: 60.0-2000 ms)"
    assert interval_text(wide | {"lo95": 487.0, "hi95": 32700.0}, "ttft_ms").startswith("no interval")
    assert interval_text(wide | {"hi95": 479.0}, "ttft_ms") == "80%: 60.0-2000 ms, 95%: 24.0-479 ms"
    # a bound at the ideal step is the roofline's floor, not the runs' spread: said so (153 ms, disagg's 8 requests)
    assert interval_text(wide | {"hi95": 479.0, "lo95": 24.0, "lo80": 24.0, "capped": 24.0}, "ttft_ms") == (
        "80%: 24.0 ms (floor)-2000 ms, 95%: 24.0 ms (floor)-479 ms")
    assert interval_text({"lo80": 100.0, "hi80": 220.0, "lo95": 90.0, "hi95": 220.0, "capped": 220.0}, "output_tok_s_per_gpu") == (
        "80%: 100-220 (ceiling), 95%: 90.0-220 (ceiling)")


@pytest.mark.parametrize("columns", [80, 50])
def test_a_narrow_console_wraps_identifiers_never_cuts_them(columns):
    # piped (80 columns) the checkpoint id read "RedHatAI/Meta-Llama-3.1-70B-Instruct-F…" (newcomer review 2026-12-06 item 12):
    # an identifier to copy wraps; with the table's rules and spaces taken out it reads whole
    code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--weight-dtype", "fp8", "--concurrency", "8",
                         columns=columns)
    assert code == 0, err
    assert "…" not in out
    assert "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8" in "".join(out.replace("│", "").split())
    # the terminal tables' keys and figures (cli.common._table's `k` and `n` columns): folded at 40 columns, not cut
    code, out, err = cli("models", columns=40)
    assert code == 0, err
    body = out.split("─" * 10, 1)[1]
    assert "…" not in body
    names = "".join(x.split()[0] for x in body.splitlines() if x[1:2].strip())  # the name column: lines starting at it
    assert "qwen3-235b-a22b-nvfp4qwen3-coder-480b" in names, names  # folded onto its own next line, whole
    # a number column keeps its width, header too (review 2026-12-06 item 11: "69.5" over "0B", and "tot…"); the names fold
    head = out.split("─" * 10, 1)[0].split()
    assert head[-4:] == ["name", "total", "active", "layers"], head
    # (the name's first line is as wide as the room left: 12 characters here since the texts that do not fit are left out
    # of the table, 9 while rich's last resort kept them as blank columns)
    assert re.search(r"llama-3\.1\S* +70\.6B +69\.50B +80\b", body), body


def test_at_60_columns_the_figures_stay_whole_and_what_does_not_fit_folds_or_is_left_out():
    # cli.common._table through rich's public API (Column min_width/max_width, Measurement): `models` at COLUMNS=60 needs
    # name 21 + total 7 + active 7 + layers 6 + precision 14 (its own max) + ids 45 and 12 for edges, rules and padding:
    # 112 > 60, so the ids are listed beneath the table, each whole (newc5 #21: folded mid-word at 80 columns), and the
    # numbers keep their widest cell ("405.8B", "403.75B"); the name keeps its 21
    code, out, err = cli("models", columns=60)
    assert code == 0, err
    assert "…" not in out and max(len(x) for x in out.splitlines()) <= 60
    assert re.search(r"^ llama-3\.1-405b +405\.8B +403\.75B +126  W:bf16 *$", out, re.M), out
    table, ids = out.split("Hugging Face ids:\n")
    assert "meta-llama/" not in table and "  llama-3.1-405b: meta-llama/Llama-3.1-405B" in ids
    head = out.split("─" * 10, 1)[0].split()
    # "precision" whole: the ids beneath leave the room 21 + 20 + 9 + 8 = 58 <= 60 (it folded at 8 beside them)
    assert head[-6:] == ["default", "name", "total", "active", "layers", "precision"], head


def test_a_number_column_is_never_cut_on_a_narrow_console():
    from rich.console import Console

    from llm_codesign.cli.common import _table

    t = _table("T", "key:k figure:n note:t")
    t.add_row("a-model-name-of-thirty-chars-x", "1,234,567.89", "a note long enough to fold over several lines")
    con = Console(width=30, record=True, color_system=None)
    with con.capture() as cap:
        con.print(t)
    text = cap.get()
    # 30 columns: the key 30 + the figure 12 + the note (its min_width 8) + 6 for edges, rules and padding = 56; the note
    # (a text) is left out, leaving 2 x 2 for edges, rule and padding: the figure 12 whole and the key folded at 30 - 16 = 14
    assert "1,234,567.89" in text and "…" not in text, text
    assert max(len(x) for x in text.splitlines()) <= 30, text
    assert [x.strip() for x in text.splitlines()[4:] if x.strip()] == ["a-model-name-o  1,234,567.89", "f-thirty-chars", "-x"], text


def test_json_says_whether_an_answer_is_predictable_here():
    # newc5 #17: DeepSeek-R1 on B200 SGLang at 64 requests, TTFT's 95% ~487 ms-32.7 s (x67 in the finding): past x20,
    # "predictable": false and its ratio; its TPOT band (well under x20) true. span95 = hi95 / lo95 by definition
    from conftest import cli

    code, out, _ = cli("estimate", "deepseek-r1", "--gpu", "b200", "--tp", "8", "--backend", "sglang", "--isl", "2048", "--osl", "512",
                       "--concurrency", "64", "--json")
    iv = json.loads(out)["intervals"]
    assert code == 0 and iv["ttft_ms"]["predictable"] is False and iv["tpot_ms"]["predictable"] is True
    for b in iv.values():
        assert b["span95"] == pytest.approx(b["hi95"] / b["lo95"]) and b["predictable"] == (b["span95"] <= 20)
    assert iv["ttft_ms"]["span95"] > 20
