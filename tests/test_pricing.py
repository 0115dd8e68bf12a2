"""Dollars per million tokens from a GPU-hour price (explore/pricing.py, data/prices.toml)."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.explore.pricing import cost_of, gpu_hour_price, load_prices, token_costs
from llm_codesign.spec.hardware import get_gpu


def test_token_costs_by_hand():
    # $3.60 per GPU-hour is $0.001 per GPU-second; 1000 output tok/s per GPU -> $1 per million output tokens;
    # ISL 3000 / OSL 1000 puts 4000 tokens through for every 1000 written -> $0.25 per million tokens in+out
    c = token_costs(3.6, 1000.0, 3000, 1000)
    assert c["usd_per_m_output_tokens"] == pytest.approx(1.0)
    assert c["usd_per_m_tokens"] == pytest.approx(0.25)


# every bundled price: (dollars per GPU-hour, the words its source must hold: who, when, how the figure was taken)
BUNDLED = {"a100": (1.30, ("Mercatus", "May 2026", "$1.10-1.50", "midpoint")), "h100": (3.00, ("Mercatus", "May 2026", "$2.50-3.50")),
           "h200": (4.00, ("Mercatus", "May 2026", "$3.50-4.50")), "b200": (5.25, ("Lyceum", "11 Mar 2026", "$4.50-6.00", "midpoint")),
           "gb200": (4.54, ("Spheron", "17 Mar 2026", "$9.08 per GB200 Superchip of 2 B200 GPUs")),
           "l40s": (1.40, ("RunPod", "10 Mar 2026", "$1.40", "one provider's")),
           "rtx-pro-6000": (1.57, ("RunPod", "10 Mar 2026", "$1.57", "one provider's")),
           "mi300x": (1.99, ("Cliff Center", "18 May 2026", "median $1.99")),
           "mi325x": (1.95, ("Cliff Center", "18 May 2026", "TensorWave", "one provider's"))}


@pytest.mark.parametrize("gpu", sorted(BUNDLED))
def test_each_bundled_price_is_dated_and_cited(gpu):
    usd, words = BUNDLED[gpu]
    found, source = gpu_hour_price(get_gpu(gpu), "bundled")
    assert found == usd and all(w in source for w in words), source
    assert load_prices()["usd_per_gpu_hour"][gpu] == usd


def test_bundled_prices_list_only_cited_gpus_and_refuse_the_rest_in_one_line():
    p = load_prices()
    assert sorted(p["usd_per_gpu_hour"]) == sorted(p["sources"]) == sorted(BUNDLED)
    assert gpu_hour_price(get_gpu("h100"), "2.5") == (2.5, "--gpu-hour-price")
    assert gpu_hour_price(get_gpu("h100"), None) is None
    with pytest.raises(InputError) as e:
        gpu_hour_price(get_gpu("mi355x"), "bundled")
    assert str(e.value) == ("gpu_hour_price: 'mi355x' is not valid; a GPU the bundled prices cite (a100, b200, gb200, h100, h200, l40s, "
                            "mi300x, mi325x, rtx-pro-6000), "
                            "a number of dollars per GPU-hour, or a price file")
    for bad in ("-1", "0", "nan", "inf"):
        with pytest.raises(InputError, match="positive number"):
            gpu_hour_price(get_gpu("h100"), bad)


def test_own_price_file(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('source = "our contract"\n[usd_per_gpu_hour]\nB200 = 5.5\n')
    c = cost_of(get_gpu("b200"), str(f), 2000.0, 1024, 1024)
    assert c["usd_per_gpu_hour"] == 5.5 and c["price_source"] == "our contract"
    assert c["usd_per_m_output_tokens"] == pytest.approx(5.5 / 3600 / 2000 * 1e6)
    f.write_text('[usd_per_gpu_hour]\nb200 = 5.5\n[sources]\nb200 = "rack quote, June 2026"\n')
    assert gpu_hour_price(get_gpu("b200"), str(f)) == (5.5, "rack quote, June 2026")
    with pytest.raises(InputError, match=f"a GPU the price file {f} lists \\(b200\\), a number of dollars per GPU-hour"):
        gpu_hour_price(get_gpu("h100"), str(f))
    f.write_text("[usd_per_gpu_hour]\nb200 = -1\n")
    with pytest.raises(InputError, match="positive dollars"):
        cost_of(get_gpu("b200"), str(f), 2000.0, 1024, 1024)


def test_estimate_and_pareto_carry_the_cost():
    runner = CliRunner()
    r = json.loads(runner.invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "16", "--gpu-hour-price", "3",
                                       "--json"]).output)
    assert r["cost"]["usd_per_m_output_tokens"] == pytest.approx(3 / 3600 / r["output_tok_s_per_gpu"] * 1e6)
    f = json.loads(runner.invoke(app, ["pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--gpu-hour-price", "bundled",
                                       "--json"]).output)
    costs = [p["cost"]["usd_per_m_output_tokens"] for p in f["frontier"]]
    thr = [p["output_tok_s_per_gpu"] for p in f["frontier"]]
    assert len(costs) > 3 and all(c == pytest.approx(3.0 / 3600 / t * 1e6) for c, t in zip(costs, thr, strict=True))
    bad = runner.invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "b300", "--gpu-hour-price", "bundled"])
    assert bad.exit_code == 2 and bad.output.startswith("error: gpu_hour_price: 'b300' is not valid; a GPU the bundled prices cite (a100,")


def test_a_price_past_the_dearest_a_gpu_hour_may_have_is_one_line(tmp_path):
    # $1e308 per GPU-hour: sweep wrote usd_per_m_output_tokens = inf to its Parquet, compare refused its own result
    # (result.rows.best.cost.usd_per_gpu_hour, naming no input)
    h100 = get_gpu("h100")
    with pytest.raises(InputError) as e:
        gpu_hour_price(h100, "1e308")
    assert str(e.value) == ("gpu_hour_price: '1e308' is not valid; a positive number of dollars per GPU-hour up to 1,000, `bundled`, "
                            "or a price file")
    assert gpu_hour_price(h100, "1000") == (1000.0, "--gpu-hour-price")
    p = tmp_path / "prices.toml"
    p.write_text("[usd_per_gpu_hour]\nh100 = 1e308\n")
    with pytest.raises(InputError) as e:
        gpu_hour_price(h100, str(p))
    assert str(e.value) == f"gpu_hour_price: '{p}' is not valid; a price file with [usd_per_gpu_hour] gpu = positive dollars, at most 1,000"
