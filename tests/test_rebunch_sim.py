"""benchmarks/rebunch_sim.py: the harness and engine admission rules as a discrete-event loop, on hand-derived cases."""
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

T_DEC = lambda b: 0.010  # noqa: E731  (s, any batch)
T_PF = lambda n: 0.04 + 1e-5 * n  # noqa: E731  (s: 0.12192 for one 8,192-token prompt)


@pytest.fixture()
def sim(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("rebunch_sim")


def test_prefill_first_without_speculation_keeps_the_wave_in_lockstep(sim):
    # 4 slots of 8k prompts, no draft accepted: the burst's 4 prompts run in 4 prefill-only steps (one fits
    # max_prefill_tokens = ISL + 1500), the 4 decode together, finish on one step and re-arrive together 2 ms later on an
    # idle engine: every request waits 2 ms + i x 0.12192 s, i = 1..4, mean 0.002 + 2.5 x 0.12192 = 0.3068 s, cohort 4
    s = sim.simulate("sglang-eagle", C=4, isl=8192, osl=8, t_dec=T_DEC, t_pf=T_PF, accept=0.0, rounds=3)
    assert s["q"] == pytest.approx(4.0)
    assert s["ttft"] == pytest.approx(0.3068, abs=1e-9)


def test_mixed_admission_keeps_cohorts_of_one(sim):
    # SGLang's mixed chunk and TensorRT-LLM's budget take one 8k prompt a step beside the decodes: cohorts of 1 whatever
    # the concurrency; the two rules admit alike at this shape
    a, b = (sim.simulate(r, C=8, isl=8192, osl=16, t_dec=T_DEC, t_pf=T_PF, rounds=3) for r in ("sglang-mixed", "trtllm"))
    assert a["q"] == pytest.approx(1.0) and b["q"] == pytest.approx(1.0)
    assert a["ttft"] == pytest.approx(b["ttft"])
