"""benchmarks/ttft_monotone_sweep.py: only the project's InputError is a refusal; any other exception is a failure,
counted, named and the run's exit status 1."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np

from llm_codesign.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ttft_monotone_sweep", ROOT / "benchmarks" / "ttft_monotone_sweep.py")
sweep_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sweep_mod)


def _fake(monkeypatch):
    """One model, one GPU, two plans, one length: TP8 refused by InputError, TP2 a bug (KeyError), the rest priced flat."""
    monkeypatch.setattr(sweep_mod, "MODELS", ("qwen3-30b-a3b",))
    monkeypatch.setattr(sweep_mod, "LENGTHS", ((1024.0, 1024.0),))
    monkeypatch.setattr(sweep_mod, "get_gpu", lambda name: name)
    monkeypatch.setattr(sweep_mod, "calibration_for", lambda g: None)
    monkeypatch.setattr(sweep_mod, "Serving", lambda **kw: kw)
    monkeypatch.setattr(sweep_mod, "get_engine", lambda en: en)

    def evaluate(m, s, **kw):
        tp = int(s["plan"].tp[0])
        if tp == 8 and int(s["plan"].ep[0]) == 1 and int(s["plan"].adp[0]) == 1:
            raise InputError("plan", "TP8", "a plan this model runs")
        if tp == 2:
            raise KeyError("moe_tile")
        return {"fits": np.ones(len(sweep_mod.C), bool), "ttft_s": np.full(len(sweep_mod.C), 0.1)}

    monkeypatch.setattr(sweep_mod, "evaluate", evaluate)


def test_only_input_error_is_a_refusal(monkeypatch):
    _fake(monkeypatch)
    cases, falls, refused, failures = sweep_mod.sweep(["trtllm"], "waves")
    # 3 GPUs x 5 plans x 1 engine x 1 length = 15 combinations: TP8 refused on each GPU (3), TP2 failed on each (3),
    # TP8EP8, ADP8EP8 and TP4EP4 priced (9 cases), flat TTFT: no fall
    assert (cases, len(falls), refused, len(failures)) == (9, 0, 3, 3)
    assert failures[0] == "qwen3-30b-a3b b200 TP2 trtllm 1024/1024: KeyError: 'moe_tile'"


def test_a_failure_exits_non_zero(tmp_path):
    # the script run as the CLI runs it, its evaluate replaced by one that raises a bug on every combination
    runner = tmp_path / "run.py"
    runner.write_text(
        "import runpy, sys\n"
        "import llm_codesign.serve.aggregated as a\n"
        "def boom(*a_, **k): raise ZeroDivisionError('bug')\n"
        "a.evaluate = boom\n"
        f"sys.argv = ['x', 'trtllm']\n"
        f"runpy.run_path({str(ROOT / 'benchmarks' / 'ttft_monotone_sweep.py')!r}, run_name='__main__')\n")
    r = subprocess.run([sys.executable, str(runner)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "0 cases, 0 with TTFT falling (0 combinations refused, 405 failed)" in r.stdout  # 9 models x 3 GPUs x 5 plans x 3 lengths
    assert "ZeroDivisionError: bug" in r.stderr
