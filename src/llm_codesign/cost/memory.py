"""Memory per GPU: sharded weights, KV cache per token, recurrent state per sequence,
activations/workspace, and the batch that fits."""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.ops import Sharding
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.precision import Precision, executable

# Fraction of HBM an engine lets itself use, for engines not listed in engines.KV_BUDGET.
USABLE_FRACTION = 0.90
# CUDA context, cuBLAS/NCCL workspaces and CUDA-graph pools held outside the KV cache (assumption,
# typical 1-2 GB reported by vLLM's memory profiler).
WORKSPACE_BYTES = 1.5e9


def weight_bytes_per_gpu(model: ModelSpec, prec: Precision, sh: Sharding):
    """Weights held by one GPU of the largest pipeline stage (replicated where the plan replicates)."""
    tp, pp, ep, mtp, kvp = (np.asarray(x, float) for x in (sh.tp, sh.pp, sh.ep, sh.moe_tp, sh.kvp))
    h = model.hidden
    wa, wf = prec.attn.bytes_per_weight(), prec.weight.bytes_per_weight()
    per_layer = []
    for layer, _ in model.groups:
        a, f = layer.attn, layer.ffn
        # QKV/O sharded by TP, replicated across attention-DP and Helix ranks; Helix GPUs act as TP
        # for recurrent mixers (no KV cache to shard along the sequence)
        attn = a.params(h) * wa / (tp * kvp if a.recurrent else tp)
        if a.kind == "mla":
            # the low-rank down-projections (q_a, kv_a) are small and replicated on every TP rank
            down = h * (a.q_lora_rank + a.kv_lora_rank + a.rope_dim)
            attn = (a.params(h) - down) * wa / tp + down * wa
        if f.kind == "moe":
            expert = f.mats * h * f.expert_inter
            ffn = f.experts * expert * wf / (ep * mtp) + f.mats * h * f.shared_inter * wf / (tp * kvp) + h * f.experts * 2.0
        else:
            ffn = f.params(h)[0] * wf / (tp * kvp)
        per_layer.append(attn + ffn)
    # embedding on the first stage, LM head on the last (vocab-parallel over TP), kept in BF16
    emb = model.embedding_params * 2.0 / (tp * kvp)
    head = model.lm_head_params * 2.0 / (tp * kvp)
    ends = np.where(pp > 1, np.maximum(emb, head), emb + head)
    return busiest_stage(model, pp, per_layer) + ends


def busiest_stage(model: ModelSpec, pp, per_layer: list):
    """The most any pipeline stage holds of a per-layer quantity (one value or array per group), the
    stages split as engines split them (ModelSpec.stage_counts): L / pp layers' worth when pp divides
    a regular stack, the ceil(L / pp) stage otherwise."""
    pp = np.asarray(pp, float)
    if len(model.groups) == 1:  # a regular stack (its layer count may be an array in a shape sweep)
        n = np.asarray(model.groups[0][1], float)
        return np.where((n % pp == 0) | (n < pp), n / pp, np.ceil(n / pp)) * per_layer[0]
    total = sum(n * v for v, (_, n) in zip(per_layer, model.groups, strict=True))
    out = total / pp  # stages holding the same layers, and a one-layer draft spread over the stages
    for v in np.unique(pp):
        if int(v) > model.num_layers or int(v) <= 1:
            continue
        most = None
        for st in model.stage_counts(int(v)):
            s = sum(c * x for c, x in zip(st, per_layer, strict=True))
            most = s if most is None else np.maximum(most, s)
        out = np.where(pp == v, most, out)
    return out


def kv_bytes_per_token(model: ModelSpec, prec: Precision, sh: Sharding, context=None):
    """KV-cache bytes one GPU holds per token of a sequence its rank serves.

    GQA: KV heads split by TP (replicated when TP exceeds them); MLA: the latent is replicated on
    every TP rank; Helix divides the sequence over KV-parallel ranks; sliding-window layers keep at
    most `window` tokens, so with `context` their share per token shrinks.
    """
    tp, pp, kvp = (np.asarray(x, float) for x in (sh.tp, sh.pp, sh.kvp))
    kvb = prec.kv.bytes_per_value()
    per_layer = []  # cache bytes per token of one layer of each group
    for layer, _ in model.groups:
        a = layer.attn
        per_layer.append(0.0)
        if a.index_topk:  # DSA index keys: FP8 with one FP32 scale per 128 values (DeepSeek-V3.2-Exp)
            per_layer[-1] = a.index_head_dim * (1.0 + 4.0 / 128.0)
        if a.kind == "gqa":
            per = np.ceil(a.kv_heads / tp) * (a.head_dim + (0 if a.k_eq_v else a.v_head_dim))
        elif a.kind == "mla":
            per = (a.kv_lora_rank + a.rope_dim) + 0.0 * tp
        else:
            continue
        if a.window and context is not None:
            per = per * np.minimum(1.0, a.window / np.maximum(np.asarray(context, float), 1.0))
        # chunked local attention (Llama 4) keeps its whole context: vLLM turns the hybrid KV cache
        # manager off for it by default ("latency regression when using chunked local attention with
        # the hybrid KV cache manager"; VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 would keep
        # only the current chunk's blocks, docs/design/hybrid_kv_cache_manager.md)
        per_layer[-1] = per_layer[-1] + per * kvb
    # the stage holding the most cache per token bounds what fits (uneven stages: its ceil(L / pp) layers)
    return busiest_stage(model, pp, per_layer) / kvp


def state_bytes_per_seq(model: ModelSpec, sh: Sharding):
    """Fixed recurrent state (Gated DeltaNet, Mamba-2) one GPU holds per sequence its rank serves: heads split
    over TP (and Helix, which acts as TP for these layers), layers over pipeline stages."""
    tp, pp, kvp = (np.asarray(x, float) for x in (sh.tp, sh.pp, sh.kvp))
    return model.state_bytes_per_seq() / (tp * kvp * pp)


def activation_bytes(model: ModelSpec, sh: Sharding, max_num_tokens, max_seqs=256):
    """Transient activations of the largest step (chunk budget) plus logits for sampled tokens."""
    tp, kvp = np.asarray(sh.tp, float), np.asarray(sh.kvp, float)
    widest = np.maximum.reduce([np.asarray(layer.ffn.inter if layer.ffn.kind == "dense" else layer.ffn.expert_inter * max(layer.ffn.top_k, 1), float)
                                for layer, _ in model.groups] + [np.asarray(model.hidden, float)])
    act = np.asarray(max_num_tokens, float) * (12.0 * model.hidden + 3.0 * widest / (tp * kvp)) * 2.0
    logits = max_seqs * model.vocab / (tp * kvp) * 4.0
    return act + logits + WORKSPACE_BYTES


def fit(model: ModelSpec, gpu, prec: Precision, sh: Sharding, isl, *, osl, max_num_tokens=8192,
        usable_fraction=USABLE_FRACTION, osl_occupancy: float = 1.0, budget: str = "total") -> dict:
    """Per-GPU memory (bytes) and the most sequences each attention-DP rank can hold (`kv_per_seq`
    counts a sequence's KV cache and its recurrent state, `state_per_seq` the latter alone).

    A sequence holds ISL + osl_occupancy * OSL tokens: 1.0 guarantees every sequence can reach its
    end; 0.5 is the steady-state average of a paged KV cache (sequences at every stage of decode).
    `budget` "total": weights, activations and KV share usable_fraction of the GPU (vLLM);
    "free": the KV cache takes usable_fraction of what weights and activations leave (TensorRT-LLM);
    "static": weights and KV share usable_fraction, activations live outside it (SGLang)."""
    prec = executable(prec, gpu)[0]  # e.g. NVFP4 re-quantised to MXFP4 on CDNA4 holds MXFP4's scale bytes
    w = weight_bytes_per_gpu(model, prec, sh)
    act = activation_bytes(model, sh, max_num_tokens)
    if budget == "free":
        usable = w + act + usable_fraction * (gpu.memory_bytes - w - act)
    else:
        usable = gpu.memory_bytes * usable_fraction
    # "static" (SGLang): the fraction is of weights and KV alone, activations are reserved outside it
    free = usable - w - (0.0 if budget == "static" else act)
    seq_len = np.asarray(isl, float) + osl_occupancy * np.asarray(osl, float)
    per_token = kv_bytes_per_token(model, prec, sh, seq_len)
    state = state_bytes_per_seq(model, sh)
    per_seq = per_token * seq_len + state
    max_seqs = np.where(free > 0, np.floor(np.maximum(free, 0) / np.maximum(per_seq, 1e-9)), 0.0)
    return {"weights": w, "activations": act, "usable": usable + 0.0 * w, "free_for_kv": free,
            "kv_per_token": per_token, "kv_per_seq": per_seq, "state_per_seq": state + 0.0 * per_seq, "max_seqs_per_rank": max_seqs}
