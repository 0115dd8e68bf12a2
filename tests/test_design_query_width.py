"""design's query-width axis (modelling-notes #designQ-query-width): the grid holds the reference's own head layout
(query heads x head size / hidden, from the catalog's config.json), the shapes on it are priced with q and o projections
of that width, and the accuracy proxy reads the reference's layout at zero distance on that axis."""
import math

import numpy as np
import pytest

import llm_codesign as lc
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore import accuracy_model as am
from llm_codesign.explore.design import (
    Slo,
    _setup,
    _trial_shape,
    design,
    grid_axes,
    grid_rows,
    judge,
    q_ratios,
    reference_q_ratio,
    shapes,
)
from llm_codesign.render.design_lines import shape_label
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model

QWEN_VOCAB = 151936  # Qwen/Qwen3-32B config.json vocab_size


def test_the_ratio_from_the_catalogs_configs():
    # config.json num_attention_heads x head_dim / hidden_size: Qwen3-32B 64 x 128 / 5120, Qwen3-30B-A3B 32 x 128 / 2048,
    # Qwen3-235B-A22B 64 x 128 / 4096, Llama-3.1-8B 32 x 128 / 4096; DeepSeek-V3's MLA is no layout of the GQA grid
    assert reference_q_ratio(get_model("qwen3-32b")) == pytest.approx(1.6, abs=1e-12)
    assert reference_q_ratio(get_model("qwen3-30b-a3b")) == pytest.approx(2.0, abs=1e-12)
    assert reference_q_ratio(get_model("qwen3-235b-a22b")) == pytest.approx(2.0, abs=1e-12)
    assert reference_q_ratio(get_model("llama-3.1-8b")) == pytest.approx(1.0, abs=1e-12)
    assert reference_q_ratio(get_model("deepseek-v3")) is None
    # the proxy's position reads the MLA model's query-key width all the same: 128 x (128 + 64) / 7168
    assert am.query_width(get_model("deepseek-v3")) == pytest.approx(128 * 192 / 7168, rel=1e-12)


def test_the_grid_holds_qwen3_32b_and_prices_its_width():
    axes = grid_axes(moe=False, q_ratios=(1.0, 1.6), dense_hidden=(5120, 5248, 5760), layers=(64,)) | {"ffn_ratio": (5.0,)}
    rows, ax = grid_rows(axes, moe=False)
    c = shapes(rows, QWEN_VOCAB)
    at = (c["hidden"] == 5120) & (c["head_dim"] == 128) & (c["kv_heads"] == 8) & (c["inter"] == 25600)
    # both widths at 5120: 40 query heads (Llama's layout) and the reference's own 64
    assert sorted(c["heads"][at].tolist()) == [40, 64]
    # 1.6 x 5248 / 128 = 65.6 heads: no layout, dropped; 5248 stays at a width of 1 (41 heads, not a multiple of 8: dropped too)
    assert not (c["hidden"] == 5248).any()
    assert sorted(set(c["heads"][(c["hidden"] == 5760) & (c["head_dim"] == 128)].tolist())) == [72]  # 1.6 x 5760 / 128; 45 drops
    i = int(np.flatnonzero(at & (c["heads"] == 64))[0])
    assert ax["q_ratio"][i] == pytest.approx(1.6) and c["q_ratio"][i] == pytest.approx(1.6)
    # by hand: q and o 2 x 5120 x 64 x 128 = 83,886,080, k and v 2 x 5120 x 8 x 128 = 10,485,760, FFN 3 x 5120 x 25600 =
    # 393,216,000: 487,587,840 a layer, x 64 = 31,205,621,760, and 2 x 151,936 x 5120 = 1,555,824,640 of embedding and head
    assert int(c["total_params"][i]) == 32_761_446_400 == get_model("qwen3-32b").total_params
    j = int(np.flatnonzero(at & (c["heads"] == 40))[0])  # at a width of 1 the q and o projections are 5120 x 5120
    assert int(c["total_params"][i] - c["total_params"][j]) == 64 * 2 * 5120 * (64 - 40) * 128


def _judged(rows, baseline):
    prec, vocab, ref, env, jk = _setup(32e9, baseline, False, None, budget_tol=0.1, quality_tol=0.0, quality_sigmas=1.0,
                                       outside_envelope=False, quality_file=None, proxy_file=None)
    return judge(shapes(np.asarray(rows, dtype=np.int64), vocab), **jk), ref


def test_the_reference_itself_at_zero_distance():
    base = get_model("qwen3-32b")
    c, ref = _judged([[5120, 64, 25600, 8, 0, 0, 0, 0, 128, 64], [5120, 64, 25600, 8, 0, 0, 0, 0, 128, 40],
                      [5760, 62, 24576, 8, 0, 0, 0, 0, 128, 72]], base)
    assert q_ratios(ref) == pytest.approx((1.0, 1.6))
    # qwen3-32b's own shape: nothing differs, the proxy's error nil, resolved, not extrapolated on the query width
    assert float(c["q_delta"][0]) == pytest.approx(0.0, abs=1e-12) and float(c["q_sigma"][0]) == pytest.approx(0.0, abs=1e-12)
    assert bool(c["q_resolved"][0]) and float(c["qx_q_width"][0]) == 0.0
    # Llama's width at the same hidden: ln 1.6 beyond the evidence, its error at least the query width's spread
    # (proxy.toml [query_heads] 0.0145 of the loss per e-fold) x ln 1.6
    loss = float(ref.terms["loss"])
    assert float(c["qx_q_width"][1]) == pytest.approx(math.log(1.6), rel=1e-12)
    assert float(c["q_sigma"][1]) >= 0.0145 * math.log(1.6) * loss * (1 - 1e-9) and not bool(c["q_resolved"][1])
    # a neighbour at the reference's width (72 heads at 5760): zero distance on the axis, however many heads
    assert float(c["qx_q_width"][2]) == 0.0


def test_a_32b_search_resolves_rows_at_the_references_width():
    gpu = get_gpu("h100")
    r = design(32e9, gpu, calibration_for(gpu), 2, Slo("throughput"))
    assert r["reference"]["name"] == "qwen3-32b" and r["reference"]["shape"]["q_ratio"] == pytest.approx(1.6)
    rs = r["resolved"]
    assert rs["shapes"] == 11 and rs["of"] == 436  # 0 of 237 on a grid at a width of 1 alone (#designG-small-budgets)
    assert rs["best_resolved_shape"] == {"hidden": 5760, "layers": 62, "heads": 72, "kv_heads": 8, "head_dim": 128, "inter": 24576,
                                         "experts": 0, "top_k": 0, "expert_inter": 0, "shared_inter": 0, "q_ratio": 1.6}
    d1 = r["designs"][0]
    assert d1["shape"]["q_ratio"] == 1.6 and d1["quality"]["resolved"] and rs["best_resolved_row"] == 1
    assert d1["gain_pct"] == pytest.approx(rs["best_resolved_gain_pct"]) and d1["gain_pct"] == pytest.approx(-2.43, abs=0.01)
    assert shape_label(d1["shape"]) == "h5760 L62 H72/8 q1.6 ffn24576"
    # the rows at Llama's width are priced too, and are what they are: the proxy cannot resolve them against qwen3-32b
    assert all(not d["quality"]["resolved"] for d in r["designs"] if d["shape"]["q_ratio"] == 1)


def test_llama_references_keep_one_width():
    ref = _setup(8e9, None, False, None, budget_tol=0.1, quality_tol=0.0, quality_sigmas=1.0, outside_envelope=False,
                 quality_file=None, proxy_file=None)[2]
    assert ref.name == "llama-3.1-8b" and q_ratios(ref) == (1.0,)
    assert shape_label({"hidden": 4096, "layers": 32, "heads": 32, "kv_heads": 8, "q_ratio": 1, "inter": 14336}) == "h4096 L32 H32/8 ffn14336"


def test_the_nsga2_trial_takes_the_width():
    optuna = pytest.importorskip("optuna")
    t = optuna.trial.FixedTrial({"hidden": 5200, "head_dim": 128, "kv_heads": 8, "q_ratio": 1.6, "ffn_ratio": 5.0})
    row = _trial_shape(t, moe=False, params=32.8e9, vocab=QWEN_VOCAB, q_ratios=(1.0, 1.6))
    # 1.6 x 5200 / 128 = 65 heads -> the nearest multiple of 8, 64, and the hidden that holds them at 1.6: 5120
    assert (row[0], row[8], row[9]) == (5120, 128, 64) and row[2] == 25600
    one = optuna.trial.FixedTrial({"hidden": 5200, "head_dim": 128, "kv_heads": 8, "ffn_ratio": 5.0})  # a grid of one width
    assert _trial_shape(one, moe=False, params=32.8e9, vocab=QWEN_VOCAB)[9] == 40  # 5200 / 128 -> 40 heads at 5120


def test_the_page_and_report_carry_the_width():
    r = lc.design(32e9, "b200", num_gpus=1, top=2)
    assert r["designs"][0]["shape"]["q_ratio"] == 1.6
    cols = r["side_by_side"]["columns"]
    assert cols[0]["name"] == "qwen3-32b" and cols[0]["shape"]["q_ratio"] == pytest.approx(1.6)
