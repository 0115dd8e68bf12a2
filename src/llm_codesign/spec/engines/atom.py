"""ATOM, AMD's inference engine on its AITER kernels for Instinct GPUs: its documented defaults, read in
ROCm/ATOM@ffdf3bb5 (atom/config.py, atom/model_engine/, atom/models/deepseek_v2.py, atom/utils/envs.py)
unless a comment says otherwise. A nano-vLLM-style engine: paged KV blocks allocated as tokens arrive,
prefill-first scheduling, CUDA (HIP) graphs for decode batches. No export builder: it is priced, not
exported."""
from __future__ import annotations

from dataclasses import replace

from llm_codesign.spec.engines.base import CDNA_FAMILIES, Engine, cdna3_mxfp4, register_engine
from llm_codesign.spec.engines.vllm import custom_allreduce, experts_over_stage, experts_over_stage_refusal


class AtomEngine(Engine):
    # preempts running sequences when blocks run out and requeues them to recompute, as vLLM (scheduler.py preempt,
    # ROCm/ATOM@ffdf3bb5; kv_budget below)
    recomputes_evicted = True
    # its per-request cost is its OpenAI server's front end, before EngineCore's queue (parsing, HF tokenizer), as vLLM's
    # (default.toml [default.ttft_overhead_s])
    request_cost_overlaps_wait = True
    # Scheduler.schedule "tries prefill first; if no new prefills are ready, falls back to decoding already-
    # running sequences" (atom/model_engine/scheduler.py:1099-1104): prefill batches run on their own
    mixes_prefill = False
    # decodes in the step budget (Engine.budget_batch): its decode loop stops where 1 + mtp_k more tokens would pass
    # max_num_batched_tokens, skips sequences in flight in another pipeline micro-batch and puts the scheduled ones back
    # at the head of `running` (atom/model_engine/scheduler.py:1436-1454, 1507)
    # no attention-DP hold: the CoreManager routes each request to a DP rank as it comes (--dp-load-balance,
    # least_requests by default, atom/model_engine/arg_utils.py:244-256)
    holds_adp_requests = False
    # chunked prefill is on by default (--enable_chunked_prefill, BooleanOptionalAction, default True: atom/model_engine/
    # arg_utils.py:374-379); turned off, Scheduler._unschedulable_reason flags a prompt over max_num_batched_tokens ("no single
    # prefill forward can ever fit it") and the prefill scheduler drops it, returned unserved (take_rejected, atom/model_engine/
    # scheduler.py:989-1041, 1085-1096): refused as vLLM's (spec.plan.check_whole_prompt), where it was priced chunked (crev9 #9)
    whole_prompt_refusal = ("rejects a longer prompt unscheduled (Scheduler._unschedulable_reason)", "--max-num-batched-tokens",
                            "--enable_chunked_prefill, its default")
    # gpt-oss's experts on AITER's fused MoE with their gate/up rows de-interleaved at load (_interleave_swiglu_weights,
    # atom/models/gpt_oss.py:156-184, 237-239) and GateMode.SEPARATED passed (ATOM_MOE_GU_ITLV off by default,
    # atom/utils/envs.py:325; atom/model_ops/moe.py:1038, 1567-1572; no Triton MoE on gfx950 without ATOM_USE_TRITON_GEMM,
    # :1046-1051): AITER runs them MXFP4 x MXFP4 from 256 tokens (aiter/fused_moe.py:789-790@e4048607)
    aiter_swiglu_high = "mxfp4"

    def runs_plans(self, plan, *, moe: bool = True):
        """Attention DP at attention TP 1 and one pipeline stage: under --enable-dp-attention the CoreManager launches TP x DP
        engine ranks and sets tensor_parallel_size = 1 (atom/model_engine/engine_core_mgr.py:152-162), asserting "Pipeline
        parallel + DP-attention is not supported yet" (:153; LLMEngine raises the same, llm_engine.py:64-67). A MoE's experts
        EP over the whole stage or tensor-parallel, never EP x MoE-TP: FusedMoEParallelConfig.make flattens TP across the DP
        ranks and, with --enable-expert-parallel, sets ep_size to that width and the experts' tp_size to 1
        (atom/model_ops/moe.py:217-305), as vLLM's. Every campaign row it ran is TP4 or TP8, no DP, no EP."""
        import numpy as np

        tp, pp, _, _, adp, _ = (np.asarray(x) for x in plan.sizes)
        attention = ((adp <= 1) | (tp <= 1)) & ((adp <= 1) | (pp <= 1))
        return attention & experts_over_stage(plan, moe=moe)

    def refused_plan(self, one):
        """Attention DP with PP as TP over the stage's GPUs, DP x TP as DP x TP ranks of attention TP 1, then EP x MoE-TP as
        EP over the whole stage: the same GPUs, each reason said."""
        why, near = [], one
        if one.adp > 1 and one.pp > 1:
            why.append("its attention DP runs one pipeline stage (--enable-dp-attention asserts pp_size 1)")
            near = replace(near, tp=one.tp * one.adp, adp=1)
        elif one.adp > 1 and one.tp > 1:
            why.append("its attention DP runs attention TP1 on every rank (--enable-dp-attention sets tensor_parallel_size 1), "
                       "not DP x TP")
            near = replace(near, tp=1, adp=one.tp * one.adp)
        if near.ep > 1 and near.ep != near.tp * near.adp * near.kvp:
            said, near = experts_over_stage_refusal(near)  # the DP step keeps one's EP and MoE-TP: the message names them
            why.append(said)
        return "; ".join(why), near

    def step_tokens(self, gpu) -> int:
        """max_num_batched_tokens = 16384 (Config, atom/config.py:1428) on every GPU."""
        return 16384

    def max_batch(self, gpu, kv_tokens=None, context_len: int = 0):
        """max_num_seqs = 512 (Config, atom/config.py:1434)."""
        return 512.0

    def moe_exchange(self, gpu, *, moe_tp):
        """The all-to-all: its MoE takes MoRI's dispatch/combine under DP with EP where mori is installed
        (FusedMoEParallelConfig.use_all2all_kernels, ROCm/ATOM@ffdf3bb5 atom/model_ops/moe.py:200-210), as its images
        have it (docker/Dockerfile:7)."""
        import numpy as np

        return np.full(np.shape(moe_tp), "all_to_all")

    def kv_formats(self, gpu, model=None) -> tuple[str, ...]:
        """--kv_cache_dtype bf16 or fp8 (atom/model_engine/arg_utils.py:163-169@ffdf3bb5); FP8 is AITER's per GPU, E4M3FNUZ on
        gfx942 (MI300X, MI325X) and E4M3FN on gfx950 (MI355X) (aiter/utility/dtypes.py:11-13@e4048607), one byte either way."""
        return ("bf16", "fp8")

    def precision_refusal(self, prec, gpu, *, moe: bool | None = True):
        # MXFP4 linears on CDNA3 (gfx942): a per_1x32 (MXFP4) linear calls gemm_a4w4_quant, whose default path quantises the
        # input and runs AITER's gemm_a4w4 (atom/model_ops/linear.py:220-251, 1084-1093@ffdf3bb5), which raises "A4W4 GEMM
        # kernel is not supported on gfx942" (aiter/ops/gemm_op_a4w4.py:196-199@e4048607); its Triton paths (ATOM_USE_TRITON_GEMM,
        # :136-218) call gemm_afp4wfp4*, which assert an FP4 GPU. Refused for a dense model only: a MoE's MXFP4 experts run its
        # Triton MoE with BF16 activations on gfx94x (atom/model_ops/moe.py:1044-1051, 1368), priced weight-only, and gpt-oss's
        # dense linears are BF16
        if nv := _nvfp4(prec):
            return nv
        said = cdna3_mxfp4(prec, gpu) if moe is False else None
        if said is None:
            return None
        return (*said, f"a format ATOM runs on {gpu.name} for a dense model: its MXFP4 linears call AITER's gemm_a4w4, \"not "
                       "supported on gfx942\" (only a MoE's MXFP4 experts run, on its Triton W4A16 MoE); --backend vllm runs it "
                       "emulated (dequantised to BF16 each forward), or fp8 runs natively")

    def own_allreduce(self, nbytes, n, family: str):
        """AITER's custom all-reduce (aiter.dist.communication_op, atom/model_ops/communication_op.py:42-56),
        vLLM's kernel ported to xGMI, at vLLM's sizes and limit (vllm.custom_allreduce)."""
        return custom_allreduce(nbytes, n, family)

    def _fusable_allreduce(self, nbytes, n, family: str):
        """AITER's all-reduce carries the residual add + RMSNorm on the Instinct families
        (ATOM_ENABLE_ALLREDUCE_RMSNORM_FUSION, on by default: atom/utils/envs.py:156-157,
        atom/models/deepseek_v2.py:153, 2902)."""
        return self.own_allreduce(nbytes, n, family) & (family in CDNA_FAMILIES)


def _nvfp4(prec) -> tuple[str, str, str] | None:
    """NVFP4 in ATOM@ffdf3bb5: no parser reads a ModelOpt checkpoint (quant_method "modelopt"): get_quant_parser falls back
    to GenericParser (atom/quant_spec.py:169-181), which reads any "fp4" in the config as fp4x2 and forces 1x32 blocks
    ("MXFP4 (fp4x2) uses microscaling with 1x32 block scaling by definition", :370, 404-409), MXFP4's layout, not NVFP4's
    16-element blocks with FP8 scales and a global scale; no NVFP4 linear or MoE kernel is wired (fused_moe/config.py:92, 188
    name it in vLLM's vendored config only). Refused on every AMD GPU, MoE or dense."""
    for field, d in (("weight_dtype", prec.weight if prec is not None else None), ("attn_weight_dtype", prec.attn_weight if prec is not None else None)):
        if d is not None and d.name == "nvfp4":
            return (field, d.name, "a format ATOM runs: it has no NVFP4 path (its generic quant parser reads a ModelOpt FP4 "
                                   "checkpoint as MXFP4's 1x32 blocks, atom/quant_spec.py:404-409@ffdf3bb5); --weight-dtype mxfp4 "
                                   "(an MXFP4 checkpoint) or fp8 runs natively, or --backend vllm runs NVFP4 emulated")
    return None


ATOM = register_engine(AtomEngine(
    name="atom", title="ATOM",
    about="AMD's engine on AITER", release="ROCm/ATOM@ffdf3bb5",
    # ROCm only: built on AITER, AMD's kernels for Instinct GPUs (ROCm/ATOM@ffdf3bb5 README.md:12)
    vendors=("amd",),
    # weights, peak activations, graphs and KV cache share gpu_memory_utilization = 0.9 of the GPU (Config,
    # atom/config.py:1436; ModelRunner budget = utilization x total memory, model_runner.py:1603-1604);
    # KV blocks are appended as tokens arrive (BlockManager.may_append), so a sequence holds ISL + OSL/2
    kv_budget=("total", 0.90, 0.5),
    # admits a request once its prompt's blocks fit (BlockManager.can_allocate) and preempts running ones
    # when blocks run out (scheduler.py preempt), as vLLM
    reserve=(0.0, 0.0),
    # act_quant: DeepSeek's input RMSNorm + FP8 group quantisation fused (ATOM_ENABLE_DS_INPUT_RMSNORM_QUANT_FUSION,
    # on by default, envs.py:97-98); ar_norm: the all-reduce + residual + RMSNorm above (_fusable_allreduce)
    fusions=("act_quant", "ar_norm", "fp8_bmm", "routing"),
    # AITER's attention kernels; no kernel table times them against another engine's
    attention_kernels={},
    # PDL is a CUDA feature (SM90+): none on Instinct GPUs
    pdl={},
    # DeepGEMM is a CUDA library
    deepgemm=False,
    # a ROCm engine: AITER's GEMMs
    fp8_cutlass=False,
    # models/deepseek_mtp.py:72: eh_proj a ReplicatedLinear, whole on every GPU
    eh_proj_tp=False,
))
