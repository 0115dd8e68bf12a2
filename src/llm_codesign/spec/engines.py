"""Serving engines' documented defaults that shape a deployment before any fitted parameter does:
how each sizes its KV cache, admits requests, batches and all-reduces, which kernels its captured step
fuses (STEP_FUSIONS), and how many tokens one step may carry. `Engine` is one engine, resolved once
at the edge (get_engine) and passed down; what its software costs (step and request overheads,
scheduling) is fitted, lives in the calibration profiles and is read once per evaluation into
`EngineCosts` (Engine.costs)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_codesign.errors import InputError

GIB = 2.0**30

# How each engine sizes and fills its KV cache by default: (budget, fraction, OSL share a running
# sequence holds). TensorRT-LLM takes free_gpu_memory_fraction = 0.9 of the memory left after weights
# and activations (KvCacheConfig docs) and its GUARANTEED_NO_EVICT scheduler admits a request only with
# ISL + OSL reserved (SchedulerConfig docs); vLLM lets weights, activations and KV together use
# gpu_memory_utilization = 0.92 of the GPU (vllm.config.cache.CacheConfig); SGLang gives weights and KV
# mem_fraction_static of the GPU ("static"), a fraction it derives from the GPU and the plan
# (sglang_static_fraction; the 0.88 here is its fallback when it cannot read the GPU). vLLM and SGLang
# allocate pages as tokens arrive, so a sequence holds ISL + OSL/2 on average in steady state.
KV_BUDGET = {"trtllm": ("free", 0.90, 1.0), "vllm": ("total", 0.92, 0.5), "sglang": ("static", 0.88, 0.5)}
MIB = 2.0**20


def sglang_static_fraction(gpu, tp, pp=1, adp=1, *, spec_method: str | None = None, chunk=None):
    """SGLang's default mem_fraction_static: (weights + KV pool) / GPU memory, what is left once it has
    reserved room for activations and CUDA graphs (sglang/srt/server_args.py,
    ServerArgs._handle_gpu_memory_settings): reserved MiB = 512 + 1.5 x max(chunked_prefill_size, 2048)
    + 2 x cuda_graph_max_bs + 1024 x tp_size x pp / 8, with attention DP a further 3 x (and above a
    max batch of 300, 4.5 x) cuda_graph_max_bs x dp_size, at least 10 GiB on GPUs over 60 GiB, plus
    2 GiB for EAGLE/MTP drafts (6 GiB for a separate draft model). SGLang's tp_size counts every GPU
    of a pipeline stage (attention TP x attention-DP ranks). Broadcasts over plan arrays."""
    mem = gpu.memory_bytes / MIB
    tp_size = np.asarray(tp, float) * np.asarray(adp, float)
    adp = np.asarray(adp, float)
    chunk = step_tokens("sglang", gpu) if chunk is None else np.asarray(chunk, float)
    if mem < 20 * 1024:
        bs = np.full_like(tp_size, 8.0)
    elif mem < 35 * 1024:
        bs = np.where(tp_size < 4, 24.0, 80.0)
    elif mem < 60 * 1024:
        bs = np.where(tp_size < 4, 32.0, 160.0)
    elif mem < 160 * 1024:
        bs = np.where(tp_size < 4, 256.0, 512.0)
    else:
        bs = np.full_like(tp_size, 512.0)
    reserved = 512.0 + np.maximum(chunk, 2048.0) * 1.5 + bs * 2.0 + tp_size * np.asarray(pp, float) / 8.0 * 1024.0
    reserved = reserved + np.where(adp > 1, bs * adp * 3.0 + np.where(bs > 300, bs * adp * 1.5, 0.0), 0.0)
    if mem > 60 * 1024:
        reserved = np.maximum(reserved, 10 * 1024.0)
    if spec_method:
        reserved = reserved + (6 * 1024.0 if spec_method == "draft" else 2 * 1024.0)
    return np.round((mem - reserved) / mem, 3)


# What an engine reserves to admit a request: (share of its OSL, at most this many output tokens).
# TensorRT-LLM's GUARANTEED_NO_EVICT reserves ISL + OSL, so it admits no more than it can finish.
# vLLM admits a request once its prompt's KV blocks fit and, when blocks run out, preempts running
# requests and recomputes them later (docs, "Optimization and Tuning: Preemption"). SGLang reserves
# new_token_ratio of each request's remaining output, clipped at 4096 tokens; the ratio starts at 0.7
# and decays within 600 steps to 0.7 x 0.14 = 0.098, where it stays while nothing is retracted
# (SGLANG_INIT_NEW_TOKEN_RATIO, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS,
# SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION in sglang/srt/environ.py). Requests admitted beyond what the
# KV cache holds to their end reach their first token, then share the decode slots.
ADMISSION = {"trtllm": (1.0, float("inf")), "vllm": (0.0, 0.0), "sglang": (0.098, 4096.0)}


def admission(backend: str) -> tuple[float, float] | None:
    """(OSL share, output-token clip) an engine reserves to admit a request where that is less than a
    running sequence holds (it then admits past what the KV cache holds and time-shares the decode
    slots); None where it admits only what the cache holds."""
    share, clip = ADMISSION.get(backend, (1.0, float("inf")))
    return (share, clip) if share < KV_BUDGET.get(backend, ("total", 0.0, 0.5))[2] else None


def step_tokens(backend: str, gpu) -> int:
    """Default token budget of one step (the chunk size of chunked prefill) of an engine on `gpu`.

    TensorRT-LLM: max_num_tokens = 8192 (LlmArgs / BuildConfig default).
    vLLM V1 OpenAI server: max_num_batched_tokens = 8192 on GPUs with >= 70 GiB other than A100,
    else 2048 (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults).
    SGLang: chunked_prefill_size = 2048 below 35 GiB, 4096 below 60 GiB, 8192 below 160 GiB, else 16384
    (sglang/srt/server_args.py, _handle_gpu_memory_settings: "A100 (40GB), L40", "H20, H200", "B200,
    MI300"). Both engines read the memory the device reports.
    """
    mem = gpu.memory_bytes
    if backend == "vllm":
        return 8192 if mem >= 70 * GIB and "a100" not in gpu.name.lower() else 2048
    if backend == "sglang":
        return 2048 if mem < 35 * GIB else 4096 if mem < 60 * GIB else 8192 if mem < 160 * GIB else 16384
    return 8192


def max_batch(backend: str, gpu, kv_tokens=None, context_len: int = 0):
    """The most sequences one engine rank (an attention-DP rank) runs at once by default, whatever
    its KV cache could hold. TensorRT-LLM: trtllm-bench, which measured the shipped perf-overview
    tables, caps the batch at 4096 over the pipeline stages (tensorrt_llm/bench/build/tuning.py,
    finetune_setting: min(kv_cache_max_requests, 4096) / pp_size per micro-batch); trtllm-serve's own
    default max_batch_size is 2048 (TorchLlmArgs), which this does not yet distinguish. vLLM V1 server: max_num_seqs = 1024 on GPUs with >= 70 GiB other than A100, else 256
    (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults). SGLang: max_running_requests = the
    request pool, int(KV tokens / context_len x 512) clipped to [2048, 4096], and at most half the
    KV tokens (sglang/srt/model_executor/model_runner.py, max_num_reqs; scheduler.py); context_len is
    the model's context (its max_position_embeddings), and 4096 where it is not known."""
    if backend == "vllm":
        return 1024.0 if gpu.memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower() else 256.0
    if backend == "sglang":
        if kv_tokens is None or not context_len:
            return 4096.0
        tok = np.asarray(kv_tokens, float)
        return np.minimum(np.clip(np.floor(tok / context_len * 512.0), 2048.0, 4096.0), np.maximum(np.floor(tok / 2.0), 1.0))
    return 4096.0


# Where an engine runs its own all-reduce inside one NVLink/xGMI domain instead of NCCL.
# vLLM and SGLang: custom all-reduce for world sizes 2, 4, 6 and 8 with every GPU peer-to-peer reachable
# (any two GPUs, NVLink or PCIe, or a fully connected NVLink/xGMI set), inputs below max_size = 8 MiB
# (vllm/distributed/device_communicators/custom_all_reduce.py CustomAllreduce.__init__ max_size=8192*1024
# and should_custom_ar: inp_size < max_size; SGLang's custom_all_reduce.py is the same code); NCCL beyond.
# Inside it the kernel is one-shot or two-shot (csrc/custom_all_reduce.cuh: one-shot at world size 2,
# below 512 KiB up to 4 GPUs and below 256 KiB up to 8), switched where the engines measured the
# crossover, so the cost model prices the faster of the two (kernels._custom_all_reduce).
CUSTOM_AR_SIZES = (2, 4, 6, 8)
CUSTOM_AR_MAX_BYTES = 8.0 * 2.0**20
# TensorRT-LLM AllReduceStrategy.AUTO (cpp/tensorrt_llm/common/customAllReduceUtils.h,
# selectStrategyLookUpTable, NCCL_SYMMETRIC outside the table): its one-shot / two-shot kernels at TP 2, 4
# and 8 up to the workspace (getMaxRequiredWorkspaceSize: 8 MB for TP > 2, 16 MB at TP 2), NCCL past it.
TRTLLM_AR_MAX_BYTES = {2: 16e6, 4: 8e6, 8: 8e6}
# families whose GPUs sit on PCIe without a peer-to-peer fabric (custom all-reduce only at two GPUs in
# vLLM/SGLang; TensorRT-LLM's custom kernels need NVLink and fall back to NCCL)
PCIE_FAMILIES = ("ada", "blackwell_sm120")

# Fusions an engine's captured serving step makes by default on Hopper/Blackwell that the kernel tables'
# isolated rows do not. The GEMM rows time Linear.forward on a BF16 input (ai-dynamo/aiconfigurator
# collector/trtllm/collect_gemm.py): the FP8 per-tensor row computes its scale dynamically and
# quantises, the NVFP4 row runs fp4_quantize, then the GEMM. In serving the scales are static and:
# - act_quant: a per-tensor or NVFP4 activation is quantised inside the kernel before the GEMM.
#   TensorRT-LLM: AllReduceFusionOp.RESIDUAL_RMS_NORM_QUANT_FP8 / _QUANT_NVFP4 (modeling_llama.py),
#   swiglu(..., quant_scale=down_proj.input_scale) in GatedMLP, the attention op's FP8 out_scale (attn_out);
#   vLLM's default -O2: fuse_norm_quant and fuse_act_quant (vllm/config/vllm.py), but not fuse_attn_quant,
#   off by default, so its output projection keeps a quantise kernel. SGLang runs a static-scale quantise
#   kernel of its own. Block-scaled FP8 activations are quantised per 1x128 group by a kernel of their
#   own in every engine (per_token_group_quant_fp8, fp8_quantize_1x128).
# - ar_norm: the residual add and RMSNorm after a tensor-parallel all-reduce run inside the all-reduce
#   kernel (TensorRT-LLM AllReduceFusionOp.RESIDUAL_RMS_NORM where TP > 1; vLLM -O2 fuse_allreduce_rms,
#   FlashInfer, TP > 1): the engine's own all-reduce kernels on Hopper and Blackwell (FUSION_FAMILIES),
#   so not where NCCL runs the all-reduce (engine_allreduce). Not modelled: TensorRT-LLM's
#   hidden_size > 4096 gate.
STEP_FUSIONS = {"trtllm": ("act_quant", "attn_out", "ar_norm"), "vllm": ("act_quant", "ar_norm"), "sglang": ()}
FUSION_FAMILIES = ("hopper", "blackwell")  # the SM90 / SM100 kernels TensorRT-LLM and FlashInfer ship
# SGLang turns FlashInfer's all-reduce + RMSNorm fusion on for these architectures on Hopper/Blackwell,
# on one node without attention DP (server_args.py, _handle_model_specific_adjustments:
# enable_flashinfer_allreduce_fusion); not with NCCL across nodes, which is not modelled apart
SGLANG_AR_NORM_ARCHS = ("DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM",
                        "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM", "KimiK25ForConditionalGeneration",
                        "Qwen3_5MoeForConditionalGeneration")
# the two residual-add + RMSNorm kernels of a layer that ar_norm folds into its all-reduces
AR_NORM_KERNELS = 2.0


# The attention kernels an engine's default backend picks, as time relative to TensorRT-LLM's own
# kernels on the same shape (the kernel tables'; TensorRT-LLM runs trtllm-gen FMHA/MLA kernels on
# Blackwell, FMHA-v2 and XQA on Hopper). Keyed (engine, GPU family) -> {(kind, phase): factor}; a cell
# not listed runs TensorRT-LLM's kernels or the same code (1.0). Kinds: gqa, mla, dsa (the sparse MLA of
# DeepSeek-V3.2 / GLM-5); recurrent mixers run the same Triton (fla, mamba_ssm) sources everywhere.
# At the measurement campaigns' versions (vLLM 0.12-0.14, SGLang 0.5.7+):
# - Blackwell, vLLM: GQA prefill and FP8-KV decode on FlashInfer's trtllm-gen kernels (1.0); BF16-KV
#   decode on them only up to 256 decode tokens per step, FlashInfer's own kernels beyond, 1.3 (range
#   1.1-1.6: 1.09-1.54x in vLLM PR #19825) (attention_time_factor); MLA prefill on FlashInfer's CUTLASS
#   kernels, 1.1 (1.0-1.3, no public comparison), MLA decode on CUTLASS MLA, 1.15 (1.0-1.4) (vLLM
#   platforms/cuda.py backend priority; TRT-LLM-gen MLA only from PR #32339, vLLM 0.15).
# - Blackwell, SGLang: trtllm-gen kernels for GQA (0.5.7+) and MLA (trtllm_mla, 0.5.4+), 1.0; DSA decode
#   on FlashMLA's FP8 decode kernel, 1.2 (1.0-1.6; FlashMLA README: sparse decode "not really optimized
#   yet" on B200, 350 of H800's 410 TFLOPS) (server_args.py, attention_backend defaults).
# - Hopper, vLLM and SGLang: FlashAttention-3 for GQA and MLA prefill, 1.07 (0.95-1.2; 1.05-1.13x against
#   TensorRT-LLM's FMHA, flashinfer issue #521), and GQA decode, 1.15 (1.0-1.5; ~55% of HBM in paged decode,
#   flash-attention issue #1572); vLLM's MLA decode on FlashAttention-3's MLA kernel / FlashMLA, 1.0
#   (0.85-1.25); SGLang's MLA decode on FlashAttention-3, 1.15.
# Sources read: vllm/platforms/cuda.py, vllm/v1/attention/backends/flashinfer.py, sglang/srt/server_args.py
# (released wheels), FlashMLA README; cited ratios are public kernel benchmarks, not fitted.
ATTENTION_KERNELS = {
    ("vllm", "blackwell"): {("gqa", "decode"): 1.3, ("mla", "prefill"): 1.1, ("mla", "decode"): 1.15},
    ("sglang", "blackwell"): {("dsa", "decode"): 1.2},
    ("vllm", "hopper"): {("gqa", "prefill"): 1.07, ("gqa", "decode"): 1.15, ("mla", "prefill"): 1.07},
    ("sglang", "hopper"): {("gqa", "prefill"): 1.07, ("gqa", "decode"): 1.15, ("mla", "prefill"): 1.07,
                           ("mla", "decode"): 1.15},
}
VLLM_TRTLLM_DECODE_TOKENS = 256  # vLLM's FlashInfer backend takes trtllm-gen decode kernels up to this many decode tokens


def attention_time_factor(backend: str, family: str, kind: str, phase: str, *, kv_fp8: bool, dec_tokens=None):
    """Time of an engine's attention kernel relative to TensorRT-LLM's on the same shape
    (ATTENTION_KERNELS); 1 for the kernel tables ('') and for what runs the same kernels."""
    f = ATTENTION_KERNELS.get((backend, family), {}).get((kind, phase), 1.0)
    if backend == "vllm" and family == "blackwell" and kind == "gqa" and phase == "decode":
        if kv_fp8:
            return 1.0  # FP8 KV: trtllm-gen decode kernels at every batch
        # BF16 KV: trtllm-gen up to VLLM_TRTLLM_DECODE_TOKENS decode tokens, FlashInfer's own kernels beyond
        return np.where(np.asarray(dec_tokens, float) <= VLLM_TRTLLM_DECODE_TOKENS, 1.0, f)
    return f


# Engines that run DeepGEMM's block-scaled FP8 kernels on Hopper for 128x128-scaled checkpoints, where the
# kernel tables time TensorRT-LLM's own: SGLang (SGL_ENABLE_JIT_DEEPGEMM, on by default on SM90,
# server_args.py) and vLLM (VLLM_USE_DEEP_GEMM and VLLM_MOE_USE_DEEP_GEMM default "1", envs.py; its MoE
# takes DeepGEMM from 128 tokens, Triton's block-FP8 kernel below, which is not told apart here).
# TensorRT-LLM runs its own (linear layers, and the CUTLASS MoE's DeepGEMM-derived block-scale kernels).
DEEPGEMM_ENGINES = ("sglang", "vllm")


# Programmatic dependent launch (PDL, CUDA on SM90 and newer): a kernel launched with it starts its
# prologue while the previous one drains, so a step saves about pdl_credit_s (calibration) at each
# boundary whose next kernel is PDL-launched. The share of a step's boundaries that are, per engine and
# GPU family, read off the engines' call sites (docs/accuracy.md#pdl): TensorRT-LLM
# (TRTLLM_ENABLE_PDL on by default from 1.2; its norms, fused all-reduce+norm, quantisation, XQA /
# trtllm-gen attention, MoE routing/finalize and CUTLASS GEMMs; not cuBLAS or NCCL) ~0.7; SGLang
# (engine.py sets TRTLLM_ENABLE_PDL=1; sgl-kernel norms and FlashInfer attention/MoE; not cuBLAS,
# silu_and_mul or its custom all-reduce) ~0.25; vLLM 0.11 (no switch of its own: FlashInfer's
# attention and MoE only, which it runs on Blackwell; FlashAttention-3 and its own kernels on Hopper)
# ~0.15 on Blackwell, 0 on Hopper. Estimates from the call sites, not measurements.
PDL_SHARE = {"trtllm": {"hopper": 0.7, "blackwell": 0.7, "blackwell_sm120": 0.7},
             "sglang": {"hopper": 0.25, "blackwell": 0.25, "blackwell_sm120": 0.25},
             "vllm": {"blackwell": 0.15, "blackwell_sm120": 0.15}}


def pdl_share(backend: str, family: str) -> float:
    """Share of a serving step's kernel boundaries whose next kernel the engine launches with PDL
    (PDL_SHARE, which lists SM90+ families only; 0 for the kernel tables '' and before SM90)."""
    return PDL_SHARE.get(backend, {}).get(family, 0.0)


def mtp_eh_proj_split(backend: str, adp):
    """Where DeepSeek MTP's eh_proj ([2h, h], BF16) is split over TP (row-parallel, one more all-reduce):
    TensorRT-LLM without attention DP (modeling_deepseekv3.py DeepseekV3MTP: TensorParallelMode.ROW
    unless attention DP is on); vLLM and SGLang keep it whole on every GPU (models/deepseek_mtp.py,
    models/deepseek_nextn.py: nn.Linear). A boolean array over the attention-DP sizes."""
    return (backend == "trtllm") & (np.asarray(adp, float) <= 1)


def block_fp8_kernel(backend: str, family: str, kernel: str) -> str:
    """The GEMM kernel family an engine runs: DeepGEMM's (fp8_deepgemm) for block-scaled FP8 on Hopper in
    DEEPGEMM_ENGINES, the kernel tables' otherwise."""
    return "fp8_deepgemm" if kernel == "fp8_block" and family == "hopper" and backend in DEEPGEMM_ENGINES else kernel


def fuses(backend: str, fusion: str) -> bool:
    """Whether an engine's step makes one of STEP_FUSIONS ('' -- the kernel tables -- makes none)."""
    return fusion in STEP_FUSIONS.get(backend, ())


def ar_norm_fused(backend: str, architecture: str, *, adp, nbytes, n, family: str):
    """Where an engine runs a layer's residual add + RMSNorm inside its own all-reduce kernel of
    `nbytes` over `n` GPUs (STEP_FUSIONS, SGLANG_AR_NORM_ARCHS, engine_allreduce), as a boolean array."""
    own = engine_allreduce(backend, nbytes, n, family) & (family in FUSION_FAMILIES)
    if fuses(backend, "ar_norm"):
        return own
    if backend == "sglang" and architecture in SGLANG_AR_NORM_ARCHS:
        return own & (np.asarray(adp) <= 1)
    return np.zeros(np.broadcast(own, np.asarray(adp)).shape, dtype=bool)


def engine_allreduce(backend: str, nbytes, n, family: str):
    """Where an engine runs its own all-reduce rather than NCCL, for `nbytes` per GPU over `n` GPUs of one
    scale-up domain of a GPU family, as a boolean array; '' (no engine: the kernel tables' nccl-tests)
    is always NCCL."""
    nbytes = np.asarray(nbytes, float)
    n = np.asarray(n, float)
    if backend in ("vllm", "sglang"):
        ok = np.isin(n, CUSTOM_AR_SIZES) & (nbytes < CUSTOM_AR_MAX_BYTES)
        return ok & (n == 2) if family in PCIE_FAMILIES else ok
    if backend == "trtllm" and family not in PCIE_FAMILIES:
        # the limit at each GPU count (per plan in a search; -inf where TensorRT-LLM has none), then
        # one comparison at the messages' size
        lim = np.full(n.shape, -np.inf)
        for tp, most in TRTLLM_AR_MAX_BYTES.items():
            lim[n == tp] = most
        return nbytes <= lim
    return np.zeros(np.broadcast_shapes(nbytes.shape, n.shape), dtype=bool)


@dataclass(frozen=True)
class EngineCosts:
    """One engine's fitted costs in one calibration profile, read once: the per-engine values the
    serving model adds to the kernels (host cost per step and per running sequence, per eager kernel
    launch, per request; the scheduler's waits and arrival spread) and `cal`, the profile as kernels
    run inside this engine's captured step (`Calibration.in_step(name)`). `Engine.costs` builds it."""
    engine: "Engine"
    cal: object  # the in-step Calibration (cost/ sits above spec/, so it is not imported here)
    step_overhead: float  # s per step
    seq_overhead: float  # s per running sequence per step
    ttft_overhead: float  # s per request, outside the GPU's steps
    eager_launch: float  # s per kernel launch in steps that run outside CUDA graphs (prefill)
    ttft_wait_steps: float  # decode iterations a new request waits before its prefill step
    adp_wait_steps: float  # further iterations under attention DP
    spread_exponent: float
    queue_fraction: float  # scheduling between lockstep prefill waves (1) and spread-out arrivals (0)
    pdl_credit: float  # s saved per kernel boundary the engine PDL-launches (pdl_credit_s; pdl_share weighs it)

    def wait_steps(self, adp):
        """Decode iterations a new request waits before its prefill step: the rest of the running step
        plus what the engine's scheduler adds (ttft_wait_steps), and under attention DP the iterations
        it may hold context requests to balance the ranks (adp_wait_steps)."""
        return self.ttft_wait_steps + np.where(np.asarray(adp) > 1, self.adp_wait_steps, 0.0)


@dataclass(frozen=True)
class Engine:
    """A serving engine as the cost model sees it, resolved once at the edge (get_engine) and passed
    down: its documented KV-cache sizing and admission (KV_BUDGET, ADMISSION), step token budget, batch
    limit, and its fitted costs in a calibration profile (`costs`). The module
    functions it wraps stay for vectorised use."""
    name: str  # the key in calibration profiles and measurement files
    title: str

    @property
    def kv_budget(self) -> tuple[str, float, float]:
        return KV_BUDGET[self.name]

    @property
    def admission(self) -> tuple[float, float] | None:
        return admission(self.name)

    def step_tokens(self, gpu) -> int:
        return step_tokens(self.name, gpu)

    def max_batch(self, gpu, kv_tokens=None, context_len: int = 0):
        return max_batch(self.name, gpu, kv_tokens, context_len)

    def costs(self, cal) -> EngineCosts:
        """This engine's fitted values in `cal` (a Calibration; InputError where its profile lacks the
        engine) and the in-step calibration, resolved once per evaluation."""
        n = self.name
        return EngineCosts(self, cal.in_step(n), cal.step_overhead(n), cal.engine("seq_overhead_s", n), cal.ttft_overhead(n),
                           cal.eager_launch(n), cal.engine("ttft_wait_steps", n), cal.engine("adp_wait_steps", n),
                           cal.spread_exponent(n), cal.queue_fraction(n), cal.pdl_credit_s)


ENGINES = {e.name: e for e in (Engine("trtllm", "TensorRT-LLM"), Engine("vllm", "vLLM"), Engine("sglang", "SGLang"))}
TRTLLM = ENGINES["trtllm"]  # the engine a call names none of: the one the kernel tables were measured in
ALIASES = {"tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt-llm": "trtllm"}


def get_engine(name: str) -> Engine:
    """The engine named (case-insensitive; TensorRT-LLM's spellings accepted), or one line naming the known ones."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key not in ENGINES:
        raise InputError("backend", name, "one of: " + ", ".join(ENGINES))
    return ENGINES[key]
