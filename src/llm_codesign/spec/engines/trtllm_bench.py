"""trtllm-bench's own batch and token settings: the harness that measured TensorRT-LLM's perf-overview
tables (offline max throughput). Its reproduction commands give no --max_batch_size / --max_num_tokens
(docs/source/performance/perf-overview.md, v0.17, v0.20 and v1.0), so the tool picks both itself from a
memory estimate of its own, which caps the running batch below what the KV cache holds where that
estimate is tight. Sources, NVIDIA/TensorRT-LLM (newest stored versions; the releases that measured the
tables may differ in detail, data/measurements/SOURCES.md):
- tensorrt_llm/bench/build/tuning.py@04cba882 calc_engine_setting and finetune_setting: the estimate
  and its "optimistic" rounding;
- tensorrt_llm/bench/build/build.py@000a01de get_benchmark_engine_settings: the estimate for NVFP4, FP8,
  FP8 block scales and unquantised checkpoints only, BuildConfig's defaults (2048, 8192) otherwise;
- tensorrt_llm/bench/benchmark/utils/general.py@0171265e get_settings (PyTorch flow, v0.20 and v1.0): with
  chunked prefill off (its default) max_num_tokens is raised to at least max ISL + max_batch_size;
- tensorrt_llm/bench/build/utils.py get_device_memory: NVML's total memory in GiB.
"""
from __future__ import annotations

import numpy as np

from llm_codesign.spec.kinds import MLA, Attention

GIB = 1024.0**3
# tuning.py BYTES_PER_ELEM by the checkpoint's quantisation (QuantAlgo.NO_QUANT 2, FP8 and FP8_BLOCK_SCALES 1,
# NVFP4 0.5); any other unquantised dtype also 2 (BYTES_PER_ELEM.get(..., 2))
_BYTES = {"fp8": 1.0, "nvfp4": 0.5}
# build.py TUNED_QUANTS: other quantisations (INT4 weight-only, MXFP4, ...) keep BuildConfig's defaults
_TUNED = ("bf16", "fp16", "fp8", "nvfp4")
DEFAULT_MAX_BATCH, DEFAULT_MAX_TOKENS = 2048, 8192
BATCH_CAP, TOKEN_CAP = 4096, 32768  # finetune_setting: decoder buffers, TRT activation buffers
# trtllm-bench's --kv_cache_free_gpu_mem_fraction as the perf-overview pages run it ("In many cases, we also
# use a higher KV cache percentage by setting --kv_cache_free_gpu_mem_fraction 0.95 ... We fall back to 0.90
# or lower if out-of-memory errors are encountered"); calc_engine_setting's own default is 0.95 too
KV_FRACTION = 0.95


def _quant(dtype) -> str:
    """The checkpoint quantisation's name as tuning.py keys it: fp8 for FP8 (block-scaled included), nvfp4,
    bf16 for an unquantised checkpoint, else the dtype's own name (not tuned)."""
    if dtype.math == "fp8":
        return "fp8"
    return "bf16" if dtype.name in ("bf16", "fp16") else dtype.name


def param_count(model, prec) -> float:
    """The parameter count trtllm-bench reads from the checkpoint's safetensors header (dataclasses.py
    ModelConfig.get_param_count: the sum of every tensor's elements). Here the model's weights; an NVFP4
    checkpoint stores two weights per uint8 element, so its quantised layers count half (embedding and LM
    head stay 16-bit). Scale tensors and vision towers (about 1% of Llama 4's) are left out."""
    total = float(model.total_params)
    if _quant(prec.weight) == "nvfp4":
        total -= 0.5 * (total - model.embedding_params - model.lm_head_params)
    return total


def kv_bytes_per_token(model, prec, tp) -> np.ndarray:
    """calc_engine_setting's byte_per_token: 2 (K and V) x every attention layer (num_attention_layers,
    num_hidden_layers unless a Nemotron hybrid) x max(tp, num_key_value_heads) x head_size x the KV
    dtype's bytes, with no allowance for sliding or chunked layers. Heads and head size as its ModelConfig
    reads the HF config: num_key_value_heads (else num_attention_heads), head_dim (else hidden / heads). An MLA
    config (DeepSeek-V3's) has no head_dim key, so the estimate takes hidden / heads (56 for DeepSeek-V3) and every
    one of its 128 heads, not the latent the engine caches."""
    attn = [(layer.attn, n) for layer, n in model.groups if isinstance(layer.attn, Attention)]
    if not attn:  # no KV cache (a state-space stack): the estimate's requests are bounded by BATCH_CAP alone
        return np.zeros_like(np.asarray(tp, float))
    first = attn[0][0]
    kv_heads = getattr(first, "kv_heads", first.heads)
    head = model.hidden // first.heads if isinstance(first, MLA) else getattr(first, "head_dim", model.hidden // first.heads)
    kv_elem = _BYTES.get(_quant(prec.kv), 2.0)
    return 2.0 * sum(n for _, n in attn) * np.maximum(np.asarray(tp, float), kv_heads) * head * kv_elem


def _round_up(x, step):
    return step * np.ceil(x / step)


def settings(model, gpu, prec, *, tp, pp, isl, osl, kv_fraction=KV_FRACTION, chunked_prefill=False) -> tuple[np.ndarray, np.ndarray]:
    """(max_batch_size, max_num_tokens) trtllm-bench runs with, per deployment (arrays broadcast over tp, pp,
    isl, osl and chunked_prefill): max_batch_size per pipeline micro-batch, max_num_tokens per step. The
    dataset is uniform, so its average and maximum lengths are isl and osl. `chunked_prefill` False (the
    PyTorch flow's default, v0.20+) raises max_num_tokens to isl + max_batch_size; the TensorRT engine flow
    (v0.17, `trtllm-bench build`) builds the engine with the estimate as it is."""
    tp, pp, isl, osl = (np.asarray(x, float) for x in (tp, pp, isl, osl))
    quant = _quant(prec.weight)
    if quant not in _TUNED:
        shape = np.broadcast_shapes(tp.shape, pp.shape, isl.shape, osl.shape)
        bs, tokens = np.full(shape, float(DEFAULT_MAX_BATCH)), np.full(shape, float(DEFAULT_MAX_TOKENS))
    else:
        engine = param_count(model, prec) * _BYTES.get(quant, 2.0) / GIB
        available = gpu.memory_bytes / GIB * tp * pp - engine
        with np.errstate(divide="ignore"):
            requests = np.maximum(available, 0.0) * kv_fraction / (kv_bytes_per_token(model, prec, tp) / GIB * (isl + osl))
        raw_bs = np.minimum(requests, BATCH_CAP) / pp
        raw_tok = np.minimum(raw_bs * (1.0 + isl / osl), TOKEN_CAP)
        # "slightly optimistic" rounding up: at least 64 requests, at least 2048 tokens
        bs = np.where(raw_bs < 256, np.maximum(64.0, _round_up(raw_bs, 32)),
                      np.where(raw_bs < 1024, _round_up(raw_bs, 128), _round_up(raw_bs, 256)))
        tokens = np.where(raw_tok < 4096, np.maximum(2048.0, _round_up(raw_tok, 256)),
                          np.where(raw_tok < 8192, _round_up(raw_tok, 512), _round_up(raw_tok, 1024)))
    tokens = np.where(np.asarray(chunked_prefill, bool), tokens, np.maximum(tokens, isl + bs))
    return np.broadcast_to(bs, tokens.shape).copy(), tokens
