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
    assert audit.summary(changes) == {"replanned": 2, "repeat": 0, "conflict": 0, "suspect": 0}
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
    assert audit.summary(audit.clean(kept)[1]) == {"replanned": 0, "repeat": 0, "conflict": 0, "suspect": 1}


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
    assert (len(rows), len(kept)) == (2026, 1420)
    assert audit.summary(changes) == {"replanned": 139, "repeat": 505, "conflict": 101, "suspect": 58}
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
    assert {k: rep["data_checks"][k] for k in ("replanned", "repeat", "conflict", "suspect")} == {
        "replanned": 139, "repeat": 505, "conflict": 101, "suspect": 58}
    text = " ".join(run("validate", "--serving", src).stdout.split())
    assert "505 rows repeat another row's measurement" in text and "155 settings measured more than once (346 runs)" in text
    cleaned = json.loads(run("validate", "--serving", src, "--json", "--clean").stdout)
    assert cleaned["rows"] == 1420 and cleaned["data_checks"]["repeat"] == 0
    # settings measured more than once, counted on the clean form either way
    for r in (rep, cleaned):
        rp = r["data_checks"]["repeatability"]
        assert (rp["settings"], rp["rows"], len(rp["discordant"])) == (155, 346, 45)
        assert rp["tpot_ms"]["median_ape"] < 5.0 and rp["tpot_ms"]["model_median_ape"] > 5.0


def test_clean_needs_serving_rows(tmp_path):
    k = str(Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements" / "kernels" / "gemm.csv.gz")
    for args in (("validate", "--kernels", k, "--clean"), ("calibrate", "--kernels", k, "--clean", "-o", str(tmp_path / "p.toml"))):
        r = run(*args)
        assert r.returncode == 2 and "clean" in r.stderr and "Traceback" not in r.stderr
        assert not (tmp_path / "p.toml").exists()


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
    dropped = [c for c in changes if c["action"] in ("repeat", "conflict")]
    assert len(kept) + len(dropped) == len(rows)
    assert {(r["ttft_ms"], r["tpot_ms"]) for r in kept} == {(r["ttft_ms"], r["tpot_ms"]) for r in rows}
    assert len(kept) == len({(r["ttft_ms"], r["tpot_ms"]) for r in kept})
    # a named run never keeps a plan its name contradicts, and cleaning again changes nothing
    assert all(int(r["num_gpus"]) == audit.named_plan(r["source"])[0] for r in kept if audit.named_plan(r["source"]))
    again, more = audit.clean(kept)
    assert again == kept and {c["action"] for c in more} <= {"suspect"}
