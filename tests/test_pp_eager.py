"""A pipeline below its depth with eager decode launches (review rev11a, docs/modelling-notes.md#revfix11a): micro-batches as
the engines form them (a wave shares one, a closed loop spreads), the eager launches once on the ring's critical path
(StepParts.eager_all / pp: every PP rank launches under the upstream stages' compute), one iteration_parts read by the
breakdown, disagg's note and the energy model; the decode pool's own step in disagg_energy; the notes' wording."""
import csv
import inspect
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import llm_codesign as lc
from llm_codesign.serve import aggregated as agg
from llm_codesign.serve.aggregated import StepParts, micro_batches

DATA = Path(lc.__file__).parent / "data" / "measurements"


def test_the_ring_counts_the_eager_launches_once_and_m_x_stage_can_bind():
    # by hand (seconds): stage 1.0 ms kernels + 10 us host + 0.5 ms eager = 1.51 ms; every stage's kernels 3.4 ms, every
    # stage's eager launches 1.8 ms. Ring at pp 4: 3.4 + 1.8 / 4 + 4 x 0.01 = 3.89 ms (the eager launches once, 0.45 ms)
    p = StepParts(kernels=1.0e-3, host_step=10e-6, host_seq=0.0, eager=0.5e-3, kernels_all=3.4e-3, eager_all=1.8e-3)
    assert float(p.iteration(4, 1)) == pytest.approx(3.89e-3, rel=1e-12)
    # 3 sequences spread (a closed loop): 3 x 1.51 = 4.53 ms > 3.89: the slowest stage's three visits bind
    assert float(p.iteration(4, 3)) == pytest.approx(4.53e-3, rel=1e-12)
    # the same 3 arriving together (a wave): one micro-batch of 3, the ring
    assert float(p.iteration(4, 3, together=True)) == pytest.approx(3.89e-3, rel=1e-12)
    assert float(p.iteration(4, 4)) == pytest.approx(6.04e-3, rel=1e-12)  # full: 4 x 1.51, as before
    parts = {k: float(v) for k, v in p.iteration_parts(4, 1).items()}
    assert parts == pytest.approx({"kernels": 3.4e-3, "host_step": 0.04e-3, "host_seq": 0.0, "draft": 0.0, "eager": 0.45e-3,
                                  "draft_host": 0.0}, rel=1e-12)
    three = {k: float(v) for k, v in p.iteration_parts(4, 3).items()}
    assert three == pytest.approx({"kernels": 3e-3, "host_step": 0.03e-3, "host_seq": 0.0, "draft": 0.0, "eager": 1.5e-3,
                                 "draft_host": 0.0}, rel=1e-12)
    assert sum(three.values()) == pytest.approx(float(p.iteration(4, 3)), rel=1e-12)


def test_micro_batches_a_wave_shares_one_a_closed_loop_spreads():
    running = np.array([0.0, 1.0, 3.0, 4.0, 9.0])
    assert list(micro_batches(running, 4)) == [1.0, 1.0, 3.0, 4.0, 4.0]
    assert list(micro_batches(running, 4, together=True)) == [1.0, 1.0, 1.0, 4.0, 4.0]


def _est(conc, graphs, arrival="waves", *, engine="trtllm", tp=1, pp=4):
    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=tp * pp, tp=tp, pp=pp, engine=engine), cuda_graph_max_bs=graphs)
    return lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=conc, arrival=arrival), breakdown=True)


def _kernels_all(engine, tp, pp):
    # every stage's decode kernels at one sequence (ctx 1,024 + 1,024 / 2), the ring's kernels
    m = lc.get_model("llama-3.1-8b")
    dep = lc.deployment(m, gpu="h100", num_gpus=tp * pp, tp=tp, pp=pp, engine=engine)
    from llm_codesign.cost.calibration import calibration_for
    parts, *_ = agg._step_parts(m, dep.gpu, dep.precision, dep.plan.broadcast(), costs=dep.engine.costs(calibration_for(dep.gpu)),
                                b=np.array(1.0), ctx=np.array(1536.0), k=np.array(0.0), spec=None)
    return float(np.ravel(parts.kernels_all)[0])


@pytest.fixture(scope="module")
def pp4():
    return {g: _est(1, g) for g in (0, 1)}


def test_pp4_graphs_off_one_request_adds_one_stages_launches(pp4):
    # llama-3.1-8b TP1 PP4 on H100, TensorRT-LLM, 1 request, graphs off (0) against a padded capture of 1. The 4 stages'
    # 294 launches (32 layers x 9, the LM head, the sampler's 1 at TP1, 4 PP hops) at 35 us = 10.290 ms of host launches
    # against the ring's 6.791 ms of kernels (docs/modelling-notes.md#ppeager-eager): 3.499 ms over them, of which one
    # stage's share shows (TensorRT-LLM's stages launch together, PP_HOSTS_TOGETHER): / 4 = 0.8747 ms
    k_all = _kernels_all("trtllm", 1, 4)
    assert k_all == pytest.approx(6.7912e-3, abs=1e-7)
    extra = pp4[0].tpot_s - pp4[1].tpot_s
    assert extra == pytest.approx((294 * 35e-6 - k_all) / 4, rel=1e-9)
    assert extra == pytest.approx(0.8747e-3, abs=1e-7)


def test_vllms_stages_launch_one_after_another_so_a_host_bound_pass_pays_them_all():
    # llama-3.1-8b TP2 PP2, vLLM, 1 request, graphs off: 293 launches (32 layers x 9, the head, the logits gather and the
    # sample, 2 hops) at 35 us, the slower of 2 ranks at each of 65 collectives (sqrt(293 x 65) x 2 us x 0.56419 = 0.156 ms):
    # 10.411 ms of host launches, whole (each stage's host waits for the previous stage's to send its tensor dict), less
    # the ring's kernels
    k_all = _kernels_all("vllm", 2, 2)
    host = 293 * 35e-6 + math.sqrt(293 * 65) * 2e-6 / math.sqrt(math.pi)  # E[max of 2 normals] = 1 / sqrt(pi)
    off, on = _est(1, 0, engine="vllm", tp=2, pp=2), _est(1, 1, engine="vllm", tp=2, pp=2)
    assert off.tpot_s - on.tpot_s == pytest.approx(host - k_all, rel=1e-6)
    # TensorRT-LLM's stages launch together: the same pass pays half that excess over its own kernels
    t_off, t_on = _est(1, 0, tp=2, pp=2), _est(1, 1, tp=2, pp=2)
    assert t_off.tpot_s - t_on.tpot_s == pytest.approx((host - _kernels_all("trtllm", 2, 2)) / 2, rel=1e-6)


def test_the_breakdowns_eager_row_is_what_removing_it_saves(pp4):
    e = pp4[0]
    row = next(o for o in e.breakdown if o.name == "host/eager_launches")
    assert row.tpot_s == pytest.approx(e.tpot_s - pp4[1].tpot_s, rel=1e-9)
    assert e.eager_decode.tpot_s == pytest.approx(row.tpot_s, rel=1e-12)
    # the decode rows sum to TPOT: the LM head's row counted once (kernels_all / kernels), not 3.9 times
    assert sum(o.tpot_s for o in e.breakdown if o.phase == "decode") == pytest.approx(e.tpot_s, rel=1e-9)


def test_disaggs_eager_note_agrees_with_estimates(pp4):
    d = lc.disagg("llama-3.1-8b", "h100", prefill="tp=1", decode="tp=1,pp=4", concurrency=1, engine="trtllm",
                  decode_cuda_graph_max_bs=0).to_dict()
    note = d["rows"][0]["eager_decode"]
    assert note["tpot_ms"] == pytest.approx((pp4[0].tpot_s - pp4[1].tpot_s) * 1e3, rel=1e-9)
    assert "decode_capture" not in d["rows"][0]
    # a graphs-off launch is told to turn them back on, not just to set a size
    assert note["avoid"].startswith("CUDA graphs turned back on")


def test_the_note_names_the_busiest_micro_batch():
    # 10 requests on PP4 in a closed loop: 2.5 a micro-batch on average, the busiest 3
    e = _est(10, 0, arrival="closed_loop")
    assert "a micro-batch of up to 3 per rank (the busiest; 2.5 on average)" in e.eager_decode.note


def test_estimate_takes_cuda_graph_max_bs_0_as_disagg_does():
    from conftest import cli

    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--backend", "trtllm", "--concurrency", "1",
                         "--cuda-graph-max-bs", "0", "--json")
    assert code == 0, err
    assert "CUDA graphs turned back on" in out


def test_disagg_energy_takes_the_decode_pools_step_over_its_iteration():
    from llm_codesign.serve.disagg import decode_pool
    from llm_codesign.serve.energy import disagg_energy, kernel_activity

    m = lc.get_model("llama-3.1-70b")
    pre = lc.deployment(m, gpu="h100", num_gpus=2, tp=2, engine="trtllm")
    dec = lc.deployment(m, gpu="h100", num_gpus=8, tp=2, pp=4, engine="trtllm")
    from llm_codesign.cost.calibration import calibration_for

    cal = calibration_for(dec.gpu)
    e = disagg_energy(m, pre, dec, calibration=cal, prefill_instances=1, decode_instances=1, concurrency=1, isl=1024, osl=1024,
                      output_tok_s_per_gpu=1.0)
    dc = dec.engine.costs(cal)
    d = decode_pool(m, dec.gpu, dec.precision, dec.plan, costs=dc, per_instance=1, isl=1024, osl=1024)
    assert float(np.ravel(d["batch"])[0]) == 1.0  # one sequence a micro-batch (was 1 / pp = 0.25)
    # one request crosses the 4 stages once an iteration: each stage's GPUs run the kernels 1 time in the ring's time
    share = float(np.ravel(agg.kernels_time(d["ops"], dec.gpu, dc) / d["iteration"])[0])
    assert share < 0.3  # the other three stages' turns: idle
    want = float(np.ravel(kernel_activity(d["ops"], dec.gpu, agg.pdl_per_launch(dec.gpu, dc)))[0]) * share
    assert e["decode_activity"] == pytest.approx(want, rel=1e-9)


def test_no_function_level_import_of_estimate_in_disagg_and_calibrates_two_row_problems_apart():
    from llm_codesign.measure import calibrate
    from llm_codesign.serve import disagg

    assert "import" not in inspect.getsource(disagg._eager_rows)
    src = inspect.getsource(calibrate)
    assert "row_problem as serving_row_problem" in src and "from llm_codesign.measure.validate import METRICS, row_problem" not in src


def test_the_builds_file_and_the_capture_dates_as_the_docs_say():
    with (DATA / "serving_measured_blackwell.builds.csv").open(newline="") as f:
        builds = list(csv.DictReader(f))
    assert len(builds) == 1933 and sum(1 for r in builds if r["build"]) == 351
    assert "1,933 runs of that sample" in (DATA / "SOURCES.md").read_text()
    dates = {r["source"]: r["measured"] for r in builds}
    with (DATA / "serving_measured_blackwell_clean.csv").open(newline="") as f:
        sgl = [dates.get(r["source"], "") for r in csv.DictReader(f) if r["backend"] == "sglang"]
    early = sorted(d for d in sgl if d and d < "2025-12-04")
    got = {d: early.count(d) for d in set(early)}
    assert got == {"2025-11-02": 3, "2025-11-10": 33, "2025-11-16": 3, "2025-11-17": 17, "2025-11-18": 15}
    assert "SGLang's 71: 3 of\n  # 2025-11-02, 33 of 11-10, 3 of 11-16, 17 of 11-17, 15 of 11-18" in (DATA / "campaigns.toml").read_text()
