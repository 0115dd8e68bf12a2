"""--spec eagle3 without --acceptance: Llama 4 Maverick's measured chain scan (RedHatAI's model card, vLLM, 1-7 draft
tokens on three datasets; data/speculative/eagle3_chain_maverick.csv) is its default, said on the answer; every other
model and head refused, the EAGLE-3 paper's Table 1 taus (arXiv:2503.01840v3, published_eagle3_tau.csv, a draft tree's)
quoted as an upper bound, never priced as a chain."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.spec.plan import eagle3_chain, eagle3_table, spec_decoding

# Maverick's scan, the mean of HumanEval, GSM8K and CNN/DM at each draft length (the model card's rows):
# k=1 (1.83 + 1.86 + 1.69) / 3 = 1.79333, k=2 (2.45 + 2.56 + 2.12) / 3 = 2.37667, k=3 (2.94 + 3.08 + 2.37) / 3 = 2.79667,
# k=4 3.10333, k=5 3.26667, k=6 3.37, k=7 3.42333
MAV = (1.79333, 2.37667, 2.79667, 3.10333, 3.26667, 3.37, 3.42333)


def cell(target, dataset="MT-bench", temperature="0"):
    return next(r for r in eagle3_table() if (r["target"], r["dataset"], r["temperature"]) == (target, dataset, temperature))


def test_the_tables_eagle3_rows_are_bundled_cell_by_cell():
    rows = eagle3_table()
    assert len(rows) == 4 * 2 * 6  # 4 targets x 2 temperatures x (5 datasets + their mean)
    # Table 1, row "L31 8B EAGLE-3", columns MT-bench and Mean, T=0: 4.40x 6.13, 4.44x 6.23; row "L33 70B EAGLE-3": 5.63
    assert (cell("LLaMA-Instruct 3.1 8B")["tau"], cell("LLaMA-Instruct 3.1 8B")["speedup"]) == ("6.13", "4.40")
    assert cell("LLaMA-Instruct 3.1 8B", "Mean")["tau"] == "6.23" and cell("LLaMA-Instruct 3.3 70B")["tau"] == "5.63"
    assert cell("LLaMA-Instruct 3.1 8B", "MT-bench", "1")["tau"] == "4.24"
    # each Mean column is the mean of its five datasets to the table's rounding (0.005 either side for six 2-decimal cells)
    for r in (x for x in rows if x["dataset"] == "Mean"):
        five = [float(x["tau"]) for x in rows if (x["row"], x["temperature"]) == (r["row"], r["temperature"]) and x["dataset"] != "Mean"]
        assert sum(five) / 5 == pytest.approx(float(r["tau"]), abs=0.006), r
    # the paper's draft tree: depth 8; 60 draft tokens for the 8B targets, 50 for the 13B, 48 for the 70B (its Appendix A)
    assert {(r["target"], r["tree_depth"], r["tree_tokens"]) for r in rows} == {
        ("Vicuna 13B", "8", "50"), ("LLaMA-Instruct 3.1 8B", "8", "60"), ("LLaMA-Instruct 3.3 70B", "8", "48"),
        ("DeepSeek-R1-Distill-LLaMA 8B", "8", "60")}


def test_maverick_takes_its_chain_scan_at_three_draft_tokens():
    head, sets, lengths = eagle3_chain()["llama-4-maverick"]
    assert head == "nvidia/Llama-4-Maverick-17B-128E-Eagle3" and sets == ("HumanEval", "GSM8K", "CNN/DM")
    assert lengths == pytest.approx(MAV, abs=1e-5)
    sd = spec_decoding("eagle3", model="llama-4-maverick")
    # no --draft-len: 3, NVIDIA's 1,000 tok/s/user record's max_draft_len; the rates reproduce the scan's mean at k=3
    assert sd.k == 3 and float(sd.accepted()) == pytest.approx(MAV[2], abs=1e-5)
    # position 1 0.79333; position 2 (2.37667 - 1.79333) / 0.79333 = 0.73529
    assert sd.rates[0] == pytest.approx(0.79333, abs=1e-5) and sd.rates[1] == pytest.approx(0.58333 / 0.79333, abs=1e-5)
    assert sd.source.startswith("acceptance from RedHatAI's EAGLE-3 chain scan of Llama 4 Maverick")
    assert "mean accepted 1.79, 2.38, 2.80, 3.10, 3.27, 3.37, 3.42 at k=1-7, the mean of HumanEval, GSM8K, CNN/DM" in sd.source
    seven = spec_decoding("eagle3", draft_len=7, model="llama-4-maverick")
    assert float(seven.accepted()) == pytest.approx(MAV[6], abs=1e-5)


def test_the_papers_tree_taus_are_quoted_never_priced_as_a_chain():
    # the 8B head's tau 6.13 read as a flat chain of 8 would promise 5.7 tokens at k=7; vLLM's chain measured 3.53
    for model in ("llama-3.1-8b", "llama-3.3-70b", "llama-3.1-70b"):
        with pytest.raises(InputError) as e:
            spec_decoding("eagle3", model=model)
        msg = str(e.value)
        assert msg.startswith("acceptance: not given; an EAGLE-3 head's acceptance depends on the head and the data")
        assert "LLaMA-Instruct 3.1 8B 6.13" in msg and "Vicuna 13B 6.65" in msg and "an upper bound for the chain" in msg
        assert "vllm-project/vllm#26191" in msg


def test_the_default_is_the_scans_head_only():
    scan = spec_decoding("eagle3", model="llama-4-maverick", draft_model="nvidia/Llama-4-Maverick-17B-128E-Eagle3")
    assert float(scan.accepted()) == pytest.approx(MAV[2], abs=1e-5)
    with pytest.raises(InputError, match="^acceptance: not given; .*no chain of draft tokens is measured for this model and head"):
        spec_decoding("eagle3", model="llama-4-maverick", draft_model="someone/another-maverick-eagle3-head")
    given = spec_decoding("eagle3", model="llama-3.1-8b", acceptance=3.0, draft_len=3)  # a given acceptance wins, no source
    assert given.mean_accepted == 3.0 and given.source == ""


def test_estimate_says_where_the_acceptance_is_from():
    args = ["estimate", "llama-4-maverick", "--gpu", "b200", "--tp", "8", "--concurrency", "1", "--spec", "eagle3"]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["accepted_per_step"] == pytest.approx(MAV[2], abs=1e-5) and d["spec"]["draft_len"] == 3
    assert d["spec"]["acceptance_source"].startswith("acceptance from RedHatAI's EAGLE-3 chain scan of Llama 4 Maverick")
    text = CliRunner().invoke(app, args)
    flat = " ".join(text.output.replace("│", " ").split())  # the table wraps the line in its cell
    assert text.exit_code == 0 and all(w in flat for w in ("published: acceptance from", "chain scan", "Maverick"))


def test_pareto_says_the_default_and_its_tokens_per_draft_length():
    # a search without --draft-len tries k = 1..5: the scan's own means, 1.79, 2.38, 2.80, 3.10, 3.27
    from llm_codesign.cli.commands import acceptance_note

    note = acceptance_note(spec_decoding("eagle3", model="llama-4-maverick"), None)
    assert note.startswith("speculation: acceptance not given, so the published one: acceptance from RedHatAI's EAGLE-3")
    assert note.endswith("tokens a step k=1 1.79, k=2 2.38, k=3 2.80, k=4 3.10, k=5 3.27")
