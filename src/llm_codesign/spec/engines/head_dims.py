"""Which attention head sizes each engine's fused attention kernels take, per GPU: the one rule lint's R4, estimate,
export and import apply (newc8 #8: lint said head_dim 125 "blocks a plan ... not priced" while estimate and export
priced it without a word). The cost model prices attention as the engine's fused kernel at any head size; where no
fused kernel of the engine takes the model's head size, the answer says what runs instead, or that it does not run.

Sources, each a kernel's own check or instantiation list:
- vLLM's FlashAttention backend on an FP8 cache on Hopper: FA3 with the query quantised to FP8, so multiples of 16 (the
  selector checks 8: a multiple of 8 that is not of 16 fails at the first forward, and needs --attention-backend
  TRITON_ATTN, which vLLM's export writes; _vllm's comment cites the lines at 0.33.0). At 0.33.0 a head size up to 512
  also runs FlashAttention-4 on Hopper (BF16, and FP8 at 512 alone: fa_utils.py:306-309), not read into the rule below.
- vLLM's FlashAttention backend: `head_size % 8 == 0 and head_size <= 256` (FlashAttentionBackend.supports_head_size,
  vllm/v1/attention/backends/flash_attn.py@5704f34f); else its selector takes TRITON_ATTN, `head_size >= 32`
  (TritonAttentionBackend.supports_head_size, vllm/v1/attention/backends/triton_attn.py@63013883), a Triton kernel
  whose head is padded to the next power of 2 (next_power_of_2(headdim), the same file).
- SGLang's default CUDA backends: FlashAttention-3, `head_size % 8 == 0` up to 256, 16 where the query is FP8
  (Dao-AILab/flash-attention hopper/flash_api.cpp mha_fwd: `alignment = q_type == kFloat8_e4m3fn ? 16 : 8`,
  TORCH_CHECK(head_size % alignment == 0)@000090d0, the check sgl-kernel's FA3 build of sgl-project/sgl-attn keeps),
  which SGLang's fa3 backend, its default on Hopper, makes it on an FP8 KV cache (layers/attention/
  flashattention_backend.py forward_extend:1042, forward_decode:1382-1387@0.5.14: the query cast to the cache's FP8);
  FlashInfer, built for 64, 128 and 256 (include/flashinfer/utils.cuh DISPATCH_HEAD_DIM@0d618712; its JIT builds
  "must be divisible by 16 and in range [16, 256]", flashinfer-ai/flashinfer#4546); another head size runs on
  `--attention-backend triton`, which SGLang's export writes (explore.export_engines.sglang).
- TensorRT-LLM's decode kernels: MMHA instantiated for 32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224 and 256
  (cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/instantiation/decoderMaskedMultiheadAttention{N}_*.cu,
  NVIDIA/TensorRT-LLM as stored), XQA a subset; 512 on datacenter Blackwell only, through trtllm-gen's cubins
  (NVIDIA/TensorRT-LLM#17772: "Gemma 4's full-attention layers use head_dim=512, which no SM90 paged attention kernel
  serves ... trtllm-gen has the cubins, but ships them for datacenter Blackwell only").
- ATOM (AITER): not read; no rule, so nothing is said.
- any engine on an AMD GPU: the kernels above are CUDA-only (SGLang on ROCm runs aiter/triton, vLLM ROCM_AITER_FA /
  ROCM_ATTN / TRITON_ATTN); their head-size limits are not read, so no rule, as ATOM.
"""
from __future__ import annotations

# the head sizes every engine's fastest kernels are tuned for (FlashAttention-3's and TensorRT-LLM's FMHA/XQA fast paths):
# lint's warning outside them; MLA runs its own 576/512 latent kernels
FAST_HEAD_DIMS = (64, 128, 256)
TRTLLM_MMHA = (32, 48, 64, 80, 96, 104, 112, 128, 144, 160, 192, 224, 256)


# what vLLM needs where its FlashAttention-3 refuses an FP8 cache's head size and its selector does not see it: the backend
# its export names (--attention-backend, vllm/engine/arg_utils.py:1114@0.33.0)
VLLM_FALLBACK = "TRITON_ATTN"


def _vllm(hd: int, gpu, kv: str | None = None) -> tuple[str, str, str] | None:
    # an FP8 cache on Hopper: the FlashAttention backend (FA3 there) takes it (flash_attn.py supports_combination:483-498,
    # fa_utils.py flash_attn_supports_kv_cache_dtype:282-312@0.33.0), the attention layer quantises the query to FP8
    # (layers/attention/attention.py:470-488, query_quant) and FA3's mha_fwd then checks head_size % 16 (vllm-project/
    # flash-attention hopper/flash_api.cpp:932-933@617264c1; its message is in vllm 0.24.0's _vllm_fa3_C.abi3.so). The
    # selector reads no such alignment (supports_head_size: % 8, flash_attn.py@0.33.0), so a multiple of 8 that is not
    # of 16 picks FlashAttention and fails at its first forward; FlashInfer takes 64, 128, 256 and 512 only
    # (flashinfer.py:421-423@0.24.0), so the launch must name TRITON_ATTN (FP8 and any head size >= 32, triton_attn.py)
    if kv == "fp8" and gpu is not None and gpu.family == "hopper" and hd % 8 == 0 and hd % 16 and hd <= 256:
        return ("flag", "vLLM's FlashAttention-3 on an FP8 KV cache takes multiples of 16 up to 256 (its query quantised to FP8; "
                        "its selector checks 8, so the server fails at its first forward)",
                f"it needs --attention-backend {VLLM_FALLBACK} (the export writes it), slower")
    if hd % 8 == 0 and hd <= 256:
        return None
    if hd >= 32:
        pad = 1 << (hd - 1).bit_length()
        return ("slower", "vLLM's FlashAttention backend takes multiples of 8 up to 256",
                f"it runs its Triton attention (TRITON_ATTN, the head padded to {pad}) instead, slower")
    return ("none", "vLLM's FlashAttention backend takes multiples of 8 up to 256, its Triton one 32 and up", "the model does not run")


# what SGLang runs where its default kernels take no head size: the backend its export names (--attention-backend)
SGLANG_FALLBACK = "triton"
# the GPU families whose kernel table times SGLang's Triton attention (data/measurements/kernels_hopper: H100), where
# estimate prices it by its own rules (Engine.triton_attention); elsewhere its block sizes differ (SM100: BLOCK_M 64 or
# 16, triton_ops/extend_attention.py:85-92@0.5.14) and no row times it, so the fast kernel is priced and the note says so
TRITON_PRICED_FAMILIES = ("hopper",)


def _sglang(hd: int, gpu, kv: str | None = None) -> tuple[str, str, str] | None:
    # an FP8 cache on Hopper, where fa3 is the default: the query cast to FP8, FA3's alignment 16
    fp8 = kv == "fp8" and gpu is not None and gpu.family == "hopper"
    if hd % (16 if fp8 else 8) == 0 and hd <= 256:
        return None
    then = f"it needs --attention-backend {SGLANG_FALLBACK} (the export writes it), slower"
    if fp8 and hd % 8 == 0 and hd <= 256:
        return ("flag", "SGLang's FlashAttention-3 on an FP8 KV cache takes multiples of 16 up to 256 (its query cast to FP8)", then)
    return ("flag", "SGLang's FlashAttention-3 takes multiples of 8 up to 256, FlashInfer 64, 128 and 256", then)


def _trtllm(hd: int, gpu, kv: str | None = None) -> tuple[str, str, str] | None:
    if hd in TRTLLM_MMHA or (hd == 512 and gpu is not None and gpu.family == "blackwell"):
        return None
    return ("none", f"TensorRT-LLM's decode kernels are built for head sizes {', '.join(map(str, TRTLLM_MMHA))} (and 512 on "
                    "datacenter Blackwell)", "the model does not run")


RULES = {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}


def head_dim_support(engine: str, gpu, head_dim: int, kv: str | None = None) -> tuple[str, str, str] | None:
    """None where a fast attention kernel of `engine` on `gpu` takes `head_dim` with a `kv` cache (a format name; None:
    BF16), or no rule is sourced (ATOM); else (kind, the kernels' rule, what happens instead): kind "slower" where the
    engine picks a slower kernel itself (vLLM's Triton attention), "flag" where it runs one only with a launch option
    (SGLang's --attention-backend triton, which its export writes: sglang_fallback), "none" where nothing runs it
    (TensorRT-LLM)."""
    if gpu is not None and gpu.vendor == "amd":
        return None  # FlashAttention-3/FlashInfer are CUDA-only; ROCm's AITER/Triton head-size limits are not read yet
    rule = RULES.get(engine)
    return rule(int(head_dim), gpu, None if kv is None else str(kv)) if rule else None


def gqa_head_dims(model) -> list[int]:
    from llm_codesign.spec.kinds import GQA

    return sorted({layer.attn.head_dim for layer, _ in model.groups if isinstance(layer.attn, GQA)})


def sglang_fallback(model, gpu, kv: str | None = None) -> str | None:
    """The --attention-backend SGLang needs on `gpu` where its default kernels take none of the model's head sizes
    (head_dim_support's "flag"), which its export writes; None where they take them all."""
    return SGLANG_FALLBACK if any(head_dim_support("sglang", gpu, hd, kv) for hd in gqa_head_dims(model)) else None


def vllm_fallback(model, gpu, kv: str | None = None) -> str | None:
    """The --attention-backend vLLM needs on `gpu` where its FlashAttention-3 refuses a head size of the model it selects
    itself for (head_dim_support's "flag": an FP8 cache's multiples of 8 that are not of 16 on Hopper), which its export
    writes; None otherwise."""
    return VLLM_FALLBACK if any((head_dim_support("vllm", gpu, hd, kv) or ("",))[0] == "flag" for hd in gqa_head_dims(model)) else None


def head_dim_note(model, engine: str, gpu, kv: str | None = None) -> str | None:
    """One line where the model's attention head size is one no fused kernel of `engine` on `gpu` takes with a `kv`
    cache (head_dim_support), as estimate, export and import say it beside lint's R4 error; None otherwise."""
    for hd in gqa_head_dims(model):
        said = head_dim_support(engine, gpu, hd, kv)
        if said:
            kind, rule, then = said
            priced = "priced as if it ran" if kind == "none" else "priced as the fast kernel"
            if kind == "flag" and engine == "vllm":  # its Triton attention: no table times it
                priced = "priced as the fast kernel (vLLM's Triton attention is not timed)"
            elif kind == "flag":
                priced = ("priced as its Triton kernels (H100 kernel table)" if gpu is not None and gpu.family in TRITON_PRICED_FAMILIES
                          else "priced as the fast kernel (its Triton kernels are timed on Hopper only)")
            return f"head_dim {hd}: {rule}: {then}; {priced} (lint R4)"
    return None


def head_dim_refusal(model, engine: str, gpu, kv: str | None = None) -> tuple[int, str, tuple[str, ...]] | None:
    """Where no kernel of `engine` on `gpu` runs one of the model's attention head sizes with a `kv` cache (head_dim_support's
    "none"): (that head size, the kernels' rule, the engines on `gpu` that run it, those whose fast kernel takes it first,
    then those that pick a slower one themselves, then those that need a launch option: a stable order otherwise,
    engines_on's); None where every head size runs. check_head_dims refuses by it; lint prices on the first engine it names."""
    from llm_codesign.spec.engines.base import engines_on

    for hd in gqa_head_dims(model):
        said = head_dim_support(engine, gpu, hd, kv)
        if said and said[0] == "none":
            rank = {None: 0, "slower": 1, "flag": 2}
            kinds = {e: (head_dim_support(e, gpu, hd, kv) or (None,))[0] for e in engines_on(gpu) if e != engine}
            return hd, said[1], tuple(sorted((e for e, k in kinds.items() if k != "none"), key=lambda e: rank[kinds[e]]))
    return None


def check_head_dims(model, engine: str, gpu, kv: str | None = None) -> None:
    """Refuse a model whose attention head size no kernel of `engine` on `gpu` runs (head_dim_refusal: TensorRT-LLM off its
    MMHA instantiations, vLLM below 32 off multiples of 8), in lint R4's words, naming the engines that run it: the one
    rule estimate, pareto, export and import share with lint's R4 error (newc11 #2: head_dim 127 priced as if it ran)."""
    from llm_codesign.errors import InputError

    if (r := head_dim_refusal(model, engine, gpu, kv)) is not None:
        hd, rule, others = r
        alt = f"; --backend {' or '.join(others)} run{'s' if len(others) == 1 else ''} it" if others else ""
        raise InputError("head_dim", hd, f"a head size {engine} runs on {gpu.name}: {rule} (lint R4){alt}")
