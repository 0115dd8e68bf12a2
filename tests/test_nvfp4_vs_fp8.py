"""Issue 38: NVFP4 decodes slower than FP8 on B200 at TP8 and moderate batch. The measurements say so too
(Llama-3.1-70B, TensorRT-LLM, the clean Blackwell sample's 18 TP8 pairs), and the op that does it is the narrow
QKV projection, which the NVFP4 GEMM kernels run without splitting K (kernels/gemm.csv's B200 rows)."""
from collections import defaultdict

import numpy as np
import pytest

from llm_codesign.api import get_gpu, get_model
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.measure.validate import predict_serving, read_rows
from llm_codesign.serve.aggregated import decode_step
from llm_codesign.spec.engines import TRTLLM
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision

CLEAN = "src/llm_codesign/data/measurements/serving_measured_blackwell_clean.csv"


def _pairs(tp: int) -> np.ndarray:
    """(measured, predicted) NVFP4 / FP8 TPOT of each TensorRT-LLM Llama-3.1-70B B200 pair at `tp`."""
    rows = [r for r in read_rows(CLEAN) if r["model"] == "meta-llama/Llama-3.1-70B" and r["gpu"] == "b200"
            and r["backend"] == "trtllm" and int(r["tp"]) == tp]
    preds, _ = predict_serving(rows)
    by = defaultdict(dict)
    for r, p in zip(rows, preds, strict=True):
        by[(r["isl"], r["osl"], r["concurrency"])][r["weight_dtype"]] = (float(r["tpot_ms"]), p["tpot_ms"])
    return np.array([[v["nvfp4"][i] / v["fp8"][i] for i in (0, 1)] for v in by.values() if {"fp8", "nvfp4"} <= v.keys()])


def test_measured_and_predicted_nvfp4_over_fp8():
    tp8 = _pairs(8)
    assert len(tp8) == 18
    # measured: NVFP4 4.3% slower at TP8 (median; 1024/1024 at 64 requests 10.16 vs 9.60 ms)
    assert np.median(tp8[:, 0]) == pytest.approx(1.043, abs=0.002)
    # predicted 0.975 since the B200 GEMM values were re-fitted with the kernel tables' NVFP4 rows at their fallback tile
    # (docs/modelling-notes.md#nvfp4-fallback-tile: 1.057 before), the serving values not yet re-fitted on them
    assert np.median(tp8[:, 1]) == pytest.approx(0.975, abs=0.01)
    # at TP1 the weights dominate and NVFP4 wins by more: measured 0.825, predicted 0.738 (0.840 before)
    tp1 = np.median(_pairs(1), axis=0)
    assert tp1[0] == pytest.approx(0.825, abs=0.002) and tp1[1] == pytest.approx(0.738, abs=0.01)
    assert tp1[1] < np.median(tp8[:, 1]) - 0.2  # NVFP4's advantage shrinks with TP in the prediction as measured


def test_the_qkv_projection_is_what_costs():
    m, g = get_model("llama-3.1-70b"), get_gpu("b200")
    costs = TRTLLM.costs(calibration_for(g, None))
    per_role = {}
    for w in ("fp8", "nvfp4"):
        _, _, ops = decode_step(m, g, Precision.of(w, kv="fp8"), Plan(tp=8).broadcast(), costs=costs, b=64.0, ctx=1536.0, k=0.0, spec=None)
        per_role[w] = {o.role: float(np.ravel(o.time)[0]) for o in ops if o.kind == "gemm" and o.part == "attention"}
    # 64 tokens x 1,280 columns x K 8,192 in NVFP4 (B200's fit: fp4 0.55337 of 9 PFLOPS, bw_eff 0.698099, p 2.77504, a BF16
    # launch 2.12069 us in a step), by hand: the 128 x 64 tile (shared memory feeds it 0.5926 of the rate: 1/256 byte per FP4
    # FLOP against (128 + 64) x 0.5625 / (2 x 128 x 64)), 20 tiles in one wave, (8,192 + 16.13) K steps x 0.8217 ns = 6.745 us;
    # memory 6,356,992 B at 5.585 TB/s = 1.138 us; p-norm 6.762 us; + 2.121 = 8.88 us, against FP8's 5.2 us
    assert per_role["nvfp4"]["qkv"] == pytest.approx(8.883e-6, rel=2e-3)
    assert per_role["nvfp4"]["qkv"] / per_role["fp8"]["qkv"] > 1.5
    assert per_role["nvfp4"]["o"] < per_role["fp8"]["o"]
