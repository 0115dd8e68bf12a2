"""newc9 #2, #13, #9, #8: Gemma 3's window pattern and defaults, DeepSeek-V2 known, unread layer-kind keys said, AMD's
Quark MXFP4 R1 ids, and a checkpoint format priced as BF16 carried in precision_notes."""
import pytest

import llm_codesign as lc
from llm_codesign.errors import InputError
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.registry import entries, get_model

# google/gemma-3-27b-it's text_config as newc9 wrote it (no tie_word_embeddings key: Gemma3TextConfig ties by default)
G3_TEXT = {"model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 62,
           "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "sliding_window": 1024,
           "sliding_window_pattern": 6, "vocab_size": 262208, "max_position_embeddings": 131072,
           "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "query_pre_attn_scalar": 168,
           "hidden_activation": "gelu_pytorch_tanh"}
G3 = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "text_config": G3_TEXT,
      "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27, "model_type": "siglip_vision_model"}}
# DeepSeek-V2-Lite's config.json (newc9's dsv2l): MLA rank 512, 64 experts top-6, 2 shared, the first layer dense
DSV2L = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
         "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
         "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
         "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
         "vocab_size": 102400, "max_position_embeddings": 163840, "tie_word_embeddings": False, "moe_layer_freq": 1}
# Qwen2.5-7B's shape, for the quantization formats
Q7 = {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
      "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 32768, "tie_word_embeddings": False}
W8A8_INT8 = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"],
             "weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
             "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True}}}}


def _global_layers(m) -> list[int]:
    return [i for i, g in enumerate(m.layout) if m.groups[g][0].attn.window == 0]


@pytest.mark.parametrize("cfg", [G3, G3_TEXT], ids=["gemma3", "gemma3_text"])
def test_gemma3_27b_keeps_its_ten_global_layers_and_ties_its_head(cfg):
    m = from_hf_config(cfg, "g3")
    # (i + 1) % 6 == 0: layers 5, 11, ..., 59 global (62 layers: 10 of them), the other 52 windowed at 1024
    assert _global_layers(m) == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]
    # KV, newc9's hand figure: 16 KV heads x 128 x 2 (K, V) x 2 B = 8 KiB a token a layer; 8 requests of 8192 + 512:
    # 10 x 8192 x 8 x 8448 + 52 x 8192 x 8 x 1024 = 5,536,481,280 + 3,489,660,928 = 9,026,142,208 B (all 62 windowed: 4.16 GB)
    assert m.kv_values_per_token(8448) * 2 * 8 * 8448 == pytest.approx(9_026_142_208, rel=1e-12)
    # parameters: embedding 262208 x 5376 = 1,409,630,208, tied (no second head); a layer's attention
    # 5376 x (4096 + 2048 + 2048) + 4096 x 5376 = 66,060,288 and GeGLU 3 x 5376 x 21504 = 346,816,512, x 62 = 25,598,361,600:
    # 27,007,991,808 (27.0B; the untied reading was 28.4B)
    assert m.tie_embeddings and m.total_params == 27_007_991_808
    assert m.notes == ()  # gemma3 / gemma3_text are known, sliding_window_pattern is read


def test_gemma3_estimate_prices_the_global_layers_kv():
    # newc9's reproducer: MI300X TP1, ISL 8192, OSL 512, 8 requests; memory.kv_gb was 4.16 (every layer windowed)
    e = lc.estimate(from_hf_config(G3, "g3"), lc.deployment(from_hf_config(G3, "g3"), gpu="mi300x", tp=1),
                    lc.Workload(isl=8192, osl=512, concurrency=8)).to_dict()
    assert e["memory"]["kv_gb"] == pytest.approx(9.026, abs=0.001)
    assert e["memory"]["weights_gb"] == pytest.approx(27_007_991_808 * 2 / 1e9, rel=0.01)  # BF16, one copy of the embedding


def test_gemma3_config_class_defaults_fill_what_the_config_leaves_out():
    # a text_config without vocab_size or sliding_window_pattern reads Gemma3TextConfig's 262,208 and 6
    lean = {k: v for k, v in G3_TEXT.items() if k not in ("vocab_size", "sliding_window_pattern")}
    m = from_hf_config({**G3, "text_config": lean}, "g3")
    assert m.vocab == 262208 and _global_layers(m) == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]
    # an explicit untied config is taken at its word
    assert not from_hf_config({**G3_TEXT, "tie_word_embeddings": False}, "g3").tie_embeddings


def test_sliding_window_pattern_is_read_for_any_family_and_bad_values_named():
    base = {**Q7, "model_type": "cohere2", "sliding_window": 4096, "use_sliding_window": True, "num_hidden_layers": 8}
    m = from_hf_config({**base, "sliding_window_pattern": 4}, "c2")
    assert _global_layers(m) == [3, 7]  # (i + 1) % 4 == 0
    for bad in (0, True, 1.5):
        with pytest.raises(InputError) as e:
            from_hf_config({**base, "sliding_window_pattern": bad}, "c2")
        assert e.value.field == "config.sliding_window_pattern" and "positive integer" in str(e.value)


def test_a_layer_kind_key_not_read_is_a_note_naming_it():
    # Exaone 4's pattern string and Qwen3-Next's interval are not read: each named, not priced silently as uniform layers
    m = from_hf_config({**Q7, "sliding_window": 4096, "sliding_window_pattern": "LLLG"}, "x")
    assert any("sliding_window_pattern='LLLG'" in n and "not read" in n and n.kind == "loader" for n in m.notes)
    n = from_hf_config({**Q7, "model_type": "qwen3_next", "full_attention_interval": 4}, "y").notes
    assert any("full_attention_interval=4" in x for x in n)
    # with layer_types beside it, the key only repeats them: nothing to say; Qwen2's max_window_layers matters only when
    # use_sliding_window is on
    lt = ["full_attention"] * 28
    assert not any("not read" in x for x in from_hf_config({**Q7, "full_attention_interval": 4, "layer_types": lt}, "z").notes)
    assert from_hf_config({**Q7, "max_window_layers": 21, "use_sliding_window": False}, "q").notes == ()
    assert any("max_window_layers=21" in x for x in from_hf_config({**Q7, "max_window_layers": 21, "use_sliding_window": True,
                                                                     "sliding_window": 4096}, "q").notes)


def test_no_bundled_model_carries_a_loader_note():
    # every registry entry's config is read whole: no unknown model_type, no unread layer key, no unpriced format
    for e in entries():
        m = get_model(e["name"])
        assert [n for n in m.notes if n.kind == "loader"] == [] and m.unpriced_quant == "", e["name"]


def test_deepseek_v2_is_known_and_read_as_mla_moe():
    m = from_hf_config(DSV2L, "dsv2l")
    assert m.notes == ()  # was "model_type deepseek_v2 is not one the loader knows; read as a standard decoder"
    # MLA latent: (kv_lora_rank 512 + rope 64) x 27 layers x 2 B = 31,104 B a token
    assert m.kv_values_per_token() * 2 == 31_104
    # 26 MoE layers of 64 experts top-6 + 2 shared, layer 0 dense (first_k_dense_replace 1)
    assert [type(layer.ffn).__name__ for layer, _ in m.groups] == ["DenseFfn", "MoE"]
    assert m.groups[1][1] == 26 and m.groups[1][0].ffn.top_k == 6 and m.groups[1][0].ffn.shared_inter == 2 * 1408


@pytest.mark.parametrize("qc,advice", [
    # leftC: INT8 is a format (compressed-tensors W8A8 and W8A16, GPTQ 8 bits are read); what is left unread at 8 bits
    # is priced as int8 where its advice is followed: weight-only (HQQ, AWQ 8 bits) on BF16 activations (frev9 #3)
    ({"quant_method": "awq", "bits": 8, "group_size": 128},
     "--weight-dtype int8 --activation-dtype bf16 prices its bytes (INT8 weights on BF16 activations, W8A16)"),
    ({"quant_method": "hqq", "nbits": 8}, "--weight-dtype int8 --activation-dtype bf16 prices its bytes"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "--weight-dtype int8 prices its bytes (W8A8 INT8)"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "--weight-dtype int4 prices its bytes"),
    ({"quant_method": "hqq", "nbits": 3}, "give --weight-dtype for its bytes"),
])
def test_an_unpriced_format_gives_advice_that_can_be_followed(qc, advice):
    m = from_hf_config({**Q7, "quantization_config": qc}, "q7")
    assert advice in m.unpriced_quant and "priced as BF16" in m.unpriced_quant
    assert m.notes[-1] == m.unpriced_quant  # still said on stderr by the CLI (a "loader" note)


def test_an_unpriced_format_is_in_precision_notes_while_priced_as_bf16():
    hqq8 = {"quant_method": "hqq", "nbits": 8}  # W8A8_INT8 was the example before INT8 became a format (leftC)
    m = from_hf_config({**Q7, "quantization_config": hqq8}, "q7")
    w = lc.Workload(isl=1024, osl=256, concurrency=8)
    e = lc.estimate(m, lc.deployment(m, gpu="a100", tp=1), w).to_dict()
    assert e["precision_notes"] == [m.unpriced_quant] and "quant_method hqq" in e["precision_notes"][0]
    # priced at its bytes as its advice says (INT8 weights on BF16): the BF16 fallback is not what ran, so nothing to say
    i8 = lc.estimate(m, lc.deployment(m, gpu="a100", tp=1, weight_dtype="int8", activation_dtype="bf16"), w).to_dict()
    assert i8["precision_notes"] == []
    ct = from_hf_config({**Q7, "quantization_config": W8A8_INT8}, "q7")  # now read: W8A8 INT8, nothing to say
    assert ct.unpriced_quant == "" and ct.default_precision.label() == "W:int8 A:int8 KV:bf16"
    plain = from_hf_config(Q7, "q7")
    assert lc.estimate(plain, lc.deployment(plain, gpu="a100", tp=1), w).to_dict()["precision_notes"] == []


def test_amd_quark_mxfp4_r1_ids_resolve_to_its_own_format():
    for ref in ("amd/DeepSeek-R1-0528-MXFP4-Preview", "amd/DeepSeek-R1-0528-MXFP4"):
        m = get_model(ref)
        # the card's w_mxfp4_a_mxfp4 with *self_attn* excluded: MXFP4 weights and activations, BF16 attention, BF16 KV
        assert (m.name, m.default_precision.label()) == ("deepseek-r1-mxfp4", "W:mxfp4 attn-W:bf16 A:mxfp4 KV:bf16")
    # the same deployment as deepseek-r1 re-quantised to MXFP4 on a CDNA GPU (spec.plan.quark_mxfp4): the same figures
    w = lc.Workload(isl=1024, osl=1024, concurrency=4)
    amd = lc.estimate("deepseek-r1-mxfp4", lc.deployment("deepseek-r1-mxfp4", gpu="mi355x", tp=8), w).to_dict()
    r1 = lc.estimate("deepseek-r1", lc.deployment("deepseek-r1", gpu="mi355x", tp=8, weight_dtype="mxfp4"), w).to_dict()
    assert (amd["tpot_ms"], amd["ttft_ms"], amd["memory"]["weights_gb"]) == (r1["tpot_ms"], r1["ttft_ms"], r1["memory"]["weights_gb"])
    from llm_codesign.spec.plan import published_acceptance
    assert published_acceptance("mtp", get_model("deepseek-r1-mxfp4")) == published_acceptance("mtp", get_model("deepseek-r1"))


def test_gemma3_past_its_context_is_refused_as_every_model_is(tmp_path):
    """branch pageD: google/gemma-3-27b-it's config (131,072 tokens: max_position_embeddings, which already counts its
    linear RoPE x8, as vLLM reads it; frev9 #1) at ISL 200,000 + OSL 100 = 200,100 > 131,072: one line naming the field,
    the value and what is valid, exit 2, nothing on stdout, in the words llama-3.1-8b's refusal uses (its context is
    131,072 too), on the CLI and the page's API alike."""
    import json

    from conftest import cli

    d = tmp_path / "gemma-3-27b-it"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(G3))
    said = {}
    for name, model in (("gemma-3-27b-it", str(d / "config.json")), ("llama-3.1-8b", "llama-3.1-8b")):
        code, out, err = cli("estimate", model, "--gpu", "h200", "--gpus", "8", "--tp", "8", "--isl", "200000", "--osl", "100")
        assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1, err
        said[name] = err.strip()
    assert said["gemma-3-27b-it"] == ("error: isl+osl: 200100 is not valid; at most gemma-3-27b-it's context of 131,072 tokens "
                                      "(max_position_embeddings with its RoPE scaling)")
    assert said["gemma-3-27b-it"].replace("gemma-3-27b-it", "llama-3.1-8b") == said["llama-3.1-8b"]
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    r = TestClient(create_app()).post("/api/estimate", json={"config": G3, "gpu": "h200", "num_gpus": 8, "tp": 8,
                                                            "isl": 200000, "osl": 100})
    assert r.status_code == 422 and r.json() == {"field": "isl+osl", "error": "isl+osl: 200100 is not valid; at most custom's "
                                                 "context of 131,072 tokens (max_position_embeddings with its RoPE scaling)"}
