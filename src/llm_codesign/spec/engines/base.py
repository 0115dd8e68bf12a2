"""What a serving engine is to the cost model, and the one registry of them.

An `Engine` holds an engine's documented defaults, the ones that shape a deployment before any fitted
parameter does: how it sizes its KV cache and admits requests, how many tokens a step carries and how
many sequences it runs, where it runs its own all-reduce instead of NCCL, what its captured step fuses
that the kernel tables' rows run apart, which attention and GEMM kernels its default backends pick, how
many of its kernel boundaries it PDL-launches and how it shards DeepSeek MTP's eh_proj. Each engine is
one module of this package (trtllm.py, vllm.py, sglang.py) holding one `Engine` object, every value with
its source, registered here by `register_engine`; everything that names engines (the CLI's options,
the web form, exports, validation) reads `ENGINES`, and an unknown name is an error, never a default.
What an engine's software costs (step and request overheads, scheduling) is fitted, lives in the
calibration profiles under the engine's name and is read once per evaluation into `EngineCosts`
(Engine.costs).

numpy is imported inside the methods: the CLI lists the registry in its help without loading it."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from functools import cache
from typing import ClassVar

from llm_codesign.errors import InputError

GIB = 2.0**30
MIB = 2.0**20
# the SM90 / SM100 kernels TensorRT-LLM and FlashInfer ship with all-reduce + RMSNorm fusion (ar_norm)
FUSION_FAMILIES = ("hopper", "blackwell")
# families whose GPUs sit on PCIe without a peer-to-peer fabric (custom all-reduce only at two GPUs in
# vLLM/SGLang; TensorRT-LLM's custom kernels need NVLink and fall back to NCCL)
PCIE_FAMILIES = ("ada", "blackwell_sm120")
# AMD Instinct families (MI300X/MI325X, MI355X), where AITER's kernels run (ATOM's all-reduce, the kernel tables' MoE)
CDNA_FAMILIES = ("cdna3", "cdna4")
# the two residual-add + RMSNorm kernels of a layer that ar_norm folds into its all-reduces
AR_NORM_KERNELS = 2.0
# every fusion an engine's step may make (Engine.fusions says what each is): a name outside it is a typing error
FUSIONS = ("act_quant", "attn_out", "ar_norm", "rope_decode", "hop_b", "pdl", "fp8_bmm", "routing", "mla_meta")
# the MoE exchanges a launch flag may name in place of the engine's default (Engine.moe_a2a): "" the default
MOE_A2A_BACKENDS = ("", "deepep_low_latency")
# The MoE kernel families an engine runs for its expert GEMMs (Engine.moe_kernel), each with the
# kernel_source of the per-engine kernel tables that times it (data/measurements/kernels_hopper/moe.csv.gz,
# H100; measure.kernel_tables.MOE_SOURCES maps them). Their rates are per GPU family in the calibration
# profiles (moe_kernel_eff, moe_kernel_overhead_s, moe_kernel_route_s; moe_kernel_expert_s for the CUTLASS
# MoEs, which set up every local expert each launch), where fitted; elsewhere the kernel tables' own
# (moe_eff, moe_overhead_s).
MOE_KERNELS = {
    "cutlass": "TensorRT-LLM's CUTLASS fused MoE (CutlassFusedMoE, its default MoE backend; moe_torch_flow_cutlass / _nongated)",
    "trtllm_w4a16": "TensorRT-LLM's Triton MoE (TritonFusedMoE), MXFP4 weights on BF16 activations, gpt-oss's on Hopper (moe_torch_flow, w4a16_mxfp4)",
    "vllm_triton": "vLLM's Triton fused MoE (TritonExperts; vllm_fp8moe_triton_tritonexperts, vllm_unquantizedfusedmoe_triton_tritonexperts)",
    "sglang_triton": "SGLang's Triton fused MoE, its own fork and tuned configs (fused_moe_triton; sglang_fused_moe_triton)",
    "flashinfer_cutlass": "FlashInfer's CUTLASS fused MoE (FlashInferExperts; vllm_*_flashinfer_cutlass_*, sglang_flashinfer_cutlass_moe)",
    "triton_kernels": "OpenAI triton_kernels' MXFP4 matmul_ogs (vLLM OAITritonExperts, SGLang triton_kernel; vllm_gptossmxfp4moe_triton_oai*)",
    "marlin": "Marlin's W4A16 MoE on INT4 weights (sglang_marlin_moe, vllm_compressedtensorswna16marlinmoe_marlin_*)",
    "marlin_fp4": "Marlin's W4A16 MoE on MXFP4 weights, its FP4 dequantisation (sglang_marlin_moe_situ_as_silu, vllm_*mxfp4moe_marlin_*)",
}
# MoE kernel families that hold a checkpoint format's experts in another, (family, checkpoint weight format) -> the
# format they are converted to once at load and held and run in. SGLang's Mxfp4MoEMethod on its "triton" runner (every
# runner but triton_kernel, FlashInfer's and Marlin's: on Hopper where EP > 1, as server_args picks triton_kernel for
# gpt-oss only at ep_size 1, server_args.py:3913-3939@0.5.14) upcasts the MXFP4 experts to BF16 (process_weights_after_loading: upcast_from_mxfp(...,
# target_dtype=torch.bfloat16), then frees the MXFP4 tensors) and runs its BF16 fused_experts on them (TritonMoeQuantInfo,
# no quant flag): sglang 0.5.14 python/sglang/srt/layers/quantization/mxfp4.py:861-881,1294-1300 (pip wheel); the same
# branch at 0.5.8.post1 (:564-585) and 0.5.9 (:704-724). measure.kernel_tables.MOE_RUNS_AS prices the H100 table's rows so.
MOE_UPCAST = {("sglang_triton", "mxfp4"): "bf16"}


@dataclass(frozen=True, eq=False)
class Engine(ABC):
    """A serving engine as the cost model sees it, resolved once at the edge (get_engine) and passed
    down. The fields are its documented defaults; what depends on the GPU or the plan (step tokens,
    batch limit, own all-reduce) each engine's module implements, and a base behaviour that reads the
    fields serves the rest. One object per engine, compared by identity."""
    name: str  # the key in calibration profiles, measurement files and the registry
    title: str
    # How it sizes and fills its KV cache by default: (budget, fraction, OSL share a running sequence
    # holds). Budgets: "free" (the KV cache takes the fraction of what weights and activations leave),
    # "total" (weights, activations and KV cache share the fraction of the GPU), "static" (weights and
    # KV cache share it, activations outside); cost.memory.fit sizes each.
    kv_budget: tuple[str, float, float]
    # What it reserves to admit a request: (share of its OSL, at most this many output tokens). Where
    # that is less than a running sequence holds, it admits past what the KV cache holds and the admitted
    # requests reach their first token, then share the decode slots (admission).
    reserve: tuple[float, float]
    # Fusions its captured serving step makes by default on Hopper/Blackwell that the kernel tables'
    # isolated rows do not. The GEMM rows time Linear.forward on a BF16 input (ai-dynamo/aiconfigurator
    # collector/trtllm/collect_gemm.py): the FP8 per-tensor row computes its scale dynamically and
    # quantises, the NVFP4 row runs fp4_quantize, then the GEMM. In serving the scales are static and:
    # - act_quant: a per-tensor or NVFP4 activation is quantised inside the kernel before the GEMM;
    #   block-scaled FP8 activations are quantised per 1x128 group by a kernel of their own in every
    #   engine (per_token_group_quant_fp8, fp8_quantize_1x128);
    # - attn_out: the attention op quantises its output for the output projection;
    # - ar_norm: the residual add and RMSNorm after a tensor-parallel all-reduce run inside the engine's
    #   own all-reduce kernels on Hopper and Blackwell (FUSION_FAMILIES), so not where NCCL runs it;
    # - rope_decode: its GQA decode kernel applies RoPE itself where it runs XQA's Hopper GMMA kernel (FP8 KV
    #   on SM90), so the decode op launches no preprocessing kernel (cost.kernels.decode_rope_fused);
    # - hop_b: Helix's all-to-all sent request by request behind the next request's attention (HOP-B,
    #   Bhatia et al. 2025); no engine's step runs it yet (TensorRT-LLM tech blog 22 lists it as future work);
    # - pdl: its kernels launched with programmatic dependent launch at the shares `pdl` lists (pdl_share): a
    #   build that does not (TensorRT-LLM before 1.2 without `TRTLLM_ENABLE_PDL=1`) overlaps no kernel boundary.
    # - fp8_bmm: MLA's absorbed decode products (q x W_UK, o x W_UV) read an FP8 checkpoint's weights in the kernel
    #   (priced as the BF16 batched GEMMs mla_q_absorb / mla_v_up, except where the build quantises their input,
    #   Engine.mla_bmm_quantised: block FP8 there): every engine's build here. A build that
    #   does not (SGLang 0.5.2 on ROCm: no FP8 bmm there) casts each weight to BF16 and scales it at every step
    #   (cost.mixers._mla_proj, mla_bmm_dequant).
    # - routing: the MoE's top-k kernel takes the router's logits and applies the score function and the score-correction
    #   bias itself (cost.ffns topk, one launch): every engine's build here. A build that does not (TensorRT-LLM's
    #   DeepSeek-V3 gate of spring 2025: F.sigmoid, `scores + e_score_correction_bias`, then noaux_tc_op on both,
    #   modeling_deepseekv3.py Deepseekv3RoutingImpl.noaux_tc, docs/modelling-notes.md#onereq-hopper) launches the sigmoid
    #   and the bias add as kernels of their own, each a pass over the FP32 scores.
    # - mla_meta: FlashMLA's scheduler metadata computed once a step, not before each layer's decode call (TensorRT-LLM on
    #   SM90: cost.kernels.flashmla_extra_launches); a build without it (the spring-2025 build of the best-perf page's H200
    #   run) launches get_mla_metadata_func in every layer.
    fusions: tuple[str, ...]
    # The attention kernels its default backend picks, as time relative to TensorRT-LLM's own kernels on
    # the same shape (the kernel tables'): GPU family -> {(kind, phase): factor}; a cell not listed runs
    # TensorRT-LLM's kernels or the same code (1.0). Kinds: gqa, mla, dsa (the sparse MLA of DeepSeek-V3.2 /
    # GLM-5); recurrent mixers run the same Triton (fla, mamba_ssm) sources everywhere.
    attention_kernels: dict
    # Programmatic dependent launch (PDL, CUDA on SM90 and newer): a kernel launched with it starts its
    # prologue while the previous one drains, so a step saves about pdl_credit_s (calibration) at each
    # boundary whose next kernel is PDL-launched. The share of a step's boundaries that are, per GPU
    # family (SM90+ families only), read off the engine's call sites (docs/accuracy.md#pdl): estimates,
    # not measurements.
    pdl: dict
    # whether it runs DeepGEMM's block-scaled FP8 kernels for its dense GEMMs on Hopper for 128x128-scaled
    # checkpoints, where the kernel tables time TensorRT-LLM's own (its MoE's kernels: moe_kernel)
    deepgemm: bool
    # whether it runs CUTLASS's per-tensor FP8 scaled-mm (SGLang's sgl_kernel fp8_scaled_mm, vLLM's
    # cutlass_scaled_mm: the kernels its per-engine GEMM rows time) for its per-tensor FP8 GEMMs on Hopper, where
    # the kernel tables time TensorRT-LLM's own FP8 linear, which floors at twice as long below 64 tokens
    fp8_cutlass: bool
    # whether DeepSeek MTP's eh_proj ([2h, h], BF16) is split over TP (row-parallel, one more all-reduce)
    # without attention DP, rather than kept whole on every GPU
    eh_proj_tp: bool
    aliases: tuple[str, ...] = ()  # other spellings get_engine accepts (lower case)
    about: str = ""  # what it is, in a few words (`llm-codesign engines`)
    # the releases (or commit) its priced defaults are read from, the measured runs' releases, as its module cites them:
    # what every answer names beside the engine (`engine_release`; newcomer finding #14: an estimate priced at vLLM
    # 0.11-0.14's defaults said nothing of it, beside an export written for 0.33.0)
    release: str = ""
    release_note: str = ""  # what departs from `release`: the few defaults read at other releases, export's options' release
    # the GPU vendors (VENDOR_NAMES) its software ships for: engine_for refuses it on another's GPU. vLLM and SGLang
    # build for CUDA and ROCm; an engine's module narrows it
    vendors: tuple[str, ...] = ("nvidia", "amd")
    # GPU families where its GQA decode runs FlashAttention-3's paged split-KV kernel, priced by that kernel's
    # tile and split rules (cost.kernels.runs_fa3_decode) rather than TensorRT-LLM's times a factor
    fa3_decode: tuple[str, ...] = ()
    # GPU families where its dense MLA decode runs FlashMLA, priced with FlashMLA's per-sequence overhead
    # (cost.kernels.runs_flashmla_decode); the kernel tables' own (no engine) are TensorRT-LLM's
    flashmla_decode: tuple[str, ...] = ()
    # GPU families where its GQA prefill (context) attention runs FlashAttention-3's kernel, priced at that kernel's own
    # fitted rates (cost.kernels.runs_fa3_prefill: attn_prefill_*_fa3) rather than TensorRT-LLM's times a factor
    fa3_prefill: tuple[str, ...] = ()
    # the split count it passes FlashAttention-3's decode as its cap (num_splits); 0: none, the kernel's own one-sequence
    # heuristic caps it (cost.kernels.fa3_split)
    fa3_max_splits: int = 0
    # flag barriers with every peer its own all-reduce kernel (own_allreduce) runs besides moving the data, each priced
    # custom_ar_barrier_s; 0: a Lamport one-shot (TensorRT-LLM's), which pushes its data to the peers and polls its own
    # buffer, as does the all-reduce + RMSNorm kernel that carries a layer's all-reduce where ar_norm_fused says so
    own_ar_barriers: int = 0
    # the MoE token exchange its launch flags name in place of its default one (moe_exchange) under attention DP with EP:
    # "" (the default's) or "deepep_low_latency" (SGLang --moe-a2a-backend deepep --deepep-mode low_latency: every
    # (token, expert) copy put straight into the expert's receive slot, cost.ffns.deepep_time). A run's recipe names it
    # (data/measurements/campaigns.toml `decode_moe_a2a`, a disaggregated decode pool's): with_moe_a2a
    moe_a2a: str = ""
    # whether its steps mix prefill chunks into the running decodes (TensorRT-LLM's in-flight batching and
    # vLLM's chunked prefill do); an engine that runs prefill batches on their own says so in its module
    mixes_prefill: ClassVar[bool] = True
    # whether it still mixes them (by default or as the run asks) while a speculative decoder runs; an engine that turns
    # mixing off under speculation says so in its module
    mixes_while_speculating: ClassVar[bool] = True
    # whether it splits a prompt that does not fit the step's budget into chunks (vLLM's and SGLang's chunked prefill);
    # an engine that schedules whole prompts only, while the budget lasts, says so in its module (serve.aggregated.prompt_budget)
    chunks_prefill: ClassVar[bool] = True
    # where its launch with chunked prefill off refuses a prompt over its step budget: (why, with its source; its options
    # for the budget ("": our max_num_tokens) and for chunked prefill), spec.plan.check_whole_prompt's line. None: the engine
    # serves the longer prompt whole, alone in its step (SGLang), and it is priced so (serve.aggregated.prompt_budget, crev9 #9)
    whole_prompt_refusal: ClassVar[tuple[str, str, str] | None] = None
    # what that budget must hold: the prompt (per KV-parallel rank: TensorRT-LLM's LLM API check, ATOM's scheduler), or the
    # whole request, prompt + generated tokens (vLLM: its max_model_len, which bounds a request's prompt + max_tokens, must
    # stay within max_num_batched_tokens), spec.plan.prompt_schedules
    whole_request_in_budget: ClassVar[bool] = False
    # whether a prompt's prefix-cache hit still takes its share of the step budget: its whole prompt counted when first
    # scheduled, the cached prefix found only after (TensorRT-LLM's), so fewer prompts share a step than their new tokens
    # would fill. vLLM looks the prefix up before it counts (Scheduler.schedule: get_computed_blocks, then num_new_tokens =
    # request.num_tokens - num_computed_tokens, v1/core/sched/scheduler.py), SGLang likewise (PrefillAdder.add_one_req
    # charges extend_input_len, the prompt less its matched prefix, managers/schedule_policy.py): False
    # (serve.aggregated.prompt_budget, docs/modelling-notes.md#fixW13-prefix-waves)
    budget_counts_cached: ClassVar[bool] = False
    # the decode CUDA graphs it captures where the run sets none (SchedulerFlags.cuda_graph_max_bs NaN): the largest
    # batch per rank, and whether a batch between the captured sizes is padded up to the next one (else it runs eagerly,
    # serve.aggregated.graph_misses). Every batch by default; an engine whose default stops or leaves gaps says so, here
    # or, where the GPU, TP or batch limit sets it, in graphs_default (SGLang's, vLLM's)
    cuda_graphs_default: ClassVar[tuple[float, bool]] = (float("inf"), True)
    # whether its default capture is sized from the batch cap an export writes (graphs_default's max_running: vLLM's
    # max-num-seqs), so that a frontier point is priced at its file's cap (explore.search.file_capture)
    capture_from_batch_cap: ClassVar[bool] = False
    # whether its scheduler pipelines one request's prefill chunks over the PP stages by default (chunked pipeline
    # parallelism: its next chunk enters stage 0 while the last is on a later stage), so that a prompt's chunks are priced
    # pipelined without --cpp (SGLang's); else they cross the stages one after another unless the deployment states cpp
    # (vLLM's V1 scheduler skips a request in flight in another micro-batch, spec/engines/vllm.py budget_batch; TensorRT-LLM's
    # PP loop schedules around its inflight_req_ids, tensorrt_llm/_torch/pyexecutor/py_executor.py _executor_loop_pp; no
    # launch option of either turns it on, crev11 #5, docs/modelling-notes.md#fixC11b-capture-cpp)
    pipelines_request_chunks: ClassVar[bool] = False
    # whether it admits a request that ignores EOS only with its whole remaining output reserved, whatever
    # its usual admission reservation (SGLang's add_one_req_ignore_eos)
    reserves_all_ignoring_eos: ClassVar[bool] = False
    # whether, out of KV blocks for a running request's next token, it evicts running requests, frees their blocks and
    # recomputes them later (their prompt and output so far prefilled again): priced where requests kept in step outgrow
    # the cache (serve.aggregated.in_step_evictions). False: it admits only what it can finish (TensorRT-LLM's
    # GUARANTEED_NO_EVICT), or its eviction is not priced
    recomputes_evicted: ClassVar[bool] = False
    # whether a disaggregated prefill instance under attention DP hands each request to a rank picked
    # independently of the ranks' queues (SGLang's), so a rank's prompts queue behind each other while
    # another rank idles; otherwise the ranks are kept balanced and the instance queues as one
    routes_prefill_dp_at_random: ClassVar[bool] = False
    # whether a disaggregated decode worker pre-allocates a request's KV before its prefill runs and streams the
    # first token (the prefill's) as soon as it sees the cache arrive (SGLang's); otherwise the decode worker
    # takes the request only after the prefill, then pulls the cache and answers in a later iteration
    first_token_on_kv_arrival: ClassVar[bool] = False
    # whether its per-request cost (ttft_overhead_s) is the front end's work before the engine's queue (HTTP, template,
    # tokenising), which in a closed loop runs while the engine runs the steps a new request waits out anyway
    # (serve.aggregated.front_end_wait); only an engine whose module cites such a front end says so
    request_cost_overlaps_wait: ClassVar[bool] = False
    # the model classes ("dense", "moe") of the runs its per-request cost (ttft_overhead_s) was fitted on, where it is
    # fitted; () where it is held at default.toml's documented front end (measure.calibrate.DOCUMENTED): an answer
    # outside them says so and is widened (serve.estimate.request_cost_note, measure.intervals.reasons; newc6 #1)
    request_cost_fitted_on: ClassVar[tuple[str, ...]] = ()
    request_cost_runs: ClassVar[str] = ""  # those runs in words
    # whether its scheduler may hold a context request under attention DP to balance the ranks (adp_wait_steps);
    # an engine that dispatches each request to a rank at once and never holds it says so in its module: its
    # adp_wait_steps is a structural zero, neither charged nor fitted
    holds_adp_requests: ClassVar[bool] = True
    # whether its attention-DP hold (adp_wait_steps) applies only while every rank is decoding (TensorRT-LLM's);
    # otherwise it applies under attention DP at any load
    adp_hold_needs_every_rank_decoding: ClassVar[bool] = False
    # the runs its fitted attention-DP hold (adp_wait_steps) was fitted on and what is known of its cause, in words, said
    # where the hold is priced (serve.estimate.adp_hold_note); "" where no campaign informs it
    adp_hold_runs: ClassVar[str] = ""
    # whether a step's token budget (step_tokens, --max-num-tokens) counts its decode tokens too, 1 + the draft
    # length per running request (TensorRT-LLM's, vLLM's, ATOM's: budget_batch); an engine whose decode batch
    # only its batch limit and KV cache bound says so in its module
    decodes_in_budget: ClassVar[bool] = True
    # whether its attention-DP x EP gather (moe_exchange "gather") moves the activations quantised to the expert GEMMs'
    # format (TensorRT-LLM's AllGatherReduceScatter, vLLM's naive DP/EP prepare); otherwise the BF16 hidden states
    # (SGLang's dp_gather_partial of its global DP buffer, layers/communicator.py:783-803@0.5.9)
    gathers_quantised: ClassVar[bool] = False
    # the activation format AITER's fused MoE switches a SwiGLU MXFP4 MoE's experts to (gpt-oss's clamped SwiGLU) from
    # AITER_SWIGLU_BOUND tokens on gfx950 (cost.ffns.aiter_quantised_activation): its gate/up weights interleaved
    # (GateMode.INTERLEAVE) run group-32 FP8, separated ones MXFP4 (ROCm/aiter aiter/fused_moe.py:789-795@e4048607).
    # MXFP4: what AITER's API does unless told otherwise (fused_moe's gate_mode defaults to SEPARATED, :487), also the
    # engine-less price's; an engine that passes INTERLEAVE says so in its module (SGLang's)
    aiter_swiglu_high: ClassVar[str] = "mxfp4"
    # the GPU families on which the engine quantises an MXFP4 checkpoint's BF16 activations (gpt-oss's) to MXFP8 for its
    # experts (cost.ffns.trtllm_gen_activation: TRTLLM-Gen's MoE on Blackwell, the kernel tables' own, cost.ffns.TRTLLM_GEN;
    # a CUTLASS MoE on SM120, cost.ffns.MXFP8_CUTLASS): none (W4A16, FlashInfer's MXFP4 x BF16 kernels) unless an engine's
    # module names them with its source (TensorRT-LLM's, SGLang's); also the engine-less price's (a kernel table row names
    # its own activation format)
    mxfp8_moe_families: ClassVar[tuple[str, ...]] = ()

    @property
    def versions(self) -> str:
        """`release` with its note, as `llm-codesign engines` lists it."""
        return f"{self.release} ({self.release_note})" if self.release_note else self.release

    @property
    def priced_as(self) -> str:
        """'vllm (defaults as 0.11-0.14)': the engine as an answer's engine line names it, with the releases its price
        reads (`release`), not the newer one an export writes options for."""
        return f"{self.name} (defaults as {self.release})" if self.release else self.name

    # where it launches no speculative decoding under pipeline parallelism: why, with its source (SGLang's server_args
    # check, spec/engines/sglang.py); None where it does
    spec_pp_refusal: ClassVar[str | None] = None
    # the --spec methods its disaggregated prefill-only servers launch under PP where spec_pp_refusal refuses them elsewhere
    # (SGLang 0.5.23's, spec/engines/sglang.py); Engine.prefill_spec
    spec_pp_prefill: ClassVar[tuple[str, ...]] = ()
    # whether its launch loads a model's MTP module from a checkpoint of its own (--spec mtp --draft-model: SGLang's NEXTN
    # --speculative-draft-model-path, as DeepSeek-R1's launches set it); else the export reads it from the target's
    mtp_module_apart: ClassVar[bool] = False
    # prompt lookup (--spec ngram): its host proposer's seconds a step, (fixed, per decoding request, per request squared,
    # per context token a request's match scans), read in each engine's source and timed there (its module says where);
    # None: not priced for this engine, `ngram_refusal` saying why (spec.plan.Deployment refuses it)
    ngram_host: ClassVar[tuple[float, float, float, float] | None] = None
    ngram_refusal: ClassVar[str] = "no prompt-lookup proposer is read for it"
    # whether its prompt lookup matches on the GPU, a scan of each decoding request's token ids in the step's kernels
    # (serve.aggregated.ngram_scan_time; vLLM's default runner, spec/engines/vllm.py), beside its host seconds (ngram_host)
    ngram_gpu_scan: ClassVar[bool] = False
    # whether its loop keeps a step queued ahead (its overlap scheduler) under prompt lookup; False: a synchronous loop
    # under --spec ngram, its host work in series and no step queued ahead of a new request (serve.aggregated.Serving.flags
    # sets SchedulerFlags.queued_steps 0; TensorRT-LLM's, spec/engines/trtllm.py)
    ngram_overlap: ClassVar[bool] = True

    def runs_spec(self, pp, k):
        """Where it launches `k` draft tokens a step (0: no speculation) on `pp` pipeline stages, a boolean array over the
        two broadcast: everywhere unless spec_pp_refusal says why not under pp > 1. The rule a Deployment (so estimate,
        export, lc.deployment) and the search (explore.search's fits) share (newc9 #3)."""
        import numpy as np

        ok = np.ones(np.broadcast(np.asarray(pp), np.asarray(k)).shape, dtype=bool)
        return ok if self.spec_pp_refusal is None else ok & ((np.asarray(pp) <= 1) | (np.asarray(k) <= 0))

    def prefill_spec(self, pp, spec):
        """The speculation a disaggregated prefill pool on `pp` pipeline stages (an int) is built with: `spec` where runs_spec
        takes it; None where only the engine's prefill-only servers launch its method under PP (spec_pp_prefill: the pool
        prices no draft either way, serve.disagg.prefill_pool reads none, as the search's prefill points hold none); refused
        in one line where neither. The decode pool keeps runs_spec's rule (its Deployment's check)."""
        if spec is None or bool(self.runs_spec(pp, spec.k).all()):
            return spec
        if spec.method in self.spec_pp_prefill:
            return None
        raise InputError("pp", int(pp), f"1 on the prefill pool with --spec {spec.method} on {self.title} ({self.spec_pp_refusal}; "
                         f"its prefill nodes take {' or '.join(self.spec_pp_prefill) or 'no method'} under PP); drop --spec, or pp=1")

    def runs_plans(self, plan, *, moe: bool = True):
        """Where it has a launch for `plan` (a Plan of ints or arrays; `moe`: the model has experts), a boolean array over
        the plan's broadcast sizes: every plan unless its module names a mapping of ranks its launch cannot express, with
        the engine source (plan_refusal says it in words). The one rule the search, estimate, the API and export share."""
        import numpy as np

        return np.ones(np.broadcast(*(np.asarray(x) for x in plan.sizes)).shape, dtype=bool)

    def plan_refusal(self, plan, *, moe: bool = True) -> tuple[str, object, object] | None:
        """Where `plan` (ints, or arrays: the first such) holds one it has no launch for (runs_plans): why, in words, that
        plan, and the nearest plan it runs on the same GPUs (refused_plan); None where it runs every one."""
        import numpy as np

        shape = np.broadcast(*(np.asarray(x) for x in plan.sizes)).shape
        bad = ~np.broadcast_to(self.runs_plans(plan, moe=moe), shape)
        if not bad.any():
            return None
        one = plan.at(int(np.argmax(bad.ravel())))
        why, near = self.refused_plan(one)
        return why, one, near

    def refused_plan(self, plan) -> tuple[str, object]:
        """For one plan its runs_plans refuses: why, in words, and the nearest plan it runs; an engine whose runs_plans
        refuses some says, in its module."""
        raise NotImplementedError(f"{self.name} refuses a plan (runs_plans) without saying why (refused_plan)")

    def precision_refusal(self, prec, gpu, *, moe: bool | None = True) -> tuple[str, object, str] | None:
        """Where it has no kernel for precision `prec` on `gpu` (`moe`: the model has experts, whose grouped GEMMs an engine
        may have for fewer GPUs than its dense ones; None: not known, so none of those refused): the field, the format and why, in words (an InputError's three parts);
        None where it runs it, natively or as spec.precision.executable maps a format the GPU has no math for (vLLM's Marlin
        weight-only kernels). An engine without such a fallback says so in its module, with its source."""
        return None

    def mxfp4_emulation(self, prec, gpu, *, moe: bool | None = True) -> str | None:
        """Where it runs `prec`'s MXFP4 linears on `gpu` by emulation, dequantising the weights to BF16 each forward and
        running a BF16 GEMM (cost.ops prices the dequantisation's bytes and the BF16 GEMM, slower than BF16): the one line
        an answer says; None where it runs them as spec.precision.executable prices them (a real kernel) or refuses them
        (precision_refusal). An engine that emulates says so in its module, with its source."""
        return None

    def graphs_default(self, gpu, tp_size, *, k=0.0, max_running=float("inf")):
        """The decode CUDA graphs a launch that sets none captures on `gpu` with `tp_size` GPUs a stage (the engine's tensor
        parallel size: attention TP x attention-DP ranks), `k` draft tokens a request and `max_running` requests a rank
        (SchedulerFlags.max_running_requests; inf: the engine's own): (largest batch per rank, padded), as
        cuda_graphs_default says; an engine whose default depends on them overrides this (SGLang's, vLLM's)."""
        return self.cuda_graphs_default

    def export_graphs_default(self, gpu, tp_size, *, k=0.0, max_running=float("inf")):
        """graphs_default at the release `llm-codesign export` writes options for (data/engines/NAME.toml), where it moved
        from the runs' releases the price reads; the same elsewhere. Where the two differ an export writes the priced
        capture (explore.export_engines.base.written_capture)."""
        return self.graphs_default(gpu, tp_size, k=k, max_running=max_running)

    @abstractmethod
    def step_tokens(self, gpu) -> int:
        """Default token budget of one step (the chunk size of chunked prefill) on `gpu`."""

    def launch_step_tokens(self, gpu, chunked_prefill=None):
        """step_tokens under a launch's chunked-prefill option (None: the engine's default; arrays ok): the same but on
        SGLang, whose budget is its prefill batch's once chunking is off (frev9 #2)."""
        return self.step_tokens(gpu)

    @abstractmethod
    def max_batch(self, gpu, kv_tokens=None, context_len: int = 0):
        """The most sequences one engine rank (an attention-DP rank) runs at once by default, whatever
        its KV cache could hold (`kv_tokens`: the tokens it holds; `context_len`: the model's context)."""

    def batch_limit(self, gpu, stated=float("inf"), kv_tokens=None, context_len: int = 0):
        """The most sequences one rank runs at once under a launch that states `stated` (SchedulerFlags.max_running_requests:
        TensorRT-LLM max_batch_size, vLLM --max-num-seqs, SGLang --max-running-requests; inf where it states none; arrays
        broadcast): the stated cap below the engine's own (max_batch), which it does not raise; an engine that takes a stated
        cap in place of its default says so in its module."""
        import numpy as np

        return np.minimum(self.max_batch(gpu, kv_tokens, context_len), np.asarray(stated, float))

    def rank_step_tokens(self, max_num_tokens, adp):
        """The step budget one attention-DP rank runs when the server is given `max_num_tokens` (arrays broadcast
        with the `adp` ranks): the figure itself, each rank's scheduler taking the server's (TensorRT-LLM's max_num_tokens,
        vLLM's max_num_batched_tokens); an engine that splits one server-wide figure over its ranks says so in its module."""
        import numpy as np

        return np.asarray(max_num_tokens, float) + 0.0 * np.asarray(adp, float)

    def budget_batch(self, max_num_tokens, draft_len, pp):
        """The most sequences one rank (an attention-DP rank) decodes under a step budget of `max_num_tokens`
        (arrays broadcast): a step schedules its running requests in order while the budget lasts, 1 + `draft_len`
        tokens each, one pipeline micro-batch at a time (`pp` in flight, each its own step), so pp x floor(budget /
        (1 + k)). The order does not rotate, so the requests past it do not share the steps: they wait for the
        first ones to finish, as past the batch limit (max_batch). inf where decodes are outside the budget."""
        import numpy as np

        if not self.decodes_in_budget:
            return np.inf
        return np.asarray(pp, float) * np.floor(np.asarray(max_num_tokens, float) / (1.0 + np.asarray(draft_len, float)))

    @abstractmethod
    def own_allreduce(self, nbytes, n, family: str):
        """Where it runs its own all-reduce rather than NCCL, for `nbytes` per GPU over `n` GPUs of one
        scale-up domain of a GPU family, as a boolean array."""

    def oneshot_limit(self, n, family: str):
        """(bytes, named): below `bytes` per GPU its own all-reduce (own_allreduce) over `n` GPUs of a GPU family runs its
        one-shot kernel whatever the two-shot would cost; from there its two-shot where `named` (a fixed threshold in its
        launcher), else the faster of the two (where its strategy table stops keeping the one-shot), never less than the
        one-shot at the limit (cost.kernels._custom_all_reduce). Arrays broadcast with `n`; (0, False): the faster of the
        two at every size."""
        import numpy as np

        return np.zeros(np.shape(n)), np.zeros(np.shape(n), dtype=bool)

    def symm_allreduce(self, nbytes, n, family: str):
        """Where an all-reduce its own kernel does not take (own_allreduce) runs through torch's symmetric memory
        instead of NCCL (vLLM's SymmMemCommunicator), for `nbytes` per GPU over `n` GPUs of one scale-up domain, as a
        boolean array: none unless an engine says so."""
        import numpy as np

        return np.zeros(np.broadcast(np.asarray(nbytes), np.asarray(n)).shape, dtype=bool)

    @property
    def admission(self) -> tuple[float, float] | None:
        """(OSL share, output-token clip) it reserves to admit a request where that is less than a
        running sequence holds (it then admits past what the KV cache holds and time-shares the decode
        slots); None where it admits only what the cache holds."""
        share, clip = self.reserve
        return (share, clip) if share < self.kv_budget[2] else None

    def kv_fraction(self, gpu, plan, *, chunk, spec_method: str | None = None, draft_len=None):
        """The fraction of its KV budget (kv_budget) for a plan: fixed unless the engine derives it."""
        return self.kv_budget[1]

    def kv_formats(self, gpu, model=None) -> tuple[str, ...]:
        """The KV-cache formats (spec.precision names) its cache holds on `gpu` (for `model`'s attention where a format
        depends on it; None: any model), as its launch option lists them and its
        platform checks admit them (check_kv_format): BF16, FP16 and FP8 unless its module says otherwise, vLLM's
        --kv-cache-dtype CacheDType (auto, float16, bfloat16, fp8, fp8_e4m3, fp8_e5m2; fp8_inc is Gaudi's, fp8_ds_mla
        DeepSeek-V3.2's) on CUDA and on ROCm, where fp8 is E4M3 (vllm/config/cache.py:14-23,51-52@0.19.0, :25-26@0.11.0):
        no FP4 cache in the campaigns' versions."""
        return ("bf16", "fp16", "fp8")

    def kv_budget_text(self) -> str:
        """How it sizes its KV cache by default (kv_budget), in words: the share and what of."""
        budget, fraction, _ = self.kv_budget
        derived = type(self).kv_fraction is not Engine.kv_fraction  # SGLang's follows the GPU and the plan
        share = f"{fraction:g} (or per GPU and plan)" if derived else f"{fraction:g}"
        return {"free": f"{share} of what weights + activations leave",
                "total": f"{share} of the GPU: weights + activations + KV",
                "static": f"{share} of the GPU: weights + KV (activations outside)"}[budget]

    def fuses(self, fusion: str) -> bool:
        """Whether its step makes one of the fusions (`fusions`)."""
        return fusion in self.fusions

    def moe_input_quant_fused(self, architecture: str) -> bool | None:
        """Whether a MoE layer's input reaches its shared expert's first GEMM already quantised (by the norm or all-reduce
        before it): None where its act_quant says (Engine.fusions, every architecture alike); an engine whose model code
        leaves it BF16 for an architecture says False (TensorRTLLMEngine, DeepSeek-V3's)."""
        return None

    def spec_worker_kernels(self, method: str, k):
        """The small kernels its speculative worker launches each step at draft length `k` beyond the draft passes' and
        the sampler's priced operators (index arithmetic, acceptance, metadata updates): 0 unless an engine says so."""
        return 0.0

    def mla_bmm_quantised(self, family: str) -> bool:
        """Whether MLA's absorbed decode products of an FP8 checkpoint quantise their BF16 input by a kernel of their own on
        GPU `family` (TensorRT-LLM's FP8 block BMM on SM89/90/120), the products then priced as block-FP8 GEMMs
        (cost.mixers._mla_proj): False unless an engine says so."""
        return False

    def dequantised_mla_products(self, family: str) -> tuple[str, ...]:
        """MLA's absorbed decode products ("uk": q x W_UK, "uv": o x W_UV) whose FP8 checkpoint weights this build
        casts to BF16 and scales at every decode step (cost.mixers._mla_proj, mla_bmm_dequant): both in a build
        without fp8_bmm, none otherwise; an engine whose kernels differ by GPU family says so itself."""
        return () if self.fuses("fp8_bmm") else ("uk", "uv")

    def without(self, fusion: str) -> "Engine":
        """This engine as a build whose step does not make `fusion` (a measured run's older release, where
        data/measurements/campaigns.toml says so): the same name and fitted costs, one object per engine and
        fusion, so that rows priced together stay together. A fusion no engine knows (FUSIONS) is one line:
        a misspelt one would price today's build quietly."""
        if fusion not in FUSIONS:
            raise InputError("fusion", fusion, "one of: " + ", ".join(FUSIONS))
        return _without(self, fusion) if self.fuses(fusion) else self

    def with_moe_a2a(self, backend: str) -> "Engine":
        """This engine launched with the MoE exchange `backend` (MOE_A2A_BACKENDS; "" its default): the same name and
        fitted costs, one object per engine and backend, as `without`."""
        if backend not in MOE_A2A_BACKENDS:
            raise InputError("moe_a2a", backend, "one of: " + ", ".join(repr(b) for b in MOE_A2A_BACKENDS))
        return self if backend == self.moe_a2a else _with_moe_a2a(self, backend)

    def _fusable_allreduce(self, nbytes, n, family: str):
        """Where its own all-reduce kernel can carry the residual add + RMSNorm (FUSION_FAMILIES)."""
        return self.own_allreduce(nbytes, n, family) & (family in FUSION_FAMILIES)

    def ar_norm_fused(self, architecture: str, *, adp, nbytes, n, family: str):
        """Where it runs a layer's residual add + RMSNorm inside its own all-reduce kernel of `nbytes`
        over `n` GPUs (ar_norm), as a boolean array."""
        import numpy as np

        own = self._fusable_allreduce(nbytes, n, family)
        if self.fuses("ar_norm"):
            return own
        return np.zeros(np.broadcast(own, np.asarray(adp)).shape, dtype=bool)

    def attention_time_factor(self, family: str, kind: str, phase: str, *, kv_fp8: bool, dec_tokens=None):
        """Time of its attention kernel relative to TensorRT-LLM's on the same shape (attention_kernels)."""
        return self.attention_kernels.get(family, {}).get((kind, phase), 1.0)

    def triton_attention(self, model, gpu, kv: str | None) -> bool:
        """Whether it runs the model's GQA attention on SGLang's Triton backend on `gpu` with a `kv` cache (a format
        name): SGLang's, where its default kernels take none of the head sizes (spec.engines.head_dims); no other's."""
        return False

    def pdl_share(self, family: str) -> float:
        """Share of a serving step's kernel boundaries whose next kernel it launches with PDL (0 before SM90, and in a
        build without it: Engine.without("pdl"))."""
        return self.pdl.get(family, 0.0) if self.fuses("pdl") else 0.0

    def gemm_kernel(self, family: str, kernel: str) -> str:
        """The GEMM kernel family it runs: on Hopper DeepGEMM's (fp8_deepgemm) for block-scaled FP8 where it
        runs DeepGEMM and CUTLASS's scaled-mm (fp8_cutlass) for per-tensor FP8 where it runs that; the kernel
        tables' otherwise (elsewhere no per-engine rows time another kernel)."""
        if family == "hopper" and self.deepgemm and kernel == "fp8_block":
            return "fp8_deepgemm"
        if family == "hopper" and self.fp8_cutlass and kernel == "fp8":
            return "fp8_cutlass"
        return kernel

    def moe_kernel(self, family: str, kernel: str, *, weight: str = "", ep: bool = False, gated: bool = True) -> str | None:
        """The MoE kernel family (MOE_KERNELS) it runs for expert GEMMs of GEMM kernel family `kernel`
        (cost.kernels.gemm_kernel: bf16, fp8, fp8_block, fp4, w4a16) on a GPU family, for checkpoint format
        `weight` (mxfp4 and int4 tell 4-bit kernels apart), with experts split by EP (`ep`) or not, of a
        gated (SwiGLU) MoE or not (`gated`). None: the
        kernel tables' own (TensorRT-LLM's), which the engines are told apart from only on Hopper, where the
        per-engine tables are."""
        return None

    def moe_weight(self, family: str, kernel: str, *, weight: str, ep: bool = False, gated: bool = True) -> str:
        """The format the experts' weights are held in and run at under this engine (moe_kernel's arguments):
        the checkpoint's (`weight`), or the one its MoE kernel family converts them to at load (MOE_UPCAST)."""
        return MOE_UPCAST.get((self.moe_kernel(family, kernel, weight=weight, ep=ep, gated=gated), weight), weight)

    def moe_exchange(self, gpu, *, moe_tp):
        """How its MoE layers exchange tokens under attention DP with expert parallelism, over the plans' MoE-TP
        sizes (a numpy array of names): "all_to_all", each token to its experts' ranks and back (a dispatch and a
        combine), or "gather", every rank's tokens gathered to every rank and the outputs reduce-scattered back.
        The gather unless an engine's module says otherwise: SGLang's --moe-a2a-backend defaults to "none"
        (server_args.py:495-497@0.5.9, :1601-1616@0.5.14), so under DP attention the MLP runs in ScatterMode.FULL
        (layers/communicator.py:284-294@0.5.9): dp_gather_partial brings every rank's tokens (an all-gather, or an
        all-reduce of the zero-padded buffer while a prefill is in the batch, DpPaddingMode, layers/dp_attention.py:50-85)
        and the outputs go back by reduce-scatter (or an all-reduce and a local slice, communicator.py:928-944); vLLM's
        all2all_backend defaults to allgather_reducescatter (config/parallel.py:160@0.19.0, :185@0.24.0), the
        AgRsAll2AllManager's all_gatherv of every DP rank's tokens and reduce_scatterv of the outputs
        (distributed/device_communicators/all2all.py). DeepEP, Mooncake, MoRI or FlashInfer's all-to-all in either
        only as its flag names it."""
        import numpy as np

        return np.full(np.shape(moe_tp), "gather")

    def mtp_eh_proj_split(self, adp):
        """Where DeepSeek MTP's eh_proj is split over TP (eh_proj_tp, without attention DP): a boolean
        array over the attention-DP sizes."""
        import numpy as np

        return self.eh_proj_tp & (np.asarray(adp, float) <= 1)

    def costs(self, cal) -> EngineCosts:
        """Its fitted values in `cal` (a Calibration; one line naming the per-engine tables that lack
        it) and the in-step calibration, resolved once per evaluation."""
        v = cal.engine_values(self.name)
        return EngineCosts(self, cal.in_step(self.name), v["step_overhead_s"], v["seq_overhead_s"], v["ttft_overhead_s"],
                           v["eager_launch_s"], v["eager_skew_s"], v["ttft_wait_steps"], v["adp_wait_steps"],
                           v["prefill_queue_fraction"], cal.pdl_credit_s, v["idle_launch_s"])


@dataclass(frozen=True)
class EngineCosts:
    """One engine's fitted costs in one calibration profile, read once: the per-engine values the
    serving model adds to the kernels (host cost per step and per running sequence, per eager kernel
    launch, per request; the scheduler's waits and arrival spread) and `cal`, the profile as kernels
    run inside this engine's captured step (`Calibration.in_step(name)`). `Engine.costs` builds it."""
    engine: Engine
    cal: object  # the in-step Calibration (cost/ sits above spec/, so it is not imported here)
    step_overhead: float  # s per step
    seq_overhead: float  # s per running sequence per step
    ttft_overhead: float  # s per request, outside the GPU's steps
    eager_launch: float  # s per kernel launch in steps that run outside CUDA graphs (prefill)
    eager_skew: float  # spread of that cost over the ranks of a stage (eager_per_launch)
    ttft_wait_steps: float  # steps the scheduler has queued ahead of a new request (1: overlap scheduler; 0: synchronous)
    adp_wait_steps: float  # further iterations under attention DP
    queue_fraction: float  # share of the rest of a "waves" run's wave re-arriving with a cohort (0: cohorts kept, 1: lockstep)
    pdl_credit: float  # s saved per kernel boundary the engine PDL-launches (pdl_credit_s; pdl_share weighs it)
    idle_launch: float = 0.0  # host s per launch of an eager step on an idle engine, none hidden (idle_launch_s)

    def eager_per_launch(self, ranks):
        """Host seconds per kernel launch of an eager step over `ranks` GPUs that meet at every collective of
        a layer (a stage's TP x attention-DP x KV-parallel ranks). Each rank's process launches its own
        kernels, and a collective completes only once the last rank has launched it, so the group runs at
        its slowest rank's pace: the mean cost per launch (eager_launch) plus eager_skew x sqrt(2 ln N) for
        N ranks, the growth of the largest of N draws (the normal extreme-value bound, above the exact expected
        maximum at small N: 1.18, 1.67, 2.04 against 0.56, 1.03, 1.42 for 2, 4, 8), the form TensorRT-LLM's
        TTFT by GPU count follows (docs/modelling-notes.md#eager-rank-skew), so eager_skew is that form's
        scale rather than a measured spread; none for one rank. Under CUDA graphs the launches are replayed
        from the device and neither is paid."""
        import numpy as np

        return self.eager_launch + self.eager_skew * np.sqrt(2.0 * np.log(np.maximum(np.asarray(ranks, float), 1.0)))

    @staticmethod
    def phase_steps(arrival: str, rounds=float("inf")):
        """The phase part of a new request's wait: the rest of the running step, which its `arrival` fixes
        (spec.harness.ARRIVAL_PHASE_STEPS: a closed loop's request arrives as a step starts, 1; a burst on an idle
        engine, 0), never the engine's profile, so a wait fitted or set high cannot hide front-end work under queueing.
        Under "waves" the first wave, a share 1 / `rounds` of the requests (SchedulerFlags.rounds), is a burst on an
        idle engine: 1 - 1 / rounds on average. The steps queued ahead (ttft_wait_steps) and the attention-DP hold start
        only once the request is queued."""
        import numpy as np

        from llm_codesign.spec.harness import ARRIVAL_PHASE_STEPS

        first = 1.0 / np.maximum(np.asarray(rounds, float), 1.0) if arrival == "waves" else 0.0
        return ARRIVAL_PHASE_STEPS[arrival] * (1.0 - first)

    def wait_steps(self, adp, concurrency, arrival: str = "closed_loop", *, queued=float("nan"), rounds=float("inf")):
        """Decode iterations a new request waits before its prefill step: the running step's rest, which the
        `arrival` fixes (phase_steps), plus the steps the engine's scheduler has queued ahead of it (ttft_wait_steps:
        1 under an overlap scheduler while another request is in flight, 0 for a synchronous loop), and under
        attention DP the iterations it may hold context requests to balance the ranks (adp_wait_steps). Where the engine holds them
        only while every rank is decoding (Engine.adp_hold_needs_every_rank_decoding: TensorRT-LLM's
        PyExecutor._balance_adp_requests, attention_dp_config enable_balance, holds a context request
        until every rank has one, for at most timeout_iters, default 50, and schedules it at once when
        any rank has no generation request), of `concurrency` requests in flight over `adp` ranks,
        spread as evenly as they go, the C - 1 others leave every rank one only when C > adp: below
        that (one request alone, say) nothing waits. `queued`: the run's build's count where it differs
        (SchedulerFlags.queued_steps; NaN: the engine's); `rounds`: a "waves" run's (phase_steps)."""
        import numpy as np

        queued = np.asarray(queued, float)
        # a step is queued ahead only while another request keeps the loop running: none for a lone request (C <= 1),
        # a burst's wave or a "waves" run's first wave, each on an idle engine (the phase's own share of the arrivals)
        in_flight = self.phase_steps(arrival, rounds) * (np.asarray(concurrency, float) > 1.0)
        own = self.phase_steps(arrival, rounds) + in_flight * np.where(np.isnan(queued), self.ttft_wait_steps, queued)
        return own + self.adp_hold_steps(adp, concurrency)

    def adp_hold_steps(self, adp, concurrency):
        """wait_steps' attention-DP hold alone, in decode iterations: adp_wait_steps under attention DP where the engine
        holds requests (Engine.holds_adp_requests) and, where it holds them only while every rank is decoding, with more
        requests than ranks; 0 elsewhere (serve.estimate.adp_hold_note says it where it is priced)."""
        import numpy as np

        adp = np.asarray(adp)
        busy = np.asarray(concurrency) > adp if self.engine.adp_hold_needs_every_rank_decoding else True
        if not self.engine.holds_adp_requests:
            return 0.0 * adp
        return np.where((adp > 1) & busy, self.adp_wait_steps, 0.0)


@cache
def _with_moe_a2a(engine: Engine, backend: str) -> Engine:
    return replace(engine, moe_a2a=backend)


@cache
def _without(engine: Engine, fusion: str) -> Engine:
    return replace(engine, fusions=tuple(f for f in engine.fusions if f != fusion))


# the GPU vendors (Gpu.vendor) engines ship for, as messages name them
VENDOR_NAMES = {"nvidia": "NVIDIA", "amd": "AMD"}
# Each vendor's engine where none is named: TensorRT-LLM, the reference, on NVIDIA's; SGLang on AMD's, the engine of
# 238 of the 326 bundled MI355X runs (data/measurements/serving_inferencex_mi355x.csv; ATOM's the other 88). A GPU
# of another vendor (a GPU file's) takes the reference, and any engine is priced on it.
VENDOR_ENGINE = {"nvidia": "trtllm", "amd": "sglang"}
ENGINES: dict[str, Engine] = {}  # name -> engine, in the order registered
# the engines `export` writes a launch configuration for (each with a builder in explore/export_engines/ and its options
# in data/engines/NAME.toml, register_exporter refusing any other), in ENGINES' order; the others are priced, not exported
EXPORTABLE = ("trtllm", "vllm", "sglang")
_ALIASES: dict[str, str] = {}


def register_engine(engine: Engine) -> Engine:
    """Add an engine (its name and aliases) to the registry that the CLI, the web form, exports and
    validation read; a name taken already is refused. Returns the engine, for a module-level
    `NAME = register_engine(...)`. Its fitted values come from the per-engine tables of the calibration
    profiles, which must hold its name (Engine.costs says which do not)."""
    for key in (engine.name, *engine.aliases):
        if key != key.strip().lower():
            raise ValueError(f"engine name {key!r}: lower case without spaces, as get_engine looks names up")
        if key in ENGINES or key in _ALIASES:
            raise ValueError(f"engine name {key!r}: taken already")
    unknown = [f for f in engine.fusions if f not in FUSIONS]
    if unknown:
        raise ValueError(f"engine {engine.name!r}: fusions {unknown} are none of {FUSIONS}")
    if not engine.vendors or set(engine.vendors) - set(VENDOR_NAMES):
        raise ValueError(f"engine {engine.name!r}: vendors {engine.vendors} are not among {tuple(VENDOR_NAMES)}")
    ENGINES[engine.name] = engine
    _ALIASES.update(dict.fromkeys(engine.aliases, engine.name))
    return engine


def engine_names() -> tuple[str, ...]:
    """The registered engines' names, in registration order (the CLI's and the web form's choices)."""
    return tuple(ENGINES)


def listed() -> str:
    """The registered engines as help text lists them: "trtllm, vllm or sglang"."""
    *rest, last = ENGINES
    return f"{', '.join(rest)} or {last}" if rest else last


def get_engine(name: str) -> Engine:
    """The engine named (case-insensitive; its aliases accepted), or one line naming the known ones."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in ENGINES:
        raise InputError("backend", name, "one of: " + ", ".join(ENGINES))
    return ENGINES[key]


def engines_on(gpu) -> tuple[str, ...]:
    """The registered engines that run on `gpu` (a Gpu), in registration order: those shipping for its vendor
    (Engine.vendors), every one on a GPU of another vendor."""
    return tuple(n for n, e in ENGINES.items() if gpu.vendor not in VENDOR_NAMES or gpu.vendor in e.vendors)


def engine_choices(gpu) -> dict:
    """What runs on `gpu` as `gpus --json` and the page's /api/gpus list it: the engines (engines_on) and the one
    priced where none is named."""
    return {"engines": list(engines_on(gpu)), "engine": engine_for(gpu).name}


def engine_for(gpu, backend: str | None = None) -> Engine:
    """The engine priced on `gpu` (a Gpu): `backend` (get_engine's names) where given, refused in one line naming
    the engines that run there where its software does not ship for the GPU's vendor (Engine.vendors); else the
    vendor's (VENDOR_ENGINE). The one rule the CLI, the API, the page and lint share."""
    if backend is None:
        return get_engine(VENDOR_ENGINE.get(gpu.vendor, "trtllm"))
    e = get_engine(backend)
    if gpu.vendor in VENDOR_NAMES and gpu.vendor not in e.vendors:
        only = " or ".join(VENDOR_NAMES[v] for v in e.vendors)
        raise InputError("backend", backend, f"an engine that runs on {gpu.name} ({e.title} runs on {only} GPUs only): "
                                             + ", ".join(engines_on(gpu)))
    return e


def cdna3_mxfp4(prec, gpu) -> tuple[str, str] | None:
    """Where `prec` holds MXFP4 weights (its linears', `weight_dtype`, or its attention's, `attn_weight_dtype`) on an AMD
    GPU without FP4 math (CDNA3, gfx942: MI300X, MI325X; its matrix cores have no FP4 input, AMD CDNA3 ISA): the first
    such field and its format, for the engines' MXFP4 rules (precision_refusal, mxfp4_emulation); None elsewhere."""
    if prec is None or gpu is None or gpu.vendor != "amd" or gpu.supports("fp4"):
        return None
    for field, d in (("weight_dtype", prec.weight), ("attn_weight_dtype", prec.attn_weight)):
        if d is not None and d.name == "mxfp4":
            return field, d.name
    return None


# GPU families whose CUDA INT8 W8A8 GEMM no engine here builds (SM100, SM103, SM120): vLLM's CUTLASS scaled_mm wires no INT8
# kernel there, "Int8 not supported on SM100/SM120. Use FP8 quantization instead, or run on older arch (SM < 100)"
# (csrc/quantization/w8a8/cutlass/c3x/scaled_mm_helper.hpp:34, vllm-project/vllm#25935; its Triton INT8 kernel sits behind
# CUTLASS, never reached: #54311, open), and sgl-kernel's int8_scaled_mm has arms for SM75-SM90 alone ("No implemented
# int8_scaled_mm for current compute capability", sgl-kernel/csrc/gemm/int8_gemm_kernel.cu)
NO_INT8_GEMM_FAMILIES = ("blackwell", "blackwell_sm120")


def int8_w8a8(prec) -> bool:
    """Whether `prec` runs INT8 x INT8 GEMMs (W8A8): INT8 weights on INT8 activations."""
    return prec is not None and prec.weight.name == "int8" and prec.activation is not None and prec.activation.name == "int8"


def check_kv_format(engine: Engine | None, gpu, kv: str, model=None) -> None:
    """One line naming the formats `engine` holds its KV cache in on `gpu` (Engine.kv_formats; for `model` where it is
    known) where `kv` is none of them: the rule estimate, compare, pareto, import, lint, design and the API share. No
    engine (roofline): the formats the GPU holds, BF16, FP16, FP8 and its own FP4 ones (Gpu.fp4_formats: an MI355X has
    MXFP4, not NVFP4)."""
    ok = engine.kv_formats(gpu, model) if engine is not None else ("bf16", "fp16", "fp8", *gpu.fp4_formats)
    if kv not in ok:
        who = f"{engine.title} runs on {gpu.name}" if engine is not None else f"{gpu.name} holds"
        if model is not None and engine is not None and kv in engine.kv_formats(gpu):
            who += f" for {model.name}'s attention"
        raise InputError("kv_dtype", kv, f"one of {', '.join(ok)}: the KV-cache formats {who}")


def check_runs(engine: Engine, gpu, plan=None, prec=None, *, moe: bool | None = True) -> None:
    """One line where `engine` has no kernel for precision `prec` on `gpu` (Engine.precision_refusal, naming the engine
    that runs it) or no launch for `plan` (Engine.plan_refusal: the nearest plan it runs, and the engines on `gpu`, every
    one where it is None, that run the plan as given): the rule Deployment (so estimate, lc.deployment, export, import)
    applies; the searches leave such plans out (Engine.runs_plans), and such formats unless named. `moe`: the model has
    experts; None where the model is not known (a Deployment alone): its plan judged as a MoE's, and only the formats an
    engine refuses whatever the model (lc.deployment, the searches and validate pass the model's)."""
    said = engine.precision_refusal(prec, gpu, moe=moe) if prec is not None else None
    if said:
        raise InputError(*said)
    moe = moe is not False
    said = engine.plan_refusal(plan, moe=moe) if plan is not None else None
    if said:
        why, bad, near = said
        on = engines_on(gpu) if gpu is not None else tuple(ENGINES)  # no GPU: every engine's
        others = [n for n in on if n != engine.name and ENGINES[n].plan_refusal(bad, moe=moe) is None]
        also = f"; --backend {' or '.join(others)} runs {bad.label()}" if others else ""
        raise InputError("plan", bad.label(), f"a plan {engine.title} launches ({why}): the nearest is {near.label()}{also}")


def check_pool_vendors(gpu, decode_gpu) -> None:
    """One line where the decode pool's GPU is another vendor's than the prefill pool's: one disaggregated deployment is one
    engine build (CUDA or ROCm) on both pools, and none hands its KV cache across. vLLM's NIXL connector asserts the remote
    pool's attention backend is its own (NixlConnectorWorker._validate_remote_agent_handshake, "assert
    nixl_agent_meta.attn_backend_name == self.backend_name", vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py,
    read in a stored copy of vLLM main, late 2025), and CUDA's backends (FLASH_ATTN, FLASHINFER) are not ROCm's; an FP8 cache
    is E4M3FNUZ on CDNA3 and E4M3FN on NVIDIA (SGLang.kv_formats), other bits for the same byte; no SGLang or Dynamo document
    a ROCm pool beside a CUDA one. Not widened into an answer: refused (newc10 #7)."""
    if gpu.vendor != decode_gpu.vendor:
        raise InputError("decode_gpu", decode_gpu.id, f"an {VENDOR_NAMES.get(gpu.vendor, gpu.vendor)} GPU, as the prefill pool's "
                         f"{gpu.name}: both pools run one engine build (CUDA or ROCm), and no engine hands its KV cache from "
                         f"one vendor's GPUs to the other's")


def engine_for_pools(gpu, decode_gpu, backend: str | None = None) -> Engine:
    """The one engine both pools of a disaggregated deployment run, on `gpu` (prefill) and `decode_gpu`: `backend` where
    given, checked on each (engine_for); else the prefill GPU's vendor's where the decode GPU runs it too, else the first
    engine both run. A `decode_gpu` of the other vendor is refused (check_pool_vendors)."""
    check_pool_vendors(gpu, decode_gpu)
    both = [n for n in engines_on(gpu) if n in engines_on(decode_gpu)]
    if backend is not None:
        try:
            return engine_for(decode_gpu, engine_for(gpu, backend).name)
        except InputError as e:  # the engines both pools run, not the one GPU's that refused it
            raise InputError(e.field, e.value, e.valid.rsplit(": ", 1)[0] + ": " + ", ".join(both)) from None
    own = engine_for(gpu).name
    return get_engine(own if own in both else both[0])
