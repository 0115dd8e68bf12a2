"""Engine launch configurations for a deployment, and the way back.

`export_config` writes what starts one instance of a deployment in an engine: a `vllm serve --config`
YAML, an SGLang `launch_server` command, or a `trtllm-serve` command with its `extra_llm_api_options`
YAML; `export_dynamo` writes a Dynamo DynamoGraphDeployment with a prefill and a decode pool for a
disaggregated point. Every option name comes from the engine's data file (data/engines/*.toml: its
documented options at a stated version, with the source). Each file carries one header line with what
the engine cannot hold (the GPU, the instance count, the assumed acceptance and the predicted figures);
`read_export` rebuilds the deployment from the engine options plus that line."""
from __future__ import annotations

import json
import math
import shlex
import tomllib
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import numpy as np

from llm_codesign.errors import InputError, parse_nested
from llm_codesign.explore import yaml_subset
from llm_codesign.spec import engines
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding
from llm_codesign.spec.precision import Precision, get_dtype

ENGINES = ("vllm", "sglang", "trtllm", "dynamo")
HEADER = "# llm-codesign export: "
ONLINE_QUANTIZATION = ("fp8", "fp8_per_block")  # methods that quantize a BF16 checkpoint as it loads (vLLM, SGLang)


@lru_cache(maxsize=None)
def engine_spec(name: str) -> dict:
    """An engine's documented options (data/engines/NAME.toml) with its version and source."""
    if name not in ENGINES:
        raise InputError("engine", name, "one of: " + ", ".join(ENGINES))
    return tomllib.loads(resources.files("llm_codesign").joinpath(f"data/engines/{name}.toml").read_text())


def nested_keys(engine: str, option: str) -> tuple[str, ...]:
    """The documented fields of an option that takes a mapping (data/engines/NAME.toml [nested.OPTION]);
    empty where the option takes none."""
    n = engine_spec(engine).get("nested", {}).get(option)
    return tuple(n["keys"]) if n else ()


def _nested(engine: str, option: str, **fields) -> dict:
    """The mapping of a nested option, every key one of the fields the engine data documents for it (a
    key missing there is this module's error, raised before anything is written)."""
    keys = nested_keys(engine, option)
    bad = [k for k in fields if k not in keys]
    if bad:
        raise KeyError(f"{option}.{bad[0]} is not a documented {engine} {engine_spec(engine)['version']} field "
                       f"(data/engines/{engine}.toml [nested.{option}])")
    return fields


def _ints(plan: Plan) -> tuple[int, ...]:
    return tuple(int(np.asarray(x).reshape(-1)[0]) for x in (plan.tp, plan.pp, plan.ep, plan.moe_tp, plan.adp, plan.kvp))


def _hf_id(model: ModelSpec) -> str:
    return model.hf_ids[0] if model.hf_ids else model.name


def _refuse(engine: str, plan: Plan, why: str):
    raise InputError("engine", engine, f"{why} (plan {plan.label()}); export this plan for another engine")


def _weight_option(model: ModelSpec, prec: Precision, engine: str) -> str | None:
    """The engine's quantization method for the weight format, None where it is the checkpoint's own."""
    if prec.weight == model.default_precision.weight:
        return None
    table = engine_spec(engine)["quantization"]
    if prec.weight.name not in table:
        raise InputError("weight_dtype", prec.weight.name, f"a format {engine} loads ({', '.join(table) or 'the checkpoint own'})")
    return table[prec.weight.name]


def _kv_option(prec: Precision, engine: str) -> str:
    table = engine_spec(engine)["kv_cache_dtype"]
    if prec.kv.name not in table:
        raise InputError("kv_dtype", prec.kv.name, f"a KV-cache format {engine} stores ({', '.join(table)})")
    return table[prec.kv.name]


def _per_rank(concurrency: int, adp: int) -> int:
    return max(1, math.ceil(concurrency / adp))


def vllm_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """`vllm serve --config` keys for one instance (vLLM runs experts all-EP or all-TP, attention DP as DP ranks)."""
    tp, pp, ep, mtp, adp, kvp = _ints(dep.plan)
    stage = tp * adp * kvp
    if model.is_moe and ep > 1 and ep != stage:
        _refuse("vllm", dep.plan, f"vLLM runs the experts expert-parallel over all {stage} GPUs of a stage or tensor-parallel, not EP{ep} x MoE-TP{mtp}")
    o = {"model": _hf_id(model), "tensor-parallel-size": tp * kvp, "pipeline-parallel-size": pp}
    if adp > 1:
        o["data-parallel-size"] = adp
    if kvp > 1:
        o["decode-context-parallel-size"] = kvp  # DCP shards the KV cache over ranks of the TP group
    if model.is_moe and ep > 1:
        o["enable-expert-parallel"] = True
    if q := _weight_option(model, dep.precision, "vllm"):
        o["quantization"] = q
    o["kv-cache-dtype"] = _kv_option(dep.precision, "vllm")
    o["max-num-seqs"] = _per_rank(concurrency, adp)  # each DP rank schedules its own batch
    o["max-num-batched-tokens"] = dep.step_tokens
    o["enable-chunked-prefill"] = True
    o["gpu-memory-utilization"] = engines.KV_BUDGET["vllm"][1]
    if dep.spec is not None:
        draft = {"model": dep.spec.draft_model} if dep.spec.method in ("eagle3", "draft") and dep.spec.draft_model else {}
        o["speculative-config"] = _nested("vllm", "speculative-config", method=engine_spec("vllm")["spec_method"][dep.spec.method],
                                          num_speculative_tokens=dep.spec.k, **draft)
    return o


def sglang_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """`sglang.launch_server` flags (without dashes) for one instance; --tp-size counts a stage's GPUs."""
    tp, pp, ep, mtp, adp, kvp = _ints(dep.plan)
    stage = tp * adp * kvp
    o = {"model-path": _hf_id(model), "tp-size": stage, "pp-size": pp}
    if adp > 1:
        o["attn-dp-size"] = adp
    if kvp > 1:
        o["dcp-size"] = kvp
    if model.is_moe and ep > 1:
        o["ep-size"] = ep  # the MoE TP width is what tp-size leaves after EP (fields/parallel.py moe_tp_size)
    if q := _weight_option(model, dep.precision, "sglang"):
        o["quantization"] = q
    o["kv-cache-dtype"] = _kv_option(dep.precision, "sglang")
    o["max-running-requests"] = concurrency
    o["chunked-prefill-size"] = dep.step_tokens
    frac = engines.sglang_static_fraction(dep.gpu, tp, pp, adp, spec_method=dep.spec.method if dep.spec else None, chunk=dep.step_tokens)
    o["mem-fraction-static"] = float(np.asarray(frac).reshape(-1)[0])
    if dep.spec is not None:
        o["speculative-algorithm"] = engine_spec("sglang")["spec_method"][dep.spec.method]
        o["speculative-num-steps"] = dep.spec.k
        o["speculative-eagle-topk"] = 1
        o["speculative-num-draft-tokens"] = dep.spec.k + 1
        if dep.spec.method in ("eagle3", "draft") and dep.spec.draft_model:
            o["speculative-draft-model-path"] = dep.spec.draft_model
    return o


def trtllm_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """TorchLlmArgs fields (the extra_llm_api_options YAML) for one instance. TensorRT-LLM's attention DP
    gives every rank its own attention (TP1), its Helix is context parallelism of type HELIX."""
    tp, pp, ep, mtp, adp, kvp = _ints(dep.plan)
    if adp > 1 and tp > 1:
        _refuse("trtllm", dep.plan, "TensorRT-LLM's attention DP runs attention TP1 on every rank, not DP x TP")
    o = {"tensor_parallel_size": tp * adp, "pipeline_parallel_size": pp}
    if model.is_moe:
        o["moe_expert_parallel_size"] = ep
        o["moe_tensor_parallel_size"] = mtp
    if adp > 1:
        o["enable_attention_dp"] = True
    if kvp > 1:
        o["context_parallel_size"] = kvp
        o["cp_config"] = _nested("trtllm", "cp_config", cp_type=engine_spec("trtllm")["context_parallel"]["kvp"])
    o["max_batch_size"] = _per_rank(concurrency, adp)
    o["max_num_tokens"] = dep.step_tokens
    o["enable_chunked_prefill"] = True
    o["kv_cache_config"] = _nested("trtllm", "kv_cache_config", dtype=_kv_option(dep.precision, "trtllm"),
                                   free_gpu_memory_fraction=engines.KV_BUDGET["trtllm"][1])
    o["cuda_graph_config"] = _nested("trtllm", "cuda_graph_config", enable_padding=True, max_batch_size=o["max_batch_size"])
    if dep.spec is not None:
        draft = {"speculative_model": dep.spec.draft_model} if dep.spec.method in ("eagle3", "draft") and dep.spec.draft_model else {}
        o["speculative_config"] = _nested("trtllm", "speculative_config", decoding_type=engine_spec("trtllm")["spec_method"][dep.spec.method],
                                          max_draft_len=dep.spec.k, **draft)
    return o


BUILDERS = {"vllm": vllm_options, "sglang": sglang_options, "trtllm": trtllm_options}


def _header(model: ModelSpec, dep: Deployment, *, concurrency: int, replicas: int, extra: dict | None = None) -> str:
    meta = {"model": model.name, "gpu": dep.gpu.id, "num_gpus": dep.num_gpus, "replicas": replicas, "backend": dep.backend,
            "concurrency": concurrency, "weight_dtype": dep.precision.weight.name, "activation_dtype": dep.precision.activation.name,
            "kv_dtype": dep.precision.kv.name, "cpp": dep.cpp}
    if dep.spec is not None:
        meta["spec"] = {"method": dep.spec.method, "k": dep.spec.k, "mean_accepted": dep.spec.mean_accepted,
                        "rates": list(dep.spec.rates), "draft_model": dep.spec.draft_model}
    meta.update(extra or {})
    return HEADER + json.dumps(meta, default=float)


def _flags(opts: dict) -> list[str]:
    """Options as command-line words: --key value, --key for true, JSON for mappings."""
    out = []
    for k, v in opts.items():
        if v is True:
            out.append(f"--{k}")
        elif v is False or v is None:
            continue
        else:
            out += [f"--{k}", json.dumps(v) if isinstance(v, (dict, list)) else str(v)]
    return out


def export_config(model: ModelSpec, dep: Deployment, *, engine: str, concurrency: int, replicas: int = 1,
                  file_name: str = "config.yaml", extra: dict | None = None) -> str:
    """The launch configuration of one instance of `dep` in `engine` (text of the file to write)."""
    if engine == "dynamo":
        raise InputError("engine", engine, "vllm, sglang or trtllm for an aggregated deployment (dynamo takes a disaggregated one: --prefill/--decode)")
    spec = engine_spec(engine)
    if dep.backend != engine:
        raise InputError("backend", dep.backend, f"the exported engine ({engine}): the estimate must price the engine that runs it")
    if concurrency < 1:
        raise InputError("concurrency", concurrency, "a positive integer")
    opts = BUILDERS[engine](model, dep, concurrency)
    head = [_header(model, dep, concurrency=concurrency, replicas=replicas, extra=extra),
            f"# {spec['engine']} {spec['version']} options ({spec['source']})"]
    if dep.precision.weight != model.default_precision.weight and (engine == "trtllm" or _weight_option(model, dep.precision, engine)
                                                                    not in ONLINE_QUANTIZATION):
        head.append(f"# weights: {dep.precision.weight.name} is read from a checkpoint already quantized to it (the "
                    f"{model.default_precision.weight.name} one named here is not): point the model at such a checkpoint")
    if replicas > 1:
        head.append(f"# run {replicas} instances of this configuration behind a load balancer ({dep.num_gpus} GPUs each)")
    if engine == "vllm":
        return "\n".join(head + [f"# launch: vllm serve --config {file_name}", yaml_subset.dump(opts)]) + "\n"
    if engine == "sglang":
        words = _flags(opts)
        starts = [i for i, w in enumerate(words) if w.startswith("--")] + [len(words)]
        lines = ["python -m sglang.launch_server"] + [shlex.join(words[a:b]) for a, b in zip(starts[:-1], starts[1:], strict=True)]
        return "\n".join(["#!/bin/sh"] + head + [" \\\n  ".join(lines)]) + "\n"
    cmd = shlex.join(["trtllm-serve", _hf_id(model), "--backend", "pytorch", "--extra_llm_api_options", file_name])
    return "\n".join(head + [f"# launch: {cmd}", yaml_subset.dump(opts)]) + "\n"


# ---------------------------------------------------------------------------------------------------------
# the way back: an exported file -> model, deployment, concurrency


@dataclass(frozen=True)
class Imported:
    engine: str
    model: ModelSpec
    deployment: Deployment
    concurrency: int
    replicas: int
    options: dict


def _meta(text: str, origin: str = "export") -> dict:
    for line in text.splitlines():
        if line.startswith(HEADER):
            try:
                return parse_nested(json.loads, line[len(HEADER):], "export", origin)
            except json.JSONDecodeError:
                raise InputError("export", origin, f"a file written by `llm-codesign export` (its '{HEADER.strip()}' line followed by JSON)") from None
    raise InputError("export", text.splitlines()[0] if text else "", f"a file written by `llm-codesign export` (its '{HEADER.strip()}' line)")


def _engine_of(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# ") and " options (" in line:
            name = line[2:].split(" ", 1)[0]
            if name in ENGINES:
                return name
    if "sglang.launch_server" in text:
        return "sglang"
    raise InputError("export", "engine", "a file written by `llm-codesign export`")


def _parse_flags(words: list[str], origin: str = "export") -> dict:
    out, i = {}, 0
    while i < len(words):
        w = words[i]
        if not w.startswith("--"):
            raise InputError("export", w, "--flag value pairs")
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            v = words[i + 1]
            try:
                v = parse_nested(json.loads, v, "export", origin)
            except json.JSONDecodeError:
                pass
            out[w[2:]] = v
            i += 2
        else:
            out[w[2:]] = True
            i += 1
    return out


def _sglang_words(text: str) -> list[str]:
    body = " ".join(line for line in text.replace("\\\n", " ").splitlines() if not line.startswith("#"))
    words = shlex.split(body)
    i = words.index("sglang.launch_server")
    return words[i + 1:]


def _precision(model: ModelSpec, engine: str, quant: str | None, kv: str, meta: dict) -> Precision:
    base = model.default_precision
    if engine == "trtllm":  # the weight format is the checkpoint's (stated in the header)
        w = get_dtype(meta["weight_dtype"], "weight_dtype") if meta.get("weight_dtype") else base.weight
    elif quant is None:
        w = base.weight
    else:
        rev: dict[str, str] = {}
        for ours, theirs in engine_spec(engine)["quantization"].items():
            rev.setdefault(theirs, ours)  # several formats may share a method: the first is the one we export
        if quant not in rev:
            raise InputError("quantization", quant, "a method llm-codesign exports: " + ", ".join(rev))
        w = get_dtype(rev[quant], "weight_dtype")
    kv_rev = {}
    for ours, theirs in engine_spec(engine)["kv_cache_dtype"].items():
        kv_rev.setdefault(theirs, ours)
    if kv not in kv_rev:
        raise InputError("kv_cache_dtype", kv, "one of: " + ", ".join(kv_rev))
    kvd = base.kv if kv == "auto" else get_dtype(kv_rev[kv], "kv_dtype")
    if w == base.weight:
        p = replace(base, kv=kvd)
    else:
        p = Precision.of(w.name, None, kvd.name)
    if meta.get("activation_dtype"):
        p = replace(p, activation=get_dtype(meta["activation_dtype"], "activation_dtype"))
    return p


def _spec(meta: dict, method_value: str | None, k: int | None, engine: str, draft: str | None) -> SpecDecoding | None:
    if method_value is None:
        return None
    rev = {v: m for m, v in engine_spec(engine)["spec_method"].items()}
    if method_value not in rev:
        raise InputError("speculative method", method_value, "one of: " + ", ".join(rev))
    s = meta.get("spec") or {}
    return SpecDecoding(rev[method_value], int(k), s.get("mean_accepted"), tuple(s.get("rates") or ()), draft or s.get("draft_model"))


def _plan_from(engine: str, o: dict, model: ModelSpec) -> tuple[Plan, int]:
    """(plan, concurrency per instance) from an engine's options."""
    if engine == "vllm":
        kvp = int(o.get("decode-context-parallel-size", 1))
        tp, pp, adp = int(o["tensor-parallel-size"]) // kvp, int(o.get("pipeline-parallel-size", 1)), int(o.get("data-parallel-size", 1))
        stage = tp * adp * kvp
        ep, mtp = (stage, 1) if o.get("enable-expert-parallel") else (1, stage if model.is_moe else 1)
        return Plan(tp, pp, ep, mtp, adp, kvp), int(o["max-num-seqs"]) * adp
    if engine == "sglang":
        stage, pp = int(o["tp-size"]), int(o.get("pp-size", 1))
        adp, kvp = int(o.get("attn-dp-size", 1)), int(o.get("dcp-size", 1))
        ep = int(o.get("ep-size", 1)) if model.is_moe else 1
        return Plan(stage // (adp * kvp), pp, ep, stage // ep if model.is_moe else 1, adp, kvp), int(o["max-running-requests"])
    adp_on = bool(o.get("enable_attention_dp"))
    t = int(o["tensor_parallel_size"])
    tp, adp = (1, t) if adp_on else (t, 1)
    kvp = int(o.get("context_parallel_size", 1))
    helix = engine_spec("trtllm")["context_parallel"]["kvp"]
    if kvp > 1 and (o.get("cp_config") or {}).get("cp_type") != helix:
        # only Helix shards the KV cache along the sequence as the cost model prices context parallelism
        raise InputError("export", f"cp_config.cp_type: {(o.get('cp_config') or {}).get('cp_type')!r}",
                         f"{helix!r} with context_parallel_size > 1 (Helix is the context parallelism modelled)")
    ep, mtp = (int(o.get("moe_expert_parallel_size", 1)), int(o.get("moe_tensor_parallel_size", 1))) if model.is_moe else (1, 1)
    return Plan(tp, int(o.get("pipeline_parallel_size", 1)), ep, mtp, adp, kvp), int(o["max_batch_size"]) * adp


def read_export(text: str, origin: str = "export") -> Imported:
    """Rebuild the model, deployment and concurrency of an exported vLLM, SGLang or TensorRT-LLM file
    (`origin`: its name, for errors)."""
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    meta = _meta(text, origin)
    engine = _engine_of(text)
    if engine == "dynamo":
        raise InputError("export", "dynamo", "a vLLM, SGLang or TensorRT-LLM export (read a Dynamo one with read_dynamo)")
    if engine == "sglang":
        o = _parse_flags(_sglang_words(text), origin)
        model_ref = o["model-path"]
    else:
        o = yaml_subset.load(text, origin)
        model_ref = o.get("model") or _trtllm_model(text)
    allowed = set(engine_spec(engine)["options"])
    unknown = sorted(set(o) - allowed)
    if unknown:
        raise InputError("export", unknown[0], f"a documented {engine} {engine_spec(engine)['version']} option")
    _check_nested(engine, o)
    model = get_model(model_ref)
    plan, conc = _plan_from(engine, o, model)
    gpu = get_gpu(meta["gpu"])
    if engine == "vllm":
        quant, kv, sc = o.get("quantization"), o.get("kv-cache-dtype", "auto"), o.get("speculative-config") or {}
        spec = _spec(meta, sc.get("method"), sc.get("num_speculative_tokens"), engine, sc.get("model"))
        mnt = o.get("max-num-batched-tokens")
    elif engine == "sglang":
        quant, kv = o.get("quantization"), o.get("kv-cache-dtype", "auto")
        spec = _spec(meta, o.get("speculative-algorithm"), o.get("speculative-num-steps"), engine, o.get("speculative-draft-model-path"))
        mnt = o.get("chunked-prefill-size")
    else:
        quant, kv, sc = None, (o.get("kv_cache_config") or {}).get("dtype", "auto"), o.get("speculative_config") or {}
        spec = _spec(meta, sc.get("decoding_type"), sc.get("max_draft_len"), engine, sc.get("speculative_model"))
        mnt = o.get("max_num_tokens")
    dep = Deployment(gpu=gpu, num_gpus=int(np.asarray(plan.gpus)), plan=plan, precision=_precision(model, engine, quant, kv, meta),
                     backend=engine, spec=spec, max_num_tokens=int(mnt) if mnt else None, cpp=bool(meta.get("cpp")))
    return Imported(engine, model, dep, conc, int(meta.get("replicas", 1)), o)


def _check_nested(engine: str, o: dict) -> None:
    """Refuse a field of a mapping-valued option that the engine data does not document for it, and a
    plain value where the option takes a mapping."""
    for k, v in o.items():
        if nested_keys(engine, k) and v is not None and not isinstance(v, dict):
            raise InputError("export", f"{k}: {v!r}", f"a mapping of {engine} {engine_spec(engine)['version']} fields: "
                             + ", ".join(nested_keys(engine, k)))
        bad = sorted(set(v) - set(nested_keys(engine, k))) if isinstance(v, dict) else []
        if bad:
            raise InputError("export", f"{k}.{bad[0]}", f"a documented {engine} {engine_spec(engine)['version']} field of {k}: "
                             + (", ".join(nested_keys(engine, k)) or "none (it takes no mapping)"))


def _trtllm_model(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# launch: trtllm-serve "):
            return shlex.split(line[len("# launch: "):])[1]
    raise InputError("export", "model", "a TensorRT-LLM export with its '# launch: trtllm-serve MODEL' line")


# ---------------------------------------------------------------------------------------------------------
# Dynamo: a disaggregated deployment, two pools


def _worker_args(engine: str, model: ModelSpec, dep: Deployment, concurrency: int, mode: str) -> list[str]:
    """The command-line words of a Dynamo worker of `engine` in `mode` (prefill or decode)."""
    if engine == "trtllm":
        o = trtllm_options(model, dep, concurrency)
        args = {"model": _hf_id(model), "served-model-name": _hf_id(model), "disaggregation-mode": mode,
                "tensor-parallel-size": o.pop("tensor_parallel_size"), "pipeline-parallel-size": o.pop("pipeline_parallel_size")}
        if "moe_expert_parallel_size" in o:
            args["expert-parallel-size"] = o.pop("moe_expert_parallel_size")
        if o.pop("enable_attention_dp", False):
            args["enable-attention-dp"] = True
        args["max-batch-size"] = o.pop("max_batch_size")
        args["max-num-tokens"] = o.pop("max_num_tokens")
        args["free-gpu-memory-fraction"] = o["kv_cache_config"].pop("free_gpu_memory_fraction")
        args["override-engine-args"] = o  # the remaining TorchLlmArgs fields, an inline mapping
        return _flags(args)
    if engine == "vllm":
        return _flags({"disaggregation-mode": mode} | vllm_options(model, dep, concurrency))
    return _flags({"disaggregation-mode": mode} | sglang_options(model, dep, concurrency))


def export_dynamo(model: ModelSpec, *, prefill: Deployment, decode: Deployment, prefill_instances: int, decode_instances: int,
                  concurrency: int, name: str = "llm-codesign", extra: dict | None = None) -> str:
    """A DynamoGraphDeployment (Dynamo's Kubernetes resource) with the frontend and both worker pools.
    `concurrency` is the requests in flight over the whole deployment; each pool's batch is its share."""
    spec = engine_spec("dynamo")
    backend = decode.backend
    if prefill.backend != backend:
        raise InputError("backend", prefill.backend, f"the decode pool's engine ({backend})")
    if backend not in spec["modules"] or backend == "frontend":
        raise InputError("backend", backend, "trtllm, vllm or sglang")
    image = f"my-registry/{ {'trtllm': 'tensorrtllm', 'vllm': 'vllm', 'sglang': 'sglang'}[backend] }-runtime:my-tag"
    dec_conc = max(1, math.ceil(concurrency / decode_instances))
    # a prefill instance holds the prompts it is computing: at most what its step budget and the queue give it
    pre_conc = max(1, math.ceil(concurrency / prefill_instances))

    def component(cname, ctype, replicas, args, gpus=None):
        c = {"name": "main", "image": image, "command": ["python3", "-m", spec["modules"][ctype if ctype == "frontend" else backend]],
             "args": args}
        if gpus:
            c["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
        return {"name": cname, "type": ctype, "replicas": replicas, "podTemplate": {"spec": {"containers": [c]}}}

    doc = {"apiVersion": spec["api_version"], "kind": spec["kind"], "metadata": {"name": name},
           "spec": {"components": [
               component("Frontend", "frontend", 1, ["--http-port", "8000"]),
               component("prefill", "prefill", prefill_instances, _worker_args(backend, model, prefill, pre_conc, "prefill"), prefill.num_gpus),
               component("decode", "decode", decode_instances, _worker_args(backend, model, decode, dec_conc, "decode"), decode.num_gpus)]}}
    meta = {"model": model.name, "gpu": decode.gpu.id, "backend": backend, "concurrency": concurrency,
            "prefill": {"plan": prefill.plan.label(), "instances": prefill_instances, "num_gpus": prefill.num_gpus},
            "decode": {"plan": decode.plan.label(), "instances": decode_instances, "num_gpus": decode.num_gpus},
            "weight_dtype": decode.precision.weight.name, "activation_dtype": decode.precision.activation.name,
            "kv_dtype": decode.precision.kv.name}
    if decode.spec is not None:
        meta["spec"] = {"method": decode.spec.method, "k": decode.spec.k, "mean_accepted": decode.spec.mean_accepted,
                        "rates": list(decode.spec.rates), "draft_model": decode.spec.draft_model}
    meta.update(extra or {})
    head = [HEADER + json.dumps(meta, default=float),
            f"# dynamo {spec['version']} DynamoGraphDeployment ({spec['source']})",
            f"# workers: {backend} {engine_spec(backend)['version']} options ({engine_spec(backend)['source']})",
            f"# launch: {spec['launch'].format(file='FILE')}  (set the images first)"]
    return "\n".join(head + [yaml_subset.dump(doc)]) + "\n"


def read_dynamo(text: str, origin: str = "export") -> dict:
    """The two pools of an exported Dynamo deployment: {"prefill"|"decode": Imported-like dict}
    (`origin`: its name, for errors)."""
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    meta = _meta(text, origin)
    doc = yaml_subset.load(text, origin)
    backend = meta["backend"]
    gpu = get_gpu(meta["gpu"])
    out = {}
    for comp in doc["spec"]["components"]:
        if comp["type"] not in ("prefill", "decode"):
            continue
        args = _parse_flags(comp["podTemplate"]["spec"]["containers"][0]["args"], origin)
        args.pop("disaggregation-mode")
        if backend == "trtllm":
            o = dict(args.pop("override-engine-args"))
            o["kv_cache_config"] = dict(o["kv_cache_config"], free_gpu_memory_fraction=args.pop("free-gpu-memory-fraction"))
            o.update({"tensor_parallel_size": args["tensor-parallel-size"], "pipeline_parallel_size": args["pipeline-parallel-size"],
                      "max_batch_size": args["max-batch-size"], "max_num_tokens": args["max-num-tokens"]})
            if "expert-parallel-size" in args:
                o["moe_expert_parallel_size"] = args["expert-parallel-size"]
            if args.get("enable-attention-dp"):
                o["enable_attention_dp"] = True
            _check_nested("trtllm", o)
            model = get_model(args["model"])
        else:
            o = args
            model = get_model(o.get("model") or o["model-path"])
        plan, conc = _plan_from(backend, o, model)
        if backend == "vllm":
            quant, kv, sc = o.get("quantization"), o.get("kv-cache-dtype", "auto"), o.get("speculative-config") or {}
            spec, mnt = _spec(meta, sc.get("method"), sc.get("num_speculative_tokens"), backend, sc.get("model")), o.get("max-num-batched-tokens")
        elif backend == "sglang":
            quant, kv = o.get("quantization"), o.get("kv-cache-dtype", "auto")
            spec = _spec(meta, o.get("speculative-algorithm"), o.get("speculative-num-steps"), backend, o.get("speculative-draft-model-path"))
            mnt = o.get("chunked-prefill-size")
        else:
            quant, kv, sc = None, o["kv_cache_config"].get("dtype", "auto"), o.get("speculative_config") or {}
            spec, mnt = _spec(meta, sc.get("decoding_type"), sc.get("max_draft_len"), backend, sc.get("speculative_model")), o.get("max_num_tokens")
        dep = Deployment(gpu=gpu, num_gpus=int(np.asarray(plan.gpus)), plan=plan, precision=_precision(model, backend, quant, kv, meta),
                         backend=backend, spec=spec, max_num_tokens=int(mnt) if mnt else None)
        out[comp["type"]] = {"model": model, "deployment": dep, "instances": int(comp["replicas"]), "concurrency": conc}
    return out
