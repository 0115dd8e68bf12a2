"""A newcomer's first hour, third pass (n5), on AMD and NVIDIA GPUs: a frontier's widening reasons said once, an unknown
accuracy not read as no drop, design's table whole at 80 columns, your own runs' arrival named, a calibration with too few
runs for bands of its own saying so, a bundled serving file taken by name wherever a serving file is, and export's launch
line naming the file where it was written."""
import csv
import json
import math
import re
from importlib import resources

import numpy as np
from conftest import cli

from llm_codesign.explore import accuracy_model as am
from llm_codesign.measure import intervals as iv

MI355X = str(resources.files("llm_codesign").joinpath("data/measurements/serving_inferencex_mi355x.csv"))


def test_reasons_differing_only_in_a_points_concurrency_are_said_once_over_their_range():
    from llm_codesign.render.intervals import merged

    def above(q, v):
        return iv.Widening("load", "above SGLang's largest measured 512 (serving runs)", quantity=q, span=(v, v),
                           factors=(1.8, 9.92), levels=(80, 95))

    tail = "above SGLang's largest measured 512 (serving runs) (x1.80/x9.92 at 80/95%)"
    cdna3 = iv.Widening("family", "no serving run on any CDNA3 GPU", factors=(1.19, 1.76), levels=(80, 95))
    # merged by their fields: the same quantity, words and terms, one line over the points' range; a value that
    # rounds to one figure said once
    assert merged([above("concurrency", 1184.0), cdna3, above("concurrency", 3696.0), above("concurrency", 2272.0),
                    above("ISL", 40000.0), above("OSL", 1e5 + 0.2), above("OSL", 1e5 - 0.2)]) == [
        f"concurrency 1,184-3,696 {tail}", "no serving run on any CDNA3 GPU (x1.19/x1.76 at 80/95%)", f"ISL 40,000 {tail}",
        f"OSL 100,000 {tail}"]


def test_a_frontier_on_mi355x_names_its_concurrency_reason_once_and_an_unknown_accuracy_n_a():
    # the band line named "concurrency N above SGLang's largest measured 512" 20 times, once per point; a point with no
    # published score nor precision delta read "drop none" (no drop?) and "accuracy at mxfp4/fp8: none"
    code, out, _ = cli("pareto", "deepseek-r1", "--gpu", "mi355x", "--gpus", "8")
    assert code == 0
    text = " ".join(out.split())
    assert text.count("above SGLang's largest measured 512") == 1
    load = iv.bundled()["between"]["load"]  # the term the load-top folds measured (docs/validation_report.md)
    # the frontier's points above 1,024 requests (2x SGLang's largest measured) said once over their range (it moves with
    # the fit: the range's ends are frontier points)
    # (in quadrature with TTFT's family term at these points, every CDNA4 run a closed loop: fixD; alone on the rates)
    said = re.search(r"; concurrency ([\d,]+)-([\d,]+) above SGLang's largest measured 512 \(serving runs\) "
                     rf"\(x{math.exp(load['t80']):.2f}/x{math.exp(load['t95']):.2f} at 80/95%: the band's term at every point, "
                     rf"{re.escape(iv.QUADRATURE[True].removesuffix(', the band' + chr(39) + 's'))} at some\)", text)
    assert said and 1024 < int(said[1].replace(",", "")) < int(said[2].replace(",", ""))
    # since fixqual post-training MXFP4 has a labelled proxy band (NVFP4's published drop + ~10%, Chhugani et al. 2026),
    # against DeepSeek-R1's FP8-block reference: 11.47 - 0.10 = 11.37%, ± hypot(10.09, 0.05)
    fd = am.format_drops()
    band = f"{fd['mxfp4']['drop_pct'] - fd['fp8']['drop_pct']:.2f}±{np.hypot(fd['mxfp4']['sigma_pct'], fd['fp8']['sigma_pct']):.2f}%"
    # shown as its 1-sigma range, no centre (newc5 #6): 11.37 - 10.09 = 1.28 -> 1%, 11.37 + 10.09 = 21.46 -> 21%
    assert band == "11.37±10.09%" and "accuracy at mxfp4/fp8: drop 1% to 21% against fp8_block (proxy band, unmeasured)" in out
    # MXFP4 points and, at one request, the block-FP8 checkpoint itself since amdk (AITER's 16-row tiles for few tokens):
    # the drop is said per row, the checkpoint's own "best"; per-tensor fp8, unmeasured on this block-FP8 checkpoint, is
    # not searched unless named (uxleft2)
    assert "every point: spec none" in text and "note: W fp8 not searched" in text
    assert "mxfp4/fp8 1% to 21%" in text and "fp8_block/fp8 best" in text


def test_design_keeps_its_title_and_lint_column_at_80_columns():
    # at 80 columns the title read "(180 shapes, 112,750 dep" / "in 0.8 s)" and the lint column was cut off
    code, out, _ = cli("design", "--params", "13e9", "--gpu", "h200", columns=80)
    lines = out.splitlines()
    assert code == 0 and max(map(len, lines)) <= 80
    header = next(line for line in lines if line.lstrip().startswith("#"))
    # the loss column's header on two lines, "loss %" over "±test" (sigma_delta; the model's error, "err ±", beneath each row's)
    assert header.split() == ["#", "shape", "params", "active", "±test", "/GPU", "%", "deployment", "lint"]
    # 0E 1W since fixE read the KV heads at the reference's query heads: design 1 is h5120 L34 H40/8 (h4096 L32 H32/4 before,
    # 0W), whose R3 warning is real: 26 layers at FFN 28160 run 13.2% faster, but at 14.39B, past the budget's 13 x 1.1 =
    # 14.3B, so design cannot propose it (lint prices a shape alone)
    assert next(line for line in lines if line.lstrip().startswith("1 ")).split()[-2:] == ["0E", "1W"]
    # 162 shapes since branch falcon (158 before falcon-7b's aspect 142 x 1.5 = 213 lifted 192), a dense search's aspect and
    # depth bounds from the dense models (180 from every model); 160,600 deployments since branch recon, whose grid extends
    # past every edge one of the 10 best sits on: 14 extensions (FFN ratio 2.25 and 4.75-7.5, kv_heads 2) pricing 127 more
    # shapes (98,450 before: one extension, 13 shapes); 138,600 since branch designffn, whose FFN-ratio pass prices the
    # envelope's window (2, 5.5, 6.5, 7.5, then 0.25 around the best) in place of most of that one-step walk; 139,150 since
    # branch uxcli, whose binds price design 1's unadmitted neighbours, not the fastest shape's (one shape more: +550);
    # 150 shapes, 114,400 deployments since fixE: KV heads read at the reference's query heads (qwen3-8b's 32, scaled) move
    # which shapes pass the equal-quality test (150 of them, 162 before) and so the extensions priced around the best
    # 194 shapes, 145,200 deployments since designQ: the query-width axis (q1.05, the reference's own width scaled) adds
    # its shapes beside the 150 at q1 (rows 2, 3, 5, 6, 8 and 10 are q1.05's, on their own line beneath the heads)
    assert "(194 shapes, 145,200 deployments in" in " ".join(out.split())
    # the envelope said exactly: which models, the margin, the aspect limit and who set it (falcon-7b's 4544 / 32 x 1.5;
    # llama-3.1-8b's 4096 / 32 x 1.5 = 192 before)
    assert ("Every design lies inside the envelope: the published models (trunk: width, depth, aspect from the dense models; attention geometry from all) near 13B, ratios widened x1.5 and counts +-25% "
            "(aspect ratio at most 213: 1.5 x the largest published, 142, falcon-7b) (searched inside it).") in " ".join(out.split())


def test_design_outside_the_envelope_keeps_its_lint_column_at_80_columns():
    # with --outside-envelope the envelope column read "out: / aspect_r / atio.max / x3.6" and cropped deployment to
    # "deployme nt" and lint away: each row's bound now sits beneath its loss, "aspect>x2.4" (row 1 h6144 L12 since the FFN
    # pass, branch designffn: 6144 / 12 = 512 against falcon-7b's 213; h8192 L12's 682.7, x3.2, before it)
    code, out, _ = cli("design", "--params", "13e9", "--gpu", "h200", "--outside-envelope", "--rank-all", columns=80)  # the fastest rows (designq)
    lines = out.splitlines()
    assert code == 0 and max(map(len, lines)) <= 80
    i = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    assert lines[i].split() == ["#", "shape", "params", "active", "envelope", "/GPU", "%", "deployment", "lint"]
    assert lines[i - 1].split() == ["±test", "tok/s", "gain"] and lines[i - 2].split() == ["loss", "%"]
    first = lines[i + 2].split()
    # beneath the loss: the model's error of the delta, then the bound broken. Row 1 since fixE (KV heads read at the
    # reference's query heads) h10240 L6 H160/32: 10240 / 6 = 1706.7 against falcon-7b's 213 -> x8.01, "aspect>x8"; its
    # two warnings R9 (32 KV heads, 8 run 17.4% faster) and R8 (outside the published envelope, as --outside-envelope asks)
    # since designQ's query-width axis row 1 is h9728 L6 H160/32 q1.05: 9728 / 6 = 1621.3 against 213 -> x7.6, its bound
    # beneath the q label's line (the label takes the shape column's third line, the row stays 80 columns)
    assert first[0] == "1" and first[-2:] == ["0E", "2W"] and "err" in lines[i + 3].split()
    # (and beneath the deployment, the capture it was priced with, leftS2: "graphs ≤639", at 80 columns over two lines)
    assert lines[i + 2].split()[1:3] == ["h9728", "L6"] and lines[i + 4].split() == ["q1.05", "aspect>x7.6", "≤639"]
    assert lines[i + 3].split()[-1] == "graphs"
    assert ("envelope, beneath the loss: in, or the bound it breaks most, above its maximum (>) or below its minimum (<), and by "
            "what factor (--json: every bound) (--outside-envelope).") in " ".join(out.split())


def _my_runs(tmp_path, arrival: str | None):
    """Twelve MI355X SGLang runs of the bundled InferenceX file as a user's own (their source renamed), with an arrival
    column where given."""
    with open(MI355X) as f:
        rows = [r for r in csv.DictReader(f) if r["backend"] == "sglang" and r["weight_dtype"] == "fp8_block" and not r["spec_method"]][:12]
    for r in rows:
        r["source"] = "my-cluster"
        if arrival:
            r["arrival"] = arrival
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return str(path)


def test_validate_says_which_runs_it_priced_with_the_default_arrival(tmp_path):
    # a user's bench_serving runs (no campaign, no arrival column) were priced as waves, silently: TTFT 316% off
    note = ("arrival: 12 runs at a concurrency state no `arrival` column and no bundled campaign of theirs sets one, so they "
            "are priced as waves (identical requests kept in step, as aiperf and trtllm-bench run them); a bench_serving --max-concurrency "
            "run is a closed loop: arrival=closed_loop (its first tokens queue less)")
    code, out, _ = cli("validate", "--serving", _my_runs(tmp_path, None))
    assert code == 0 and out.splitlines()[-1] == note
    code, out, _ = cli("validate", "--serving", _my_runs(tmp_path, "closed_loop"))
    assert code == 0 and "arrival:" not in out
    code, out, _ = cli("validate", "--serving", "serving_inferencex_mi355x.csv")  # its campaign states its closed loop
    assert code == 0 and "arrival:" not in out


def test_a_campaign_that_sets_no_arrival_leaves_its_runs_named(tmp_path, monkeypatch):
    # a run whose source a campaign names counted as known whatever the campaign set: one that sets no arrival left the
    # note out, though the runs are priced with the default arrival
    from llm_codesign.measure import campaigns

    bundled = campaigns.campaigns()
    monkeypatch.setattr(campaigns, "campaigns", lambda: (*bundled, {"source": "my-cluster", "max_running_requests": 64}))
    code, out, _ = cli("validate", "--serving", _my_runs(tmp_path, None))
    assert code == 0 and out.splitlines()[-1].startswith("arrival: 12 runs at a concurrency state no `arrival` column and no "
                                                         "bundled campaign of theirs sets one, so they are priced as waves")


def test_a_profile_with_too_few_runs_for_bands_of_its_own_says_it_keeps_the_bundled_ones():
    # it read "answers with this profile on none of its engines and GPU families (too few runs) take the bands of its own runs"
    from rich.console import Console

    from llm_codesign.cli.accuracy import _print_own_intervals

    con = Console(width=2000)
    with con.capture() as got:
        _print_own_intervals("[intervals.slices.ttft_ms]\n[intervals.envelope]\n", con)
    assert got.get() == ("intervals: a band of the profile's own needs 9 runs of one engine on one GPU family, so answers with this "
                         "profile keep the bundled bands and their widenings, and say so\n")


def test_a_bundled_serving_file_is_taken_by_name_by_calibrate_and_the_api(tmp_path, monkeypatch):
    # validate took one by name; calibrate --serving and lc.validate_serving refused it
    import llm_codesign as lc

    monkeypatch.chdir(tmp_path)
    assert lc.validate_serving("published_runs.csv")["rows"] == 8
    code, out, err = cli("calibrate", "--serving", "runs.csv", "-o", "p.toml")
    assert (code, out) == (2, "") and err.startswith(
        "error: serving: 'runs.csv' is not valid; an existing CSV file (.csv or .csv.gz) with the canonical serving columns, or a "
        "bundled one: published_mtp_depth.csv, published_runs.csv, ")
    assert json.loads(cli("validate", "--serving", "published_runs.csv", "--json")[1])["rows"] == 8


def test_exports_launch_line_names_the_file_where_it_was_written(tmp_path):
    # "launch: vllm serve --config v.yaml" for -o DIR/v.yaml ran from DIR only (SGLang's `sh PATH` had the path), and a
    # name with a space ran as two arguments
    for engine, gpu, launch in (("vllm", "h100", "vllm serve --config '{p}'"), ("sglang", "mi355x", "sh '{p}'"),
                                ("trtllm", "h100", "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend pytorch --extra_llm_api_options '{p}'")):
        path = tmp_path / "my runs" / f"{engine}.{'sh' if engine == 'sglang' else 'yaml'}"  # a .yaml shell script is refused
        code, out, _ = cli("export", "llama-3.1-8b", "--gpu", gpu, "--backend", engine, "--concurrency", "8", "-o", str(path))
        assert code == 0 and f"launch: {launch.format(p=path)}\n" in out
    assert "# launch: vllm serve --config vllm.yaml\n" in (tmp_path / "my runs" / "vllm.yaml").read_text()
    code, out, _ = cli("export", "llama-3.1-8b", "--gpu", "h100", "--backend", "vllm", "--concurrency", "8", "-o", str(tmp_path / "a b.yaml"))
    assert code == 0 and "# launch: vllm serve --config 'a b.yaml'\n" in (tmp_path / "a b.yaml").read_text()


def test_a_disaggregated_frontiers_points_carry_their_precisions_accuracy():
    # its points had none: "drop none" and "accuracy at fp8/fp8: none" beneath it, "best precision (proxy)" beneath the
    # aggregated frontier of the same model and precision
    # per-tensor fp8 named (uxleft2: by default it is not searched, and each series says so in `not_searched`)
    code, out, _ = cli("pareto", "deepseek-r1", "--gpu", "h200", "--gpus", "16", "--disagg", "--min-tps-user", "30", "--json",
                       "--weight-dtype", "fp8", "--kv-dtype", "fp8")
    assert code == 0
    series = {c.get("mode", "aggregated"): c["frontier"] for c in json.loads(out)["comparisons"]}
    assert not any("not_searched" in c for c in json.loads(out)["comparisons"])
    # per-tensor fp8 of this block-FP8 checkpoint: unmeasured, not "best precision" (newc7 #3), said alike on both series
    assert {p["accuracy"]["short"] for p in series["disaggregated"]} == {"none"} == {
        p["accuracy"]["short"] for p in series["aggregated"]}
    assert all("per-tensor re-quantisation" in p["accuracy"]["drop_unmeasured"] for s in series.values() for p in s)


def test_compare_labels_mxfp4_on_cdna4_with_the_activation_it_prices():
    # MXFP4 weights run W4A4 on CDNA4 (spec.precision.mxfp4_activation); compare printed the unsettled A:bf16 beside a W4A4 price
    code, out, _ = cli("compare", "deepseek-r1", "--gpu", "mi355x", "--weight-dtype", "mxfp4", "--json")
    assert code == 0
    row = json.loads(out)["rows"][0]
    assert (row["precision"], row["activation_dtype"]) == ("W:mxfp4 A:mxfp4 KV:fp8", "mxfp4")
