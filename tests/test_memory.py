"""cost/memory.py: KV cache per token, weights per GPU and the batch that fits, against hand-derived figures."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost.memory import kv_bytes_per_token, weight_bytes_per_gpu
from llm_codesign.spec.engines import TRTLLM
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan, SpecDecoding
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

DENSE = ["llama-3.1-8b", "qwen3-32b", "llama-3.1-70b"]


def test_gqa_kv_bytes_per_token():
    # Llama-3.1-70B: 80 layers x 8 KV heads x 128 x (K + V) x 2 bytes = 327,680 B per token (BF16)
    m = get_model("llama-3.1-70b")
    assert float(kv_bytes_per_token(m, Precision.of("bf16"), Plan())) == 327_680
    # TP8 leaves one KV head per GPU; FP8 halves the bytes
    assert float(kv_bytes_per_token(m, Precision.of("bf16"), Plan(tp=8))) == 327_680 / 8
    assert float(kv_bytes_per_token(m, Precision.of("bf16", kv="fp8"), Plan(tp=8))) == 327_680 / 16


def test_mla_latent_is_replicated_over_tp():
    # DeepSeek-R1: 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes = 70,272 B per token, on every TP rank
    m = get_model("deepseek-r1")
    for tp in (1, 8):
        assert float(kv_bytes_per_token(m, Precision.of("bf16"), Plan(tp=tp))) == 61 * 576 * 2


def test_weights_per_gpu_shard_by_tp():
    m = get_model("llama-3.1-70b")
    one = float(weight_bytes_per_gpu(m, Precision.of("bf16"), Plan()))
    assert one == pytest.approx(2 * m.total_params, rel=1e-9)  # every parameter once, 2 bytes
    eight = float(weight_bytes_per_gpu(m, Precision.of("bf16"), Plan(tp=8)))
    # everything shards over TP except the norms (replicated): within 0.01% of a clean eighth
    assert eight == pytest.approx(one / 8, rel=1e-4) and eight >= one / 8


# --- what an engine leaves for KV: draft weights, sampler warm-up, CUDA-graph pool (issue 22, mechanism 7) ---

def _fit(m, gpu, sh, budget, spec=None, **kw):
    from llm_codesign.cost.memory import fit
    from llm_codesign.serve.aggregated import draft_model
    return fit(m, get_gpu(gpu), m.default_precision, sh, 1024, osl=1024, budget=budget, usable_fraction=0.9, spec=spec,
               draft=draft_model(m, spec) if spec else None, **kw)


def test_deepseek_mtp_layer_bytes_per_gpu_by_hand():
    # DeepSeek-R1 FP8 (128x128 blocks: 1 + 4/16384 B per weight) on 8xH200, TP8 x EP8, MTP: one MoE layer
    # sharded like a target layer, plus eh_proj replicated in BF16:
    #   experts 256 x 3 x 7168 x 2048 / 8 = 1,409,286,144 weights -> 1,409,630,208 B
    #   shared expert 3 x 7168 x 2048 / 8 = 5,505,024 -> 5,506,368 B; router 7168 x 256 x 2 B = 3,670,016 B
    #   MLA: 187,105,280 weights, of which q_a/kv_a (7168 x 2112 = 15,138,816, replicated) -> 15,142,512 B
    #        and the rest / 8 = 21,495,808 -> 21,501,056 B
    #   eh_proj 2 x 7168 x 7168 x 2 B = 205,520,896 B            total 1,660,971,056 B
    from llm_codesign.cost.memory import draft_weight_bytes_per_gpu
    from llm_codesign.serve.aggregated import draft_model
    m = get_model("deepseek-r1")
    spec = SpecDecoding("mtp", 3, mean_accepted=2.5)
    dm = draft_model(m, spec)
    w = draft_weight_bytes_per_gpu(m, dm, "mtp", m.default_precision, Plan(tp=8, ep=8))
    assert float(w) == 1_660_971_056
    # as SGLang holds it (eh_proj replicated), and as TensorRT-LLM does: eh_proj row-parallel over TP8,
    # 205,520,896 / 8 = 25,690,112 B, so 1,481,140,272 B; replicated again under attention DP
    r0, r1 = _fit(m, "h200", Plan(tp=8, ep=8), "static"), _fit(m, "h200", Plan(tp=8, ep=8), "static", spec)
    assert float(r1["weights"] - r0["weights"]) == pytest.approx(1_660_971_056)
    r0, r1 = _fit(m, "h200", Plan(tp=8, ep=8), "free"), _fit(m, "h200", Plan(tp=8, ep=8), "free", spec, engine=TRTLLM)
    assert float(r1["weights"] - r0["weights"]) == pytest.approx(1_481_140_272)
    adp = Plan(tp=1, adp=8, ep=8)
    assert float(_fit(m, "h200", adp, "free", spec, engine=TRTLLM)["draft_weights"]) > float(r1["draft_weights"])
    # the MTP layer's latent cache: one more layer of 576 BF16 values per token on every rank
    assert float(r1["kv_per_token"] - r0["kv_per_token"]) == 576 * 2


def test_eagle3_head_bytes_by_hand():
    # Llama-3.1-8B's EAGLE-3 head, BF16, TP1: QKV over the 2h input 2 x 4096 x (4096 + 2 x 8 x 128) = 50,331,648,
    # o 16,777,216, FFN 3 x 4096 x 14336 = 176,160,768, fc 3 x 4096^2 = 50,331,648, draft LM head
    # 32000 x 4096 = 131,072,000: 424,673,280 weights x 2 B = 849,346,560 B; TP2 halves all but fc
    from llm_codesign.cost.memory import draft_weight_bytes_per_gpu
    from llm_codesign.serve.aggregated import draft_model
    m = get_model("llama-3.1-8b")
    dm = draft_model(m, SpecDecoding("eagle3", 3, mean_accepted=2.5))
    one = float(draft_weight_bytes_per_gpu(m, dm, "eagle3", m.default_precision, Plan()))
    assert one == 849_346_560
    two = float(draft_weight_bytes_per_gpu(m, dm, "eagle3", m.default_precision, Plan(tp=2)))
    assert two == pytest.approx((849_346_560 - 100_663_296) / 2 + 100_663_296)


def test_separate_draft_is_tp_sharded_and_not_pipelined():
    from llm_codesign.cost.memory import draft_weight_bytes_per_gpu
    from llm_codesign.serve.aggregated import draft_model
    m = get_model("llama-3.1-70b")
    spec = SpecDecoding("draft", 4, mean_accepted=3.0, draft_model="llama-3.1-8b")
    dm = draft_model(m, spec)
    w = draft_weight_bytes_per_gpu(m, dm, "draft", m.default_precision, Plan(tp=4, pp=2))
    assert float(w) == float(weight_bytes_per_gpu(dm, m.default_precision, Plan(tp=4)))


def test_vllm_sampler_warmup_by_hand():
    # vLLM, Llama-3.1-70B TP8 at max_num_seqs 1024: the sampler's warm-up holds 1024 x 128256 logits x 18 B
    # = 2,364,014,592 B, more than the 8192-token forward, 8192 x (12 x 8192 + 3 x 28672 / 8) x 2 B =
    # 1,786,773,504 B; the profile peak is the larger, plus the CUDA context (0.75 GB)
    from llm_codesign.cost.memory import CUDA_CONTEXT_BYTES, activation_bytes, forward_activation_bytes
    m = get_model("llama-3.1-70b")
    sh = Plan(tp=8)
    assert float(forward_activation_bytes(m, sh, 8192)) == 1_786_773_504
    assert float(activation_bytes(m, sh, 8192, budget="total", max_seqs=1024)) == 2_364_014_592 + CUDA_CONTEXT_BYTES
    # rows are min(max_num_seqs, max_num_batched_tokens): a 512-token budget samples 512 rows,
    # 512 x 128256 x 18 = 1,182,007,296 B, against a 512-token forward of 111,673,344 B
    assert float(activation_bytes(m, sh, 512, budget="total", max_seqs=1024)) == 1_182_007_296 + CUDA_CONTEXT_BYTES
    # A100-class vLLM (max_num_seqs 256) at TP1: the 8192-token forward (8192 x (98304 + 86016) x 2 B) dominates
    assert float(activation_bytes(m, Plan(), 8192, budget="total", max_seqs=256)) == 8192 * 184_320 * 2 + CUDA_CONTEXT_BYTES


def test_trtllm_graph_pool_grows_with_draft_length():
    # TensorRT-LLM's decode graphs up to 128 sequences carry 1 + k tokens each: k = 3 holds a 512-token
    # forward's activations in the pool instead of a 128-token one
    from llm_codesign.cost.memory import activation_bytes, forward_activation_bytes
    m = get_model("llama-3.1-70b")
    sh = Plan(tp=8)
    d = float(activation_bytes(m, sh, 8192, budget="free", draft_len=3) - activation_bytes(m, sh, 8192, budget="free"))
    assert d == float(forward_activation_bytes(m, sh, 512) - forward_activation_bytes(m, sh, 128)) == 384 * 109_056 * 2


def test_sglang_draft_weights_come_out_of_the_static_share():
    # SGLang's draft reserve (spec.engines.sglang static_fraction) is activations and graphs: at the same fraction the
    # KV pool shrinks by exactly the draft's weights
    m = get_model("deepseek-r1")
    spec = SpecDecoding("mtp", 3, mean_accepted=2.5)
    r0, r1 = _fit(m, "b200", Plan(tp=8, ep=8), "static"), _fit(m, "b200", Plan(tp=8, ep=8), "static", spec)
    assert float(r0["free_for_kv"] - r1["free_for_kv"]) == pytest.approx(float(r1["draft_weights"]))


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["llama-3.1-70b", "llama-3.1-8b", "deepseek-r1", "qwen3-235b-a22b", "gpt-oss-120b"]),
       method=st.sampled_from(["mtp", "eagle3", "draft"]), budget=st.sampled_from(["free", "total", "static"]),
       tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2]), gpu=st.sampled_from(["h200", "b200", "h100"]))
def test_draft_never_raises_max_batch(name, method, budget, tp, pp, gpu):
    m = get_model(name)
    spec = SpecDecoding(method, 3, mean_accepted=2.0, draft_model="qwen3-0.6b" if method == "draft" else None)
    sh = Plan(tp=tp, pp=pp, ep=tp if m.is_moe else 1)
    r0, r1 = _fit(m, gpu, sh, budget), _fit(m, gpu, sh, budget, spec)
    assert float(r1["draft_weights"]) > 0
    assert float(r1["max_seqs_per_rank"]) <= float(r0["max_seqs_per_rank"])
    assert float(r1["free_for_kv"]) <= float(r0["free_for_kv"])


def test_a_sweeps_zero_draft_length_loads_no_draft():
    # a search sweeping draft lengths (0, 1, 3) prices k = 0 as speculation off: no draft weights or
    # cache, the TensorRT-LLM graph pool at 1 token per sequence, exactly as without a spec; k = 1 sizes
    # the pool at 2 tokens, not at the spec's own 3
    import numpy as np

    m = get_model("deepseek-r1")
    spec = SpecDecoding("mtp", 3, mean_accepted=2.5)
    sh = Plan(tp=8, ep=8)
    for budget in ("free", "total", "static"):
        none = _fit(m, "b200", sh, budget)
        swept = _fit(m, "b200", sh, budget, spec, draft_len=np.array([0.0, 1.0, 3.0]))
        own = _fit(m, "b200", sh, budget, spec)
        for key in ("weights", "activations", "free_for_kv", "kv_per_token", "max_seqs_per_rank"):
            got = np.broadcast_to(swept[key], (3,))
            assert float(got[0]) == float(none[key]) and float(got[2]) == float(own[key]), (budget, key)
        assert float(swept["draft_weights"][0]) == 0.0 < float(swept["draft_weights"][1]) == float(own["draft_weights"])
    none, one, own = (_fit(m, "b200", sh, "free", spec if k else None, draft_len=k) for k in (0.0, 1.0, 3.0))
    assert float(none["activations"]) < float(one["activations"]) < float(own["activations"])


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(DENSE + ["deepseek-v3", "mixtral-8x7b", "llama-4-maverick"]))
def test_tp_never_increases_weight_memory(name):
    m = get_model(name)
    prev = np.inf
    for tp in (1, 2, 4, 8):
        w = float(weight_bytes_per_gpu(m, m.default_precision, Plan(tp=tp, ep=tp if m.is_moe else 1)))
        assert w <= prev
        prev = w


def test_weight_memory_golden():
    # Llama-3.1-70B BF16, TP8: layers 80 x (8192 x 18432 attention + 3 x 8192 x 28672 FFN) x 2 B / 8
    # + embedding and LM head 2 x 128256 x 8192 x 2 B / 8 = 17,638,096,896 B
    m = get_model("llama-3.1-70b")
    assert float(weight_bytes_per_gpu(m, Precision.of("bf16"), Plan(tp=8))) == 17_638_096_896
    # PP2 x TP4: half the layers, and the larger of embedding / LM head (they sit on different stages)
    w = float(weight_bytes_per_gpu(m, Precision.of("bf16"), Plan(tp=4, pp=2)))
    assert w == 80 * 855_638_016 * 2 / 8 + 128256 * 8192 * 2 / 4


def test_kv_per_gpu_golden():
    m = get_model("llama-3.1-70b")
    assert float(kv_bytes_per_token(m, Precision.of("bf16"), Plan(tp=8))) == 327_680 / 8
    # TP beyond the 8 KV heads replicates them: TP16 holds one head per GPU like TP8
    assert float(kv_bytes_per_token(m, Precision.of("bf16", kv="fp8"), Plan(tp=16))) == 327_680 / 2 / 8
    ds = get_model("deepseek-v3")
    # the MLA latent is replicated on every TP rank; attention-DP ranks hold their own sequences
    assert float(kv_bytes_per_token(ds, Precision.of("bf16"), Plan(tp=8))) == 576 * 61 * 2


def test_kv_budget_free_vs_total(h100):
    from llm_codesign.cost.memory import activation_bytes, fit, weight_bytes_per_gpu
    from llm_codesign.spec.registry import get_model

    m = get_model("llama-3.1-70b")
    prec, sh = m.default_precision, Plan(tp=2)
    w = weight_bytes_per_gpu(m, prec, sh)
    act_total, act_free = (activation_bytes(m, sh, 8192, budget=b, max_seqs=1024) for b in ("total", "free"))
    total = fit(m, h100, prec, sh, 1024, osl=1024, budget="total", usable_fraction=0.9)
    free = fit(m, h100, prec, sh, 1024, osl=1024, budget="free", usable_fraction=0.9)
    # vLLM-style: 90% of the GPU minus weights and activations; TensorRT-LLM-style: 90% of what is left
    assert float(total["free_for_kv"]) == pytest.approx(0.9 * h100.memory_bytes - w - act_total)
    assert float(free["free_for_kv"]) == pytest.approx(0.9 * (h100.memory_bytes - w - act_free))
    assert free["max_seqs_per_rank"] > total["max_seqs_per_rank"]


def test_static_budget_leaves_activations_outside(h100):
    # SGLang's fraction covers weights and KV only: the KV pool is fraction x memory - weights
    from llm_codesign.cost.memory import fit, weight_bytes_per_gpu
    from llm_codesign.spec.registry import get_model

    m = get_model("llama-3.1-70b")
    prec, sh = m.default_precision, Plan(tp=4)
    r = fit(m, h100, prec, sh, 1024, osl=1024, max_num_tokens=8192, usable_fraction=0.824, budget="static")
    assert float(r["free_for_kv"]) == pytest.approx(0.824 * h100.memory_bytes - weight_bytes_per_gpu(m, prec, sh))


def test_sglangs_mxfp4_experts_held_as_the_bf16_they_are_upcast_to_under_ep_on_hopper():
    # SGLang's Triton MoE upcasts MXFP4 experts to BF16 at load (spec.engines.base.MOE_UPCAST); it runs gpt-oss's
    # MXFP4 MoE there on Hopper where EP > 1, OpenAI's triton_kernels (MXFP4 held) at EP 1. gpt-oss-120b, 36 layers of
    # 128 experts of 3 x 2,880 x 2,880 weights: under EP 8 a GPU holds 16 a layer, 36 x 16 x 24,883,200 = 14.33e9
    # weights, at 2 B instead of MXFP4's 4.25 / 8 B: 21,051,187,200 B more. vLLM (Marlin/triton_kernels) and EP 1 keep MXFP4.
    from llm_codesign.cost.memory import expert_weight_bytes, fit
    from llm_codesign.spec.engines import SGLANG, VLLM

    m, g = get_model("gpt-oss-120b"), get_gpu("h200")
    prec = Precision.of("mxfp4").on(g)
    ep8, ep1 = Plan(tp=8, ep=8), Plan(tp=8, ep=1, moe_tp=8)
    assert float(expert_weight_bytes(g, prec, SGLANG, ep8.ep)) == 2.0
    assert float(expert_weight_bytes(g, prec, SGLANG, ep1.ep)) == 4.25 / 8
    assert float(expert_weight_bytes(g, prec, VLLM, ep8.ep)) == 4.25 / 8
    assert float(expert_weight_bytes(get_gpu("b200"), Precision.of("mxfp4").on(get_gpu("b200")), SGLANG, ep8.ep)) == 4.25 / 8
    assert np.asarray(expert_weight_bytes(g, prec, SGLANG, np.array([1.0, 8.0]))).tolist() == [4.25 / 8, 2.0]
    held = 36 * 16 * 3 * 2880 * 2880
    assert held == 14_332_723_200
    args = dict(osl=1024, budget="static")
    w = {(e.name, p.ep): float(fit(m, g, prec, p, 1024, engine=e, **args)["weights"]) for e in (SGLANG, VLLM) for p in (ep8, ep1)}
    assert w["sglang", 8] - float(weight_bytes_per_gpu(m, prec, ep8)) == pytest.approx(held * (2.0 - 4.25 / 8), rel=1e-12)
    assert w["sglang", 8] - w["vllm", 8] == pytest.approx(21_051_187_200.0, rel=1e-12)
    assert w["sglang", 1] == w["vllm", 1] == float(weight_bytes_per_gpu(m, prec, ep1))


def test_expert_bytes_read_the_moe_gated_or_not(monkeypatch):
    """cost.memory asks the engine for the experts' held format of the model's own MoE, gated or not (MoE.gated, as
    cost.ffns prices it: one derivation, cost.gemm.expert_formats); it had asked for a gated one always."""
    from dataclasses import replace as _replace

    from llm_codesign.cost.memory import fit
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.kinds import MoE

    m = get_model("gpt-oss-120b")
    relu2 = _replace(m, groups=tuple((_replace(layer, ffn=_replace(layer.ffn, gated=False)) if isinstance(layer.ffn, MoE) else layer, n)
                                     for layer, n in m.groups))
    assert m.moe_gated and not relu2.moe_gated
    seen = []
    engine = get_engine("sglang")
    real = type(engine).moe_weight
    monkeypatch.setattr(type(engine), "moe_weight", lambda self, *a, **k: seen.append(k["gated"]) or real(self, *a, **k))
    g = get_gpu("h100")
    for model in (m, relu2):
        seen.clear()
        fit(model, g, model.default_precision, Plan(2, 1, 2, 1, 1, 1), 1024, osl=1024, engine=engine)
        assert seen and set(seen) == {model.moe_gated}, model


def test_the_graph_pool_is_the_runs_capture():
    # TensorRT-LLM's graph pool holds its largest captured batch's activations: llama-3.1-8b at TP1, a token's
    # (12 x 4096 + 3 x 14336) x 2 B = 184,320 B; the default capture's 128 (NaN or None), a capture up to 256 holds 128 more
    # tokens' (23,592,960 B), up to 896 768 more (141,557,760 B), graphs off (0) none of the 128's
    from llm_codesign.cost import memory as mem

    m, sh = get_model("llama-3.1-8b"), Plan(1, 1, 1, 1, 1, 1).broadcast()

    def act(g):
        return float(mem.activation_bytes(m, sh, 8192, budget="free", graph_batch=g))

    base = act(None)
    assert act(128) == act(float("nan")) == base
    assert (act(256) - base, act(896) - base, act(0) - base) == (23_592_960.0, 141_557_760.0, -23_592_960.0)
    v = mem.activation_bytes(m, sh, 8192, budget="free", graph_batch=np.array([0.0, 128.0, 256.0]))
    assert np.allclose(v - base, [-23_592_960.0, 0.0, 23_592_960.0])
    # vLLM's and SGLang's budgets hold no such pool
    assert float(mem.activation_bytes(m, sh, 8192, budget="static", graph_batch=896)) == float(mem.activation_bytes(m, sh, 8192, budget="static"))
