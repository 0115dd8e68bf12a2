"""calibrate's refusal names the cause of a doubtful serving fit (newcomer review 2026-12-06, finding #2): the starting
profile's signed bias per metric on the user's runs, and that no fitted parameter moves TTFT alone."""
import csv
from pathlib import Path

import numpy as np
import pytest

from llm_codesign.errors import InputError
from llm_codesign.measure import calibrate

SHIPPED = Path(calibrate.__file__).parents[1] / "data" / "measurements" / "serving_measured_blackwell_clean.csv"


def test_signed_bias_is_validates_signed_median_with_its_side_count():
    # TTFT: pred/meas - 1 = 100/300-1 = -66.7%, 50/200-1 = -75%, 120/100-1 = +20% -> median -66.7%, 2 of 3 below zero
    # TPOT: 9/10-1 = -10%, 11/10-1 = +10%, 10/10-1 = 0 -> median 0; sign(0) = 0, so 1 of 3 on its side (the exact one)
    # tok/s/GPU: no run measures it -> left out
    ys = {"ttft_ms": np.array([300.0, 200.0, 100.0]), "tpot_ms": np.array([10.0, 10.0, 10.0]),
          "output_tok_s_per_gpu": np.full(3, np.nan)}
    pred = np.array([[100.0, 50.0, 120.0], [9.0, 11.0, 10.0], [1.0, 1.0, 1.0]])
    b = calibrate.signed_bias(ys, pred)
    assert set(b) == {"ttft_ms", "tpot_ms"}
    assert b["ttft_ms"][0] == pytest.approx(-200 / 3, abs=1e-9) and b["ttft_ms"][1:] == (2, 3)
    assert b["tpot_ms"] == (pytest.approx(0.0, abs=1e-12), 1, 3)


def test_bias_cause_says_ttft_has_no_parameter_of_its_own_only_where_ttft_dominates():
    bias = {"ttft_ms": (-68.0, 6, 6), "tpot_ms": (-8.0, 5, 6)}
    said = calibrate.bias_cause(bias, ["step_overhead_s:vllm", "eager_launch_s:vllm"])
    assert said.startswith(calibrate.CAUSE + "TTFT under-predicted 68% on 6 of 6 runs, TPOT under-predicted 8% on 5 of 6 runs; "
                           "no fitted parameter moves TTFT alone")
    # TPOT's bias the larger: no TTFT advice; a fitted request overhead moves TTFT alone: none either
    assert "TTFT alone" not in calibrate.bias_cause({"ttft_ms": (5.0, 4, 6), "tpot_ms": (-20.0, 6, 6)}, [])
    assert "TTFT alone" not in calibrate.bias_cause(bias, ["ttft_overhead_s:vllm"])
    assert calibrate.bias_cause({}, []) is None and calibrate.bias_cause({"ttft_ms": (0.4, 2, 2)}, []) is None


def test_a_refusal_puts_the_cause_before_the_symptoms():
    cause = calibrate.CAUSE + "TTFT under-predicted 68% on 6 of 6 runs"
    with pytest.raises(InputError) as e:
        calibrate.refuse([], [cause, "default serving: a on the bound"], "p.toml", force=False)
    assert str(e.value) == (f"calibrate: the fit is refused: {cause}. A fit must be no worse than the starting profile, with no "
                            "parameter on a bound of its range, no more parameters than measurements and its search converged; this one: "
                            "default serving: a on the bound; "
                            "nothing written to p.toml (--force writes it anyway)")


def _ttft_x3(path: Path, *, blank_ttft: bool = False) -> str:
    """6 shipped vLLM Llama-3.1-70B B200 runs (ISL 1024) in a closed loop, their measured TTFT x3 (a harness whose
    TTFT carries what the model does not price), as a user would write them (docs/howto/calibrate.md)."""
    rows = [r for r in csv.DictReader(SHIPPED.open()) if r["backend"] == "vllm" and "Llama-3.1-70B" in r["model"] and r["isl"] == "1024"][:6]
    cols = ["source", "model", "gpu", "num_gpus", "backend", "weight_dtype", "isl", "osl", "concurrency", "tp", "ttft_ms", "tpot_ms", "arrival"]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i, r in enumerate(rows):
            ttft = "" if blank_ttft else f"{3 * float(r['ttft_ms']):.1f}"
            w.writerow([f"lab{i + 1}", *(r[c] for c in cols[1:10]), ttft, r["tpot_ms"], "closed_loop"])
    return str(path)


def test_ttft_biased_runs_are_refused_with_the_cause_and_fit_without_their_ttft(tmp_path):
    with pytest.raises(InputError) as e:
        calibrate.fit_profile(serving=_ttft_x3(tmp_path / "runs.csv"), output="p.toml")
    msg = str(e.value)
    # the bundled profile under-predicts every one of these TTFTs (by 82% in the median, measured 2026-12-06) and TPOT by ~11%
    assert "\n" not in msg and msg.startswith("calibrate: the fit is refused: " + calibrate.CAUSE + "TTFT under-predicted ")
    ttft = int(msg.split("TTFT under-predicted ")[1].split("%")[0])
    assert 70 <= ttft <= 90 and "% on 6 of 6 runs, TPOT under-predicted " in msg and "no fitted parameter moves TTFT alone" in msg
    assert msg.index("TTFT alone") < msg.index("on the bound of its range")  # the cause before the symptom
    # the advice works: the same runs with TTFT blank fit TPOT to better than the starting profile's median
    prof = calibrate.fit_profile(serving=_ttft_x3(tmp_path / "tpot.csv", blank_ttft=True))
    assert prof.checks["after"]["tpot_ms"]["median_ape"] < prof.checks["before"]["tpot_ms"]["median_ape"]
