"""--spec eagle3 without --acceptance on a model the EAGLE-3 paper measured: its Table 1's MT-bench, temperature-0 tau
(arXiv:2503.01840v3; data/speculative/published_eagle3_tau.csv) as the mean of a chain of its tree's depth, 8, said
on the answer; refused, with the table quoted, for another model or another head."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.spec.plan import eagle3_table, spec_decoding

# the flat rate r with 1 + r + ... + r^8 = tau. 8B: at r = 0.9 the sum is (1 - 0.9^9) / 0.1 = 6.125795; its slope there,
# sum i x 0.9^(i-1) for i = 1..8, is 22.516, so r = 0.9 + (6.13 - 6.125795) / 22.516 = 0.900187
R8B = 0.900187
# 70B: at r = 0.875 the sum is (1 - 0.875^9) / 0.125 = 5.594737, slope 20.018, so r = 0.875 + 0.035263 / 20.018 = 0.876762,
# 0.876754 with the sum's curvature (the next Newton step)
R70B = 0.876754


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


def test_llama_8b_defaults_to_the_papers_tau_at_its_tree_depth():
    sd = spec_decoding("eagle3", model="llama-3.1-8b")
    assert sd.k == 8 and sd.rates == pytest.approx((R8B,) * 8, abs=2e-6)
    assert float(sd.accepted()) == pytest.approx(6.13, rel=1e-9)
    assert sd.source.startswith("acceptance from EAGLE-3's Table 1 (arXiv:2503.01840v3), LLaMA-Instruct 3.1 8B, MT-bench, T=0: "
                                "tau 6.13 tokens a step with its draft tree of depth 8 (60 draft tokens verified")
    assert "a flat 0.900 a position" in sd.source and "vllm-project/vllm#26191" in sd.source
    # --draft-len 3: the chain's first 3 positions at the same rate, 1 + r + r^2 + r^3 = 1 + 0.90019 + 0.81034 + 0.72945
    three = spec_decoding("eagle3", draft_len=3, model="llama-3.1-8b")
    assert three.k == 3 and float(three.accepted()) == pytest.approx(1 + R8B + R8B ** 2 + R8B ** 3, abs=1e-5)
    assert float(three.accepted()) == pytest.approx(3.43997, abs=1e-4)
    # past the tree's depth the rate is held and said: k = 10 adds r^9 + r^10 = 0.38757 + 0.34888
    ten = spec_decoding("eagle3", draft_len=10, model="llama-3.1-8b")
    assert float(ten.accepted()) == pytest.approx(6.13 + R8B ** 9 + R8B ** 10, abs=1e-4) and "positions 9-10 held at the last" in ten.source


def test_llama_33_70b_defaults_to_its_own_row_and_31_70b_is_refused():
    sd = spec_decoding("eagle3", model="llama-3.3-70b")
    assert sd.k == 8 and float(sd.accepted()) == pytest.approx(5.63, rel=1e-9) and sd.rates[0] == pytest.approx(R70B, abs=2e-6)
    assert "LLaMA-Instruct 3.3 70B, MT-bench, T=0: tau 5.63" in sd.source and "(48 draft tokens verified" in sd.source
    with pytest.raises(InputError) as e:  # Llama 3.1 70B is not a model the paper measured
        spec_decoding("eagle3", model="llama-3.1-70b")
    msg = str(e.value)
    assert msg.startswith("acceptance: not given; an EAGLE-3 head's acceptance depends on the head and the data")
    assert "Vicuna 13B 6.65" in msg and "DeepSeek-R1-Distill-LLaMA 8B 5.58" in msg and "depth 8, not a chain" in msg


def test_the_default_is_the_papers_head_only():
    paper = spec_decoding("eagle3", model="llama-3.1-8b", draft_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert float(paper.accepted()) == pytest.approx(6.13, rel=1e-9)
    with pytest.raises(InputError, match="^acceptance: not given; .*none is published for this model and head"):
        spec_decoding("eagle3", model="llama-3.1-8b", draft_model="RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3")
    given = spec_decoding("eagle3", model="llama-3.1-8b", acceptance=3.0, draft_len=3)  # a given acceptance wins, no source
    assert given.mean_accepted == 3.0 and given.source == ""


def test_estimate_says_where_the_acceptance_is_from():
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1", "--spec", "eagle3", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["accepted_per_step"] == pytest.approx(6.13, rel=1e-9) and d["spec"]["draft_len"] == 8
    assert d["spec"]["acceptance_source"].startswith("acceptance from EAGLE-3's Table 1 (arXiv:2503.01840v3), LLaMA-Instruct 3.1 8B")
    text = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1", "--spec", "eagle3"])
    flat = " ".join(text.output.replace("│", " ").split())  # the table wraps the line in its cell
    assert text.exit_code == 0 and all(w in flat for w in ("published: acceptance from", "EAGLE-3's", "tau 6.13"))


def test_import_of_the_8b_with_eagle3_takes_the_default_at_its_draft_length():
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": 2}'"
    r = CliRunner().invoke(app, ["import", line, "--gpu", "h200", "--concurrency", "8", "--json"])
    assert r.exit_code == 0, r.output
    # k = 2: 1 + r + r^2 = 1 + 0.900187 + 0.810337 = 2.710524
    assert json.loads(r.stdout)["accepted_per_step"] == pytest.approx(1 + R8B + R8B ** 2, abs=1e-5)


def test_pareto_says_the_default_and_its_tokens_per_draft_length():
    # a search without --draft-len tries k = 1..5 at the flat 0.900187: 1.90, 1.90 + 0.81034 = 2.71, 3.44, 4.10, 4.69
    from llm_codesign.cli.commands import acceptance_note

    note = acceptance_note(spec_decoding("eagle3", model="llama-3.1-8b"), None)
    assert note.startswith("speculation: acceptance not given, so the published one: acceptance from EAGLE-3's Table 1")
    assert note.endswith("tokens a step k=1 1.90, k=2 2.71, k=3 3.44, k=4 4.10, k=5 4.69")
