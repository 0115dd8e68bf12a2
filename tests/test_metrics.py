"""serve/metrics.py: evaluate() is the serving model's one entry: array-valued, SI, offline = the best load that fits."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.metrics import BATCH_GRID, evaluate
from llm_codesign.spec.plan import Workload, deployment
from llm_codesign.spec.registry import get_model


def test_offline_is_the_grid_point_that_fits_with_the_most_throughput():
    m = get_model("llama-3.1-70b")
    dep = deployment(m, gpu="h200", tp=8, weight_dtype="fp8", kv_dtype="fp8")
    w = Workload(isl=1024, osl=1024)
    grid = evaluate(m, dep, w, concurrency=BATCH_GRID, offline=True)  # priced as the offline benchmark runs, as `best` is
    best = evaluate(m, dep, w)
    fit = grid.fits
    assert best.output_tok_s_per_gpu.item() == pytest.approx(grid.output_tok_s_per_gpu[fit].max(), rel=1e-12)
    assert best.concurrency.item() <= grid.max_concurrency[0]


def test_metrics_are_consistent_in_si_units():
    m = get_model("llama-3.1-8b")
    dep = deployment(m, gpu="h100")
    r = evaluate(m, dep, Workload(isl=2048, osl=256), calibration=calibration_for(dep.gpu), concurrency=np.array([1, 16]))
    assert np.allclose(r.tok_s_per_user, 1.0 / r.tpot_s)
    # a request's life: TTFT + (OSL - 1) x TPOT; per GPU, concurrency x OSL tokens over it (one GPU, all admitted)
    life = r.ttft_s + 255 * r.tpot_s
    assert np.allclose(r.output_tok_s_per_gpu, r.concurrency * 256 / life, rtol=0.05)
    assert np.all(r.weights_bytes == pytest.approx(2 * m.total_params, rel=1e-3))
    d = r.to_dict()
    assert d["concurrency"] == [1, 16] and isinstance(d["fits"][0], bool)
