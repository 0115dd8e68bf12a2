"""SGLang's export: a shell script running `python -m sglang.launch_server` with its flags."""
from __future__ import annotations

import shlex

import numpy as np

from llm_codesign.errors import InputError, MissingInput
from llm_codesign.explore.export_engines.base import (
    Exporter,
    command_words,
    draft_path,
    engine_spec,
    env_words,
    exporter,
    flags,
    fraction,
    hf_id,
    kv_option,
    launch_batch,
    plan_ints,
    read_flags,
    read_spec,
    register_exporter,
    switch,
    weight_option,
    whole,
    written_capture,
)
from llm_codesign.spec.engines import SGLANG
from llm_codesign.spec.engines.base import CDNA_FAMILIES
from llm_codesign.spec.engines.head_dims import sglang_fallback
from llm_codesign.spec.engines.sglang import MAX_PREFILL_TOKENS
from llm_codesign.spec.kinds import DSA
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan


def _own_fraction(dep: Deployment) -> float:
    """mem_fraction_static as SGLang derives it for the plan (Engine.kv_fraction)."""
    spec = dep.spec.method if dep.spec else None
    return float(np.asarray(SGLANG.kv_fraction(dep.gpu, dep.plan, chunk=dep.step_tokens, spec_method=spec)).reshape(-1)[0])


def aiter_attention(model: ModelSpec, dep: Deployment) -> bool:
    """Whether SGLang's attention on `dep` is priced as AITER's kernels and its export names them (--attention-backend aiter):
    on AMD Instinct GPUs, where every InferenceX SGLang run the CDNA fit and validation read passes it, at TP 4 and 8 alike
    (benchmarks/single_node/fixed_seq_len/dsr1_fp8_mi355x.sh:38, dsr1_fp4_mi355x.sh:50, qwen3.5_fp8_mi355x.sh@843c6254),
    AITER's MLA decode taking 16-128 heads a rank (aiter/mla.py:819-839@e4048607). Its Triton attention, the other ROCm
    backend, has no AMD kernel table or run to price it by (data/measurements/kernels_amd: GEMMs and collectives only).
    Not for DeepSeek's sparse attention (DSA), which SGLang runs on a backend of its own (InferenceX's DeepSeek-V4
    MI355X scripts pass dsv)."""
    return dep.gpu.family in CDNA_FAMILIES and not any(isinstance(layer.attn, DSA) for layer, _ in model.groups)


def sglang_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """`sglang.launch_server` flags (without dashes) for one instance; --tp-size counts a stage's GPUs."""
    tp, pp, ep, moe_tp, adp, kvp = plan_ints(dep.plan)
    stage = tp * adp * kvp
    o = {"model-path": hf_id(model), "tp-size": stage, "pp-size": pp}
    if adp > 1:
        o["attn-dp-size"] = adp
    if kvp > 1:
        o["dcp-size"] = kvp
    if model.is_moe and ep > 1:
        o["ep-size"] = ep  # the MoE TP width is what tp-size leaves after EP (fields/parallel.py moe_tp_size)
    if q := weight_option(model, dep.precision, "sglang"):
        # ROCm's NVFP4 is petit_nvfp4 (W4A16, `pip install petit-kernel`): modelopt_fp4 needs compute capability 100
        # (spec.engines.sglang._cdna3_nvfp4, which refuses a MoE's)
        o["quantization"] = "petit_nvfp4" if q == "modelopt_fp4" and dep.gpu.vendor == "amd" else q
    o["kv-cache-dtype"] = kv_option(dep.precision, "sglang")
    if aiter_attention(model, dep):
        o["attention-backend"] = "aiter"
    elif fallback := sglang_fallback(model, dep.gpu, dep.precision.kv.name):
        # a head size its default kernels refuse (FA3 past 256 or off its alignment, 16 on an FP8 cache: spec.engines.
        # head_dims): the server needs the backend named, which it does not pick itself; estimate prices it (Engine.triton_attention)
        o["attention-backend"] = fallback
    o["max-running-requests"] = concurrency if dep.max_batch is None else dep.max_batch * adp  # the server's, split over its ranks
    if dep.chunked_prefill is False:  # chunking off as SGLang spells it, the prefill batch's budget beside it, as import reads
        # them (SGLangExporter.settings, chunked_prefill: -1 disables it, ServerArgs; managers/scheduler.py init_chunked_prefill)
        o["chunked-prefill-size"] = -1
        o["max-prefill-tokens"] = dep.step_tokens
    else:
        o["chunked-prefill-size"] = dep.step_tokens
    o["mem-fraction-static"] = exporter("sglang").written_kv_fraction(dep)
    # the deployment's capture where it states one the default would not (written_capture; 0.5.23 spells it per phase:
    # --cuda-graph-max-bs-decode, and --disable-decode-cuda-graph for none; sglang/srt/arg_groups/fields/exec_.py:629-665,
    # cuda_graph_hook.py:60-75@0.5.23)
    graphs = written_capture(dep, launch_batch(dep, concurrency, adp))
    if graphs == 0:
        o["disable-decode-cuda-graph"] = True
    elif graphs is not None:
        o["cuda-graph-max-bs-decode"] = graphs
    if dep.spec is not None:
        o["speculative-algorithm"] = engine_spec("sglang")["spec_method"][dep.spec.method]
        if dep.spec.method == "ngram":
            # a chain of k: the last token and k drafts verified (draft_token_num, NGRAMWorker), breadth 1 where SGLang's
            # default 10 builds a tree; its topk and steps follow from the breadth (_handle_ngram, arg_groups/
            # speculative_hook.py:1285-1330@0.5.23)
            o["speculative-ngram-max-bfs-breadth"] = 1
        else:
            o["speculative-num-steps"] = dep.spec.k
            o["speculative-eagle-topk"] = 1
        o["speculative-num-draft-tokens"] = dep.spec.k + 1
        if dep.spec.method in ("eagle3", "draft", "mtp") and dep.spec.draft_model:  # mtp: NEXTN's module apart (mtp_module_apart)
            o["speculative-draft-model-path"] = draft_path(dep.spec.draft_model)
    return o


# the --moe-a2a-backend values whose server sets ep_size = tp_size (_A2A_EP_SPANNING_BACKENDS, sglang/srt/arg_groups/
# overrides.py:1578-1591@0.5.23)
EP_SPANNING_A2A = frozenset({"deepep", "deepep_v2", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer", "flashinfer_megamoe",
                             "megamoe", "pplx"})


class SGLangExporter(Exporter):
    name, file_name, dynamo_image = SGLANG.name, "launch_sglang.sh", "sglang"
    marker = "sglang.launch_server"
    reads = frozenset({"moe-a2a-backend", "deepep-mode", "attention-backend", "model-path", "tp-size", "pp-size", "dp-size", "attn-dp-size", "dcp-size", "ep-size", "quantization", "kv-cache-dtype",
                       "max-running-requests", "chunked-prefill-size", "max-prefill-tokens", "mem-fraction-static", "speculative-algorithm", "speculative-num-steps",
                       "speculative-draft-model-path", "speculative-eagle-topk", "speculative-num-draft-tokens",
                       "speculative-ngram-max-bfs-breadth", "speculative-ngram-min-bfs-breadth",
                       "cuda-graph-max-bs-decode", "cuda-graph-bs-decode", "disable-decode-cuda-graph", "disable-cuda-graph"})
    switches = frozenset({"disable-decode-cuda-graph", "disable-cuda-graph"})

    def options(self, model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
        return sglang_options(model, dep, concurrency)

    def env(self, dep: Deployment) -> dict[str, str]:
        """SGLANG_USE_AITER=1 on AMD Instinct GPUs: their experts are priced on AITER's fused MoE (the CDNA kernel tables'
        own, cost.ffns.FC1_FUSED; fitted on InferenceX's MI355X runs, which set it: benchmarks/single_node/fixed_seq_len/
        dsr1_fp8_mi355x.sh@843c6254), which SGLang takes only with it set: off by default (sglang/srt/environ.py:949,
        layers/quantization/fp8.py:149 and mxfp4.py:200@0.5.23), its Triton fused MoE otherwise."""
        return {"SGLANG_USE_AITER": "1"} if dep.gpu.family in CDNA_FAMILIES else {}

    def render(self, opts: dict, *, head: list[str], model: ModelSpec, file_name: str, env: dict[str, str]) -> str:
        words = flags(opts)
        starts = [i for i, w in enumerate(words) if w.startswith("--")] + [len(words)]
        lines = [shlex.join([*env_words(env), "python", "-m", "sglang.launch_server"])] + [shlex.join(words[a:b]) for a, b in zip(starts[:-1], starts[1:], strict=True)]
        return "\n".join(["#!/bin/sh"] + head + [" \\\n  ".join(lines)]) + "\n"

    def parse(self, text: str, origin: str = "export") -> tuple[dict, str | None]:
        """Its export, or a `python -m sglang.launch_server ...` (`sglang serve ...`) command line: the
        flags by their documented names (aliases and argparse's unique prefixes resolved: `--tp 8`),
        and the model they name."""
        words = command_words(text, origin)
        start = next((i + 1 for i, w in enumerate(words) if w.endswith("sglang.launch_server")
                      or (w == "serve" and i and words[i - 1].endswith("sglang"))), None)
        if start is None:
            raise InputError("config", origin, "an SGLang command line: python -m sglang.launch_server --model-path MODEL ...")
        o, pos = read_flags(words[start:], "sglang", origin)
        if switch("enable-dp-attention", o.pop("enable-dp-attention", None)) and "dp-size" in o:  # the deprecated spelling of --attn-dp-size
            o["attn-dp-size"] = o.pop("dp-size")
        return o, o.get("model-path") or (pos[0] if pos else None)

    def plan_from(self, o: dict, model: ModelSpec) -> tuple[Plan, int | None]:
        stage, pp, adp, kvp, ep = (whole(k, o.get(k)) for k in ("tp-size", "pp-size", "attn-dp-size", "dcp-size", "ep-size"))
        if stage % (adp * kvp):  # --tp-size counts every GPU of a stage: attention TP = tp-size / (attn-dp-size x dcp-size)
            raise InputError("tp-size", stage, f"a multiple of attn-dp-size x dcp-size ({adp * kvp})")
        # an all-to-all MoE backend spans the experts over the whole TP group: the server sets ep_size = tp_size whatever
        # --ep-size says (_a2a_ep_size over _A2A_EP_SPANNING_BACKENDS, sglang/srt/arg_groups/overrides.py:1578-1619@0.5.23)
        if o.get("moe-a2a-backend") in EP_SPANNING_A2A:
            ep = stage
        ep = ep if model.is_moe else 1
        if stage % ep:
            raise InputError("ep-size", ep, f"a divisor of tp-size ({stage})")
        conc = whole("max-running-requests", o.get("max-running-requests"), None, hi=1 << 20)
        return Plan(stage // (adp * kvp), pp, ep, stage // ep if model.is_moe else 1, adp, kvp), conc

    def replicas(self, o: dict, model: ModelSpec) -> tuple[dict, int]:
        """--dp-size: data-parallel copies of the model behind SGLang's router."""
        dp = whole("dp-size", o.get("dp-size"))
        return ({k: v for k, v in o.items() if k != "dp-size"}, dp) if dp > 1 else (o, 1)

    def own_kv_fraction(self, dep: Deployment) -> float:
        return _own_fraction(dep)

    def unread(self, o: dict, model: ModelSpec, dep: Deployment) -> list[str]:
        """--attention-backend is read only as the one priced (aiter_attention: AITER's on CDNA) or the one the export writes
        for a head size the default kernels refuse (sglang_fallback: triton, priced as its Triton kernels, Engine.triton_attention,
        as the head-size note says); another, or any on NVIDIA's GPUs (priced by the engine's kernel families, not by the flag), is listed as
        ignored, with what was priced on CDNA."""
        said = o.get("attention-backend")
        if said is True or (isinstance(said, str) and not said.strip()):  # the flag with no value: SGLang's argparse refuses it
            raise MissingInput("attention-backend", "a backend named after the flag (aiter, triton, fa3, flashinfer, ...), as SGLang requires")
        # --max-prefill-tokens is read as the budget with chunking off (settings); with it on the chunk is priced
        extra = ["max-prefill-tokens"] if "max-prefill-tokens" in o and not chunking_off(o) else []
        if said is None or (said == "aiter" and aiter_attention(model, dep)) or (
                not aiter_attention(model, dep) and said == sglang_fallback(model, dep.gpu, dep.precision.kv.name)):
            return extra
        return extra + [f"attention-backend ({said}: priced as AITER's, no AMD kernel table or run prices another)" if aiter_attention(model, dep)
                        else "attention-backend"]

    def cuda_graph_max_bs(self, o: dict) -> int | None:
        """The decode capture: 0 where --disable-decode-cuda-graph (or the older --disable-cuda-graph) turns it off, else
        --cuda-graph-max-bs-decode (the older --cuda-graph-max-bs, an alias here), else the largest of --cuda-graph-bs-decode
        (SGLang pads a batch up to the next captured size: CudaGraphRunner, the list's gaps replay padded); None where
        none is set (the engine's default capture)."""
        if switch("disable-decode-cuda-graph", o.get("disable-decode-cuda-graph")) or switch("disable-cuda-graph", o.get("disable-cuda-graph")):
            return 0
        # DeepEP's normal dispatch is not graph-capturable: the server turns the decode and prefill graphs off for
        # --moe-a2a-backend deepep --deepep-mode normal (sglang/srt/arg_groups/moe_hook.py:383-397@0.5.23; its default,
        # auto, dispatches decode batches low-latency, under graphs)
        if o.get("moe-a2a-backend") == "deepep" and o.get("deepep-mode") == "normal":
            return 0
        # 0 is not SGLang's "off" (vLLM's --max-cudagraph-capture-size 0 and TensorRT-LLM's null are theirs): it leaves the
        # decode runner no batch to capture, and the server stops at start (0.5.23 wheel: the capture list [0] fails
        # `capture_bs[0] > 0`, sglang/srt/model_executor/runner/base_cuda_graph_runner.py:104, after arg_groups/
        # cuda_graph_hook.py:527-530; 0.5.9 wheel: max() of the empty list, model_executor/cuda_graph_runner.py:194), so it
        # is refused, naming the off switch
        for k in ("cuda-graph-max-bs-decode", "cuda-graph-bs-decode"):
            v = o.get(k)
            if any(isinstance(x, (int, str)) and not isinstance(x, bool) and str(x).strip() == "0" for x in (v if isinstance(v, list) else [v])):
                raise InputError(k, v, "1 or more: SGLang does not start with a decode capture of 0; --disable-decode-cuda-graph "
                                 "(--disable-cuda-graph before 0.5.23) turns its CUDA graphs off")
        sizes = o.get("cuda-graph-bs-decode")
        sizes = [sizes] if sizes is not None and not isinstance(sizes, list) else sizes or []
        top = max((whole("cuda-graph-bs-decode", b, hi=1 << 20) for b in sizes), default=None)
        return whole("cuda-graph-max-bs-decode", o.get("cuda-graph-max-bs-decode"), top, hi=1 << 20)

    def kv_fraction(self, o: dict) -> float | None:
        """--mem-fraction-static: weights and KV pool's share of the GPU (Engine.kv_budget "static")."""
        return fraction("mem-fraction-static", o.get("mem-fraction-static"))

    def settings(self, o: dict, meta: dict) -> tuple:
        """The step budget is --chunked-prefill-size; with chunking off (-1, or any value <= 0) it is the prefill batch's,
        --max-prefill-tokens (SGLang's default 16384), a longer prompt running whole (chunked_prefill)."""
        spec = read_spec(meta, o.get("speculative-algorithm"), ngram_draft_len(o) if ngram(o) else o.get("speculative-num-steps"), "sglang",
                         o.get("speculative-draft-model-path"))
        budget = o.get("max-prefill-tokens", MAX_PREFILL_TOKENS) if chunking_off(o) else o.get("chunked-prefill-size")
        return o.get("quantization"), o.get("kv-cache-dtype", "auto"), spec, budget

    def chunked_prefill(self, o: dict) -> bool | None:
        """False where --chunked-prefill-size turns chunking off, SGLang's own spelling, -1 ("Setting this to -1 means
        disabling chunked prefill", ServerArgs; the Scheduler reads any value <= 0 so: `if self.chunked_prefill_size <= 0:
        # -1 means disable`, managers/scheduler.py init_chunked_prefill). It was refused as max_num_tokens -1 (crev9 #8)."""
        return False if chunking_off(o) else None



def ngram(o: dict) -> bool:
    """Whether an SGLang launch drafts by prompt lookup (--speculative-algorithm NGRAM)."""
    return o.get("speculative-algorithm") == "NGRAM"


def ngram_draft_len(o: dict) -> int:
    """k of an NGRAM launch: --speculative-num-draft-tokens (12 where unset: _handle_ngram, arg_groups/speculative_hook.py:
    1314-1323@0.5.23) less the last token verified with the drafts, as a chain (--speculative-ngram-max-bfs-breadth 1). Its
    default breadth of 10 (arg_groups/fields/spec.py:256-259) drafts a tree, which is not priced: one line naming the flag."""
    breadth = o.get("speculative-ngram-max-bfs-breadth")
    if whole("speculative-ngram-max-bfs-breadth", breadth, 10) != 1:
        raise InputError("speculative-ngram-max-bfs-breadth", breadth, "1 with --speculative-algorithm NGRAM (a chain of drafts; "
                         "SGLang's default 10 drafts a tree, which is not priced here)")
    n = whole("speculative-num-draft-tokens", o.get("speculative-num-draft-tokens"), 12, hi=17)
    if n < 2:
        raise InputError("speculative-num-draft-tokens", n, "2 to 17 with NGRAM: the last token and 1 to 16 drafts")
    return n - 1


def chunking_off(o: dict) -> bool:
    """Whether an SGLang launch's --chunked-prefill-size turns chunked prefill off (a whole number <= 0)."""
    v = o.get("chunked-prefill-size")
    try:
        return not isinstance(v, bool) and v is not None and int(str(v).strip()) <= 0
    except ValueError:
        return False


register_exporter(SGLangExporter())
