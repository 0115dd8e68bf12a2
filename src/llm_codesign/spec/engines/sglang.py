"""SGLang: its documented defaults, read in sglang/srt/server_args.py (ServerArgs) and environ.py of the
released wheels of the measurement campaigns' versions (0.5.7+) unless a comment says otherwise."""
from __future__ import annotations

from llm_codesign.spec.engines.base import GIB, MIB, NO_INT8_GEMM_FAMILIES, Engine, cdna3_mxfp4, int8_w8a8, register_engine
from llm_codesign.spec.engines.vllm import custom_allreduce

# --max-prefill-tokens' default, the prefill batch's token budget and the step budget once chunked prefill is off
# (ServerArgs.max_prefill_tokens: int = 16384, python/sglang/srt/server_args.py@0.5.9)
MAX_PREFILL_TOKENS = 16384

# It turns FlashInfer's all-reduce + RMSNorm fusion on for these architectures on Hopper/Blackwell, on one
# node without attention DP (server_args.py, _handle_model_specific_adjustments:
# enable_flashinfer_allreduce_fusion); not with NCCL across nodes, which is not modelled apart
AR_NORM_ARCHS = ("DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM",
                 "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM", "KimiK25ForConditionalGeneration",
                 "Qwen3_5MoeForConditionalGeneration")


def graph_max_bs(gpu, tp_size):
    """SGLang's cuda_graph_max_bs where the launch sets none (ServerArgs._handle_gpu_memory_settings), by the memory the
    device reports (MiB) and tp_size (every GPU of a stage: attention TP x attention-DP ranks): below 20 GiB 8; below 35
    GiB 24 (tp_size < 4) or 80; below 60 GiB 32 or 160; below 90 GiB (H100) and below 160 GiB (H200) 256 or 512; above
    (B200, GB200, MI300X, MI355X) 512 (sglang/srt/server_args.py:936-998@0.5.9 wheel, the same rule at 0.5.5.post3
    :704-786, 0.5.8 / 0.5.8.post1 :904-966 and 0.5.12 :1426-1488, the builds the campaigns ran; 0.5.23 moves it to
    arg_groups/memory_hook.py:83-170, 48 / 160 below 35 GiB, as docs/modelling-notes.md#fixcap-capture read it; 0.5.2 capped
    160 / 256 / 512 by memory alone, cuda_graph_runner.py:165-211@0.5.2, the same 512 on MI355X). A decode batch above it
    runs without a graph
    (CudaGraphRunner.can_run: `cuda_graph_bs <= self.max_bs` with padding on, model_executor/cuda_graph_runner.py:385-407
    @0.5.9; under attention DP the ranks' largest). Broadcasts over tp_size."""
    import numpy as np

    mem, tp_size = gpu.memory_bytes / MIB, np.asarray(tp_size, float)
    if mem < 20 * 1024:
        return np.full_like(tp_size, 8.0)
    if mem < 35 * 1024:
        return np.where(tp_size < 4, 24.0, 80.0)
    if mem < 60 * 1024:
        return np.where(tp_size < 4, 32.0, 160.0)
    if mem < 160 * 1024:
        return np.where(tp_size < 4, 256.0, 512.0)
    return np.full_like(tp_size, 512.0)


# the capture below 35 GiB (tp_size < 4, else) at 0.5.23, the release export writes options for (data/engines/sglang.toml):
# 48 / 160, where the runs' releases capture 24 / 80 (arg_groups/memory_hook.py:83-170@0.5.23 wheel, as
# docs/modelling-notes.md#fixcap-capture reads it; the rest of graph_max_bs's rule unchanged there)
EXPORT_SMALL_GPU_BS = (48.0, 160.0)


def export_graph_max_bs(gpu, tp_size):
    """graph_max_bs at 0.5.23 (EXPORT_SMALL_GPU_BS below 35 GiB; the same rule above)."""
    import numpy as np

    mem, tp_size = gpu.memory_bytes / MIB, np.asarray(tp_size, float)
    if 20 * 1024 <= mem < 35 * 1024:
        return np.where(tp_size < 4, *EXPORT_SMALL_GPU_BS)
    return graph_max_bs(gpu, tp_size)


def static_fraction(gpu, tp, pp=1, adp=1, *, spec_method: str | None = None, chunk=None):
    """SGLang's default mem_fraction_static: (weights + KV pool) / GPU memory, what is left once it has
    reserved room for activations and CUDA graphs (ServerArgs._handle_gpu_memory_settings): reserved MiB
    = 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + 1024 x tp_size x pp / 8,
    with attention DP a further 3 x (and above a max batch of 300, 4.5 x) cuda_graph_max_bs x dp_size,
    at least 10 GiB on GPUs over 60 GiB, plus 2 GiB for EAGLE/MTP drafts (6 GiB for a separate draft
    model). SGLang's tp_size counts every GPU of a pipeline stage (attention TP x attention-DP ranks).
    Broadcasts over plan arrays."""
    import numpy as np

    mem = gpu.memory_bytes / MIB
    tp_size = np.asarray(tp, float) * np.asarray(adp, float)
    adp = np.asarray(adp, float)
    chunk = SGLANG.step_tokens(gpu) if chunk is None else np.asarray(chunk, float)
    bs = graph_max_bs(gpu, tp_size)
    reserved = 512.0 + np.maximum(chunk, 2048.0) * 1.5 + bs * 2.0 + tp_size * np.asarray(pp, float) / 8.0 * 1024.0
    reserved = reserved + np.where(adp > 1, bs * adp * 3.0 + np.where(bs > 300, bs * adp * 1.5, 0.0), 0.0)
    if mem > 60 * 1024:
        reserved = np.maximum(reserved, 10 * 1024.0)
    if spec_method and spec_method != "ngram":  # NGRAM loads no draft model (arg_groups/kv_cache_hook.py:204@0.5.23)
        reserved = reserved + (6 * 1024.0 if spec_method == "draft" else 2 * 1024.0)
    return np.round((mem - reserved) / mem, 3)


class SGLangEngine(Engine):
    # pp_size > 1 asserts speculative_algorithm is None (server_args.py:5136-5141@0.5.9, "Pipeline parallelism is not
    # compatible with overlap schedule, speculative decoding, mixed chunked prefill"); 0.5.23, the release export writes,
    # allows it on disaggregated prefill nodes alone, or EAGLE behind the experimental SGLANG_ENABLE_PP_SPEC
    # (arg_groups/validation_hook.py:119-165, check_pipeline_parallel_compat). newc9 #3: the frontier's best MI355X points
    # were PP2 with MTP, a launch that fails at start-up
    spec_pp_refusal = ("server_args.py:5136-5141@0.5.9 asserts speculative_algorithm is None for pp_size > 1; 0.5.23 allows "
                       "it on disaggregated prefill nodes alone")
    # 0.5.23's check_pipeline_parallel_compat (arg_groups/validation_hook.py:131-165): under PP the algorithm must be EAGLE,
    # not multi-layer, and without SGLANG_ENABLE_PP_SPEC the server disaggregation_mode "prefill"; --speculative-algorithm
    # NEXTN (our mtp) is promoted to EAGLE (arg_groups/speculative_hook.py:109-116), while EAGLE3 and STANDALONE (eagle3,
    # draft) fail the EAGLE assert on any server. So a disaggregated prefill pool runs PP with MTP (its draft unpriced, as
    # every prefill pool's: Engine.prefill_spec); the decode pool keeps the refusal (the assert's else branch)
    spec_pp_prefill = ("mtp",)
    # prefill batches run on their own: "Run prefill first if possible", no decodes mixed in unless
    # --enable-mixed-chunk (off by default, server_args.py:729; sglang 0.5.12 managers/scheduler.py:2578-2592)
    mixes_prefill = False
    # gpt-oss's experts on AITER with GateMode.INTERLEAVE: its runner sets it on gfx95 where the layer keeps its gate/up rows
    # interleaved (MoeRunnerConfig.gate_up_interleaved, default True: moe_runner/base.py:70@0.5.23) and
    # SGLANG_USE_AITER_MOE_GU_ITLV holds (default True: environ.py:990) (moe_runner/aiter.py:226-244), so AITER runs them
    # on group-32 FP8 from 256 tokens (aiter/fused_moe.py:791-795@e4048607)
    aiter_swiglu_high = "fp8"
    # gpt-oss's MXFP4 experts on Blackwell on MXFP8 activations: moe_runner_backend "auto" becomes "flashinfer_mxfp4" for
    # GptOssForCausalLM with an mxfp4 checkpoint where is_blackwell_supported (SM 10.x-12.x: server_args.py:1370-1372,
    # utils/common.py:246-252@0.5.9), and flashinfer_mxfp4_moe_precision defaults to "default" (server_args.py:499), whose
    # branch of Mxfp4MoEMethod.apply quantises the (dispatched: after the gather) BF16 hidden states with
    # mxfp8_quantize(x, False, alignment=hidden_size) before trtllm_fp4_block_scale_moe (layers/quantization/mxfp4.py:
    # 754-770@0.5.9, pip wheel; "bf16" only by --flashinfer-mxfp4-moe-precision bf16). The campaigns' SGLang Blackwell runs
    # are DeepSeek's and Qwen's: no measured run moves. Not on SM120, whose path is not read (its FlashInfer kernel is
    # picked per SM): BF16 there
    mxfp8_moe_families = ("blackwell",)
    # and never under speculative decoding, --enable-mixed-chunk or not: EAGLE, EAGLE3 (NEXTN, DeepSeek's MTP, is run as
    # EAGLE) and STANDALONE (a draft model) turn it off (server_args.py:2390-2395@0.5.9), NGRAM too (:2474)
    mixes_while_speculating = False
    # prompt lookup (--speculative-algorithm NGRAM) matches each request's last max_trie_depth (18) tokens in a C++ trie
    # (NgramCorpus.batch_get -> match_stateful, speculative/cpp_ngram/ngram_corpus.py:100-108@0.5.23 wheel) after a blocking
    # .cpu() of the last step's accepted tokens (NGRAMWorker._prepare_draft_tokens, speculative/ngram_worker.py:232-305):
    # its seconds add to each step, whatever the context (the trie's inserts run on its own thread, synchronize() :280).
    # The overlap loop stays on under NGRAM on CUDA (_handle_ngram turns it off on CPU alone, arg_groups/speculative_hook.py:
    # 66-70,1285-1292; the worker splices the last step's tokens because "Overlap mode processes results one iteration
    # behind", ngram_worker.py:95,237-243): the .cpu() holds step n+1's draft preparation and launch until step n's
    # kernels end, so the match runs with the GPU idle, while the scheduling and step n's result processing still run
    # under a step, as for every method (the step's fitted host costs, one step queued ahead of a new request). :464's
    # "NGRAM stays synchronous" is the grammar mask's barrier, not the loop (docs/modelling-notes.md#ngramO-v2-runner). Its per-request Python there and in _update_ngram_corpus
    # (:396-420), timed here with the C++ calls stubbed: 2.6-6.4 us a request, 5 (docs/modelling-notes.md#ngram-prompt-lookup);
    # the C++ match itself is not timed (no build here)
    ngram_host = (0.0, 5e-6, 0.0, 0.0)
    mtp_module_apart = True  # NEXTN's --speculative-draft-model-path (explore.export_engines.sglang writes it)
    # with ignore_eos and the radix cache off, PrefillAdder.add_one_req_ignore_eos reserves every running and
    # new request's whole remaining output (new_token_ratio 1.0; sglang 0.5.12 managers/schedule_policy.py:720-813, 839-840)
    reserves_all_ignoring_eos = True
    # a PD prefill server's load_balance_method "auto" is follow_bootstrap_room (server_args.py:1020-1031), which
    # sends a request to DP rank bootstrap_room % dp_size (managers/data_parallel_controller.py:587-596; sglang
    # 0.5.12); the room is an id the router draws at random per request (Dynamo 0.8.1's SGLang prefill worker:
    # dynamo/sglang/request_handlers/llm/prefill_handler.py:88-96, a random 63-bit room: handler_base.py:88-94), unless the request names
    # its rank. Up to 0.5.9 a PD prefill server reads "round_robin" as follow_bootstrap_room too (server_args.py:790-800
    # @0.5.8.post1, :817-826@0.5.9, "backward compatibility"), and the decode worker pulls the cache from rank
    # bootstrap_room % dp_size (disaggregation/common/conn.py:374@0.5.8.post1); 0.5.12 honours round_robin
    # (server_args.py:1013-1029 has no such fallback): `disagg --prefill-routing balanced` prices that
    routes_prefill_dp_at_random = True
    # its decode batch is every running request: update_running_batch retracts requests only where the KV cache runs
    # out (managers/scheduler.py:2898-2960), and chunked_prefill_size / max_prefill_tokens budget PrefillAdder's prompts
    # alone (:2674-2694); max_running_requests and the KV cache bound it (sglang 0.5.12)
    decodes_in_budget = False
    # the decode worker pre-allocates the KV of a request the router sent it beside the prefill (its bootstrap, before
    # the prefill may run: disaggregation/prefill.py:265-360, decode.py:731-1006), polls the transfers at the top of each
    # loop (decode.py:1753-1784, polling interval 1: server_args.py:805) and streams the first token before scheduling
    # that loop's decode step (decode.py:1646-1664, managers/scheduler_output_processor_mixin.py:91-106; sglang 0.5.12; builds
    # before 0.5.10 stream it a loop later: measure.campaigns.first_token_next_loop, serve.disagg.decode_admission's next_loop)
    first_token_on_kv_arrival = True
    # no attention-DP hold: the DP controller sends each request to a rank as it comes (round robin or by load,
    # managers/data_parallel_controller.py:571-606) and a rank without work runs an idle batch beside the others
    # (managers/scheduler_dp_attn_mixin.py:131-220, prepare_mlp_sync_batch_raw; sglang 0.5.12)
    holds_adp_requests = False
    # one chunked request kept across its micro-batches, with no option to ask ("In the context pipeline parallelism, after
    # the last chunk, the current microbatch still track outdated chunked_req", srt/managers/scheduler.py:2463-2466@0.5.11
    # wheel, the same line at 0.5.5.post2 and 0.5.9; docs.sglang.io "Pipeline Parallelism for Long Context": "Different
    # chunks of the same request can be processed simultaneously by different nodes")
    pipelines_request_chunks = True
    # its fitted per-request cost is not front-end work: the clean sample's workers skip SGLang's tokenizer (Dynamo's front
    # end tokenises: ai-dynamo 0.9.0 dynamo/sglang/args.py:525-534), it does not grow with the prompt, and it is paid on top
    # of the wait in both campaigns (docs/modelling-notes.md#sglang-request-cost, #request-overhead-overlap): added as before
    request_cost_overlaps_wait = False
    # that cost (fitted.toml [default.ttft_overhead_s] sglang, 24.9 ms) is fitted on MoE runs alone: every SGLang row of
    # the shipped aggregated runs is one (counted 2026-12-07: clean sample DeepSeek-R1 144, DeepSeek-V3 31, GLM-5 38,
    # Qwen3.5-397B 156; InferenceX DeepSeek-R1-0528 325 on Blackwell, 238 on MI355X), behind Dynamo's or InferenceX's
    # front end; its mechanism is open (docs/modelling-notes.md#sglang-request-cost)
    request_cost_fitted_on = ("moe",)
    request_cost_runs = "DeepSeek-R1/V3, GLM-5 and Qwen3.5-397B on Blackwell and MI355X"

    def triton_attention(self, model, gpu, kv: str | None) -> bool:
        """Its Triton backend where its default kernels take none of the model's head sizes on an NVIDIA GPU (head_dims.
        sglang_fallback: the --attention-backend triton its export writes), for every layer: one backend serves the
        model (ServerArgs.attention_backend). On the families its kernel table times (head_dims.TRITON_PRICED_FAMILIES:
        Hopper); elsewhere the fast kernel, as the head-size note says. On AMD GPUs AITER's kernels are priced
        (export_engines.sglang.aiter_attention). One per element where lint prices shapes whose head sizes are arrays."""
        import numpy as np

        from llm_codesign.spec.engines.head_dims import TRITON_PRICED_FAMILIES, head_dim_support
        from llm_codesign.spec.kinds import GQA

        hds = [np.asarray(layer.attn.head_dim) for layer, _ in model.groups if isinstance(layer.attn, GQA)]
        if gpu.family not in TRITON_PRICED_FAMILIES or not hds:
            return False
        out = np.vectorize(lambda *h: any(head_dim_support("sglang", gpu, int(x), kv) for x in h), otypes=[bool])(*hds)
        return bool(out) if out.ndim == 0 else out

    def graphs_default(self, gpu, tp_size, *, k=0.0, max_running=float("inf")):
        """Padded graphs up to graph_max_bs (its memory and TP rule), speculative or not: the spec list
        (_generate_cuda_graph_batch_sizes, server_args.py:1079-1107@0.5.9) differs below the cap, which padding hides."""
        return graph_max_bs(gpu, tp_size), True

    def export_graphs_default(self, gpu, tp_size, *, k=0.0, max_running=float("inf")):
        """graphs_default at 0.5.23, the release export writes for (export_graph_max_bs)."""
        return export_graph_max_bs(gpu, tp_size), True

    def step_tokens(self, gpu) -> int:
        """chunked_prefill_size = 2048 below 35 GiB, 4096 below 60 GiB, 8192 below 160 GiB, else 16384
        (_handle_gpu_memory_settings: "A100 (40GB), L40", "H20, H200", "B200, MI300"), of the memory the
        device reports."""
        mem = gpu.memory_bytes
        return 2048 if mem < 35 * GIB else 4096 if mem < 60 * GIB else 8192 if mem < 160 * GIB else 16384

    def launch_step_tokens(self, gpu, chunked_prefill=None):
        """With chunked prefill off (`chunked_prefill` False; arrays ok) the prefill batch's budget, MAX_PREFILL_TOKENS,
        as `import` reads a launch with --chunked-prefill-size -1 (frev9 #2); else step_tokens."""
        if chunked_prefill is None:
            return self.step_tokens(gpu)
        import numpy as np

        out = np.where(np.asarray(chunked_prefill, bool), self.step_tokens(gpu), MAX_PREFILL_TOKENS)
        return int(out) if out.ndim == 0 else out

    def rank_step_tokens(self, max_num_tokens, adp):
        """Under attention DP a rank's chunk is chunked_prefill_size // dp_size (ServerArgs._handle_data_parallelism,
        server_args.py:1929-1937@0.5.8.post1, :2117@0.5.9, :3070@0.5.12), after the default of step_tokens is set
        (_handle_gpu_memory_settings runs first: :710 and :727@0.5.8.post1): the server's figure, given or default,
        is the instance's."""
        import numpy as np

        return np.floor(np.asarray(max_num_tokens, float) / np.asarray(adp, float))

    def max_batch(self, gpu, kv_tokens=None, context_len: int = 0):
        """max_running_requests = the request pool, int(KV tokens / context_len x 512) clipped to
        [2048, 4096], and at most half the KV tokens (sglang/srt/model_executor/model_runner.py,
        max_num_reqs; scheduler.py); context_len is the model's context (its max_position_embeddings),
        and 4096 where it is not known."""
        import numpy as np

        if kv_tokens is None or not context_len:
            return 4096.0
        tok = np.asarray(kv_tokens, float)
        return np.minimum(np.clip(np.floor(tok / context_len * 512.0), 2048.0, 4096.0), np.maximum(np.floor(tok / 2.0), 1.0))

    def kv_formats(self, gpu, model=None) -> tuple[str, ...]:
        """--kv-cache-dtype's choices (arg_groups/fields/model.py:197-221@0.5.23, the version its export writes): auto (the
        checkpoint's BF16 or FP16), bf16, fp8_e4m3, fp8_e5m2 (on ROCm the GPU's own FP8, E4M3FNUZ on CDNA3: model_executor/
        model_runner.py:2357-2366@0.5.14) and nvfp4, which needs Blackwell (SM100 or SM120) and CUDA: "KV4 is not tested on
        non-CUDA platforms" (arg_groups/kv_cache_hook.py:124-131,318@0.5.23). Its MX-style FP4 cache (fp4_e2m1 up to 0.5.14,
        fp4_mx_block16 since) is refused: its attention backends read it as BF16 (a "plain" BF16 access, layers/quantization/
        fp4_kv_cache_quant_method.py:932-935, 1008-1011@0.5.23), which the pool makes by dequantising the layer's whole buffer,
        every slot it holds, on each read (mem_cache/memory_pool.py:2836-2850, 3677-3711): a pass over the cache's capacity
        per layer and step that the step model, which prices the tokens attended, has no term for."""
        return ("bf16", "fp16", "fp8") + (("nvfp4",) if gpu.vendor == "nvidia" and "nvfp4" in gpu.fp4_formats else ())

    def precision_refusal(self, prec, gpu, *, moe: bool | None = True):
        # MXFP4 on CDNA3 (gfx942), whatever the model: a Quark MXFP4 checkpoint's linears (QuarkW4A4MXFP4) quantise the
        # input per 1x32 and call AITER's Triton gemm_afp4wfp4 on every GPU, no emulation branch (quantization/quark/schemes/
        # quark_w4a4_mxfp4.py:116,130@0.5.9; apply_weights @02bd1130), which asserts is_fp4_avail, gfx950 or gfx1250 only
        # (aiter/ops/triton/gemm/basic/gemm_afp4wfp4.py:142, utils/_triton/arch_info.py:19-20@e4048607); gpt-oss's mxfp4
        # checkpoint is refused off gfx95x at load ("Current platform ... not support mxfp4 computation",
        # layers/quantization/mxfp4.py:224-237@0.5.9, :324-333@0.5.23)
        if int8_w8a8(prec) and gpu.family in NO_INT8_GEMM_FAMILIES:  # sgl-kernel's int8_scaled_mm: SM75-SM90 only
            return ("activation_dtype", "int8", f"a format SGLang runs on {gpu.name} with INT8 weights: sgl-kernel's "
                    "int8_scaled_mm has no arm past SM90 (\"No implemented int8_scaled_mm for current compute capability\"); "
                    "bf16 runs them weight-only (W8A16), or fp8 natively")
        said = cdna3_mxfp4(prec, gpu)
        if said is None:
            return self._cdna3_nvfp4(prec, gpu, moe=moe)
        who = {True: "--backend atom or vllm runs a MoE's MXFP4 experts weight-only (Triton)",
               False: "--backend vllm runs it emulated (dequantised to BF16 each forward)"}.get(
            moe, "--backend atom or vllm runs a MoE's MXFP4 experts weight-only (Triton), vllm a dense model's emulated")
        return (*said, f"a format SGLang runs on {gpu.name}: it has no MXFP4 GEMM off gfx950 (its Quark MXFP4 linears call "
                       f"AITER's gemm_afp4wfp4, which asserts an FP4 GPU; gpt-oss's mxfp4 refuses at load); {who}, or fp8 runs natively")

    def _cdna3_nvfp4(self, prec, gpu, *, moe: bool | None = True):
        # NVFP4 on CDNA3 (gfx942): modelopt_fp4 needs compute capability 100 (ModelOptFp4Config.get_min_capability,
        # layers/quantization/modelopt_quant.py); SGLang's ROCm path is petit_nvfp4 (W4A16 through the petit_kernel package,
        # gfx90a/gfx942), whose get_quant_method gives a method to LinearBase layers only and None to anything else, so a
        # MoE's experts get none (layers/quantization/petit.py PetitNvFp4Config.get_quant_method@059cddc1). A dense model's
        # linears run it, priced W4A16 (spec.precision.executable); the export writes petit_nvfp4
        if moe is not True or gpu.vendor != "amd" or gpu.family != "cdna3" or prec.weight is None or prec.weight.name != "nvfp4":
            return None
        return ("weight_dtype", "nvfp4", f"a format SGLang runs on {gpu.name} for a MoE: its ROCm NVFP4 path, petit_nvfp4, covers "
                                         "linear layers only (its experts get no method); fp8 runs natively")

    def own_allreduce(self, nbytes, n, family: str):
        """vLLM's custom all-reduce's sizes and limit, the limit itself included: should_custom_ar takes inp_size <=
        max_size, 8 MiB (srt/distributed/device_communicators/custom_all_reduce.py:42,273,280@0.5.14), where vLLM's
        takes less than it. Its H100 rows of exactly 8 MiB run the custom kernel: 29 / 45 / 63 us at 2 / 4 / 8 GPUs
        against vLLM's 45 / 54 / 51 us on NCCL there (data/measurements/kernels_hopper/comm.csv.gz)."""
        return custom_allreduce(nbytes, n, family, at_limit=True)

    def kv_fraction(self, gpu, plan, *, chunk, spec_method: str | None = None, draft_len=None):
        """mem_fraction_static for the plan (static_fraction), reserving a draft's room only where one
        runs (`draft_len` > 0: a sweep's k = 0 points run none)."""
        import numpy as np

        tp, pp, _, _, adp, _ = plan.arrays()
        f = static_fraction(gpu, tp, pp, adp, spec_method=spec_method, chunk=chunk)
        if spec_method is not None and draft_len is not None:
            f = np.where(np.asarray(draft_len) > 0, f, static_fraction(gpu, tp, pp, adp, chunk=chunk))
        return f

    def ar_norm_fused(self, architecture: str, *, adp, nbytes, n, family: str):
        """FlashInfer's all-reduce + RMSNorm for AR_NORM_ARCHS without attention DP; none otherwise."""
        import numpy as np

        if architecture in AR_NORM_ARCHS:
            return self._fusable_allreduce(nbytes, n, family) & (np.asarray(adp) <= 1)
        return super().ar_norm_fused(architecture, adp=adp, nbytes=nbytes, n=n, family=family)

    def dequantised_mla_products(self, family: str) -> tuple[str, ...]:
        """On gfx942 (CDNA3) AITER's FP8 batched GEMM is not built (gfx95 only), so o x W_UV still casts and scales its FP8
        weight at every decode step in today's build while q x W_UK runs the FP8 Triton kernel under graph capture
        (sglang models/deepseek_common/attention_forward_methods/forward_mla.py:317-343, 585-600@0.5.12;
        docs/modelling-notes.md#sglang-rocm-builds); elsewhere as its build's fusions say."""
        both = super().dequantised_mla_products(family)
        return both if both or family != "cdna3" else ("uv",)

    def moe_kernel(self, family: str, kernel: str, *, weight: str = "", ep: bool = False, gated: bool = True) -> str | None:
        """On Hopper (sglang 0.5.12, sglang/srt/): block-scaled FP8 on its Triton fused MoE (DeepGEMM's grouped
        kernels run only with a DeepEP, Mooncake or NIXL all-to-all, not its default, "none", server_args.py:613-622,
        nor a deployment option here; Fp8MoEMethod.is_deepgemm_moe_runner_backend_enabled, layers/quantization/
        fp8.py:842-856; create_moe_runner, fp8.py:1631-1650), as BF16 and FP8 are (unquant.py:373-388);
        MXFP4 (gpt-oss) on OpenAI's triton_kernels where EP is 1 (server_args.py:2098-2116), on its Triton
        fused MoE otherwise (mxfp4.py:1002-1014); INT4 on Marlin (gptq.py GPTQMarlinMoEMethod). Elsewhere the
        kernel tables' own."""
        if family != "hopper":
            return None
        if kernel == "w4a16" and weight == "mxfp4":
            return "sglang_triton" if ep else "triton_kernels"
        if kernel == "w4a16":
            return "marlin"
        return "sglang_triton"


SGLANG = register_engine(SGLangEngine(
    name="sglang", title="SGLang",
    about="CUDA and ROCm (AITER's kernels on Instinct GPUs)", release="0.5.7-0.5.23",
    # weights and KV cache share mem_fraction_static of the GPU, which it derives from the GPU and the plan
    # (static_fraction, kv_fraction; 0.88 is the fraction where no plan is given); pages are allocated as
    # tokens arrive, so a sequence holds ISL + OSL/2 on average in steady state
    kv_budget=("static", 0.88, 0.5),
    # reserves new_token_ratio of each request's remaining output, clipped at 4096 tokens; the ratio starts
    # at 0.7 and decays within 600 steps to 0.7 x 0.14 = 0.098, where it stays while nothing is retracted
    # (SGLANG_INIT_NEW_TOKEN_RATIO, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS,
    # SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION in sglang/srt/environ.py)
    reserve=(0.098, 4096.0),
    # a static-scale quantise kernel of its own before each FP8/FP4 GEMM; its all-reduce + RMSNorm fusion
    # is per architecture (AR_NORM_ARCHS, ar_norm_fused); pdl: its PDL launches (`pdl` below)
    fusions=("pdl", "fp8_bmm", "routing"),
    # Blackwell: trtllm-gen kernels for GQA (0.5.7+) and MLA (trtllm_mla, 0.5.4+), 1.0; DSA decode on
    # FlashMLA's FP8 decode kernel, 1.2 (1.0-1.6; FlashMLA README: sparse decode "not really optimized yet"
    # on B200, 350 of H800's 410 TFLOPS). Hopper: FlashAttention-3 for MLA prefill, 1.07 (the sources vllm.py
    # cites; attention_backend defaults in server_args.py), GQA prefill and decode priced as FA3's kernel (fa3_prefill,
    # fa3_decode); MLA decode on FA3's MLA path
    # as fast as TensorRT-LLM's with a BF16 cache: the H100 per-engine MLA table's generation rows (aiconfigurator
    # 0.12.0, SGLang 0.5.14 `flash_attention` = its fa3 backend, collector/sglang/collect_mla.py:61-79) run 1.02x
    # TensorRT-LLM's at the same 1,448 shapes (IQR 0.92-1.06), so 1.0. With an FP8 cache they run 1.4x at short
    # contexts to ~10x at 8k+ (a cost growing with the context: not a factor, not modelled)
    attention_kernels={"blackwell": {("dsa", "decode"): 1.2},
                       "hopper": {("mla", "prefill"): 1.07}},
    # its default attention backend on Hopper for MHA/GQA is fa3 (server_args.py _get_default_attn_backend:4433-4437@0.5.14,
    # is_hopper_with_cuda_12_3 without multi-branch speculation), whose extend runs flash_attn_with_kvcache over its page-size-1
    # cache (layers/attention/flashattention_backend.py forward_extend:1042@0.5.14, the query cast to FP8 on an FP8 cache)
    fa3_prefill=("hopper",),
    # its fa3 backend's flash_attn_with_kvcache (layers/attention/flashattention_backend.py forward_decode@0.5.14: num_splits 0,
    # the kernel's own split heuristic; an FP8 cache with the query cast to FP8 first, :1382-1387), page size 1
    fa3_decode=("hopper",),
    # engine.py sets TRTLLM_ENABLE_PDL=1; sgl-kernel norms and FlashInfer attention/MoE launch with PDL,
    # not cuBLAS, silu_and_mul or its custom all-reduce: ~0.25
    pdl={"hopper": 0.25, "blackwell": 0.25, "blackwell_sm120": 0.25},
    # SGL_ENABLE_JIT_DEEPGEMM, on by default on SM90 (server_args.py), for its dense GEMMs (its MoE's: moe_kernel)
    deepgemm=True,
    # Fp8LinearMethod's per-tensor path: sgl_kernel fp8_scaled_mm (its per-engine GEMM rows)
    fp8_cutlass=True,
    # models/deepseek_nextn.py: eh_proj an nn.Linear, whole on every GPU
    eh_proj_tp=False,
))
