"""spec/engines/head_dims.py: the attention head sizes each engine's kernels take (the lists cited in the module), what
runs instead, and the one line estimate, export and import say it in (lint R4 the same rule, newc8 #8)."""
from __future__ import annotations

from llm_codesign.spec.engines.head_dims import TRTLLM_MMHA, head_dim_note, head_dim_support
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.registry import get_model

H100, B200 = get_gpu("h100"), get_gpu("b200")


def test_vllm_takes_flash_attention_sizes_and_falls_back_to_triton():
    # FlashAttention: head_size % 8 == 0 and <= 256; TRITON_ATTN: >= 32, the head padded to the next power of 2 (125 ->
    # 128, 300 -> 512); below 32 no backend
    assert head_dim_support("vllm", H100, 120) is None and head_dim_support("vllm", H100, 256) is None
    kind, rule, then = head_dim_support("vllm", H100, 125)
    assert kind == "slower" and rule == "vLLM's FlashAttention backend takes multiples of 8 up to 256" and "padded to 128" in then
    assert "padded to 512" in head_dim_support("vllm", H100, 300)[2] and head_dim_support("vllm", H100, 20)[0] == "none"


def test_sglang_needs_a_flag_off_its_default_kernels():
    assert head_dim_support("sglang", H100, 96) is None and head_dim_support("sglang", H100, 125)[0] == "flag"
    assert head_dim_support("sglang", H100, 264)[0] == "flag"  # past FA3's 256


def test_trtllm_decode_kernels_and_blackwell_512():
    # MMHA's 13 instantiated sizes; 512 on datacenter Blackwell only (trtllm-gen's cubins, NVIDIA/TensorRT-LLM#17772), so
    # Gemma 4's global layers on an H100 do not run; 120, a multiple of 8 in no list, neither
    assert TRTLLM_MMHA == (32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224, 256)
    assert all(head_dim_support("trtllm", H100, hd) is None for hd in TRTLLM_MMHA)
    assert head_dim_support("trtllm", B200, 512) is None and head_dim_support("trtllm", H100, 512)[0] == "none"
    assert head_dim_support("trtllm", H100, 120)[0] == "none"


def test_no_rule_read_says_nothing():
    assert head_dim_support("atom", get_gpu("mi300x"), 125) is None


def test_the_note_names_the_first_head_size_no_kernel_takes():
    assert head_dim_note(get_model("llama-3.1-8b"), "trtllm", H100) is None  # 128 everywhere
    g4 = get_model("gemma-4-26b-a4b")  # 256 on its sliding layers, 512 on its global ones
    assert head_dim_note(g4, "trtllm", B200) is None
    assert head_dim_note(g4, "trtllm", H100).startswith("head_dim 512: TensorRT-LLM's decode kernels are built for head sizes 32, ")
    assert head_dim_note(g4, "vllm", H100) == ("head_dim 512: vLLM's FlashAttention backend takes multiples of 8 up to 256: it runs its "
                                               "Triton attention (TRITON_ATTN, the head padded to 512) instead, slower; priced as the "
                                               "fast kernel (lint R4)")
    m = from_hf_config({"model_type": "llama", "hidden_size": 5000, "num_hidden_layers": 4, "num_attention_heads": 40,
                        "num_key_value_heads": 8, "intermediate_size": 13824, "vocab_size": 32000}, "hd125")
    assert head_dim_note(m, "sglang", H100).endswith("it needs --attention-backend triton, slower; priced as the fast kernel (lint R4)")


def test_amd_gpus_get_no_cuda_kernel_rule():
    # frev #3: FlashAttention-3/FlashInfer are CUDA-only; SGLang on ROCm runs aiter (the export writes
    # --attention-backend aiter), vLLM ROCM_AITER_FA/TRITON_ATTN: no head-size rule is read for them, so none is said;
    # the same head size on an H100 still gets the CUDA rule
    for gpu in ("mi300x", "mi325x", "mi355x"):
        assert all(head_dim_support(e, get_gpu(gpu), 512) is None for e in ("vllm", "sglang", "trtllm", "atom"))
    assert head_dim_support("sglang", H100, 512)[0] == "flag"
    gemma = get_model("gemma-4-26b-a4b")
    assert head_dim_note(gemma, "sglang", get_gpu("mi300x")) is None and "512" in head_dim_note(gemma, "sglang", H100)
