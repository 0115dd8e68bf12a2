"""The leave-one-campaign-out folds (benchmarks/crossval_campaigns.py) are tasks of the sweep executor: a
LocalCluster of worker processes gives the serial run's results, fitted parameters and errors alike."""
import importlib
from functools import partial
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_folds_on_a_local_cluster_give_the_serial_results(monkeypatch):
    pytest.importorskip("distributed")
    from llm_codesign.explore.sweep import execute

    # the worker processes start with this sys.path and import the script by name (a run of the script
    # itself has its __main__ functions pickled by value)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    cc = importlib.import_module("crossval_campaigns")
    # every 300th row of A and every 96th of B (5 each, all three engines among them); rounds=0 keeps the
    # documented start values, so each fit takes about a second and the folds still fit, predict and report
    rows = {"A": cc.campaign_rows("A")[::300], "B": cc.campaign_rows("B")[::96]}
    assert len(rows["A"]) == len(rows["B"]) == 5
    fn = partial(cc.run, rounds=0, rows=rows)
    serial = list(execute(["A-B", "B-A"], fn=fn))
    local = list(execute(["A-B", "B-A"], scheduler="local", workers=2, fn=fn, processes=True))
    for a, b in zip(serial, local, strict=True):
        a.pop("fit_seconds"), b.pop("fit_seconds")
        assert a == b
    assert [r["direction"] for r in local] == ["A-B", "B-A"]
    assert (serial[0]["train_rows"], serial[0]["test_rows"]) == (5, 5)
    # the out-of-sample errors are real figures, not empty reports
    assert serial[0]["out_of_sample"]["modeled"] >= 3 and serial[0]["out_of_sample"]["overall"]["tpot_ms"]["median_ape"] > 0


def test_family_folds_on_a_local_cluster_give_the_serial_results(monkeypatch):
    pytest.importorskip("distributed")
    from llm_codesign.explore.sweep import execute

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    cf = importlib.import_module("crossval_families")
    # 60 training rows per table and family and rounds=0: each direction fits, prices every held-out row
    # and reports in a few seconds
    fn = partial(cf.fold, train_rows=60, rounds=0)
    serial = list(execute([0, 1], fn=fn))
    local = list(execute([0, 1], scheduler="local", workers=2, fn=fn, processes=True))
    for a, b in zip(serial, local, strict=True):
        for x, y in zip(a, b, strict=True):
            x.pop("fit_s"), y.pop("fit_s")
            assert x == y
    assert [(fold[0]["train"], fold[0]["test"]) for fold in serial] == [("hopper+ampere", "blackwell"), ("blackwell", "hopper+ampere")]
    assert [r["kind"] for r in serial[0]] == ["gemm", "prefill_attention", "decode_attention", "moe"]
    assert all(r["held_out"]["median_ape"] > 0 for fold in serial for r in fold)


def test_folds_at_another_routing_skew(monkeypatch):
    """--routing-alpha fits and prices a fold at that MoE routing skew: with rounds=0 the serving values stay the
    documented ones, so only the skew moves the predictions. TensorRT-LLM's DeepSeek runs of A under EP 4 and 8
    decode faster at 1.1 (each rank reads fewer distinct experts; uniform routing reads them all at these batches)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    cc = importlib.import_module("crossval_campaigns")
    rows = {"A": [r for r in cc.campaign_rows("A") if r["ep"] not in ("", "1") and "DeepSeek" in r["model"]][:3],
            "B": [r for r in cc.campaign_rows("B") if r["ep"] == "8"][:3]}
    bundled, skewed = (cc.run("A-B", rounds=0, rows=rows, routing_alpha=a) for a in (None, 1.1))
    assert (bundled["routing_alpha"], skewed["routing_alpha"]) == (None, 1.1)
    assert {k: v for k, v in bundled["params"].items() if k != "loss"} == {k: v for k, v in skewed["params"].items() if k != "loss"}
    tpot = [r["in_sample"]["overall"]["tpot_ms"] for r in (bundled, skewed)]
    assert [t["n"] for t in tpot] == [3, 3] and tpot[1]["signed_median_pe"] < tpot[0]["signed_median_pe"] - 3.0
    assert "rounds=0, MoE routing skew 1.1 (" in cc.markdown([skewed]) and "rounds=0 (" in cc.markdown([bundled])


def test_where_a_held_out_error_is(monkeypatch):
    """--where: a fold's held-out and in-sample errors by bucket of the rows' fields, a GEMM's sizes within its dtype."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    cf = importlib.import_module("crossval_families")
    assert [cf._bucket(v, (1, 8, 64)) for v in (1, 2, 8, 9, 65)] == ["1", "2-8", "2-8", "9-64", ">64"]
    rows = [{"gemm_dtype": dt, "m": m, "n": "4096", "k": "4096", "latency_ms": "0.01"}
            for dt, m in (("bfloat16", "4"), ("bfloat16", "100"), ("fp8", "16"), ("bfloat16", "16"))]
    held, own = np.array([0.011, 0.008, 0.0125, 0.0095]), np.full(4, 0.01)
    m = [(b, h["n"], round(h["median_ape"], 6), round(h["signed_median_pe"], 6), o["median_ape"])
         for label, b, h, o in cf.where("gemm", rows, held, own) if label == "M"]
    # bfloat16 at M 4 and 16: +10% and -5% (median APE 7.5, signed +2.5); at 100: -20%; fp8 at 16: +25%
    assert m == [("bfloat16 1-16", 2, 7.5, 2.5, 0.0), ("bfloat16 17-128", 1, 20.0, -20.0, 0.0), ("fp8 1-16", 1, 25.0, 25.0, 0.0)]
    # one table, every held-out row in one bucket of each field, the breakdown only where the fold misses its target
    # (rounds=0 from default.toml's values on 60 rows: Hopper -> Blackwell GEMM at 20%+)
    [res] = cf.fold(2, train_rows=60, rounds=0, kinds=("gemm",), breakdown=True)
    assert (res["kind"], res["train"], res["test"]) == ("gemm", "hopper", "blackwell") and res["held_out"]["median_ape"] > cf.TARGET["gemm"]
    for field in ("M", "N", "K"):
        assert sum(h["n"] for label, _, h, _ in res["where"] if label == field) == res["held_out"]["n"] == 16000
    assert sum(h["n"] for label, b, h, _ in res["where"] if label == "K" and b.startswith("nvfp4 ")) == res["by"]["nvfp4"][0]["n"] == 4000
    assert "| hopper | blackwell | gemm | M | nvfp4 1-16 |" in cf.markdown([[res]], 60, 0)


def test_where_names_each_decode_rows_kernel(monkeypatch):
    """--where's decode breakdown names the TensorRT-LLM kernel a row runs: XQA takes query groups up to 32 (wider and,
    off Blackwell, vanilla MHA run the masked MHA kernel); on Hopper an FP8 cache runs XQA's GMMA kernel, a BF16 cache
    its HMMA kernel, as on Ampere whatever the cache; Blackwell runs TRTLLM-Gen's."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    cf = importlib.import_module("crossval_families")

    def row(system, heads, kv, dtype="bfloat16", d="128"):
        return {"system": system, "num_heads": str(heads), "num_key_value_heads": str(kv), "kv_cache_dtype": dtype, "head_dim": d}

    names = [cf.decode_kernel(r) for r in (row("h100_sxm", 32, 4, "fp8"), row("h100_sxm", 32, 4), row("h100_sxm", 8, 8, "fp8"),
                                            row("h100_sxm", 64, 1, "fp8"), row("a100_sxm", 32, 4, "fp8"), row("b200_sxm", 32, 4),
                                            row("b200_sxm", 8, 8), row("b200_sxm", 64, 1))]
    assert names == ["XQA GMMA", "XQA HMMA", "masked MHA", "masked MHA", "XQA HMMA", "TRTLLM-Gen", "TRTLLM-Gen", "masked MHA"]
    assert [cf._bucket(v, (1, 8, 16, 32)) for v in (1.0, 4.0, 12.0, 32.0, 48.0)] == ["1", "2-8", "9-16", "17-32", ">32"]


def test_campaign_b_holds_tensorrt_llm_runs_from_release_1_2_on(monkeypatch):
    """Campaign B's TensorRT-LLM rows are the runs from release 1.2.0rc6.post2 on (run ids from 21484110885): the
    1.1.0rc2.post2 runs before them (Dec. 2025, FP8 on the DEEPGEMM MoE backend) are left out as C's older builds
    are; every SGLang run stays."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    cc = importlib.import_module("crossval_campaigns")
    b = cc.campaign_rows("B")
    runs = {e: sorted(int(r["source"].split("runs/")[1].split("/")[0]) for r in b if r["backend"] == e) for e in ("sglang", "trtllm")}
    # the file's 536 rows: 325 SGLang, 211 TensorRT-LLM of which 60 from 1.2.0rc6.post2 on
    assert (len(b), len(runs["sglang"]), len(runs["trtllm"])) == (385, 325, 60)
    assert runs["trtllm"][0] == cc.TRTLLM_NEW_BUILDS == 21484110885
    assert "release:1.1.0rc2" not in " ".join(r["source"] for r in b if r["backend"] == "trtllm")

