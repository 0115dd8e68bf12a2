"""The cdna3 (MI300X) all-reduce parameters in fitted.toml: reproduced by benchmarks/fit_amd_kernels.py,
better than default.toml's values out of sample, and their error on the shipped AMD tables held as ceilings."""
import importlib.util
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from llm_codesign.cost.calibration import calibration_for, documented
from llm_codesign.measure.validate import kernel_report
from llm_codesign.spec.hardware import get_gpu

ROOT = Path(__file__).resolve().parents[1]
AMD = ROOT / "src" / "llm_codesign" / "data" / "measurements" / "kernels_amd"
FITTED = tomllib.loads(resources.files("llm_codesign").joinpath("data/calibration/fitted.toml").read_text())
spec = importlib.util.spec_from_file_location("fit_amd_kernels", ROOT / "benchmarks" / "fit_amd_kernels.py")
fak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fak)


def test_cdna3_section_is_what_the_script_fits():
    kept = fak.kept()
    # beside the kernel fit: AITER's fused MoE, fitted on the MI355X serving runs (benchmarks/fit_amd_serving.py)
    # and assumed for CDNA3, which has no serving run of its own
    assert sorted(kept) == sorted(set(FITTED["cdna3"]) - {"moe_eff", "moe_overhead_s"})
    assert (FITTED["cdna3"]["moe_eff"], FITTED["cdna3"]["moe_overhead_s"]) == (FITTED["cdna4"]["moe_eff"], FITTED["cdna4"]["moe_overhead_s"])
    for name, v in kept.items():
        assert FITTED["cdna3"][name] == pytest.approx(v, rel=1e-5), name
    # MI325X shares the family (same dies, same xGMI); MI355X is cdna4 and keeps default.toml's values
    assert calibration_for(get_gpu("mi325x")).comm_bw_eff == FITTED["cdna3"]["comm_bw_eff"]
    assert calibration_for(get_gpu("mi355x")).comm_bw_eff != FITTED["cdna3"]["comm_bw_eff"]


def test_all_reduce_fit_beats_the_defaults_out_of_sample():
    rows = fak.tables()["collectives"]
    start = documented("cdna3")
    for train, test in (fak.halves("collectives", rows), fak.halves("collectives", rows)[::-1]):
        fams, _ = fak.fit_kernels({"collectives": train})
        before = fak.errors("collectives", test, start)["median_ape"]
        after = fak.errors("collectives", test, fams["cdna3"])["median_ape"]
        # reached: 15.3 -> 5.2 and 22.2 -> 10.0 (start: default.toml's values)
        assert after < 0.7 * before and after <= 11.0


def test_amd_tables_do_not_regress():
    rep, _, _ = kernel_report(AMD / "collectives.csv")
    assert rep["modeled"] == 128 and rep["overall"]["latency_ms"]["median_ape"] <= 6.5  # reached 5.5
    rep, _, _ = kernel_report(AMD / "gemm.csv")
    assert rep["modeled"] == 18 and rep["overall"]["latency_ms"]["median_ape"] <= 10.5  # reached 9.6 (default.toml, gfx942 tiles; 11.2 before)


@pytest.mark.parametrize("gpu_id", ["mi300x", "mi325x"])
def test_cdna3_few_token_block_fp8_gemm_runs_aiters_narrow_tiles(gpu_id):
    """Block-FP8 GEMMs of few tokens on gfx942 run tiles 16-32 rows high (AITER's kernels tuned there: ROCm/aiter
    aiter/configs/model_configs/a8w8_blockscale_tuned_gemm_ds_v3.csv, a8w8_blockscale_1x128x128_256x16x64x256 at
    M <= 32), not the 64x128 of the MI355X list. Its gfx942 rows (304 CUs) read 6.62 us at (1, 3072, 1536), 8.37 us
    at (16, 7168, 2048) and 9.15 us at (32, 7168, 2304); the GEMM alone (activation quantised already, as the
    table times it) is priced within 15% of each (1.03-1.07x; 1.40-1.58x with the 64-row tiles)."""
    import numpy as np

    from llm_codesign.cost import gemm
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.precision import DTYPES

    gpu = get_gpu(gpu_id)
    m, n, k = np.array([1.0, 16.0, 32.0]), np.array([3072.0, 7168.0, 7168.0]), np.array([1536.0, 2048.0, 2304.0])
    t = gemm.gemm_time(m, n, k, gpu, calibration_for(gpu), math="fp8", a_bytes=DTYPES["fp8_block"].bytes_per_value(),
                       w_bytes=DTYPES["fp8_block"].bytes_per_weight(), kernel="fp8_block", fused_quant=True, engine=get_engine("sglang"))[0]
    np.testing.assert_allclose(t * 1e6, [6.6154, 8.3748, 9.1458], rtol=0.15)
