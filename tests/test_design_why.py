"""design's reference, why a shape wins and its bands (newcomer review items 5-10, 13, 16-18): the reference chosen
on active parameters too, none beating it said first, the page's #1 the CLI's, the loss delta by term, the gain's own
band, sigma_delta the one band rows print, flat terms said as such, and the envelope said exactly."""
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app as cli
from llm_codesign.explore import accuracy_model
from llm_codesign.explore.design import shapes
from llm_codesign.explore.design_report import gain_band
from llm_codesign.explore.envelope import envelope_at, position, reference_model, shape_arrays


def _cli(*args):
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return r.output


D70 = ("design", "--params", "70e9", "--gpu", "h100", "--gpus", "8", "--regime", "latency", "--baseline", "llama-3.1-70b", "--top", "3")


@pytest.fixture(scope="module")
def d70():
    return json.loads(_cli(*D70, "--json"))


def test_a_moe_reference_is_nearest_by_total_and_active():
    # 120B total / 5B active: ln-distances (total + active) by hand from the pool's registry sizes:
    # minimax-m2.5 228.7B / 10.42B: |ln(228.7/120)| + |ln(10.42/5)| = 0.645 + 0.734 = 1.38; qwen3-30b-a3b 30.5 / 3.04:
    # 1.37 + 0.50 = 1.87; mixtral-8x7b 46.7 / 12.75: 0.94 + 0.94 = 1.88; mixtral-8x22b 140.6 / 38.95: 0.16 + 2.05 = 2.21
    m, name, basis = reference_model(120e9, baseline=None, moe=True, budget_tol=0.1, active=5e9)
    assert name.startswith("minimax-m2.5 scaled to ") and "by total and active parameters" in basis
    assert abs(m.total_params / 120e9 - 1) <= 0.1 and abs(m.active_params / 5e9 - 1) <= 0.1  # both budgets held
    # the experts take the total (a multiple of 8), top-k and the head layout kept
    ffn = m.groups[0][0].ffn
    assert ffn.top_k == 8 and ffn.experts % 8 == 0
    # without an active budget the nearest by total is as before: mixtral-8x22b, whose 0.28 active fraction put 32.7B
    # active beside a 5B budget
    m2, name2, _ = reference_model(120e9, baseline=None, moe=True, budget_tol=0.1)
    assert name2 == "mixtral-8x22b scaled to 117.3B" and round(m2.active_params / 1e9, 1) == 32.7


def test_none_beating_the_baseline_is_said_first():
    out = _cli("design", "--params", "120e9", "--active-params", "5e9", "--moe", "--gpu", "b200", "--gpus", "8",
               "--regime", "throughput", "--baseline", "gpt-oss-120b", "--top", "2")
    first = " ".join(out.split("\n")[:2])
    assert first.startswith("no design beats gpt-oss-120b at equal quality proxy: the best is -")
    # and why it may be out of reach: its alternating 128-token sliding-window layers (config.json sliding_window 128)
    assert "gpt-oss-120b's sliding-window attention layers are outside the shape grid" in " ".join(out.split())


def test_the_page_default_gives_the_clis_number_one(d70):
    # the page's request default is the CLI's --max-candidates (20000): 200 thinned 500 admitted 70B shapes to another #1
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import DesignRequest, create_app

    assert DesignRequest.model_fields["max_candidates"].default == 20000
    r = TestClient(create_app()).post("/api/design", json={"params": 70e9, "gpu": "h100", "num_gpus": 8, "regime": "latency",
                                                           "baseline": "llama-3.1-70b", "top": 3})
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["designs"][0]["shape"] == d70["designs"][0]["shape"] and page["screened"] == d70["screened"]
    assert d70["screened"]["priced"] == d70["screened"]["admitted"]  # nothing thinned, so nothing to say


def test_a_thinned_grid_says_so():
    out = _cli(*D70, "--max-candidates", "100")
    assert "(100 shapes, thinned to 100 of " in " ".join(out.split())


def test_the_loss_delta_by_term_sums_to_the_delta_and_names_kv_sharing(d70):
    d = d70["designs"][0]
    q, s = d["quality"], d["shape"]
    assert math.isclose(sum(t["delta"] for t in q["terms"]), q["delta"], rel_tol=1e-9, abs_tol=1e-12)
    terms = {t["term"]: t["delta"] for t in q["terms"]}
    # 4 query heads per KV head against llama-3.1-70b's 8: ln N_eff up by coeff x (log2 8 - log2 4) = 0.220 (proxy.toml
    # [kv_sharing]); times the loss's slope in ln N_eff, ~0.034 nats: ~ -0.0075 nats, the whole edge
    assert s["heads"] // s["kv_heads"] == 4
    slope = float(accuracy_model.model_terms(__import__("llm_codesign").get_model("llama-3.1-70b"), "bf16")["slope"])
    assert terms["kv_sharing"] == pytest.approx(-0.220 * slope, rel=0.05) and terms["kv_sharing"] < 0 < terms["params"]
    # KV bytes per token by hand: layers x KV heads x head size x 2 (K, V) x 2 bytes (BF16)
    v = d["versus_reference"]
    assert v["kv_bytes_per_token"] == s["layers"] * s["kv_heads"] * s["head_dim"] * 2 * 2
    assert v["reference_kv_bytes_per_token"] == 80 * 8 * 128 * 2 * 2 == 327680
    out = " ".join(_cli(*D70).split())
    assert f"design 1 vs llama-3.1-70b: loss {q['delta_pct']:+.2f}% = q heads per KV head " in out


def test_rows_print_sigma_delta_and_say_flat_terms(d70):
    q = d70["designs"][0]["quality"]
    assert q["sigma_delta"] == q["sigma_test"] and q["uncertainty"] >= q["sigma_delta"]
    out = _cli(*D70)
    assert f"{q['delta_pct']:+.2f}±{q['sigma_delta_pct']:.2f} ~" in out  # the test's band, and a flat axis marked
    flat = {x["term"] for x in q["flat"]}
    assert flat == {"aspect", "head_dim"}  # 8192 / L vs 102.4 inside 50-200; head 256 vs 128 inside 32-256


def test_depth_inside_kaplans_band_is_flat_not_measured():
    # h4096 L26 against L32 (the 8B winner's case): aspect 157.5 and 128, both inside 100 / 2 .. 100 x 2 (quality.toml
    # [shape]): the aspect term reads exactly 0, and delta_terms says the proxy cannot tell them apart
    rows = np.array([[4096, 26, 14336, 8, 0, 0, 0, 0, 128], [4096, 32, 14336, 8, 0, 0, 0, 0, 128]], dtype=np.int64)
    c = shapes(rows, 128256)
    t = accuracy_model.shape_terms(c, "bf16")
    ref = accuracy_model.shape_terms({k: v[1:] for k, v in c.items()}, "bf16")  # L32 as the reference
    w = accuracy_model.delta_terms(t, ref, active=c["active_params"], ref_active=float(c["active_params"][1]))
    assert w["nats"]["aspect"][0] == 0.0 and bool(w["flat"]["aspect"][0]) and not bool(w["flat"]["aspect"][1])
    assert w["flat_range"]["aspect"] == (50.0, 200.0) and not bool(w["flat"]["head_dim"][0])


def test_the_gains_own_band_by_hand():
    # design 120 (80%: 100-150), reference 100 (90-110): ln 1.2 -+ hypot of the log half-widths, as independent errors
    b = gain_band({"value": 120.0, "lo80": 100.0, "hi80": 150.0, "source": "a"}, {"value": 100.0, "lo80": 90.0, "hi80": 110.0, "source": "b"})
    lo = math.expm1(math.log(1.2) - math.hypot(math.log(1.2), math.log(1.1)))  # -2.31%
    hi = math.expm1(math.log(1.2) + math.hypot(math.log(1.25), math.log(100 / 90)))  # +53.6%
    assert b["gain_lo80"] == pytest.approx(100 * lo) == pytest.approx(-2.31, abs=0.01)
    assert b["gain_hi80"] == pytest.approx(100 * hi) == pytest.approx(53.6, abs=0.05)
    assert b["within_model_error"] and not b["same_slice"]
    one = gain_band({"value": 150.0, "lo80": 140.0, "hi80": 160.0, "source": "s"}, {"value": 100.0, "lo80": 95.0, "hi80": 105.0, "source": "s"})
    assert not one["within_model_error"] and one["same_slice"] and "an upper bound" in one["basis"]


def test_a_dense_search_takes_its_trunk_bounds_from_dense_models():
    # at 70B the window's dense models are qwen3-32b (5120/64 = 80), nemotron-super-49b (8192/80 = 102.4), nemotron-h-56b and
    # llama-3.1-70b (8192/80 = 102.4): aspect at most 1.5 x 102.4 = 153.6; every model's window has mixtral-8x7b's 4096/32 = 128,
    # x1.5 = 192 (the bound the 70B throughput winner h9216 L48 sat on)
    dense, every = envelope_at(70e9, dense=True), envelope_at(70e9)
    a = dense.bounds["aspect_ratio"]
    assert (a.hi_value, a.hi) == (pytest.approx(102.4), pytest.approx(153.6)) and set(a.hi_models) == {"nemotron-super-49b", "llama-3.1-70b"}
    assert every.bounds["aspect_ratio"].hi == pytest.approx(192.0) and every.bounds["aspect_ratio"].hi_models == ("mixtral-8x7b",)
    assert "experts" not in dense.bounds and dense.bounds["head_dim"] == every.bounds["head_dim"]  # attention geometry: every model
    assert dense.to_dict()["kind"] == "dense models only" and dense.to_dict()["ratio_margin"] == 1.5


def test_a_design_at_the_edge_is_flagged_with_the_published_value():
    c = shapes(np.array([[8192, 54, 40960, 8, 0, 0, 0, 0, 256], [9216, 48, 36864, 8, 0, 0, 0, 0, 128]], dtype=np.int64), 128256)
    c["experts"] = np.zeros(2, dtype=np.int64)
    env = envelope_at(70e9, dense=True)
    p = position(env, shape_arrays(c), 0)  # aspect 8192/54 = 151.7: headroom 153.6 / 151.7 = 1.0125, inside 5%
    assert p["inside"] and p["at_edge"] and p["closest"]["headroom"] == pytest.approx(153.6 / (8192 / 54))
    b = {x["bound"]: x for x in p["beyond_published"]}
    assert b["aspect_ratio.max"]["published"] == pytest.approx(102.4) and b["aspect_ratio.max"]["by"] == pytest.approx(8192 / 54 / 102.4)
    assert not position(env, shape_arrays(c), 1)["inside"]  # 9216/48 = 192 > 153.6


def test_the_caption_says_the_envelope_exactly(d70):
    out = " ".join(_cli(*D70).split())
    assert ("Every design lies inside the envelope: the published dense models near 70B, ratios widened x1.5 and counts +-25% "
            "(aspect ratio at most 153.6: 1.5 x the largest published, 102.4, nemotron-super-49b, llama-3.1-70b)") in out
    rows = [j for j, d in enumerate(d70["designs"], 1) if d["envelope"].get("at_edge")]
    if rows:
        assert "at the edge, aspect_ratio.max within 5% of its limit 153.6" in out
    assert "above every published model on aspect_ratio" in out and "inside only by the margin" in out
