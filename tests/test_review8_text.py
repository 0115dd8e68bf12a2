"""The eighth newcomer review's text findings (newc8 #7, #8, #14): import states a queued TTFT's queue as estimate does
and counts the full-length sequences its KV cache holds; an attention head size no fused kernel takes is said on
estimate and export as lint says it; export says which release the figures are priced at and which the file's options
are read at."""
from __future__ import annotations

import json

import pytest
from conftest import cli

VLLM_055 = "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --gpu-memory-utilization 0.55 --kv-cache-dtype fp8"




def test_import_states_the_queue_and_counts_full_length_sequences():
    # newc8 #7: Llama-3.1-70B on 4x H100, vLLM at --gpu-memory-utilization 0.55, FP8 KV, 256 requests of 2048+512.
    # KV per token per GPU: 80 layers x 8 KV heads x 128 x 2 (K and V) x 1 B (FP8) / TP4 = 40,960 B. The cache's share:
    # 0.55 x 85.52 GB (the H100's reported 79.6 GiB) - 35.28 GB weights - 3.11 GB activations = 8.646 GB, 211,089 tokens:
    # 211,089 / 2,304 (vLLM sizes its batch at ISL + OSL/2) = 91.6 -> 91 run at once; / 2,560 (ISL+OSL) = 82.5 -> 82
    # whole. It read "the KV cache holds 91 sequences of 2048+512 tokens", and the line said nothing of the 40.8 s queue
    code, out, err = cli("import", VLLM_055, "--gpu", "h100", "--concurrency", "256", "--isl", "2048", "--osl", "512", "--json")
    assert code == 0, err
    r = json.loads(out)
    m = r["memory"]
    assert (m["kv_gb"] + m["free_gb"]) * 1e9 == pytest.approx(0.55 * m["capacity_gb"] * 1e9 - m["weights_gb"] * 1e9
                                                                             - m["activations_gb"] * 1e9, rel=1e-9)
    tokens = (m["kv_gb"] + m["free_gb"]) * 1e9 / (80 * 8 * 128 * 2 * 1 / 4)
    assert 211_089 <= tokens < 211_090 and int(tokens // 2304) == r["max_batch"] == 91 and int(tokens // 2560) == 82
    assert r["over_capacity"].startswith("the KV cache holds 91 sequences at their mean context (2048+256 tokens), 82 of the full 2048+512; ")
    code, out, err = cli("import", VLLM_055, "--gpu", "h100", "--concurrency", "256", "--isl", "2048", "--osl", "512")
    # 41.0 s of the TTFT: (256 / 103.07 admitted - 1) = 1.48 cohorts of the 27.6 s slot cycle (fixP13: in step the admitted
    # unrounded, 211,089 / 2,048 tokens; 1.49 at its floor, 103)
    q = r["queue"]
    assert abs(q["cohorts"] * q["cycle_ms"] - q["ttft_ms"]) < 1e-6 * q["ttft_ms"]
    # pastcap: in step (waves) the 103 admitted hold the 91 slots 91 / 103 of the time, first token included: 27.5 -> 27.6 s
    assert f"TTFT {r['ttft_ms']:.0f} ms (41.0 s of it queue: 1.48 cohorts of 27.6 s, which the bands include)" in out, out
    assert "at 256 requests: the KV cache holds 91 sequences at their mean context (2048+256 tokens), 82 of the full 2048+512" in out
    # the same clause as estimate's table row (render.intervals.queue_text, one function): estimate at the same plan
    code, est, _ = cli("estimate", "llama-3.1-70b", "--gpu", "h100", "--tp", "4", "--backend", "vllm", "--kv-dtype", "fp8",
                       "--concurrency", "256", "--isl", "2048", "--osl", "512", "--max-batch", "91")
    assert code == 0 and " of it queue: 1.81 cohorts of 24.4 s, which the bands include)" in est


def test_trtllm_counts_whole_sequences_as_its_batch():
    # TensorRT-LLM reserves ISL+OSL (GUARANTEED_NO_EVICT, kv_budget occupancy 1.0): its count is of whole sequences as
    # written, no mean context to tell apart
    from llm_codesign.serve.estimate import _over_capacity
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import Deployment, Plan, Workload
    from llm_codesign.spec.precision import Precision

    dep = Deployment(gpu=get_gpu("h100"), num_gpus=1, plan=Plan(), precision=Precision.of("bf16"), backend="trtllm")
    text = _over_capacity(dep, Workload(isl=2048, osl=512, concurrency=64), max_batch=40, budget_binds=False, whole=40)
    assert text.startswith("the KV cache holds 40 sequences of 2048+512 tokens; trtllm reserves ISL+OSL per request")


def test_export_says_the_release_priced_and_the_release_its_options_are_read_at(tmp_path):
    # newc8 #14: TensorRT-LLM priced at 1.3.0rc1-1.3.0rc27, options read at 1.4.0rc4 (outside the range: no release runs
    # both); SGLang priced at 0.5.7-0.5.23, options read at 0.5.23 (inside: that is the release to run)
    from llm_codesign.cli.export import _within

    assert _within("0.5.23", "0.5.7-0.5.23") and not _within("1.4.0rc4", "1.3.0rc1-1.3.0rc27") and not _within("0.33.0", "0.11-0.14")
    # a release candidate comes before its release, a bound of two parts holds its patches, a commit is no version
    assert _within("1.3.0rc27", "1.3.0rc1-1.3.0rc27") and not _within("1.3.0", "1.3.0rc1-1.3.0rc27") and _within("0.14.1", "0.11-0.14")
    assert not _within("0.10.2", "0.11-0.14") and not _within("0.5.6", "0.5.7-0.5.23") and not _within("0.5.23", "ROCm/ATOM@ffdf3bb5")
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--backend", "sglang", "--concurrency", "8", "-o", str(tmp_path / "s.sh"))
    assert code == 0 and out.splitlines()[0] == (f"wrote sglang configuration (options as sglang 0.5.23 reads them, priced at "
                                                 f"0.5.7-0.5.23: run 0.5.23 to compare): {tmp_path / 's.sh'}")
    code, out, err = cli("export", "deepseek-r1", "--gpu", "b200", "--backend", "dynamo", "--prefill", "tp=8,ep=8", "--decode", "tp=8,ep=8",
                         "--concurrency", "64", "-o", str(tmp_path / "d.yaml"))
    # Dynamo's workers priced as TensorRT-LLM's releases, the file's options as ai-dynamo 1.6.1 reads them
    assert code == 0 and out.splitlines()[0] == (f"wrote dynamo configuration (options as dynamo 1.6.1 reads them; priced at trtllm "
                                                 f"1.3.0rc1-1.3.0rc27): {tmp_path / 'd.yaml'}"), out


def test_one_head_dim_rule_for_lint_estimate_and_export(tmp_path):
    # newc8 #8: lint said head_dim 125 "blocks a plan ... not priced" while estimate and export priced it without a word.
    # One rule (spec.engines.head_dims): the sizes each engine's kernels take, and what runs instead
    # (the table's cases: tests/test_head_dims.py)
    from llm_codesign.spec.engines.head_dims import head_dim_note
    from llm_codesign.spec.hardware import get_gpu

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 5000, "intermediate_size": 13001,
        "num_attention_heads": 40, "num_key_value_heads": 5, "num_hidden_layers": 30, "vocab_size": 50257,
        "max_position_embeddings": 8192, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}))
    cfg = str(bad / "config.json")
    # newc11 #2 (fixN2): where no kernel of the engine runs it (lint R4's error), estimate refuses it in lint's words
    # rather than pricing it as if it ran, and names the engines that run it
    code, out, err = cli("estimate", cfg, "--gpu", "h100", "--tp", "1", "--concurrency", "8", "--json")
    rule = "TensorRT-LLM's decode kernels are built for head sizes 32, 48, 64, 80, 96, 104, "
    assert code == 2 and (out + err).strip().startswith(f"error: head_dim: 125 is not valid; a head size trtllm runs on H100 SXM: {rule}")
    assert (out + err).strip().endswith("(lint R4); --backend vllm or sglang run it")
    code, out, err = cli("lint", cfg, "--gpu", "h100", "--json")
    r4 = [f for f in json.loads(out)["findings"] if f["rule"] == "R4" and f["where"] == "head_dim"]
    assert [f["severity"] for f in r4] == ["error"] and r4[0]["message"].startswith(f"head_dim 125: {rule}")
    code, out, err = cli("export", cfg, "--gpu", "h100", "--tp", "1", "--gpus", "1", "--concurrency", "8", "--backend", "vllm",
                         "-o", str(tmp_path / "v.yaml"))
    assert code == 0 and ("head_dim 125: vLLM's FlashAttention backend takes multiples of 8 up to 256: it runs its Triton attention "
                          "(TRITON_ATTN, the head padded to 128) instead, slower; priced as the fast kernel (lint R4)") in out
    from llm_codesign.spec.registry import get_model

    assert head_dim_note(get_model("llama-3.1-8b"), "trtllm", get_gpu("h100")) is None  # 128 everywhere: nothing said
