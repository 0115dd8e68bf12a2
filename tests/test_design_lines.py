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


def _answer(**kw) -> dict:
    """A design answer's fields baseline_lines reads, by hand."""
    ref = {"name": "llama-3.1-8b", "basis": "no baseline: the nearest published dense model", "total_params": 8_030_261_248,
           "quality_proxy": 1.97876}
    return {"objective": "output_tok_s_per_gpu", "reference": ref, "baseline": None, "beats_reference": True,
            "designs": [{"gain_pct": 31.9}]} | kw


def test_baseline_lines_say_the_reference_without_a_baseline():
    from llm_codesign.render.design_lines import baseline_lines

    # 8,030,261,248 / 1e9 = 8.03 -> "8.0B"; 1.97876 -> "1.9788" (4 decimals)
    assert baseline_lines(_answer()) == ["reference llama-3.1-8b (no baseline: the nearest published dense model): 8.0B params, "
                                         "quality proxy 1.9788 nats/token"]


def test_baseline_lines_say_none_beats_the_baseline_first_then_its_row_and_hint():
    from llm_codesign.render.design_lines import baseline_lines

    b = {"name": "gpt-oss-20b", "total_params": 20_907_786_240, "quality_proxy": 1.96634, "objective": 20648.06,
         "deployment": {"plan": "TP1", "concurrency_per_instance": 1039}, "outside_grid": ["sliding-window attention layers"],
         "hint": "the baseline is MoE: --moe --active-params 3.6e9 searches MoE shapes"}
    # the best of the rows' gains, not the first: max(-90.0, -82.1) = -82.1; a row with no gain (None) is left out
    r = _answer(baseline=b, beats_reference=False, designs=[{"gain_pct": -90.0}, {"gain_pct": -82.1}, {"gain_pct": None}])
    assert baseline_lines(r) == [
        "no design beats gpt-oss-20b at equal quality proxy: the best is -82.1% tok/s/GPU (the rows below are the least slow)",
        "gpt-oss-20b's sliding-window attention layers are outside the shape grid (full GQA attention in every layer)",
        # 20,907,786,240 / 1e9 = 20.91 -> "20.9B"; 20648.06 -> "20648.1"
        "baseline gpt-oss-20b: 20.9B params, quality proxy 1.9663 nats/token, tok/s/GPU 20648.1 (TP1, batch 1039)",
        "the baseline is MoE: --moe --active-params 3.6e9 searches MoE shapes"]
    # no row with a gain: the bare sentence; no rows at all: nothing beats nothing, said not
    assert baseline_lines(r | {"designs": [{"gain_pct": None}]})[0] == "no design beats gpt-oss-20b"
    assert baseline_lines(r | {"designs": []})[0].startswith("baseline gpt-oss-20b: ")
    # the tok/s/user objective names its unit
    assert "tok/s/user 20648.1" in baseline_lines(r | {"objective": "tok_s_per_user"})[2]


def test_versus_line_is_none_without_a_row():
    from llm_codesign.render.design_lines import versus_line

    assert versus_line(_answer(designs=[])) is None
