"""Engine launch configurations for a deployment, and the way back.

`export_config` writes what starts one instance of a deployment in an engine, as the engine's exporter
builds it (explore/export_engines/: a `vllm serve --config` YAML, an SGLang `launch_server` command, a
`trtllm-serve` command with its `extra_llm_api_options` YAML); `export_dynamo` writes a Dynamo
DynamoGraphDeployment with a prefill and a decode pool of one engine's workers for a disaggregated
point. Every option name comes from the engine's data file (data/engines/*.toml: its documented options
at a stated version, with the source). Each file carries one header line with what the engine cannot
hold (the GPU, the instance count, the assumed acceptance and the predicted figures); `read_export`
rebuilds the deployment from the engine options plus that line."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NoReturn

import numpy as np

from llm_codesign.errors import InputError, MissingInput, parse_nested
from llm_codesign.explore import yaml_io
from llm_codesign.explore.export_engines import DYNAMO, EXPORTERS, engine_spec, exportable, exporter
from llm_codesign.explore.export_engines.base import (
    CHECKPOINT_PLACEHOLDER,
    check_nested,
    code_lines,
    instruct_ids,
    modelopt_elsewhere,
    parse_flags,
    per_rank,
    quantized_checkpoint,
    quark_elsewhere,
    read_value,
    resolve_option,
    switch,
    weight_option,
    whole,
)
from llm_codesign.spec.engines import check_runs, get_engine
from llm_codesign.spec.harness import DEFAULT_ARRIVAL, check_arrival, longest_request
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, acceptance_rates_of, check_whole_prompt
from llm_codesign.spec.precision import Precision, get_dtype

HEADER = "# llm-codesign export: "
ONLINE_QUANTIZATION = ("fp8", "fp8_per_block")  # methods that quantize a BF16 checkpoint as it loads (vLLM, SGLang)


def _header(model: ModelSpec, dep: Deployment, *, concurrency: int, replicas: int, extra: dict | None = None) -> str:
    meta = {"model": model.name, "gpu": dep.gpu.id, "num_gpus": dep.num_gpus, "replicas": replicas, "backend": dep.backend,
            "concurrency": concurrency, "weight_dtype": dep.precision.weight.name, "activation_dtype": dep.precision.activation.name,
            "kv_dtype": dep.precision.kv.name, "cpp": dep.cpp, **attn_said(dep.precision), **shape_said(model)}
    if dep.spec is not None:
        meta["spec"] = {"method": dep.spec.method, "k": dep.spec.k, "mean_accepted": dep.spec.mean_accepted,
                        "rates": list(dep.spec.at(dep.spec.k).rates if dep.spec.rates else ()), "draft_model": dep.spec.draft_model}
    meta.update(extra or {})
    return HEADER + json.dumps(meta, default=float)


def model_shape(model: ModelSpec) -> str:
    """A digest of `model`'s shape, its name, checkpoint ids and notes left out: a config.json read as a dict ("custom"),
    from its path ("q_awq4") or pasted under another name is one shape, the one an export's import may be given."""
    import hashlib

    return hashlib.sha256(repr(replace(model, name="", hf_ids=(), notes=())).encode()).hexdigest()[:16]


def shape_said(model: ModelSpec) -> dict:
    """What a header records of a model the registry does not hold: its shape's digest (model_shape), by which `import`
    takes the config.json it was exported from under any name (a dict frontier's file said "custom", and its config.json,
    q_awq4.json, was refused by name: crev11 #7). A bundled model is named by its registry name alone."""
    from llm_codesign.spec.registry import bundled

    return {} if bundled(model.name) == model else {"model_shape": model_shape(model)}


def same_model(model: ModelSpec, meta: dict) -> bool:
    """Whether `model` is the one an export's header states: by name, or by shape where it records one (shape_said)."""
    return model.name == meta.get("model") or (bool(meta.get("model_shape")) and model_shape(model) == meta["model_shape"])


def attn_said(prec: Precision) -> dict:
    """The attention projections' format a header records where the weights are MXFP4 (AMD's Quark MXFP4 R1 keeps them
    BF16, spec.plan.quark_mxfp4) or the checkpoint keeps them wider (Meta's FP8 Maverick: spec.plan.checkpoint_precision),
    which `import` reads back (_precision): without it an MI355X MXFP4 R1 point re-imported with MXFP4 attention, 3-8%
    faster and 3.3 GB lighter than the checkpoint it names (crev11 #3), and an FP8 Maverick one FP8 (newc12 #1)."""
    wider = prec.attn_weight is not None and prec.attn_weight != prec.weight
    return {"attn_weight_dtype": prec.attn.name} if prec.weight.name == "mxfp4" or wider else {}


def priced_with(calibration: str | None) -> dict:
    """What an answer a file keeps (export's and export-point's header, pareto --json) records of the profile its figures
    are priced with, none for the bundled one: `import` says which to pass to price it alike (cli.export.profile_note)."""
    return {"calibration": calibration} if calibration else {}


def recorded_profile(calibration, gpu) -> tuple[str | None, str | None]:
    """(path, unrecorded) of the profile an answer a file keeps was priced with: (None, None) for the bundled one (None,
    or a Calibration equal to the GPU's bundled fit), (its path, None) for a path or a written Profile, else (None, what
    it was: "a Calibration object" or "an unwritten Profile"), which no path names. The one rule of Frontier.profile
    (pareto --json records it) and lc.export_point (which refuses an unrecorded one)."""
    from pathlib import Path

    from llm_codesign.cost.calibration import Calibration, calibration_for

    if isinstance(calibration, Calibration):
        return (None, None) if calibration == calibration_for(gpu) else (None, "a Calibration object")
    if calibration is None or isinstance(calibration, (str, Path)):
        return (None if calibration is None else str(calibration)), None
    path = getattr(calibration, "path", None)  # a Profile (measure.calibrate): its file where it was written
    return (str(path), None) if path is not None else (None, "an unwritten Profile")


def same_profile(a: str | None, b: str | None) -> bool:
    """Whether two profiles' paths (None: the bundled one) name one file, however each is spelt (os.path.realpath)."""
    import os

    return a == b or (a is not None and b is not None and os.path.realpath(a) == os.path.realpath(b))


def point_index(index, n: int, *, of: str, where: str = "") -> int:
    """A frontier point's index among `n`, from 0 (the throughput end) or, as Python indexes, from -1 (the last, the
    interactive end), as a non-negative index; else one line with the range (newc12 #16: --index -1 was refused)."""
    from llm_codesign.spec.validation import as_int

    i = as_int("index", index, lo=-n, hi=n - 1, what=f"a point of {of}, -{n} to {n - 1} (0 the throughput end, -1 or {n - 1} "
                                                     f"the interactive end){where}")
    return i % n


def point_config(model: ModelSpec, dep: Deployment, *, concurrency: int, replicas: int = 1, isl: int | None, osl: int | None,
                 predicted: dict, calibration: str | None = None, file_name: str | None = None, arrival: str | None = None,
                 prefix_hit: float = 0.0) -> tuple[str, str]:
    """(file name, text) of the launch configuration of one frontier point: one instance of `dep` with `concurrency`
    requests in flight, `replicas` of it, its predicted metrics and the profile they were priced with in the header.
    `file_name` (the name the file launches itself by) defaults to the engine's own (EXPORTERS). The one code path of
    `export-point`, `lc.export_point` and the page's launch configuration."""
    name = file_name or (EXPORTERS[dep.backend].file_name if dep.backend in EXPORTERS else "config.yaml")
    return name, export_config(model, dep, engine=dep.backend, concurrency=concurrency, replicas=replicas, file_name=name,
                               extra={"isl": isl, "osl": osl, **workload_said(arrival, prefix_hit), "predicted": predicted,
                                      **priced_with(calibration)})


def workload_said(arrival: str | None, prefix_hit: float = 0.0) -> dict:
    """What a file's header records of the workload its predicted figures were priced at beyond the lengths: the arrival
    and the prefix cache's hit share, each where not the default, which `import` reads back (a burst point of a frontier
    at --prefix-hit 0.5 re-imported in waves with no hits: TTFT 1596 -> 188 ms, TPOT 14.15 -> 30.48, crev11 #1)."""
    return {**({"arrival": arrival} if arrival and arrival != DEFAULT_ARRIVAL else {}), **({"prefix_hit": prefix_hit} if prefix_hit else {})}


def launched(model: ModelSpec, dep: Deployment, engine: str) -> tuple[ModelSpec, list[str]]:
    """`model` as the engine launches it at `dep`'s weights, with the header lines that say so. Weights the engine cannot
    quantize as they load (TensorRT-LLM: none; vLLM and SGLang: ONLINE_QUANTIZATION) are read from a checkpoint already
    quantized: the registry's checkpoint of this shape at that format where it has one (llama-3.1-70b at fp8:
    nvidia/Llama-3.1-70B-Instruct-FP8, not the bf16 meta-llama/Llama-3.1-70B), else the header says to point at one.
    The one rule of export_config (a single deployment, the page's launch file) and export_dynamo (both pools)."""
    x, w = exporter(engine), dep.precision.weight
    # a model read from a bare .json or a pasted config names no checkpoint: the launch names a placeholder, said here
    where = [] if model.hf_ids else [f"# model: {CHECKPOINT_PLACEHOLDER} is a placeholder: {model.name}'s config names no checkpoint "
                                     "folder; put the folder holding its config.json and weights there"]
    if model.hf_ids and Path(model.hf_ids[0]).is_absolute():  # a local folder, resolved where the config was read (spec.model)
        where = [f"# model: {model.hf_ids[0]} is the checkpoint folder {model.name}'s config.json was read from, as an absolute "
                 "path: the launch and its import work from any directory"]
    model = instruct_first(model)
    if w == model.default_precision.weight:
        return model, where
    # a checkpoint already quantized before online quantization (vLLM's and SGLang's `quantization: fp8` is per-tensor dynamic
    # FP8 of the BF16 weights, another load path and accuracy than the checkpoint whose accuracy the answer quotes): every
    # engine serves the one checkpoint, at its own format, so no quantization option is written (weight_option: None)
    if ck := quantized_checkpoint(model, w, dep.gpu, engine):
        from llm_codesign.spec.registry import get_model

        return (replace(model, hf_ids=(ck,), default_precision=get_model(ck).default_precision),
                [f"# weights: {w.name}, read from {ck} (the registry's {w.name} checkpoint of this shape)"])
    if x.quantization_option and weight_option(model, dep.precision, engine) in ONLINE_QUANTIZATION:
        return model, where + [said for said in (modelopt_elsewhere(model, w, dep.gpu, engine),) if said]
    if said := quark_elsewhere(model, w, dep.gpu):
        # AMD's MXFP4 R1 on NVIDIA: not the launch's checkpoint, and no --quantization mxfp4 either: that is gpt-oss's loader,
        # which on the FP8 checkpoint named here fails at start (vLLM's ModelConfig._verify_quantization: the config's fp8
        # against the argument's mxfp4); the MXFP4 checkpoint put in its place carries its own quantization_config
        return replace(model, default_precision=replace(model.default_precision, weight=w)), where + [said]
    return model, where + [f"# weights: {w.name} is read from a checkpoint already quantized to it (the "
                           f"{model.default_precision.weight.name} one named here is not): point the model at such a checkpoint"]


def instruct_first(model: ModelSpec) -> ModelSpec:
    """`model` with its registry's instruction-tuned id first where it lists one (export_engines.base.instruct_ids)."""
    ids = instruct_ids(model.hf_ids)
    return model if ids == model.hf_ids else replace(model, hf_ids=ids)


def engine_runs(model: ModelSpec, dep: Deployment) -> None:
    """Before an exporter writes `dep`: estimate's refusal (serve.estimate.check) of a plan whose sides disagree or that
    makes no instance of its GPUs, which Deployment leaves to it (a hand-built vLLM TP2 EP8 on 8 GPUs, whose launch would
    take the experts EP2 over its TP2); any plan it passes, Deployment has held to the engine's one rule (spec.engines.
    check_runs: Engine.runs_plans, precision_refusal). The exporters refuse no plan of their own."""
    from llm_codesign.serve.estimate import check

    check(model, dep)


def refuse_headless_draft(dep: Deployment) -> None:
    """An EAGLE-3 (or draft-model) launch names its drafter: none of the engines has a default one, so a file without it
    fails at start (vLLM: "num_speculative_tokens was provided but without speculative model.", SpeculativeConfig.
    __post_init__, vllm/config/speculative.py, which sets a model itself only for mtp/ngram/suffix; SGLang's EAGLE3 reads
    --speculative-draft-model-path; TensorRT-LLM's Eagle3DecodingConfig its speculative_model). Estimate prices the
    drafter's cost without one; the launch file cannot be written without it (crev10 #6)."""
    if dep.spec is not None and dep.spec.method in ("eagle3", "draft") and not dep.spec.draft_model:
        raise InputError("draft_model", None, f"the drafter's checkpoint with --spec {dep.spec.method} (--draft-model REPO, "
                                              "e.g. an EAGLE-3 head's repository): the engines have no default drafter")




def refuse_cpp(dep: Deployment, engine: str) -> None:
    """A --cpp export to an engine whose launch file cannot run it: priced pipelined, the file would run one request's
    chunks one after another (Llama-3.1-70B PP4 on H100, 8,192-token prompt in 2,048-token chunks: TTFT 793 ms priced,
    1,715 ms as the same file without its header is priced), so it is refused rather than written."""
    if dep.cpp and not get_engine(engine).pipelines_request_chunks:  # SGLang's does by default (Engine.pipelines_request_chunks)
        raise InputError("cpp", dep.cpp, f"left out for {engine}: no {engine} launch option pipelines one request's prefill chunks "
                                      f"over PP stages (SGLang's scheduler does: --backend sglang)")


def with_drafter(dep: Deployment, draft_model: str | None) -> Deployment:
    """A frontier point's plan with the EAGLE-3 head's repository export-point names (--draft-model, lc.export_point's
    draft_model): pareto searches EAGLE-3 without one, priced from the target's shape (serve.aggregated.draft_model),
    so its points' files need it, which the export asks for by that name (crev11 #8). A draft model is priced by its
    own shape, so it is the frontier's, not given after the search; the head is the point's acceptance's, not re-read."""
    if draft_model is None:
        return dep
    if dep.spec is None or dep.spec.method != "eagle3":
        raise InputError("draft_model", draft_model, "left out: only an EAGLE-3 point's head is named at export (a draft "
                                                     "model is priced by its shape: search again with --draft-model)")
    if dep.spec.draft_model and dep.spec.draft_model != draft_model:
        raise InputError("draft_model", draft_model, f"left out or the frontier's own ({dep.spec.draft_model})")
    return replace(dep, spec=replace(dep.spec, draft_model=draft_model))


def export_config(model: ModelSpec, dep: Deployment, *, engine: str, concurrency: int, replicas: int = 1,
                  file_name: str = "config.yaml", extra: dict | None = None) -> str:
    """The launch configuration of one instance of `dep` in `engine` (text of the file to write)."""
    if engine == DYNAMO:
        *rest, last = exportable()[:-1]
        raise InputError("engine", engine, f"{', '.join(rest)} or {last} for an aggregated deployment (dynamo takes a disaggregated one: "
                         "--prefill/--decode)")
    x = exporter(engine)
    spec = engine_spec(engine)
    if dep.backend != engine:
        raise InputError("backend", dep.backend, f"the exported engine ({engine}): the estimate must price the engine that runs it")
    if concurrency < 1:
        raise InputError("concurrency", concurrency, "a positive integer")
    refuse_headless_draft(dep)
    refuse_cpp(dep, engine)
    head = [_header(model, dep, concurrency=concurrency, replicas=replicas, extra=extra),
            f"# {spec['engine']} {spec['version']} options ({spec['source']})"]
    model, said = launched(model, dep, engine)
    head += said
    engine_runs(model, dep)
    opts = x.with_context(x.options(model, dep, concurrency), model, dep, _request_tokens(extra))
    if engine == "trtllm" and (extra or {}).get("isl", 0) > dep.step_tokens:  # such a prompt runs only chunked (prompt_budget)
        opts["enable_chunked_prefill"] = True
    _whole_requests(model, dep, extra)
    if replicas > 1:
        head.append(f"# run {replicas} instances of this configuration behind a load balancer ({dep.num_gpus} GPU{'s' if dep.num_gpus != 1 else ''} each)")
    return x.render(opts, head=head, model=model, file_name=file_name, env=x.env(dep))


def _request_tokens(extra: dict | None) -> int | None:
    """The workload's longest request that an export's launch must admit (Exporter.with_context): isl + osl, or a closed
    loop's largest draws (spec.harness.longest_request); None where the export prices no workload."""
    work = extra or {}
    if not (work.get("isl") and work.get("osl")):
        return None
    return longest_request(work["isl"], work["osl"], work.get("arrival", DEFAULT_ARRIVAL))


def _whole_requests(model: ModelSpec, dep: Deployment, extra: dict | None) -> None:
    """A workload the launch refuses, refused in one line rather than written into a file that rejects it: the one rule
    estimate applies (spec.plan.check_whole_prompt; vLLM without chunked prefill caps its file's max-model-len at the step
    budget, SchedulerConfig.verify_max_model_len, vllm/config/scheduler.py:317-329@0.33.0, so the budget holds a request's
    prompt and output), and the model's context (its file's max-model-len is capped there too). Only where the file turns
    chunked prefill off: left at TensorRT-LLM's default, a prompt over the budget is written chunked (export_config)."""
    x = extra or {}
    if "isl" in x and "osl" in x and dep.chunked_prefill is False:
        model.check_context(int(x["isl"]), int(x["osl"]))
        check_whole_prompt(dep, int(x["isl"]), osl=int(x["osl"]))


# ---------------------------------------------------------------------------------------------------------
# the way back: an exported file -> model, deployment, concurrency


@dataclass(frozen=True)
class Imported:
    """What a configuration starts: one instance of `deployment` run as `replicas` copies with
    `concurrency` requests in flight each (None: the configuration caps none, so the engine's own
    default and the KV cache do), and the options read from it; `ignored`, a real configuration's
    options the deployment does not hold (an export has none); `unset_env`, the variables the engine needs to run the
    kernels the deployment is priced with that the file does not set (unset_env), each NAME=value."""
    engine: str
    model: ModelSpec
    deployment: Deployment
    concurrency: int | None
    replicas: int
    options: dict
    ignored: tuple[str, ...] = ()
    unset_env: tuple[str, ...] = ()


def unset_env(text: str, engine: str, dep: Deployment) -> tuple[str, ...]:
    """The variables the engine must be given to run the kernels `dep` is priced with (Exporter.env: SGLANG_USE_AITER=1
    for SGLang on AMD Instinct GPUs) that the configuration's lines do not set (NAME=value, as `export NAME=value` or before
    the command; a switch's 1 also as true)."""
    code = code_lines(text)
    out = []
    for k, v in EXPORTERS[engine].env(dep).items():
        said = "|".join(re.escape(x) for x in ({v, "true", "True", "TRUE"} if v == "1" else {v}))
        if not re.search(rf"(^|\s){re.escape(k)}=[\"']?({said})[\"']?(\s|$)", code, re.M):
            out.append(f"{k}={v}")
    return tuple(out)


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
            if name in exportable():
                return name
    for name, x in EXPORTERS.items():
        if x.marker and x.marker in text:
            return name
    raise InputError("export", "engine", "a file written by `llm-codesign export`")


def _real_precision(model: ModelSpec, engine: str, quant: str | None, kv: str) -> Precision:
    """The precision a configuration not written by export states, read through the engine's reading
    tables (data/engines/NAME.toml [read.*]: fp8_e4m3, modelopt, ...): a method that reads the
    checkpoint's own format, and no method, keep the model's."""
    base = model.default_precision
    w = base.weight
    if quant is not None and EXPORTERS[engine].quantization_option:
        ours = read_value(engine, "quantization", quant)
        if ours is None:
            known = sorted({*engine_spec(engine)["quantization"].values(), *engine_spec(engine).get("read", {}).get("quantization", {})})
            raise InputError("quantization", quant, "a method llm-codesign models: " + ", ".join(known))
        w = w if ours == "checkpoint" else get_dtype(ours, "weight_dtype")
    kvd = base.kv
    if kv not in (None, "auto"):
        ours = read_value(engine, "kv_cache_dtype", kv)
        if ours is None:
            known = sorted({"auto", *engine_spec(engine)["kv_cache_dtype"].values(), *engine_spec(engine).get("read", {}).get("kv_cache_dtype", {})})
            why = UNPRICED_KV.get(engine, {}).get(kv)
            raise InputError("kv_cache_dtype", kv, (f"a format priced here ({engine}'s {kv} is known, not priced: {why}): " if why else "one of: ")
                             + ", ".join(known))
        kvd = get_dtype(ours, "kv_dtype")
    return replace(base, kv=kvd) if w == base.weight else Precision.of(w.name, None, kvd.name)


# KV-cache formats an engine takes that no price here models, with why (import names them as known, not as unknown)
UNPRICED_KV = {
    # its attention backends read it as BF16 the pool dequantises, the layer's whole buffer each read
    # (layers/quantization/fp4_kv_cache_quant_method.py:932-935, mem_cache/memory_pool.py:2836-2850@0.5.23): a pass the step model has no term for
    "sglang": {"fp4_mx_block16": "SGLang dequantises the whole cache to BF16 on each read, a pass no step term prices",
               "fp4_e2m1": "SGLang dequantises the whole cache to BF16 on each read, a pass no step term prices"},
    # DeepSeek-V3.2's sparse MLA cache, NVFP4 NoPE + FP8 RoPE, read by FlashMLA-sparse on SM100 only
    # (v1/attention/backends/mla/flashmla_sparse.py:111, 154, 250@0.33.0): no table times that kernel
    "vllm": {"nvfp4_ds_mla": "SM100 FlashMLA-sparse's DSA cache, a kernel no table times"},
}


def _precision(model: ModelSpec, engine: str, quant: str | None, kv: str, meta: dict, *, gpu=None) -> Precision:
    base = model.default_precision
    # no quantization option: the weight format is the checkpoint's, which the header states (a checkpoint of the header's
    # release read back as the header's model, _exported_model, keeps the format it was exported at)
    if not EXPORTERS[engine].quantization_option or quant is None:
        w = get_dtype(meta["weight_dtype"], "weight_dtype") if meta.get("weight_dtype") else base.weight
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
    if w.name == base.weight.name:  # the checkpoint's own format, its groups included (AWQ's 128: crev10 #5), not the name's default
        p = replace(base, kv=kvd)
    else:
        p = Precision.of(w.name, None, kvd.name)
    if meta.get("activation_dtype"):
        p = replace(p, activation=get_dtype(meta["activation_dtype"], "activation_dtype"))
    if aw := meta.get("attn_weight_dtype"):  # attn_said; one written before it was (crev11 #3, newc12 #1) names the checkpoint
        return replace(p, attn_weight=None if aw == p.weight.name else get_dtype(aw, "attn_weight_dtype"))
    from llm_codesign.spec.plan import checkpoint_precision

    return checkpoint_precision(model, p, gpu) if "weight_dtype" in meta and gpu is not None else p


def _deployment(engine: str, o: dict, model: ModelSpec, *, gpu, meta: dict, cpp: bool = False, real: bool = False) -> tuple[Deployment, int | None]:
    """The deployment an engine's options state (with the header's `meta`), and its concurrency per instance."""
    x = EXPORTERS[engine]
    for k in sorted(x.switches):
        switch(k, o.get(k))
    plan, conc = x.plan_from(o, model)
    quant, kv, spec, mnt = x.settings(o, meta)
    prec = _real_precision(model, engine, quant, kv) if real else _precision(model, engine, quant, kv, meta, gpu=gpu)
    # the launch's batch cap, per attention-DP rank: the engine runs that many and queues the rest (Deployment.max_batch).
    # `conc` is the instance's: TensorRT-LLM max_batch_size and vLLM max_num_seqs x the DP ranks (each rank's scheduler
    # caps its own), SGLang's max_running_requests, which it splits as max(1, n // attn_dp_size) a rank
    # (sglang/srt/model_executor/pool_configurator.py:1141-1145@0.5.23)
    cap = max(1, conc // int(np.asarray(plan.adp))) if conc else None
    dep = Deployment(gpu=gpu, num_gpus=int(np.asarray(plan.gpus)), plan=plan, precision=prec,
                     backend=engine, spec=spec, max_num_tokens=whole("max_num_tokens", mnt, None, hi=1 << 24) if mnt else None, cpp=cpp,
                     chunked_prefill=x.chunked_prefill(o), kv_fraction=x.kv_fraction(o), cuda_graph_max_bs=x.cuda_graph_max_bs(o),
                     piecewise_graphs=x.piecewise_graphs(o), max_batch=cap)
    check_runs(dep.engine, gpu, prec=prec, moe=model.is_moe)  # a format whose MoE kernel the engine lacks here, as lc.deployment's
    if not real and dep.kv_fraction == x.own_kv_fraction(dep):  # what export writes for a deployment that states none
        dep = replace(dep, kv_fraction=None)
    return dep, conc


def read_export(text: str, origin: str = "export", *, model: ModelSpec | None = None) -> Imported:
    """Rebuild the model, deployment and concurrency of an exported vLLM, SGLang or TensorRT-LLM file
    (`origin`: its name, for errors). `model`: the one its header names, read from elsewhere (a local model's config,
    which the file names relative to the directory it was exported in): used in place of the file's reference."""
    from llm_codesign.spec.hardware import get_gpu

    meta = _meta(text, origin)
    engine = _engine_of(text)
    if engine == DYNAMO:
        raise InputError("export", DYNAMO, "a vLLM, SGLang or TensorRT-LLM export (read a Dynamo one with read_dynamo)")
    o, model_ref = EXPORTERS[engine].parse(text, origin)
    allowed = set(engine_spec(engine)["options"])
    unknown = sorted(set(o) - allowed)
    if unknown:
        raise InputError("export", unknown[0], f"a documented {engine} {engine_spec(engine)['version']} option")
    check_nested(engine, o)
    model = model if model is not None and same_model(model, meta) else _exported_model(model_ref, meta, origin)
    dep, conc = _deployment(engine, o, model, gpu=get_gpu(meta["gpu"]), meta=meta, cpp=bool(meta.get("cpp")))
    return Imported(engine, model, dep, conc, int(meta.get("replicas", 1)), o, unset_env=unset_env(text, engine, dep))


def spec_of(model) -> ModelSpec:
    """A model given to `import` (a registry name, Hugging Face id or config.json path; from Python also a config.json's
    dict or a ModelSpec, as every lc function takes it, crev11 #7) as its ModelSpec."""
    from llm_codesign.spec.registry import get_model

    return model if isinstance(model, ModelSpec) else get_model(model)


def _exported_model(model_ref: str, meta: dict, origin: str) -> ModelSpec:
    """The model an export launches: the one its model option names, or, where that is the placeholder of a config that
    named no checkpoint (export_engines.base.hf_id), one line asking for the config it was exported from. A checkpoint of
    the header's own release (launched: llama-3.1-70b at fp8 reads nvidia/Llama-3.1-70B-Instruct-FP8, the registry's
    llama-3.1-70b-fp8) comes back as the header's model: the round trip's entry, priced at the header's formats (newc8 #6)."""
    from llm_codesign.spec.registry import bundled, get_model, release_of

    if model_ref == CHECKPOINT_PLACEHOLDER:
        raise MissingInput("model", f"{origin} names no checkpoint ({CHECKPOINT_PLACEHOLDER}): give --model, the config.json "
                                    f"{meta.get('model')} was exported from, or put its checkpoint folder in the file")
    own = bundled(str(meta.get("model") or ""))
    m = get_model(model_ref)
    return own if own is not None and own.name != m.name and release_of(own.name) == release_of(m.name) else m


def config_engine(text: str, origin: str = "config") -> str:
    """The engine a real configuration is for: its launcher on a command line (`vllm serve`, `python -m
    sglang.launch_server`, `trtllm-serve`), else the engine whose documented options its YAML keys are
    (vLLM's --config keys against TensorRT-LLM's LLM API fields, counting the keys only one documents)."""
    from llm_codesign.explore.export_engines.vllm import COMMAND_MARKERS

    code = code_lines(text)
    if "sglang.launch_server" in code or "sglang serve" in code:
        return "sglang"
    if "trtllm-serve" in code:
        return "trtllm"
    if any(m in code for m in COMMAND_MARKERS):
        return "vllm"
    try:
        doc = yaml_io.load(text, origin)
    except InputError:
        doc = None
    keys = list(doc) if isinstance(doc, dict) else []  # a YAML config is a mapping; plain words or a list name no option
    vllm = {k for k in keys if resolve_option("vllm", k, abbrev=False)}
    trt = {k for k in keys if resolve_option("trtllm", k, dashes=False, abbrev=False)}
    if len(vllm - trt) != len(trt - vllm):
        return "vllm" if len(vllm - trt) > len(trt - vllm) else "trtllm"
    raise InputError("config", origin, "a vLLM or SGLang command line, a `vllm serve --config` YAML or a TensorRT-LLM "
                     "extra_llm_api_options YAML (or a file `llm-codesign export` wrote); name the engine with --backend")


def _option_names(engine: str, o: dict) -> list[str]:
    """The options a configuration sets, TensorRT-LLM's mapping-valued fields as `field.key` (each key
    read or ignored on its own; a speculative or context-parallel config is read whole)."""
    out = []
    for k, v in o.items():
        if engine == "trtllm" and isinstance(v, dict) and k not in ("speculative_config", "cp_config"):
            out += [f"{k}.{f}" for f in v]
        else:
            out.append(k)
    return out


# the decode-capture flags whose refusal names the flag as typed: SGLang's older --cuda-graph-max-bs (an alias of
# --cuda-graph-max-bs-decode in data/engines/sglang.toml) and a prefix or underscores; a short alias elsewhere (-q, -tp) keeps the
# documented name it stands for, the clearer of the two
CAPTURE_FLAGS = frozenset({"cuda-graph-max-bs-decode", "cuda-graph-bs-decode", "max-cudagraph-capture-size", "cudagraph-capture-sizes"})


def read_config(text: str, origin: str = "config", *, engine: str | None = None, model: str | dict | ModelSpec | None = None, gpu=None,
                acceptance: float | None = None, acceptance_rates: tuple[float, ...] = ()) -> Imported:
    """The deployment a configuration starts: a file `export` wrote (read_export), or the engine's own
    configuration as people run it: a `vllm serve MODEL ...` command line or `--config` YAML, a `python -m
    sglang.launch_server ...` command line, a TensorRT-LLM extra_llm_api_options YAML (it names no model:
    `model`) or `trtllm-serve` command. A real configuration names no GPU (`gpu`, a Gpu) and no acceptance
    of its speculation (`acceptance`/`acceptance_rates`); `model` overrides the one it names. Options the
    deployment does not hold are returned as `ignored`, not refused; a model the registry lacks is one line."""

    if any(line.startswith(HEADER) for line in text.splitlines()):
        return read_export(text, origin, model=spec_of(model) if model is not None else None)
    name = engine if engine is not None else config_engine(text, origin)  # --backend "" refused, not found from the file
    if name not in EXPORTERS:
        raise InputError("backend", name, "one of: " + ", ".join(EXPORTERS))
    x = EXPORTERS[name]
    o, model_ref = x.parse(text, origin)
    if model is None and model_ref is not None and not isinstance(model_ref, str):  # `model: [a]` in a YAML config
        raise InputError("model", model_ref, "a model's name: a bundled name or Hugging Face id")
    if model is None and not model_ref:
        raise MissingInput("model", f"this {name} configuration names no model: give --model (a bundled name or Hugging Face id)")
    try:
        m = spec_of(model if model is not None else model_ref)  # --model '' is the user's, refused by name, not the file's
    except InputError as e:
        if model is not None:
            raise
        raise InputError("model", model_ref, f"{e.valid}; or --model NAME for the model this configuration serves") from None
    if gpu is None:
        raise MissingInput("gpu", "an engine's configuration names no GPU: give --gpu, the one it runs on (e.g. --gpu h200)")
    typed = getattr(o, "typed", {})  # each flag as the user typed it (read_flags): a refusal names that, not our name for it
    o, copies = x.replicas(o, m)
    meta = {"spec": {"mean_accepted": acceptance, "rates": list(acceptance_rates), "model": m.name}}
    try:
        dep, conc = _deployment(name, o, m, gpu=gpu, meta=meta, real=True)
    except InputError as e:  # speculation with no acceptance: the configuration cannot say it, the user must
        if e.field in typed and e.field in CAPTURE_FLAGS and not isinstance(e, MissingInput):
            raise InputError(typed[e.field], e.value, e.valid) from None
        if e.field != "acceptance" or e.value is not None:
            raise
        # none bundled for the model's method (spec_decoding defaults the published ones, as estimate does): the method's hint
        raise MissingInput("acceptance", f"the configuration drafts tokens but no configuration states how many are accepted; "
                           f"{e.valid}", word="not given") from None
    dep = _unchunked_budget(name, o, m, dep)
    from llm_codesign.spec.plan import validity

    code = int(validity(m, gpu, dep.plan, dep.num_gpus)[()])
    if code >= 0:
        from llm_codesign.spec.plan import reason_text

        raise InputError("config", dep.plan.label(), reason_text(m, gpu, code))
    es = engine_spec(name)
    documented = set(es["options"]) | set(es.get("command_options", ()))
    ignored = sorted(k for k in _option_names(name, o) if k not in x.reads)
    ignored = [k if k.split(".")[0] in documented else f"{k} (not a {name} {es['version']} option)" for k in ignored]
    ignored = sorted(ignored + x.unread(o, m, dep))
    return Imported(name, m, dep, conc, copies, o, tuple(ignored), unset_env(text, name, dep))


# ---------------------------------------------------------------------------------------------------------
# Dynamo: a disaggregated deployment, two pools


# the Kubernetes resource each vendor's device plugin advertises its GPUs as (NVIDIA/k8s-device-plugin and
# ROCm/k8s-device-plugin READMEs: a pod's `resources.limits`)
GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}


def dynamo_workers() -> tuple[str, ...]:
    """The engines Dynamo runs as workers that have an exporter (data/engines/dynamo.toml modules)."""
    modules = engine_spec(DYNAMO)["modules"]
    return tuple(n for n in exportable()[:-1] if n in modules)


def export_dynamo(model: ModelSpec, *, prefill: Deployment, decode: Deployment, prefill_instances: int, decode_instances: int,
                  concurrency: int, name: str = "llm-codesign", extra: dict | None = None) -> str:
    """A DynamoGraphDeployment (Dynamo's Kubernetes resource) with the frontend and both worker pools.
    `concurrency` is the requests in flight over the whole deployment; each pool's batch is its share."""
    spec = engine_spec(DYNAMO)
    backend = decode.backend
    if prefill.backend != backend:
        raise InputError("backend", prefill.backend, f"the decode pool's engine ({backend})")
    if backend not in dynamo_workers():
        raise InputError("backend", backend, ", ".join(dynamo_workers()))
    x = EXPORTERS[backend]
    for pool in (prefill, decode):
        engine_runs(model, pool)
    refuse_headless_draft(decode)
    model, said = launched(model, decode, backend)  # both pools run one checkpoint: the decode pool's weights (as the meta)
    image = f"my-registry/{x.dynamo_image}-runtime:my-tag"
    dec_conc = per_rank(concurrency, 1, instances=decode_instances)  # an instance's requests (its exporter splits them over its ranks)
    # a prefill instance holds the prompts it is computing: at most what its step budget and the queue give it
    pre_conc = per_rank(concurrency, 1, instances=prefill_instances)
    _whole_requests(model, prefill, extra)  # a prefill pool that schedules prompts whole (vLLM's max-model-len at its budget)
    tokens = _request_tokens(extra)  # each worker's launch admits the workload's longest request (vLLM's max-model-len)

    def component(cname, ctype, replicas, args, dep=None):
        c = {"name": "main", "image": image, "command": ["python3", "-m", spec["modules"][ctype if ctype == "frontend" else backend]],
             "args": args}
        if dep is not None:
            if env := x.env(dep):
                c["env"] = [{"name": k, "value": v} for k, v in env.items()]
            # another vendor's GPU (a GPU file's) runs the reference engine, NVIDIA's (spec.engines.VENDOR_ENGINE)
            c["resources"] = {"limits": {GPU_RESOURCE.get(dep.gpu.vendor, GPU_RESOURCE["nvidia"]): str(dep.num_gpus)}}
        return {"name": cname, "type": ctype, "replicas": replicas, "podTemplate": {"spec": {"containers": [c]}}}

    doc = {"apiVersion": spec["api_version"], "kind": spec["kind"], "metadata": {"name": name},
           "spec": {"components": [
               component("Frontend", "frontend", 1, ["--http-port", "8000"]),
               component("prefill", "prefill", prefill_instances, x.worker_args(model, prefill, pre_conc, "prefill", tokens=tokens), prefill),
               component("decode", "decode", decode_instances, x.worker_args(model, decode, dec_conc, "decode", tokens=tokens), decode)]}}
    meta = {"model": model.name, "gpu": decode.gpu.id, "backend": backend, "concurrency": concurrency,
            "prefill": {"plan": prefill.plan.label(), "instances": prefill_instances, "num_gpus": prefill.num_gpus},
            "decode": {"plan": decode.plan.label(), "instances": decode_instances, "num_gpus": decode.num_gpus},
            "weight_dtype": decode.precision.weight.name, "activation_dtype": decode.precision.activation.name,
            "kv_dtype": decode.precision.kv.name, **attn_said(decode.precision)}
    if decode.spec is not None:
        meta["spec"] = {"method": decode.spec.method, "k": decode.spec.k, "mean_accepted": decode.spec.mean_accepted,
                        "rates": list(decode.spec.at(decode.spec.k).rates if decode.spec.rates else ()), "draft_model": decode.spec.draft_model}
    meta.update(extra or {})
    head = [HEADER + json.dumps(meta, default=float),
            f"# dynamo {spec['version']} DynamoGraphDeployment ({spec['source']})",
            f"# workers: {backend} {engine_spec(backend)['version']} options ({engine_spec(backend)['source']})",
            f"# launch: {spec['launch'].format(file='FILE')}  (set the images first)"]
    return "\n".join(head + [yaml_io.dump(doc)]) + "\n"


def read_dynamo(text: str, origin: str = "export", *, model: ModelSpec | None = None) -> dict:
    """The two pools of an exported Dynamo deployment: {"prefill"|"decode": Imported-like dict}
    (`origin`: its name, for errors; `model`: the one its header names, read from elsewhere, as read_export's)."""
    from llm_codesign.spec.hardware import get_gpu

    meta = _meta(text, origin)
    doc = yaml_io.load(text, origin)
    backend = meta["backend"]
    gpu = get_gpu(meta["gpu"])
    out = {}
    for comp in doc["spec"]["components"]:
        if comp["type"] not in ("prefill", "decode"):
            continue
        args = parse_flags(comp["podTemplate"]["spec"]["containers"][0]["args"], origin, engine=backend)
        args.pop("disaggregation-mode")
        o, model_ref = exporter(backend).worker_options(args)
        m = model if model is not None and same_model(model, meta) else _exported_model(model_ref, meta, origin)
        dep, conc = _deployment(backend, o, m, gpu=gpu, meta=meta)
        out[comp["type"]] = {"model": m, "deployment": dep, "instances": int(comp["replicas"]), "concurrency": conc}
    return out


# ---------------------------------------------------------------------------------------------------------
# `import`: a configuration priced again, the one code path of `llm-codesign import` and `lc.import_config`


@dataclass(frozen=True)
class ImportEstimate:
    """`import`'s answer: the deployment a configuration starts (`deployment`, one instance, `replicas` copies, in
    `engine`) and what it delivers, priced as `estimate` prices it (`estimate`, an Estimate with its intervals), at
    `concurrency` requests in flight per instance (`batch` says where that came from). An exported Dynamo deployment is
    its two pools (`prefill` and its instances beside `deployment`'s, the decode pool), priced as `disagg` prices them
    (`estimate` None). `ignored`: the configuration's options the model does not hold; `unset_env`: variables the launch
    must set to run the kernels priced (always empty: a launch leaving one unset is refused, _refuse_unset_env); `note`: what to pass to price an export as it was priced. `to_dict()` is what
    `import --json` prints."""
    path: str
    engine: str
    model: ModelSpec = field(repr=False)
    deployment: Deployment = field(repr=False)
    replicas: int
    concurrency: int | None
    batch: str
    answer: dict = field(repr=False)
    estimate: object = field(default=None, repr=False)
    prefill: Deployment | None = field(default=None, repr=False)
    prefill_instances: int = 0
    decode_instances: int = 0
    ignored: tuple[str, ...] = ()
    unset_env: tuple[str, ...] = ()
    note: str | None = None

    @property
    def ttft_s(self) -> float:
        return self.answer["ttft_ms"] / 1e3

    @property
    def tpot_s(self) -> float | None:
        """None at one output token: no decode step runs (serve.metrics.without_decode)."""
        t = self.answer["tpot_ms"]
        return None if t is None else t / 1e3

    @property
    def output_tok_s_per_gpu(self) -> float:
        return self.answer["output_tok_s_per_gpu"]

    def to_dict(self) -> dict:
        """What `import --json` prints."""
        import copy

        return copy.deepcopy(self.answer)


def profile_note(meta: dict, calibration: str | None) -> str | None:
    """What `import` says of an export priced with another profile than the one given (priced_with records it):
    priced without it, the same configuration read 1374 tok/s/GPU exported and 1246 imported, without a word of why."""
    if not meta.get("calibration") or same_profile(meta["calibration"], calibration):  # one file however it is spelt
        return None
    return (f"exported with --calibration {meta['calibration']} (its predicted figures are that profile's); "
            + ("" if calibration is None else f"these are {calibration}'s; ") + f"pass --calibration {meta['calibration']} to price it alike")


# the launchers an engine's command line starts with (config_engine reads the same): an argument that is
# none of them and no file is read as a path, and refused as one
_LAUNCHERS = ("vllm", "trtllm-serve", "sglang")
_MODULES = ("vllm.entrypoints", "sglang.launch_server")


def command_line(arg: str) -> bool:
    """Whether `import`'s argument (the CLI's, lc.import_config's) is an engine's command line (`vllm serve ...`,
    `python -m sglang.launch_server ...`, `trtllm-serve ...`, leading VAR=value settings allowed) rather than a path."""
    import shlex
    from pathlib import Path

    try:
        words = shlex.split(arg)
    except ValueError:  # an unclosed quote: no command line
        return False
    words = [w for w in words if w != "\\"]
    while words and "=" in words[0] and not words[0].startswith("-"):  # CUDA_VISIBLE_DEVICES=0,1 vllm serve ...
        words = words[1:]
    if len(words) < 2:
        return False
    head = Path(words[0]).name
    if head in _LAUNCHERS:
        return True
    return head.startswith("python") and words[1] == "-m" and len(words) > 2 and words[2].startswith(_MODULES)


def import_config(path: str, *, price, price_pools, gpu=None, model=None, backend: str | None = None, concurrency: int | None = None,
                  isl: int | None = None, osl: int | None = None, acceptance: float | None = None, acceptance_rates=None,
                  calibration: str | None = None, text: str | None = None, arrival: str | None = None,
                  prefix_hit: float | None = None) -> ImportEstimate:
    """The deployment the configuration at `path` starts (read_config: an export, or an engine's own command line or
    YAML; `gpu` a Gpu where it names none, `model` a registry name where it names none or one the registry lacks),
    priced by `price` (llm_codesign.api.estimate, which both callers pass: it sits a layer above this one; a Dynamo export's
    pools by `price_pools`, explore.disagg_search.priced_pools, passed alike: that module imports this one's frontier) at
    `concurrency` requests per instance (default: the export's, which its header records, else the configuration's max
    batch), `isl`/`osl`, `arrival` and `prefix_hit` (default: the export's, else 1024, waves and 0: an export's header
    records the arrival and prefix hits its predicted figures were priced at, crev10 #1, crev11 #1); an exported Dynamo
    deployment priced as `disagg` prices its pools. `calibration`: a profile's path or None (the bundled
    one). `text`: the configuration itself, `path` then only its name in messages; a `path` that is an engine's command
    line (command_line) is taken as its text, named "the command line", with no folder: the files it names (`--config x.yaml`) are found in the working folder, as its shell
    would find them (file_beside); the text is split by shlex, never run."""
    from pathlib import Path

    from llm_codesign.errors import read_text

    given = str(path)
    if text is None and command_line(given):  # the command line itself, as `import` and lc.import_config take it
        text, path = given, "the command line"
    if text is None:
        text = read_text(path, "path", "an export or an engine's command line or YAML")
    meta = _meta(text, path) if any(line.startswith(HEADER) for line in text.splitlines()) else {}
    isl, osl = isl or meta.get("isl", 1024), osl or meta.get("osl", 1024)
    arrival = check_arrival(meta.get("arrival", DEFAULT_ARRIVAL) if arrival is None else arrival)  # export writes it where it is not the default
    hit = meta.get("prefix_hit", 0.0) if prefix_hit is None else prefix_hit  # so do export-point and the page (workload_said)
    rates = acceptance_rates_of(acceptance_rates)
    if meta and "DynamoGraphDeployment" in text:
        if hit:
            raise InputError("prefix_hit", hit, "0 with a Dynamo export (the disaggregated pools are priced with no prefix cache)")
        r = _import_dynamo(text, path, meta, price_pools, isl=isl, osl=osl, arrival=arrival, calibration=calibration, concurrency=concurrency,
                           model=spec_of(model) if model is not None else None)
        _as_exported(r, Path(path).name, gpu=gpu, model=model, backend=backend, acceptance=acceptance, rates=rates)
        return r
    if not meta and gpu is None:
        raise MissingInput("gpu", f"{Path(path).name} names no GPU (an engine's configuration does not): give --gpu, the one it runs on "
                           "(e.g. --gpu h200)")
    from llm_codesign.spec.plan import Workload

    imp = _read_checked(text, path, meta, model=model, gpu=gpu, backend=backend, acceptance=acceptance, rates=rates)
    imp = _within_context_limit(imp, isl, osl)
    conc, endpoint, batch = _load(meta, concurrency, imp)
    est = price(imp.model, imp.deployment, Workload(isl=isl, osl=osl, concurrency=conc, prefix_hit=hit, arrival=arrival), calibration=calibration)
    r = est.to_dict()
    if "spec" in r:  # where the acceptance priced came from, which import's summary says (fixA13: it said no speculation)
        r["spec"]["acceptance_from"] = ("published" if imp.deployment.spec.source else "export" if meta else "given")
    r["deployment"] = imp.deployment.to_dict()
    r |= {"engine": imp.engine, "replicas": imp.replicas, "ignored": list(imp.ignored), "unset_env": list(imp.unset_env)} | (
        {"endpoint_concurrency": endpoint} if endpoint else {})  # a launch line's data-parallel ranks' shared count (newc11 #11)
    return ImportEstimate(path=given, engine=imp.engine, model=imp.model, deployment=imp.deployment, replicas=imp.replicas,
                          concurrency=r["concurrency"], batch=batch, answer=r, estimate=est, ignored=imp.ignored, unset_env=imp.unset_env,
                          note=profile_note(meta, calibration))


def _read_checked(text: str, path: str, meta: dict, *, model, gpu, backend: str | None, acceptance: float | None,
                  rates: tuple[float, ...]) -> Imported:
    """read_config of an aggregated configuration, with import's checks: an export's model (by its name, or by its shape where
    the header records one: shape_said), GPU, engine and acceptance as it states them, an engine the GPU runs, and the
    variables the engine needs set."""
    from llm_codesign.spec.engines import engine_for

    if meta and model is not None and not same_model(m := spec_of(model), meta):  # as the header names it or its shape, from anywhere
        own = f"{meta.get('model')} (or its config.json, of the shape the header records)" if meta.get("model_shape") else meta.get("model")
        _refuse_stated("model", model if isinstance(model, (str, Path)) else m.name, m.name, own, Path(path).name)
    imp = read_config(text, path, engine=backend, model=model, gpu=gpu, acceptance=acceptance, acceptance_rates=rates)
    if meta:
        _as_exported(imp, Path(path).name, gpu=gpu, model=model, backend=backend, acceptance=acceptance, rates=rates)
    engine_for(imp.deployment.gpu, imp.engine)  # a TensorRT-LLM YAML on an AMD GPU (--gpu mi355x) runs nowhere
    _refuse_unset_env(imp)
    return imp


def _load(meta: dict, concurrency: int | None, imp: Imported) -> tuple[int | None, int | None, str]:
    """(requests an import prices, the one endpoint's count where an engine's own launch line splits it over data-parallel
    ranks, where the count came from): --concurrency (split: _per_rank_concurrency), else the export's own concurrency as its
    header records it per instance (its batch cap may be smaller, export --max-batch 64 at 256 priced a 77.5 s queue that the
    cap's 64 lost, crev11 #2; or, under attention DP, the cap a rank x the ranks larger, 250 read back as 32 x 8 = 256), else
    the configuration's max batch, else none."""
    conc, endpoint = _per_rank_concurrency(concurrency, imp.replicas, stated_dp=not meta)
    stated = int(meta["concurrency"]) if meta.get("concurrency") else None
    conc = conc or stated or imp.concurrency
    if not conc:
        return conc, None, "no max batch given: the engine's own and the KV cache's"
    if endpoint:
        return conc, endpoint, f"--concurrency {endpoint} at the one endpoint, split over its {imp.replicas} data-parallel ranks"
    return conc, None, "--concurrency" if concurrency else "the export's" if stated else "the configuration's max batch"


def _per_rank_concurrency(concurrency: int | None, replicas: int, *, stated_dp: bool) -> tuple[int | None, int | None]:
    """(requests a data-parallel copy runs; the endpoint's count where it was split, else None). An engine's own launch line
    with data-parallel copies (vLLM --data-parallel-size of a dense model, SGLang --dp-size) is one API server that
    balances requests over its ranks: `vllm bench serve --max-concurrency 32` against it keeps 32 in flight in all, 16 a
    rank (newc11 #11). vLLM's front end sends each request to its least-loaded rank (DPLBAsyncMPClient.
    get_core_engine_for_request, vllm/v1/engine/core_client.py: waiting x 4 + running, at 00080ee1 the larger of that and
    its own in-flight count), SGLang's DataParallelController round-robins them (its default load_balance_method,
    managers/data_parallel_controller.py): either keeps the ranks within one request of each other, so the busiest holds
    ceil(C / ranks), the count priced. An export's replicas (`stated_dp` False) are separate instances
    behind the user's own balancer, each at --concurrency (export writes it so)."""
    if not stated_dp or replicas <= 1 or concurrency is None:
        return concurrency, None
    return -(-concurrency // replicas), concurrency



def _refuse_unset_env(imp: Imported) -> None:
    """A launch that leaves unset a variable the engine needs to run the kernels it would be priced on (unset_env: SGLang on
    an AMD Instinct GPU without SGLANG_USE_AITER=1) is refused in one line asking for it, not priced as if set (newc10 #13:
    the same 883 ms / 8.02 ms / 3608 tok/s/GPU with it and without). Without it SGLang runs its Triton fused MoE (the
    variable is off by default, sglang/srt/environ.py:949; layers/quantization/fp8.py:149, mxfp4.py:200@0.5.23) and its
    Triton attention, which no bundled run measured (all of InferenceX's MI3xx SGLang runs set it, data/measurements/
    SOURCES.md) and no AMD kernel table times (the tables' CDNA MoE rows are AITER's and vLLM's): no price here is honest."""
    if imp.unset_env:
        name, value = imp.unset_env[0].split("=", 1)
        raise InputError(name, "unset", f"{value} on an {imp.deployment.gpu.name}: without it {get_engine(imp.engine).title} runs kernels "
                                        "no run or kernel table here prices (its Triton MoE and attention); set it before the launch "
                                        f"({imp.unset_env[0]} python -m ..., as export writes it) to price the AITER kernels it then runs")


# each engine's launch option capping a request's prompt + output tokens, as `import` reads it, and the most isl + osl it
def _unchunked_budget(engine: str, o: dict, model: ModelSpec, dep: Deployment) -> Deployment:
    """A real vLLM configuration with chunked prefill off and no --max-num-batched-tokens runs the budget vLLM raises to
    max(max_model_len, its default): `if not self.enable_chunked_prefill: self.max_num_batched_tokens = max(
    model_config.max_model_len, self.max_num_batched_tokens)` (EngineArgs, vllm/engine/arg_utils.py:3194-3198@0.33.0,
    :2611-2616@0.24.0); max_model_len is its --max-model-len, else the model's context. An export writes its budget."""
    if engine != "vllm" or dep.chunked_prefill is not False or dep.max_num_tokens is not None:
        return dep
    limit = o.get("max-model-len")
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else model.max_context
    return replace(dep, max_num_tokens=max(int(limit or 0), int(dep.step_tokens)))


# serves under a limit n: vLLM n (OpenAIServing._validate_input answers 400 "This model's maximum context length is n tokens.
# However, you requested ..." past it: vllm/entrypoints/openai/serving_engine.py@7ded96b3), SGLang n - 1 (TokenizerManager.
# _validate_one_request raises "Requested token count exceeds the model's maximum context length" where max_new_tokens +
# input >= context_len: python/sglang/srt/managers/tokenizer_manager.py). vLLM's -1 (auto) is the model's own (check_context)
CONTEXT_LIMIT_OPTIONS = {"vllm": ("max-model-len", 0), "sglang": ("context-length", 1)}


def _within_context_limit(imp: Imported, isl: int, osl: int) -> Imported:
    """`imp` with its context limit read (CONTEXT_LIMIT_OPTIONS: no longer `ignored`), refused in one line where the workload's
    isl + osl passes it: the engine rejects such a request (HTTP 400), it does not serve it. review crev #5."""
    opt, margin = CONTEXT_LIMIT_OPTIONS.get(imp.engine, (None, 0))
    limit = imp.options.get(opt) if opt is not None and hasattr(imp.options, "get") else None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        return imp
    if int(isl) + int(osl) > limit - margin:
        typed = getattr(imp.options, "typed", {}).get(opt, opt)
        raise InputError("isl+osl", int(isl) + int(osl), f"at most {limit - margin:,} under the configuration's {typed} {limit:,}: "
                                                         f"{imp.engine} rejects a longer request; raise {typed} or price shorter "
                                                         "requests (--isl, --osl)")
    return replace(imp, ignored=tuple(k for k in imp.ignored if k != opt))


def _refuse_stated(field_: str, shown, given: str, own: str, name: str) -> NoReturn:
    """The one line refusing, on export `name`, a GPU or model (`given`; as typed: `shown`) other than its own."""
    again = f"`llm-codesign export {given} ...`" if field_ == "model" else f"export again with --{field_} {given}"
    raise InputError(field_, shown, f"left out or {own}: {name} is an export, which states its {field_} (its plan and batch "
                                    f"were chosen for it); {again} to price that")


def _as_exported(imp, name: str, *, gpu, model: str | None, backend: str | None, acceptance: float | None = None,
                 rates: tuple[float, ...] = ()) -> None:
    """An export states its GPU, model, engine and the acceptance its speculation was priced at (its plan and batch
    were chosen for them): another one given is refused in one line rather than dropped without a word (`import
    vllm.yaml --gpu b200` priced the export's H200). An engine is compared by name, an unknown one refused as every
    --backend is (get_engine: `TRT-LLM` is trtllm); a Dynamo export's is dynamo or its workers' (its header's)."""

    stated = {"gpu": (gpu.id if gpu is not None else None, imp.deployment.gpu.id, gpu.id if gpu is not None else None),
              "model": (named := spec_of(model).name if model is not None else None, imp.model.name,
                        model if isinstance(model, (str, Path)) else named)}
    for field_, (given, own, shown) in stated.items():
        if given is not None and given != own:
            _refuse_stated(field_, shown, given, own, name)
    engines = (DYNAMO, imp.deployment.backend) if imp.engine == DYNAMO else (imp.engine,)
    if backend is not None and not (imp.engine == DYNAMO and backend.strip().lower() == DYNAMO):
        engine = get_engine(backend).name
        if engine not in engines:
            raise InputError("backend", backend, f"left out or {' or '.join(engines)}: {name} is an export, which states its engine "
                                                 f"(its plan and batch were chosen for it); export again with --backend {engine} to price that")
    # its acceptance prices it as exported: another, like another GPU, is another export's
    spec = imp.deployment.spec
    for field_, given, own in (("acceptance", acceptance, spec.mean_accepted if spec else None),
                               ("acceptance_rates", tuple(rates) or None, tuple(spec.rates) or None if spec else None)):
        if given is None or given == own:
            continue
        shown = given if field_ == "acceptance" else ",".join(map(repr, given))  # as typed: 0.8,0.6
        if spec is None:
            raise InputError(field_, shown, f"left out: {name} is an export of a deployment that drafts no tokens; export again with "
                                            f"--spec to price speculation")
        mine = "" if own is None else f" or the export's own, {own if field_ == 'acceptance' else ','.join(map(repr, own))}"
        raise InputError(field_, shown, f"left out{mine}: {name} is an export, priced at its own acceptance (its plan and batch were "
                                        f"chosen for it); export again with --{field_.replace('_', '-')} {shown} to price that")


def _import_dynamo(text: str, path: str, meta: dict, price_pools, *, isl: int, osl: int, calibration, concurrency: int | None = None,
                   model: ModelSpec | None = None, arrival: str = DEFAULT_ARRIVAL) -> ImportEstimate:
    """`import` of an exported Dynamo deployment: both pools priced as the export priced them by `price_pools` (explore.
    disagg_search.priced_pools, the pricing of `disagg`, `lc.disagg` and export --backend dynamo: its row's intervals and
    notes with it, crev10 #7), at `concurrency` requests in flight where given (default: the export's) and `arrival`."""
    conc = int(concurrency or meta["concurrency"])
    pools = read_dynamo(text, path, model=model)
    p, d = pools["prefill"], pools["decode"]
    dd = d["deployment"]
    # priced as the export was: both pools on the decode pool's GPU, precision, engine and step budget
    pre = replace(dd, plan=p["deployment"].plan, num_gpus=p["deployment"].num_gpus)
    # the decode workers' batch cap per rank, as the file writes it (--max-num-seqs, max_batch_size, max-running-requests):
    # disagg's --decode-max-batch, export's --max-batch with Dynamo
    r = price_pools(d["model"], pre, dd, prefill_instances=p["instances"], decode_instances=d["instances"], concurrencies=[conc],
                    isl=isl, osl=osl, arrival=arrival, calibration=calibration, decode_max_batch=dd.max_batch)
    out = {"engine": "dynamo", "engine_release": dd.engine.release, "model": d["model"].name, "prefill": p["deployment"].to_dict() | {"instances": p["instances"]},
           "decode": dd.to_dict() | {"instances": d["instances"]}, **r.rows[0], "arrival": arrival, "notes": list(r.notes)}
    return ImportEstimate(path=str(path), engine="dynamo", model=d["model"], deployment=dd, replicas=1, concurrency=conc,
                          batch="--concurrency" if concurrency else "the export's", answer=out, prefill=p["deployment"], prefill_instances=p["instances"],
                          decode_instances=d["instances"], note=profile_note(meta, calibration))
