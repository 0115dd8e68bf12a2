"""cost/calibration.py: parameters come from the data files in layers (default.toml, fitted.toml, a
user's profile), and the in-step view scales what CUDA graphs and engines change."""
import tomllib
from dataclasses import fields
from importlib import resources

import pytest

from llm_codesign.cost.calibration import Calibration, calibration_for, documented
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
])
def test_a_profile_value_outside_its_range_is_one_line(tmp_path, text, line):
    # what --calibration refuses: every value finite and in its parameter's physical range
    # (spec.validation.param_range), the parameter, the value and the range named
    p = tmp_path / "p.toml"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        calibration_for(get_gpu("h100"), str(p))
    assert str(e.value) == line


def test_every_fitted_range_lies_inside_the_loaders():
    # a profile calibrate writes is one --calibration reads: each search range (measure.calibrate PARAMS and
    # SERVING_BOUNDS) within the parameter's physical range (spec.validation.param_range)
    from llm_codesign.measure.calibrate import PARAMS, SERVING_BOUNDS
    from llm_codesign.spec.validation import param_range

    ranges = [(n, lo, hi) for table in PARAMS.values() for n, (lo, hi) in table.items()] + [(n, lo, hi) for n, _, lo, hi in SERVING_BOUNDS]
    assert len(ranges) == 52
    for name, lo, hi in ranges:
        plo, phi, _ = param_range(name)
        assert plo <= lo < hi <= phi, (name, (lo, hi), (plo, phi))
