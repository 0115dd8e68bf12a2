"""Requests kept in step past the full context's KV count: the engines' evictions priced (branch preempt,
docs/modelling-notes.md#preempt-in-step-evictions)."""
import json
import math

import numpy as np
import pytest
from conftest import cli
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.aggregated import Serving, _evicted_times, _Rank, evaluate, in_step_evictions
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model


def test_evictions_of_a_wave_in_step_by_hand():
    """300 requests of 1000 + 1000 tokens where the cache holds 200 at the full length: K = 200 x 2000 = 400,000 tokens,
    full at t_fill = 400,000 / 300 - 1000 = 333.3 output tokens; the newest evicted as blocks run out until 200 remain:
    P = 100, R = K ln(300 / 200) = 400,000 x 0.405465 = 162,186 recomputed tokens, D = 100 x 2000 - R = 37,814 tokens
    the evicted have left. Each evicted one's L + t and O - t sum to L + O: R + D = P (L + O)."""
    P, R, D, t_fill = (float(x) for x in in_step_evictions(300.0, 200.0, isl=1000, osl=1000))
    assert P == 100.0
    assert R == pytest.approx(400_000 * math.log(1.5), rel=1e-12) and R == pytest.approx(162_186.0, abs=1.0)
    assert D == pytest.approx(37_814.0, abs=1.0) and R + D == pytest.approx(100 * 2000, rel=1e-12)
    assert t_fill == pytest.approx(1000 / 3, rel=1e-12)
    # the worked example (newc11 #7): Llama-3.1-8B on an H100 with vLLM, 290 at 1024/1024, the cache holding 221.674 at
    # 2048 tokens (59.505e9 B / (2048 x 131,072 B)): 68.3 evicted, ln(290 / 221.674) = 0.26869, K = 453,988 tokens,
    # R = 121,981, D = 68.326 x 2048 - R = 17,951, t_fill = 2048 / 1.30823 - 1024 = 541.5 (>= OSL / 2: the mean-context
    # count, 295, admits the wave)
    P, R, D, t_fill = (float(x) for x in in_step_evictions(290.0, 221.674, isl=1024, osl=1024))
    assert P == pytest.approx(68.326) and R == pytest.approx(121_981, rel=1e-4) and D == pytest.approx(17_951, rel=1e-3)
    assert t_fill == pytest.approx(541.5, abs=0.1) and t_fill >= 512
    # within the count, and an array of deployments mixing both: one code path
    got = in_step_evictions(np.array([150.0, 300.0]), np.array([200.0, 200.0]), isl=1000, osl=1000)
    assert [float(x) for x in got[0]] == [0.0, 100.0] and float(got[1][0]) == 0.0 == float(got[2][0])


def _rank(n, isl, osl):
    return _Rank(isl=float(isl), osl=float(osl), new=float(isl), cached=0.0, budget=8192.0, k=0.0, running=float(n), pp=1.0,
                 pipelined=True, scheduler=(get_engine("vllm"), None))


def test_what_the_evictions_add_by_hand():
    """The wave above (300 running, 200 held, 1000/1000), its prompts' prefill span 3 s for 300 x 1000 tokens: the
    recompute of R = 162,186 tokens takes t_re = 3 x 162,186 / 300,000 = 1.62186 s. At 20 ms a token, TPOT (the wave's
    mean) grows by (100 x 1.62186 + 37,814 x 0.020) / (300 x 999) = 918.47 / 299,700 = 3.0646 ms; a burst's makespan by
    t_re + (1000 - 333.3) x 0.020 = 14.955 s, its first tokens by nothing (they came before t_fill). In waves the
    survivors' next requests (200 of 300) wait t_re: over a run of 20 rounds, whose first wave alone is in step,
    2/3 x 1.62186 / 20 = 54.06 ms."""
    ev = in_step_evictions(300.0, 200.0, isl=1000, osl=1000)
    burst = _evicted_times(_rank(300, 1000, 1000), ev, pf_span=3.0, t_token=0.020, burst=True)
    assert float(burst["evicted_tpot"]) == pytest.approx(918.466 / 299_700, rel=1e-5)
    assert float(burst["evicted_tail"]) == pytest.approx(1.62186 + 2000 / 3 * 0.020, rel=1e-5)
    assert float(burst["evicted_ttft"]) == 0.0
    waves = _evicted_times(_rank(300, 1000, 1000), ev, pf_span=3.0, t_token=0.020, burst=False, share=1 / 20)
    assert float(waves["evicted_ttft"]) == pytest.approx(2 / 3 * 1.62186 / 20, rel=1e-5)
    assert float(waves["evicted_tpot"]) == pytest.approx(918.466 / 299_700 / 20, rel=1e-5)
    none = _evicted_times(_rank(150, 1000, 1000), in_step_evictions(150.0, 200.0, isl=1000, osl=1000), pf_span=3.0,
                          t_token=0.020, burst=True)
    assert float(none["evicted_tpot"]) == 0.0 == float(none["evicted_tail"])


BASE = ("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--isl", "1024", "--osl", "1024", "--json")


def _est(*args):
    code, out, err = cli(*BASE, *args)
    assert code == 0, err
    return json.loads(out)


def test_a_burst_past_the_full_context_count_pays_its_evictions():
    """newc11 #7's example sent as one burst: 290 at 1024/1024 on an H100 with vLLM, 221.674 held at 2048 tokens. The
    evaluation's own figures (its prompts' span 6.1114 s for 290 x 1024 tokens; the evicted 68.3 decoding alone once
    recomputed at 14.869 ms a step) and in_step_evictions' R = 121,975 and D = 17,957: t_re = 6.1114 x 121,975 / 296,960
    = 2.5103 s; TPOT 36.52 -> 36.52 + (68.326 x 2.5103 + 17,957 x 0.014869) / (290 x 1023) = 38.00 ms; the makespan
    290 x 1024 / 6,831 = 43.47 s grows by 2.5103 + 482.5 x 0.014869 = 9.685 s: 6,831 -> 5,587 tok/s/GPU. The first
    token is the burst's (its evictions come at token 541). The breakdown's rows say it."""
    r = _est("--backend", "vllm", "--concurrency", "290", "--arrival", "burst")
    assert r["tpot_ms"] == pytest.approx(38.00, abs=0.02) and r["output_tok_s_per_gpu"] == pytest.approx(5587, rel=2e-3)
    assert "(priced: they re-prefill their prompt and output so far once the others finish" in r["in_step"]
    # 221 fit at the full context: nothing evicted, nothing priced; TensorRT-LLM reserves ISL + OSL (GUARANTEED_NO_EVICT)
    # and never evicts
    assert "in_step" not in _est("--backend", "vllm", "--concurrency", "221", "--arrival", "burst")
    code, out, err = cli(*BASE[:-1], "--backend", "vllm", "--concurrency", "290", "--arrival", "burst", "--breakdown")
    assert code == 0, err
    assert "preempt/recompute" in out


def test_one_request_past_the_cap_keeps_the_evictions():
    """frev12 #1: 295 is the largest batch the cache holds at the mean context; at 296 vLLM still runs 295 in step, which
    still run out of blocks (221.67 held at 2048 tokens), and the 296th, admitted (its prompt fits), holds a slot 295 / 296
    of the time (pastcap: one account, _in_step_priced). fixP13: the wave evicted is the mean-context count unrounded,
    K / (L + O/2) = 453,988 / 1536 = 295.565 (it fills at exactly O/2), so TPOT 38.849 -> 38.826 ms (test_one_account_
    past_the_cap_by_hand) and tok/s/GPU 5,530.8 -> 5,545.5: 0.21% above 295's 5,534.0, the evicted tail's decode step at
    its mean context 1024 + (1024 + 512) / 2 = 1,792 tokens, just below the attention core's 256-token step (15.06 ms at
    74 sequences against 15.51 ms above it; at 295 the tail's context is 1,793.5). Both lines are said."""
    at, past = (_est("--backend", "vllm", "--concurrency", str(c), "--arrival", "burst") for c in (295, 296))
    assert at["tpot_ms"] == pytest.approx(38.686, abs=2e-3) and past["tpot_ms"] == pytest.approx(38.826, abs=2e-3)
    assert past["ttft_ms"] == pytest.approx(at["ttft_ms"] * 296 / 295, rel=1e-6) and "over_capacity" in past and "over_capacity" not in at
    assert "the 295 requests reach 1024+1024 tokens together" in past["in_step"] and "preempts about 74" in past["in_step"]
    assert past["output_tok_s_per_gpu"] == pytest.approx(5545.5, rel=1e-4) and past["output_tok_s_per_gpu"] < at["output_tok_s_per_gpu"] * 1.0025
    tpots = [_est("--backend", "vllm", "--concurrency", str(c), "--arrival", "burst")["tpot_ms"] for c in (294, 297)]
    assert tpots[0] < at["tpot_ms"] < past["tpot_ms"] < tpots[1]


def _sweep(engine, C, *, arrival="burst", offline=False, model="llama-3.1-8b", gpu="h100", isl=1024, osl=1024, tp=1):
    m, g = get_model(model), get_gpu(gpu)
    r = evaluate(m, Serving(gpu=g, prec=m.default_precision, plan=Plan(tp=tp), engine=get_engine(engine)), cal=calibration_for(g), concurrency=C,
                 isl=isl, osl=osl, arrival=arrival, offline=offline, with_ops=True)
    return r


def test_one_account_past_the_cap_by_hand():
    """pastcap: 320 of Llama-3.1-8B at 1024/1024 sent as one burst to vLLM on an H100. The cache holds 295 at the mean
    context (the running wave) and 221.674 at the full one (K = 221.674 x 2048 = 453,988 tokens); vLLM admits all 320
    (their prompts fit: 320 x 1024 < K), so each holds a running slot 295 / 320 of the time: time share 320 / 295 =
    1.084746. The 295 wave's figures (the evaluation's own at C = 295): TTFT 3.64723 s, TPOT 38.6865 ms, life 54.5864 s,
    its prompts 6.2168 s for 295 x 1024 tokens (20.580 us a token). A burst's wave starts at the 320 admitted and is
    evicted down to 221.674: K ln(320 / 221.674) recomputed. fixP13: the running wave's evictions counted from the
    mean-context count unrounded, K / 1536 = 295.565 (not its floor 295): P = 73.891, R = K ln(295.565 / 221.674) = 130,604,
    D = 20,725, t_fill = 512 (O/2); its evicted decode 512 tokens alone at 15.0616 ms, after t_re = 130,604 x 20.580 us =
    2.68781 s: tail 10.3994 s. Beyond it K ln(320 / 295.565) = 453,988 x 0.079432 = 36,061 tokens, t_x = 0.74213 s (before
    fixP13 K ln(320 / 295) = 36,930, 0.76002 s, and the tail from 295). Before the evictions the 295 wave's TPOT is
    36.9926 ms, its life 44.0603 s. So TTFT = 3.64723 x 1.084746 = 3.95632 s; TPOT = (36.9926 + (73.891 x 2.68781 +
    20,725 x 0.0150616) / (295.565 x 1023)) x 1.084746 + 742.13 / 1023 = 41.959 + 0.725 = 42.685 ms (42.708 before); the
    makespan (44.0603 + 10.3994) x 1.084746 + 0.74213 = 59.8170 s (59.9724): 320 x 1024 / 59.8170 = 5,478.0 tok/s/GPU
    (5,463.8 before fixP13; 5,669.8 before pastcap: the admitted past the cap raised it)."""
    r = _sweep("vllm", np.array([295.0, 320.0]))
    ttft, tpot, tps = (np.ravel(r[k]) for k in ("ttft_s", "tpot_s", "output_tok_s_per_gpu"))
    life = np.ravel(r["time_parts"]["life"])
    assert ttft[0] == pytest.approx(3.64723, rel=1e-5) and tpot[0] * 1e3 == pytest.approx(38.6865, rel=1e-5)
    assert life[0] == pytest.approx(54.5864, rel=1e-5)
    held, runs = 453_988 / 2048, 453_988 / 1536
    P, R, D, t_fill = (float(x) for x in in_step_evictions(runs, held, isl=1024, osl=1024))
    assert (P, R, D, t_fill) == pytest.approx((73.891, 130_604, 20_725, 512.0), abs=1.0) and t_fill == pytest.approx(512.0, rel=1e-9)
    beyond = float(in_step_evictions(320.0, held, isl=1024, osl=1024)[1]) - R
    assert beyond == pytest.approx(453_988 * math.log(320 / runs), rel=1e-9) and beyond == pytest.approx(36_061, abs=1)
    rate = 6.2168033 / (295 * 1024)
    t_re, t_x = R * rate, beyond * rate
    assert t_re == pytest.approx(2.68781, rel=1e-5) and t_x == pytest.approx(0.74213, rel=1e-4)
    tail = t_re + 512 * 0.0150616
    assert ttft[1] == pytest.approx(3.95632, rel=1e-5) and ttft[1] == pytest.approx(ttft[0] * 320 / 295, rel=1e-12)
    want_tpot = (36.9926e-3 + (P * t_re + D * 0.0150616) / (runs * 1023)) * 320 / 295 + t_x / 1023
    assert tpot[1] == pytest.approx(want_tpot, rel=1e-5) and tpot[1] * 1e3 == pytest.approx(42.685, abs=2e-3)
    assert life[1] == pytest.approx((44.0603 + tail) * 320 / 295 + t_x, rel=1e-5) and life[1] == pytest.approx(59.8170, rel=1e-5)
    assert tps[1] == pytest.approx(320 * 1024 / 59.8170, rel=1e-5) and tps[1] == pytest.approx(5478.0, abs=0.1)
    # the first token's share wait is its own breakdown row (serve.estimate._wait_rows: the rows still sum to TTFT)
    assert float(np.ravel(r["time_parts"]["shared_ttft"])[1]) == pytest.approx(ttft[0] * 25 / 295, rel=1e-9)


def test_a_burst_never_speeds_up_a_request_across_the_cap():
    """frev12 #1's sweep, one evaluate over C = 200 ... 419 (one code path: its 295 and 296 are estimate's above): TTFT and
    TPOT never fall from C to C + 1, and past the cap (295) tok/s/GPU never rises (pastcap; before it rose 5,534 @295 ->
    6,019 @400, +0.13% a request; within the cap, where the evictions grow, it falls from 222 on). fixP13: 296's +0.21% on
    295 is the evicted tail's decode attention at 1,792 tokens, the mean context past the cap (test_one_request_past_the_
    cap_keeps_the_evictions); from 296 on it falls (5,545.5 @296, 5,342.3 @400; 5,530.8 and 5,329.1 before fixP13)."""
    C = np.arange(200, 420)
    r = _sweep("vllm", C)
    tpot, ttft, tps = (np.ravel(r[k]) for k in ("tpot_s", "ttft_s", "output_tok_s_per_gpu"))
    assert tpot[C == 296] * 1e3 == pytest.approx(38.826, abs=1e-3) and tps[C == 296] == pytest.approx(5545.5, rel=1e-4)
    assert tps[C == 400] == pytest.approx(5342.3, rel=1e-4)
    assert np.all(np.diff(tpot) >= 0) and np.all(np.diff(ttft) >= 0) and np.max(tps[1:] / tps[:-1]) < 1.0025
    assert np.all(np.diff(tps[C >= 296]) <= 0)


@settings(max_examples=12, deadline=None)
@given(engine=st.sampled_from(["vllm", "sglang", "trtllm"]), mode=st.sampled_from(["burst", "waves", "offline"]),
       case=st.sampled_from([("llama-3.1-8b", "h100", 1, 1024, 1024), ("llama-3.1-8b", "h100", 1, 8192, 1024),
                             ("llama-3.1-70b", "h100", 2, 1024, 8192), ("qwen3-32b", "h200", 1, 2048, 2048)]))
def test_past_the_cap_nothing_gets_faster(engine, mode, case):
    """The invariant (pastcap): past the largest batch the KV cache holds (max_concurrency), more requests in flight never
    raise tok/s/GPU nor lower TTFT or TPOT, on every engine, for a burst, waves and an offline batch: the engine runs the
    same batch and the rest share its slots (recomputing what they are evicted from) or queue."""
    model, gpu, tp, isl, osl = case
    probe = _sweep(engine, np.array([1.0]), model=model, gpu=gpu, tp=tp, isl=isl, osl=osl)
    cap = float(np.ravel(probe["max_concurrency"])[0])
    assume(cap >= 1)
    C = cap + np.arange(0.0, 1.5 * cap, max(1.0, cap // 60))
    r = _sweep(engine, C, arrival="waves" if mode == "offline" else mode, offline=mode == "offline", model=model, gpu=gpu, tp=tp,
               isl=isl, osl=osl)
    tpot, ttft, tps = (np.ravel(r[k]) for k in ("tpot_s", "ttft_s", "output_tok_s_per_gpu"))
    tol = 1e-9
    # from the cap to the next request the evicted tail's mean context moves (its wave from C = cap to the mean-context
    # count unrounded, fixP13) and may cross the decode attention's 256-token step (+0.21% at 1k/1k); past it, none moves
    assert tps[1] <= tps[0] * 1.0025 and np.all(tps[2:] <= tps[1:-1] * (1 + tol)), (engine, mode, case)
    assert np.all(ttft[1:] >= ttft[:-1] * (1 - tol)) and np.all(tpot[1:] >= tpot[:-1] * (1 - tol)), (engine, mode, case)


def test_waves_price_the_first_wave_alone_and_sglang_says_it():
    """In waves estimate prices the steady state (no first wave: SchedulerFlags.rounds inf), which the evictions leave out
    of step: TPOT is the mean sizing's, as before (40.85 ms), and the line says where it is priced. SGLang retracts
    (ScheduleBatch.retract_decode) and raises its new-token ratio: said, not priced."""
    r = _est("--backend", "vllm", "--concurrency", "290")
    assert r["tpot_ms"] == pytest.approx(40.85, abs=0.02)
    assert "priced in a run's first wave alone" in r["in_step"]
    assert not get_engine("sglang").recomputes_evicted and get_engine("vllm").recomputes_evicted
    sg = _est("--backend", "sglang", "--concurrency", "250", "--arrival", "burst")  # 206 held at 2048 tokens
    assert "preempts about 44 of them to recompute later (not priced" in sg["in_step"]


def test_a_cache_short_of_one_request_says_nothing_is_priced():
    """Review fixW13 #2: Llama-3.1-70B on 2 H100s (TP2), vLLM, 8,000 + 30,000 tokens, one request in a burst: the KV
    cache holds 30,595 tokens, 0.805 of one request at its full 38,000, so the pricing's gate (held >= 1,
    serve.aggregated._in_step_priced) prices no eviction (nothing else runs to evict), and the line said "(priced: ...
    which TPOT and tok/s/GPU include)" of 0 s. Now it says the request cannot finish and vLLM's start check, and that
    nothing is priced; the figures are the mean sizing's."""
    code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--tp", "2", "--engine", "vllm", "--isl", "8000",
                         "--osl", "30000", "--concurrency", "1", "--arrival", "burst", "--json", "--breakdown")
    assert code == 0, err
    r = json.loads(out)
    assert not any(row["name"].startswith("preempt") for row in r["breakdown"])  # no eviction row: nothing priced
    said = r["in_step"]
    assert "priced:" not in said and "preempts" not in said and "not priced" in said
    assert said.startswith("one request reaches 8000+30000 tokens and the KV cache holds 30,595 tokens")
    assert "_check_enough_kv_cache_memory" in said
    # the same request with the room for it (8,000 + 20,000 = 28,000 < 30,595): nothing to say
    code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--tp", "2", "--engine", "vllm", "--isl", "8000",
                         "--osl", "20000", "--concurrency", "1", "--arrival", "burst", "--json")
    assert code == 0, err
    assert "in_step" not in json.loads(out)
def test_a_longer_prompt_never_answers_faster_around_the_cap():
    """fixP13, the consistency review's repro: Llama-3.1-8B on an H100, vLLM, 64 sent as one burst at OSL 256. From ISL 7,832
    to 7,848 the largest batch the cache holds at the mean context steps 57 -> 56 while vLLM still admits 57 (their prompts'
    blocks fit) and evicts down to the 56.13 / 56.02 the cache holds at the full context: before, the running wave's
    evictions were counted from the floor (57 -> 56.13 priced, 56 -> 56.02 none) and the admitted past it by the share, so
    TTFT 7,775.5 -> 7,687.2 ms and tok/s/GPU 769.0 -> 804.9 (+4.7%). Now the running wave's evictions count from the
    mean-context count unrounded, K / (L + O/2), and the share from the admitted unrounded, K / L (K = held x (L + O)): at
    7,848, 56.020 x 8,104 / 7,976 = 56.919 running, 56.020 x 8,104 / 7,848 = 57.847 admitted over the 56 slots priced."""
    r = _sweep("vllm", 64.0, isl=np.array([7816.0, 7832.0, 7848.0, 7864.0]), osl=256)
    ttft, tpot, tps = (np.ravel(r[k]) for k in ("ttft_s", "tpot_s", "output_tok_s_per_gpu"))
    assert list(np.ravel(r["max_concurrency"])) == [57.0, 57.0, 56.0, 56.0]
    assert ttft * 1e3 == pytest.approx([7525.0, 7568.4, 7620.9, 7664.3], abs=0.1)  # 7,527.3 / 7,775.5 / 7,687.2 / 7,716.7 before
    assert tps == pytest.approx([761.59, 760.65, 757.65, 756.72], abs=0.01)  # 768.4 / 769.0 / 804.9 / 798.7 before
    assert tpot * 1e3 == pytest.approx([30.848, 30.785, 30.851, 30.788], abs=1e-3)  # 30.839 / 29.611 / 30.430 / 30.431 before
    assert float(np.ravel(r["time_parts"]["time_share"])[2]) * 56 == pytest.approx(57.847, abs=1e-3)
    assert np.all(np.diff(ttft) > 0) and np.all(np.diff(tps) < 0)


@settings(max_examples=10, deadline=None)
@given(engine=st.sampled_from(["vllm", "sglang"]), mode=st.sampled_from(["burst", "waves", "offline"]),
       case=st.sampled_from([("llama-3.1-8b", "h100", 64, 256, 7000), ("qwen3-32b", "h200", 56, 512, 5000),
                             ("llama-3.1-8b", "h100", 40, 1024, 11000)]))
def test_past_the_cap_a_longer_prompt_is_never_faster(engine, mode, case):
    """fixP13's invariant: at a fixed C past the cap, kept in step (the cache holds 63 -> 49, 50 -> 36, 39 -> 33 over each
    sweep of 500 prompt lengths, 4 tokens apart), a longer prompt never gives an earlier first token, and tok/s/GPU never
    rises by more than 0.15% from one length to the next (the decode's own kernel steps, e.g. a tail batch's; before fixP13
    vLLM's burst rose up to +7.6% where the cap stepped, its TTFT fell 3.5% and TPOT 5.6%). TPOT may fall, smoothly (at
    most 0.3% a step, none a whole request's share, 1 / 50 of the slots; 0.25% where Qwen3-32B's 49 slots become 48, a
    CUDA graph's size, which no padding slows): the requests admitted past the cap, K / L
    unrounded, fall as the prompt grows, and with them the share of the slots each waits for (Qwen3-32B's vLLM burst 43.7
    -> 41.3 ms over the sweep); before fixP13 it fell by steps (SGLang's 2.5% where its admission's floor stepped)."""
    model, gpu, C, osl, lo = case
    isl = lo + 4.0 * np.arange(500)
    r = _sweep(engine, float(C), arrival="waves" if mode == "offline" else mode, offline=mode == "offline", model=model, gpu=gpu,
               isl=isl, osl=osl)
    tpot, ttft, tps = (np.ravel(r[k]) for k in ("tpot_s", "ttft_s", "output_tok_s_per_gpu"))
    assert np.all(np.ravel(r["max_concurrency"]) < C)
    assert np.all(ttft[1:] >= ttft[:-1] * (1 - 1e-9)), (engine, mode, case)
    assert np.all(tps[1:] <= tps[:-1] * 1.0015), (engine, mode, case)
    assert np.all(tpot[1:] >= tpot[:-1] * 0.997), (engine, mode, case)
