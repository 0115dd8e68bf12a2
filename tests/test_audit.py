"""Data checks on serving measurements: repeats, conflicting plans, plans that contradict run names."""
import csv
import json
from pathlib import Path

from conftest import run
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.measure import audit
from llm_codesign.measure.validate import read_rows

DATA = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements"
P = "aiconfigurator-core-0.12.0-silicon-sample:"


def row(source, ttft, tpot, **plan):
    base = {"source": P + source, "model": "deepseek-ai/DeepSeek-R1", "gpu": "b200", "backend": "trtllm", "weight_dtype": "fp8",
            "kv_dtype": "fp8", "isl": "1024", "osl": "1024", "concurrency": "16", "num_gpus": "8", "tp": "8", "pp": "1", "ep": "1",
            "moe_tp": "8", "attention_dp": "1", "spec_method": "", "spec_draft_len": "", "ttft_ms": ttft, "tpot_ms": tpot}
    return {**base, **{k: str(v) for k, v in plan.items()}}


def test_named_plan_parses_both_naming_schemes():
    assert audit.named_plan(P + "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_agg_1024x1024_c4_tp8_0_ep8_0_298") == (8, 8)
    assert audit.named_plan(P + "2026_04_06_deepseek_r1_b200_sxm_trtllm_fp4_agg_1024x1024_c64_tp4_ep4_935") == (4, 4)
    assert audit.named_plan(P + "dsr1_b200_trtllm_fp8_agg_1024x1024_c64_cfg75") is None


def test_product_plan_is_rederived_from_the_run_name():
    # named tp8_ep8, recorded as 64 GPUs with MoE TP 8: one node of 8 GPUs, EP 8, MoE TP 1
    tp_row = row("x_1024x1024_c16_tp8_ep8_1", "100.0", "10.0", num_gpus=64, tp=64, ep=8, moe_tp=8)
    adp_row = row("x_1024x1024_c16_tp8_ep8_2", "200.0", "20.0", num_gpus=64, tp=1, ep=8, moe_tp=8, attention_dp=64)
    ok_row = row("x_1024x1024_c16_tp8_ep8_3", "300.0", "30.0", num_gpus=8, tp=8, ep=8, moe_tp=1)
    kept, changes = audit.clean([tp_row, adp_row, ok_row])
    assert [(r["num_gpus"], r["tp"], r["ep"], r["moe_tp"], r["attention_dp"]) for r in kept] == [
        ("8", "8", "8", "1", "1"), ("8", "1", "8", "1", "8"), ("8", "8", "8", "1", "1")]
    assert audit.summary(changes) == {"replanned": 2, "repeat": 0, "conflict": 0, "suspect": 0, "inconsistent": 0, "unrecorded": 0,
                                      "unplanned": 0}
    # a concurrency other than the run name's is kept, and doubted
    kept, changes = audit.clean([dict(ok_row, concurrency="4")])
    assert kept[0]["concurrency"] == "4" and [c["action"] for c in changes] == ["suspect"] and "c16" in changes[0]["detail"]


def test_repeats_and_conflicts_keep_the_named_run():
    named = row("x_1024x1024_c16_tp4_0_ep4_0_7", "150.5", "12.25", num_gpus=4, tp=4, ep=4, moe_tp=1)
    again = dict(named, source=P + "x_1024x1024_c16_tp4_0_ep4_0_9")
    cfg = row("dsr1_b200_trtllm_fp8_agg_1024x1024_c16_cfg5", "150.5", "12.25", num_gpus=16, tp=16, ep=4, moe_tp=4)
    sibling = row("dsr1_b200_trtllm_fp8_agg_8192x1024_c32_cfg5", "900.0", "30.0", num_gpus=16, tp=16, ep=4, moe_tp=4, isl=8192, concurrency=32)
    orphan = row("dsr1_b200_trtllm_fp8_agg_8192x1024_c32_cfg6", "901.0", "31.0", num_gpus=16, tp=16, ep=4, moe_tp=4, isl=8192,
                 concurrency=32)
    other = row("y_1024x1024_c16_cfg8", "50.0", "5.0")
    kept, changes = audit.clean([cfg, named, again, sibling, orphan, other])
    # the conflict and the repeat go; the configuration's other row takes the named plan; the orphan is kept but doubted
    assert [r["source"] for r in kept] == [named["source"], sibling["source"], orphan["source"], other["source"]]
    assert (kept[1]["num_gpus"], kept[1]["tp"], kept[1]["moe_tp"]) == ("4", "4", "1")
    assert (kept[2]["num_gpus"], kept[2]["tp"], kept[2]["moe_tp"]) == ("16", "16", "4")
    assert {c["row"]: c["action"] for c in changes} == {0: "conflict", 2: "repeat", 3: "replanned", 4: "suspect"}
    # cleaning is idempotent but for the doubted row
    assert audit.summary(audit.clean(kept)[1]) == {"replanned": 0, "repeat": 0, "conflict": 0, "suspect": 1, "inconsistent": 0,
                                                   "unrecorded": 0, "unplanned": 0}


def test_a_configuration_takes_a_plan_only_from_named_runs_that_agree():
    # configuration 5 (16 GPUs, EP = MoE TP 4) shares one measurement with a run named 4 GPUs EP 4 and another with one named
    # 8 GPUs EP 8: which plan its third row ran is not shown, so it is kept and doubted (the last evidence read used to win)
    cfg = dict(num_gpus=16, tp=16, ep=4, moe_tp=4)
    named4 = row("x_1024x1024_c16_tp4_ep4_7", "150.5", "12.25", num_gpus=4, tp=4, ep=4, moe_tp=1)
    named8 = row("x_1024x1024_c32_tp8_ep8_3", "160.5", "13.25", num_gpus=8, tp=8, ep=8, moe_tp=1, concurrency=32)
    a = row("dsr1_b200_trtllm_fp8_agg_1024x1024_c16_cfg5", "150.5", "12.25", **cfg)
    b = row("dsr1_b200_trtllm_fp8_agg_1024x1024_c32_cfg5", "160.5", "13.25", concurrency=32, **cfg)
    sibling = row("dsr1_b200_trtllm_fp8_agg_8192x1024_c32_cfg5", "900.0", "30.0", isl=8192, concurrency=32, **cfg)
    kept, changes = audit.clean([named4, named8, a, b, sibling])
    assert kept == [named4, named8, sibling]
    assert [(c["row"], c["action"]) for c in changes] == [(2, "conflict"), (3, "conflict"), (4, "suspect")]
    assert changes[2]["detail"] == "configuration dsr1_b200_trtllm_fp8_agg_cfg5 shares measurements with named runs of 2 plans (4 GPUs, EP 4 or 8 GPUs, EP 8); kept"
    # another configuration's row is no named run: configuration 6 keeps its plan, its shared row goes as a conflict
    other = row("dsr1_b200_trtllm_fp8_agg_1024x1024_c16_cfg6", "150.5", "12.25", num_gpus=8, tp=8, ep=8, moe_tp=1)
    kept, changes = audit.clean([other, a, sibling])
    assert kept == [other, sibling] and [(c["row"], c["action"]) for c in changes] == [(1, "conflict"), (2, "suspect")]
    assert changes[1]["detail"].startswith("plan has the GPUs x EP mark")


def test_contradiction_bounds_a_deployments_tpot_by_its_concurrency():
    # more requests never make a token faster, nor slower than serving them one batch after another (1.5x slack)
    assert audit.contradiction([(1, 8.0), (2, 9.0), (8, 20.0), (64, 100.0)]) is None
    assert audit.contradiction([(1, 8.0), (1, 12.0)]) is None  # a re-run within 1.5x
    assert audit.contradiction([(1, 8.0), (1, 12.1)]) == (0, 1)  # the same setting measured 1.51x apart
    assert audit.contradiction([(16, 133.0), (32, 71.8)]) == (0, 1)  # 133 > 1.5 x 71.8: faster with twice the requests
    assert audit.contradiction([(1, 8.0), (2, 24.0)]) is None  # 2 x 1.5 x 8 = 24: the serial bound, met
    assert audit.contradiction([(1, 8.0), (2, 24.1)]) == (0, 1)


def test_a_series_that_contradicts_itself_at_either_concurrency_goes():
    # the recorded concurrency is half the run name's; TPOT 8 at c1 and 40 at c2 both recorded at 1
    runs = [row(f"q_2000x500_c{c}_tp2_epnone_{k}", f"{100 + k}.5", tpot, concurrency=rec, isl=2000, osl=500)
            for k, (c, rec, tpot) in enumerate(((1, 1, "8.0"), (2, 1, "40.0"), (8, 4, "27.0")))]
    other = row("q_2000x500_c4_tp4_epnone_9", "300.5", "9.0", concurrency=2, isl=2000, osl=500, tp=4, num_gpus=4)
    kept, changes = audit.clean([*runs, other])
    # as recorded the c1 and c2 runs are one setting measured 5x apart; as named 40 ms at c2 is over 2 x 1.5 x 8 ms at c1
    assert kept == [other] and {c["row"]: c["action"] for c in changes} == {0: "inconsistent", 1: "inconsistent", 2: "inconsistent",
                                                                            3: "suspect"}
    assert changes[0]["detail"] == (
        "its run series (3 runs) contradicts itself at the recorded concurrency, TPOT 8.00 ms at 1 but 40.00 ms at 1 (one setting "
        "measured twice); at the run names', TPOT 8.00 ms at 1 but 40.00 ms at 2 (slower than serving them one batch after another)")
    # a series one reading explains is kept, and its doubted rows stay doubted
    fine = [dict(r, tpot_ms=t) for r, t in zip(runs, ("8.0", "11.0", "20.0"), strict=True)]
    kept, changes = audit.clean(fine)
    assert kept == fine and [c["action"] for c in changes] == ["suspect", "suspect"]
    # a run name with a blank concurrency (`_c_`) records none: the row goes
    blank = row("q_4000x1000_c_tp8_epnone_1", "39682.8", "31.5", concurrency=28, isl=4000, osl=1000)
    kept, changes = audit.clean([blank, other])
    assert kept == [other] and [(c["row"], c["action"]) for c in changes] == [(0, "unrecorded"), (1, "suspect")]
    assert changes[0]["detail"] == "the run name states no concurrency (`_c_`), so the recorded 28 is not shown to be the run's"


def test_a_measurement_keeps_a_valid_listing_when_the_one_kept_first_is_dropped():
    # one measurement listed under a run that records no concurrency (`_c_`, agreeing with its named plan) and under a
    # configuration run of the same setting: the named run spoke for it, then went as unrecorded, and the setting with it
    blank = row("x_1024x1024_c_tp8_ep1_1", "150.5", "12.25")
    cfg = row("dsr1_b200_trtllm_fp8_agg_1024x1024_c16_cfg5", "150.5", "12.25")
    kept, changes = audit.clean([blank, cfg])
    assert kept == [cfg] and [(c["row"], c["action"]) for c in changes] == [(0, "repeat")]
    # both unrecorded: one goes as the other's repeat, the other as unrecorded
    kept, changes = audit.clean([blank, dict(blank, source=P + "x_1024x1024_c_tp8_ep1_2")])
    assert kept == [] and [(c["row"], c["action"]) for c in changes] == [(0, "unrecorded"), (1, "repeat")]
    # a series that contradicts itself (TPOT 8 and 40 ms both recorded at c1) lists its second run's measurement again under
    # a run whose name and record agree on c1: that listing speaks for it, and the series still goes
    runs = [row(f"q_2000x500_c{c}_tp2_epnone_{k}", f"{100 + k}.5", tpot, concurrency=1, isl=2000, osl=500)
            for k, (c, tpot) in enumerate(((1, "8.0"), (2, "40.0")))]
    again = dict(runs[1], source=P + "r_2000x500_c1_tp2_epnone_5")
    kept, changes = audit.clean([*runs, again])
    assert kept == [again] and [(c["row"], c["action"]) for c in changes] == [(0, "inconsistent"), (1, "inconsistent")]
    assert changes[0]["detail"].startswith("its run series (2 runs) contradicts itself at the recorded concurrency, TPOT 8.00 ms")


def gb200_run(conc, tp, k, ttft, tpot, **over):
    """A DeepSeek-R1 (128 attention heads) GB200 run of one 2026_04_06 TensorRT-LLM NVFP4 8k/1k series, recorded as pure TP."""
    return row(f"2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_8192x1024_c{conc}_tp{tp}_ep1_{k}", ttft, tpot, gpu="gb200",
               weight_dtype="nvfp4", isl=8192, concurrency=conc, num_gpus=tp, tp=tp, moe_tp=tp, **over)


def test_a_series_recorded_mostly_at_tps_the_heads_do_not_divide_records_no_plan():
    # TP 28, 40 and 48 do not divide 128 heads (three of the series' four measurements): the TP32 run is no evidence of a TP
    # plan either, and goes; the others stay (validate lists them as unmodelled)
    odd = [gb200_run(c, tp, k, f"{4000 + k}.5", f"{40 + k}.25") for k, (c, tp) in enumerate(((2150, 28), (1075, 40), (2150, 48)))]
    tp32 = gb200_run(2150, 32, 9, "5755.5", "43.875")
    kept, changes = audit.clean([*odd, tp32])
    assert kept == odd and [(c["row"], c["action"]) for c in changes] == [(3, "unplanned")]
    assert changes[0]["detail"] == (
        "its run series (4 measurements) records TP 28, 40 or 48 on 3 of them, which deepseek-ai/DeepSeek-R1's 128 attention "
        "heads do not divide: the series does not record its plans, so TP 32 is not shown to be the run's")
    # half the series at a dividing TP is not "most" elsewhere: two of four measurements, kept
    half = [odd[0], odd[1], tp32, gb200_run(538, 64, 8, "1389.5", "10.125")]
    assert audit.clean(half) == (half, [])
    # the TP32 run listed twice counts once: still three of four, and both listings go (one as the other's repeat)
    again = dict(tp32, source=tp32["source"].replace("_9", "_10"))
    kept, changes = audit.clean([*odd, tp32, again])
    assert kept == odd and [(c["row"], c["action"]) for c in changes] == [(3, "unplanned"), (4, "repeat")]
    assert changes[0]["detail"].startswith("its run series (4 measurements) records TP 28, 40 or 48 on 3 of them")
    # another campaign's date, engine or lengths is another series; a model the registry does not know has no head count
    for other in ({"source": tp32["source"].replace("2026_04_06", "2026_03_25")}, {"backend": "sglang"}, {"osl": "2048"}):
        assert audit.clean([*odd, dict(tp32, **other)])[0] == [*odd, dict(tp32, **other)]
    unknown = [dict(r, model="no-such-model") for r in (*odd, tp32)]
    assert audit.clean(unknown) == (unknown, [])


def test_a_model_id_not_bundled_is_never_looked_up_on_the_hub(monkeypatch):
    from llm_codesign.spec import hub

    # a Hugging Face id the registry does not bundle went to the local cache, then the network: a clean stays offline
    def online(ref, **_):
        raise AssertionError(f"went to the hub for {ref}")

    monkeypatch.setattr(hub, "get_hub_model", online)
    odd = [gb200_run(c, tp, k, f"{4000 + k}.5", f"{40 + k}.25") for k, (c, tp) in enumerate(((2150, 28), (1075, 40), (2150, 48)))]
    rows = [dict(r, model="some-org/Not-Bundled-R1") for r in (*odd, gb200_run(2150, 32, 9, "5755.5", "43.875"))]
    assert audit.clean(rows) == (rows, [])  # no head count: the series is left alone, as for an unknown name


def test_the_samples_gb200_deepseek_r1_runs_at_tp32_and_tp64_record_no_plan():
    # aiconfigurator-core 0.12.0 silicon sample, 2026_04_06 DeepSeek-R1 NVFP4 TensorRT-LLM 8k/1k on GB200: 15 runs at TP 28-52
    # and these two; no other series of the sample is recorded mostly at TPs its model's heads do not divide with a run at one
    # they do
    rows = read_rows(DATA / "serving_measured_blackwell.csv")
    gone = [(c["row"], c["source"].split(":")[-1]) for c in audit.clean(rows)[1] if c["action"] == "unplanned"]
    assert gone == [(1161, "2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_8192x1024_c538_tp64_ep1_113"),
                    (1169, "2026_04_06_deepseek_r1_gb200_trtllm_fp4_agg_8192x1024_c2150_tp32_ep1_121")]


def test_the_samples_gb200_qwen3_32b_series_contradict_themselves():
    # aiconfigurator-core 0.12.0 silicon_sample.csv: Qwen3-32B BF16, TP2 on GB200, TensorRT-LLM 1.3.0rc1, 2000/500; each row's
    # batch_size (recorded as concurrency) is half its silicon_concurrency (the run name's c), and the c1 and c2 runs (both
    # batch 1) decode at 8.07 and 41.92 ms a token
    rows = read_rows(DATA / "serving_measured_blackwell.csv")
    changes = {c["source"].split(":")[-1]: c for c in audit.clean(rows)[1]}
    c1, c2 = (changes[f"qwen_qwen3_32b_qwen_qwen3_32b_gb200_trtllm_agg_2000x500_c{c}_tp2_epnone_{k}"] for c, k in ((1, 2), (2, 3)))
    assert c1["action"] == c2["action"] == "inconsistent"
    assert c1["detail"] == (
        "its run series (8 runs) contradicts itself at the recorded concurrency, TPOT 8.07 ms at 1 but 41.92 ms at 1 (one setting "
        "measured twice); at the run names', TPOT 8.07 ms at 1 but 41.92 ms at 2 (slower than serving them one batch after another)")
    # at 4000/1000 the names' reading fails on TPOT falling from 133.32 ms at c64 to 71.82 ms at c128
    assert "TPOT 133.32 ms at 64 but 71.82 ms at 128 (faster with more requests)" in changes[
        "qwen_qwen3_32b_qwen_qwen3_32b_gb200_trtllm_agg_4000x1000_c64_tp2_epnone_14"]["detail"]
    assert changes["qwen3_32b_qwen3_32b_gb200_trtllm_agg_4000x1000_c_tp2_epnone_2"]["action"] == "unrecorded"
    # DeepSeek-R1-NVFP4 on B200 (TPOT 85-92 ms at every concurrency) is self-consistent either way: kept, doubted
    assert changes["nvidia_deepseek_r1_nvfp4_nvidia_deepseek_r1_nvfp4_b200_sxm_trtllm_agg_4000x1000_c224_tp4_epnone_1"]["action"] == "suspect"


def test_a_measurement_written_twice_in_other_last_bits_is_a_repeat():
    # the sample's own case: one mean summed in another order (rows ..._tp8_0_ep1_0_272 and ..._tp8_ep1_7)
    a = row("x_8192x1024_c32_tp8_0_ep1_0_272", "1610.3835293804875", "23.351457366624405", isl=8192, concurrency=32)
    b = dict(a, source=P + "x_8192x1024_c32_tp8_ep1_7", ttft_ms="1610.3835293804877")
    kept, changes = audit.clean([a, b])
    assert kept == [a] and [(c["row"], c["action"]) for c in changes] == [(1, "repeat")]
    # independent re-runs of a setting differ by 9e-4 or more (the closest pair in the sample); 1e-6 is plenty
    c = dict(a, source=P + "x_8192x1024_c32_tp8_ep1_8", ttft_ms="1610.3851234567891", tpot_ms="23.351512345678912")
    assert len(audit.clean([a, c])[0]) == 2


def test_a_measurement_written_again_rounded_is_a_repeat():
    # the sample's own case: a gap-analysis run prints 608.91 / 6.58 where ..._tp4_0_ep1_0_468 has the full pair
    full = row("x_8192x1024_c4_tp4_0_ep1_0_468", "608.9100526005495", "6.579993491720079", isl=8192, concurrency=4,
               num_gpus=4, tp=4, moe_tp=4)
    rounded = dict(full, source=P + "gap_analysis_x_8192x1024_c4_tp4_ep1_30", ttft_ms="608.91", tpot_ms="6.58")
    kept, changes = audit.clean([rounded, full])
    # the full-precision row speaks for the measurement; the copy goes, and the change says why
    assert kept == [full] and [(c["row"], c["action"]) for c in changes] == [(0, "repeat")]
    assert "rounded to 2 decimals" in changes[0]["detail"]
    # a coarse row that no full pair rounds to is its own measurement, and whole milliseconds are too
    # coarse to tell a copy from another run's chance match
    other = dict(rounded, ttft_ms="608.92")
    assert len(audit.clean([other, full])[0]) == 2
    assert len(audit.clean([dict(rounded, ttft_ms="609", tpot_ms="7"), full])[0]) == 2


def test_repeatability_is_the_spread_of_a_settings_runs():
    # setting A measured three times (TPOT 10, 12, 20: median 12), setting B twice with equal TPOT, C once
    runs = [row(f"a_1024x1024_c16_tp8_ep1_{k}", f"{100 + k}.0", tpot) for k, tpot in enumerate(("10.0", "12.0", "20.0"))]
    runs += [row(f"b_1024x1024_c32_tp8_ep1_{k}", f"{200 + k}.0", "30.0", concurrency=32) for k in range(2)]
    runs += [row("c_1024x1024_c64_tp8_ep1_9", "300.0", "5.0", concurrency=64)]
    preds = [{"ttft_ms": 110.0, "tpot_ms": 12.0}] * 3 + [{"ttft_ms": 200.0, "tpot_ms": 33.0}] * 2 + [{}]
    rep = audit.repeatability(runs, preds)
    assert (rep["settings"], rep["rows"]) == (2, 5)
    # TPOT: |10/12 - 1|, 0, |20/12 - 1|, 0, 0 -> 0, 0, 0, 16.7, 66.7 %: median 0, p90 0.6*66.7 + 0.4*16.7
    t = rep["tpot_ms"]
    assert t["n"] == 5 and t["median_ape"] == 0.0
    assert abs(t["p90_ape"] - (0.6 * 200 / 3 + 0.4 * 50 / 3)) < 1e-9
    # the model on the same runs: 20, 0, 40, 10, 10 %
    assert abs(t["model_median_ape"] - 10.0) < 1e-9 and t["model_n"] == 5
    # TTFT 100, 101, 102 around 101 (0.99, 0, 0.99 %); 200, 201 around 200.5 (0.25 % each): median 0.25 %
    assert abs(rep["ttft_ms"]["median_ape"] - 50 / 200.5) < 1e-9
    # only A's runs differ by over 1.5x (TPOT 20 / 10)
    assert rep["discordant"] == [{"rows": [0, 1, 2], "sources": [r["source"] for r in runs[:3]], "ratio": {"tpot_ms": 2.0}}]


def test_shipped_clean_file_is_the_clean_form_of_the_sample():
    rows = read_rows(DATA / "serving_measured_blackwell.csv")
    kept, changes = audit.clean(rows)
    assert (len(rows), len(kept)) == (2026, 1399)
    assert audit.summary(changes) == {"replanned": 139, "repeat": 505, "conflict": 101, "suspect": 45, "inconsistent": 15,
                                      "unrecorded": 4, "unplanned": 2}
    shipped = read_rows(DATA / "serving_measured_blackwell_clean.csv")
    assert shipped == [{k: r.get(k) or "" for k in shipped[0]} for r in kept]
    with (DATA / "serving_measured_blackwell_clean.changes.csv").open(newline="") as f:
        assert len(list(csv.DictReader(f))) == len(changes)
    # every measurement once, and every run name that states a plan agrees with its row
    assert len({(f"{float(r['ttft_ms']):.9g}", f"{float(r['tpot_ms']):.9g}") for r in shipped}) == len(shipped)
    for r in shipped:
        named = audit.named_plan(r["source"])
        if named:
            assert int(r["num_gpus"]) == named[0], r["source"]


def test_validate_reports_and_applies_the_checks():
    src = str(DATA / "serving_measured_blackwell.csv")
    rep = json.loads(run("validate", "--serving", src, "--json").stdout)
    assert {k: rep["data_checks"][k] for k in ("replanned", "repeat", "conflict", "suspect", "inconsistent", "unrecorded", "unplanned")} == {
        "replanned": 139, "repeat": 505, "conflict": 101, "suspect": 45, "inconsistent": 15, "unrecorded": 4, "unplanned": 2}
    text = " ".join(run("validate", "--serving", src).stdout.split())
    assert "505 rows repeat another row's measurement" in text and "153 settings measured more than once (342 runs)" in text
    assert ("15 contradict their own run series at every reading of their concurrency, 4 have a run name that records none, 2 "
            "belong to a series that records TP sizes its model's heads do not divide") in text
    cleaned = json.loads(run("validate", "--serving", src, "--json", "--clean").stdout)
    assert cleaned["rows"] == 1399 and cleaned["data_checks"]["repeat"] == 0
    # settings measured more than once, counted on the clean form either way
    for r in (rep, cleaned):
        rp = r["data_checks"]["repeatability"]
        assert (rp["settings"], rp["rows"], len(rp["discordant"])) == (153, 342, 43)
        assert rp["tpot_ms"]["median_ape"] < 5.0 and rp["tpot_ms"]["model_median_ape"] > 5.0


def test_clean_needs_serving_rows(tmp_path):
    k = str(Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements" / "kernels" / "gemm.csv.gz")
    for args in (("validate", "--kernels", k, "--clean"), ("calibrate", "--kernels", k, "--clean", "-o", str(tmp_path / "p.toml"))):
        r = run(*args)
        assert r.returncode == 2 and "clean" in r.stderr and "Traceback" not in r.stderr
        assert not (tmp_path / "p.toml").exists()


def test_clean_that_keeps_no_row_says_what_it_dropped(tmp_path):
    # both runs' names leave the concurrency blank (`_c_`): the clean form is empty, which said "none of its 0 rows is ()"
    f = tmp_path / "s.csv"
    f.write_text("source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,ttft_ms,tpot_ms\n"
                 + "".join(f"mine_4000x1000_c_tp1_epnone_{k},meta-llama/Llama-3.1-8B,h100,1,vllm,bf16,bf16,4000,1000,{c},1,{t},{t / 40}\n"
                           for k, c, t in ((1, 28, 400), (2, 56, 800))))
    for args in (("validate", "--serving", str(f), "--clean"), ("calibrate", "--serving", str(f), "--clean", "-o", str(tmp_path / "p.toml"))):
        r = run(*args)
        assert r.returncode == 2 and r.stdout == "" and not (tmp_path / "p.toml").exists()
        assert " ".join(r.stderr.split()) == (
            f"error: clean: '{f}' is not valid; a serving file whose clean form keeps a row; it drops all 2 (2 unrecorded; "
            "`llm-codesign validate --serving FILE --json` lists each one's reason)")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["tp4_ep4", "tp8_ep8", "cfg1", "cfg2"]), st.booleans(),
                          st.integers(0, 3)), min_size=1, max_size=25))
def test_clean_keeps_every_measurement_once(spec):
    # rows drawn from a few measurements, under named or configuration runs, some with the GPUs x EP mark
    rows = []
    for k, (m, name, product, conc) in enumerate(spec):
        gpus, ep = (4, 4) if name in ("tp4_ep4", "cfg1") else (8, 8)
        n = gpus * ep if product else gpus
        src = f"x_1024x1024_c{conc}_{name}" if name.startswith("cfg") else f"x_1024x1024_c{conc}_{name}_{k}"
        rows.append(row(src, f"{100 + m}.5", f"{10 + m}.25", num_gpus=n, tp=n, ep=ep, moe_tp=n // ep, concurrency=conc + 1))
    kept, changes = audit.clean(rows)
    dropped = [c for c in changes if c["action"] in audit.DROPPED]
    assert len(kept) + len(dropped) == len(rows)
    assert {(r["ttft_ms"], r["tpot_ms"]) for r in kept} == {(r["ttft_ms"], r["tpot_ms"]) for r in rows}
    assert len(kept) == len({(r["ttft_ms"], r["tpot_ms"]) for r in kept})
    # a named run never keeps a plan its name contradicts, and cleaning again changes nothing
    assert all(int(r["num_gpus"]) == audit.named_plan(r["source"])[0] for r in kept if audit.named_plan(r["source"]))
    again, more = audit.clean(kept)
    assert again == kept and {c["action"] for c in more} <= {"suspect"}
