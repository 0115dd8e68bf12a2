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
    # measured: NVFP4 4.3% slower at TP8 (median; 1024/1024 at 64 requests 10.16 vs 9.60 ms), predicted 5.7%
    assert np.median(tp8[:, 0]) == pytest.approx(1.043, abs=0.002)
    assert np.median(tp8[:, 1]) == pytest.approx(np.median(tp8[:, 0]), abs=0.02)
    # at TP1 the weights dominate and NVFP4 wins: measured 0.825, predicted 0.840
    tp1 = np.median(_pairs(1), axis=0)
    assert tp1[0] == pytest.approx(0.825, abs=0.002) and tp1[1] == pytest.approx(tp1[0], abs=0.02)


def test_the_qkv_projection_is_what_costs():
    m, g = get_model("llama-3.1-70b"), get_gpu("b200")
    costs = TRTLLM.costs(calibration_for(g, None))
    per_role = {}
    for w in ("fp8", "nvfp4"):
        _, _, ops = decode_step(m, g, Precision.of(w, kv="fp8"), Plan(tp=8).broadcast(), costs=costs, b=64.0, ctx=1536.0, k=0.0, spec=None)
        per_role[w] = {o.role: float(np.ravel(o.time)[0]) for o in ops if o.kind == "gemm" and o.part == "attention"}
    # 64 tokens x 1,280 columns x K 8,192: NVFP4 11.4 us against FP8 5.3 us per layer; the o projection is cheaper in NVFP4
    assert per_role["nvfp4"]["qkv"] / per_role["fp8"]["qkv"] > 2.0
    assert per_role["nvfp4"]["o"] < per_role["fp8"]["o"]
