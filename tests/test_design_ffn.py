"""design's FFN-ratio pass (branch designffn): the envelope bounds a dense FFN's width over d_model by the published dense
trunks, design prices that whole window coarsely and then at the grid's step around the best ratio, and a row on an
envelope bound is said with the bound and the published models it widens."""
import json

import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app as cli
from llm_codesign.cli.design import envelope_lines
from llm_codesign.explore.design import _ffn_values, _ratio_window, grid_axes
from llm_codesign.explore.envelope import envelope_at, features, position, row_of
from llm_codesign.spec.registry import get_model

B200T = ("design", "--params", "70e9", "--gpu", "b200", "--gpus", "8", "--regime", "throughput", "--baseline", "llama-3.1-70b", "--json",
         "--rank-all")  # the fastest row, its quality not resolved (test_design_why.test_unresolved_rows_rank_last)


@pytest.fixture(scope="module")
def b200t():
    r = CliRunner().invoke(cli, list(B200T))
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_ffn_ratio_bound_at_70b_by_hand():
    b = envelope_at(70e9, dense=True).bounds["ffn_ratio"]
    # the dense trunks within 10^0.5 of 70B (envelope.toml inter / hidden): qwen3-32b 25600 / 5120 = 5.0, yi-1.5-34b
    # 20480 / 7168 = 2.857, falcon-40b 32768 / 8192 = 4 ungated x 2/3 = 2.667, deepseek-llm-67b 22016 / 8192 = 2.6875,
    # llama-3.1-70b 3.5, qwen2-72b 29568 / 8192 = 3.609 (nemotron-super-49b's pruned 2.51 sets no trunk bound)
    assert (b.lo_value, b.hi_value) == pytest.approx((4 * 2.6667 / 4, 5.0), rel=1e-4)
    assert b.lo_models == ("falcon-40b",) and b.hi_models == ("qwen3-32b",)
    assert (b.lo, b.hi) == pytest.approx((2.6667 / 1.5, 7.5), rel=1e-4)  # x/ 1.5 the ratio margin
    assert "ffn_ratio" not in envelope_at(70e9).bounds  # a MoE search's (every model) envelope: no dense-FFN bound
    m = get_model("llama-3.1-70b")  # 28672 / 8192 = 3.5: inside
    assert features(row_of(m))["ffn_ratio"] == 3.5 and position(envelope_at(70e9, dense=True), features(row_of(m)))["inside"]


def test_the_passes_ratios():
    lo, hi, step = _ratio_window(envelope_at(70e9, dense=True), grid_axes(moe=False))
    assert (lo, hi, step) == (2.0, 7.5, 0.25)  # 1.778 rounded up, 7.5 down, to the grid's 0.25
    grid = grid_axes(moe=False)["ffn_ratio"]  # 2.5 .. 4.5
    # coarse: every 1.0 from the grid's edges (5.5, 6.5, 7.5 up; 1.5 < 2.0 down, so the window's edge 2.0 itself)
    assert _ffn_values(grid, lo, hi) == [2.0, 5.5, 6.5, 7.5]
    # fine: 3 grid steps either side of a best at 7.5, those past the window dropped
    assert _ffn_values([*grid, 2.0, 5.5, 6.5, 7.5], lo, hi, centre=7.5, step=step, count=3) == [6.75, 7.0, 7.25]
    assert _ffn_values([*grid, 5.5], lo, hi, centre=5.5, step=step, count=3) == [4.75, 5.0, 5.25, 5.75, 6.0, 6.25]


def test_design_finds_h6144_l66_and_says_it_sits_on_the_ffn_bound(b200t):
    d = b200t["designs"][0]
    # before the pass the grid stopped at FFN ratio 4.5 and walked up from the h8192 rows: #1 h8192 L46 ffn 55296, +23.2%
    assert d["shape"] == {"hidden": 6144, "layers": 66, "heads": 24, "kv_heads": 4, "head_dim": 256, "inter": 46080}
    # 66 x (attention 6144 x 6144 x 2 + 6144 x 4 x 256 x 2 = 88,080,384 + FFN 3 x 6144 x 46080 = 849,346,560)
    # + 2 x 128,256 x 6144 = 66 x 937,426,944 + 1,576,009,728 = 63,446,188,032: 9.4% under 70B, inside the 10% budget
    assert d["total_params"] == 63_446_188_032
    assert d["gain_pct"] == pytest.approx(27.0, abs=0.05)  # recon's note: h6144 L66 +27.0%, never priced
    assert b200t["grid"]["ffn_pass"]["coarse"]["ffn_ratio"] == [2, 5.5, 6.5, 7.5] and b200t["grid"]["ffn_pass"]["best"] == 7.5
    c = d["envelope"]["closest"]  # 46080 / 6144 = 7.5 = qwen3-32b's 5.0 x 1.5: on the limit
    assert d["envelope"]["at_edge"] and c["bound"] == "ffn_ratio.max" and c["headroom"] == 1.0 and c["set_by"] == ["qwen3-32b"]
    # rows 1-2 and 7-8 at 7.5 (on the limit), 5-6 at 7.25 (7.5 / 7.25 = 1.034 < 1.05): each said with its precedent, the
    # published 5.0 of qwen3-32b (32,761,446,400 params: 2.14x from 70B, so named with its size)
    assert envelope_lines(b200t["designs"], 70e9)[:2] == [
        "envelope: rows 1-2, 7-8 at the edge, ffn_ratio.max on its limit 7.5: the published 5 (qwen3-32b (32.8B)) widened x1.5",
        "envelope: rows 5-6 at the edge, ffn_ratio.max within 5% of its limit 7.5: the published 5 (qwen3-32b (32.8B)) widened x1.5"]
    # the ratio axis' max is a real limit: one step past it (7.75) every shape breaks ffn_ratio.max
    edge = [b for b in b200t["binds"] if b["kind"] == "grid edge" and b["axis"] == "ffn_ratio"]
    assert edge and edge[0]["side"] == "max" and edge[0]["value"] == 7.5 and edge[0]["bounds"] == ["ffn_ratio.max"]
