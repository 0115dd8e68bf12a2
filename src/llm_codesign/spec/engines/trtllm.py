"""TensorRT-LLM (PyTorch backend): its documented defaults. The kernel tables were measured in it, so its
attention kernels are the reference the other engines' are priced against, and it is the engine a call
names none of (TRTLLM)."""
from __future__ import annotations

from dataclasses import replace

from llm_codesign.spec.engines.base import PCIE_FAMILIES, Engine, int8_w8a8, register_engine
from llm_codesign.spec.engines.trtllm_bench import BATCH_CAP, DEFAULT_MAX_TOKENS

# AllReduceStrategy.AUTO (cpp/tensorrt_llm/common/customAllReduceUtils.h, selectStrategyLookUpTable,
# NCCL_SYMMETRIC outside the table): its one-shot / two-shot kernels at TP 2, 4 and 8 up to the workspace
# (getMaxRequiredWorkspaceSize: 8 MB for TP > 2, 16 MB at TP 2), NCCL past it. Inside it the kernel is
# one-shot or two-shot, switched where TensorRT-LLM tuned the crossover, so the cost model prices the
# faster of the two (kernels._custom_all_reduce), except where its Blackwell table keeps the one-shot (ONESHOT_GATHERED).
AR_MAX_BYTES = {2: 16e6, 4: 8e6, 8: 8e6}
# Beyond 8 GPUs a TP group spans NVLink trays of a multi-node NVLink domain (GB200/GB300 NVL72), where AUTO
# first tries MNNVLAllReduce (_torch/distributed/ops.py, is_mnnvl: multi-node mapping on aarch64 with MNNVL
# memory): one-shot up to 512 KiB of tokens x hidden x group, else two-shot, through a multicast buffer, so
# the same two formulas price it, flat in the GPU count, rather than NCCL, at the fixed costs fitted on 8 GPUs
# (assumed: no MNNVL timing in the data; docs/accuracy.md#assumptions). Its bound is the workspace size
# kept in uint32 (two-shot holds 2 x the message).
MNNVL_MAX_BYTES = 2.0**31
# On Blackwell, AllReduceBestStrategyTableSM100 (customAllReduceUtils.h@b78a546, its RESIDUAL_RMS_NORM rows, what a
# layer's all-reduce runs) keeps ONESHOT at hidden 8192 up to 512 / 256 / 128 tokens at TP 2 / 4 / 8 (8 / 4 / 2 MiB of
# BF16 a GPU: 16 MiB gathered from the group), then TWOSHOT or NCCL; at hidden 2048-4096 it switches within one token
# bucket of the same bytes at TP 2 and 8, one bucket earlier at TP 4. aiconfigurator's timing of that kernel
# (systems/data/b200_sxm/comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet@095f58a, message = tokens x hidden) is
# the one-shot's cost there: TP8 at 64 / 128 tokens of hidden 8192, 17.8 / 30.4 us (one-shot formula 17.3 / 29.0 us,
# two-shot 10.9 / 13.8). Hopper's table (SM90) switches elsewhere and keeps the faster of the two.
ONESHOT_GATHERED = {"blackwell": 2.0**24}


# CudaGraphConfig's max_batch_size where none is set ("max_batch_size or 128", tensorrt_llm/llmapi/llm_args.py:216@00043967,
# TorchLlmArgs at fcd3f316): the default capture's largest batch (TensorRTLLMEngine.cuda_graphs_default) and the batch
# whose activations the graphs' memory pool holds (cost.memory)
GRAPH_MAX_BATCH = 128


class TensorRTLLMEngine(Engine):
    # prompt lookup (--spec ngram): NGramDrafter.prepare_draft_tokens runs on the host before the step's forward, for each
    # generation request a copy of its tokens (`list(request.get_tokens(0))`, the binding's list of Python ints) and
    # NGramPoolManager.get_draft_tokens, a Python dict pool of 1..max_matching_ngram_size-token patterns updated over the
    # last k + n - 1 tokens and looked up at the tail (tensorrt_llm/_torch/speculative/ngram.py:86-143, 179-202
    # @02499765); the drafts padded to k, so every request verifies 1 + k tokens (pad_draft_tokens_for_cuda_graph,
    # PyExecutor._executor_loop, _torch/pyexecutor/py_executor.py@00043967). Timed by benchmarks/ngram_host_cost.py on this
    # project's own notes and source as word tokens: ~20 us a request + 15 ns a context token for the copy and ~10 ns for
    # the match sets of frequent patterns scanned on each insert (0 on distinct ids, 54 on Zipf-1.1 ids), 25 kept
    # (docs/modelling-notes.md#trtngram-host-pool). The export writes the private pool (is_public_pool false), pruned when
    # a request ends; the default public pool is never pruned (update_resources returns at once), so its match sets, and
    # the step's host time, grow with every request served. Each request's first call builds its pool from the whole
    # prompt (~4-15 us a prompt token, once): not priced
    ngram_host = (0.0, 20e-6, 0.0, 25e-9)
    # NGRAM is not among SpeculativeDecodingMode.support_overlap_scheduler's modes (_torch/speculative/interface.py
    # @00b6d5a2), so create_py_executor sets disable_overlap_scheduler ("Disable overlap scheduler for speculation mode
    # NGRAM", _torch/pyexecutor/py_executor_creator.py@000429d5): the synchronous _executor_loop, no step queued ahead
    ngram_overlap = False
    # its per-request cost is trtllm-serve's front end, before the engine's queue: one FastAPI/uvicorn process parses the
    # request and tokenises with the model's HF tokenizer (serve/openai_server.py _init_llm, NVIDIA/TensorRT-LLM@00057725;
    # default.toml [default.ttft_overhead_s])
    request_cost_overlaps_wait = True
    # attention-DP balancing (attention_dp_config enable_balance) holds context requests only while every rank has
    # a generation request: PyExecutor._balance_adp_requests schedules them at once when one has none
    adp_hold_needs_every_rank_decoding = True
    # its fitted hold (default.toml / fitted.toml adp_wait_steps, 60 on the range's top) stands for waits of two launches:
    # InferenceX's scripts turn the balancing on (attention_dp_config enable_balance, timeout_iters 60, SemiAnalysisAI/
    # InferenceX@843c6254 benchmarks/single_node/fixed_seq_len/dsr1_fp8_b200_trt.sh:71-74), the clean sample's workflow
    # does not (ai-dynamo/aiconfigurator@f90534bc generator/config/backend_templates/trtllm/extra_engine_args.1.2.0rc6.post2
    # .yaml.j2: enable_attention_dp, no attention_dp_config), yet its runs wait too (docs/modelling-notes.md#fixA2-request-cap)
    adp_hold_runs = ("fitted on TensorRT-LLM's attention-DP runs, the clean sample's 39 (DeepSeek-R1/V3, gpt-oss-120b on B200) "
                     "and InferenceX's 50 (DeepSeek-R1 on B200); TensorRT-LLM's own balancing, attention_dp_config "
                     "enable_balance, is off by default and the wait's cause is not read")
    # its AllGatherReduceScatter gathers the activations quantised (with their scale factors), as aiconfigurator prices
    # it: "all_gather((x+sf volumes)*dp) ... quant-compressed volumes on the pre side" (ai-dynamo/aiconfigurator
    # aic-core/rust/aiconfigurator-core/src/operators/moe_dispatch.rs:315-317@095f58a5), but where its MoE kernel takes them in
    # BF16 and quantises them itself: its CUTLASS MoE on DeepSeek's block FP8, Hopper's (cost.ffns.BF16_IN)
    gathers_quantised = True
    # an MXFP4 checkpoint's experts (gpt-oss) on Blackwell run W4A8_MXFP4_MXFP8: MoeConfig.backend AUTO resolves to TRTLLM for
    # GptOssForCausalLM on SM100-119 (ModelConfig.resolve_moe_backend) and get_mxfp4_quant_algo gives W4A8_MXFP4_MXFP8 on
    # SM >= 100 for every backend but TRITON, W4A16_MXFP4 only below SM100 or by OVERRIDE_QUANT_ALGO
    # (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/model_config.py@008e0af8; the same function in the 1.1-1.3 sources read in
    # the code index): the hidden states quantised to MXFP8 by the MoE op (MXFP4MXFP8QuantizeUtil), FP8 math, the
    # format the B200 kernel table's w4a8_mxfp4_mxfp8 rows time (docs/modelling-notes.md#oss-w4a8). On SM120 (RTX Pro) AUTO
    # resolves to CUTLASS ("Fallback to CUTLASS for other SM versions (e.g., SM120)") while the quant algo stays
    # W4A8_MXFP4_MXFP8, which CutlassFusedMoE.forward_chunk quantises with mxfp8_quantize before its op: MXFP8 there too, on a
    # CUTLASS MoE (cost.ffns.MXFP8_CUTLASS) for which no SM120 kernel table has rows (docs/modelling-notes.md#revfix5-mxfp8)
    mxfp8_moe_families = ("blackwell", "blackwell_sm120")
    # whole prompts only: enable_chunked_prefill is off by default (TorchLlmArgs), and with it off
    # MicroBatchScheduler::operator() schedules a context request whole or stops scheduling at it
    # (cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp, read in the code index: not mirrored here).
    # aiconfigurator's templates keep the default (ai-dynamo/aiconfigurator@095f58a5 generator/config/backend_templates/
    # trtllm/extra_engine_args.*.yaml.j2: `enable_chunked_prefill: {{ enable_chunked_prefill | default(false) }}`), and
    # InferenceX's DeepSeek-R1 scripts do not set it (SemiAnalysisAI/InferenceX@843c6254 benchmarks/single_node/fixed_seq_len/)
    chunks_prefill = False
    # its LLM API rejects the request (tensorrt_llm/llmapi/llm.py BaseLLM._check_arguments@4c05a748, spec.plan.check_whole_prompt)
    whole_prompt_refusal = ("schedules a prompt whole and its LLM API refuses a longer one (BaseLLM._check_arguments)",
                            "", "enable_chunked_prefill: true")
    # a context request takes its whole prompt off max_num_tokens, cached prefix included: MicroBatchScheduler::operator()
    # charges `llmReq->getNumTokens(beam)` unchunked and getContextRemainingLength() chunked, both before the KV cache
    # manager finds the reused blocks ("the runtime process is to apply for cache first and then determine prepopulation",
    # LlmRequest::setPrepopulatedPromptLen, cpp/include/tensorrt_llm/batch_manager/llmRequest.h; microBatchScheduler.cpp
    # @0a949d31 and @b8b7b782, the PyTorch path's PyMicroBatchScheduler the same, "C++ uses getNumTokens(beam=0)",
    # tensorrt_llm/_torch/pyexecutor/scheduler.py; all read in the code index)
    budget_counts_cached = True
    # the LLM API's default CUDA graphs (trtllm-serve and the LLM class, where the options set no cuda_graph_config):
    # TorchLlmArgs.cuda_graph_config = CudaGraphConfig() (enable_padding False, max_batch_size 0 -> "max_batch_size or
    # 128"), whose generated sizes without padding are 1-32, 64 and 128 (list(range(1, 32)) + [32, 64, 128], powers of 2
    # from 256 below the max, and the max; NVIDIA/TensorRT-LLM@00043967 tensorrt_llm/llmapi/llm_args.py:175-255, the same
    # rule at fcd3f316 with floor for ceil of log2), and CUDAGraphRunner.maybe_get_cuda_graph runs a batch not among them
    # eagerly (`if batch_size not in self.supported_batch_sizes: return False`, _torch/pyexecutor/cuda_graph_runner.py
    # @7b437aaa). trtllm-bench builds its own (padding on, max = its max_batch_size: bench/benchmark/utils/general.py
    # get_settings@0171265e, @c0b2ee6e), which validate sets per row (measure.validate.bench_limits)
    cuda_graphs_default = (float(GRAPH_MAX_BATCH), False)
    # decodes in the step budget (Engine.budget_batch): MicroBatchScheduler::operator() takes the active requests in
    # order, a generation request costing its beam width + draft tokens, and stops at the first that would pass
    # max_num_tokens, skipping those in flight in another micro-batch (NVIDIA/TensorRT-LLM@0a949d31
    # cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp, read in the code index: not mirrored here; its docs,
    # "Tuning Max Batch Size and Max Num Tokens", say the same). So its users size it: InferenceX's MTP recipes set
    # (MTP + 1) x max_batch_size + ISL + 64 (SemiAnalysisAI/InferenceX@843c6254
    # benchmarks/single_node/fixed_seq_len/dsr1_fp8_b200_trt_mtp.sh:92), aiconfigurator's a decode worker's to its
    # max_batch_size and searches decode batches only up to it (ai-dynamo/aiconfigurator@095f58a5
    # generator/rule_plugin/trtllm.rule:18, sdk/inference_session.py:851-854)

    # DeepSeek-V3's MoE layers (DeepSeek-R1, Kimi K2) fuse only RESIDUAL_RMS_NORM into the all-reduce before the MoE
    # ("TODO: unify the two min-latency MoE backends by enabling quant fusion"; under attention DP a plain RMSNorm), so
    # the BF16 hidden states reach the shared expert's gate_up, whose quantised Linear runs its own quantise kernel
    # (NVFP4LinearMethod.apply: fp4_quantize unless the input is an Fp4QuantizedTensor); only the dense layers' MLP takes
    # RESIDUAL_RMS_NORM_QUANT_NVFP4 (DeepseekV3DecoderLayer.forward_MoE / forward_mlp,
    # tensorrt_llm/_torch/models/modeling_deepseekv3.py@000561df, and its newest version in the code index, which
    # registers DeepseekV32ForCausalLM on the same class; modules/linear.py, code index). The spring-2025 builds fed it
    # BF16 too: their min-latency RESIDUAL_RMS_NORM_AND_QUANT_NVFP4 quantised for the routed experts (fc31_input_scale)
    # while `_compute_shared_output` called shared_experts(hidden_states)
    BF16_MOE_INPUT = ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM")

    def runs_plans(self, plan, *, moe: bool = True):
        """Attention DP only at attention TP 1: under enable_attention_dp every rank runs its own attention, Attention.__init__
        setting `dp_size = tp_size; tp_size = 1` (tensorrt_llm/_torch/modules/attention.py@00547a25, NVIDIA/TensorRT-LLM; the
        KV cache manager alike, resource_manager.py `if mapping.enable_attention_dp: tp_size = 1`), so the LLM API's
        tensor_parallel_size is the DP ranks and a plan of DP ranks of TP > 1 has no launch (the exporter's refusal,
        explore/export_engines/trtllm.py). Every campaign row it ran under attention DP has TP 1 (data/measurements)."""
        import numpy as np

        return (np.asarray(plan.adp) <= 1) | (np.asarray(plan.tp) <= 1)

    def refused_plan(self, one):
        """DP x TP as DP x TP ranks of attention TP 1, on the same GPUs and the same MoE split."""
        why = "its attention DP runs attention TP1 on every rank (enable_attention_dp), not DP x TP"
        return why, replace(one, tp=1, adp=one.tp * one.adp)

    # the formats its GEMMs need math for, by the GPUs that have it: NVFP4 (weights or activations: its QuantAlgo has no
    # weight-only NVFP4) on SM100/103/120 only, CutlassFp4GemmRunner::dispatchToArch throwing "Arch unsupported for CUTLASS
    # FP4 GEMM" on any other SM (cpp/tensorrt_llm/kernels/cutlass_kernels/fp4_gemm/fp4_gemm_template.h@02499765; the TensorRT
    # plugin's Fp4GemmPlugin::init `TLLM_CHECK_WITH_INFO(getSMVersion() >= 100, "FP4 Gemm not supported before Blackwell")`,
    # NVIDIA/TensorRT-LLM#5018); FP8, per-tensor or block-scaled, on SM89 and newer (docs/source/features/quantization.md:94-102
    # @09d4c79b, its Hardware Support Matrix: NVFP4 on Blackwell only, FP8 per tensor from Ada, none of either on Ampere). No
    # Marlin-style weight-only fallback for either, unlike vLLM's (spec.precision.executable).
    # Block FP8 (DeepSeek's 128x128) experts: no grouped GEMM on Ada. Its MoE (CUTLASS, what MoeConfig.backend AUTO resolves
    # a DeepSeek-style model to) runs block-scaled experts through CutlassFp8BlockScaleGemmRunner::moeGemm, DeepGEMM's SM90
    # kernels ("fp8 blockscale gemm only support Hopper", fp8_blockscale_gemm.cu@0b349035; NVIDIA/TensorRT-LLM#5064 hit it
    # on B200), and the op fp8_block_scaling_moe_gemm dispatches SM90 and SM120 only, "Unsupported SM version" otherwise
    # (cpp/tensorrt_llm/thop/fp8BlockScalingGemm.cpp@1e9d2162; SM90 only @c23205d4; SM120 added by NVIDIA/TensorRT-LLM#11502,
    # Feb 2026). Its dense block-FP8 GEMM has an Ada kernel (fp8_block_scaling_gemm_ada, case 89, both versions), so a dense
    # model runs; SM120 runs both (the same file @1e9d2162; its quantization guide's matrix still marks SM120 and Ada ".").
    # vLLM runs such experts on Ada: TritonExperts takes block FP8 wherever supports_fp8 (SM89+; fused_moe/experts/triton_moe.py
    # :128-160@0.33.0), TRITON in its FP8 MoE backends (oracle/fp8.py:88-104)
    BLOCK_FP8_MOE_FAMILIES_MISSING = ("ada",)

    def precision_refusal(self, prec, gpu, *, moe: bool | None = True):
        if int8_w8a8(prec):
            # the PyTorch backend's Linear has no SmoothQuant method: get_quant_method takes FP8 (QDQ, rowwise, block), NVFP4,
            # W4A8, weight-only INT8/INT4 and AWQ, and raises "unsupported quant mode" for W8A8_SQ_* (tensorrt_llm/_torch/
            # modules/linear.py get_quant_method); INT8 weight-only (W8A16) is its WeightOnlyQuantLinearMethod
            return ("activation_dtype", "int8", "a format TensorRT-LLM's PyTorch backend runs with INT8 weights: its Linear has "
                    "no SmoothQuant (W8A8 INT8) method (\"unsupported quant mode\"); bf16 runs them weight-only (W8A16), "
                    "--backend vllm or sglang runs W8A8 before Blackwell")
        for field, d in (("weight_dtype", prec.weight), ("activation_dtype", prec.activation), ("attn_weight_dtype", prec.attn_weight)):
            if d is not None and d.name == "fp8_block" and moe is True and field != "attn_weight_dtype" and gpu.family in self.BLOCK_FP8_MOE_FAMILIES_MISSING:
                return (field, d.name, f"a format TensorRT-LLM runs on {gpu.name} for a MoE: it has no block-FP8 grouped GEMM on Ada "
                        "(its block-scaled MoE GEMM runs on SM90 and SM120 only); --backend vllm runs it (its Triton block-FP8 MoE)")
            if d is not None and d.name == "nvfp4" and not (gpu.supports("fp4") and "nvfp4" in gpu.fp4_formats):
                return (field, d.name, f"a format TensorRT-LLM runs on {gpu.name}: it has no FP4 GEMM before Blackwell (its CUTLASS FP4 "
                        "GEMM runner throws \"Arch unsupported\" below SM100); --backend vllm runs it weight-only (Marlin)")
            if d is not None and d.math == "fp8" and not gpu.supports("fp8"):
                return (field, d.name, f"a format TensorRT-LLM runs on {gpu.name}: it has no FP8 GEMM before Ada (SM89; its "
                        "quantization guide's hardware matrix); --backend vllm runs it weight-only (Marlin)")
        return None

    def moe_input_quant_fused(self, architecture: str) -> bool | None:
        return False if architecture in self.BF16_MOE_INPUT else None

    def spec_worker_kernels(self, method: str, k):
        # MTPEagleWorker.forward with strict acceptance, one decoding request (tensorrt_llm/_torch/speculative/mtp.py
        # @000a01de; ops on empty context slices launch nothing), counted op by op inside the captured graph:
        # sample_and_accept_draft_tokens 9 (two ones, argmax, the copy, ==, int, cumprod, sum, +=; its argmax is the
        # sampler already priced: 8), the seq_lens clone, cumsum and -1, prepare_drafter_inputs' concat (4), the first
        # pass's gather ids (mul, long, +, -1, +, concat: 6), its hidden-state gathers (2), the draft token's int32 cast,
        # the positions' gather and +1, seq_lens fill and the kv_lens update (rsub, sub_): 14; each later pass its two
        # gathers, cast, position gather and +1, kv_lens += 1 (6); then stack, the seq_lens restore, the next tokens'
        # -1, index and concat (5): 8 + 4 + 14 + 6 (k - 1) + 5 = 25 + 6k
        import numpy as np

        if method != "mtp":
            return 0.0
        return 25.0 + 6.0 * np.asarray(k, float)

    # the GPU families on which fp8_block_scaling_bmm_out quantises the absorbed products' BF16 input before a block-FP8
    # BMM (tensorrt_llm/_torch/modules/attention.py): SM89/90 (`sm_version == 90 or sm_version == 89`:
    # fp8_batched_quantize_1x128_permute102) in every version read, NVIDIA/TensorRT-LLM@c6d3bb2a (spring 2025) and the
    # 1.x versions in the code index; SM120 (`per_token_quant_and_transform(mat1, need_permute102=True)`) in the 1.x
    # versions, whose defaults this engine carries (@c6d3bb2a raises NotImplementedError there). On SM100 the default
    # is BF16 maths, no quantise kernel: @c6d3bb2a dequantises the weight and runs an einsum (its padded
    # fp8_batched_quantize_1x128_permute102 + fp8_batched_gemm_trtllmgen path is commented out); the 1.x versions run
    # torch.bmm over mat2_dequant, and the newest quantise only under use_cute_dsl_blockscaling_bmm (cute_dsl_fp8_bmm_blackwell),
    # which ModelConfig leaves False
    MLA_BMM_QUANT_FAMILIES = ("ada", "hopper", "blackwell_sm120")

    def mla_bmm_quantised(self, family: str) -> bool:
        return family in self.MLA_BMM_QUANT_FAMILIES

    def step_tokens(self, gpu) -> int:
        """max_num_tokens = 8192 (LlmArgs / BuildConfig default), on every GPU (trtllm-bench picks its own per
        run: spec/engines/trtllm_bench.py)."""
        return DEFAULT_MAX_TOKENS

    def max_batch(self, gpu, kv_tokens=None, context_len: int = 0):
        """4096: the most trtllm-bench ever sets (tensorrt_llm/bench/build/tuning.py, finetune_setting:
        min(kv_cache_max_requests, 4096) / pp_size per micro-batch); the perf-overview rows it measured are
        priced at the limits it picks per run (spec/engines/trtllm_bench.py, measure.validate.bench_limits).
        trtllm-serve's own default max_batch_size is 2048 (TorchLlmArgs), which this does not yet distinguish."""
        return float(BATCH_CAP)

    def kv_formats(self, gpu, model=None) -> tuple[str, ...]:
        """kv_cache_config.dtype auto, fp8 or nvfp4 (trtllm-serve --kv_cache_dtype, NVIDIA/TensorRT-LLM#11487): FP8 where the
        GPU has FP8 math (Ada and newer), NVFP4 on Blackwell alone (docs/source/features/quantization.md, "NVFP4 KV Cache",
        1.3.0rc27); auto is the checkpoint's BF16 or FP16."""
        return ("bf16", "fp16") + (("fp8",) if gpu.supports("fp8") else ()) + (("nvfp4",) if "nvfp4" in gpu.fp4_formats else ())

    def own_allreduce(self, nbytes, n, family: str):
        """Its custom kernels up to the workspace at each TP size (AR_MAX_BYTES), over NVLink only (its
        custom kernels need it: NCCL on PCIe families)."""
        import numpy as np

        nbytes = np.asarray(nbytes, float)
        n = np.asarray(n, float)
        if family in PCIE_FAMILIES:
            return np.zeros(np.broadcast_shapes(nbytes.shape, n.shape), dtype=bool)
        # the limit at each GPU count (per plan in a search; -inf where TensorRT-LLM has none), then
        # one comparison at the messages' size
        lim = np.full(n.shape, -np.inf)
        for tp, most in AR_MAX_BYTES.items():
            lim[n == tp] = most
        lim[n > 8] = MNNVL_MAX_BYTES  # only an NVL72-class domain holds such a group (collective_time: inside it)
        return nbytes <= lim

    def oneshot_limit(self, n, family: str):
        """Its one-shot up to ONESHOT_GATHERED bytes gathered from the group (n x the message) on the families its
        table covers, TP 2-8, the faster of the two past it (never named); elsewhere, and for MNNVL's kernels beyond 8
        GPUs, the faster of the two at every size."""
        import numpy as np

        n = np.asarray(n, float)
        return np.where((n >= 2) & (n <= 8), ONESHOT_GATHERED.get(family, 0.0) / np.maximum(n, 1.0), 0.0), np.zeros(n.shape, dtype=bool)

    def moe_kernel(self, family: str, kernel: str, *, weight: str = "", ep: bool = False, gated: bool = True) -> str | None:
        """On Hopper, MXFP4 experts (gpt-oss) on its Triton MoE backend (TritonFusedMoE, on OpenAI's triton_kernels):
        MoeConfig.backend AUTO resolves to TRITON for GptOssForCausalLM on SM90 (tensorrt_llm/_torch/model_config.py
        resolve_moe_backend, 1.2+), and that is the kernel the per-engine table's `moe_torch_flow` w4a16_mxfp4 rows
        time (ai-dynamo/aiconfigurator collector/trtllm/collect_moe.py:434-442@095f58a sets moe_backend "triton" for
        gpt-oss on SM90, citing model_config.py:334-335@1.3.0rc20), so it is priced at those rows' fit (trtllm_w4a16),
        not at vLLM's triton_kernels rows', which run 2-2.5x faster from 1k tokens up. Every other format on its
        CUTLASS fused MoE, which AUTO resolves to otherwise (INT4 weight-only included: the collector runs it on
        SM90 with moe_backend "cutlass", collect_moe.py:456-479). A non-gated MoE (relu2, Nemotron-H) on that
        CUTLASS MoE at the kernel tables' own values: they were fitted on its non-gated rows (the H100 rows of
        kernels/moe.csv.gz), whose launches floor ~1.5x the gated ones' at per-tensor FP8 (kernel_tables.MOE_SOURCES).
        Elsewhere the kernel tables' own."""
        if family != "hopper":
            return None
        if kernel == "w4a16" and weight == "mxfp4":
            return "trtllm_w4a16"
        return "cutlass" if gated else None

    def moe_exchange(self, gpu, *, moe_tp):
        """All-to-all only where its NVLink one-sided all-to-all runs: MoE TP 1 on a multi-node NVLink domain
        (GB200/GB300 NVL72, scale_up_domain > 8), else the AllGather + ReduceScatter fallback (CommunicationFactory.
        create_strategy, tensorrt_llm/_torch/modules/fused_moe/communication/communication_factory.py, read in the code
        index: AllGatherReduceScatter where moe_tp_size != 1; NVLinkOneSided / NVLinkTwoSided need MNNVL, which
        MnnvlMemory.supports_mnnvl grants only on aarch64 hosts with every NVLink up, _mnnvl_utils.py; DeepEP only
        with TRTLLM_CAN_USE_DEEP_EP=1 and BF16 activations: "0" by default in the factory's 1.x versions, "1" only in its
        newest, which no campaign here ran; no InferenceX B200 script sets it).
        Its earlier select_alltoall_method_type (fused_moe_wide_ep.py) had the same MNNVL and DeepEP gates and kept
        the gather also where moe_ep_size <= top_k; not modelled (no NVL72 row runs attention DP)."""
        import numpy as np

        mnnvl = gpu.scale_up_domain > 8
        return np.where((np.asarray(moe_tp, float) <= 1) & mnnvl, "all_to_all", "gather")


TRTLLM = register_engine(TensorRTLLMEngine(
    name="trtllm", title="TensorRT-LLM", aliases=("tensorrt-llm", "tensorrt_llm", "trt-llm"),
    about="NVIDIA's engine, PyTorch backend (the kernel tables' own)", release="1.3.0rc1-1.3.0rc27", release_note="export's options at 1.4.0rc4",
    # CUDA only: "to perform inference efficiently on NVIDIA GPUs" (NVIDIA/TensorRT-LLM README.md)
    vendors=("nvidia",),
    # free_gpu_memory_fraction = 0.9 of the memory left after weights and activations (KvCacheConfig
    # docs); its GUARANTEED_NO_EVICT scheduler admits a request only with ISL + OSL reserved
    # (SchedulerConfig docs), so a running sequence holds its whole OSL
    kv_budget=("free", 0.90, 1.0),
    # GUARANTEED_NO_EVICT reserves ISL + OSL, so it admits no more than it can finish
    reserve=(1.0, float("inf")),
    # act_quant: AllReduceFusionOp.RESIDUAL_RMS_NORM_QUANT_FP8 / _QUANT_NVFP4 (modeling_llama.py) and
    # swiglu(..., quant_scale=down_proj.input_scale) in GatedMLP; attn_out: the attention op's FP8
    # out_scale; ar_norm: AllReduceFusionOp.RESIDUAL_RMS_NORM where TP > 1 (not modelled: its
    # hidden_size > 4096 gate)
    # rope_decode: decoderXQAImplJIT.cpp runImpl applyRoPEInXqaKernel (the GMMA kernel, FP8 KV on SM90)
    fusions=("act_quant", "attn_out", "ar_norm", "rope_decode", "pdl", "fp8_bmm", "routing", "mla_meta"),
    # the kernel tables' own: trtllm-gen FMHA/MLA kernels on Blackwell, FMHA-v2 and XQA on Hopper
    attention_kernels={},
    # TRTLLM_ENABLE_PDL, on by default from 1.2 (a run on an older build: measure.campaigns.trtllm_build): its norms, fused all-reduce+norm, quantisation, XQA /
    # trtllm-gen attention, MoE routing/finalize and CUTLASS GEMMs; not cuBLAS or NCCL: ~0.7
    pdl={"hopper": 0.7, "blackwell": 0.7, "blackwell_sm120": 0.7},
    # its own block-scale kernels (linear layers, and the CUTLASS MoE's DeepGEMM-derived ones): the tables'
    deepgemm=False,
    # its own FP8 linear (the kernel tables' rows)
    fp8_cutlass=False,
    # modeling_deepseekv3.py DeepseekV3MTP: eh_proj TensorParallelMode.ROW unless attention DP is on
    eh_proj_tp=True,
    # its MLA generation on SM90 is FlashMLA (aiconfigurator collector/trtllm/collect_mla.py:37-51@095f58a5, enable_flash_mla)
    flashmla_decode=("hopper",),
))
