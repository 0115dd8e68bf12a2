"""--spec mtp without --acceptance: the published MTP acceptance as the default, with its source (newc5 #14, newc6 #2,
#18, #23): DeepSeek-R1 per position from TensorRT-LLM blog 1's depth scan (published_mtp_depth.csv), V3 its report's
position 1 and the scan's later ones; one rule in estimate, pareto, import and the web API; no default for a draft
model, nor for EAGLE-3 on a model its paper did not measure (tests/test_spec_eagle3.py), said per method."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.spec.plan import deployment, mtp_depth_rates, mtp_depth_scan, spec_decoding

# the depth scan's mean accepted lengths at k = 1..5 (published_mtp_depth.csv, blog 1's "Autoregressive MTP Layers")
SCAN = (1.92, 2.58, 2.82, 2.99, 3.01)
# position i accepted with p_i = L_i - L_(i-1): 0.92, 0.66, 0.24, 0.17, 0.02; its rate given position i-1 is p_i / p_(i-1)
R1 = (0.92, 0.66 / 0.92, 0.24 / 0.66, 0.17 / 0.24, 0.02 / 0.17)  # 0.920, 0.717, 0.364, 0.708, 0.118


def test_the_scan_is_read_from_the_bundled_csv_and_its_rates_rebuild_it():
    assert mtp_depth_scan() == SCAN
    assert mtp_depth_rates(SCAN) == pytest.approx(R1, rel=1e-12)


def test_deepseek_r1_defaults_to_the_depth_scan():
    # k = 5 at one request: 1 + 0.92 + 0.66 + 0.24 + 0.17 + 0.02 = 3.01 tokens a step, as measured (the old default held
    # the paper's 0.875 at every position: 1 + .875 + ... + .875^5 = 4.41)
    sd = spec_decoding("mtp", draft_len=5, model="deepseek-r1")
    assert sd.k == 5 and sd.rates == pytest.approx(R1, rel=1e-12)
    assert float(sd.accepted()) == pytest.approx(3.01, rel=1e-12)
    assert "TensorRT-LLM blog 1's MTP depth scan" in sd.source and "1.92, 2.58, 2.82, 2.99, 3.01 at k=1-5" in sd.source
    # no --draft-len: one draft token (DeepSeek ships one MTP module), every scanned position kept for a search's k
    d = spec_decoding("mtp", model="deepseek-r1-nvfp4")
    assert d.k == 1 and float(d.accepted()) == pytest.approx(1.92)
    assert [float(d.at(k).accepted()) for k in range(1, 6)] == pytest.approx(SCAN, rel=1e-12)
    assert d.at(3).source == d.source  # a search's other draft lengths keep the source
    # past the scan the last rate is held: k = 7 adds 0.02 x 0.1176 + 0.02 x 0.1176^2 = 0.00235 + 0.00028 -> 3.01263
    s7 = spec_decoding("mtp", draft_len=7, model="deepseek-r1")
    assert float(s7.accepted()) == pytest.approx(3.01 + 0.02 * R1[4] + 0.02 * R1[4] ** 2, rel=1e-12)
    assert float(s7.accepted()) == pytest.approx(3.0126, abs=1e-4) and "positions 6-7 held at the last, 0.118" in s7.source


def test_deepseek_v3_keeps_its_reports_first_position():
    # V3's report §5.4.3: 85-90%, midpoint 0.875 at position 1; positions 2-5 the scan's conditional rates:
    # k = 1: 1.875; k = 5: 1 + 0.875 x (0.92 + 0.66 + 0.24 + 0.17 + 0.02) / 0.92 = 1 + 0.875 x 2.01 / 0.92 = 2.911685
    sd = spec_decoding("mtp", model="deepseek-v3")
    assert sd.k == 1 and sd.rates[0] == 0.875 and float(sd.accepted(1)) == pytest.approx(1.875)
    assert float(spec_decoding("mtp", draft_len=5, model="deepseek-v3").accepted()) == pytest.approx(1 + 0.875 * 2.01 / 0.92, rel=1e-12)
    assert "arXiv:2412.19437" in sd.source and "85-90%" in sd.source and "V3's own unpublished" in sd.source


def test_given_acceptance_wins_and_has_no_source():
    sd = spec_decoding("mtp", acceptance=1.7, draft_len=1, model="deepseek-r1")
    assert sd.mean_accepted == 1.7 and sd.rates == () and sd.source == ""


@pytest.mark.parametrize("method, model, says", [
    ("mtp", "qwen3.5-397b", ("none is published for this model", "0.85-0.90", "arXiv:2412.19437v2", "--acceptance-rates 0.85")),
    ("eagle3", "llama-3.1-70b", ("EAGLE-3's Table 1 (arXiv:2503.01840v3)", "LLaMA-Instruct 3.1 8B 6.13",
                                  "LLaMA-Instruct 3.3 70B 5.63", "an upper bound for the chain an engine drafts")),
    ("eagle3", "deepseek-r1", ("EAGLE-3", "arXiv:2503.01840")),  # MTP's published default is MTP's only
    ("draft", "llama-3.1-70b", ("a separate draft model has no default", "--acceptance")),
])
def test_no_default_is_refused_per_method(method, model, says):
    with pytest.raises(InputError) as e:
        spec_decoding(method, model=model)
    msg = str(e.value)
    assert msg.startswith("acceptance: not given; ") and "None" not in msg
    assert all(s in msg for s in says), msg
    assert ("MTP module" in msg) == (method == "mtp")  # EAGLE-3's and a draft's refusal no longer recommend MTP's rates


def test_estimate_at_one_request_accepts_the_measured_three_tokens():
    # the finding's command: blog 1's plan, k = 5 at c = 1 -> 3.01 tokens a step (was 4.41)
    r = CliRunner().invoke(app, ["estimate", "deepseek-r1-nvfp4", "--gpu", "b200", "--tp", "8", "--ep", "4", "--moe-tp", "2",
                                 "--kv-dtype", "bf16", "--isl", "1024", "--osl", "2048", "--concurrency", "1", "--spec", "mtp",
                                 "--draft-len", "5", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["accepted_per_step"] == pytest.approx(3.01, rel=1e-9)
    assert d["spec"]["draft_len"] == 5 and "MTP depth scan of DeepSeek-R1" in d["spec"]["acceptance_source"]


def test_import_defaults_mtp_as_estimate_does_and_says_so():
    line = ("vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --enable-expert-parallel "
            "--speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":2}'")
    r = CliRunner().invoke(app, ["import", line, "--gpu", "h200", "--concurrency", "64"])
    assert r.exit_code == 0, r.output
    assert ("speculation priced: mtp k=2, 2.58 tokens/step (acceptance not given, so the published one: per position 0.920"
            in " ".join(r.output.split()))
    dep = deployment("deepseek-r1", gpu="h200", num_gpus=8, spec="mtp", draft_len=2)
    j = json.loads(CliRunner().invoke(app, ["import", line, "--gpu", "h200", "--concurrency", "64", "--json"]).stdout)
    # k = 2: 1 + 0.92 + 0.66 = 2.58, the same as estimate's default at k = 2
    assert j["accepted_per_step"] == pytest.approx(2.58) == pytest.approx(float(dep.spec.accepted()))


def test_import_refuses_eagle3_without_acceptance_with_its_hint():
    # Llama-3.1-70B: the EAGLE-3 paper measured 3.3 70B and 3.1 8B, not 3.1 70B (tests/test_spec_eagle3.py: 8B's default)
    line = "vllm serve meta-llama/Llama-3.1-70B -tp 8 --speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": 2}'"
    r = CliRunner().invoke(app, ["import", line, "--gpu", "h200"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "acceptance: not given; the configuration drafts tokens" in r.output and "arXiv:2503.01840" in r.output


def test_validate_prices_the_depth_rows_at_their_measured_acceptance():
    # the default now equals these rows' acceptance, but validate never reads it: each row's own spec_acceptance
    import csv
    from importlib import resources

    from llm_codesign.measure.validate import _spec

    with resources.files("llm_codesign").joinpath("data", "measurements", "published_mtp_depth.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["spec_draft_len"]]
    for r in rows:
        sd = _spec(r)
        assert sd.source == "" and sd.mean_accepted == float(r["spec_acceptance"]) and sd.k == int(r["spec_draft_len"])


@pytest.mark.parametrize("draft_len", [None, 2, 7])
def test_an_export_of_the_default_states_one_rate_per_draft_token_and_reads_back(draft_len):
    # the default keeps all 5 scanned rates at k = 1 (for a search's other k); an export states k rates, as import requires
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.spec.registry import get_model

    dep = deployment("deepseek-r1", gpu="b200", num_gpus=8, tp=8, engine="trtllm", spec="mtp", draft_len=draft_len)
    back = read_export(export_config(get_model("deepseek-r1"), dep, engine="trtllm", concurrency=4)).deployment.spec
    k = draft_len or 1
    assert back.k == k and len(back.rates) == k
    # k = 1: 1.92; k = 2: 1 + 0.92 + 0.66 = 2.58; k = 7: 3.01 + 0.02 x 0.1176 + 0.02 x 0.1176^2 = 3.01263
    assert float(back.accepted()) == pytest.approx({1: 1.92, 2: 2.58, 7: 3.01 + 0.02 * R1[4] * (1 + R1[4])}[k], rel=1e-9)


def test_pareto_says_the_default_and_its_tokens_per_draft_length():
    # a search without --draft-len tries k = 1..5: each reads the scan, 1.92 ... 3.01 (was 1.88 ... 4.41, k=5 everywhere)
    from llm_codesign.cli.commands import acceptance_note

    note = acceptance_note(spec_decoding("mtp", model="deepseek-r1"), None)
    assert note.startswith("speculation: acceptance not given, so the published one: per position 0.920, 0.717, 0.364")
    assert note.endswith("tokens a step k=1 1.92, k=2 2.58, k=3 2.82, k=4 2.99, k=5 3.01")
    # newc7 #8: the conditional rates are not a smooth curve (0.364 then 0.708, each depth its own run); the shares of
    # steps accepting at least i tokens are: the increments of the means, 0.92, 2.58 - 1.92 = 0.66, 0.24, 0.17, 0.02
    assert "each depth its own run, so not a smooth curve; steps accepting at least 1-5 draft tokens 0.92, 0.66, 0.24, 0.17, 0.02" in note
