"""design's summary lines (render.design_lines), printed by the CLI and on design --report's page: by hand."""
from llm_codesign.render.design_lines import _params, ffn_pass_line, params_line


def test_params_reads_billions_and_millions():
    assert (_params(27.2e9), _params(405e9), _params(350e6)) == ("27.2B", "405B", "350M")


def test_ffn_pass_line_by_hand():
    # a window 2-7.5 priced every 1.0 (2, 3, ..., 7: 6 ratios, 60 shapes), then the grid's 0.25 around the best 7
    # (6.75, 7.25: 20 shapes), best 7.25
    p = {"window": [2.0, 7.5], "step": 1.0, "coarse": {"ffn_ratio": [2, 3, 4, 5, 6, 7], "priced": 60},
         "fine": {"ffn_ratio": [6.75, 7.25], "priced": 20}, "best": 7.25}
    assert ffn_pass_line(p) == ("FFN ratio: the envelope's window 2-7.5 priced every 1 (2, 3, 4, 5, 6, 7: 60 shapes), then the "
                                "grid's step around the best (6.75, 7.25: 20); the fastest then 7.25 (any quality)")
    # newc10 #9: the pass's best is its fastest shape of any quality (3.75 on a 7B MI300X search) where design 1, ranked by
    # resolved quality first, held 7.5: design 1's ratio said beside it
    assert ffn_pass_line(p | {"best": 3.75, "design_1": 7.5}).endswith("; the fastest then 3.75 (any quality); design 1's 7.5")
    assert ffn_pass_line(None) is None and ffn_pass_line({}) is None
    assert "(none: 0)" in ffn_pass_line(p | {"fine": {"ffn_ratio": [], "priced": 0}})


def test_params_line_without_a_gain_or_rows():
    # rows 68-71B of a 70B budget (68/70 - 1 = -2.9%, 71/70 - 1 = +1.4%), no gain: no equal-params clause
    r = {"designs": [{"total_params": 68e9, "gain_equal_params_pct": None}], "budget": {"params": 70e9, "tol": 0.05, "rows": [68e9, 71e9]},
         "baseline": None, "reference": {"name": "llama-3.1-70b", "total_params": 70.6e9}}
    assert params_line(r, "tok/s/GPU") == "params: rows 68B-71B, -2.9 to +1.4% of the 70B budget (±5%); llama-3.1-70b 70.6B"
    assert params_line(r | {"designs": []}, "tok/s/GPU") is None and params_line(r | {"budget": None}, "tok/s/GPU") is None
