"""serve/energy.py and data/power.toml: board power between idle and TDP from what the steps do, output
tokens per joule of the GPU alone and with its node's share, on estimate, every frontier point and compare."""
import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

import llm_codesign as lc
from llm_codesign.cli import app
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Op
from llm_codesign.serve.energy import board_power, energy, energy_of, kernel_activity
from llm_codesign.serve.invariants import InvariantError, check_estimate
from llm_codesign.spec.hardware import get_gpu

H100 = get_gpu("h100")
PEAK = 989.4e12  # H100 SXM dense BF16 (data/gpus/h100.toml)


def _op(flops, t_memory, *, time=1e-3, kind="gemm"):
    return Op(name="x", kind=kind, time=time, count=1, work=(flops, 0.0), split=(0.0, t_memory), math="bf16")


def test_board_figures_are_the_cited_ones():
    h100, h200, b200, l40s, a100 = (board_power(get_gpu(g)) for g in ("h100", "h200", "b200", "l40s", "a100"))
    assert (h100.idle_w, h100.tdp_w, h100.node_w) == (132.0, 700.0, 575.0)  # DGX H100: (10.2 kW - 8 x 700 W) / 8
    assert "gpu-burn" in h100.idle_source and "DGX H100" in h100.node_source
    assert h200.idle_w == pytest.approx(0.19 * 700) and "19% of TDP" in h200.idle_source and h200.node_w == 575.0
    assert (b200.idle_w, b200.node_w) == (194.0, 787.5)  # DGX B200: (14.3 kW - 8 x 1000 W) / 8
    assert a100.node_w == 412.5  # DGX A100: (6.5 kW - 8 x 400 W) / 8
    assert l40s.idle_w == pytest.approx(66.5) and l40s.node_w is None and l40s.node_source is None
    assert h100.at(0.0) == 132.0 and h100.at(1.0) == 700.0 and h100.at(2.0) == 700.0 and h100.at(-1.0) == 132.0


def test_tokens_per_joule_by_hand_at_a_known_activity():
    # decode: u_c 0.2 -> 1.25 x 0.2 = 0.25, u_m 0.8 -> 0.30 x 0.8 = 0.24: a = 0.49, its kernels fill 90% of the step: 0.441
    # prefill: u_c 0.9 -> 1.125, capped at 1, kernels fill 80%: 0.8. A quarter of the life in prefill:
    # a = 0.25 x 0.8 + 0.75 x 0.441 = 0.53075 -> P = 132 + (700 - 132) x 0.53075 = 433.466 W on an H100
    parts = {"ops": [_op(0.2 * PEAK * 1e-3, 0.8e-3)], "prefill_ops": [_op(0.9 * PEAK * 1e-3, 0.1e-3)],
             "decode_kernel_share": 0.9, "prefill_kernel_share": 0.8, "prefill_time_share": 0.25}
    e = energy_of(parts, H100, 0.0, 1000.0)
    assert float(e.decode_activity) == pytest.approx(0.441) and float(e.prefill_activity) == pytest.approx(0.8)
    assert float(e.gpu_w) == pytest.approx(433.466)
    d = e.at()
    assert d["tokens_per_joule"] == pytest.approx(1000.0 / 433.466)  # 2.3070
    assert d["tokens_per_joule_node"] == pytest.approx(1000.0 / (433.466 + 575.0))  # 0.9916
    assert d["tokens_per_joule_at_tdp"] == pytest.approx(1000.0 / 700.0)


def test_a_collective_is_memory_traffic_and_an_idle_operator_weighs_nothing():
    # 1 ms of all-reduce (0.30) and 3 ms of a GEMM at u_c 0.4 (0.5) and u_m 0.5 (0.15): (0.30 + 3 x 0.65) / 4
    ops = [_op(0.0, 0.0, kind="comm"), _op(0.4 * PEAK * 3e-3, 1.5e-3, time=3e-3), _op(1e12, 1.0, time=0.0)]
    assert float(kernel_activity(ops, H100)) == pytest.approx((0.30 + 3 * 0.65) / 4)
    assert float(kernel_activity([], H100)) == 0.0


@pytest.mark.parametrize("model, gpu, n, kw", [("llama-3.1-8b", "h100", 1, {}), ("llama-3.1-70b", "h200", 8, {"tp": 8}),
                                               ("qwen3-30b-a3b", "b200", 1, {}), ("llama-3.1-8b", "mi300x", 1, {})])
def test_power_stays_between_idle_and_tdp_and_per_joule_between_its_bounds(model, gpu, n, kw):
    m = lc.get_model(model)
    dep = lc.deployment(m, gpu=gpu, num_gpus=n, **kw)
    conc = np.array([1, 4, 32, 256, 2048])
    for w in (lc.Workload(isl=1024, osl=1024), lc.Workload(isl=8192, osl=128), lc.Workload(isl=128, osl=4096)):
        e = energy(m, dep, w, conc, calibration=calibration_for(dep.gpu, None))
        p = e.power
        out = e.tokens_per_joule * e.gpu_w
        assert np.all(e.gpu_w >= p.idle_w) and np.all(e.gpu_w <= p.tdp_w)
        # a GPU never draws more than its TDP, so its tokens per joule never falls below the TDP figure, and never
        # less than idle, so it never exceeds output / idle; the node's share only lowers it
        assert np.all(e.tokens_per_joule >= e.tokens_per_joule_at_tdp) and np.all(e.tokens_per_joule <= out / p.idle_w)
        assert np.allclose(e.tokens_per_joule_at_tdp, out / p.tdp_w)
        if p.node_w is not None:
            assert np.all(e.tokens_per_joule_node < e.tokens_per_joule)
        assert np.all((e.prefill_time_share >= 0) & (e.prefill_time_share <= 1))


def test_a_memory_bound_decode_draws_less_than_a_compute_bound_prefill():
    m = lc.get_model("llama-3.1-8b")
    dep = lc.deployment(m, gpu="h100", num_gpus=1)
    d = energy(m, dep, lc.Workload(isl=4096, osl=1024), 1, calibration=calibration_for(dep.gpu, None)).at()
    assert d["prefill_activity"] > 0.75 > 0.35 > d["decode_activity"]


def test_estimate_reports_tokens_per_joule_and_no_mislabelled_bound():
    r = json.loads(CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "16", "--json"]).stdout)
    assert "tokens_per_joule_bound" not in r  # renamed: output / TDP is the least a GPU delivers, not the most
    p = r["power"]
    assert r["tokens_per_joule"] == pytest.approx(r["output_tok_s_per_gpu"] / p["gpu_w"])
    assert r["tokens_per_joule_node"] == pytest.approx(r["output_tok_s_per_gpu"] / (p["gpu_w"] + 575.0))
    assert r["tokens_per_joule_at_tdp"] == pytest.approx(r["output_tok_s_per_gpu"] / 700.0)
    assert 132.0 < p["gpu_w"] < 700.0 and (p["idle_w"], p["tdp_w"], p["node_w"]) == (132.0, 700.0, 575.0)
    table = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "16"]).output
    shown = f"{r['tokens_per_joule']:.2f} at {p['gpu_w']:.0f} W, {r['tokens_per_joule_node']:.2f}, {r['tokens_per_joule_at_tdp']:.2f}"
    assert f"output tokens/J: GPU, +node, @TDP │ {shown} │" in " ".join(table.split()) and "TDP bound" not in table


def test_an_estimate_drawing_beyond_tdp_is_an_invariant_error():
    m = lc.get_model("llama-3.1-8b")
    est = lc.estimate(m, lc.deployment(m, gpu="h100", num_gpus=1), lc.Workload(concurrency=8))
    assert check_estimate(m, est) is est
    with pytest.raises(InvariantError, match="gpu_w 701.0 outside idle 132.0 .. TDP 700.0"):
        check_estimate(m, replace(est, energy={**est.energy, "gpu_w": 701.0}))


def test_every_frontier_point_carries_its_energy():
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=1, workload=lc.Workload(isl=1024, osl=256))
    assert len(f.points) > 5
    for p in f.points:
        e = p.to_dict()["energy"]
        assert e["tokens_per_joule"] == pytest.approx(p.output_tok_s_per_gpu / e["gpu_w"])
        assert e["tokens_per_joule_node"] == pytest.approx(p.output_tok_s_per_gpu / (e["gpu_w"] + 575.0))
        assert e["tokens_per_joule_at_tdp"] <= e["tokens_per_joule"] and 132.0 <= e["gpu_w"] <= 700.0
    # the throughput end keeps the GPU busier and buys more tokens per joule than the interactive end
    first, last = f.points[0].energy, f.points[-1].energy
    assert first["gpu_w"] > last["gpu_w"] and first["tokens_per_joule"] > last["tokens_per_joule"]
    out = CliRunner().invoke(app, ["pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--osl", "256"]).output
    assert f"output tokens per joule, GPU alone: {first['tokens_per_joule']:.2f} at the throughput end" in " ".join(out.split())


def test_compare_reports_tokens_per_joule_and_cost():
    r = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--weight-dtype", "fp8",
                                 "--gpu-hour-price", "bundled", "--json"])
    best = json.loads(r.stdout)["rows"][0]["best"]
    assert best["energy"]["tokens_per_joule"] == pytest.approx(best["output_tok_s_per_gpu"] / best["energy"]["gpu_w"])
    assert best["cost"]["usd_per_m_output_tokens"] == pytest.approx(3.0 / 3600 / best["output_tok_s_per_gpu"] * 1e6)
    # where every GPU lacks a bundled price nothing asked can be priced: one line naming those with one, before any search
    bad = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "--gpu", "mi355x", "--gpu-hour-price", "bundled"])
    assert bad.exit_code == 2 and bad.output == ("error: gpu_hour_price: 'mi355x' is not valid; a GPU the bundled prices cite "
                                                 "(a100, b200, gb200, h100, h200, l40s, mi300x, mi325x, rtx-pro-6000), a number of dollars "
                                                 "per GPU-hour, or a price file\n")


def test_compare_prices_the_gpus_the_bundled_prices_cite_and_dashes_the_rest():
    """H100 ($3.00/GPU-hour, data/prices.toml) is priced beside an MI355X the bundled prices cite no figure for: its cost
    "-" with one footnote naming it, and null in the JSON (the comparison was refused whole before)."""
    args = ["compare", "llama-3.1-8b", "--gpu", "h100,mi355x", "--gpus", "1", "--weight-dtype", "fp8", "--gpu-hour-price", "bundled"]
    runner = CliRunner()
    got = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    h100, mi355x = got["rows"]
    assert got["unpriced_gpus"] == ["mi355x"] and mi355x["gpu"] == "mi355x" and mi355x["best"]["cost"] is None
    assert h100["best"]["cost"]["usd_per_m_output_tokens"] == pytest.approx(3.0 / 3600 / h100["best"]["output_tok_s_per_gpu"] * 1e6)
    r = runner.invoke(app, args, env={"COLUMNS": "200"})
    lines = r.output.splitlines()
    assert r.exit_code == 0 and lines[-1] == ("$/Mtok -: the bundled prices (data/prices.toml) cite no GPU-hour price for mi355x; a price file "
                                              "(--gpu-hour-price FILE) can give one.")
    row = next(line.split() for line in lines if line.split()[:1] == ["mi355x"])
    assert row[-3:] == ["-", "TP1", "x1"]  # the plan and its instances (the batch beneath)


def test_every_disaggregated_point_carries_its_units_energy():
    from llm_codesign.explore.disagg_search import search_disagg
    from llm_codesign.explore.search import SearchSpace

    m, g = lc.get_model("llama-3.1-8b"), get_gpu("h100")
    f = search_disagg(m, g, calibration_for(g, None), SearchSpace.build(m, g, num_gpus=2), isl=2048, osl=256)
    assert len(f.points) > 3
    for p in f.points:
        e = p.to_dict()["energy"]
        assert 132.0 <= e["gpu_w"] <= 700.0 and e["tokens_per_joule"] == pytest.approx(p.output_tok_s_per_gpu / e["gpu_w"])
        assert e["tokens_per_joule_at_tdp"] <= e["tokens_per_joule"] and e["tokens_per_joule_node"] < e["tokens_per_joule"]


def test_a_gpu_without_a_system_rating_says_so_and_keeps_none():
    # newc10 #14: an MI300X's estimate dropped "+node" without a word and compare().to_pandas() read NaN where the JSON said
    # null. power.toml [node] holds DGX ratings only: the row says so, and a frame keeps None
    from llm_codesign.cli.commands import _energy_rows
    from llm_codesign.serve.metrics import records_frame

    assert board_power(get_gpu("mi300x")).node_w is None
    r = {"power": {"gpu_w": 314.6}, "tokens_per_joule": 0.36, "tokens_per_joule_node": None, "tokens_per_joule_at_tdp": 0.15,
         "gpu": "mi300x"}
    assert _energy_rows(r) == [("output tokens/J: GPU, @TDP",
                                "0.36 at 315 W, 0.15; +node: none, no mi300x system rating bundled (DGX only)")]
    df = records_frame([{"gpu": "mi300x", "tokens_per_joule": 0.36, "tokens_per_joule_node": None},
                        {"gpu": "h200", "tokens_per_joule": 0.41, "tokens_per_joule_node": 8.04}])
    assert df["tokens_per_joule_node"].tolist() == [None, 8.04] and df["tokens_per_joule_node"].isna().tolist() == [True, False]
    assert df["tokens_per_joule"].dtype == float  # a column without None stays numeric
