"""A launch's batch cap and a prompt's chunks priced as the files run them (branch leftD, the left-overs of
docs/modelling-notes.md#leftV-points-as-files): vLLM's stated --max-num-seqs above its default 1,024, its sampler warm-up
sized by it, a disaggregated vLLM frontier point's decode pool at its file's cap, SGLang's disaggregated PP prefill."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import cli

from llm_codesign.cost import memory
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model


def _ok(*args):
    code, out, err = cli(*args)
    assert code == 0, err
    return out


def test_vllm_takes_a_stated_max_num_seqs_in_place_of_its_default():
    # vLLM keeps a given max_num_seqs and defaults only an unset one (engine/arg_utils.py:3164-3181@0.33.0): 2,048 runs
    # 2,048, above the 1,024 default; TensorRT-LLM's and SGLang's caps stay below their own limits, as before
    h100 = get_gpu("h100")
    vllm, trt = get_engine("vllm"), get_engine("trtllm")
    assert np.asarray(vllm.batch_limit(h100, np.array([np.inf, 34.0, 2048.0]))).tolist() == [1024.0, 34.0, 2048.0]
    assert np.asarray(trt.batch_limit(h100, np.array([np.inf, 34.0, 8192.0]))).tolist() == [4096.0, 34.0, 4096.0]


def test_the_sampler_warm_up_is_sized_by_the_stated_cap():
    # vLLM's profile run samples min(max_num_seqs, max_num_batched_tokens) rows of logits (v1/worker/gpu/model_runner.py:862,
    # 993-1050@0.33.0), 18 B a logit (VLLM_SAMPLER_BYTES_PER_LOGIT): Llama-3.1-8B's 128,256-token vocabulary at 8,192 tokens
    # holds 2,048 x 128,256 x 18 = 4,728,029,184 B at --max-num-seqs 2,048, 1,024 rows' 2,364,014,592 B less at 1,024, and
    # the forward's activations bind at 34 rows (the same bytes at 34 and 1)
    m = get_model("llama-3.1-8b")
    act = memory.activation_bytes(m, Plan().broadcast(), 8192, budget="total", max_seqs=np.array([1.0, 34.0, 1024.0, 2048.0]))
    assert act[3] - memory.CUDA_CONTEXT_BYTES == pytest.approx(4_728_029_184.0, rel=1e-12)
    assert act[3] - act[2] == pytest.approx(1024 * 128_256 * 18.0, rel=1e-12)
    assert act[0] == act[1] < act[2]


def test_an_estimate_prices_a_stated_vllm_cap_above_the_default():
    # Llama-3.1-8B on one H100, vLLM, 2,000 requests of 256/128 at --max-batch 2048: held at 1,024 ("by vllm's own batch
    # limit", TTFT 11,682 ms of which 11.1 s queue) while the file runs 2,048. Now the KV cache binds at 1,362, its room
    # less the 2,048-row sampler's 4.73 GB (activations 3.11 -> 5.48 GB); the 638 admitted past it share the running slots
    # (pastcap's one account, docs/modelling-notes.md#pastcap-one-account): TTFT 3,873.4 -> 4,081.6 ms, 12,056.6 -> 11,939.6
    r = json.loads(_ok("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--isl", "256", "--osl", "128",
                       "--concurrency", "2000", "--max-batch", "2048", "--max-num-tokens", "8192", "--json"))
    assert (r["max_batch"], r["max_batch_text"]) == (1362, "1,362, by the KV cache")
    assert r["memory"]["activations_gb"] == pytest.approx(0.75 + 4.728029184, abs=1e-9)
    # fixP13: the 1,702.7 admitted unrounded (K / 256), where 1,702 whole: the slot queue 2,000 / 1,702.7 - 1 cohorts,
    # TTFT 4,081.6 -> 4,072.0 ms; tok/s/GPU unmoved (the slots' share and the served move together)
    assert r["ttft_ms"] == pytest.approx(4072.0208, abs=1e-3) and r["output_tok_s_per_gpu"] == pytest.approx(11939.568, abs=1e-2)


def test_a_vllm_search_runs_the_batches_its_files_state(tmp_path):
    # each vLLM point's file writes max-num-seqs = its batch; above 1,024 the search held it at the default and pruned the
    # batches past it: Llama-3.1-8B on one H100 at 256/128, best 13,697 tok/s/GPU at 884 requests. Now its largest point
    # runs 2,751 (its KV cache's limit at a 2,751-row sampler), and point == export-point == import
    out = _ok("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--isl", "256", "--osl", "128", "--engine", "vllm", "--json")
    (tmp_path / "f.json").write_text(out)
    points = json.loads(out)["frontier"]
    assert points[0]["deployment"]["max_batch"] == 2751
    assert points[0]["output_tok_s_per_gpu"] == pytest.approx(18517.4, abs=0.1)
    for i in (0, len(points) // 2):
        f = tmp_path / f"p{i}.yaml"
        _ok("export-point", str(tmp_path / "f.json"), "--index", str(i), "-o", str(f))
        assert f"max-num-seqs: {points[i]['deployment']['max_batch']}\n" in f.read_text()
        back = json.loads(_ok("import", str(f), "--json"))
        for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
            assert back[k] == pytest.approx(points[i][k], rel=1e-9), (i, k)


def test_a_disaggregated_vllm_point_is_priced_at_its_files_caps(tmp_path):
    # pareto --disagg's decode pool priced vLLM's default max_num_seqs (a 1,024-row sampler) while the point's Dynamo file
    # writes the decode workers' --max-num-seqs = the batch a rank, which import prices: the decode pool now takes the
    # file's cap (explore.search.file_capture), so a point == its export-point == its import
    out = _ok("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "4", "--isl", "4096", "--osl", "256", "--engine", "vllm",
              "--disagg", "--json")
    (tmp_path / "d.json").write_text(out)
    points = [p for p in json.loads(out)["frontier"] if p["series"] == "disagg"]
    assert len(points) == 37 and points[0]["ttft_ms"] == pytest.approx(4141.9057, abs=1e-3)
    for i in (0, len(points) - 1):
        f = tmp_path / f"d{i}.yaml"
        _ok("export-point", str(tmp_path / "d.json"), "--series", "disagg", "--index", str(i), "-o", str(f))
        assert f"- --max-num-seqs\n          - '{points[i]['deployment']['concurrency_per_instance']}'" in f.read_text()
        back = json.loads(_ok("import", str(f), "--json"))
        for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
            assert back[k] == pytest.approx(points[i][k], rel=1e-9), (i, k)


def test_a_disaggregated_prefill_pool_pipelines_as_its_engine_does():
    # serve.disagg.prefill_pool priced a prompt's chunks one after another over PP (isl / chunk x pp stage steps) while an
    # aggregated SGLang rank pipelines them (srt/managers/scheduler.py:2463-2466@0.5.11): 4 chunks over 4 stages are
    # 4 + 4 - 1 = 7 stage steps, not 16. One rule (serve.aggregated.over_pipeline): SGLang's with or without cpp, vLLM's
    # only with cpp
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.serve.disagg import prefill_pool
    from llm_codesign.spec.precision import Precision

    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    cal, plan, isl = calibration_for(g), Plan(tp=1, pp=4), np.array([8192.0])
    prec = Precision.of("fp8")
    pool = {e: {cpp: prefill_pool(m, g, prec, plan, costs=get_engine(e).costs(cal), isl=isl, max_num_tokens=2048, cpp=cpp)
                for cpp in (False, True)} for e in ("sglang", "vllm")}
    assert pool["vllm"][True]["t_loaded"][0] == pytest.approx(pool["vllm"][False]["t_loaded"][0] * 7 / 16, rel=1e-12)
    assert pool["sglang"][False]["t_loaded"][0] == pool["sglang"][True]["t_loaded"][0]


def test_disagg_says_how_its_prefill_pool_crosses_the_stages():
    # Llama-3.1-70B, prefill TP1 PP4 and decode TP4 on H100, SGLang, one 8,192-token prompt in 2,048-token chunks: the
    # prefill 1,701.6 -> 744.45 ms (16 -> 7 stage steps of 106.35 ms), said as estimate's PP prefill row says it
    args = ("disagg", "llama-3.1-70b", "--gpu", "h100", "--prefill", "tp=1,pp=4", "--decode", "tp=4", "--isl", "8192", "--osl", "256",
            "--max-num-tokens", "2048", "--concurrency", "1", "--json")
    sg = json.loads(_ok(*args, "--engine", "sglang"))
    assert sg["rows"][0]["prefill_ms"] == pytest.approx(744.45, abs=0.01)
    assert ("prefill pool: one request's 4 prefill chunks of 2,048 tokens pipelined over its 4 PP stages: SGLang's scheduler "
            "does so by default (chunked pipeline parallelism, no flag); no bundled run measures it") in sg["notes"]
    vl = json.loads(_ok(*args, "--engine", "vllm"))
    assert any(n.startswith("prefill pool: one request's 4 prefill chunks of 2,048 tokens cross its 4 PP stages one after another")
               for n in vl["notes"])
