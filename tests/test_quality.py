"""explore/quality.py: the scaling-law loss a design is held to, and its override file."""
import pytest

from llm_codesign.explore.quality import constants, loss, model_loss
from llm_codesign.spec.registry import get_model


def test_chinchilla_golden():
    # Hoffmann et al. 2022 approach 3: L = 1.69 + 406.4/N^0.34 + 410.7/D^0.28; N = 70e9, D = 1.4e12
    c = constants()
    c["scaling"]["tokens"] = 1.4e12
    expect = 1.69 + 406.4 / 70e9 ** 0.34 + 410.7 / 1.4e12 ** 0.28
    assert float(loss(70e9, 70e9, 8192, 80, "bf16", c=c)) == pytest.approx(expect, rel=1e-9)


def test_quality_orders_sizes_and_counts_moe_between_active_and_total():
    assert model_loss(get_model("llama-3.1-405b")) < model_loss(get_model("llama-3.1-70b")) < model_loss(get_model("llama-3.1-8b"))
    moe = get_model("mixtral-8x7b")
    q = model_loss(moe, "bf16")
    assert float(loss(moe.total_params, moe.total_params, moe.hidden, moe.num_layers)) < q < float(loss(moe.active_params, moe.active_params, moe.hidden, moe.num_layers))


def test_quality_override(tmp_path):
    p = tmp_path / "q.toml"
    p.write_text("[precision]\nnvfp4 = 0.05\n")
    assert constants(str(p))["precision"]["nvfp4"] == 0.05
    from llm_codesign.errors import InputError

    p.write_text("[precision]\nfp3 = 0.1\n")
    with pytest.raises(InputError, match="fp3"):
        constants(str(p))


def test_bundled_constants_are_parsed_once_and_each_caller_gets_its_own_copy():
    # a search asks for every precision's accuracy: the bundled TOML is parsed once, and a caller that
    # changes what it got (an override laid over it) changes no one else's
    from llm_codesign.explore import accuracy_model, quality

    for read in (quality.constants, accuracy_model.proxy_constants):
        first = read()
        sec = next(k for k, v in first.items() if isinstance(v, dict) and v)
        key = next(iter(first[sec]))
        was = first[sec][key]
        first[sec][key] = "changed"
        assert read()[sec][key] == was
