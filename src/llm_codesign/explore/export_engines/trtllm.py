"""TensorRT-LLM's export: a `trtllm-serve` command and its `extra_llm_api_options` YAML (TorchLlmArgs
fields). Its options name no weight format: the weights are the checkpoint's, stated in the header."""
from __future__ import annotations

import shlex

from llm_codesign.errors import InputError
from llm_codesign.explore import yaml_io
from llm_codesign.explore.export_engines.base import (
    Exporter,
    check_nested,
    code_lines,
    command_words,
    draft_path,
    engine_spec,
    env_words,
    exporter,
    file_beside,
    flags,
    fraction,
    hf_id,
    kv_option,
    launch_batch,
    nested,
    nested_keys,
    plan_ints,
    read_flags,
    read_spec,
    register_exporter,
    served_name,
    switch,
    whole,
)
from llm_codesign.spec.engines import TRTLLM
from llm_codesign.spec.engines.trtllm import GRAPH_MAX_BATCH
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan


def trtllm_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """TorchLlmArgs fields (the extra_llm_api_options YAML) for one instance. TensorRT-LLM's attention DP
    gives every rank its own attention (TP1: a DP x TP plan is the engine's refusal, TRTLLM.runs_plans, applied by
    explore.export.engine_runs), its Helix is context parallelism of type HELIX."""
    tp, pp, ep, moe_tp, adp, kvp = plan_ints(dep.plan)
    o = {"tensor_parallel_size": tp * adp, "pipeline_parallel_size": pp}
    if model.is_moe:
        o["moe_expert_parallel_size"] = ep
        o["moe_tensor_parallel_size"] = moe_tp
    if adp > 1:
        o["enable_attention_dp"] = True
    if kvp > 1:
        o["context_parallel_size"] = kvp
        o["cp_config"] = nested("trtllm", "cp_config", cp_type=engine_spec("trtllm")["context_parallel"]["kvp"])
    o["max_batch_size"] = launch_batch(dep, concurrency, adp)
    o["max_num_tokens"] = dep.step_tokens
    # chunked prefill as the deployment states it, else left at its default, off: a step takes whole prompts, as the
    # estimate prices them (serve.aggregated.prompt_budget); export_config turns it on where a prompt is longer than the budget
    if dep.chunked_prefill is not None:
        o["enable_chunked_prefill"] = dep.chunked_prefill
    o["kv_cache_config"] = nested("trtllm", "kv_cache_config", dtype=kv_option(dep.precision, "trtllm"),
                                  free_gpu_memory_fraction=exporter("trtllm").written_kv_fraction(dep))
    # every batch up to the per-rank batch, padded (the LLM API's default stops at 128 and skips 33-63 and 65-127), or the
    # deployment's own capture where it stops below it (a search's points capture their whole grid, explore.search.point_graphs)
    # 0 (graphs off): `cuda_graph_config: null`, which the LLM API runs eagerly (use_cuda_graph = cuda_graph_config is not None)
    o["cuda_graph_config"] = None if dep.cuda_graph_max_bs == 0 else nested(
        "trtllm", "cuda_graph_config", enable_padding=True,
        max_batch_size=min(dep.cuda_graph_max_bs or o["max_batch_size"], o["max_batch_size"]))
    if dep.spec is not None:
        draft = {"speculative_model": draft_path(dep.spec.draft_model)} if dep.spec.method in ("eagle3", "draft") and dep.spec.draft_model else {}
        # prompt lookup: NGramDecodingConfig's default n-gram size stated, and the private pool the estimate prices (the
        # public default is never pruned, so its host time grows with every request served: spec/engines/trtllm.py)
        lookup = {"max_matching_ngram_size": NGRAM_SIZE, "is_public_pool": False} if dep.spec.method == "ngram" else {}
        o["speculative_config"] = nested("trtllm", "speculative_config", decoding_type=engine_spec("trtllm")["spec_method"][dep.spec.method],
                                         max_draft_len=dep.spec.k, **draft, **lookup)
    return o


NGRAM_SIZE = 2  # NGramDecodingConfig.max_matching_ngram_size's default (1.4.0rc4 API reference)


class TRTLLMExporter(Exporter):
    name, file_name, dynamo_image = TRTLLM.name, "extra_llm_api_options.yaml", "tensorrtllm"
    quantization_option = False
    reads = frozenset({"model", "tensor_parallel_size", "pipeline_parallel_size", "context_parallel_size", "cp_config", "moe_expert_parallel_size",
                       "moe_tensor_parallel_size", "enable_attention_dp", "max_batch_size", "max_num_tokens", "enable_chunked_prefill",
                       "kv_cache_config.dtype", "kv_cache_config.free_gpu_memory_fraction", "speculative_config", "backend",
                       "cuda_graph_config", "cuda_graph_config.enable_padding", "cuda_graph_config.max_batch_size",
                       "cuda_graph_config.batch_sizes"})
    switches = frozenset({"enable_attention_dp", "enable_chunked_prefill"})

    def options(self, model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
        return trtllm_options(model, dep, concurrency)

    def render(self, opts: dict, *, head: list[str], model: ModelSpec, file_name: str, env: dict[str, str]) -> str:
        cmd = shlex.join([*env_words(env), "trtllm-serve", hf_id(model), "--backend", "pytorch", "--extra_llm_api_options", file_name])
        return "\n".join(head + [f"# launch: {cmd}", yaml_io.dump(opts)]) + "\n"

    def parse(self, text: str, origin: str = "export") -> tuple[dict, str | None]:
        """Its export; an `extra_llm_api_options` YAML of TorchLlmArgs fields (it names no model); or a
        `trtllm-serve MODEL --tp_size 8 ... --extra_llm_api_options FILE` command line, its flags as the
        fields they set and the YAML it names laid over them (as trtllm-serve does)."""
        if "trtllm-serve" not in code_lines(text):
            o = yaml_io.load(text, origin)
            if not isinstance(o, dict):
                raise InputError("config", origin, "a YAML mapping of TensorRT-LLM LLM API options (extra_llm_api_options)")
            for line in text.splitlines():
                if line.startswith("# launch: trtllm-serve ") and not o.get("model"):
                    return o, shlex.split(line[len("# launch: "):])[1]
            return o, o.get("model")
        words = command_words(text, origin)
        start = words.index("trtllm-serve") + 1 if "trtllm-serve" in words else len(words)
        flags_, pos = read_flags(words[start:], "trtllm", origin, dashes=False, abbrev=False)  # click: no prefixes
        o = {}
        for k, v in flags_.items():  # kv_cache_free_gpu_memory_fraction sets a nested field
            head, _, field = k.partition(".")
            if field:
                o.setdefault(head, {})[field] = v
            else:
                o[head] = v
        extra = o.pop("extra_llm_api_options", None)
        if isinstance(extra, str):
            for k, v in yaml_io.load(file_beside(extra, origin), extra).items():
                o[k] = {**o[k], **v} if isinstance(v, dict) and isinstance(o.get(k), dict) else v
        pos = [w for w in pos if w != "serve"]
        return o, o.pop("model", None) or (pos[0] if pos else None)

    def plan_from(self, o: dict, model: ModelSpec) -> tuple[Plan, int | None]:
        adp_on = bool(o.get("enable_attention_dp"))
        t = whole("tensor_parallel_size", o.get("tensor_parallel_size"))
        tp, adp = (1, t) if adp_on else (t, 1)
        kvp = whole("context_parallel_size", o.get("context_parallel_size"))
        helix = engine_spec("trtllm")["context_parallel"]["kvp"]
        if kvp > 1 and _table(o, "cp_config").get("cp_type") != helix:
            # only Helix shards the KV cache along the sequence as the cost model prices context parallelism
            raise InputError("export", f"cp_config.cp_type: {_table(o, 'cp_config').get('cp_type')!r}",
                             f"{helix!r} with context_parallel_size > 1 (Helix is the context parallelism modelled)")
        ep, moe_tp = 1, 1
        if model.is_moe:  # a size not given is what the other leaves of the stage's GPUs
            stage = tp * adp * kvp
            moe_tp_given = whole("moe_tensor_parallel_size", o.get("moe_tensor_parallel_size"), None)
            ep = whole("moe_expert_parallel_size", o.get("moe_expert_parallel_size"), max(stage // (moe_tp_given or stage), 1))
            moe_tp = moe_tp_given or max(stage // ep, 1)
        batch = whole("max_batch_size", o.get("max_batch_size"), None, hi=1 << 20)
        return Plan(tp, whole("pipeline_parallel_size", o.get("pipeline_parallel_size")), ep, moe_tp, adp, kvp), batch * adp if batch else None

    def settings(self, o: dict, meta: dict) -> tuple:
        sc = _table(o, "speculative_config")
        spec = read_spec(meta, sc.get("decoding_type"), sc.get("max_draft_len"), "trtllm", sc.get("speculative_model"))
        return None, _table(o, "kv_cache_config").get("dtype", "auto"), spec, o.get("max_num_tokens")

    def chunked_prefill(self, o: dict) -> bool | None:
        """enable_chunked_prefill as the configuration sets it (TorchLlmArgs, default false: NVIDIA/TensorRT-LLM@00043967
        tensorrt_llm/llmapi/llm_args.py), or None where it sets none (the engine's default, Engine.chunks_prefill)."""
        return o.get("enable_chunked_prefill")

    def kv_fraction(self, o: dict) -> float | None:
        """kv_cache_config.free_gpu_memory_fraction (trtllm-serve --kv_cache_free_gpu_memory_fraction): the share of the
        memory weights and activations leave that the KV cache takes (Engine.kv_budget "free")."""
        return fraction("free_gpu_memory_fraction", (o.get("kv_cache_config") or {}).get("free_gpu_memory_fraction"))

    def unread(self, o: dict, model: ModelSpec, dep: Deployment) -> list[str]:
        """An unpadded list of capture sizes: priced as padded up to its largest (cuda_graph_max_bs), its gaps' eager
        steps not priced (a Deployment carries one largest batch), so listed with why."""
        g, sc, out = o.get("cuda_graph_config"), _table(o, "speculative_config"), []
        if isinstance(g, dict) and g.get("batch_sizes") and not g.get("enable_padding"):
            out.append("cuda_graph_config.batch_sizes (unpadded: priced as padded up to its largest, the batches between its sizes "
                       "that run eagerly are not)")
        if sc.get("decoding_type") == "NGram" and sc.get("is_public_pool", True) is not False:
            out.append("speculative_config.is_public_pool (the public pool, never pruned: its host time grows with every request "
                       "served; priced as the private pool)")
        return out

    def cuda_graph_max_bs(self, o: dict) -> int | None:
        """cuda_graph_config's largest batch (max_batch_size, else its batch_sizes' largest, else 128: CudaGraphConfig,
        tensorrt_llm/llmapi/llm_args.py:175-255@00043967) where the options set one; None where they set none or set
        an unpadded default (the engine's default capture); 0 where `cuda_graph_config: null` turns graphs off (the model
        loader's use_cuda_graph = cuda_graph_config is not None: every step eager). An unpadded list of sizes is read as
        padded up to its largest: the batches between its sizes that run eagerly are not priced."""
        if "cuda_graph_config" in o and o["cuda_graph_config"] is None:
            return 0
        g = o.get("cuda_graph_config")
        if not isinstance(g, dict) or not (g.get("enable_padding") or g.get("batch_sizes") or g.get("max_batch_size")):
            return None
        sizes = [whole("cuda_graph_config.batch_sizes", b, hi=1 << 20) for b in (g.get("batch_sizes") or [])]
        return whole("cuda_graph_config.max_batch_size", g.get("max_batch_size") or None, max(sizes, default=GRAPH_MAX_BATCH), hi=1 << 20)

    def worker_args(self, model: ModelSpec, dep: Deployment, concurrency: int, mode: str, *, tokens: int | None = None) -> list[str]:
        """Dynamo's TensorRT-LLM worker takes the sizes, batch, step budget and KV fraction as its own
        flags and the remaining TorchLlmArgs fields as one inline mapping (override-engine-args); `tokens` unread, as its
        with_context (the base's: no context length its launch must be given)."""
        o = trtllm_options(model, dep, concurrency)
        args = {"model": hf_id(model), "served-model-name": served_name(model), "disaggregation-mode": mode,
                "tensor-parallel-size": o.pop("tensor_parallel_size"), "pipeline-parallel-size": o.pop("pipeline_parallel_size")}
        if "moe_expert_parallel_size" in o:
            args["expert-parallel-size"] = o.pop("moe_expert_parallel_size")
        if o.pop("enable_attention_dp", False):
            args["enable-attention-dp"] = True
        args["max-batch-size"] = o.pop("max_batch_size")
        args["max-num-tokens"] = o.pop("max_num_tokens")
        args["free-gpu-memory-fraction"] = o["kv_cache_config"].pop("free_gpu_memory_fraction")
        args["override-engine-args"] = o  # the remaining TorchLlmArgs fields, an inline mapping
        return flags(args)

    def worker_options(self, args: dict) -> tuple[dict, str]:
        o = dict(args.pop("override-engine-args"))
        o["kv_cache_config"] = dict(o["kv_cache_config"], free_gpu_memory_fraction=args.pop("free-gpu-memory-fraction"))
        o.update({"tensor_parallel_size": args["tensor-parallel-size"], "pipeline_parallel_size": args["pipeline-parallel-size"],
                  "max_batch_size": args["max-batch-size"], "max_num_tokens": args["max-num-tokens"]})
        if "expert-parallel-size" in args:
            o["moe_expert_parallel_size"] = args["expert-parallel-size"]
        if switch("enable-attention-dp", args.get("enable-attention-dp")):
            o["enable_attention_dp"] = True
        check_nested("trtllm", o)
        return o, args["model"]


def _table(o: dict, key: str) -> dict:
    """A mapping-valued option of a configuration, {} where unset; a plain value is one line (a real
    configuration is not checked against the documented fields: `kv_cache_config: 5` was an AttributeError)."""
    v = o.get(key)
    if v is not None and not isinstance(v, dict):
        raise InputError(key, v, "a mapping of TensorRT-LLM fields: " + ", ".join(nested_keys("trtllm", key)))
    return v or {}


register_exporter(TRTLLMExporter())
