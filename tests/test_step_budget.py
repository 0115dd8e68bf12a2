"""A step's token budget caps the decode batch where the engine counts decodes in it (TensorRT-LLM's max_num_tokens,
vLLM's max_num_batched_tokens, ATOM's; not SGLang's chunked_prefill_size): Engine.budget_batch, priced by
serve.aggregated and serve.disagg, and refused at the edge where no request could decode."""
import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import disagg_pair
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.serve.disagg import evaluate_disagg
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.plan import Plan, SpecDecoding

EAGLE = SpecDecoding("eagle3", 3, mean_accepted=2.5)


@pytest.mark.parametrize("backend,budget,k,pp,seqs", [
    ("trtllm", 32, 0, 1, 32),   # one token per decoding request
    ("trtllm", 32, 3, 1, 8),    # 1 + 3 draft tokens each: floor(32 / 4)
    ("trtllm", 30, 3, 2, 14),   # each of 2 micro-batches its own step: 2 x floor(30 / 4)
    ("atom", 32, 3, 1, 8),
    ("vllm", 32, 3, 2, 16),     # 2 x floor(32 / 4), under max_num_seqs lowered to 32
    ("vllm", 32, 0, 2, 32),     # 2 x 32 micro-batched, but max_num_seqs = min(1024, 32) over them all
    ("sglang", 32, 3, 1, np.inf),  # decodes outside its prefill budgets
])
def test_budget_batch_follows_each_engines_scheduler(backend, budget, k, pp, seqs):
    assert get_engine(backend).budget_batch(budget, k, pp) == seqs


def _at(model, gpu, cal, C, budget, *, backend="trtllm", spec=None):
    at = Serving(gpu=gpu, prec=model.default_precision, plan=Plan(), engine=get_engine(backend), spec=spec, max_num_tokens=budget)
    return evaluate(model, at, cal=cal, concurrency=C, isl=1024, osl=1024)


def test_64_requests_under_a_32_token_budget_decode_15_at_a_time_the_rest_wait(llama8b, h100, cal_h100):
    r64, r15 = _at(llama8b, h100, cal_h100, 64, 32), _at(llama8b, h100, cal_h100, 15, 32)
    # the budget schedules 32 decodes, but in steady state each decode brings 1,024 / 1,023 prompt
    # tokens a step with the request that replaces it, so floor(32 / (1 + 1024 / 1023)) = 15 decode at once
    # (serve.aggregated.budget_fill; 32 before, which left the prompts no token): the decode step of 15 requests
    # under the engine's own 8,192-token budget
    assert r64["step_s"] == pytest.approx(_at(llama8b, h100, cal_h100, 15, None)["step_s"], rel=1e-12)
    assert r64["max_concurrency"] == 32  # the budget's decode tokens (capacity); the step decodes 15 (budget_fill)
    # TensorRT-LLM's scheduler takes the same first ones every step (no rotation): they decode as 15 alone do, and the
    # other 49 wait 64 / 15 - 1 request lives, a life 15 x OSL / throughput (1 GPU), before their turn
    assert r64["tpot_s"] == pytest.approx(r15["tpot_s"], rel=1e-12)
    assert r64["output_tok_s_per_gpu"] == pytest.approx(r15["output_tok_s_per_gpu"], rel=1e-12)
    life = 15 * 1024 / r15["output_tok_s_per_gpu"]
    assert r64["ttft_s"] - r15["ttft_s"] == pytest.approx((64 / 15 - 1) * life, rel=1e-9)


def test_estimate_says_the_budget_binds(tmp_path):
    # TensorRT-LLM takes a 1,024-token prompt under a 32-token budget only chunked (it refuses it otherwise: crev #5)
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--max-num-tokens", "32", "--concurrency", "64",
                                 "--chunked-prefill", "--json"])
    d = json.loads(r.stdout)
    # 32 decode tokens less the prompts arriving: 15 (budget_fill); the memory holds all 64 (fits), 64 - 15 = 49 wait (queued)
    assert (d["max_batch"], d["fits"], d["fits_memory"], d["queued"]) == (15, True, True, 49)
    assert d["over_capacity"] == ("a step of trtllm schedules at most 32 tokens (1 per decoding request and the prompts arriving), "
                                  "so 15 requests decode and the rest wait for whole requests to finish (longer TTFT)")
    # a launch configuration exported for the same deployment says so too (vLLM's, which chunks its prompts: the same
    # 15 of 64), and per micro-batch under pipeline parallelism
    r = CliRunner().invoke(app, ["export", "llama-3.1-8b", "--gpu", "h100", "--max-num-tokens", "32", "--concurrency", "64",
                                 "--backend", "vllm", "--out", str(tmp_path / "x.yaml"), "--json"])
    assert json.loads(r.stdout)["over_capacity"] == d["over_capacity"].replace("trtllm", "vllm")
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--pp", "2", "--max-num-tokens", "32",
                                 "--concurrency", "128", "--chunked-prefill", "--json"])
    assert json.loads(r.stdout)["over_capacity"] == (
        "a step of trtllm schedules at most 32 tokens per pipeline micro-batch (1 per decoding request and the prompts arriving), "
        "so 30 requests decode and the rest wait for whole requests to finish (longer TTFT)")


def test_draft_tokens_count_in_the_budget(llama8b, h100, cal_h100):
    # 1 + 3 tokens a request: a 32-token budget schedules 8 of 64, and beside the prompts arriving (2.5 accepted a step,
    # 1,024 / 1,023 x 2.5 prompt tokens each) floor(32 / 6.5024) = 4 decode, each step the step of 4
    r = _at(llama8b, h100, cal_h100, 64, 32, spec=EAGLE)
    assert r["max_concurrency"] == 8
    assert r["step_s"] == pytest.approx(_at(llama8b, h100, cal_h100, 4, None, spec=EAGLE)["step_s"], rel=1e-12)


def test_sglang_decodes_every_running_request_whatever_its_chunk(llama8b, h100, cal_h100):
    small, own = _at(llama8b, h100, cal_h100, 64, 32, backend="sglang"), _at(llama8b, h100, cal_h100, 64, None, backend="sglang")
    assert small["step_s"] == pytest.approx(own["step_s"], rel=1e-12)
    assert small["max_concurrency"] > 64


def test_a_decode_pools_budget_holds_its_batch_the_rest_wait_for_a_slot(llama8b, h100, cal_h100):
    def pool(C, budget):
        prefill, decode = disagg_pair(h100, llama8b.default_precision, Plan(), Plan())
        decode = replace(decode, max_num_tokens=budget)
        return evaluate_disagg(llama8b, prefill, decode, calibration=cal_h100, prefill_instances=1, decode_instances=1, concurrency=C,
                               isl=1024, osl=1024)

    r64, r32 = pool(64, 32), pool(32, None)
    assert r64["max_concurrency"] == 32
    assert r64["tpot_s"] == pytest.approx(r32["tpot_s"], rel=1e-12)
    assert r64["decode_slot_wait_s"] > 0.0


def _error(*args):
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"})
    assert r.exit_code == 2 and "Traceback" not in r.stdout + r.stderr
    return [x for x in r.stderr.splitlines() if x.strip()]


SPEC = ["--spec", "eagle3", "--draft-len", "3", "--acceptance", "2.5", "--concurrency", "8"]


def test_a_budget_below_one_decoding_request_is_one_line():
    assert _error("estimate", "llama-3.1-8b", "--gpu", "h100", "--max-num-tokens", "3", *SPEC) == [
        "error: max_num_tokens: 3 is not valid; at least 4: trtllm's step budget counts a decoding request's 1 + 3 draft tokens"]
    assert _error("disagg", "llama-3.1-8b", "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=1", "--decode-max-num-tokens", "2",
                  *SPEC) == [
        "error: decode_max_num_tokens: 2 is not valid; at least 4: trtllm's step budget counts a decoding request's 1 + 3 draft tokens"]
    # a search's fixed draft length too (it kept only the points without speculation)
    assert _error("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--max-num-tokens", "2", *SPEC[:6]) == [
        "error: max_num_tokens: 2 is not valid; at least 4: trtllm's step budget counts a decoding request's 1 + 3 draft tokens"]


def test_a_deployment_read_back_is_checked_too(llama8b, h100, cal_h100):
    from llm_codesign.errors import InputError
    from llm_codesign.serve.estimate import estimate
    from llm_codesign.spec.plan import Deployment, Workload

    dep = Deployment(gpu=h100, num_gpus=1, spec=EAGLE, max_num_tokens=3)  # as Deployment.from_dict builds one
    with pytest.raises(InputError, match=r"^max_num_tokens: 3 is not valid; at least 4: "):
        estimate(llama8b, dep, Workload(isl=1024, osl=1024, concurrency=8), calibration=cal_h100)


def test_sglang_takes_a_budget_below_the_draft():
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "sglang", "--max-num-tokens", "3", *SPEC,
                                 "--json"])
    assert r.exit_code == 0, r.stderr


def test_evaluate_exposes_the_batch_the_budget_decodes_and_estimate_reads_it():
    # one code path (serve.aggregated.evaluate) gives the batch an estimate reports: a 32-token budget decodes
    # floor(32 / (1 + 1024 / 1023)) = 15 of the 32 its decode tokens allow (capacity), and the budget binds; under the
    # engine's own 8,192-token budget it decodes floor(8192 / 2.000978) = 4,094, and the KV cache's 225 sequences bind
    import llm_codesign as lc

    m = lc.get_model("llama-3.1-8b")
    w = lc.Workload(isl=1024, osl=1024, concurrency=64)
    small = lc.evaluate(m, lc.deployment(m, gpu="h100", max_num_tokens=32), w)
    assert (small.max_concurrency.item(), small.max_batch.item(), bool(small.budget_binds.item())) == (32, 15, True)
    own = lc.evaluate(m, lc.deployment(m, gpu="h100"), w)
    assert (own.max_concurrency.item(), own.max_batch.item(), bool(own.budget_binds.item())) == (225, 225, False)
    # estimate refuses TensorRT-LLM's unchunked 1,024-token prompt over 32 tokens (crev #5): chunked prefill on, the same 15
    assert lc.estimate(m, lc.deployment(m, gpu="h100", max_num_tokens=32, chunked_prefill=True), w).max_batch == 15


def test_at_osl_1_the_budget_message_names_the_prompts_not_a_decode():
    # nothing decodes at OSL 1 (the one output token comes from the prefill): the 8,192-token budget holds
    # floor(8192 / (1024 + 1)) = 7 requests at once; with half of each prompt cached TensorRT-LLM still counts the whole
    # 1,024 (Engine.budget_counts_cached): 7, vLLM the 512 new ones: floor(8192 / (512 + 1)) = 15
    def over(*extra):
        r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--osl", "1", "--concurrency", "64", *extra, "--json"])
        d = json.loads(r.stdout)
        return d["max_batch"], d["over_capacity"]

    assert over() == (7, "a step of trtllm schedules at most 8192 tokens and at OSL 1 nothing decodes: the prompts arriving take them "
                         "(1024 tokens and 1 output token each), so 7 requests run at once and the rest wait for them to finish (longer TTFT)")
    assert over("--prefix-hit", "0.5")[0] == 7 and "(1024 tokens, cached prefix included, and 1 output token each)" in over("--prefix-hit", "0.5")[1]
    assert over("--prefix-hit", "0.5", "--engine", "vllm")[0] == 15
    assert "(512 tokens and 1 output token each)" in over("--prefix-hit", "0.5", "--engine", "vllm")[1]


def test_a_cached_prompt_longer_than_the_budget_is_charged_the_budget_not_its_whole_prompt():
    # TensorRT-LLM counts a prompt's cached prefix against its step budget, but a prompt counted past the budget takes the
    # budget and computes its new tokens (serve.aggregated.budget_charge, prompt_budget's rule): max(new, min(ISL, budget)).
    # 32,768 tokens 95% cached: 1,639 new, charged 8,192 (not 32,768), so budget_fill holds floor(8192 / (1 + 8192 / 15)) = 14
    # decodes, where charging the whole prompt held floor(8192 / (1 + 32768 / 15)) = 3 (frev13)
    from llm_codesign.serve.aggregated import budget_charge
    from llm_codesign.spec.engines import get_engine

    trt, vllm = get_engine("trtllm"), get_engine("vllm")
    assert budget_charge(1639.0, 31129.0, 8192.0, engine=trt) == 8192.0
    assert budget_charge(16384.0, 16384.0, 8192.0, engine=trt) == 16384.0  # more new tokens than the budget: all of them
    assert budget_charge(512.0, 512.0, 8192.0, engine=trt) == 1024.0  # within the budget: the whole prompt (fixW13's)
    assert budget_charge(1639.0, 31129.0, 8192.0, engine=vllm) == 1639.0
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--backend", "trtllm", "--concurrency", "64",
                                 "--prefix-hit", "0.95", "--isl", "32768", "--osl", "16", "--json"])
    d = json.loads(r.stdout)
    assert d["max_batch"] == 14
    assert "max_num_tokens 8192 / (1 + 8192/15)" in d["max_batch_text"]
