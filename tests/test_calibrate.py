"""measure/calibrate.py: the serving fit re-prices one engine at a time without changing its loss, and warm-starts from a profile."""
from dataclasses import replace

import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.spec.hardware import get_gpu


def test_serving_fit_reprices_one_engine_at_a_time_without_changing_the_answer(monkeypatch):
    from llm_codesign.measure import calibrate, stats
    from llm_codesign.measure.validate import predict_serving

    # per-engine parameters re-price only their engine's rows; the loss it reports must still be the
    # loss of the whole fitted profile priced from scratch
    keep = ("step_overhead_s", "ttft_overhead_s", "custom_ar_latency_s")
    monkeypatch.setattr(calibrate, "SERVING_BOUNDS", tuple(b for b in calibrate.SERVING_BOUNDS if b[0] in keep))
    monkeypatch.setattr(stats, "MIN_BAND_ROWS", 1)  # two rows per band here
    rows = [{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100", "num_gpus": "1", "backend": be, "weight_dtype": "bf16",
             "kv_dtype": "bf16", "isl": "1024", "osl": "256", "concurrency": str(c), "tp": "1", "ttft_ms": str(t),
             "tpot_ms": str(d)} for be, c, t, d in (("trtllm", 8, 60, 9), ("trtllm", 64, 250, 16), ("vllm", 8, 45, 11), ("vllm", 64, 300, 21))]
    fams, out = calibrate.fit_serving(rows, {"hopper": calibration_for(get_gpu("h100"))}, rounds=2)
    preds, _ = predict_serving(rows, cal_override=lambda g: fams["hopper"])
    # the polish loss: per metric, the median in each concurrency band (8 requests: 5-32; 64: above 32), averaged
    err = {m: {c: [abs(np.log(p[m] / float(r[m]))) for p, r in zip(preds, rows, strict=True) if r["concurrency"] == c]
               for c in ("8", "64")} for m in ("ttft_ms", "tpot_ms")}
    med = [np.mean([np.median(err[m]["8"]), np.median(err[m]["64"])]) for m in err]
    assert out["loss"] == pytest.approx(np.mean(med), rel=1e-9)
    assert out["loss"] != pytest.approx(np.mean([np.median(err[m]["8"] + err[m]["64"]) for m in err]), rel=1e-3)
    assert out["step_overhead_s"]["trtllm"] != out["step_overhead_s"]["vllm"]


def test_serving_fit_warm_starts_from_a_profile():
    from llm_codesign.measure import calibrate

    rows = [{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100", "num_gpus": "1", "backend": "vllm", "weight_dtype": "bf16",
             "kv_dtype": "bf16", "isl": "1024", "osl": "256", "concurrency": "8", "tp": "1", "ttft_ms": "50", "tpot_ms": "12"}]
    start = replace(calibration_for(get_gpu("h100")), step_overhead_s=(("vllm", 3.3e-3),), seq_overhead_s=(("vllm", 7e-6),))
    # no search rounds: what comes back is where it started, per engine, clipped to the bounds
    _, out = calibrate.fit_serving(rows, {"hopper": start}, rounds=0, start=start)
    assert out["step_overhead_s"]["vllm"] == pytest.approx(3.3e-3) and out["seq_overhead_s"]["vllm"] == pytest.approx(7e-6)
    _, cold = calibrate.fit_serving(rows, {"hopper": start}, rounds=0)
    assert cold["step_overhead_s"]["vllm"] == pytest.approx(2e-3)  # the documented starting value
