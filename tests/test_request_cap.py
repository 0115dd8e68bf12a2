"""fixA2 (fixA's kept half): each attention-DP rank serves the per-request cost one at a time, so a rank admits at most
1 / cost requests a second (estimate's first/front_end_queue) and a disaggregated burst pays (q + 1) / 2 of it as
estimate's does (newc10 #3, crev10 #4); the fitted attention-DP hold, priced as before, is named where it is priced."""
import json

import numpy as np
import pytest
from conftest import cli

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu


def _json(*args):
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_serial_request_cost_caps_each_rank_at_one_request_per_cost():
    # SGLang's fitted 24.8903 ms a request, served one at a time by each rank's scheduler: at most 1 / 0.0248903 = 40.18
    # requests a second a rank (one rank here; InferenceX's disaggregated prefill instances of 8 ranks serve 78). A dense
    # 8B at 256 requests of 64 tokens would need 56.9 a second unbounded; bound, the 256 slots cycle in 256 x 24.8903 ms
    # = 6.372 s, so 256 x 64 / 6.372 s = 64 / 0.0248903 = 2571.3 tok/s on its one GPU, and TTFT carries the queue
    d = _json("estimate", "llama-3.1-8b", "--gpu", "mi355x", "--tp", "1", "--isl", "1024", "--osl", "64", "--concurrency", "256",
              "--arrival", "closed_loop", "--breakdown")
    assert d["output_tok_s_per_gpu"] == pytest.approx(64 / 0.0248903, rel=1e-4)
    queue = next(b["time_ms"] for b in d["breakdown"] if b["name"] == "first/front_end_queue")
    assert queue > 1000.0 and "caps each rank at 1 / 24.9 ms = 40.2 requests a second" in d["request_cost_note"]
    # where the cap does not bind (8 requests) nothing queues and the row is left out
    light = _json("estimate", "llama-3.1-8b", "--gpu", "mi355x", "--tp", "1", "--isl", "1024", "--osl", "64", "--concurrency", "8",
                  "--arrival", "closed_loop", "--breakdown")
    assert "first/front_end_queue" not in {b["name"] for b in light["breakdown"]}


def test_a_disaggregated_burst_pays_the_front_end_as_estimate_does():
    # 64 requests sent together to one SGLang prefill instance: its front end serves them one at a time,
    # 24.8903 x (64 + 1) / 2 = 808.935 ms on average, estimate's first/front_end for the same burst (crev10 #4: 24.89 before)
    agg = _json("estimate", "deepseek-r1", "--gpu", "mi355x", "--tp", "8", "--ep", "8", "--concurrency", "64", "--arrival", "burst",
                "--breakdown")
    front = next(b["time_ms"] for b in agg["breakdown"] if b["name"] == "first/front_end")
    dis = _json("disagg", "deepseek-r1", "--gpu", "mi355x", "--prefill", "tp=8,ep=8", "--decode", "tp=8,ep=8", "--concurrency", "1,64",
                "--arrival", "burst")
    by_c = {r["concurrency"]: r for r in dis["rows"]}
    assert front == pytest.approx(24.8903 * 65 / 2, rel=1e-4) and by_c[64]["front_end_ms"] == pytest.approx(front, rel=1e-6)
    assert by_c[1]["front_end_ms"] == pytest.approx(24.8903, rel=1e-4)  # one request: the cost once


def test_the_hold_alone_is_the_fitted_count_where_the_engine_holds():
    # TensorRT-LLM's fitted adp_wait_steps (fitted.toml: 60) with more requests than ranks (9 over 8), none with 8 or on one
    # rank; SGLang never holds (Engine.holds_adp_requests); wait_steps is the rest of the wait plus exactly this
    trt = get_engine("trtllm").costs(calibration_for(get_gpu("b200")))
    sgl = get_engine("sglang").costs(calibration_for(get_gpu("b200")))
    assert trt.adp_wait_steps == 60.0
    assert list(trt.adp_hold_steps(np.array([8.0, 8.0, 1.0]), np.array([9.0, 8.0, 64.0]))) == [60.0, 0.0, 0.0]
    assert float(sgl.adp_hold_steps(8.0, 64.0)) == 0.0
    # closed loop: the running step (1) + the one queued ahead (1) + the hold (60) = 62 iterations; without the hold, 2
    assert float(trt.wait_steps(8.0, 9.0, "closed_loop")) == 62.0 and float(trt.wait_steps(8.0, 8.0, "closed_loop")) == 2.0


R1_ADP = ("deepseek-r1", "--gpu", "b200", "--gpus", "8", "--attention-dp", "8", "--ep", "8", "--arrival", "closed_loop", "--breakdown")


def test_the_fitted_attention_dp_wait_is_named_where_it_is_priced():
    # DeepSeek-R1 on 8 B200s, attention DP 8, 256 requests in a closed loop: first/wait_steps is (1 + 1 + 60) decode
    # iterations, of which the fitted hold is 60, so the note's ms = wait_steps x 60 / 62 (1,862 ms -> 1,802 ms at main's
    # profile), its share of TTFT beside it; TTFT itself is priced as before (the note adds words, not time)
    d = _json("estimate", *R1_ADP, "--concurrency", "256")
    wait = next(b["time_ms"] for b in d["breakdown"] if b["name"] == "first/wait_steps")
    held = wait * 60.0 / 62.0
    note = d["adp_hold_note"]
    assert note.startswith(f"{held:.0f} ms of TTFT ({held / d['ttft_ms']:.0%}) is a fitted attention-DP wait (adp_wait_steps 60 steps")
    assert f"of the {held / 60.0:.1f} ms decode iteration" in note
    assert "the clean sample's 39" in note and "InferenceX's 50" in note and "the wait's cause is not read" in note
    # where nothing is held nothing is said: 8 requests on 8 ranks (a rank without a decode releases at once), no
    # attention DP, SGLang's DP controller
    assert "adp_hold_note" not in _json("estimate", *R1_ADP, "--concurrency", "8")
    assert "adp_hold_note" not in _json("estimate", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--tp", "8", "--ep", "8",
                                        "--concurrency", "256")
    assert "adp_hold_note" not in _json("estimate", *R1_ADP, "--concurrency", "256", "--backend", "sglang")
    # the CLI row says it in words
    code, out, _ = cli("estimate", *R1_ADP[:-1], "--concurrency", "256")
    assert code == 0 and "fitted attention-DP wait" in out
