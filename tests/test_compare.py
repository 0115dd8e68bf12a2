"""explore.compare: `compare`'s one code path, which `llm-codesign compare` prints and lc.compare returns (the two agree
number for number), its rows flat with their intervals and cost, its checks one line naming the keyword."""
import json

import pytest
from conftest import cli_ok, plain

import llm_codesign as lc

_cli, _plain = cli_ok, plain


@pytest.fixture(scope="module")
def comparison():
    return lc.compare("llama-3.1-8b", ["h100", "b200"], num_gpus=2, workload=lc.Workload(isl=512, osl=128), min_tps_user=50,
                      gpu_hour_price="bundled")


def test_compare_is_what_the_cli_prints(comparison):
    want = json.loads(_cli("compare", "llama-3.1-8b", "--gpu", "h100,b200", "--gpus", 2, "--isl", 512, "--osl", 128, "--min-tps-user", 50,
                           "--gpu-hour-price", "bundled", "--json"))
    assert _plain(comparison.to_dict()) == want
    # the checkpoint's BF16 and what each GPU runs natively: FP8 on H100; FP8 and NVFP4 on B200
    assert [(r["gpu"], r["weight_dtype"]) for r in comparison.rows] == [("h100", "bf16"), ("h100", "fp8"), ("b200", "bf16"), ("b200", "fp8"),
                                                                        ("b200", "nvfp4")]


def test_compare_records_are_flat_rows_with_intervals_and_cost(comparison):
    recs = comparison.to_records()
    assert len(recs) == len(comparison.rows) == len(comparison.to_pandas()) == 5
    for rec, row in zip(recs, comparison.rows, strict=True):
        b = row["best"]
        assert all(not isinstance(v, dict) for v in rec.values())  # flat, as Frontier.to_records (acceptance_rates a list)
        assert rec["output_tok_s_per_gpu"] == b["output_tok_s_per_gpu"] and rec["tp"] == b["deployment"]["tp"]
        assert rec["tok_s_per_user"] >= 50  # the SLO
        iv = b["intervals"]["output_tok_s_per_gpu"]
        assert (rec["output_tok_s_per_gpu_lo80"], rec["output_tok_s_per_gpu_hi95"]) == (iv["lo80"], iv["hi95"])
        assert rec["accuracy_kind"] == row["accuracy_compared"]["kind"] == "drop"
        # dollars per million output tokens, by hand: data/prices.toml's GPU-hour over an hour's output tokens per GPU
        usd = {"h100": 3.00, "b200": 5.25}[rec["gpu"]]
        assert rec["usd_per_m_output_tokens"] == pytest.approx(usd / (3600 * rec["output_tok_s_per_gpu"]) * 1e6, rel=1e-12)
    assert recs[0]["accuracy_source"] == "reference" and recs[0]["accuracy_value"] == 0.0  # BF16 against itself


@pytest.mark.parametrize("kw,line", [
    ({"num_gpus": 0}, "num_gpus: 0 is not valid; a positive integer up to 65,536"),
    ({"model": []}, "model: [] is not valid; a model, or a non-empty list of them"),
    ({"gpu": "h900"}, "gpu: 'h900' is not valid"),
    ({"weight_dtype": "fp7"}, "weight_dtype: 'fp7' is not valid"),
    ({"min_tps_user": -1}, "min_tps_user: -1 is not valid; a positive finite number"),
    ({"workload": lc.Workload(isl=512, osl=128, concurrency=8)}, "workload.concurrency: 8 is not valid"),
    ({"workload": {"isl": 512}}, "workload: {'isl': 512} is not valid; a Workload"),
    # a list whose repr passes 80 characters named by its type and length (errors.quoted, fixN5c)
    ({"model": ["llama-3.1-8b"] * 9, "gpu": ["h100", "b200"]},
     "model: a list of 9 str is not valid; at most 48 model x GPU x precision combinations (54 asked)"),
    ({"engine": "vllm", "backend": "sglang"}, "backend: 'sglang' is not valid"),
])
def test_compare_refuses_a_bad_argument_naming_its_keyword(kw, line):
    args = {"model": "llama-3.1-8b", "gpu": "h100", "num_gpus": 1} | kw
    with pytest.raises(lc.InputError) as e:
        lc.compare(args.pop("model"), **args)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)




def test_a_models_rows_are_compared_on_one_measure():
    # by hand: a score every row was published with wins; else each precision's drop; else n/a (two models, three rows)
    from llm_codesign.explore.compare import accuracy_compared

    def acc(scores, drop=None):
        return {"scores": scores, "relative_drop_pct": drop, "precision": "fp8", "reference_precision": "bf16", "drop_uncertainty_pct": 0.1,
                "drop_source": "published"}

    mmlu, gsm = {"benchmark": "mmlu", "setting": "5-shot", "score": 80.0}, {"benchmark": "gsm8k", "setting": "0-shot", "score": 90.0}
    rows = [{"model": "a", "accuracy": acc([gsm, mmlu])}, {"model": "a", "accuracy": acc([{**mmlu, "score": 79.5}])},
            {"model": "b", "accuracy": acc([gsm], drop=0.4)}, {"model": "b", "accuracy": acc([], drop=1.5)}]
    accuracy_compared(rows)
    assert [r["accuracy_compared"]["kind"] for r in rows] == ["score", "score", "drop", "drop"]
    assert [r["accuracy_compared"]["value"] for r in rows] == [80.0, 79.5, 0.4, 1.5]  # MMLU, the one both of a's rows have


def test_several_models_say_accuracy_is_within_each_model():
    def out(models):
        return " ".join(_cli("compare", models, "--gpu", "h100", "--min-tps-user", "50", "--weight-dtype", "fp8").split())

    # two models: each table's accuracy is on its own measure, and the header says so (no cross-model score invented)
    assert "accuracy is compared within each model only, not across the 2 models" in out("llama-3.1-8b,qwen3-8b")
    assert "accuracy is compared within each model only" not in out("llama-3.1-8b")  # one model: nothing to say


def test_a_requantised_precision_reads_unmeasured_with_its_reason():
    # newc7 #3: DeepSeek-R1 at per-tensor fp8 (its checkpoint block FP8) has no score and no pair: the cell says
    # "unmeasured" and the note under the table why, not the "0.00%" same_as would have lent it
    from llm_codesign.cli.compare import _accuracy_cell, _accuracy_notes
    from llm_codesign.explore.accuracy_model import accuracy_of
    from llm_codesign.explore.compare import accuracy_compared
    from llm_codesign.spec.registry import get_model

    m = get_model("deepseek-r1")
    rows = [{"model": "deepseek-r1", "accuracy": accuracy_of(m, f)} for f in ("fp8_block", "fp8")]
    accuracy_compared(rows)
    assert [_accuracy_cell(r["accuracy_compared"]) for r in rows] == ["ref", "unmeasured"]
    note = _accuracy_notes(rows)["deepseek-r1"]
    assert "fp8: unmeasured, a per-tensor re-quantisation of the fp8_block checkpoint" in note and "not 0" in note
