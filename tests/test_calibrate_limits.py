"""calibrate says where a serving fit's values land on a limit of their range, what that means, and refuses (unless
forced) a fit that zeroed every host cost of an engine to absorb an error that is not host cost (newc7 #6)."""
from conftest import cli

from llm_codesign.measure import calibrate

# six H100 vLLM runs of Llama-3.1-8B (the newcomer's myruns.csv, typed from memory): TPOT over-predicted 21% on all six
# by the bundled profile, the gap growing with the batch
RUNS = """source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,ttft_ms,tpot_ms,output_tok_s_per_gpu,arrival
r1,meta-llama/Llama-3.1-8B-Instruct,h100,1,vllm,bf16,,1024,1024,1,1,21.0,6.6,150,closed_loop
r2,meta-llama/Llama-3.1-8B-Instruct,h100,1,vllm,bf16,,1024,1024,4,1,30.0,6.9,570,closed_loop
r3,meta-llama/Llama-3.1-8B-Instruct,h100,1,vllm,bf16,,1024,1024,16,1,45.0,7.8,2000,closed_loop
r4,meta-llama/Llama-3.1-8B-Instruct,h100,1,vllm,bf16,,1024,1024,64,1,90.0,11.2,5600,closed_loop
r5,meta-llama/Llama-3.1-8B-Instruct,h100,1,vllm,bf16,,1024,1024,128,1,150.0,15.5,8100,closed_loop
r6,meta-llama/Llama-3.1-8B-Instruct,h100,1,vllm,bf16,,2048,256,32,1,160.0,9.5,3000,closed_loop
"""


def test_a_fit_that_floors_every_host_cost_says_so_and_is_refused_unless_forced(tmp_path):
    path = tmp_path / "myruns.csv"
    path.write_text(RUNS)
    p = calibrate.fit_profile(serving=str(path), force=True)
    r = next(x for x in p.report if x["kind"] == "serving")
    # the three vLLM host costs the runs respond to all end on the floor of their ranges (SERVING_BOUNDS: step overhead
    # from 1e-5 s, eager launch and host cost per sequence from 0)
    assert r["fitted"] == ["step_overhead_s:vllm", "eager_launch_s:vllm", "seq_overhead_s:vllm"]
    assert r["on_limits"] == [("step_overhead_s:vllm", "lo"), ("eager_launch_s:vllm", "lo"), ("seq_overhead_s:vllm", "lo")]
    assert [r["values"][k] for k in r["fitted"]] == [1e-5, 0.0, 0.0]
    # said in the fitted values' units: 1e-5 s x 1e3 = 0.01 ms, 0 s x 1e6 = 0.0 us
    assert r["limits"] == [r["limits"][0]] and r["limits"][0].startswith(
        "every host cost fitted for vllm ended at the floor of its range (step overhead vllm 0.01 ms, eager launch vllm 0.0 us, host "
        "cost per running sequence vllm 0.0 us): its runs are faster than the kernels priced")
    assert "not host cost but in what a serving fit cannot move" in r["limits"][0] and "calibrate --kernels" in r["limits"][0]
    # the error left after the fit, per load band (2 runs each: c 1, 4 | 16, 32 | 64, 128): TPOT's grows past the smallest
    # batches, the sign of a per-token kernel cost no host cost can take back
    tpot = r["band_bias"]["tpot_ms"]
    assert [n for _, n in tpot.values()] == [2, 2, 2] and tpot["1-4"][0] < min(tpot["5-32"][0], tpot["33+"][0])
    assert "after the fit, the signed error by load: " in r["limits"][0]
    # the profile written says it in its header
    assert "\n# warning: every host cost fitted for vllm ended at the floor" in p.text
    # unforced, the fit is refused with it, after the starting profile's bias (the cause) and before nothing is written
    code, _, err = cli("calibrate", "--serving", str(path), "-o", str(tmp_path / "p.toml"))
    said = [x for x in err.splitlines() if not x.startswith("searching: ")]  # a slow search's progress lines (one each 5 s)
    assert code == 2 and len(said) == 1 and not (tmp_path / "p.toml").exists()
    assert "this one: default serving: every host cost fitted for vllm ended at the floor of its range" in err
    code, out, _ = cli("calibrate", "--serving", str(path), "-o", str(tmp_path / "p.toml"), "--force")
    assert code == 0 and "\nwarning: every host cost fitted for vllm ended at the floor of its range" in out


def test_a_single_value_on_a_limit_is_a_note_not_a_refusal():
    # one of two fitted SGLang costs on its floor (an overlap scheduler hides its host step): named, with what it means,
    # and not doubtful
    rep = {"fitted": ["step_overhead_s:sglang", "seq_overhead_s:sglang"], "on_limits": [("step_overhead_s:sglang", "lo")],
           "values": {"step_overhead_s:sglang": 1e-5, "seq_overhead_s:sglang": 3e-6}, "band_bias": {}}
    notes = calibrate.limit_notes(rep)
    assert notes == ["on a limit of its range, where the quantity may rest: step overhead sglang 0.01 ms (its floor); the runs would "
                     "take it further if they could, so what they ask beyond it lies in something the fit does not move"]
    assert calibrate.doubtful([{"family": "default", "kind": "serving", "median_ape": 5.0, "start_median_ape": 6.0,
                                "limits": notes, "converged": True}]) == []
    assert calibrate.limit_notes({"on_limits": [], "fitted": ["step_overhead_s:vllm"]}) == []


def test_a_fit_of_more_parameters_than_measurements_is_refused_unless_forced(tmp_path):
    # newc12 #3: one TensorRT-LLM run (TTFT 150 ms, TPOT 7.5 ms at 8 requests) fitted TensorRT-LLM's four host costs, two of
    # them on their floors, and the profile was written unasked. 2 measurements (its TTFT and its TPOT) for 4 unknowns: any of
    # many settings fits it as well; refused in one line naming the counts and --force, nothing written
    path, out = tmp_path / "one.csv", tmp_path / "cal.toml"
    path.write_text("source,model,gpu,num_gpus,backend,isl,osl,concurrency,tp,ttft_ms,tpot_ms\n"
                    "r2,llama-3.1-8b,h100,1,trtllm,1024,1024,8,1,150,7.5\n")
    code, _, err = cli("calibrate", "--serving", str(path), "-o", str(out))
    said = [x for x in err.splitlines() if not x.startswith("searching: ")]
    assert code == 2 and len(said) == 1 and not out.exists(), err
    assert ("this one: default serving: 4 parameters fitted on 2 measurements (each run's TTFT and TPOT, or tok/s/GPU where its "
            "TPOT is blank, count one each): more unknowns than measurements") in said[0]
    assert said[0].endswith(f"nothing written to {out} (--force writes it anyway)") and "median error on these runs" not in said[0]
    code, stdout, _ = cli("calibrate", "--serving", str(path), "-o", str(out), "--force")
    assert code == 0 and out.exists() and "\nwarning: 4 parameters fitted on 2 measurements" in stdout
    assert "\n# warning: 4 parameters fitted on 2 measurements" in out.read_text()


def test_measurements_count_a_runs_ttft_and_its_decode_rate():
    import numpy as np

    nan = np.nan
    # run 1: TTFT and TPOT (2); run 2: tok/s/GPU alone, its decode rate (1); run 3: TTFT and tok/s/GPU (2); run 4: TPOT and
    # tok/s/GPU, one decode rate (1); run 5: only tok/s/user, which the loss does not read (0): 6
    ys = {"ttft_ms": np.array([150, nan, 70, nan, nan]), "tpot_ms": np.array([7.5, nan, nan, 9.0, nan]),
          "output_tok_s_per_gpu": np.array([nan, 900, 1700, 1200, nan]), "output_tok_s_per_user": np.array([nan] * 4 + [80.0])}
    assert calibrate.measurements(ys) == 6
    rep = {"measurements": 6, "fitted": ["a"] * 6}
    assert calibrate.underdetermined(rep) == "" and calibrate.underdetermined({**rep, "fitted": ["a"] * 7}).startswith(
        "7 parameters fitted on 6 measurements")
