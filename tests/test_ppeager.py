"""The eager decode step at several ranks and a lone PP prefill's launches (docs/modelling-notes.md#ppeager-eager): a decode
step outside the CUDA graphs takes the longer of its kernels and the host's launches (35 us a launch; the slowest of the
stage's ranks at each collective, 2 us of jitter a launch), and a prefill crossing the stages alone counts its eager
launches once, as a decode iteration does. Goldens by hand."""
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

import llm_codesign as lc
from llm_codesign.serve import aggregated as agg
from llm_codesign.serve.aggregated import PrefillParts, StepParts, decode_launch_host, expected_max_normal

FITTED = Path(lc.__file__).parent / "data" / "calibration" / "fitted.toml"


def test_the_expected_slowest_of_n_ranks():
    # E[max of n standard normals]: 0 for one, 1 / sqrt(pi) for two, 3 / (2 sqrt(pi)) for three (closed forms), and the
    # tabulated 1.0294 / 1.4236 for four / eight
    got = expected_max_normal(np.array([1.0, 2.0, 3.0, 4.0, 8.0]))
    assert got == pytest.approx([0.0, 1 / math.sqrt(math.pi), 1.5 / math.sqrt(math.pi), 1.02938, 1.42360], abs=1e-5)


def test_a_decode_steps_host_launches_by_hand():
    # llama-3.1-70b TP8: 723 launches, 161 collectives (80 layers x 2 all-reduces + the logits gather), 8 ranks:
    # 723 x 35 us + sqrt(723 x 161) x 2 us x 1.42360 = 25.305 + 0.971 = 26.276 ms; one rank: 723 x 35 us, no jitter term
    assert float(decode_launch_host(723, 161, 8)) == pytest.approx(26.2764e-3, abs=1e-7)
    assert float(decode_launch_host(723, 161, 1)) == pytest.approx(723 * 35e-6, rel=1e-12)
    # the step takes the longer of the host's launches and its kernels: only the excess is priced, none where hidden
    flags = agg.DEFAULT_FLAGS
    default = (np.array(128.0), False)
    assert float(agg._eager_decode(100.0, flags, default=default, host=26.2764e-3, kernels=15.3908e-3)) == pytest.approx(10.8856e-3)
    assert float(agg._eager_decode(100.0, flags, default=default, host=26.2764e-3, kernels=30e-3)) == 0.0
    assert float(agg._eager_decode(64.0, flags, default=default, host=26.2764e-3, kernels=15.3908e-3)) == 0.0  # captured


def test_the_eager_part_of_a_decode_step_is_no_longer_the_prefill_fit():
    # llama-3.1-8b on one H100, TensorRT-LLM, graphs off, 1 request: 290 launches x 35 us = 10.150 ms against the step's
    # kernels: TPOT = 10.15 ms + the host's per-step and per-sequence costs (it was 0.06 ms above the kernels: 290 x the
    # prefill-fitted 0.20 us a launch); on TP2 8 H100s the 70B's kernels outlast its host (no eager part)
    m = lc.get_model("llama-3.1-8b")
    dep = lc.deployment(m, gpu="h100", num_gpus=1, engine="trtllm")
    from dataclasses import replace
    off = lc.estimate(m, replace(dep, cuda_graph_max_bs=0), lc.Workload(isl=1024, osl=1024, concurrency=1), breakdown=True)
    f = tomllib.loads(FITTED.read_text())["default"]
    host = f["step_overhead_s"]["trtllm"] + f["seq_overhead_s"]["trtllm"]
    assert off.tpot_s == pytest.approx(290 * 35e-6 + host, rel=1e-9)
    assert off.decode_bound == "host"


def test_prefill_through_counts_its_eager_launches_once():
    # by hand (seconds): the slowest stage 1.0 ms kernels + 10 us host + 0.5 ms eager; every stage's kernels 3.4 ms and
    # eager launches 1.8 ms. Alone through 4 stages: 3.4 + 1.8 / 4 + 4 x 10 us = 3.89 ms = 2.5762 slowest-stage steps
    # (1.51 ms); the eager launches were counted whole before (5.24 ms)
    p = PrefillParts(kernels=1.0e-3, host_step=10e-6, host_seq=0.0, eager=0.5e-3, kernels_all=3.4e-3, eager_all=1.8e-3)
    assert float(p.through(4)) == pytest.approx(3.89e-3 / 1.51e-3, rel=1e-12)
    # SGLang's idle dispatch paces each stage, its stages dispatching one after another: pp times
    q = p._replace(idle=0.2e-3)
    assert float(q.through(4)) == pytest.approx((3.89e-3 + 4 * 0.2e-3) / 1.71e-3, rel=1e-12)


def test_a_ring_whose_stages_launch_in_turn_pays_every_stages_excess():
    # StepParts.eager_ring: TensorRT-LLM's stages launch together (one stage's share, eager_all / pp), vLLM's and SGLang's
    # one after another (eager_all whole): 3.4 ms of kernels, 1.8 ms of host beyond them, 10 us host a stage step
    p = StepParts(kernels=1.0e-3, host_step=10e-6, host_seq=0.0, eager=0.5e-3, kernels_all=3.4e-3, eager_all=1.8e-3)
    assert float(p.iteration(4, 1)) == pytest.approx(3.4e-3 + 0.45e-3 + 0.04e-3, rel=1e-12)
    q = p._replace(eager_ring=1.8e-3)
    assert float(q.iteration(4, 1)) == pytest.approx(3.4e-3 + 1.8e-3 + 0.04e-3, rel=1e-12)
    assert {k: float(v) for k, v in q.iteration_parts(4, 1).items()}["eager"] == pytest.approx(1.8e-3, rel=1e-12)


@pytest.mark.parametrize("pp,n_all", [(2, 293), (4, 295)])
def test_a_lone_prefill_at_pp2_and_pp4_by_hand(pp, n_all):
    # llama-3.1-8b TP2, TensorRT-LLM, one request of 1,024 tokens on PP2 (4 H100) / PP4 (8 H100): its prefill crosses the
    # stages once: every stage's kernels, the stages' n_all launches (32 layers x 9, the LM head, the logits gather, the
    # sample, pp hops) once at the 2 ranks' rate, eager_launch_s + eager_skew_s sqrt(2 ln 2) = 26.18 us, / pp, and each
    # stage's host cost per step and sequence. PP2: 293 / 2 x 26.18 us = 3.835 ms (7.671 ms before); PP4: 295 / 4 x 26.18 us
    # = 1.931 ms (7.723 before)
    f = tomllib.loads(FITTED.read_text())["default"]
    per = f["eager_launch_s"]["trtllm"] + f["eager_skew_s"]["trtllm"] * math.sqrt(2 * math.log(2))
    host = f["step_overhead_s"]["trtllm"] + f["seq_overhead_s"]["trtllm"]
    m = lc.get_model("llama-3.1-8b")
    dep = lc.deployment(m, gpu="h100", num_gpus=2 * pp, tp=2, pp=pp, engine="trtllm")
    from llm_codesign.cost.calibration import calibration_for
    pf = agg.prefill_step_parts(m, dep.gpu, dep.precision, dep.plan.broadcast(), costs=dep.engine.costs(calibration_for(dep.gpu)),
                                tokens=1024.0, isl=1024.0, chunk=1024.0)
    assert float(np.ravel(pf.eager_all)[0]) == pytest.approx(n_all * per, rel=1e-12)
    ring = float(np.ravel(pf.kernels_all)[0]) + n_all * per / pp + pp * host
    assert float(np.ravel(pf.through(pp) * pf.step)[0]) == pytest.approx(ring, rel=1e-12)
    est = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=1), breakdown=True)
    rows = {o.name: o.time_s for o in est.breakdown if o.name.startswith("first/")}
    assert rows["first/prefill_eager"] == pytest.approx(n_all * per / pp, rel=1e-9)
    assert rows["first/prefill_eager"] == pytest.approx({2: 3.8353e-3, 4: 1.9307e-3}[pp], abs=1e-7)
    assert rows["first/prefill_kernels"] == pytest.approx(float(np.ravel(pf.kernels_all)[0]), rel=1e-9)
    assert rows["first/prefill_host"] == pytest.approx(pp * host, rel=1e-9)
    assert sum(rows.values()) == pytest.approx(est.ttft_s, rel=1e-9)


def test_decode_launches_on_a_pipeline_below_its_depth_match_the_prefills_reading():
    # one request on PP2 with graphs off: the prefill (additive, fitted) and the decode (host against kernels) both count
    # a stage's launches once on TensorRT-LLM, so neither grows by pp x a stage's launches over PP1's
    m = lc.get_model("llama-3.1-8b")
    from dataclasses import replace
    t = {pp: lc.estimate(m, replace(lc.deployment(m, gpu="h100", num_gpus=2 * pp, tp=2, pp=pp, engine="trtllm"), cuda_graph_max_bs=0),
                         lc.Workload(isl=1024, osl=1024, concurrency=1)) for pp in (1, 2)}
    assert t[2].ttft_s < t[1].ttft_s and t[2].tpot_s < t[1].tpot_s
