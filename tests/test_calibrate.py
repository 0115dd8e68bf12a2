"""measure/calibrate.py: the serving fit re-prices one engine at a time without changing its loss, and warm-starts from a profile."""
from dataclasses import replace
from pathlib import Path

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
    monkeypatch.setattr(calibrate, "SERVING_BOUNDS", tuple(b for b in calibrate.SERVING_BOUNDS if b.name in keep))
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


# ---- issue 36: calibrate writes no profile from a fit with nothing to fit, shows its progress, fits fast

SERVING_HEADER = ("source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,pp,ep,moe_tp,attention_dp,"
                  "spec_method,spec_draft_len,spec_acceptance,ttft_ms,tpot_ms,output_tok_s_per_gpu,output_tok_s_per_user")
LLAMA_ROW = "a,llama-3.1-8b,h100,1,vllm,bf16,bf16,1024,1024,8,1,1,1,1,1,,,,{ttft},{tpot},{gpu_tps},{user_tps}"
LLAMA_ROWS = [{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100", "num_gpus": "1", "backend": be, "weight_dtype": "bf16", "kv_dtype": "bf16",
               "isl": "1024", "osl": "256", "concurrency": str(c), "tp": "1", "ttft_ms": str(t), "tpot_ms": str(d)}
              for be, c, t, d in (("trtllm", 8, 60, 9), ("trtllm", 64, 250, 16), ("vllm", 8, 45, 11), ("vllm", 64, 300, 21))]


def _cli(*args):
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}") from r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("lines,said", [
    # every row names a model the registry lacks (the fit printed "error inf%" and wrote its starting values)
    ([LLAMA_ROW.replace("llama-3.1-8b", "no-such-model").format(ttft=50, tpot=8, gpu_tps="", user_tps="")],
     "none of its 1 rows is (model: 'no-such-model' is not valid"),
    # a measurement beyond the range a row may hold
    ([LLAMA_ROW.format(ttft="1e308", tpot="1e308", gpu_tps="", user_tps="")], "none of its 1 rows is (line 2 ttft_ms: '1e308' is not valid"),
    # a ragged line: four fields under a header of 22 (was an AttributeError)
    (["a,llama-3.1-8b,h100,1"], "none of its 1 rows is (line 2: 4 fields where the header has 22 (no backend))"),
    # priced, but measuring only what the fit's loss does not read
    ([LLAMA_ROW.format(ttft="", tpot="", gpu_tps="", user_tps=80)], "measures ttft_ms, tpot_ms, output_tok_s_per_gpu (what the serving fit "
     "reads); none of its 1 rows does (1 priced rows measure none of them)"),
    # a throughput no prediction can be compared with (their ratio overflowed: the fit's error was inf%): below the least
    # a measurement may hold, refused as the file is read
    ([LLAMA_ROW.format(ttft=50, tpot=8, gpu_tps="1e-306", user_tps="")],
     "none of its 1 rows is (line 2 output_tok_s_per_gpu: '1e-306' is not valid; 0 or empty (not measured), or at least 0.001)"),
], ids=["unmodelled-models", "1e308", "ragged", "no-metric-the-fit-reads", "ratio-overflows"])
def test_calibrate_serving_refuses_rows_it_cannot_fit(tmp_path, lines, said):
    s, out = tmp_path / "s.csv", tmp_path / "p.toml"
    s.write_text("\n".join([SERVING_HEADER, *lines]) + "\n")
    for force in ((), ("--force",)):
        code, stdout, err = _cli("calibrate", "--serving", str(s), "-o", str(out), *force)
        assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith(f"error: serving: '{s}' is not valid; "), (code, stdout, err)
        assert said in err and not out.exists()


def test_serving_fit_with_nothing_to_fit_is_an_error():
    from llm_codesign.errors import InputError
    from llm_codesign.measure import calibrate

    rows = [{**r, "model": "no-such-model"} for r in LLAMA_ROWS]
    with pytest.raises(InputError, match=r"^serving: '4 rows' is not valid; rows the model can price that measure ttft_ms, tpot_ms"):
        calibrate.fit_serving(rows, {"hopper": calibration_for(get_gpu("h100"))}, rounds=1)


def test_an_unconverged_serving_search_is_refused_unless_forced(tmp_path, monkeypatch):
    from llm_codesign.measure import calibrate

    # one polish cycle, and a gain no cycle can fall under: the search stops still gaining
    monkeypatch.setattr(calibrate, "POLISH_CYCLES", 1)
    monkeypatch.setattr(calibrate, "POLISH_GAIN", -1.0)
    rep: dict = {}
    calibrate.fit_serving(LLAMA_ROWS, {"hopper": calibration_for(get_gpu("h100"))}, rounds=1, report=rep)
    assert rep["converged"] is False
    assert calibrate.doubtful([rep])[-1].startswith("default serving: the search had not converged after 1 polish cycles (the last gained ")
    # converged and off its bounds, nothing else doubtful: fit_serving without hold moves all 13 parameters on these 4 runs' 8
    # figures (calibrate's fit holds what no run responds to), so the count is set to them here
    assert calibrate.doubtful([{**rep, "converged": True, "at_bounds": [], "measurements": len(rep["fitted"])}]) == []
    s, out = tmp_path / "s.csv", tmp_path / "p.toml"
    # about 10% slower than the bundled profile prices them (185 ms / 8.2 ms at 8 requests, 240 ms / 13.9 ms at 64, issue
    # 39's cohorts): the overheads move inward of their bounds
    s.write_text("\n".join([SERVING_HEADER, LLAMA_ROW.format(ttft=203, tpot=9, gpu_tps="", user_tps=""),
                            LLAMA_ROW.replace(",8,1,1,", ",64,1,1,").format(ttft=263, tpot=15.3, gpu_tps="", user_tps="")]) + "\n")
    monkeypatch.setattr(calibrate, "SERVING_BOUNDS", tuple(b for b in calibrate.SERVING_BOUNDS if b[0] in ("step_overhead_s", "ttft_overhead_s")))
    code, _, err = _cli("calibrate", "--serving", str(s), "-o", str(out))
    assert code == 2 and len(err.splitlines()) == 1, err
    # the cause first (calfix: the starting profile's signed median error per metric on the runs), then the symptom
    assert err.startswith("error: calibrate: the fit is refused: the starting profile's median error on these runs: TTFT under-predicted ")
    assert ("A fit must be no worse than the starting profile, with no parameter on a bound of its range, no more parameters than "
            "measurements and its search converged; this one: "
            "default serving: the search had not converged after 1 polish cycles") in err
    assert err.rstrip().endswith(f"; nothing written to {out} (--force writes it anyway)")
    assert not out.exists()
    code, _, err = _cli("calibrate", "--serving", str(s), "-o", str(out), "--force")
    assert code == 0 and out.exists(), err


def test_serving_fit_reuses_kernel_prices_without_changing_the_fit(monkeypatch):
    import contextlib

    from llm_codesign.measure import calibrate
    from llm_codesign.serve import aggregated

    priced = []
    forward_ops = aggregated.forward_ops
    monkeypatch.setattr(aggregated, "forward_ops", lambda *a, **k: priced.append(1) or forward_ops(*a, **k))
    fams = {"hopper": calibration_for(get_gpu("h100"))}
    _, reused = calibrate.fit_serving(LLAMA_ROWS, fams, rounds=2)
    n_reused = len(priced)
    # every step priced afresh, as before: the same fit to the last bit
    monkeypatch.setattr(aggregated, "reuse_step_kernels", contextlib.nullcontext)
    priced.clear()
    _, fresh = calibrate.fit_serving(LLAMA_ROWS, fams, rounds=2)
    assert reused == fresh
    # host costs change no kernel: of the ten parameters, the two collective latencies (and the steps the prefill
    # queue moves) re-price operators; the 4 rows x 3 steps of the others are priced once
    assert n_reused * 4 < len(priced)


def test_kernel_fit_reads_its_rows_once(monkeypatch):
    from llm_codesign.measure import calibrate, kernel_tables

    rows = [{"system": "h100_sxm", "gemm_dtype": "bfloat16", "m": str(m), "n": "4096", "k": "4096", "latency_ms": f"{2 * m * 4096 * 4096 / 6e14 * 1e3 + 0.005:.6f}"}
            for m in (16, 256, 1024, 4096)]
    parsed = []
    col = kernel_tables._col
    monkeypatch.setattr(kernel_tables, "_col", lambda *a, **k: parsed.append(a[1]) or col(*a, **k))
    trials = []
    cal, rep = calibrate.fit_kind("gemm", rows, calibration_for(get_gpu("h100")), "hopper", progress=trials.append)
    # m, n and k parsed once for the whole fit, not once for each of its calibrations
    assert sorted(parsed) == ["k", "m", "n"]
    assert trials == list(range(1, calibrate.kind_trials("gemm", rows) + 1)) and len(trials) == 2 * 6 + 4 * 6 * 6
    assert rep["rows"] == 4 and rep["median_ape"] < rep["start_median_ape"]


def test_fits_report_their_progress():
    from llm_codesign.measure import calibrate

    seen = []
    calibrate.fit_serving(LLAMA_ROWS, {"hopper": calibration_for(get_gpu("h100"))}, rounds=1, progress=lambda d, t: seen.append((d, t)))
    # (2 smooth + 4 polish cycles) x 1 round x (2 x 8 per-engine - 4 documented (TensorRT-LLM's and vLLM's waits and
    # request costs) + the scale-out latency; the one-shot all-reduce's latency is measured, not fitted) parameters x 4
    # steps; the polish cycles it did not need are counted done at the end
    total = 6 * 1 * 13 * 4
    assert calibrate.serving_trials(LLAMA_ROWS, 1) == total
    assert seen[:3] == [(1, total), (2, total), (3, total)] and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_calibrate_prints_a_progress_line_every_five_seconds_off_a_terminal(tmp_path, monkeypatch):
    import itertools
    import time

    clock = itertools.count(0.0, 2.0)  # two seconds pass between reports
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    k, out = tmp_path / "g.csv", tmp_path / "p.toml"
    k.write_text("system,trtllm_version,gemm_dtype,m,n,k,latency_ms\n" + "".join(
        f"h100_sxm,x,bfloat16,{m},4096,4096,{2 * m * 4096 * 4096 / 6e14 * 1e3 + 0.005:.6f}\n" for m in (16, 256, 1024, 4096)))
    code, stdout, err = _cli("calibrate", "--kernels", str(k), "-o", str(out), "--force")
    lines = err.splitlines()
    total = 2 * 6 + 4 * 6 * 6  # gemm_max_split_k's grid twice, then six rounds of four steps over the six BF16 parameters
    assert code == 0 and "wrote" in stdout, err
    # the clock starts at the first report; then a line at every third (6 s on, past 5 s): 4, 7, ..., 154
    assert lines == [f"searching: {d} of {total} ({100 * d / total:.0f}%)" for d in range(4, total + 1, 3)]
    assert lines[0] == "searching: 4 of 156 (3%)"


def test_serving_fit_leaves_a_mechanism_an_engine_lacks_at_zero():
    from llm_codesign.measure import calibrate

    # SGLang and ATOM never hold a request under attention DP (Engine.holds_adp_requests): their adp_wait_steps is
    # a structural zero, not searched (so never reported on the search's lower bound); TensorRT-LLM's is searched
    assert calibrate.STRUCTURAL_ZEROS == {("adp_wait_steps", "sglang"), ("adp_wait_steps", "atom")}
    rows = [{"model": "meta-llama/Llama-3.1-8B", "gpu": "h100", "num_gpus": "1", "backend": be, "weight_dtype": "bf16",
             "kv_dtype": "bf16", "isl": "1024", "osl": "256", "concurrency": "8", "tp": "1", "ttft_ms": "50", "tpot_ms": "12"}
            for be in ("sglang", "trtllm")]
    _, out = calibrate.fit_serving(rows, {"hopper": calibration_for(get_gpu("h100"))}, rounds=0)
    assert set(out["adp_wait_steps"]) == {"trtllm"}


def test_documented_serving_values_of_vllm_and_atom_are_their_sources():
    from llm_codesign.cost.calibration import documented
    from llm_codesign.spec.engines import get_engine

    # an engine absent from a fit's campaigns is priced on default.toml's values (crossval_campaigns "documented values");
    # vLLM's and ATOM's as default.toml cites them, not the 4 ms step and 20 ms request they had without a source:
    # a one-step host lead (vLLM's async scheduling, ATOM's deferred output) leaves 0.16 ms between decode steps
    # (vLLM PR #11133: 150-170 us) and no per-sequence cost, one step queued ahead of a new request, the API server ~3 ms
    # (2.2 us a prompt token at 1,024 tokens, under 1 ms of JSON), an eager launch the driver's 3 us (ATOM's whole
    # prefill) or Inductor's launcher's 8 us (vLLM past its graphs: its compiled model runs without them), with no spread
    # over ranks, and neither holds requests under attention DP. Both wait 2 steps in a closed loop: the running step
    # whole (the arrival's phase, 1) and the one queued ahead (vLLM's batch queue, ATOM's deferred output) while another
    # request keeps the loop running; a burst's wave lands on an idle engine: none (docs/modelling-notes.md#wait-arrival-phase)
    for engine, family, wait, eager, phase in (("vllm", "blackwell", 1.0, 8.0e-6, 1.0), ("atom", "cdna4", 1.0, 3.0e-6, 1.0)):
        costs = get_engine(engine).costs(documented(family))
        assert (costs.step_overhead, costs.seq_overhead, costs.ttft_overhead) == (0.16e-3, 0.0, 3.0e-3), engine
        assert (costs.ttft_wait_steps, costs.eager_launch, costs.eager_skew, costs.queue_fraction) == (wait, eager, 0.0, 0.0)
        assert costs.wait_steps(np.array([1.0, 8.0]), np.array([64.0, 64.0])).tolist() == [2.0, 2.0], engine
        assert costs.wait_steps(np.array([1.0, 8.0]), np.array([64.0, 64.0]), "burst").tolist() == [0.0, 0.0], engine
        assert costs.wait_steps(np.array([1.0]), np.array([1.0])).tolist() == [1.0], engine  # alone: the phase only
        assert (costs.phase_steps("closed_loop"), costs.phase_steps("waves"), costs.phase_steps("burst")) == (phase, phase, 0.0)


def test_serving_fit_keeps_atoms_eager_launch_at_its_documented_value():
    import tomllib
    from importlib import resources

    from llm_codesign.cost.calibration import documented
    from llm_codesign.measure import calibrate

    # the MI355X runs cannot place ATOM's host cost per eager launch (default.toml: the driver's 3 us dispatch) nor its
    # spread over ranks (none): never searched, so the profile keeps them and the fit reports neither; ATOM's other host
    # costs are searched
    mi355x = get_gpu("mi355x")
    rows = [{"model": "meta-llama/Llama-3.1-8B", "gpu": "mi355x", "num_gpus": "1", "backend": "atom", "weight_dtype": "bf16",
             "kv_dtype": "bf16", "isl": "1024", "osl": "256", "concurrency": "8", "tp": "1", "ttft_ms": "50", "tpot_ms": "12"}]
    start = replace(calibration_for(mi355x), eager_launch_s=(("atom", 4e-6),))
    fams, out = calibrate.fit_serving(rows, {"cdna4": start}, rounds=0)
    assert "atom" not in out["eager_launch_s"] and "atom" not in out["eager_skew_s"] and "atom" in out["step_overhead_s"]
    assert dict(fams["cdna4"].eager_launch_s)["atom"] == 4e-6 and dict(fams["cdna4"].eager_skew_s)["atom"] == 0.0
    # the bundled profile: default.toml's value, which fitted.toml does not override
    fitted = tomllib.loads(resources.files("llm_codesign").joinpath("data/calibration/fitted.toml").read_text())["default"]
    assert "atom" not in fitted["eager_launch_s"] and "atom" not in fitted["eager_skew_s"]
    assert dict(calibration_for(mi355x).eager_launch_s)["atom"] == dict(documented("cdna4").eager_launch_s)["atom"] == 3e-6
    assert dict(calibration_for(mi355x).eager_skew_s)["atom"] == 0.0


def test_calibrate_serving_lists_only_the_values_it_fitted(tmp_path, monkeypatch):
    import functools

    from llm_codesign.measure import calibrate

    # an ATOM-only file: its eager launch and their spread are documented, not fitted, so the summary names neither
    # (it printed "eager launch ; its spread over a stage's ranks ;")
    monkeypatch.setattr(calibrate, "fit_serving", functools.partial(calibrate.fit_serving, rounds=0))
    s = tmp_path / "s.csv"
    s.write_text("model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,ttft_ms,tpot_ms\n"
                 "meta-llama/Llama-3.1-8B,mi355x,1,atom,bf16,bf16,1024,256,8,1,50,12\n")
    code, stdout, err = _cli("calibrate", "--serving", str(s), "-o", str(tmp_path / "p.toml"), "--force")
    line = next(x for x in stdout.splitlines() if x.startswith("serving: "))
    # ATOM's wait is held at its documented 1.5 since ba3a87f (measure.calibrate.DOCUMENTED), so the summary no longer lists it
    assert code == 0 and line.startswith("serving: step overhead atom ") and "wait steps" not in line, err
    assert "eager launch" not in line and "spread" not in line and " ; " not in line
    # no search (rounds 0): the search's starts, the re-bunching share no row responds to at its documented 0, the wait
    # polished to 1.00 step (the front end's work hides only under the running step's rest, so the row responds to the
    # rest of the wait: it stood at its documented 1.5 while the work covered all of it) and the one scale-out latency.
    # ba3a87f holds ATOM's wait at its documented 1.5 (DOCUMENTED), so "wait steps atom 1.00" left the list; 14086fe holds its
    # request cost at its documented 3 ms too, so "request overhead atom 20.0 ms" left it
    # Since fixcal the search starts from the bundled fit (fitted.toml [default]: ATOM's step 2.14105 ms, its host cost per
    # sequence 0.362 us), and what no row responds to is kept there and listed apart: one single-GPU run crosses no
    # scale-up domain (scale-out), and this row's prediction does not move with the waves' re-bunching share
    assert line == "serving: step overhead atom 2.14 ms; host cost per running sequence atom 0.4 us"
    kept = next(x for x in stdout.splitlines() if x.startswith("fitted: "))
    assert kept.startswith("fitted: step_overhead_s:atom, seq_overhead_s:atom; kept at the bundled fit's values (no run responds to them): ")
    assert "scale_out_latency_s" in kept and "prefill_queue_fraction:atom" in kept


def test_serving_parameters_in_words():
    from llm_codesign.measure.calibrate import serving_words

    # one wording for the fitted values calibrate lists and the ones its refusal names on a bound
    assert serving_words("ttft_overhead_s", {"sglang": 1e-4, "trtllm": 0.02}) == "request overhead sglang 0.1 ms, trtllm 20.0 ms"
    assert serving_words("scale_out_latency_s", 2.7e-6) == "scale-out latency per level 2.7 us"


def test_calibrate_keeps_the_start_profiles_values_it_did_not_fit(tmp_path, monkeypatch):
    import functools

    from llm_codesign.measure import calibrate

    # ATOM's eager launch is documented, not fitted (3 us bundled): a start profile's 4 us prices the fit and must be
    # the profile's value, not dropped to read back as the bundled 3 us (so must vLLM's step overhead, an engine the file
    # does not run)
    monkeypatch.setattr(calibrate, "fit_serving", functools.partial(calibrate.fit_serving, rounds=0))
    s, start, out = tmp_path / "s.csv", tmp_path / "start.toml", tmp_path / "p.toml"
    s.write_text("model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,ttft_ms,tpot_ms\n"
                 "meta-llama/Llama-3.1-8B,mi355x,1,atom,bf16,bf16,1024,256,8,1,50,12\n")
    # (and, since fixcal4, a value the start profile scoped to one family keeps that scope: H100s 11.1 ms, B200s 12.3)
    start.write_text("[default.eager_launch_s]\natom = 4e-06\n[default.step_overhead_s]\nvllm = 0.0123\n"
                     "[hopper.step_overhead_s]\nvllm = 0.0111\n")
    code, _, err = _cli("calibrate", "--serving", str(s), "--calibration", str(start), "-o", str(out), "--force")
    assert code == 0, err
    cal = calibration_for(get_gpu("mi355x"), str(out))
    assert dict(cal.eager_launch_s)["atom"] == 4e-06 and dict(cal.step_overhead_s)["vllm"] == 0.0123
    assert calibration_for(get_gpu("h100"), str(out)).step_overhead("vllm") == 0.0111
    assert calibration_for(get_gpu("b200"), str(out)).step_overhead("vllm") == 0.0123


def test_serving_search_reaches_a_limit_of_none():
    from llm_codesign.measure import calibrate

    # a fraction from 0.1 whose loss falls to its natural limit 0 (prefill_queue_fraction's "lo"), searched in fit_serving's
    # cycles (log steps from 1, 0.5, 0.5, each halved over its rounds): log steps alone end at 0.1 x e^-(3 + 1.5 + 1.5) > 0;
    # a step landing under a thousandth of the range tries 0 itself, and lands on it
    state, best = {"x": [0.1, 0.0, 1.0]}, 0.1
    for step in (1.0, 0.5, 0.5):
        best, kept = calibrate.descend(state, lambda key: (state[key][0], state[key][0]), best, step, rounds=8)
    assert state["x"][0] == 0.0 and best == 0.0 and kept == 0.0
    # from 0 the search steps back in from 0.05 of the range: adp_wait_steps (0-60) to an optimum at 20 iterations, a
    # fraction to one at 0.01 (above the snap at 0.001, so not pulled to 0)
    for hi, opt in ((60.0, 20.0), (1.0, 0.01)):
        state = {"x": [0.0, 0.0, hi]}
        best, _ = calibrate.descend(state, lambda key, opt=opt, state=state: (abs(np.log((state[key][0] + 1e-12) / opt)), None), np.inf, 1.0, rounds=12)
        assert state["x"][0] == pytest.approx(opt, rel=0.02)
    # a limit above 0 (seq_overhead_s's 1e-8 s) is reached by clipping, as before
    assert calibrate.moved(2e-8, np.exp(-1.0), 1e-8, 1e-4) == 1e-8
    assert calibrate.moved(0.0009, np.exp(0.5), 0.0, 1.0) == pytest.approx(0.0009 * np.exp(0.5))
    assert calibrate.moved(0.0015, np.exp(-0.5), 0.0, 1.0) == 0.0
    assert calibrate.moved(0.0, np.exp(-0.5), 0.0, 60.0) == pytest.approx(3 * np.exp(-0.5))
    # a step up from under the snap (a start profile's old 1e-8 floor) moves up, and 0 is priced once a pass, not twice
    assert calibrate.moved(1e-8, np.exp(1.0), 0.0, 1e-4) == pytest.approx(1e-8 * np.exp(1.0))
    priced = []
    state = {"x": [1e-8, 0.0, 1e-4]}
    calibrate.descend(state, lambda key: (priced.append(state[key][0]) or 1.0, None), 0.0, 1.0, rounds=1)
    assert priced == [0.0, pytest.approx(1e-8 * np.exp(0.5)), pytest.approx(1e-8 * np.exp(1.0))]


def test_serving_search_reaches_every_natural_floor():
    from llm_codesign.measure import calibrate

    # each quantity whose lower bound is its natural limit, from its start, in fit_serving's cycles, on a loss that falls
    # toward the bound: it lands on the bound, and the bound is none (0) for every one but the host step, whose 10 us stands
    # for SGLang's hidden host work (the per-sequence cost and the eager launch's rank spread had 1e-8 standing for 0)
    floors = {}
    for name, start, lo, hi, *_ in calibrate.SERVING_BOUNDS:
        if (name, "lo") in calibrate.SERVING_NATURAL_LIMITS:
            state, best = {name: [start, lo, hi]}, start / hi
            for step in (1.0, 0.5, 0.5, 0.5, 0.5):
                best, _ = calibrate.descend(state, lambda key, state=state, hi=hi: (state[key][0] / hi, None), best, step, rounds=8)
            floors[name] = state[name][0]
    assert floors == {"prefill_queue_fraction": 0.0, "eager_skew_s": 0.0, "adp_wait_steps": 0.0, "seq_overhead_s": 0.0,
                      "eager_launch_s": 0.0, "step_overhead_s": 1e-5}


def test_kernel_fit_refits_the_engines_own_all_reduce_only_from_rows_that_run_it():
    """`calibrate --kernels` fits the custom all-reduce's five (PARAMS["collectives"], the ranges default.toml states and
    benchmarks/fit_hopper_allreduce.py reads) on the per-engine comm table's CUDA-graph rows, the barrier only where vLLM's
    or SGLang's rows (two barriers a call) are among them; NCCL's own rows inform none of them."""
    from llm_codesign.measure import calibrate
    from llm_codesign.measure.kernel_tables import own_ar_mode, read_csv

    own = ["custom_ar_latency_s", "custom_ar_twoshot_latency_s", "custom_ar_bw_eff", "custom_ar_barrier_s", "custom_ar_peer_s"]
    assert {p: calibrate.PARAMS["collectives"][p] for p in own} == {
        "custom_ar_latency_s": (1e-6, 15e-6), "custom_ar_twoshot_latency_s": (3e-6, 20e-6), "custom_ar_bw_eff": (0.3, 0.9),
        "custom_ar_barrier_s": (0.5e-6, 1.5e-6), "custom_ar_peer_s": (0.0, 0.5e-6)}
    rows = read_csv("hopper/comm")[1]
    fitted = calibrate._fitted
    nccl_only = calibrate.PARAMS["collectives"].keys() - set(own)
    assert fitted([r for r in rows if own_ar_mode(r) is None], calibrate.PARAMS["collectives"]) == [p for p in calibrate.PARAMS["collectives"]
                                                                                                   if p in nccl_only]
    assert fitted([r for r in rows if own_ar_mode(r) == "graph"], calibrate.PARAMS["collectives"])[-5:] == own
    trt = [r for r in rows if own_ar_mode(r) == "graph" and r["framework"].strip().lower() == "trtllm"]
    assert fitted(trt, calibrate.PARAMS["collectives"])[-4:] == own[:3] + own[4:] and "custom_ar_barrier_s" not in fitted(trt, calibrate.PARAMS["collectives"])
    # the cost per further peer is priced on the peers past the second (cost.kernels._custom_all_reduce): rows at two GPUs
    # alone, vLLM's with its barrier, inform the other four, not it; one row at four GPUs informs it
    two = [r for r in rows if own_ar_mode(r) == "graph" and r["num_gpus"] == "2"]
    assert fitted(two, calibrate.PARAMS["collectives"])[-4:] == own[:4]
    four = next(r for r in rows if own_ar_mode(r) == "graph" and r["num_gpus"] == "4")
    assert fitted([*two, four], calibrate.PARAMS["collectives"])[-5:] == own


def test_kernel_fit_moves_an_old_profiles_cost_per_peer_off_zero(tmp_path):
    """A profile written before custom_ar_peer_s existed reads it as 0 (calibration._before_peer); the local search's
    steps multiply the current value, so only the grid (GRID["custom_ar_peer_s"]) takes it off 0. Such a profile's 2.5 us
    one-shot, the H100 per-engine table's CUDA-graph rows: 0 -> 0.1375 us a peer, the rows' median APE 9.31 -> 5.75%
    (at 0 before the grid)."""
    from llm_codesign.measure import calibrate
    from llm_codesign.measure.kernel_tables import own_ar_mode, read_csv

    old = tmp_path / "old.toml"
    old.write_text("[hopper]\ncustom_ar_latency_s = 2.5e-6\n")
    base = calibration_for(get_gpu("h100"), str(old))
    assert base.custom_ar_peer_s == 0.0
    rows = [r for r in read_csv("hopper/comm")[1] if own_ar_mode(r) == "graph"]
    cal, rep = calibrate.fit_kind("collectives", rows, base, "hopper", params={"custom_ar_peer_s": (0.0, 0.5e-6)})
    # what the test is about: off 0, inside its 0-0.5 us range, and the rows priced better for it (0.1375 us, 9.31 -> 5.75%
    # on the shipped table, figures that move with any table or grid edit)
    assert 0.0 < cal.custom_ar_peer_s < 0.5e-6
    assert rep["median_ape"] < rep["start_median_ape"] - 1.0


# ---- fixcal (newcomer review 2026-12-06, item 3): calibrate moves only what the user's runs inform

NEWCOMER_RUNS = """source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,pp,ep,moe_tp,attention_dp,spec_method,spec_draft_len,spec_acceptance,ttft_ms,tpot_ms,output_tok_s_per_gpu,output_tok_s_per_user
run1,meta-llama/Llama-3.1-70B,b200,4,vllm,fp8,,1024,1024,8,4,,,,,,,,108.9,8.18,,
run2,meta-llama/Llama-3.1-70B,b200,8,vllm,nvfp4,,1024,1024,64,8,,,,,,,,263.3,13.78,,
h1,llama-3.1-8b,h100,1,vllm,bf16,bf16,1024,512,1,1,,,,,,,,25,7.2,,
h2,llama-3.1-8b,h100,1,vllm,bf16,bf16,1024,512,16,1,,,,,,,,120,9.5,1500,
h3,llama-3.1-8b,h100,1,vllm,bf16,bf16,1024,512,64,1,,,,,,,,380,14.0,4200,
h4,llama-3.1-70b,h100,4,vllm,fp8,fp8,2048,256,32,4,,,,,,,,900,22.0,350,
h5,llama-3.1-70b,h100,8,vllm,fp8,fp8,2048,256,1,8,,,,,,,,110,6.8,,
"""


def test_calibrate_keeps_what_no_run_responds_to_at_the_bundled_fit(tmp_path):
    # 7 single-node vLLM runs: the scale-out latency wrote the search's start, 25 us, over the bundled fit's 6.48 us
    # (fitted.toml [default]); it is kept, as is every other engine's value, and the fit says which it moved
    import tomllib

    s, p = tmp_path / "runs.csv", tmp_path / "profile.toml"
    s.write_text(NEWCOMER_RUNS)
    code, out, err = _cli("calibrate", "--serving", str(s), "-o", str(p), "--force")
    assert code == 0, err
    prof = tomllib.loads(p.read_text())
    bundled = tomllib.loads((Path(__file__).parents[1] / "src/llm_codesign/data/calibration/fitted.toml").read_text())["default"]
    # since fixcal4 a value no run responds to is not written at all: it reads back as the bundled fit's
    assert "default" not in prof and all("scale_out_latency_s" not in sec for sec in prof.values())
    assert calibration_for(get_gpu("h100"), str(p)).scale_out_latency_s == 6.48e-06 == bundled["scale_out_latency_s"]
    priced = calibration_for(get_gpu("h100"))  # the bundled fit as priced (fitted.toml over default.toml's documented values)
    mine = calibration_for(get_gpu("h100"), str(p))
    for name in ("step_overhead_s", "seq_overhead_s", "eager_launch_s", "prefill_queue_fraction"):  # other engines' as bundled
        assert {e: v for e, v in dict(getattr(mine, name)).items() if e != "vllm"} == {
            e: v for e, v in dict(getattr(priced, name)).items() if e != "vllm"}
    # vLLM's fitted values are written for the two families its runs were on (H100: hopper, B200: blackwell), no other
    assert set(prof) == {"hopper", "blackwell", "intervals"} and prof["hopper"]["step_overhead_s"] == prof["blackwell"]["step_overhead_s"]
    assert set(prof["hopper"]["step_overhead_s"]) == {"vllm"}
    head = p.read_text().splitlines()
    assert "# kept at the bundled fit's values (no run responds to them): scale_out_latency_s, adp_wait_steps:vllm" in head
    assert any(x.startswith("# serving parameters fitted: step_overhead_s:vllm") for x in head)
    said = " ".join(out.split())
    assert "kept at the bundled fit's values (no run responds to them): scale_out_latency_s, adp_wait_steps:vllm" in said
    # validate's figures on the 7 runs, starting profile against the new one (the starting ones are validate's on the
    # file: TPOT median 10.2%, p90 20.5%, 5 of 7 inside the 80% band, 7 of 7 inside the 95%), and the warning where worse
    assert ("validate on these 7 runs, TPOT: starting profile median 10.2%, p90 20.5%, inside 80%/95% 71.4/100.0%; new profile "
            in said)
    assert "warning: the new profile is worse than the starting one on its own runs: " in said


def test_calibrate_on_one_row_a_mixed_file_and_rows_that_cannot_run(tmp_path):
    # one row fits; a file mixing engines fits each engine's own; a file none of whose rows can run is one line, exit 2
    s, p = tmp_path / "one.csv", tmp_path / "p.toml"
    lines = NEWCOMER_RUNS.splitlines()
    s.write_text("\n".join(lines[:1] + lines[4:5]) + "\n")
    code, out, err = _cli("calibrate", "--serving", str(s), "-o", str(p), "--force")
    assert code == 0 and "validate on these 1 runs, TPOT" in " ".join(out.split()), err
    s.write_text("\n".join(lines[:1] + lines[3:6] + [lines[5].replace("vllm", "sglang").replace("h3,", "g3,")]) + "\n")
    code, out, err = _cli("calibrate", "--serving", str(s), "-o", str(p), "--force")
    said = " ".join(out.split())
    assert code == 0 and "step_overhead_s:sglang" in said and "step_overhead_s:vllm" in said, err
    # 512 requests of Llama-3.1-70B in BF16 on one H100: the weights leave no room for their KV cache (fits False)
    s.write_text(lines[0] + "\na,llama-3.1-70b,h100,1,vllm,bf16,bf16,1024,512,512,1,,,,,,,,120,9.5,1500,\n")
    code, out, err = _cli("calibrate", "--serving", str(s), "-o", str(tmp_path / "none.toml"), "--force")
    assert code == 2 and out == "" and not (tmp_path / "none.toml").exists()
    # the refusal validate and estimate give: no GPU memory holds one sequence (145 GB of weights, 79 GB usable by vLLM)
    assert err == (f"error: serving: {str(s)!r} is not valid; a file with at least one row the model can price; none of its 1 rows "
                   "is (TP1 on 1xh100 cannot run: needs 135.3 GiB per GPU for one sequence, H100 SXM reports 79.6 GiB (80 GB on the "
                   "data sheet; 73.3 GiB usable by vllm): at least 2 GPUs hold it, e.g. TP2 (priced: one sequence fits), or lower the precision)\n")


# ---- fixcal4 (newcomer review 2026-12-06, findings 2 and 16): a fit on one GPU family's runs moves no other family

def test_a_profile_keys_engine_values_by_gpu_family(tmp_path):
    # the format: [<family>.<table>] engine = value, read by the same _apply as [default.<table>] and after it, so that
    # family's GPUs take it and every other family keeps [default]'s (or the bundled fit's)
    from llm_codesign.errors import InputError

    p = tmp_path / "p.toml"
    p.write_text("[default.step_overhead_s]\nsglang = 0.003\n[cdna3.step_overhead_s]\nsglang = 0.002\n")
    assert calibration_for(get_gpu("mi300x"), str(p)).step_overhead("sglang") == 0.002
    assert calibration_for(get_gpu("b200"), str(p)).step_overhead("sglang") == 0.003
    assert calibration_for(get_gpu("mi355x"), str(p)).step_overhead("sglang") == 0.003
    p.write_text("[cdna3.step_overhead_s]\nsglang = 0.002\n[cdna3.seq_overhead_s]\nvllm = 5e-05\n")
    assert calibration_for(get_gpu("b200"), str(p)) == calibration_for(get_gpu("b200"))  # every value as bundled
    mine = calibration_for(get_gpu("mi300x"), str(p))
    assert mine.step_overhead("sglang") == 0.002 and mine.engine("seq_overhead_s", "vllm") == 5e-05
    assert mine.step_overhead("vllm") == calibration_for(get_gpu("mi300x")).step_overhead("vllm")  # other engines as bundled
    # a value that is not a table names the family's section
    p.write_text("[cdna3]\nstep_overhead_s = 0.002\n")
    with pytest.raises(InputError, match=r"a \[cdna3\.step_overhead_s\] table of engine = non-negative number"):
        calibration_for(get_gpu("mi300x"), str(p))
    p.write_text("[cdna3.step_overhead_s]\nsglang = -1\n")
    with pytest.raises(InputError, match=r"^calibration\.step_overhead_s\.sglang: -1"):
        calibration_for(get_gpu("mi300x"), str(p))


def test_to_toml_writes_a_fitted_value_only_for_the_families_its_runs_were_on():
    from llm_codesign.measure import calibrate

    serving = {"step_overhead_s": {"sglang": 0.004, "vllm": 0.001}, "scale_out_latency_s": 9e-06}
    scope = {"step_overhead_s:sglang": {"families": ["cdna3"], "gpus": ["MI300X"], "runs": 10},
             "scale_out_latency_s": {"families": ["cdna3", "hopper"], "gpus": ["H100 SXM", "MI300X"], "runs": 12}}
    # vLLM's 1 ms is held (not in scope): not written; the start's [default] and its own family table carried as they were
    # scoped, its [intervals] (its runs', not these) dropped
    start = {"default": {"step_overhead_s": {"vllm": 0.0123}}, "hopper": {"eager_launch_s": {"trtllm": 2e-07}},
             "intervals": {"slices": {}}}
    text = calibrate.to_toml({}, [], "h", serving, scope=scope, start=start)
    assert text == ("# h\n\n[default]\n[default.step_overhead_s]\nvllm = 0.0123\n\n"
                    "[cdna3]\nscale_out_latency_s = 9e-06\n[cdna3.step_overhead_s]\nsglang = 0.004\n\n"
                    "[hopper]\nscale_out_latency_s = 9e-06\n[hopper.eager_launch_s]\ntrtllm = 2e-07\n")
    assert calibrate.scope_words(scope, serving) == [
        "SGLang on CDNA3 GPUs only, from 10 runs on MI300X: step overhead 4.00 ms",
        "every engine on CDNA3 and Hopper GPUs only, from 12 runs on H100 SXM, MI300X: scale-out latency per level 9.0 us"]


MI300X_RUNS = """source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,ttft_ms,tpot_ms,output_tok_s_per_gpu,arrival
a,llama-3.1-70b,mi300x,8,sglang,fp8,,1024,1024,1,8,62.0,11.9,10.5,closed_loop
b,llama-3.1-70b,mi300x,8,sglang,fp8,,1024,1024,8,8,95.0,13.4,72.0,closed_loop
c,llama-3.1-70b,mi300x,8,sglang,fp8,,1024,1024,32,8,180.0,17.8,217.0,closed_loop
d,llama-3.1-70b,mi300x,8,sglang,fp8,,1024,1024,128,8,420.0,31.5,487.0,closed_loop
"""


def test_calibrate_on_mi300x_runs_leaves_b200_answers_as_they_were(tmp_path, monkeypatch):
    # the newcomer's case (10 SGLang runs on MI300X, --force): SGLang's costs were written under [default], and B200 on
    # SGLang went from 5961 to 3133 tok/s/GPU with nothing said. Now they are written for CDNA3 only, and said so
    import functools
    import tomllib

    import llm_codesign as lc
    from llm_codesign.measure import calibrate

    monkeypatch.setattr(calibrate, "fit_serving", functools.partial(calibrate.fit_serving, rounds=1))
    s, p = tmp_path / "runs.csv", tmp_path / "p.toml"
    s.write_text(MI300X_RUNS)
    code, out, err = _cli("calibrate", "--serving", str(s), "-o", str(p), "--force")
    assert code == 0, err
    prof = tomllib.loads(p.read_text())
    assert set(prof) == {"cdna3", "intervals"}
    bundled = calibration_for(get_gpu("b200")).step_overhead("sglang")
    assert prof["cdna3"]["step_overhead_s"]["sglang"] != pytest.approx(bundled, rel=1e-3)  # the fit moved it: the test means something
    said = [x for x in out.splitlines() if x.startswith("written for ")]
    assert said[0].startswith("written for SGLang on CDNA3 GPUs only, from 4 runs on MI300X: step overhead ")
    assert "every other engine and GPU family keeps the bundled fit's serving values" in out
    assert "# " + said[0] in p.read_text().splitlines()

    def answer(gpu, calibration=None):
        m = lc.get_model("llama-3.1-70b")
        e = lc.estimate(m, lc.deployment(m, gpu=gpu, tp=8, backend="sglang"), lc.Workload(isl=1024, osl=1024, concurrency=64),
                        calibration=calibration)
        # the metrics and their bands (the basis's words name the profile, and why its own runs do not cover B200)
        return (e.ttft_s, e.tpot_s, e.output_tok_s_per_gpu, e.tok_s_per_user,
                {k: tuple(b[x] for x in ("lo80", "hi80", "lo95", "hi95")) for k, b in e.intervals.items()})

    assert answer("b200", str(p)) == answer("b200")
    assert answer("mi300x", str(p))[1] != answer("mi300x")[1]


def test_calibrate_refuses_what_its_own_check_calls_worse_on_a_newcomers_runs(tmp_path):
    # newc9 #15: eight SGLang runs on MI300X (a Qwen2.5-14B-shaped config among them): the fit halves the banded median
    # (49.8 -> 33.5%) but makes validate's p90 on the same runs worse (TPOT 51.2 -> 66.3%, tok/s/GPU 30.0 -> 36.8% when
    # reported); it was written with a warning, exit 0. Now one line, exit 2, nothing written, the figures named; the
    # starting figures are validate's on the file with the bundled fit (own_check(rows, None)), checked here
    import csv
    import json

    from llm_codesign.measure.calibrate import own_check

    q14 = tmp_path / "q14" / "config.json"
    q14.parent.mkdir()
    q14.write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120, "intermediate_size": 13824,
                               "num_attention_heads": 40, "num_key_value_heads": 8, "num_hidden_layers": 48, "vocab_size": 152064,
                               "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": False,
                               "torch_dtype": "bfloat16", "hidden_act": "silu"}))
    s, p = tmp_path / "myruns.csv", tmp_path / "prof.toml"
    s.write_text("source,model,gpu,num_gpus,backend,weight_dtype,kv_dtype,isl,osl,concurrency,tp,ttft_ms,tpot_ms,output_tok_s_per_gpu,arrival\n"
                 + "".join(f"a{i},{m},mi300x,{g},sglang,{w},{kv},{isl},{osl},{c},{g},{t},{d},{r},closed_loop\n" for i, (m, g, w, kv, isl, osl, c, t, d, r)
                           in enumerate((("llama-3.1-8b", 1, "bf16", "", 1024, 1024, 1, 25.0, 5.9, 165),
                                         ("llama-3.1-8b", 1, "bf16", "", 1024, 1024, 8, 45.0, 7.0, 1120),
                                         ("llama-3.1-8b", 1, "bf16", "", 1024, 1024, 32, 110.0, 9.6, 3250),
                                         ("llama-3.1-8b", 1, "bf16", "", 1024, 1024, 128, 300.0, 17.5, 7000),
                                         (q14, 1, "bf16", "", 2048, 512, 16, 180.0, 12.0, 1250),
                                         (q14, 1, "bf16", "", 2048, 512, 64, 450.0, 19.0, 3200),
                                         ("llama-3.1-70b", 8, "fp8", "fp8", 1024, 1024, 64, 250.0, 14.0, 560),
                                         ("llama-3.1-70b", 8, "fp8", "fp8", 1024, 1024, 256, 700.0, 25.0, 1200)), 1)))
    code, out, err = _cli("calibrate", "--serving", str(s), "-o", str(p))
    # the error one line, the last (the lines above it are the search's progress, every 5 s off a terminal)
    assert code == 2 and not p.exists() and not out and [x for x in err.splitlines() if "error" in x] == err.strip().splitlines()[-1:], err
    before = own_check(list(csv.DictReader(s.open())), None)
    assert "this one: default serving: worse than the starting profile on its own runs as validate measures them: " in err, err
    assert f"TPOT p90 {before['tpot_ms']['p90_ape']:.1f} -> " in err and err.strip().endswith(f"nothing written to {p} (--force writes it anyway)")
