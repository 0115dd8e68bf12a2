"""The five dense configs of branch configs: Gemma-2-27B bundled from Google DeepMind's own Gemma library (gemma 4.0.1),
the Gemma-2 and Cohere config forms in the loader (alternating sliding/global layers, the LM head tied by default), and
Command R+, Mistral-Large-2, Qwen2.5-72B as test inputs only (no page of their own repositories is stored here). Parameter
counts derived by hand (norms and biases excluded, as ModelSpec counts) and held to each model card's rounding."""
import pytest

from llm_codesign.errors import InputError
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.registry import get_model

# Gemma-2-27B as its Hugging Face config.json reads in every stored copy (the repository itself is licence-gated): the
# transformers 4.42 form, no layer_types; vocab 256000
GEMMA2_27B_HF = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 4608, "intermediate_size": 36864,
                 "num_hidden_layers": 46, "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
                 "vocab_size": 256000, "sliding_window": 4096, "max_position_embeddings": 8192, "query_pre_attn_scalar": 144,
                 "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "cache_implementation": "hybrid",
                 "hidden_activation": "gelu_pytorch_tanh", "torch_dtype": "bfloat16"}
# Command R+ (c4ai-command-r-plus) as the quantised copies read it (FriendliAI/c4ai-command-r-plus-fp8 bcdc7dd,
# amd/c4ai-command-r-plus-FP8-KV 7c229ec, less their quantisation keys): no tie_word_embeddings key
COMMAND_R_PLUS = {"architectures": ["CohereForCausalLM"], "model_type": "cohere", "hidden_size": 12288, "intermediate_size": 33792,
                  "num_hidden_layers": 64, "num_attention_heads": 96, "num_key_value_heads": 8, "vocab_size": 256000,
                  "max_position_embeddings": 8192, "use_qk_norm": True, "logit_scale": 0.8333333333333334,
                  "rope_theta": 75000000.0, "torch_dtype": "float16"}
# Mistral-Large-Instruct-2407 as every stored copy reads it (envb entry): 12288 x 88, 96 / 8 heads of 128, untied
MISTRAL_LARGE_2 = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 12288, "intermediate_size": 28672,
                   "num_hidden_layers": 88, "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
                   "vocab_size": 32768, "max_position_embeddings": 131072, "tie_word_embeddings": False}
# Qwen2.5-72B as the stored re-uploads read it (BitStack/BitStack-Qwen2.5-72B 64e0819): Qwen2-72B's trunk
QWEN2_5_72B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568,
               "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 152064,
               "max_position_embeddings": 131072, "max_window_layers": 80, "sliding_window": None, "use_sliding_window": False,
               "tie_word_embeddings": False}

# Gemma-2-27B's layer: Q 4608 x 32 x 128 = 18,874,368, K and V 2 x 4608 x 16 x 128 = 18,874,368, O 18,874,368 (attention
# 56,623,104); gated FFN 3 x 4608 x 36864 = 509,607,936; 566,231,040 a layer, x 46 = 26,046,627,840
GEMMA2_BODY = 26_046_627_840


def test_gemma2_27b_bundled_by_hand():
    m = get_model("gemma-2-27b")
    # + the tied embedding 256128 x 4608 = 1,180,237,824 (gemma 4.0.1 num_embed) = 27,226,865,664: the card's "27B"
    assert m.total_params == GEMMA2_BODY + 256_128 * 4608 == 27_226_865_664
    assert round(m.total_params / 1e9) == 27
    assert m.tie_embeddings and m.num_layers == 46
    assert [(layer.attn.window, n) for layer, n in m.groups] == [(4096, 23), (0, 23)]
    assert m.layout[:4] == (0, 1, 0, 1)  # LOCAL_SLIDING first (gemma/gm/nn/_gemma.py:121-125)
    assert get_model("google/gemma-2-27b-it").name == "gemma-2-27b"


def test_gemma2_hf_form_alternates_and_ties():
    g = from_hf_config(GEMMA2_27B_HF, "gemma-2-27b-hf")
    # 256000 x 4608 = 1,179,648,000 tied, once: 27,226,275,840 (128 x 4608 = 589,824 under the library's)
    assert g.total_params == GEMMA2_BODY + 256_000 * 4608 == 27_226_275_840
    assert g.tie_embeddings and g.max_context == 8192
    assert g.layout == get_model("gemma-2-27b").layout
    # KV values a token: 2 x 16 x 128 = 4,096 a layer; at 8,192 tokens the 23 sliding layers hold 4,096 of them (half):
    # 23 x 4,096 x 0.5 + 23 x 4,096 = 141,312; every layer windowed (the config read without the alternation) would be 94,208
    assert g.kv_values_per_token(8192) == 141_312
    assert g.kv_values_per_token(100) == 46 * 4096


def test_cohere_ties_its_head_unless_told():
    c = from_hf_config(COMMAND_R_PLUS, "command-r-plus")
    # layer: Q and O 2 x 12288^2 = 301,989,888, K and V 2 x 12288 x 8 x 128 = 25,165,824, FFN 3 x 12288 x 33792 =
    # 1,245,708,288: 1,572,864,000, x 64 = 100,663,296,000; + 256000 x 12288 = 3,145,728,000 once = 103,809,024,000 ("104B")
    assert c.total_params == 103_809_024_000 and round(c.total_params / 1e9) == 104
    assert c.tie_embeddings
    untied = from_hf_config({**COMMAND_R_PLUS, "tie_word_embeddings": False}, "untied")
    assert untied.total_params - c.total_params == 256_000 * 12288  # the config's own key wins


def test_mistral_large_2_and_qwen2_5_copies_by_hand():
    m = from_hf_config(MISTRAL_LARGE_2, "mistral-large-2")
    # layer: attention 327,155,712 (as Command R+), FFN 3 x 12288 x 28672 = 1,056,964,608: 1,384,120,320, x 88 =
    # 121,802,588,160; embedding and head 2 x 32768 x 12288 = 805,306,368: 122,607,894,528 (the card's "123B")
    assert m.total_params == 122_607_894_528 and round(m.total_params / 1e9) == 123
    q = from_hf_config(QWEN2_5_72B, "qwen2.5-72b")
    assert q.total_params == get_model("qwen2-72b").total_params == 72_704_065_536  # the card's "72.7B"
    assert round(q.total_params / 1e8) == 727


def test_gemma2_layer_types_of_the_wrong_length_name_the_field():
    with pytest.raises(InputError, match="layer_types"):
        from_hf_config({**GEMMA2_27B_HF, "layer_types": ["sliding_attention", "full_attention"] * 22}, "bad")
