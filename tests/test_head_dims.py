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
    assert head_dim_note(m, "sglang", H100).endswith("it needs --attention-backend triton (the export writes it), slower; priced as "
                                                     "its Triton kernels (H100 kernel table) (lint R4)")


def test_amd_gpus_get_no_cuda_kernel_rule():
    # frev #3: FlashAttention-3/FlashInfer are CUDA-only; SGLang on ROCm runs aiter (the export writes
    # --attention-backend aiter), vLLM ROCM_AITER_FA/TRITON_ATTN: no head-size rule is read for them, so none is said;
    # the same head size on an H100 still gets the CUDA rule
    for gpu in ("mi300x", "mi325x", "mi355x"):
        assert all(head_dim_support(e, get_gpu(gpu), 512) is None for e in ("vllm", "sglang", "trtllm", "atom"))
    assert head_dim_support("sglang", H100, 512)[0] == "flag"
    gemma = get_model("gemma-4-26b-a4b")
    assert head_dim_note(gemma, "sglang", get_gpu("mi300x")) is None and "512" in head_dim_note(gemma, "sglang", H100)


def test_sglang_fa3_on_an_fp8_cache_takes_multiples_of_16():
    # leftB: FA3's mha_fwd checks head_size % 16 where the query is FP8 (8 otherwise), and SGLang's fa3 backend, Hopper's
    # default, casts the query to an FP8 cache's format: 104 and 120 (multiples of 8, not 16) need the Triton backend on
    # an FP8 cache there; 96 and 128 (multiples of 16) do not; a BF16 cache, or Blackwell (not fa3), as before
    for hd in (104, 120):
        assert head_dim_support("sglang", H100, hd) is None and head_dim_support("sglang", H100, hd, "bf16") is None
        kind, rule, then = head_dim_support("sglang", H100, hd, "fp8")
        assert kind == "flag" and "FP8 KV cache takes multiples of 16" in rule and "--attention-backend triton" in then
        assert head_dim_support("sglang", B200, hd, "fp8") is None
    assert head_dim_support("sglang", H100, 96, "fp8") is None and head_dim_support("sglang", H100, 128, "fp8") is None
    assert head_dim_support("sglang", H100, 125, "fp8")[1].startswith("SGLang's FlashAttention-3 takes multiples of 8")
    assert head_dim_support("vllm", H100, 120, "fp8")[0] == "flag"  # leftD read vLLM's too: its FA3's same check


def test_sglang_export_writes_the_backend_its_head_size_needs_and_reads_it_back():
    # leftB: the export priced head_dim 125 (and 120 on an FP8 cache) without the --attention-backend triton SGLang needs
    from llm_codesign.explore.export import export_config
    from llm_codesign.spec.engines.head_dims import sglang_fallback
    from llm_codesign.spec.plan import Deployment, Plan, precision_for

    def shape(hidden, heads):
        return from_hf_config({"model_type": "llama", "hidden_size": hidden, "num_hidden_layers": 4, "num_attention_heads": heads,
                               "num_key_value_heads": 8, "intermediate_size": 13824, "vocab_size": 32000}, f"hd{hidden // heads}")

    def written(m, kv):
        dep = Deployment(gpu=H100, num_gpus=1, plan=Plan(1), precision=precision_for(m, kv=kv), backend="sglang")
        return export_config(m, dep, engine="sglang", concurrency=8)

    m125, m120, m128 = shape(5000, 40), shape(3840, 32), shape(4096, 32)
    assert sglang_fallback(m125, H100) == "triton" and sglang_fallback(m128, H100, "fp8") is None
    assert "--attention-backend triton" in written(m125, None)
    assert "--attention-backend triton" in written(m120, "fp8") and "--attention-backend" not in written(m120, None)
    assert "--attention-backend" not in written(m128, "fp8")
    # read back (import / check): the flag its export writes is not listed as ignored; another backend is
    from llm_codesign.explore.export_engines.base import exporter

    ex, dep = exporter("sglang"), Deployment(gpu=H100, num_gpus=1, plan=Plan(1), precision=m125.default_precision, backend="sglang")
    o, _ = ex.parse(written(m125, None))
    assert o["attention-backend"] == "triton" and ex.unread(o, m125, dep) == []
    assert ex.unread({**o, "attention-backend": "flashinfer"}, m125, dep) == ["attention-backend"]


def test_vllm_fa3_on_an_fp8_cache_takes_multiples_of_16():
    # leftD: vLLM quantises the query to FP8 on an FP8 cache (query_quant) and FA3's mha_fwd checks head_size % 16, while
    # its selector checks % 8: 104 and 120 pick FlashAttention and fail, so the launch names TRITON_ATTN; 96 and 128 run
    # FA3; a BF16 cache, or a B200 (no FA3), as before
    from llm_codesign.spec.engines.head_dims import vllm_fallback

    for hd in (104, 120):
        assert head_dim_support("vllm", H100, hd) is None and head_dim_support("vllm", H100, hd, "bf16") is None
        kind, rule, then = head_dim_support("vllm", H100, hd, "fp8")
        assert kind == "flag" and rule.startswith("vLLM's FlashAttention-3 on an FP8 KV cache takes multiples of 16 up to 256")
        assert then == "it needs --attention-backend TRITON_ATTN (the export writes it), slower"
        assert head_dim_support("vllm", B200, hd, "fp8") is None
    assert head_dim_support("vllm", H100, 96, "fp8") is None and head_dim_support("vllm", H100, 128, "fp8") is None
    assert head_dim_support("vllm", H100, 125, "fp8")[0] == "slower"  # not a multiple of 8: Triton, picked by the selector
    m120 = from_hf_config({"model_type": "llama", "hidden_size": 3840, "num_hidden_layers": 4, "num_attention_heads": 32,
                           "num_key_value_heads": 8, "intermediate_size": 13824, "vocab_size": 32000}, "hd120")
    assert vllm_fallback(m120, H100, "fp8") == "TRITON_ATTN" and vllm_fallback(m120, H100) is None
    assert head_dim_note(m120, "vllm", H100, "fp8").endswith(
        "it needs --attention-backend TRITON_ATTN (the export writes it), slower; priced as the fast kernel (vLLM's Triton "
        "attention is not timed) (lint R4)")


def test_vllm_export_writes_the_backend_an_fp8_cache_needs_and_reads_it_back():
    from llm_codesign.explore.export import export_config
    from llm_codesign.explore.export_engines.base import exporter
    from llm_codesign.spec.plan import Deployment, Plan, precision_for

    def shape(hidden, heads):
        return from_hf_config({"model_type": "llama", "hidden_size": hidden, "num_hidden_layers": 4, "num_attention_heads": heads,
                               "num_key_value_heads": 8, "intermediate_size": 13824, "vocab_size": 32000}, f"hd{hidden // heads}")

    m120, m128 = shape(3840, 32), shape(4096, 32)

    def dep(m, kv):
        return Deployment(gpu=H100, num_gpus=1, plan=Plan(1), precision=precision_for(m, kv=kv), backend="vllm")

    text = export_config(m120, dep(m120, "fp8"), engine="vllm", concurrency=8)
    assert "attention-backend: TRITON_ATTN" in text
    assert "attention-backend" not in export_config(m120, dep(m120, None), engine="vllm", concurrency=8)
    assert "attention-backend" not in export_config(m128, dep(m128, "fp8"), engine="vllm", concurrency=8)
    ex = exporter("vllm")
    o, _ = ex.parse(text)
    assert o["attention-backend"] == "TRITON_ATTN" and "attention-backend" not in ex.unread(o, m120, dep(m120, "fp8"))
    assert "attention-backend" in ex.unread({**o, "attention-backend": "FLASHINFER"}, m120, dep(m120, "fp8"))
