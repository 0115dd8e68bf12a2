"""spec/engines/trtllm_bench.py: trtllm-bench's own max_batch_size / max_num_tokens (tuning.py calc_engine_setting,
finetune_setting; general.py get_settings), derived by hand, and the perf-overview rows priced at them."""
from dataclasses import replace

import numpy as np

from llm_codesign.measure.validate import bench_limits
from llm_codesign.spec.engines import trtllm_bench
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.precision import Precision, get_dtype
from llm_codesign.spec.registry import get_model

FP8 = replace(Precision.of("fp8"), kv=get_dtype("fp8"))


def test_llama_70b_fp8_tp2_h100():
    # engine 70,552,387,584 B = 65.707 GiB; memory 2 x 79.647 GiB (NVML's total); cache (159.295 - 65.707) x 0.95 =
    # 88.909 GiB; a token 2 x 80 layers x max(2, 8) heads x 128 x 1 B = 163,840 B; 2,000 of them 0.30518 GiB:
    # 291.3 requests -> 128 x ceil(291.3 / 128) = 384; tokens 291.3 x (1 + 1) = 583 -> the floor of 2048, above
    # ISL + batch = 1,384
    bs, tokens = trtllm_bench.settings(get_model("llama-3.3-70b"), get_gpu("h100"), FP8, tp=2, pp=1, isl=1000, osl=1000)
    assert (float(bs), float(tokens)) == (384.0, 2048.0)


def test_maverick_fp8_tp8_h100_and_h200():
    # engine 400,711,352,320 B = 373.19 GiB; a token 2 x 48 layers x 8 heads x 128 x 1 B = 98,304 B (chunked-attention
    # layers counted whole), 2,000 of them 0.18311 GiB.
    # H100: (8 x 79.647 - 373.19) x 0.95 = 250.79 GiB -> 1,369.7 requests -> 256 x ceil(5.35) = 1536;
    #       tokens 2,739 -> 256 x ceil(10.7) = 2816 (above 1,000 + 1,536)
    # H200: (8 x 140.401 - 373.19) x 0.95 = 712.52 GiB -> 3,891.3 -> 256 x ceil(15.2) = 4096;
    #       tokens 7,782.6 -> 512 x ceil(15.2) = 8192
    model = get_model("llama-4-maverick")
    bs, tokens = trtllm_bench.settings(model, get_gpu("h100"), FP8, tp=8, pp=1, isl=np.array([1000]), osl=np.array([1000]))
    assert (bs.tolist(), tokens.tolist()) == ([1536.0], [2816.0])
    bs, tokens = trtllm_bench.settings(model, get_gpu("h200"), FP8, tp=8, pp=1, isl=1000, osl=1000)
    assert (float(bs), float(tokens)) == (4096.0, 8192.0)


def test_long_prompts_without_chunked_prefill_and_untuned_formats():
    # Llama-3.1-70B FP8 TP4 H100 at 20000/2000: cache (318.59 - 65.707) x 0.95 = 240.24 GiB over 22,000 x 163,840 B:
    # 71.6 requests -> max(64, 32 x ceil(2.24)) = 96; tokens 71.6 x 11 = 787 -> 2048, raised to 20,000 + 96 with
    # chunked prefill off (the PyTorch flow's default); the engine flow keeps 2048
    model, h100 = get_model("llama-3.1-70b"), get_gpu("h100")
    bs, tokens = trtllm_bench.settings(model, h100, FP8, tp=4, pp=1, isl=20000, osl=2000, chunked_prefill=np.array([False, True]))
    assert bs.tolist() == [96.0, 96.0] and tokens.tolist() == [20096.0, 2048.0]
    # INT4 weight-only is not a tuned format (build.py TUNED_QUANTS): BuildConfig's 2048 / 8192, then the ISL floor
    bs, tokens = trtllm_bench.settings(model, h100, Precision.of("int4"), tp=4, pp=1, isl=20000, osl=2000)
    assert (float(bs), float(tokens)) == (2048.0, 22048.0)


def test_perf_overview_rows_run_at_the_tools_limits():
    # a v0.17 row (TensorRT engine flow, no ISL floor) and a v1.0 row (PyTorch flow) of Llama-3.1-70B at TP4 PP2 on
    # H100, 20000/2000: memory 8 x 79.647 = 637.18 GiB, cache (637.18 - 65.707) x 0.95 = 542.90 GiB -> 161.7 requests,
    # / 2 stages = 80.8 per micro-batch -> 96; tokens 80.8 x 11 = 889 -> 2048. The model's running batch counts both
    # micro-batches: 192 per rank; the KV fraction the pages ran, 0.95
    src = ("trtllm_perf_overview_v0_17_total.csv:9 (perf-overview.md; v0.17 (TensorRT engine backend; GH200 vi)",
           "trtllm_perf_overview_v1_0_total.csv:9 (perf-overview.md; v1.0 (PyTorch backend))")
    a = {"tp": np.array([4, 4]), "pp": np.array([2, 2]), "attention_dp": np.array([1, 1])}
    per_rank, tokens, flags = bench_limits(get_model("llama-3.1-70b"), get_gpu("h100"), FP8, a, np.array([0, 1]),
                                           isl=np.array([20000.0, 20000.0]), osl=np.array([2000.0, 2000.0]),
                                           sub=[{"source": s} for s in src])
    assert per_rank.tolist() == [192.0, 192.0] and tokens.tolist() == [2048.0, 20096.0]
    assert flags.max_running_requests.tolist() == [[192.0], [192.0]] and flags.kv_fraction.tolist() == [[0.95], [0.95]]


def test_attention_dp_ranks_count_in_the_tools_tp():
    # `trtllm-bench --tp 8` with enable_attention_dp: the plan's TP 1 x 8 attention-DP ranks sizes the estimate as TP 8
    # (Maverick on H100 at 1000/1000: 1536 / 2816, as above), and each rank's scheduler holds max_batch_size
    a = {"tp": np.array([1]), "pp": np.array([1]), "attention_dp": np.array([8])}
    per_rank, tokens, _ = bench_limits(get_model("llama-4-maverick"), get_gpu("h100"), FP8, a, np.array([0]), isl=np.array([1000.0]),
                                       osl=np.array([1000.0]), sub=[{"source": "trtllm_perf_overview_v1_0_total.csv:2 (v1.0 (PyTorch backend))"}])
    assert per_rank.tolist() == [1536.0] and tokens.tolist() == [2816.0]


def test_an_mla_config_is_read_as_trtllm_bench_reads_it():
    # DeepSeek-R1's config.json has no head_dim and num_key_value_heads 128: trtllm-bench's estimate takes hidden / heads
    # = 7168 / 128 = 56 wide heads, all 128 of them at every TP, over its 61 layers: 2 x 61 x 128 x 56 = 874,496 elements a
    # token (not MLA's 576-wide latent, nor 192-wide query-key heads)
    ds = get_model("deepseek-r1")
    prec = Precision.of("fp8_block", kv="fp8")
    assert trtllm_bench.kv_bytes_per_token(ds, prec, 8) == 2 * 61 * 128 * 56 * 1.0


def test_a_stack_without_attention_layers_has_no_kv_estimate():
    # no attention layer, no KV cache: 0 bytes a token (its requests then the 4,096 cap), not an IndexError on the first
    # attention layer; weights that do not fit (405B in BF16 on one 48 GB L40S) leave no requests: trtllm-bench's floor, 64
    prec = Precision.of("bf16")
    assert float(trtllm_bench.kv_bytes_per_token(replace(get_model("llama-3.1-8b"), groups=()), prec, 8)) == 0.0
    assert trtllm_bench.settings(get_model("llama-3.1-405b"), get_gpu("l40s"), prec, tp=1, pp=1, isl=1024, osl=1024)[0] == 64.0
