"""cost/calibration.py: parameters come from the data files in layers (default.toml, fitted.toml, a
user's profile), and the in-step view scales what CUDA graphs and engines change."""
import tomllib
from dataclasses import fields
from importlib import resources

import pytest

from llm_codesign.cost.calibration import KERNEL_KEYED, Calibration, calibration_for, documented
from llm_codesign.errors import InputError
from llm_codesign.spec.hardware import get_gpu

ROOT = resources.files("llm_codesign").joinpath("data/calibration")
DEFAULT = tomllib.loads(ROOT.joinpath("default.toml").read_text())
FITTED = tomllib.loads(ROOT.joinpath("fitted.toml").read_text())


def test_layers_default_then_fitted_then_profile(tmp_path):
    h100 = get_gpu("h100")
    assert documented().gemm_blend_p == DEFAULT["default"]["gemm_blend_p"]
    assert calibration_for(h100).gemm_eff_bf16 == FITTED["hopper"]["gemm_eff_bf16"]
    p = tmp_path / "mine.toml"
    p.write_text("[hopper]\ngemm_eff_bf16 = 0.5\n")
    c = calibration_for(h100, str(p))
    assert c.gemm_eff_bf16 == 0.5 and c.gemm_eff_fp8 == FITTED["hopper"]["gemm_eff_fp8"]


def test_in_step_keeps_the_tables_fixed_costs():
    # no discount inside a step: what a step does not launch is priced by the engine's fusions (test_fusion.py)
    c = calibration_for(get_gpu("b200"))
    s = c.in_step("trtllm")
    assert s.kernel_overhead_s == c.kernel_overhead_s and s.gemm_overhead_fp8_s == c.gemm_overhead_fp8_s and s.bw_eff == c.bw_eff
    # and holds no engine: the cost model is handed the engine beside it (an engine's comm_latency_scale of 1
    # changes nothing, so the in-step profile is the profile itself)
    assert s is c and "allreduce_engine" not in {f.name for f in fields(Calibration)}


def test_bad_profiles_are_one_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[default]\nno_such_parameter = 1\n")
    with pytest.raises(InputError, match="calibration.no_such_parameter"):
        calibration_for(get_gpu("h100"), str(p))
    with pytest.raises(InputError, match=r"engine: 'tgi' is not valid; .*missing from \[default.ttft_overhead_s\] "):
        documented().engine("ttft_overhead_s", "tgi")


@pytest.mark.parametrize("text,line", [
    ("[hopper]\ngemm_eff_bf16 = inf\n", "calibration.gemm_eff_bf16: inf is not valid; a number in [0.0001, 1] (gemm_eff_bf16's physical range)"),
    ("[hopper]\ngemm_eff_bf16 = nan\n", "calibration.gemm_eff_bf16: nan is not valid; a number in [0.0001, 1] (gemm_eff_bf16's physical range)"),
    ("[default]\ngemm_blend_p = 1e308\n", "calibration.gemm_blend_p: 1e+308 is not valid; a number in [1, 100] (gemm_blend_p's physical range)"),
    ("[default]\nattn_decode_group_bf16 = 0.5\n",
     "calibration.attn_decode_group_bf16: 0.5 is not valid; a number in [1, 1e+06] (attn_decode_group_bf16's physical range)"),
    ("[default.step_overhead_s]\nvllm = -inf\n",
     "calibration.step_overhead_s.vllm: -inf is not valid; a number in [0, 1] (step_overhead_s's physical range)"),
    ("[default]\ncustom_ar_latency_s = 2.0\n",
     "calibration.custom_ar_latency_s: 2.0 is not valid; a number in [0, 1] (custom_ar_latency_s's physical range)"),
    # the per-head decode fallback's rate in FLOP per SM clock: 0 would price the op in infinite time (was accepted: its
    # name lost the _eff suffix the range rule read)
    ("[hopper]\nattn_decode_wide_flop_clk = 0\n",
     "calibration.attn_decode_wide_flop_clk: 0 is not valid; a number in (0, 8192] (attn_decode_wide_flop_clk's physical range)"),
    # the name before kdec f029b12: one line saying what it became (was the value refused beside ~120 known names)
    ("[hopper]\nattn_decode_wide_flops_eff = 0.01\n",
     "calibration.attn_decode_wide_flops_eff: 0.01 is not valid; {p}: attn_decode_wide_flops_eff was renamed "
     "attn_decode_wide_flop_clk (FLOP per SM clock): multiply by 2048 (ampere), 4096 (hopper) or 8192 (blackwell)"),
    # an attention-DP hold for an engine that holds none would be ignored (a structural zero, Engine.holds_adp_requests)
    ("[default.adp_wait_steps]\nsglang = 50\n",
     "calibration.adp_wait_steps.sglang: 50 is not valid; {p}: 0 (sglang never holds a request under attention DP: Engine.holds_adp_requests)"),
    # a top-level value where a table belongs (was an AttributeError: 'list' object has no attribute 'items')
    ("default = [1, 2]\n", "calibration.default: [1, 2] is not valid; {p}: a [default] table of parameter = number"),
    ('hopper = "fast"\n', "calibration.hopper: 'fast' is not valid; {p}: a [hopper] table of parameter = number"),
    # a misspelt section (was ignored: the run priced the bundled values as if the profile said nothing)
    ("[defualt]\nbw_eff = 0.5\n", "calibration.defualt: 'a table' is not valid; {p}: did you mean [default]? a section named "
     "[default], [ada], [ampere], [blackwell], [blackwell_sm120], [cdna3], [cdna4], [hopper], [intervals]"),
])
def test_a_profile_value_outside_its_range_is_one_line(tmp_path, text, line):
    # what --calibration refuses: every value finite and in its parameter's physical range
    # (spec.validation.param_range), the parameter, the value and the range named; a section it would not read
    p = tmp_path / "p.toml"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        calibration_for(get_gpu("h100"), str(p))
    assert str(e.value) == line.format(p=p)


def test_a_profile_may_name_its_gpus_own_family(tmp_path):
    # a GPU .toml's family that no bundled GPU has is a section its profile may hold
    p = tmp_path / "p.toml"
    p.write_text("[myfam]\ngemm_eff_bf16 = 0.5\n[hopper]\ngemm_eff_bf16 = 0.6\n")
    from dataclasses import replace

    h100 = get_gpu("h100")
    assert calibration_for(replace(h100, family="myfam"), str(p)).gemm_eff_bf16 == 0.5
    with pytest.raises(InputError, match=r"calibration\.myfam: 'a table' is not valid"):
        calibration_for(h100, str(p))


def test_every_fitted_range_lies_inside_the_loaders():
    # a profile calibrate writes is one --calibration reads: each search range (measure.calibrate PARAMS and
    # SERVING_BOUNDS, and a MoE kernel family's KERNEL_PARAMS) within the parameter's physical range (spec.validation.param_range)
    from llm_codesign.measure.calibrate import KERNEL_PARAMS, PARAMS, SERVING_BOUNDS
    from llm_codesign.spec.validation import param_range

    ranges = [(n, lo, hi) for table in (*PARAMS.values(), KERNEL_PARAMS) for n, (lo, hi) in table.items()] + [(n, lo, hi) for n, _, lo, hi, *_ in SERVING_BOUNDS]
    assert len(ranges) == 76  # 52, DeepGEMM's three and the MoE route time (issue 39), a MoE kernel family's three, CUTLASS FP8's three,
    # the eager launch's spread over ranks, the split-KV decode merge (attn_decode_split_s), the masked MHA kernel's time per
    # CTA (attn_decode_mmha_s), less the prefill spread exponent (issue 39's cohorts) and the one-shot all-reduce's latency
    # (measured on the H100 per-engine table, not fitted on serving runs), DeepEP's eight (hopper/ep_comm) and the engines' own
    # all-reduce's five (hopper/comm: its cost per further peer, custom_ar_peer_s, the fifth)
    for name, lo, hi in ranges:
        plo, phi, _ = param_range(name)
        assert plo <= lo < hi <= phi, (name, (lo, hi), (plo, phi))


def test_moe_kernel_families_are_read_checked_and_written_back(tmp_path):
    """The per-MoE-kernel-family values sit in nested tables of a GPU family's section; a family or GEMM kernel
    family the model does not know, or a value outside its physical range, is one line; a profile calibrate
    writes reads back the same values; a pair without values of its own runs at the kernel tables' pair."""
    from llm_codesign.measure.calibrate import to_toml

    h100 = get_gpu("h100")
    p = tmp_path / "mine.toml"
    p.write_text("[hopper.moe_kernel_eff.sglang_triton]\nbf16 = 0.3\n[hopper.moe_kernel_route_s.sglang_triton]\nbf16 = 2e-9\n")
    c = calibration_for(h100, str(p))
    scale, fixed, route = c.moe_kernel("sglang_triton", "bf16")
    assert scale == pytest.approx(0.3 / c.gemm_eff_bf16) and route == 2e-9
    assert fixed == dict(FITTED["hopper"]["moe_kernel_overhead_s"]["sglang_triton"])["bf16"]  # the bundled fit's, not overridden
    # no values of its own: the tables' pair (W4A16's grouped rate is its dense Marlin rate)
    assert c.moe_kernel("trtllm_w4a16", "bf16") == (c.moe_eff, c.moe_overhead_s, c.moe_route_s)
    assert c.moe_kernel(None, "w4a16") == (1.0, c.moe_overhead_s, c.moe_route_s)
    for i, (text, field) in enumerate((("[hopper.moe_kernel_eff.cutlas]\nbf16 = 0.3\n", "calibration.moe_kernel_eff.cutlas: "),
                                       ("[hopper.moe_kernel_eff.cutlass]\nint8 = 0.3\n", "calibration.moe_kernel_eff.cutlass: "),
                                       ("[hopper.moe_kernel_eff.cutlass]\nbf16 = 1.5\n", "calibration.moe_kernel_eff.cutlass.bf16: "),
                                       ("[hopper]\nmoe_kernel_eff = 0.3\n", "calibration.moe_kernel_eff: "))):
        bad = tmp_path / f"bad{i}.toml"  # a file of its own: profiles are read once per path
        bad.write_text(text)
        with pytest.raises(InputError, match=field.replace(".", r"\.")):
            calibration_for(h100, str(bad))
    out = tmp_path / "fit.toml"
    out.write_text(to_toml({"hopper": c}, [], "test"))
    back = calibration_for(h100, str(out))
    for t in KERNEL_KEYED:
        assert [k for k, _ in getattr(back, t)] == [k for k, _ in getattr(c, t)]
        assert [v for _, v in getattr(back, t)] == pytest.approx([v for _, v in getattr(c, t)], rel=1e-5)


def test_fitted_moe_kernel_families_lie_inside_their_ranges():
    """Every per-family value the bundled profile ships is a physical quantity inside its stated range and off
    the fit's bounds (measure.calibrate.KERNEL_PARAMS): a share of the dense peak, a fixed cost per grouped-GEMM
    launch, a routing time per token-expert assignment, and for TensorRT-LLM's CUTLASS MoE a time per expert the
    rank holds (EXPERT_SETUP)."""
    from llm_codesign.measure.calibrate import EXPERT_SETUP, EXPERT_SETUP_FAMILIES, KERNEL_PARAMS
    from llm_codesign.spec.engines import MOE_KERNELS

    pairs = 0
    assert set(FITTED["hopper"]["moe_kernel_expert_s"]) == set(EXPERT_SETUP_FAMILIES)
    for t, (lo, hi) in {**KERNEL_PARAMS, **EXPERT_SETUP}.items():
        for fam, per in FITTED["hopper"][t].items():
            assert fam in MOE_KERNELS
            for kern, v in per.items():
                assert lo * 1.001 < v < hi / 1.001, (t, fam, kern, v)
                pairs += 1
    # three values for each of the thirteen kept pairs (Marlin's MXFP4 rows, marlin_fp4, the thirteenth), but the route time
    # vLLM's Triton block-FP8 rows (no EP) leave unfitted; and the CUTLASS pairs' (bf16, fp8, fp8_block; FlashInfer's
    # fp8_block) time per expert the rank holds
    assert pairs == 3 * 13 - 1 + 4
    c = calibration_for(get_gpu("h100"))
    assert 0.55 < c.gemm_eff_fp8_deepgemm < 0.70  # SGLang's DeepGEMM rows: ~0.60 of the FP8 peak on large GEMMs


def test_a_moe_kernel_familys_search_starts_where_the_family_is_priced():
    # H100 block FP8 runs at 0.8 of its kernel's rate (the CUDA cores apply the scales): an own share is divided by
    # the dense rate x 0.8, the fallback's scale is not, so a family without a value of its own (SGLang's Triton MoE at
    # block FP8) once started its search 1/0.8 = 1.25x fast; now the start prices it as the fallback does
    from dataclasses import replace

    from llm_codesign.cost.gemm import main_loop_rate
    from llm_codesign.measure.calibrate import _own_start
    from llm_codesign.spec.hardware import get_gpu

    g = get_gpu("h100")
    bundled = calibration_for(g)  # the bundled profile has SGLang's fitted share: take it out, as before its fit
    cal = replace(bundled, moe_kernel_eff=tuple(kv for kv in bundled.moe_kernel_eff if kv[0] != "sglang_triton.fp8_block"))
    p, rate = "moe_kernel_eff.sglang_triton.fp8_block", main_loop_rate("fp8_block", g)
    assert rate == 0.8 and "sglang_triton.fp8_block" in dict(bundled.moe_kernel_eff)
    before = cal.moe_kernel("sglang_triton", "fp8_block", rate=rate)[0]
    assert cal.with_param(p, cal.param(p)).moe_kernel("sglang_triton", "fp8_block", rate=rate)[0] == pytest.approx(before / 0.8)
    start = _own_start(cal, {p: (0.01, 1.0)}, g)
    assert start.moe_kernel("sglang_triton", "fp8_block", rate=rate)[0] == pytest.approx(before, rel=1e-12)
    assert _own_start(start, {p: (0.01, 1.0)}, g) == start  # a family with its own value keeps it


def test_a_profile_fitted_before_the_cost_per_peer_prices_none(tmp_path):
    # calibrate wrote custom_ar_latency_s fitted flat over 2, 4 and 8 GPUs before custom_ar_peer_s existed: the bundled
    # 1.03578e-07 s a peer (fitted.toml [hopper]) on top counted the peers twice. A profile naming both keeps its own; one
    # naming neither keeps the bundled pair, fitted together
    h100 = get_gpu("h100")
    old, both, neither = (tmp_path / f"{n}.toml" for n in ("old", "both", "neither"))
    old.write_text("[hopper]\ncustom_ar_latency_s = 3.1e-6\n")
    both.write_text("[hopper]\ncustom_ar_latency_s = 3.1e-6\ncustom_ar_peer_s = 0.2e-6\n")
    neither.write_text("[hopper]\ngemm_eff_bf16 = 0.7\n")
    got = [(c.custom_ar_latency_s, c.custom_ar_peer_s) for c in (calibration_for(h100, str(p)) for p in (old, both, neither))]
    assert got == [(3.1e-6, 0.0), (3.1e-6, 0.2e-6), (2.68678e-06, 1.03578e-07)]
