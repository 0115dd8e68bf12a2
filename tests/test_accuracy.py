"""The pooled validation errors (accuracy.toml: by engine and load, model, GPU family; `serve`'s validation report and
`disagg` show them), built from validation residuals; estimate states its error as its intervals alone."""
import tomllib

from llm_codesign.measure.accuracy import build, bundled, to_toml

CELL = {"median": 10.0, "p90": 18.0, "signed": 10.0, "n": 3}


def _row(gpu="b200", backend="vllm", conc="8", ttft="100", tpot="10", **kw):
    return {"source": "x", "gpu": gpu, "backend": backend, "concurrency": conc, "ttft_ms": ttft, "tpot_ms": tpot, **kw}


def test_build_cells_by_hand():
    # TTFT predicted 110, 90, 120 against 100: APE 10, 10, 20 -> median 10, p90 18 (linear), signed +10, -10, +20 -> +10
    rows = [_row(), _row(), _row(), _row(conc="2")]
    preds = [{"ttft_ms": 110.0, "tpot_ms": 10.0}, {"ttft_ms": 90.0, "tpot_ms": 10.0}, {"ttft_ms": 120.0, "tpot_ms": 10.0}, {}]
    off = [_row(gpu="h100", conc="", output_tok_s_per_gpu="1000"), _row(gpu="h200", conc="", output_tok_s_per_gpu="1000"),
           _row(gpu="a100", conc="", output_tok_s_per_gpu="1000")]
    off_preds = [{"output_tok_s_per_gpu": 1100.0}, {"output_tok_s_per_gpu": 700.0}, {}]
    pub = [_row(spec_method="mtp", output_tok_s_per_user="100"), _row(spec_method="", output_tok_s_per_user="100")]
    t = build((rows, preds), (off, off_preds), (pub, [{"output_tok_s_per_user": 150.0}, {"output_tok_s_per_user": 10.0}]))
    assert t["serving"] == {"vllm": {"5-32": {"ttft_ms": CELL, "tpot_ms": {"median": 0.0, "p90": 0.0, "signed": 0.0, "n": 3}}}}
    assert t["serving_gpus"] == ["b200"]  # the unpredicted row's GPU counts only where it was modelled
    # hopper pools H100 (+10%) and H200 (-30%); A100 was not modelled, so ampere has no cell
    assert t["offline"] == {"hopper": {"output_tok_s_per_gpu": {"median": 20.0, "p90": 28.0, "signed": -10.0, "n": 2}}}
    assert t["speculative"]["output_tok_s_per_user"] == {"median": 50.0, "p90": 50.0, "signed": 50.0, "n": 1, "low": 50.0, "high": 50.0}
    assert t["models"] == {}  # rows without a model name, and no model with 20 runs
    assert tomllib.loads(to_toml(t, ["header"])) == t  # what the file holds reads back as built


def test_build_keeps_models_with_twenty_runs():
    # 20 Llama-3.1-8B runs predicted 10% long on TTFT and exact on TPOT; 19 of another model are too few
    rows = [_row(model="meta-llama/Llama-3.1-8B")] * 20 + [_row(model="openai/gpt-oss-120b")] * 19
    preds = [{"ttft_ms": 110.0, "tpot_ms": 10.0}] * 39
    t = build((rows, preds), ([], []), ([], []))
    assert t["models"] == {"llama-3.1-8b": {"ttft_ms": {"median": 10.0, "p90": 10.0, "signed": 10.0, "n": 20},
                                            "tpot_ms": {"median": 0.0, "p90": 0.0, "signed": 0.0, "n": 20}}}
    assert tomllib.loads(to_toml(t, [])) == t


def test_shipped_table_covers_every_engine_and_band():
    t = bundled()
    assert {b: sorted(v) for b, v in t["serving"].items()} == {b: ["1-4", "33+", "5-32"] for b in ("sglang", "trtllm", "vllm")}
    assert {"hopper", "blackwell", "ampere"} <= set(t["offline"])
    # every cell rests on enough runs for its median to mean something
    assert min(c["n"] for bands in t["serving"].values() for cell in bands.values() for c in cell.values()) >= 50


def test_the_api_estimate_has_no_second_error_figure():
    # the CLI half (estimate --json without expected_error) is tests/test_intervals.py's; the API's Estimate alike
    import llm_codesign as lc
    from llm_codesign.measure import intervals as iv

    e = lc.estimate("llama-3.1-8b", lc.deployment(lc.get_model("llama-3.1-8b"), gpu="b200"), lc.Workload(concurrency=8))
    assert not hasattr(e, "expected_error") and set(e.intervals) == set(iv.METRICS)



def test_build_holds_the_disaggregated_runs_error():
    # two disaggregated runs, TTFT predicted 50% and 70% early, TPOT 10% long and exact: medians 60 / 5, signed -60 / +5
    rows = [_row(conc="8"), _row(conc="64")]
    preds = [{"ttft_ms": 50.0, "tpot_ms": 11.0}, {"ttft_ms": 30.0, "tpot_ms": 10.0}]
    t = build(([], []), ([], []), ([], []), (rows, preds))
    assert t["disaggregated"] == {"ttft_ms": {"median": 60.0, "p90": 68.0, "signed": -60.0, "n": 2},
                                  "tpot_ms": {"median": 5.0, "p90": 9.0, "signed": 5.0, "n": 2}}
    assert tomllib.loads(to_toml(t, []))["disaggregated"] == t["disaggregated"]
    assert "disaggregated" not in build(([], []), ([], []), ([], []))  # no runs, no cell
