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
