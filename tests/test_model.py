import json

import pytest

from llm_codesign.errors import InputError, UnsupportedModelError
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.registry import get_model, list_models


def within(x, published, rel=0.01, unit=None):
    """Within 1% of a published figure, or within its rounding (half a unit of the last digit)."""
    tol = max(rel * published, unit / 2 if unit else 0.0)
    return abs(x - published) <= tol


# (name, total, active, rounding unit of the published figure, active convention)
# active: "no_emb" = layers + LM head (OpenAI, DeepSeek, Moonshot count the unembedding but not the
# embedding lookup); "emb" = embedding included (Mistral, Meta, Qwen model cards).
PUBLISHED = [
    ("llama-3.1-8b", 8.03e9, None, 0.01e9, None),  # HF safetensors 8.03B
    ("llama-3.1-70b", 70.6e9, None, 0.1e9, None),  # HF 70.6B
    ("llama-3.1-405b", 406e9, None, 1e9, None),  # HF 406B
    ("deepseek-v3", 671e9, 37e9, 1e9, "no_emb"),  # DeepSeek-V3 report: 671B total, 37B activated
    ("qwen3-235b-a22b", 235e9, 22e9, 1e9, "emb"),  # Qwen3 model card
    ("qwen3-30b-a3b", 30.5e9, None, 0.1e9, None),  # Qwen3 model card: 30.5B total
    ("mixtral-8x7b", 46.7e9, 12.9e9, 0.1e9, "emb"),  # Mistral: 46.7B total, 12.9B active
    ("gpt-oss-120b", 116.8e9, 5.1e9, 0.1e9, "no_emb"),  # OpenAI gpt-oss model card
    ("gpt-oss-20b", 20.9e9, 3.6e9, 0.1e9, "no_emb"),
    ("llama-4-maverick", 400e9, 17e9, 1e9, "emb"),  # Meta: 400B total, 17B active
    ("kimi-k2", 1.0e12, 32e9, 0.1e12, "no_emb"),  # Moonshot model card: 1T total, 32B activated
]


@pytest.mark.parametrize("name,total,active,unit,conv", PUBLISHED)
def test_published_parameter_counts(name, total, active, unit, conv):
    m = get_model(name)
    assert within(m.total_params, total, unit=unit), (m.total_params, total)
    if active:
        got = m.active_params if conv == "no_emb" else m.active_params_with_embedding
        assert within(got, active, unit=unit if active >= 1e10 else 0.1e9), (got, active)


def test_known_deviations_are_small():
    # Llama 4 Scout: Meta's 109B counts the vision encoder, which the text config does not describe.
    scout = get_model("llama-4-scout")
    assert abs(scout.total_params / 109e9 - 1) < 0.012
    assert within(scout.active_params_with_embedding, 17e9, unit=1e9)
    # Kimi-K2: the 1.04T figure in some listings is not reproducible from config.json (1.026T).
    assert abs(get_model("kimi-k2").total_params / 1.04e12 - 1) < 0.015
    # Qwen3-30B-A3B: card says 3.3B activated; the config gives 3.35B with embeddings, 3.04B without.
    assert abs(get_model("qwen3-30b-a3b").active_params_with_embedding / 3.3e9 - 1) < 0.02


def test_kv_bytes_per_token_golden():
    # Llama-3.1-70B BF16: 80 layers x 2 (K,V) x 8 KV heads x 128 x 2 B = 327,680 B
    assert get_model("llama-3.1-70b").kv_values_per_token() * 2 == 327_680
    # DeepSeek-V3 MLA latent: (512 + 64) x 61 layers values per token
    assert get_model("deepseek-v3").kv_values_per_token() == (512 + 64) * 61
    # gpt-oss-120b: 18 full + 18 sliding (window 128) layers, 8 KV heads x 64 x 2 per layer
    g = get_model("gpt-oss-120b")
    per_layer = 8 * 64 * 2
    assert g.kv_values_per_token(context=128) == 36 * per_layer
    assert g.kv_values_per_token(context=1280) == pytest.approx(18 * per_layer + 18 * per_layer * 0.1)


def test_every_bundled_config_loads_or_names_its_unsupported_layer():
    rows = list_models()
    assert len(rows) >= 30
    errors = {r["name"]: r.get("error") for r in rows if r.get("error")}
    assert errors == {}  # Mamba-2 (Nemotron-H) and Gated DeltaNet (Qwen3.5) hybrids included
    for r in rows:
        if not r.get("error"):
            assert r["total_params"] >= r["active_params"] > 0


def test_qwen35_gated_deltanet_hybrid_golden():
    # Qwen3.5-397B-A17B text stack: 45 Gated DeltaNet + 15 gated full-attention layers, all MoE
    m = get_model("qwen3.5-397b")
    kinds = {layer.attn.kind: n for layer, n in m.groups}
    assert kinds == {"gdn": 45, "gqa": 15}
    h = 4096
    conv = 2 * 16 * 128 + 64 * 128  # Q, K over 16 key heads, V over 64 value heads: 12,288 channels
    gdn = h * (conv + 64 * 128 + 2 * 64) + conv * 4 + 64 * 128 * h  # in_proj_qkvz+ba, conv, out_proj
    assert gdn == 118_013_952
    full = h * 32 * 256 * 2 + h * 2 * 256 * 2 + 32 * 256 * h  # q_proj doubled by the output gate
    assert full == 104_857_600
    moe = 512 * 3 * h * 1024 + 3 * h * 1024 + h * 512  # routed experts, shared expert, router
    assert m.total_params == 45 * gdn + 15 * full + 60 * moe + 2 * 248_320 * h == 396_345_589_760
    # per sequence: a (kernel-1) x 12,288 BF16 conv state and 64 x 128 x 128 FP32 delta-rule state
    # per GDN layer (config mamba_ssm_dtype float32), whatever the context length
    assert m.state_bytes_per_seq() == 45 * (3 * conv * 2 + 64 * 128 * 128 * 4) == 192_061_440
    # KV cache only in the 15 full-attention layers: 2 KV heads x 256 x (K, V)
    assert m.kv_values_per_token() == 15 * 2 * 256 * 2


def test_nemotron_h_mamba2_hybrid_golden():
    # Nemotron-H-56B: 54 Mamba-2 + 10 attention + 54 MLP layers (hybrid_override_pattern)
    m = get_model("nemotron-h-56b")
    kinds = {(layer.attn.kind, layer.ffn.kind): n for layer, n in m.groups}
    assert kinds == {("mamba2", "none"): 54, ("gqa", "none"): 10, ("none", "dense"): 54}
    h = 8192
    conv = 256 * 64 + 2 * 8 * 256  # x over 256 heads of 64, B and C over 8 groups of state 256
    mamba = h * (conv + 256 * 64 + 256) + conv * 4 + 256 * 64 * h  # in_proj (x, B, C, z, dt), conv, out_proj
    mlp = 2 * h * 32768  # relu2: up and down only
    attn = h * 64 * 128 * 2 + h * 8 * 128 * 2  # q, o and k, v
    assert m.total_params == 54 * mamba + 54 * mlp + 10 * attn + 2 * 131072 * h == 56_321_343_488
    # per sequence per Mamba layer: 3 x 20,480 BF16 conv rows and a 256 x 64 x 256 BF16 SSM state
    assert m.state_bytes_per_seq() == 54 * (3 * conv * 2 + 256 * 64 * 256 * 2)
    assert m.kv_values_per_token() == 10 * 8 * 128 * 2
    # TP16: x splits 16 ways, but the 8 B/C groups are replicated to one per rank
    mixer = next(layer.attn for layer, _ in m.groups if layer.attn.kind == "mamba2")
    assert float(mixer.conv_dim_per_gpu(8)) == conv / 8
    assert float(mixer.conv_dim_per_gpu(16)) == 256 * 64 / 16 + 2 * 256


def test_hybrid_pattern_moe_and_bad_characters():
    base = {"hidden_size": 2048, "num_hidden_layers": 4, "vocab_size": 1000, "num_attention_heads": 16,
            "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 4096, "mamba_head_dim": 64,
            "mamba_num_heads": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "chunk_size": 128,
            "n_routed_experts": 64, "num_experts_per_tok": 6, "moe_intermediate_size": 1024,
            "moe_shared_expert_intermediate_size": 2048, "mlp_hidden_act": "relu2", "hybrid_override_pattern": "ME*E"}
    m = from_hf_config(base)
    moe = next(layer.ffn for layer, _ in m.groups if layer.ffn.kind == "moe")
    assert (moe.experts, moe.top_k, moe.expert_inter, moe.shared_inter, moe.gated) == (64, 6, 1024, 2048, False)
    assert m.is_moe and m.num_layers == 4
    with pytest.raises(UnsupportedModelError, match="hybrid_override_pattern"):
        from_hf_config({**base, "hybrid_override_pattern": "M*X-"})
    with pytest.raises(InputError, match="one character per layer"):
        from_hf_config({**base, "hybrid_override_pattern": "M*"})


def test_structure_of_hybrid_stacks():
    ds = get_model("deepseek-r1")
    counts = {layer.ffn.kind: n for layer, n in ds.groups}
    assert counts == {"dense": 3, "moe": 58}
    mav = get_model("llama-4-maverick")
    kinds = {}
    for layer, n in mav.groups:  # MoE layers split into chunked (RoPE) and global (NoPE) attention groups
        kinds[layer.ffn.kind] = kinds.get(layer.ffn.kind, 0) + n
    assert kinds == {"dense": 24, "moe": 24}
    gpt = get_model("gpt-oss-120b")
    assert sorted(layer.attn.window for layer, _ in gpt.groups) == [0, 128]
    nas = get_model("nemotron-super-49b")
    assert any(layer.attn.kind == "none" for layer, _ in nas.groups)
    assert within(nas.total_params, 49.9e9, unit=0.1e9)  # NVIDIA model card: 49.9B


def test_hf_ids_and_quant_defaults():
    assert get_model("meta-llama/Llama-3.1-70B-Instruct").name == "llama-3.1-70b"
    fp4 = get_model("nvidia/DeepSeek-R1-NVFP4")
    assert fp4.default_precision.weight.name == "nvfp4" and fp4.default_precision.kv.name == "fp8"
    # modelopt's exclude_modules names q_a/q_b/kv_a/kv_b, not o_proj: attention at the linear format, the part recorded (fixN5a)
    assert fp4.default_precision.attn.name == "nvfp4"
    assert fp4.attn_kept_partial == ("kv_a_proj_with_mqa", "kv_b_proj", "q_a_proj", "q_b_proj")
    assert get_model("deepseek-r1").default_precision.weight.name == "fp8_block"
    assert get_model("gpt-oss-120b").default_precision.weight.name == "mxfp4"


def test_config_path_and_errors(tmp_path):
    cfg = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 1000, "intermediate_size": 4096}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = get_model(str(p))
    assert m.num_layers == 4 and m.total_params == 2 * 1000 * 1024 + 4 * (4 * 1024 * 1024 + 3 * 1024 * 4096)
    # a checkpoint's config.json is named by its folder; another JSON file by its own name
    assert m.name == tmp_path.name and get_model(str(tmp_path)).name == tmp_path.name
    (tmp_path / "tiny.json").write_text(json.dumps(cfg))
    assert get_model(str(tmp_path / "tiny.json")).name == "tiny"
    # a mistyped config path is a missing file, not a Hugging Face id to download
    with pytest.raises(InputError, match=r"^model: '.*my-model/config\.jsn' is not valid; an existing config\.json path \(no such file\)"):
        get_model(str(tmp_path / "my-model" / "config.jsn"))
    with pytest.raises(InputError, match="hidden_size"):
        from_hf_config({k: v for k, v in cfg.items() if k != "hidden_size"})
    with pytest.raises(InputError, match="num_attention_heads"):
        from_hf_config({**cfg, "num_attention_heads": -2})
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(InputError, match="valid JSON"):
        get_model(str(bad))
    with pytest.raises(InputError, match="llama-3.1-8b"):
        get_model("llama-9")
    with pytest.raises(UnsupportedModelError, match="rwkv7"):
        from_hf_config({**cfg, "layer_types": ["full_attention"] * 3 + ["rwkv7"]})
