"""benchmarks/bench_chunk_budget.py: the default budget is the engine's, the searched grids hold it (so a
gain is never negative), and each best point states the budget it runs at."""
import importlib
from pathlib import Path

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.search import AUTO_BUDGETS
from llm_codesign.spec.engines import TRTLLM
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model

ROOT = Path(__file__).resolve().parents[1]


def test_searched_budget_never_loses_and_states_its_budget(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    cb = importlib.import_module("bench_chunk_budget")
    m, g = get_model("llama-3.1-70b"), get_gpu("h200")
    cal = calibration_for(g)
    assert TRTLLM.step_tokens(g) in AUTO_BUDGETS and set(AUTO_BUDGETS) <= set(cb.WIDE)
    # 8,192-token prompts under TTFT <= 2 s on 8 H200s: the cap binds at the throughput end
    pts = {k: cb.best(m, g, cal, 8, 8192, 1024, "trtllm", grid, 2000.0) for k, grid in (("default", ()), ("auto", AUTO_BUDGETS))}
    assert pts["default"]["budget"] == 8192 and pts["auto"]["budget"] in AUTO_BUDGETS
    assert pts["auto"]["tok_s_gpu"] >= pts["default"]["tok_s_gpu"] and max(p["ttft_ms"] for p in pts.values()) <= 2000.0
    row = {"default": pts["default"], "auto": pts["auto"]}
    assert cb.gain(row, "auto") >= 0.0 and cb.gain(row, "default") == 0.0
