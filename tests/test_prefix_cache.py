"""Prefix-cache hits remove prefill work (serve/aggregated.py prefix_hit, Workload.prefix_hit)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL
from llm_codesign.spec.plan import Plan, Workload
from llm_codesign.spec.registry import get_model

H200 = get_gpu("h200")
CAL = calibration_for(H200)
LLAMA = get_model("llama-3.1-70b")
R1 = get_model("deepseek-r1")
CONC = np.array([1, 8, 32, 128])


def run(model, plan, isl, osl, h, backend="trtllm", arrival="waves"):
    return evaluate(model, Serving(gpu=H200, prec=model.default_precision, plan=plan, engine=get_engine(backend)), cal=CAL,
                    concurrency=CONC, isl=isl, osl=osl, prefix_hit=h, arrival=arrival)


def test_no_hit_is_the_model_without_a_cache():
    a = evaluate(LLAMA, Serving(gpu=H200, prec=LLAMA.default_precision, plan=Plan(8)), cal=CAL, concurrency=CONC, isl=8192,
                 osl=512)
    b = run(LLAMA, Plan(8), 8192, 512, 0.0, arrival=DEFAULT_ARRIVAL)
    for k in ("ttft_s", "tpot_s", "output_tok_s_per_gpu", "max_concurrency"):
        assert np.array_equal(a[k], b[k]), k


def test_a_hit_is_between_the_short_prompt_and_the_long_one():
    """Half of an 8k prompt cached: less prefill than the whole 8k (TTFT falls), more than a 4k prompt
    with no cache (the new tokens attend to the cached 4k, and decode reads 8k of context)."""
    long, half, short = run(LLAMA, Plan(8), 8192, 512, 0.0), run(LLAMA, Plan(8), 8192, 512, 0.5), run(LLAMA, Plan(8), 4096, 512, 0.0)
    assert np.all(half["ttft_s"] < long["ttft_s"]) and np.all(half["ttft_s"] > short["ttft_s"])
    assert np.all(half["tpot_s"] >= short["tpot_s"])
    assert np.all(half["output_tok_s_per_gpu"] > long["output_tok_s_per_gpu"])
    assert np.array_equal(half["max_concurrency"], long["max_concurrency"])  # each sequence still holds its whole KV


@settings(max_examples=25, deadline=None)
@given(h1=st.floats(0.0, 0.95), h2=st.floats(0.0, 0.95), backend=st.sampled_from(["trtllm", "vllm", "sglang"]),
       arrival=st.sampled_from(["closed_loop", "burst"]))
def test_more_hits_never_slow_a_request(h1, h2, backend, arrival):
    lo, hi = sorted((h1, h2))
    a = run(R1, Plan(1, 1, 8, 1, 8, 1), 4096, 1024, lo, backend, arrival)
    b = run(R1, Plan(1, 1, 8, 1, 8, 1), 4096, 1024, hi, backend, arrival)
    assert np.all(b["ttft_s"] <= a["ttft_s"] * (1 + 1e-12))
    # throughput may dip by parts per million: a shorter prefill span lets arrivals bunch up a little
    # more (the queue-spread term of aggregated.evaluate), never by more
    assert np.all(b["output_tok_s_per_gpu"] >= a["output_tok_s_per_gpu"] * (1 - 1e-4))
    assert np.all(np.isfinite(b["ttft_s"])) and np.all(b["ttft_s"] > 0)


def test_workload_checks_the_hit_rate():
    assert Workload(prefix_hit=0.25).prefix_hit == 0.25
    for bad in (-0.1, 1.0, 2, float("nan"), True):
        with pytest.raises(InputError, match="prefix_hit"):
            Workload(prefix_hit=bad)


def test_waves_of_cached_prompts_fill_the_step_with_more_of_them():
    """Under "waves" an engine that mixes chunks into decodes keeps cohorts of what one step's budget completes,
    budget / new tokens (serve.aggregated._cohort): a hit shortens each prompt, so more of them share the step, which
    still carries a full budget of new tokens (less the other requests' decodes), now attending to cached context too.
    The first token can come a little later, more so the longer the prompt: at most vLLM 1.8% at 4,096 tokens and 3.1%
    at 8,192 (a 20-point grid of hits, 0-0.95, every pair, at 1-128 requests: measured here; 0.6% and 0.4% before the
    re-fit ba3a87f, whose vLLM prefill queue share 0.064 -> 0.050 and attention-DP hold 0.48 -> 0.23 steps shorten the
    uncached first token more: 32 requests, hits 0 -> 0.5, 1572.0 -> 1579.9 ms with the old vLLM values, 1548.5 ->
    1576.3 ms now; vLLM's request cost is not in it, at 0 ms the same); SGLang, which prefills the
    whole wave first, never. TensorRT-LLM counts a prompt's cached prefix against its budget (it finds the reused blocks
    after scheduling: Engine.budget_counts_cached, serve.aggregated.prompt_budget), so its cohort stays the prompts the
    whole ISL fits and its step shrinks with the hit: never later (it was 40.3% later at 4,096 tokens and 38.2% at 8,192
    while its hits were priced off the budget, docs/modelling-notes.md#fixW13-prefix-waves)."""
    plan, hits = Plan(1, 1, 8, 1, 8, 1), np.linspace(0.0, 0.95, 20)
    for backend, isl, most in (("trtllm", 4096, 1.0 + 1e-12), ("trtllm", 8192, 1.0 + 1e-12), ("vllm", 4096, 1.022), ("vllm", 8192, 1.035),
                               ("sglang", 4096, 1.0 + 1e-12), ("sglang", 8192, 1.0 + 1e-12)):
        t = np.array([run(R1, plan, isl, 1024, h, backend)["ttft_s"] for h in hits])
        worst = max(float(np.max(t[j] / t[i])) for i in range(len(hits)) for j in range(i + 1, len(hits)))
        assert worst <= most, (backend, isl, worst)


@pytest.mark.parametrize("isl, hit, new", [
    (1000, 0.3, 700),
    # 100 x 0.29 is 28.999999999999996 in floating point: 29 whole tokens cached, not 28
    (100, 0.29, 71),
    (1024, 0.0, 1024),
])
def test_a_workloads_new_tokens_are_the_prompt_less_its_whole_cached_tokens(isl, hit, new):
    from llm_codesign.spec.plan import Workload

    assert Workload(isl=isl, prefix_hit=hit).new_tokens == new


def test_tensorrt_llms_waves_first_token_never_later_with_more_hits():
    """Review fixW13 #1: Llama-3.1-70B TP8 H200, TensorRT-LLM, 1,024 / 1,024 in waves: TTFT 411.9 / 422.9 / 417.6 / 437.6
    / 420.1 / 290.1 ms at hits 0-0.95 while its hits were priced off the step budget (cohorts of 7, 15, 31 ... prompts,
    every step full); the engine charges the whole prompt (MicroBatchScheduler: getNumTokens), so a step still takes
    floor(8,129 / 1,024) = 7 prompts, each computing its new tokens: 411.9 -> 94.6 ms at 64 requests."""
    hits = np.array([0.0, 0.25, 0.5, 0.75, 0.9, 0.95])
    conc = np.array([16, 64, 256])
    at = Serving(gpu=H200, prec=LLAMA.default_precision, plan=Plan(8), engine=get_engine("trtllm"))
    t = np.array([evaluate(LLAMA, at, cal=CAL, concurrency=conc, isl=1024, osl=1024, prefix_hit=h, arrival="waves")["ttft_s"]
                  for h in hits])
    assert np.all(np.diff(t, axis=0) <= 0.0), t
    # 64 requests: the first and the last, as estimate prints them
    assert t[0, 1] * 1e3 == pytest.approx(411.9, abs=0.1) and t[-1, 1] * 1e3 == pytest.approx(94.6, abs=0.1)


def test_the_arrival_line_says_where_hits_grow_the_waves_cohorts():
    """vLLM counts new tokens only (Scheduler.schedule: num_tokens - num_computed_tokens after the prefix lookup), so under
    waves a hit fits more prompts in a step: 64 requests of 1,024 half cached, floor(8,129 / 512) = 15 a cohort where
    TensorRT-LLM keeps 7. estimate's arrival line says so for vLLM, not for TensorRT-LLM nor without hits."""
    import json

    from conftest import cli

    def said(*args):
        code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--concurrency", "64", "--json", *args)
        assert code == 0, err
        return json.loads(out)["arrival_text"]

    assert "the cohorts grow" in said("--engine", "vllm", "--prefix-hit", "0.5")
    assert "cohorts grow" not in said("--engine", "trtllm", "--prefix-hit", "0.5")
    assert "cohorts grow" not in said("--engine", "vllm")
    assert "cohorts grow" not in said("--engine", "vllm", "--prefix-hit", "0.5", "--arrival", "closed_loop")
