"""design at small budgets (branch designG, modelling-notes #designG-small-budgets): why --quality-sigmas from 0 to 1 moves
nothing at 8B (every shape with a test band differs from llama-3.1-8b in KV heads, whose term needs z >= 1.12 there; the
rest have no band, so k cannot move them), the window of k design now says, and the resolved line the CLI, the Python API
and the page share: which rows the proxy resolves, the best of them under --rank-all, and what an unresolved gain means."""
import json
import math
import re

import numpy as np
import pytest
from typer.testing import CliRunner

import llm_codesign as lc
from llm_codesign.cli import app as cli
from llm_codesign.explore.design import DEFAULT_VOCAB, _setup, judge, quality_window, shapes
from llm_codesign.render.design_lines import _rows, quality_rule_line, resolved_line, shape_label

# the accuracy model's constants the hand arithmetic below uses: data/quality.toml [scaling] A = 406.4, alpha = 0.34,
# [moe] total_weight 0.5 (N_eff = N_active^0.5 x N_total^0.5 x m); data/accuracy/proxy.toml [kv_sharing] coeff 0.220,
# sigma 0.11 (ln m = -0.22 log2 r, its band 0.11 log2 r, r read at the reference's 32 query heads)
A, ALPHA, KV_COEFF, KV_SIGMA = 406.4, 0.34, 0.220, 0.11


def _params(h, layers, heads, kv, hd, inter, vocab=DEFAULT_VOCAB):
    """explore.design.shapes' count: q and o h x heads x hd each, k and v h x kv x hd each, a gated FFN 3 h inter, an untied
    embedding and LM head (active: less the input embedding)."""
    total = layers * (2 * h * heads * hd + 2 * h * kv * hd + 3 * h * inter) + 2 * vocab * h
    return total, total - vocab * h


def _ln_neff(total, active, kv_ratio):
    return 0.5 * math.log(active) + 0.5 * math.log(total) - KV_COEFF * math.log2(kv_ratio)


def _z(shape):
    """A shape's z = delta / sigma_test against llama-3.1-8b (h4096 L32 H32/8 d128 ffn14336: 8,029,995,008 total,
    7,504,658,432 active, ln N_eff = 0.5 ln 7.5047e9 + 0.5 ln 8.0300e9 - 0.22 x 2 = 22.33262), every other term equal
    or flat (aspect inside 50-200 and head size inside 32-256 carry no test band; one precision, one token count):
    delta = A (N_c^-alpha - N_r^-alpha); sigma_test = KV sharing's band change, 0.11 x (log2 8 - log2 4) = 0.11 in
    ln N_eff, times the reference's slope alpha A N_r^-alpha = 0.34 x 406.4 x e^(-0.34 x 22.33262) = 0.069630 nats."""
    ref = _ln_neff(*_params(4096, 32, 32, 8, 128, 14336), 32 / 8)
    h, layers, heads, kv, hd, inter = shape
    c = _ln_neff(*_params(h, layers, heads, kv, hd, inter), 32 / kv)
    slope = ALPHA * A * math.exp(-ALPHA * ref)
    return A * (math.exp(-ALPHA * c) - math.exp(-ALPHA * ref)) / (KV_SIGMA * slope)


def _judged(rows, k=1.0):
    prec, vocab, ref, env, jk = _setup(8e9, None, False, None, budget_tol=0.1, quality_tol=0.0, quality_sigmas=k, outside_envelope=False,
                                       quality_file=None, proxy_file=None)
    cols = ("hidden", "layers", "inter", "kv_heads", "experts", "top_k", "expert_inter", "shared_inter", "head_dim")
    arr = np.array([[r.get(c, 0) for c in cols] for r in rows], dtype=np.int64)
    return judge(shapes(arr, vocab), **jk), ref


def test_hand_z_of_two_kv_halvings_against_llama_8b():
    # llama-3.1-8b with 4 KV heads: 7,895,777,280 total, 7,370,440,704 active (32 x 2 x 4096 x 4 x 128 = 134,217,728
    # fewer), ln N_eff 22.09517 (-0.22 x log2 8): delta = 406.4 (e^(-0.34 x 22.09517) - e^(-0.34 x 22.33262)) = 0.017219,
    # sigma_test 0.11 x 0.069630 = 0.0076593: z = 2.2482, the KV term's 0.22 / 0.11 = 2 and the parameters it frees
    # h3072 L54 H48/4 d64 ffn13824, the grid's nearest banded shape: 8,771,862,528 total, 8,377,860,096 active, ln N_eff
    # 22.21184: delta 0.0085852, z = 1.12089 (the extra 9% of parameters buy back 1.13 of the 2 sigma)
    assert _z((4096, 32, 32, 4, 128, 14336)) == pytest.approx(2.24818, rel=1e-5)
    assert _z((3072, 54, 48, 4, 64, 13824)) == pytest.approx(1.12089, rel=1e-5)
    c, ref = _judged([{"hidden": 4096, "layers": 32, "inter": 14336, "kv_heads": 4, "head_dim": 128},
                      {"hidden": 3072, "layers": 54, "inter": 13824, "kv_heads": 4, "head_dim": 64}])
    assert ref.name == "llama-3.1-8b" and list(c["total_params"]) == [7_895_777_280, 8_771_862_528]
    assert c["q_sigma_test"] == pytest.approx([0.0076593] * 2, rel=1e-4)
    assert c["q_delta"] / c["q_sigma_test"] == pytest.approx([2.24818, 1.12089], rel=1e-5)


def test_quality_window_golden_on_made_up_shapes():
    # z = delta / sigma_test of the banded shapes: 0.004 / 0.004 = 1, 0.009 / 0.006 = 1.5, 0.02 / 0.01 = 2 (outside the
    # envelope: not counted); the first two have no band (one passes at delta <= 0, one fails at +0.001 whatever k)
    delta, st = np.array([-0.01, 0.001, 0.004, 0.009, 0.02]), np.array([0.0, 0.0, 0.004, 0.006, 0.01])

    class Ref:
        k, tol, terms = 1.0, 0.0, {"loss": 2.0}

    c = {"q_delta": delta, "q_sigma_test": st, "q_passes": delta <= st, "inside": np.array([True, True, True, True, False]),
         "hidden": np.arange(5), "layers": np.arange(5)}
    w = quality_window(c, Ref())
    assert (w["from"], w["to"]) == pytest.approx((1.0, 1.5), rel=1e-12)
    assert (w["shapes"], w["admitted"], w["no_band"], w["no_band_admitted"], w["banded"]) == (4, 2, 2, 1, 2)
    assert w["next"] == {"hidden": 3, "layers": 3, "z": pytest.approx(1.5, rel=1e-12)}
    # --quality-tol 0.001 x the reference's loss 2.0 = 0.002 off every delta: z 0.5, 1.1667; k 1 sits between them
    Ref.tol = 0.001
    w = quality_window(c | {"q_passes": delta <= st + 0.002}, Ref())
    assert (w["from"], w["to"], w["admitted"]) == (pytest.approx(0.5), pytest.approx(0.007 / 0.006), 3)
    w = quality_window(c, Ref(), open_envelope=True)  # --outside-envelope: the fifth counts, its z (0.02 - 0.002) / 0.01 = 1.8
    assert w["shapes"] == 5 and w["banded"] == 3


@pytest.fixture(scope="module")
def d8():
    """8B on one H100, throughput: the default ranking and --rank-all (a few seconds each)."""
    return (lc.design(8e9, "h100", num_gpus=1), lc.design(8e9, "h100", num_gpus=1, rank_all=True))


def test_quality_sigmas_from_0_to_1_moves_nothing_at_8b_and_says_so(d8):
    r, _ = d8
    w = r["screened"]["quality_limit"]
    # 402 grid shapes in budget and envelope: 183 with no test band (depth, head size or parameters alone against llama),
    # 90 of them no worse in loss; the other 219 all differ in KV heads, the nearest at z = 1.12089 (hand: above)
    assert (w["shapes"], w["no_band"], w["no_band_admitted"], w["banded"], w["admitted"]) == (402, 183, 90, 219, 90)
    assert w["from"] == 0.0 and w["to"] == pytest.approx(_z((3072, 54, 48, 4, 64, 13824)), rel=1e-5)
    assert shape_label(w["next"]) == "h3072 L54 H48/4 ffn13824"
    assert quality_rule_line(r).endswith("--quality-sigmas from 0 to 1.121 admits the same 90 of the 402 grid shapes in budget and "
                                         "envelope: 183 differ from llama-3.1-8b only where the proxy states no uncertainty (no "
                                         "test band: 90 pass, at a loss no worse than its, whatever the value), and the nearest of "
                                         "the 219 others, h3072 L54 H48/4 ffn13824, needs 1.121")
    # the window is what the answer does: k 0 and 1.1 give the rows k 1 gives; 1.2 admits the shape at 1.121
    same = [d["shape"] for d in lc.design(8e9, "h100", num_gpus=1, quality_sigmas=0.0, top=3)["designs"]]
    assert same == [d["shape"] for d in r["designs"][:3]]
    assert lc.design(8e9, "h100", num_gpus=1, quality_sigmas=1.2, top=1)["screened"]["admitted"] > w["admitted"]


def test_rank_all_at_8b_names_the_best_resolved_shape(d8):
    r, every = d8
    rs, ra = r["resolved"], every["resolved"]
    assert (rs["shapes"], rs["of"]) == (ra["shapes"], ra["of"]) == (8, 111)
    assert rs["rows"] == list(range(1, 9)) and ra["rows"] == []  # --rank-all's ten rows: none resolved
    assert rs["best_resolved_row"] == 1 and ra["best_resolved_row"] is None
    assert ra["best_resolved_shape"] == r["designs"][0]["shape"] | {"experts": 0, "top_k": 0, "expert_inter": 0, "shared_inter": 0}
    assert ra["best_resolved_gain_pct"] == pytest.approx(r["designs"][0]["gain_pct"], rel=1e-12)
    assert ra["best_unresolved_gain_pct"] == pytest.approx(every["designs"][0]["gain_pct"], rel=1e-12)
    g, u = r["designs"][0]["gain_pct"], every["designs"][0]["gain_pct"]
    assert resolved_line(every) == (
        f"quality resolved (err ± <= |loss| + ±test) for 8 of 111 priced shapes: the best of them {g:+.1f}% tok/s/GPU, "
        "h4096 L28 H32/8 ffn18432, on none of the rows above: design 1 without --rank-all; the best shape whose quality it cannot "
        f"resolve: {u:+.1f}% tok/s/GPU, at a quality the proxy cannot tell from llama-3.1-8b's (its error wider than its loss and "
        "the test band together): unproven until such a shape is trained and measured")
    assert resolved_line(r).startswith(f"quality resolved (err ± <= |loss| + ±test) for 8 of 111 priced shapes (rows 1-8): the best of "
                                       f"them {g:+.1f}% tok/s/GPU, row 1; the best shape")
    out = CliRunner().invoke(cli, ["design", "--params", "8e9", "--gpu", "h100", "--gpus", "1", "--rank-all"], env={"COLUMNS": "100"})
    text = " ".join(out.output.split())
    assert out.exit_code == 0 and resolved_line(every) in text and quality_rule_line(every) in text
    assert "ranked after the resolved rows" not in text  # --rank-all's legend: they are not


def test_rows():
    # (qwen3-32b's wider query heads, which this line once said were off the grid, are a grid axis now:
    # tests/test_design_query_width.py)
    assert _rows([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8" and _rows([]) == ""


def test_page_shows_the_cli_lines(d8):
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    body = {"params": 8e9, "gpu": "h100", "num_gpus": 1, "rank_all": True}
    got = TestClient(create_app()).post("/api/design", json=body).json()
    _, every = d8
    assert got["resolved_line"] == resolved_line(every) and got["quality_line"] == quality_rule_line(every)
    assert re.search(r"needs 1\.121$", got["quality_line"]) and json.dumps(got["resolved"]) == json.dumps(every["resolved"])


def test_quality_rule_line_keeps_a_narrow_window_apart_and_says_an_open_envelope():
    # a 70B search outside the envelope at k 3 (design-a-shape's second run) had z 2.9996 and 3.0004 about its k: three
    # decimals print "from 3 to 3", so the line takes four; its shapes are "in budget" alone, the envelope open
    w = {"k": 3.0, "from": 2.99962, "to": 3.00041, "shapes": 5, "admitted": 3, "no_band": 1, "no_band_admitted": 1, "banded": 4,
         "next": {"hidden": 1024, "layers": 8, "heads": 8, "kv_heads": 4, "inter": 2560, "z": 3.00041}}
    r = {"reference": {"rule": "loss delta <= 3 x sigma_delta", "name": "llama-3.1-70b"}, "envelope": {"applied": False},
         "screened": {"quality_limit": w}}
    assert quality_rule_line(r) == (
        "equal quality: loss delta <= 3 x sigma_delta (--quality-sigmas, --quality-tol); --quality-sigmas from 2.9996 to 3.0004 "
        "admits the same 3 of the 5 grid shapes in budget (--outside-envelope): 1 differ from llama-3.1-70b only where the proxy "
        "states no uncertainty (no test band: 1 pass, at a loss no worse than its, whatever the value), and the nearest of the 4 "
        "others, h1024 L8 H8/4 ffn2560, needs 3.0004")
    r["screened"]["quality_limit"] = w | {"to": None, "next": None}  # no banded shape beyond k: open above, three decimals
    assert quality_rule_line(r).endswith("--quality-sigmas from 3 up admits the same 3 of the 5 grid shapes in budget "
                                         "(--outside-envelope): 1 differ from llama-3.1-70b only where the proxy states no "
                                         "uncertainty (no test band: 1 pass, at a loss no worse than its, whatever the value)")
    # no shape without a band (a MoE search against qwen3-30b-a3b: 0 of 28): the line names the nearest beyond k alone
    r["screened"]["quality_limit"] = w | {"no_band": 0, "no_band_admitted": 0}
    assert quality_rule_line(r).endswith("--quality-sigmas from 2.9996 to 3.0004 admits the same 3 of the 5 grid shapes in budget "
                                         "(--outside-envelope): the nearest beyond it, h1024 L8 H8/4 ffn2560, needs 3.0004")
