"""Memory per GPU: sharded weights (and a speculative draft's), KV cache per token, recurrent state
per sequence, what each engine reserves beside them as it sizes it (activations, sampler warm-up,
CUDA-graph pool, CUDA context), and the batch that fits."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.spec.engines import Engine
from llm_codesign.spec.engines.trtllm import GRAPH_MAX_BATCH as TRTLLM_GRAPH_MAX_BATCH
from llm_codesign.spec.kinds import Attention
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Plan, SpecDecoding
from llm_codesign.spec.precision import DTYPES, Precision, executable

# Fraction of HBM an engine lets itself use where the caller names none (Engine.kv_budget).
USABLE_FRACTION = 0.90
BF16 = Precision.of("bf16")  # an EAGLE-3 draft layer's formats (draft_weight_bytes_per_gpu)
# The CUDA context, cuBLAS/NCCL workspaces and other memory outside torch's allocator, which the
# engines measure at start-up rather than size (TensorRT-LLM's KvCacheCreator: extra_cost, "memory
# used outside torch (e.g., NCCL and CUDA graphs)", tensorrt_llm/_torch/pyexecutor/_util.py; vLLM's
# memory profiler: non_torch_increase, vllm/v1/worker/gpu_worker.py determine_available_memory).
# Assumption, no source sizes it: 0.5-1 GB per GPU, more with NCCL's buffers over many ranks.
CUDA_CONTEXT_BYTES = 0.75e9
# vLLM's profile run ends with the sampler on min(max_num_seqs, max_num_batched_tokens) rows of logits, max_num_seqs the
# launch's (the default Model Runner V2's _dummy_run and _dummy_sampler_run, v1/worker/gpu/model_runner.py:232, 862,
# 993-1050@0.33.0 wheel; gpu_model_runner.profile_run -> _dummy_sampler_run before it, dummy top-k and top-p so it takes its largest
# path): the whole vocabulary on every TP rank (LogitsProcessor gathers the shards) in the model's
# dtype (2 B), its float32 copy (Sampler, "use float32 for the logits", 4 B) and top-k/top-p's sort
# into float32 values and int64 indices (apply_top_k_top_p, 4 + 8 B): 18 B per logit.
VLLM_SAMPLER_BYTES_PER_LOGIT = 18.0
# TensorRT-LLM captures decode CUDA graphs up to cuda_graph_config.max_batch_size, 128 when unset
# (CudaGraphConfig in tensorrt_llm/llmapi/llm_args.py: "max_batch_size or 128"; spec.engines.trtllm), each padded batch
# carrying 1 + draft-length tokens per sequence; the graphs share one memory pool, which holds the
# largest one's activations: sized by the run's own capture where it states one (SchedulerFlags.cuda_graph_max_bs,
# activation_bytes' graph_batch; 0, graphs off, holds none), by the 128 where it does not.


def weight_bytes_per_gpu(model: ModelSpec, prec: Precision, sh: Plan, *, expert_bytes=None):
    """Weights held by one GPU of the largest pipeline stage (replicated where the plan replicates); `expert_bytes`:
    bytes per routed-expert weight where the engine holds them in another format than the checkpoint's
    (expert_weight_bytes), per plan."""
    tp, pp, ep, moe_tp, kvp = (np.asarray(x, float) for x in (sh.tp, sh.pp, sh.ep, sh.moe_tp, sh.kvp))
    h = model.hidden
    wf = prec.weight.bytes_per_weight()
    per_layer = [_layer_weight_bytes(layer, h, prec, wf, (tp, ep, moe_tp, kvp), expert_bytes=expert_bytes) for layer, _ in model.groups]
    # embedding on the first stage, LM head on the last (vocab-parallel over TP), kept in BF16
    emb = model.embedding_params * 2.0 / (tp * kvp)
    head = model.lm_head_params * 2.0 / (tp * kvp)
    ends = np.where(pp > 1, np.maximum(emb, head), emb + head)
    return busiest_stage(model, pp, per_layer) + ends


def _layer_weight_bytes(layer, h, prec: Precision, wf, shards, *, expert_bytes=None):
    """One layer's weights on one GPU (`prec`: the attention's formats, mixer_weight_bytes; `wf`, `expert_bytes`: bytes
    per FFN / routed-expert weight where not `wf`'s; `shards`: TP, EP, MoE-TP and Helix degrees as arrays)."""
    tp, ep, moe_tp, kvp = shards
    # the mixer sharded by TP, replicated across attention-DP and Helix ranks (as each kind holds it:
    # spec.kinds weight_bytes_per_gpu); the FFN split by TP and Helix, experts by EP and MoE-TP
    return (mixer_weight_bytes(layer.attn, h, prec, tp, kvp)
            + layer.ffn.weight_bytes_per_gpu(h, wf, tp=tp, kvp=kvp, ep=ep, moe_tp=moe_tp, expert_bytes=expert_bytes))


def mixer_weight_bytes(mixer, h, prec: Precision, tp, kvp):
    """A mixer's weights on one GPU at the checkpoint's formats: every projection at its input projections' (prec.attn_in),
    an attention's output projection moved to prec.attn where the checkpoint stores it otherwise (nvidia/DeepSeek-R1-NVFP4:
    q_a/q_b/kv_a/kv_b BF16, o_proj NVFP4). The bytes are linear in bytes a weight, so the move is exact."""
    wi, wo = prec.attn_in.bytes_per_weight(), prec.attn.bytes_per_weight()
    held = mixer.weight_bytes_per_gpu(h, wi, tp, kvp)
    return held + mixer.o_bytes_per_gpu(h, wo - wi, tp, kvp) if wi != wo and isinstance(mixer, Attention) else held


def expert_weight_bytes(gpu, prec: Precision, engine: Engine | None, ep, *, gated: bool = True):
    """Bytes per routed-expert weight as `engine` holds them on `gpu` (gemm.expert_formats: the checkpoint's format, or
    the one its MoE kernel converts them to at load, spec.engines.base.MOE_UPCAST), per plan's EP (`ep`), for a gated
    MoE or not (`gated`); `prec` as the GPU executes it. SGLang's MXFP4 experts on Hopper under EP: BF16, 2 bytes, not
    MXFP4's 4.25 bits."""
    w = prec.weight.bytes_per_weight()
    if engine is None:
        return w
    run = gemm.expert_formats(engine, gpu, prec, gated=gated)
    by = [w if r == prec.weight.name else DTYPES[r].bytes_per_weight() for r in run]
    return w if by == [w, w] else np.where(np.asarray(ep, float) > 1, by[1], by[0])


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
    for v in sorted(set(pp.reshape(-1).tolist())):  # np.unique's values; its hash path imports numpy.ma (~15 ms a process)
        if int(v) > model.num_layers or int(v) <= 1:
            continue
        most = None
        for st in dict.fromkeys(model.stage_counts(int(v))):  # each distinct stage once: the same most
            s = sum(c * x for c, x in zip(st, per_layer, strict=True))
            most = s if most is None else np.maximum(most, s)
        out = np.where(pp == v, most, out)
    return out


def kv_bytes_per_token(model: ModelSpec, prec: Precision, sh: Plan, context=None):
    """KV-cache bytes one GPU holds per token of a sequence its rank serves.

    Each layer as its kind holds it (spec.kinds kv_bytes_per_gpu): GQA's KV heads split by TP
    (replicated when TP exceeds them), MLA's latent replicated on every TP rank, sliding-window layers
    keeping at most `window` tokens (so with `context` their share per token shrinks); Helix divides
    the sequence over KV-parallel ranks.
    """
    tp, pp, kvp = (np.asarray(x, float) for x in (sh.tp, sh.pp, sh.kvp))
    kvb = prec.kv.bytes_per_value()
    per_layer = [layer.attn.kv_bytes_per_gpu(tp, kvb, context) for layer, _ in model.groups]  # one layer of each group
    # the stage holding the most cache per token bounds what fits (uneven stages: its ceil(L / pp) layers)
    return busiest_stage(model, pp, per_layer) / kvp


def state_bytes_per_seq(model: ModelSpec, sh: Plan):
    """Fixed recurrent state (Gated DeltaNet, Mamba-2) one GPU holds per sequence its rank serves: heads split
    over TP (and Helix, which acts as TP for these layers), layers over pipeline stages."""
    tp, pp, kvp = (np.asarray(x, float) for x in (sh.tp, sh.pp, sh.kvp))
    return model.state_bytes_per_seq() / (tp * kvp * pp)


def forward_activation_bytes(model: ModelSpec, sh: Plan, tokens):
    """Transient activations of a forward over `tokens` (BF16): the residual stream and its
    projections, and the widest FFN's intermediate sharded over TP."""
    tp, kvp = np.asarray(sh.tp, float), np.asarray(sh.kvp, float)
    widest = np.maximum.reduce([np.asarray(layer.ffn.peak_width, float) for layer, _ in model.groups] + [np.asarray(model.hidden, float)])
    return np.asarray(tokens, float) * (12.0 * model.hidden + 3.0 * widest / (tp * kvp)) * 2.0


def activation_bytes(model: ModelSpec, sh: Plan, max_num_tokens, *, budget: str = "free", max_seqs=1024.0, draft_len=0, graph_batch=None):
    """What an engine holds beside weights and KV cache, as the engine sizes it, per budget (fit):

    "total" (vLLM V1): its profile run's peak, the larger of a forward at max_num_batched_tokens and the
    sampler's warm-up on min(max_num_seqs, max_num_batched_tokens) rows of logits
    (VLLM_SAMPLER_BYTES_PER_LOGIT), plus the CUDA context. Its CUDA graphs are captured after the KV
    cache is sized unless VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (off by default, vllm/envs.py), so
    they come out of the 1 - gpu_memory_utilization margin, not out of the KV cache.
    "free" (TensorRT-LLM PyTorch backend): the estimation forward over max_num_tokens of dummy context
    requests (KvCacheCreator) plus what it measures outside torch: the CUDA context and the decode
    graphs' pool, the activations of `graph_batch` x (1 + draft_len) tokens (the largest captured decode batch per
    rank, the run's cuda_graph_max_bs, NaN or None for the default's TRTLLM_GRAPH_MAX_BATCH, 0 for none); its
    sampler's decode buffers fall inside the 1 - free_gpu_memory_fraction margin.
    "static" (SGLang): reserved outside mem_fraction_static (spec.engines.sglang static_fraction), reported
    as a forward over the chunk plus the context."""
    fwd = forward_activation_bytes(model, sh, max_num_tokens)
    if budget == "total":
        rows = np.minimum(np.asarray(max_seqs, float), np.asarray(max_num_tokens, float))
        return np.maximum(fwd, rows * model.vocab * VLLM_SAMPLER_BYTES_PER_LOGIT) + CUDA_CONTEXT_BYTES
    if budget == "free":
        g = np.asarray(TRTLLM_GRAPH_MAX_BATCH if graph_batch is None else graph_batch, float)
        g = np.where(np.isnan(g), TRTLLM_GRAPH_MAX_BATCH, g)
        graphs = forward_activation_bytes(model, sh, g * (1.0 + np.asarray(draft_len, float)))
        return fwd + graphs + CUDA_CONTEXT_BYTES
    return fwd + CUDA_CONTEXT_BYTES


def draft_weight_bytes_per_gpu(model: ModelSpec, draft: ModelSpec, method: str, prec: Precision, sh: Plan, *,
                               engine: Engine | None = None):
    """Weights of the speculative-decoding draft (serve.aggregated.draft_model's `draft`) one GPU holds,
    sharded as the engines shard it. The draft shares the target's embedding (and, for MTP, its LM head).

    "mtp" (DeepSeek MTP module): one decoder layer of the model's own last type, sharded like a target
    layer on the last pipeline stage, and eh_proj (2h -> h, BF16) with its two RMSNorms, whole on every
    GPU or split over TP where `engine` splits it (Engine.mtp_eh_proj_split). The checkpoint quantises the layer as the target's. "eagle3": one BF16 decoder layer whose QKV reads [embedding; hidden]
    (2h in), fc fusing three target hidden states (3h -> h, replicated) and its own LM head over the
    draft vocabulary, vocabulary-parallel over TP (vLLM models/llama_eagle3.py, TensorRT-LLM
    models/modeling_speculative.py Eagle3DraftModel). "draft": a separate model, TP-sharded like the
    target and not pipelined (vLLM, SGLang STANDALONE and TensorRT-LLM's two-model path run it on the
    target's TP group), its own embedding and head. Broadcasts over plan arrays."""
    tp, ep, moe_tp, kvp = (np.asarray(x, float) for x in (sh.tp, sh.ep, sh.moe_tp, sh.kvp))
    h = model.hidden
    if method == "draft":
        return weight_bytes_per_gpu(draft, prec, replace(sh, pp=np.ones_like(np.asarray(sh.pp, float))))
    layer = draft.groups[0][0]
    if method == "mtp":
        split = engine is not None and engine.mtp_eh_proj_split(sh.adp)
        eh = 2.0 * h * h * 2.0 / np.where(split, tp, 1.0)
        return _layer_weight_bytes(layer, h, prec, prec.weight.bytes_per_weight(), (tp, ep, moe_tp, kvp)) + eh
    a = layer.attn
    qkv_extra = h * (a.heads * a.head_dim + a.kv_heads * (a.head_dim + a.v_head_dim))  # the second h of the 2h input
    return (_layer_weight_bytes(layer, h, BF16, 2.0, (tp, ep, moe_tp, kvp)) + qkv_extra * 2.0 / tp + 3.0 * h * h * 2.0
            + draft.vocab * h * 2.0 / (tp * kvp))


def seq_bytes(model: ModelSpec, prec: Precision, sh: Plan, seq_len, *, spec: SpecDecoding | None = None,
              draft: ModelSpec | None = None, k=0.0) -> tuple:
    """What one sequence of `seq_len` tokens holds per GPU (fit's per-sequence figures): (KV bytes per token, its KV
    cache and recurrent state, the state alone). `prec`: the executable precision; with `spec` and its `draft`, where
    `k` > 0, the draft's layers' KV cache with each token's, all on one stage (MTP on the last; a separate draft
    unpipelined)."""
    per_token = kv_bytes_per_token(model, prec, sh, seq_len)
    if spec is not None and draft is not None:  # prompt lookup (ngram) holds no draft cache
        per_token = per_token + np.where(np.asarray(k) > 0, kv_bytes_per_token(draft, prec, replace(sh, pp=np.ones_like(np.asarray(sh.pp, float))),
                                                                               seq_len), 0.0)
    state = state_bytes_per_seq(model, sh)
    return per_token, per_token * seq_len + state, state


def fit(model: ModelSpec, gpu, prec: Precision, sh: Plan, isl, *, osl, max_num_tokens=8192,
        usable_fraction=USABLE_FRACTION, osl_occupancy: float = 1.0, budget: str = "total",
        spec: SpecDecoding | None = None, draft: ModelSpec | None = None, max_seqs=1024.0, draft_len=None,
        engine: Engine | None = None, graph_batch=None) -> dict:
    """Per-GPU memory (bytes) and the most sequences each attention-DP rank can hold (`kv_per_seq`
    counts a sequence's KV cache and its recurrent state, `state_per_seq` the latter alone).

    A sequence holds ISL + osl_occupancy * OSL tokens: 1.0 guarantees every sequence can reach its
    end; 0.5 is the steady-state average of a paged KV cache (sequences at every stage of decode).
    `budget` "total": weights, activations and KV share usable_fraction of the GPU (vLLM);
    "free": the KV cache takes usable_fraction of what weights and activations leave (TensorRT-LLM);
    "static": weights and KV share usable_fraction, activations live outside it (SGLang).
    With `spec` and its `draft` (serve.aggregated.draft_model) the draft's weights count with the
    target's (draft_weight_bytes_per_gpu; under SGLang they come out of the static share, its draft
    reserve being activations and graphs) and its layers' KV cache with each token's (TensorRT-LLM
    sizes the cache over the target's and the draft's layers, KvCacheCreator cal_max_tokens with
    draft_model_config; vLLM and SGLang give the draft's attention layers their own pages).
    `max_seqs`: the batch limit sizing vLLM's sampler warm-up, as the launch states it (Engine.batch_limit: its
    --max-num-seqs, which every vLLM export writes, else the default max_num_seqs; broadcasting).
    `draft_len`: the draft length each point runs (a search's sweep, broadcasting; spec.k by default):
    where it is 0 speculation is off and no draft is loaded. `engine`: the engine, which decides how it
    shards the draft (draft_weight_bytes_per_gpu). `graph_batch`: the run's largest captured decode batch per rank
    (activation_bytes; the "free" budget's graph pool), broadcasting."""
    prec = executable(prec, gpu)[0]  # e.g. NVFP4 re-quantised to MXFP4 on CDNA4 holds MXFP4's scale bytes
    w = weight_bytes_per_gpu(model, prec, sh, expert_bytes=expert_weight_bytes(gpu, prec, engine, sh.ep, gated=model.moe_gated))
    w_draft, k = 0.0, np.asarray(0.0 if spec is None else (spec.k if draft_len is None else draft_len), float)
    if spec is not None and draft is not None:  # prompt lookup (ngram) loads no draft weights
        w_draft = np.where(k > 0, draft_weight_bytes_per_gpu(model, draft, spec.method, executable(spec.draft_precision(prec), gpu)[0], sh,
                                                             engine=engine), 0.0)
        w = w + w_draft
    act = activation_bytes(model, sh, max_num_tokens, budget=budget, max_seqs=max_seqs, draft_len=k, graph_batch=graph_batch)
    if budget == "free":
        usable = w + act + usable_fraction * (gpu.memory_bytes - w - act)
    else:
        usable = gpu.memory_bytes * usable_fraction
    # "static" (SGLang): the fraction is of weights and KV alone, activations are reserved outside it
    free = usable - w - (0.0 if budget == "static" else act)
    seq_len = np.asarray(isl, float) + osl_occupancy * np.asarray(osl, float)
    per_token, per_seq, state = seq_bytes(model, prec, sh, seq_len, spec=spec, draft=draft, k=k)
    fits = np.where(free > 0, np.floor(np.maximum(free, 0) / np.maximum(per_seq, 1e-9)), 0.0)
    return {"weights": w, "draft_weights": w_draft + 0.0 * w, "activations": act, "usable": usable + 0.0 * w, "free_for_kv": free,
            "kv_per_token": per_token, "kv_per_seq": per_seq, "state_per_seq": state + 0.0 * per_seq, "max_seqs_per_rank": fits}
