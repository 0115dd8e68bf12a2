import pytest

from llm_codesign.errors import InputError
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.precision import DTYPES, Precision, gemm_math, get_dtype


def test_block_scale_overhead():
    # NVFP4: 4 bits + one 8-bit scale per 16 values = 4.5 bits; MXFP4: 4 + 8/32 = 4.25 bits
    assert DTYPES["nvfp4"].bytes_per_weight() == pytest.approx(4.5 / 8)
    assert DTYPES["mxfp4"].bytes_per_weight() == pytest.approx(4.25 / 8)
    # FP8 block-scaled: an FP32 scale per 128x128 weights, per 1x128 activations
    assert DTYPES["fp8_block"].bytes_per_weight() == pytest.approx((8 + 32 / 16384) / 8)
    assert DTYPES["fp8_block"].bytes_per_value() == pytest.approx((8 + 32 / 128) / 8)
    assert DTYPES["bf16"].bytes_per_weight() == 2.0


def test_gemm_math_follows_hardware():
    h100, b200, a100, mi355 = (get_gpu(x) for x in ("h100", "b200", "a100", "mi355x"))
    bf16, fp8, nvfp4, mxfp4 = (DTYPES[x] for x in ("bf16", "fp8", "nvfp4", "mxfp4"))
    assert gemm_math(mxfp4, bf16, h100) == "bf16"  # W4A16 runs at the 16-bit rate
    assert gemm_math(nvfp4, nvfp4, b200) == "fp4"
    assert gemm_math(nvfp4, nvfp4, h100) == "fp8"  # no FP4 tensor cores on Hopper
    assert gemm_math(fp8, fp8, a100) == "bf16"  # no FP8 on Ampere
    assert gemm_math(nvfp4, nvfp4, mi355) == "fp8"  # CDNA4 runs MXFP4, not NVFP4
    assert gemm_math(mxfp4, mxfp4, mi355) == "fp4"


def test_bad_dtype():
    with pytest.raises(InputError, match="weight_dtype"):
        Precision.of("fp3")
    with pytest.raises(InputError, match="nvfp4"):
        get_dtype("int2")
