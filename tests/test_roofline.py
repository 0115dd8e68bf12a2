"""cost/roofline.py: the per-operator roofline of one step against hand-derived FLOPs, bytes and ridges."""
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.roofline import roofline
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def test_llama_8b_decode_batch_1_on_h100():
    g, m = get_gpu("h100"), get_model("llama-3.1-8b")
    r = roofline(m, g, calibration_for(g), Precision.of("bf16"), "decode", batch=1, context=4096, tp=1)
    qkv = next(o for o in r["ops"] if o["name"] == "layer/attn/qkv")
    # one token: 2 x (4096 + 2 x 1024) x 4096 FLOPs per layer, 32 layers; bytes = the weights + 1 token in and out
    assert qkv["flops"] == 2 * 6144 * 4096 * 32
    assert qkv["bytes"] == 32 * (6144 * 4096 * 2 + 4096 * 2 + 6144 * 2)
    assert qkv["ridge_point"] == pytest.approx(989.4e12 / 3.35e12)  # BF16 peak over HBM bandwidth
    assert qkv["bound"] == "memory" and qkv["math"] == "bf16"
    # a step reads every weight but the embedding table once, plus the 4096-token KV cache
    # (32 layers x 8 KV heads x 128 x K,V x 2 bytes = 131,072 B per token)
    weights = 2 * (m.total_params - m.vocab * m.hidden)
    assert r["totals"]["bytes"] == pytest.approx(weights + 4096 * 131_072, rel=2e-3)
    assert all(o["bound"] in ("memory", "memory*", "comm") for o in r["ops"] if o["kind"] == "gemm")


def test_my_30b_floor_counts_the_kv_cache_by_hand():
    # newc4 finding 3: a llama 31.7B (h6144, L64, GQA 48/8, head 128, vocab 151936, untied) at TP2 on H100s, 32 requests
    # at context 1536. Per GPU: weights (31,663,325,184 - 151,936 x 6144 embedding) x 2 B / 2 = 30,729,830,400 B; KV
    # 32 x 1536 x 64 layers x (8 / 2 KV heads) x (K + V: 256) x 2 B = 6,442,450,944 B; 37,172,281,344 B over the H100's
    # 3.35e12 B/s (data/gpus/h100.toml hbm_bandwidth_bytes_per_s) = 11.0962 ms. The interval floor said 9.17 ms.
    import json

    from llm_codesign.cost.roofline import ideal_step, step_floor
    from llm_codesign.spec.model import from_hf_config
    from llm_codesign.spec.plan import Plan

    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 6144, "intermediate_size": 20480,
           "num_hidden_layers": 64, "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
           "tie_word_embeddings": False, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
    m, g, p = from_hf_config(json.loads(json.dumps(cfg)), name="my-30b"), get_gpu("h100"), Precision.of("bf16")
    assert m.total_params == 31_663_325_184
    f = step_floor(m, p, tokens=32, context=1536, plan=Plan(tp=2), num_gpus=2)
    assert (f["weights"], f["kv"], f["state"]) == (30_729_830_400, 6_442_450_944, 0)
    want = 37_172_281_344 / 3.35e12
    assert float(ideal_step(m, g, p, 2, 32, context=1536)) == pytest.approx(want, rel=1e-12)
    assert float(ideal_step(m, g, p, 2, 32, context=1536, plan=Plan(tp=2))) == pytest.approx(want, rel=1e-12)
    r = roofline(m, g, calibration_for(g), p, "decode", batch=32, context=1536, tp=2)
    assert r["totals"]["bound_time_s"] == pytest.approx(want, rel=1e-12) == pytest.approx(0.0110962, rel=1e-5)
    assert r["totals"]["floor"]["kv"] == 6_442_450_944


def test_mla_window_and_replicated_heads_by_hand():
    # MLA caches its latent, (kv_lora_rank 512 + rope 64) values a token and layer, replicated on every TP rank
    # (spec.kinds.MLA.kv_values_per_gpu): DeepSeek-R1, 61 layers, FP8 cache (1 B), 8 requests at 4096, TP8 -> per GPU
    # 8 x 4096 x 61 x 576 B = 1,151,336,448 B; without a plan the same cache split over 8 GPUs.
    from llm_codesign.cost.roofline import step_floor
    from llm_codesign.spec.plan import Plan

    r1 = get_model("deepseek-r1")
    p = Precision.of("fp8_block", kv="fp8")
    assert step_floor(r1, p, tokens=8, context=4096, plan=Plan(tp=8, moe_tp=8), num_gpus=8)["kv"] == 8 * 4096 * 61 * 576
    assert step_floor(r1, p, tokens=8, context=4096, num_gpus=8)["kv"] == 8 * 4096 * 61 * 576 / 8
    # Llama-3.1-8B's 8 KV heads at TP16 would replicate 2x: its 16 ranks hold 1 head each, 16 x the 1/16th split
    m = get_model("llama-3.1-8b")
    bf = Precision.of("bf16")
    one = step_floor(m, bf, tokens=1, context=1000, plan=Plan(tp=16), num_gpus=16)["kv"]
    assert one == 1000 * 32 * 1 * 256 * 2 == 2 * step_floor(m, bf, tokens=1, context=1000, num_gpus=16)["kv"]


def test_ideal_column_sums_to_the_printed_floor_llama_70b_fp8_tp8():
    # newc5 #3: the per-operator "ideal us" is max(FLOPs/peak, bytes/bandwidth). Llama-3.1-70B FP8 at TP8, batch 1,
    # context 2048 on H100 (3.35 TB/s): weights (70.55e9 - 128,256 x 8192 embedding) x 1 B / 8 = 8.82 GB -> 2.633 ms;
    # KV (BF16, fp8's default) 2048 x 80 layers x 1 KV head x 256 x 2 B = 83.9 MB -> 0.025 ms; floor 2.658 ms. Every
    # operator is memory bound at FLOP/B ~2, so the ideal column is the operators' bytes (+ ~18 MB of activations)
    # / 3.35 TB/s: the floor plus its activations, within 0.3%
    g, m = get_gpu("h100"), get_model("llama-3.1-70b")
    r = roofline(m, g, calibration_for(g), Precision.of("fp8"), "decode", batch=1, context=2048, tp=8)
    t = r["totals"]
    assert t["bound_time_s"] == pytest.approx(2.658e-3, abs=1e-6)
    assert t["ideal_time_s"] == pytest.approx(sum(o["ideal_time_s"] for o in r["ops"]))
    assert t["bound_time_s"] <= t["ideal_time_s"] <= t["bound_time_s"] * 1.003
    assert t["ideal_time_s"] == pytest.approx(t["bytes"] / 3.35e12, rel=1e-3)
    for o in r["ops"]:  # a collective has no ideal time; the modelled time is never under the ideal
        assert (o["ideal_time_s"] == 0) if o["kind"] == "comm" else (0 < o["ideal_time_s"] <= o["time_s"] * (1 + 1e-9))


def test_priced_with_the_engine_the_step_adds_up_to_estimates_and_small_gemms_read_latency():
    """newc7 #5: roofline priced the kernel tables' kernels and NCCL with no engine (10.8 ms for a step estimate prices at
    5.12 ms) and called a 1-row FP8 GEMM "compute*" at 0.2% of peak. Priced with the engine's kernels as estimate is, the
    operators' sum is estimate's kernels (forward_ops with that engine, to 1e-12), and an operator over LATENCY_SHARE x its
    longer roof reads "latency": qkv at batch 1 runs 539.9 us against its 269.1 us compute side (x2.01), gate_up 1435 us
    against 1207 us of bytes (x1.19) stays "memory"."""
    import numpy as np

    from llm_codesign.cost.ops import Batch, forward_ops
    from llm_codesign.cost.roofline import LATENCY_SHARE
    from llm_codesign.spec.engines import engine_for
    from llm_codesign.spec.plan import Plan

    g, m = get_gpu("h200"), get_model("llama-3.1-70b")
    cal, eng, prec = calibration_for(g), engine_for(g, "trtllm"), Precision.of("fp8", kv="fp8")
    r = roofline(m, g, cal, prec, "decode", batch=1, context=1024, tp=8, engine=eng)
    ops = forward_ops(m, g, cal, prec, Plan(tp=8), b=Batch(dec_seqs=1, dec_ctx=1024), engine=eng)
    want = sum(float(np.ravel(o.time)[0]) * float(np.ravel(o.count)[0]) for o in ops)
    assert r["totals"]["time_s"] == pytest.approx(want, rel=1e-12) and r["totals"]["time_s"] == pytest.approx(5.19e-3, rel=0.02)
    bound = {o["name"]: o["bound"] for o in r["ops"]}
    assert (bound["layer/attn/qkv"], bound["layer/ffn/gate_up"], bound["layer/attn/all_reduce"]) == ("latency", "memory", "comm")
    assert LATENCY_SHARE == 2.0
    # without an engine (the kernel tables and NCCL) the same step is twice as long: why the CLI now names its engine
    bare = roofline(m, g, cal, prec, "decode", batch=1, context=1024, tp=8)
    assert bare["totals"]["time_s"] > 2 * r["totals"]["time_s"] * 0.95


def test_absorbed_mla_decode_moves_nothing_for_kv_up_and_prefill_reads_it():
    """newc9 #17: an absorbed MLA decode never runs kv_b_proj as a GEMM (its W_UK and W_UV are read inside mla_q_absorb and
    mla_v_up), yet its weights were a 128 MB "memory" row. DeepSeek-R1 TP8, FP8 block weights: kv_b_proj is
    128 heads / 8 x (128 nope + 128 v) x 512 rank = 2.10M weights a rank, 2.10 MB at 1 B each, x 61 layers = 127.9 MB."""
    m, g = get_model("deepseek-r1"), get_gpu("h200")
    cal, prec = calibration_for(g), m.default_precision
    dec = {r["name"]: r for r in roofline(m, g, cal, prec, "decode", batch=8, context=1024, tp=8)["ops"]}
    kv = dec["layer0/attn/mla_kv_up"]
    assert (kv["bytes"], kv["flops"], kv["time_s"], kv["ideal_time_s"], kv["bound"]) == (0.0, 0.0, 0.0, 0.0, "not run")
    assert dec["layer0/attn/mla_q_absorb"]["bytes"] > 0 and dec["layer0/attn/mla_v_up"]["bytes"] > 0
    pf = {r["name"]: r for r in roofline(m, g, cal, prec, "prefill", batch=1, context=1024, tp=8)["ops"]}
    # prefill runs it: 2 x 1024 rows x 4096 (16 heads x 256) x 512 x 61 layers = 262.1 GFLOP, and at least its weights
    up = pf["layer0/attn/mla_kv_up"]
    assert up["flops"] == pytest.approx(2 * 1024 * 4096 * 512 * 61) and up["bytes"] > 61 * 4096 * 512 and up["bound"] != "not run"
    # and the absorbed products, which the prefill does not run, move nothing there
    assert pf["layer0/attn/mla_q_absorb"]["bytes"] == pf["layer0/attn/mla_v_up"]["bytes"] == 0.0
