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


@pytest.mark.parametrize("args,line", [
    (["--isl", "0"], "argument --isl: '0' is not valid; a positive integer"),
    (["--conc", "4", "0"], "argument --conc: '0' is not valid; a positive integer"),
    (["--rounds", "-1"], "argument --rounds: '-1' is not valid; a positive integer"),
    (["--pf-scale", "nan"], "argument --pf-scale: 'nan' is not valid; a finite number above 0"),
    (["--pf-scale", "0"], "argument --pf-scale: '0' is not valid; a finite number above 0"),
    (["--rules", "tgi"], "argument --rules: invalid choice: 'tgi'"),
])
def test_bad_arguments_exit_2_naming_the_argument(sim, monkeypatch, capsys, args, line):
    monkeypatch.setattr("sys.argv", ["rebunch_sim.py", *args])
    with pytest.raises(SystemExit) as e:
        sim.main()
    assert e.value.code == 2 and line in capsys.readouterr().err


def test_no_clean_sample_row_is_one_line(sim, monkeypatch, capsys):
    # was KeyError 'row'
    monkeypatch.setattr("sys.argv", ["rebunch_sim.py", "--isl", "1000"])
    with pytest.raises(SystemExit) as e:
        sim.main()
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert e.value.code == 2 and len(err) == 1 and "no clean-sample row is deepseek-r1 b200 fp8 TP8 EP1 1000/1024" in err[0]


def test_the_models_cohort_is_the_whole_prompts_one_budget_takes(sim):
    # a step's budget ISL + 1500 (sglang.rule:5) takes floor((ISL + 1500) / ISL) whole prompts: 9,692 / 8,192 -> 1,
    # 2,524 / 1,024 -> 2, 2,000 / 500 -> 4, 3,000 / 1,500 -> 2, 3,001 / 1,501 -> 1 (was 2 at every ISL up to 1,500)
    assert [sim.model_cohort(isl) for isl in (8192, 1024, 500, 1500, 1501)] == [1.0, 2.0, 4.0, 2.0, 1.0]
