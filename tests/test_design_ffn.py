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


def test_design_finds_a_ratio_past_the_grid_and_says_its_edge(b200t):
    d = b200t["designs"][0]
    # before the pass the grid stopped at FFN ratio 4.5. Until fixE design 1 was h6144 L66 H24/4 of 256 at ratio 7.5 (+27.0%,
    # on the ffn_ratio.max limit), its 4 KV heads read at its own 24 query heads (r 6 against llama-3.1-70b's 8: a credit);
    # read at the baseline's 64 (r 16: a loss) it no longer leads. Now h9216 L46 H144/8 of 64, ratio 5.25 (the fine pass's)
    assert d["shape"] == {"hidden": 9216, "layers": 46, "heads": 144, "kv_heads": 8, "head_dim": 64, "q_ratio": 1, "inter": 48384}
    # 46 x (attention 9216 x 9216 x 2 + 9216 x 8 x 64 x 2 = 179,306,496 + FFN 3 x 9216 x 48384 = 1,337,720,832)
    # + 2 x 128,256 x 9216 = 46 x 1,517,027,328 + 2,364,014,592 = 72,147,271,680: +3.1% over 70B, inside the 10% budget
    assert d["total_params"] == 72_147_271_680 and 48384 == 5.25 * 9216
    assert d["gain_pct"] == pytest.approx(34.1, abs=0.05)
    p = b200t["grid"]["ffn_pass"]
    assert p["coarse"]["ffn_ratio"] == [2, 5.5, 6.5, 7.5] and p["fine"]["ffn_ratio"] == [4.75, 5, 5.25]
    assert p["best"] == p["design_1"] == 5.25  # past the grid's 4.5: priced by the pass
    c = d["envelope"]["closest"]  # 9216 / 46 = 200.3, within 5% of falcon-40b's 136.5 x 1.5 = 204.8
    assert d["envelope"]["at_edge"] and c["bound"] == "aspect_ratio.max" and c["set_by"] == ["falcon-40b"]
    assert envelope_lines(b200t["designs"], 70e9)[0] == ("envelope: rows 1, 3-4, 10 at the edge, aspect_ratio.max within 5% of "
                                                          "its limit 204.8: the published 136.5 (falcon-40b) widened x1.5")
    # the head size's min (64) is a fixed grid edge; the FFN ratio's 7.5 no longer holds design 1 back
    edge = [b for b in b200t["binds"] if b["kind"] == "grid edge"]
    assert [(b["axis"], b["side"], b["value"]) for b in edge] == [("head_dim", "min", 64)]
