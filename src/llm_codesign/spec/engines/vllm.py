"""vLLM (V1 engine, OpenAI server): its documented defaults, read in the released wheels of the
measurement campaigns' versions (0.11-0.14) unless a comment says otherwise."""
from __future__ import annotations

from dataclasses import replace

from llm_codesign.spec.engines.base import (
    CDNA_FAMILIES,
    GIB,
    NO_INT8_GEMM_FAMILIES,
    PCIE_FAMILIES,
    Engine,
    cdna3_mxfp4,
    int8_w8a8,
    register_engine,
)

# Custom all-reduce for world sizes 2, 4, 6 and 8 with every GPU peer-to-peer reachable (any two GPUs,
# NVLink or PCIe, or a fully connected NVLink/xGMI set), inputs below max_size = 8 MiB
# (vllm/distributed/device_communicators/custom_all_reduce.py CustomAllreduce.__init__ max_size=8192*1024
# and should_custom_ar: inp_size < max_size); NCCL beyond. Inside it the kernel is one-shot or two-shot
# (csrc/custom_all_reduce.cuh: one-shot at world size 2, below 512 KiB up to 4 GPUs and below 256 KiB up
# to 8), switched by size whatever either costs (oneshot_limit, TWOSHOT_FROM_KIB); on Blackwell torch symmetric memory
# takes the larger inputs (SYMM_CUSTOM_MAX_MIB). SGLang's custom_all_reduce.py is the same code.
CUSTOM_AR_SIZES = (2, 4, 6, 8)
CUSTOM_AR_MAX_BYTES = 8.0 * 2.0**20
TRTLLM_DECODE_TOKENS = 256  # its FlashInfer backend takes trtllm-gen decode kernels up to this many decode tokens
# The largest all-reduce input (MiB) its FlashInfer all-reduce + RMSNorm fusion pass takes, per world size, on SM90 and
# SM100 (vllm/compilation/passes/fusion/allreduce_rms_fusion.py:54-70 FI_ALLREDUCE_FUSION_MAX_SIZE_MB@0.19.0; the pass
# applies only to compiled ranges of at most that many tokens, is_applicable_for_range, :852-856). SM103 (B300) takes
# 2 MiB at 8 GPUs and 64 at 4; a GPU family does not tell them apart, so Blackwell is priced at SM100's
FI_AR_NORM_MAX_MIB = {"hopper": {2: 64.0, 4: 2.0, 8: 0.5}, "blackwell": {2: 64.0, 4: 32.0, 8: 1.0}}
# With torch symmetric memory on (VLLM_ALLREDUCE_USE_SYMM_MEM, default "1": envs.py:1410-1411@0.11.0, :1493@0.15.1,
# :1480@0.19.0) its custom all-reduce takes inputs below CUSTOM_ALL_REDUCE_MAX_SIZES per capability and world size only
# (custom_all_reduce.py:115-119, all_reduce_utils.py:30-43@0.11.0), and CudaCommunicator.all_reduce passes the rest to
# SymmMemCommunicator below SYMM_MEM_ALL_REDUCE_MAX_SIZES (all_reduce_utils.py:45-56; symm_mem.py:96-104), NCCL beyond
# (cuda_communicator.py:121-160@0.11.0); the SM100 rows are the same in 0.15.1 and 0.19.0. SM103 (B300) has rows of its
# own from 0.19.0 (custom 4 MiB, symmetric memory 4-64 MiB) and none before (custom below 8 MiB, then NCCL): a GPU family
# does not tell them apart, so Blackwell is priced at SM100's. Hopper's rows (custom below 8 MiB up to 4 GPUs, 256 KiB at
# 8) are not applied: the per-engine H100 table's vLLM rows were fitted as the custom kernel's (a lead, see
# docs/modelling-notes.md#vllm-allreduce-dispatch)
SYMM_CUSTOM_MAX_MIB = {"blackwell": {2: 2.0, 4: 2.0, 6: 1.0, 8: 1.0}}
SYMM_MEM_MAX_MIB = {"blackwell": {2: 8.0, 4: 32.0, 6: 128.0, 8: 128.0}}
# Its custom kernel's launcher runs the one-stage kernel at two GPUs and below 512 KiB up to 4 GPUs / 256 KiB up to 8,
# the two-stage one (reduce-scatter, a fenced barrier, all-gather) otherwise (csrc/custom_all_reduce.cuh; FlashInfer's
# port, include/flashinfer/comm/vllm_custom_all_reduce.cuh:476-487@fb28d72), whatever either costs and on every
# architecture (no capability in the switch: "Threshold is different for A100 and H100", its TODO at :474). Priced so on
# TWOSHOT_FAMILIES (oneshot_limit); elsewhere the faster of the two
TWOSHOT_FROM_KIB = {4: 512.0, 8: 256.0}
TWOSHOT_FAMILIES = ("hopper", "blackwell")


def _per_world(table: dict, n, default: float = 0.0):
    """`table`'s value (MiB) per world size, as bytes for each element of `n`; `default` elsewhere (everywhere for an
    empty table)."""
    import numpy as np

    n = np.asarray(n, float)
    if not table:
        return np.full(n.shape, default)
    return np.select([n == k for k in table], [v * 2.0**20 for v in table.values()], default)


def custom_allreduce(nbytes, n, family: str, *, at_limit: bool = False):
    """Where vLLM's custom all-reduce (and SGLang's copy of it) runs instead of NCCL, as a boolean array:
    CUSTOM_AR_SIZES GPUs under CUSTOM_AR_MAX_BYTES (`at_limit`: up to it, SGLang's test), at two GPUs only where
    they sit on PCIe."""
    import numpy as np

    nbytes = np.asarray(nbytes, float)
    n = np.asarray(n, float)
    ok = np.isin(n, CUSTOM_AR_SIZES) & ((nbytes <= CUSTOM_AR_MAX_BYTES) if at_limit else (nbytes < CUSTOM_AR_MAX_BYTES))
    return ok & (n == 2) if family in PCIE_FAMILIES else ok


def _large_gpu(gpu) -> bool:
    """vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: GPUs with >= 70 GiB other than A100."""
    return gpu.memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower()


def _amd_nvfp4(prec, gpu, *, moe: bool | None = True) -> str | None:
    """vLLM's NVFP4 (a ModelOpt checkpoint, modelopt_fp4) on an AMD GPU, CDNA3 and CDNA4 alike: its linears' one ROCm kernel is
    EmulationNvFp4LinearKernel (_POSSIBLE_NVFP4_KERNELS[ROCM], model_executor/kernels/linear/__init__.py:592-611@0.33.0, the
    same at 0.24.0), which QDQs the input and dequantises the whole weight to BF16 each forward before torch.matmul
    (run_nvfp4_emulations, layers/quantization/utils/nvfp4_emulation_utils.py:750-776); a MoE's experts fall through
    select_nvfp4_moe_backend to EMULATION (fused_moe/oracle/nvfp4.py:191-320: Marlin's experts need CUDA,
    experts/marlin_moe.py:592-594), whose Triton kernel dequantises each 4-bit tile in the GEMM (nvfp4_emulation_moe.py:
    88-110, 334-362). No FP4 matrix-core path on gfx950 either: CDNA4's FP4 is MXFP4, not NVFP4's 16-element FP8 scales."""
    if gpu is None or gpu.vendor != "amd" or prec is None or "nvfp4" not in (prec.weight.name, prec.attn.name):
        return None
    experts = ("its experts on its Triton emulation MoE, 4-bit tiles dequantised in the GEMM (priced W4A16), the other linears "
               if moe is not False else "its linears ")
    return (f"vLLM has no NVFP4 kernel on {gpu.name} (ROCm): it emulates it, {experts}dequantised to BF16 each forward before a "
            "BF16 GEMM (priced so: slower than BF16; fp8 runs natively" + (", mxfp4 on the MI355X's FP4 cores)" if gpu.supports("fp4") else ")"))


class VLLMEngine(Engine):
    # out of blocks for a running request's next token, Scheduler.schedule pops the newest running request
    # (`self.running.pop()` under FCFS), frees its blocks, sets num_computed_tokens = 0 and prepends it to the waiting
    # queue, which is not scheduled in a step that preempted (`if not preempted_reqs`): it recomputes its prompt and
    # output so far once blocks free (vllm/v1/core/sched/scheduler.py Scheduler.schedule, _preempt_request@00024d31)
    recomputes_evicted = True
    # its per-request cost is the OpenAI server's front end, before EngineCore's queue: JSON parsing and the HF tokenizer
    # in the API process (default.toml [default.ttft_overhead_s]; Dynamo's front end tokenises on its own task,
    # aiconfigurator@095f58a5 backend_templates/vllm/run.sh.j2:15)
    request_cost_overlaps_wait = True
    # with chunked prefill off SchedulerConfig._verify_args refuses a launch whose max_num_batched_tokens is under
    # max_model_len ("... makes vLLM reject longer sequences", vllm/config/scheduler.py): no prompt past the budget is served
    whole_prompt_refusal = ("serves no longer prompt: its SchedulerConfig refuses a launch whose max_num_batched_tokens is "
                            "under max_model_len", "--max-num-batched-tokens", "--enable-chunked-prefill")
    # max_model_len bounds the prompt and its generated tokens together (the OpenAI server answers 400 past it), so the
    # budget holds the whole request: SchedulerConfig.verify_max_model_len, vllm/config/scheduler.py:317-329@0.33.0
    whole_request_in_budget = True
    # its gather moves the activations quantised: the naive DP/EP prepare (allgather_reducescatter's) quantises the hidden
    # states to the experts' format, then dispatches them with their scales (model_executor/layers/fused_moe/prepare_finalize/
    # naive_dp_ep.py:16-52,124-131@0.19.0). Not modelled: the experts kernels that take BF16 and quantise themselves
    # (expects_unquantized_inputs: its CUTLASS and gpt-oss Triton experts, FlashInfer's CUTLASS at block FP8)
    gathers_quantised = True
    # max_cudagraph_capture_size from max_num_seqs where unset (graphs_default, vllm/config/vllm.py:2447-2470@0.33.0), and
    # every export writes max-num-seqs = the rank's batch (export_engines.base.launch_batch)
    capture_from_batch_cap = True
    # MXFP4 experts (gpt-oss) on SM100 by default on FlashInfer's TRTLLM-Gen MoE with BF16 activations, SM100_FI_MXFP4_BF16:
    # MXFP8 activations only with VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 (get_mxfp4_backend, vllm/model_executor/layers/
    # quantization/mxfp4.py@007d5005; its log line: "For faster performance on SM100, consider setting
    # VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1"), which no campaign here records
    mxfp8_moe_families = ()
    # prompt lookup (speculative-config method "ngram") runs on the GPU in the release the exports write, async scheduling
    # kept: 0.33.0 takes Model Runner V2 by default (VllmConfig.use_v2_model_runner: True unless VLLM_USE_V2_MODEL_RUNNER
    # says otherwise or a feature it lacks is asked for, and ngram is not one, config/vllm.py:731-767,3053-3087@0.33.0
    # wheel), whose speculator for "ngram" and "ngram_gpu" alike is NgramGPUSpeculator (v1/worker/gpu/spec_decode/
    # __init__.py:87-92, SpeculativeConfig.use_ngram, config/speculative.py:2185-2186): two Triton kernels in the step, a
    # scan of each request's context and a finalise (v1/worker/gpu/spec_decode/ngram/speculator.py:216-279), no host
    # sync. The async-scheduling refusal for ngram applies to the V1 runner alone (`if not self.use_v2_model_runner`,
    # config/vllm.py:1651-1666), so the loop keeps its host a step ahead (:1685-1719) as for every other method. No host
    # proposer time is added to the step; the two kernels are priced as a memory-bound pass over each request's int32
    # token ids in two launches (ngram_gpu_scan; serve.aggregated.ngram_scan_time), their launches under the host's lead
    # not (docs/modelling-notes.md#ngramO-v2-runner). The V1 runner's host matcher
    # (VLLM_USE_V2_MODEL_RUNNER=0: NgramProposer's numba scan after the step's sync, async scheduling off) was timed by
    # benchmarks/ngram_host_cost.py, ~20 us + b (1.6 us + 6 ns b + 1.4 ns ctx); not the default, not priced
    ngram_host = (0.0, 0.0, 0.0, 0.0)
    ngram_gpu_scan = True

    def runs_plans(self, plan, *, moe: bool = True):
        """A MoE's experts expert-parallel over every GPU of a stage or tensor-parallel over them, never EP x MoE-TP:
        FusedMoEParallelConfig.make flattens TP across the DP ranks and, with --enable-expert-parallel, sets ep_size to that
        whole width and the experts' tp_size to 1, else ep_size 1 (vllm/model_executor/layers/fused_moe/config.py@00c1c6a2);
        the exporter's refusal (explore/export_engines/vllm.py). Every campaign row it ran with EP has EP = TP x DP."""
        return experts_over_stage(plan, moe=moe)

    def refused_plan(self, one):
        """The experts expert-parallel over the whole stage (--enable-expert-parallel), the attention side unchanged."""
        return experts_over_stage_refusal(one)

    def graphs_default(self, gpu, tp_size, *, k=0.0, max_running=float("inf")):
        """Padded graphs up to max_cudagraph_capture_size / (1 + k) requests: where unset it is min(max_num_seqs x (1 + k)
        x 2, 1024 on compute capability 10.x (B200, B300, GB200, GB300), else 512) tokens, capped by
        max_num_batched_tokens (VllmConfig._set_cudagraph_sizes, vllm/config/vllm.py:2447-2470@0.33.0 wheel, the release
        the exports write; with a draft the decode sizes n x (1 + k) up to it, :2487-2546). Up to 0.19 the ceiling is 512
        on every GPU (vllm/config/vllm.py:1388-1403@0.19.0 wheel; 0.11 and 0.15 not read: their runs' batches are 256 or
        fewer, below either): no shipped row lies between the two. A batch
        above it runs without CUDA graphs ("If batch size > largest cudagraph_capture_sizes, cudagraph will not be used",
        :2443). max_num_seqs: `max_running`, else max_batch's default; the step budget's cap is not priced (every
        default budget here is 2,048 tokens or more)."""
        import numpy as np

        q = 1.0 + np.asarray(k, float)
        seqs = self.batch_limit(gpu, max_running)  # the launch's max_num_seqs, else the default
        ceiling = 1024.0 if gpu.family == "blackwell" else 512.0
        return np.floor(np.minimum(seqs * q * 2.0, ceiling) / q), True

    def step_tokens(self, gpu) -> int:
        """max_num_batched_tokens = 8192 on GPUs with >= 70 GiB other than A100, else 2048
        (EngineArgs.get_batch_defaults)."""
        return 8192 if _large_gpu(gpu) else 2048

    def max_batch(self, gpu, kv_tokens=None, context_len: int = 0):
        """max_num_seqs = 1024 on GPUs with >= 70 GiB other than A100, else 256 (EngineArgs.get_batch_defaults)."""
        return 1024.0 if _large_gpu(gpu) else 256.0

    def batch_limit(self, gpu, stated=float("inf"), kv_tokens=None, context_len: int = 0):
        """A stated --max-num-seqs in place of the default (max_batch), above it too: EngineArgs keeps a given max_num_seqs
        and defaults only an unset one (_set_default_max_num_seqs_and_batched_tokens_args, engine/arg_utils.py:3164-3181@0.33.0
        wheel), and SchedulerConfig takes any from 1 up to max_num_batched_tokens, refusing a launch above it
        (config/scheduler.py:62, 331-336), which budget_batch's bound prices; the KV cache bounds it as every cap."""
        import numpy as np

        stated = np.asarray(stated, float)
        return np.where(np.isfinite(stated), stated, self.max_batch(gpu))

    def budget_batch(self, max_num_tokens, draft_len, pp):
        """As Engine.budget_batch: Scheduler.schedule takes its running requests in order while token_budget
        (max_num_batched_tokens) lasts, each its 1 + draft tokens (v1/core/sched/scheduler.py:343-377), skipping one
        in flight in another pipeline micro-batch (:347-352); and where max_num_seqs is left to its default it is
        lowered to the budget (engine/arg_utils.py:2014-2016), so never more than the budget run over all the
        micro-batches (vllm 0.15.1; the same in 0.19.0)."""
        import numpy as np

        return np.minimum(super().budget_batch(max_num_tokens, draft_len, pp), np.asarray(max_num_tokens, float))

    def kv_formats(self, gpu, model=None) -> tuple[str, ...]:
        """BF16, FP16, FP8 (Engine.kv_formats) and, on Blackwell's SM100 family (B200, B300, GB200, GB300), NVFP4: --kv-cache-dtype
        nvfp4 (vllm/config/cache.py:65@0.33.0, the release its export writes; 0.21.0 added it, vllm-project/vllm#40177, not read here) runs FlashInfer's backend on
        the trtllm-gen kernels there, FP8 queries over E2M1 values with an E4M3 scale per 16 (v1/attention/backends/
        flashinfer.py:114-115, 654-664, 951-974, 1168-1171@0.33.0; flashinfer decode.py:1931-1963@fb28d72), the kernels
        TensorRT-LLM's NVFP4 cache runs, priced as its is. Elsewhere FlashInfer's fa2 takes part of it (SM80, SM90, SM120:
        _nvfp4_kv_on_fa2, flashinfer.py:114-115): SM80/SM90 decode and prefill with fa2, SM120 decodes with XQA and prefills
        with fa2 (:994-998); no shipped table times XQA or fa2 on an NVFP4 cache, and no NVFP4-KV run ships: refused. Not for
        MLA (DeepSeek's), whose backends take no nvfp4 (mla/flashinfer_mla.py:195-201, mla/cutlass_mla.py:40-46@0.33.0);
        DeepSeek-V3.2's own nvfp4_ds_mla (FlashMLA-sparse, SM100 only: mla/flashmla_sparse.py:111, 154, 250) is a format
        import names as known but not priced (explore.export.UNPRICED_KV)."""
        from llm_codesign.spec.kinds import MLA

        mla = model is not None and any(isinstance(layer.attn, MLA) for layer, _ in model.groups)
        return super().kv_formats(gpu) + (("nvfp4",) if gpu.family == "blackwell" and not mla else ())

    def precision_refusal(self, prec, gpu, *, moe: bool | None = True):
        # INT8 W8A8 on Blackwell: CutlassInt8ScaledMMLinearKernel takes every CUDA GPU and its SM100/SM120 dispatch has no
        # INT8 kernel (base.NO_INT8_GEMM_FAMILIES); W8A16 runs Marlin's uint8b128 there (gptq_marlin.py TYPE_MAP)
        if int8_w8a8(prec) and gpu.family in NO_INT8_GEMM_FAMILIES:
            return ("activation_dtype", "int8", f"a format vLLM runs on {gpu.name} with INT8 weights: its CUTLASS scaled_mm has "
                    "no INT8 kernel from SM100 (\"Int8 not supported on SM100. Use FP8 quantization instead\"); bf16 runs them "
                    "weight-only (W8A16, Marlin), or fp8 natively")
        return None

    def mxfp4_emulation(self, prec, gpu, *, moe: bool | None = True):
        # a dense model's MXFP4 linears on CDNA3 (gfx942): Quark's QuarkOCP_MX sets emulate where not supports_mx() (gfx95x
        # only), keeps the packed weights, and each forward dequantises them with amd-quark's dq_mxfp4, quantise-dequantises
        # the input (qdq_mxfp4) and runs F.linear in BF16 ("Simulated weight dequantization and activation QDQ ... with the
        # linear layers computed in high precision": quantization/quark/schemes/quark_ocp_mx.py QuarkOCP_MX.__init__,
        # apply_weights @039541c7; quark_w4a4_mxfp4.py@0320f490 the same; utils/mxfp4_utils.py _dequant_mxfp4 @01b817db).
        # A MoE's experts are not this path (gpt-oss's run triton_kernels' matmul_ogs on ROCm, its weights laid out for it off
        # gfx950 too: mxfp4_utils.py _swizzle_mxfp4 @01b817db): priced weight-only
        if (nv := _amd_nvfp4(prec, gpu, moe=moe)) is not None:
            return nv
        said = cdna3_mxfp4(prec, gpu) if moe is False else None
        if said is None:
            return None
        return (f"vLLM has no MXFP4 GEMM on {gpu.name} (gfx942): Quark emulates it, dequantising the 4-bit weights to BF16 "
                "each forward before a BF16 GEMM (priced so: slower than BF16; fp8 runs natively)")

    def own_allreduce(self, nbytes, n, family: str):
        """Its custom all-reduce (custom_allreduce), below SYMM_CUSTOM_MAX_MIB where torch symmetric memory takes the rest."""
        import numpy as np

        own = custom_allreduce(nbytes, n, family)
        if family not in SYMM_CUSTOM_MAX_MIB:
            return own
        return own & (np.asarray(nbytes, float) < _per_world(SYMM_CUSTOM_MAX_MIB[family], n))

    def symm_allreduce(self, nbytes, n, family: str):
        """Torch symmetric memory between its custom kernel's limit and SYMM_MEM_MAX_MIB (SymmMemCommunicator.all_reduce:
        a copy into the symmetric buffer, torch's two_shot_all_reduce_ or, at 6 and 8 GPUs on SM100, multimem_all_reduce_,
        a copy out; symm_mem.py:106-136@0.11.0)."""
        import numpy as np

        nbytes = np.asarray(nbytes, float)
        if family not in SYMM_MEM_MAX_MIB:
            return super().symm_allreduce(nbytes, n, family)
        return ~self.own_allreduce(nbytes, n, family) & (nbytes < _per_world(SYMM_MEM_MAX_MIB[family], n))

    def oneshot_limit(self, n, family: str):
        """Its launcher's switch (TWOSHOT_FROM_KIB, named; the one-stage kernel at every size at two GPUs) on the families
        in TWOSHOT_FAMILIES."""
        import numpy as np

        n = np.asarray(n, float)
        if family not in TWOSHOT_FAMILIES:
            return super().oneshot_limit(n, family)
        worlds = sorted(TWOSHOT_FROM_KIB)
        limit = np.select([n == 2] + [n <= k for k in worlds], [np.inf] + [TWOSHOT_FROM_KIB[k] * 1024.0 for k in worlds], np.inf)
        return limit, np.ones(n.shape, dtype=bool)

    def ar_norm_fused(self, architecture: str, *, adp, nbytes, n, family: str):
        """Where its -O2 default fuses a layer's all-reduce with the residual add + RMSNorm (FlashInfer's kernel,
        fuse_allreduce_rms = enable_allreduce_rms_fusion, config/vllm.py:116-135,208@0.19.0): tensor parallelism on
        Hopper or Blackwell without data parallelism ("tp-dp combination broken", vllm issue #34458) over 2, 4 or 8
        GPUs, for inputs up to FI_AR_NORM_MAX_MIB; elsewhere the norms run as kernels of their own. Read in 0.19.0,
        the campaigns' newest: 0.15.1 fuses at no level (config/vllm.py:105-160@0.15.1), 0.17.0 on SM100 and SM90
        only (is_device_capability(100), config/vllm.py:113-132@0.17.0), neither told apart here."""
        import numpy as np

        if not self.fuses("ar_norm"):
            return super().ar_norm_fused(architecture, adp=adp, nbytes=nbytes, n=n, family=family)
        n = np.asarray(n, float)
        return (np.asarray(nbytes, float) <= _per_world(FI_AR_NORM_MAX_MIB.get(family, {}), n)) & (np.asarray(adp) <= 1) & (n > 1)

    def attention_time_factor(self, family: str, kind: str, phase: str, *, kv_fp8: bool, dec_tokens=None):
        """As listed (attention_kernels), but GQA decode on Blackwell with a BF16 KV cache runs trtllm-gen
        kernels up to TRTLLM_DECODE_TOKENS decode tokens, FlashInfer's own beyond; with an FP8 cache
        trtllm-gen at every batch."""
        import numpy as np

        f = super().attention_time_factor(family, kind, phase, kv_fp8=kv_fp8)
        if family == "blackwell" and kind == "gqa" and phase == "decode":
            if kv_fp8:
                return 1.0
            return np.where(np.asarray(dec_tokens, float) <= TRTLLM_DECODE_TOKENS, 1.0, f)
        return f

    def moe_kernel(self, family: str, kernel: str, *, weight: str = "", ep: bool = False, gated: bool = True) -> str | None:
        """On Hopper (vLLM 0.24, vllm/model_executor/layers/fused_moe/oracle/): block-scaled FP8 on its Triton
        fused MoE, on FlashInfer's CUTLASS MoE where experts are split by EP (fp8.py:105-116, "On Hopper for
        Block Fp8, prefer Triton for TP and FI CUTLASS for EP"); per-tensor FP8 on FlashInfer's CUTLASS MoE,
        the first backend whose quant schemes take it (fp8.py _get_priority_backends; FlashInferExperts
        _supports_quant_scheme, experts/flashinfer_cutlass_moe.py:150-160); BF16 on Triton ("On Hopper
        (SM90), the FlashInfer unquantized MoE kernels are slower than Triton", unquantized.py:70-74); MXFP4
        (gpt-oss) on OpenAI's triton_kernels (mxfp4.py:304-323, OAITritonMxfp4ExpertsMonolithic); INT4 on
        Marlin (int_wna16.py:79-92). On ROCm its Triton fused MoE too: it takes AITER's fused MoE only with
        VLLM_ROCM_USE_AITER=1 (vllm/envs.py, off by default; rocm_aiter_ops.is_fused_moe_enabled, the
        is_rocm_aiter_moe_enabled gate), which the kernel tables' own on CDNA are (cost.ffns.FC1_FUSED).
        Elsewhere the kernel tables' own."""
        if family in CDNA_FAMILIES:
            return "vllm_triton"
        if family != "hopper":
            return None
        if kernel == "w4a16":
            return "triton_kernels" if weight == "mxfp4" else "marlin"
        if weight == "int8":  # INT8 W8A8 experts: CompressedTensorsW8A8Int8MoEMethod's Triton fused_moe (use_int8_w8a8)
            return "vllm_triton"
        if kernel == "fp8" or (kernel == "fp8_block" and ep):
            return "flashinfer_cutlass"
        return "vllm_triton"


VLLM = register_engine(VLLMEngine(
    name="vllm", title="vLLM",
    about="V1 engine, OpenAI server; CUDA and ROCm", release="0.11-0.14", release_note="a few defaults read up to 0.24; export's options at 0.33.0",
    # weights, activations and KV cache together use gpu_memory_utilization = 0.92 of the GPU
    # (vllm.config.cache.CacheConfig); pages are allocated as tokens arrive, so a sequence holds
    # ISL + OSL/2 on average in steady state
    kv_budget=("total", 0.92, 0.5),
    # admits a request once its prompt's KV blocks fit and, when blocks run out, preempts running
    # requests and recomputes them later (docs, "Optimization and Tuning: Preemption")
    reserve=(0.0, 0.0),
    # its default -O2: fuse_norm_quant and fuse_act_quant (vllm/config/vllm.py), but not fuse_attn_quant,
    # off by default, so its output projection keeps a quantise kernel; fuse_allreduce_rms (FlashInfer,
    # TP > 1, without DP, up to a size: ar_norm_fused)
    fusions=("act_quant", "ar_norm", "pdl", "fp8_bmm", "routing"),
    # Blackwell: GQA prefill and FP8-KV decode on FlashInfer's trtllm-gen kernels (1.0); BF16-KV decode on
    # them only up to TRTLLM_DECODE_TOKENS decode tokens, FlashInfer's own kernels beyond, 1.3 (range
    # 1.1-1.6: 1.09-1.54x in vLLM PR #19825) (attention_time_factor); MLA prefill on FlashInfer's CUTLASS
    # kernels, 1.1 (1.0-1.3, no public comparison), MLA decode on CUTLASS MLA, 1.15 (1.0-1.4)
    # (platforms/cuda.py backend priority; TRT-LLM-gen MLA only from PR #32339, vLLM 0.15).
    # Hopper: FlashAttention-3 for MLA prefill, 1.07 (0.95-1.2; 1.05-1.13x against TensorRT-LLM's
    # FMHA, flashinfer issue #521), GQA prefill and decode priced as FA3's kernel (fa3_prefill, fa3_decode); MLA decode on
    # FlashAttention-3's MLA kernel / FlashMLA, 1.0 (0.85-1.25).
    # Sources read: vllm/platforms/cuda.py, vllm/v1/attention/backends/flashinfer.py; cited ratios are
    # public kernel benchmarks, not fitted.
    attention_kernels={"blackwell": {("gqa", "decode"): 1.3, ("mla", "prefill"): 1.1, ("mla", "decode"): 1.15},
                       "hopper": {("mla", "prefill"): 1.07}},
    # its FLASH_ATTN backend, first of its non-MLA priorities off SM100 (platforms/cuda.py _get_backend_priorities:152-159@0.24.0),
    # runs vllm_flash_attn's FA3 on SM90 (v1/attention/backends/fa_utils.py get_flash_attn_version:78-80@0.24.0): its prefill
    # reads the paged cache (flash_attn.py:865-892, the query quantised to FP8 on an FP8 cache)
    fa3_prefill=("hopper",),
    # its FLASH_ATTN backend's decode, vllm_flash_attn's FA3 (the per-engine H100 table's vllm_flash_attn_fa3 rows), block size 16,
    # with the split count capped at 32 under its full CUDA graphs for decode (v1/attention/backends/flash_attn.py:448-458@0.24.0,
    # config/attention.py flash_attn_max_num_splits_for_cuda_graph = 32; cudagraph_mode FULL_AND_PIECEWISE by default). Past the
    # graphs' largest batch it passes 0, FA3's heuristic, but there the batch fills the SMs unsplit either way
    fa3_decode=("hopper",),
    fa3_max_splits=32,
    # its custom all-reduce meets every peer at a flag barrier before it reads their buffers and again after, so none
    # is overwritten while read (custom_all_reduce.cuh cross_device_reduce_1stage / 2stage, multi_gpu_barrier; FlashInfer's
    # port, include/flashinfer/comm/vllm_custom_all_reduce.cuh:191-237@fb28d72); FlashInfer's all-reduce + RMSNorm kernel,
    # where its fusion pass puts a layer's all-reduce (ar_norm_fused), is TensorRT-LLM's Lamport one-shot
    # (trtllm_allreduce_fusion.cuh:1499-1545 allreduce_fusion_kernel_oneshot_lamport@fb28d72), without them
    own_ar_barriers=2,
    # 0.11 has no PDL switch of its own: FlashInfer's attention and MoE only, which it runs on Blackwell;
    # FlashAttention-3 and its own kernels on Hopper: ~0.15 on Blackwell, 0 on Hopper
    pdl={"blackwell": 0.15, "blackwell_sm120": 0.15},
    # VLLM_USE_DEEP_GEMM defaults "1" (envs.py): its dense block-FP8 GEMMs on DeepGEMM; its MoE's kernels are
    # moe_kernel's (0.24's oracle, fused_moe/oracle/fp8.py:330, takes DeepGEMM for them only where the variable is set)
    deepgemm=True,
    # Fp8LinearMethod's per-tensor path: CutlassFP8ScaledMMLinearKernel (its per-engine GEMM rows)
    fp8_cutlass=True,
    # models/deepseek_mtp.py: eh_proj an nn.Linear, whole on every GPU
    eh_proj_tp=False,
))


def experts_over_stage(plan, *, moe: bool = True):
    """vLLM's and ATOM's expert layout (FusedMoEParallelConfig.make): a MoE's experts expert-parallel over the whole
    stage (EP = TP x DP x KVP) or tensor-parallel (EP 1), never EP x MoE-TP; per plan."""
    import numpy as np

    tp, _, ep, _, adp, kvp = (np.asarray(x) for x in plan.sizes)
    return (not moe) | (ep <= 1) | (ep == tp * adp * kvp)


def experts_over_stage_refusal(one) -> tuple[str, object]:
    """Why `one` breaks experts_over_stage, and the plan on the same GPUs that keeps it: EP over the whole stage."""
    stage = one.tp * one.adp * one.kvp
    return (f"it runs the experts expert-parallel over all {stage} GPUs of a stage or tensor-parallel, not EP{one.ep} x "
            f"MoE-TP{one.moe_tp}", replace(one, ep=stage, moe_tp=1))
