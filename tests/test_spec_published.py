"""--spec mtp without --acceptance: DeepSeek-V3's published MTP acceptance as the default, with its source (newc5 #14)."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.spec.plan import deployment, spec_decoding


def test_deepseek_mtp_defaults_to_the_published_rate():
    # DeepSeek-V3 report §5.4.3: the 2nd token accepted 85-90%; the default is the midpoint (0.85 + 0.90) / 2 = 0.875,
    # one MTP module so one draft token: 1 + 0.875 = 1.875 tokens a step
    sd = spec_decoding("mtp", model="deepseek-v3")
    assert sd.k == 1 and sd.rates == (0.875,)
    assert float(sd.accepted(1)) == pytest.approx(1.875)
    # a longer draft holds the one published rate past position 1: 1 + .875 + .875^2 + .875^3 = 3.310546875
    assert float(spec_decoding("mtp", draft_len=3, model="deepseek-v3").accepted(3)) == pytest.approx(3.310546875)
    assert "arXiv:2412.19437" in sd.source and "85-90%" in sd.source
    # R1 ships V3's module: the same value, and the source says it is carried over
    r1 = deployment("deepseek-r1", gpu="b200", num_gpus=8, spec="mtp").spec
    assert r1.rates == (0.875,) and "deepseek-r1 ships V3's MTP module" in r1.source
    assert r1.at(2).source == r1.source  # a search's other draft lengths keep the source


def test_given_acceptance_wins_and_has_no_source():
    sd = spec_decoding("mtp", acceptance=1.7, draft_len=1, model="deepseek-r1")
    assert sd.mean_accepted == 1.7 and sd.rates == () and sd.source == ""


def test_unpublished_model_error_suggests_the_cited_range():
    with pytest.raises(InputError) as e:
        spec_decoding("mtp", model="qwen3.5-397b")
    msg = str(e.value)
    assert msg.startswith("acceptance: None is not valid; a mean accepted length (--acceptance)")
    assert "0.85-0.90" in msg and "arXiv:2412.19437v2" in msg and "--acceptance-rates 0.85" in msg
    with pytest.raises(InputError, match="none is published"):  # eagle3 has no published default bundled
        spec_decoding("eagle3", model="deepseek-r1")


def test_estimate_says_the_published_acceptance():
    r = CliRunner().invoke(app, ["estimate", "deepseek-r1", "--gpu", "b200", "--tp", "8", "--isl", "2048", "--osl", "512",
                                 "--concurrency", "16", "--spec", "mtp", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)["spec"]
    assert s["draft_len"] == 1 and s["acceptance_source"].startswith("0.875 a position, the midpoint of DeepSeek-V3")
