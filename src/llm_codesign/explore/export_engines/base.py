"""What an engine's export builder is, the registry of them, and the helpers they share.

An `Exporter` turns a deployment into the options that start one instance of it in its engine, writes
them as the engine reads them (a YAML file, a shell command), and reads them back; one module per engine
(vllm.py, sglang.py, trtllm.py) holds one, registered under the engine's registry name
(spec.engines). Every option name comes from the engine's data file (data/engines/NAME.toml: its
documented options at a stated version, with the source). explore/export.py holds what every engine
shares: the header line, the way back and Dynamo's disaggregated manifest."""
from __future__ import annotations

import json
import math
import re
import shlex
import tomllib
from abc import ABC, abstractmethod
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from llm_codesign.errors import InputError, MissingInput, parse_nested
from llm_codesign.spec.engines import ENGINES, EXPORTABLE
from llm_codesign.spec.harness import FRACTION, memory_fraction
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding, acceptance_rates_of, spec_decoding
from llm_codesign.spec.precision import Precision

DYNAMO = "dynamo"  # the disaggregated deployment's manifest (data/engines/dynamo.toml), over a worker engine's options


class Exporter(ABC):
    """One engine's launch options for a deployment and the way back from them."""
    name: str  # the engine's registry name, and its data file data/engines/NAME.toml
    file_name: str  # the file its launch configuration is written to by default
    dynamo_image: str  # the name of its Dynamo runtime image (my-registry/NAME-runtime)
    # whether its options name the weight format (a quantization method, data/engines/NAME.toml
    # [quantization]); where not, the weights are the checkpoint's and the export's header states them
    quantization_option: bool = True
    marker: str | None = None  # text that marks its file where the options line is missing
    # the options a real configuration's reading turns into the deployment (import lists the others as ignored)
    reads: frozenset[str] = frozenset()
    # the on/off options among them, each true or false (switch) before its options are read
    switches: frozenset[str] = frozenset()

    @abstractmethod
    def options(self, model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
        """The engine's options for one instance of `dep`, a plan it launches (explore.export.engine_runs)."""

    @abstractmethod
    def render(self, opts: dict, *, head: list[str], model: ModelSpec, file_name: str, env: dict[str, str]) -> str:
        """The file's text: the comment lines `head`, the launch line and the options; `env` (env()), the variables set
        before the launch command, in the script or in its `# launch:` line."""

    @abstractmethod
    def parse(self, text: str, origin: str = "export") -> tuple[dict, str]:
        """A file it wrote: (its options, the model they name); `origin` names the file in errors."""

    @abstractmethod
    def plan_from(self, o: dict, model: ModelSpec) -> tuple[Plan, int]:
        """(plan, concurrency per instance) its options state."""

    @abstractmethod
    def settings(self, o: dict, meta: dict) -> tuple:
        """(quantization method, KV-cache dtype, speculative decoding, step token budget) its options
        state, speculation's acceptance from the header's `meta` (read_spec)."""

    def chunked_prefill(self, o: dict) -> bool | None:
        """Whether its options split prompts into chunks of the step budget, where the engine's scheduler reads such an
        option (Deployment.chunked_prefill); None: the engine's default."""
        return None

    def kv_fraction(self, o: dict) -> float | None:
        """The share of memory its options give the KV budget (Deployment.kv_fraction: the option Engine.kv_budget's
        fraction stands for); None where they set none: the engine's own."""
        return None

    def cuda_graph_max_bs(self, o: dict) -> int | None:
        """The largest decode batch its options capture in CUDA graphs, padded (Deployment.cuda_graph_max_bs); None where
        they set none: the engine's default capture."""
        return None

    def piecewise_graphs(self, o: dict) -> bool:
        """Whether its options capture the decode graphs as pieces between the attention ops (Deployment.piecewise_graphs:
        vLLM's cudagraph_mode PIECEWISE); False: one full graph, or none."""
        return False

    def with_context(self, opts: dict, model: ModelSpec, dep: Deployment, tokens: int | None) -> dict:
        """`opts` with the longest request the launch admits set for the workload's `tokens` (isl + osl; None where the
        export prices none), where the engine refuses to start without room for one such request; unchanged by default
        (SGLang caps its longest request at the KV pool and only warns, scheduler's get_worker_info,
        sglang/srt/managers/tp_worker.py:557-571@0.5.23)."""
        return opts

    def own_kv_fraction(self, dep: Deployment) -> float:
        """The fraction the engine takes for `dep` where the deployment states none (Engine.kv_budget), which
        its export writes out."""
        return float(dep.engine.kv_budget[1])

    def written_kv_fraction(self, dep: Deployment) -> float:
        """The fraction its export writes: the deployment's (Deployment.kv_fraction), else the engine's own (own_kv_fraction)."""
        return self.own_kv_fraction(dep) if dep.kv_fraction is None else dep.kv_fraction

    def replicas(self, o: dict, model: ModelSpec) -> tuple[dict, int]:
        """A real configuration's copies of the model (data parallelism the plan does not hold): (the
        options less that, the copies)."""
        return o, 1

    def unread(self, o: dict, model: ModelSpec, dep: Deployment) -> list[str]:
        """Options among `reads` that a real configuration sets to a value the deployment is not priced with (import lists
        them as ignored, each with why); none by default."""
        return []

    def env(self, dep: Deployment) -> dict[str, str]:
        """The environment variables the launch must set for the engine to run the kernels `dep` is priced with; none
        by default."""
        return {}

    def worker_args(self, model: ModelSpec, dep: Deployment, concurrency: int, mode: str, *, tokens: int | None = None) -> list[str]:
        """The command-line words of its Dynamo worker in `mode` (prefill or decode): its own options as flags, with the
        longest request its launch admits set for the workload's `tokens` as export_config's file (with_context)."""
        return flags({"disaggregation-mode": mode} | self.with_context(self.options(model, dep, concurrency), model, dep, tokens))

    def worker_options(self, args: dict) -> tuple[dict, str]:
        """A Dynamo worker's flags (less disaggregation-mode) back to (its options, the model they name)."""
        return args, args.get("model") or args["model-path"]


EXPORTERS: dict[str, Exporter] = {}


def register_exporter(exporter: Exporter) -> Exporter:
    """Make an engine exportable: the engine must be registered (spec.engines), named in EXPORTABLE and have a data file."""
    if exporter.name not in ENGINES or exporter.name not in EXPORTABLE or exporter.name in EXPORTERS:
        raise ValueError(f"exporter {exporter.name!r}: not a registered engine, not in spec.engines.EXPORTABLE, or exported already")
    EXPORTERS[exporter.name] = exporter
    return exporter


def exportable() -> tuple[str, ...]:
    """What `export` writes: the engines with an exporter (spec.engines.EXPORTABLE), in the registry's order, and Dynamo."""
    return (*EXPORTABLE, DYNAMO)


def exporter(name: str) -> Exporter:
    """The exporter of a registered engine, or one line naming the exportable ones."""
    if name not in EXPORTERS:
        why = f" ({ENGINES[name].title} has no launch-configuration writer: it is priced, not exported)" if name in ENGINES else ""
        raise InputError("engine", name, "one of: " + ", ".join(exportable()[:-1]) + why)
    return EXPORTERS[name]


@lru_cache(maxsize=None)
def engine_spec(name: str) -> dict:
    """An engine's documented options (data/engines/NAME.toml) with its version and source."""
    if name not in exportable():
        raise InputError("engine", name, "one of: " + ", ".join(exportable()))
    return tomllib.loads(resources.files("llm_codesign").joinpath(f"data/engines/{name}.toml").read_text())


def nested_keys(engine: str, option: str) -> tuple[str, ...]:
    """The documented fields of an option that takes a mapping (data/engines/NAME.toml [nested.OPTION]);
    empty where the option takes none."""
    n = engine_spec(engine).get("nested", {}).get(option)
    return tuple(n["keys"]) if n else ()


def nested(engine: str, option: str, **fields) -> dict:
    """The mapping of a nested option, every key one of the fields the engine data documents for it (a
    key missing there is the builder's error, raised before anything is written)."""
    keys = nested_keys(engine, option)
    bad = [k for k in fields if k not in keys]
    if bad:
        raise KeyError(f"{option}.{bad[0]} is not a documented {engine} {engine_spec(engine)['version']} field "
                       f"(data/engines/{engine}.toml [nested.{option}])")
    return fields


def check_nested(engine: str, o: dict) -> None:
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


def plan_ints(plan: Plan) -> tuple[int, ...]:
    """(tp, pp, ep, moe_tp, adp, kvp) of one plan as integers."""
    return tuple(int(np.asarray(x).reshape(-1)[0]) for x in (plan.tp, plan.pp, plan.ep, plan.moe_tp, plan.adp, plan.kvp))


# what a launch names where the model's checkpoint is unknown (a bare .json or a pasted config names no folder of
# weights): a placeholder no engine can load, with a header line saying what to put there (export.launched)
CHECKPOINT_PLACEHOLDER = "<your checkpoint dir>"


def hf_id(model: ModelSpec) -> str:
    """Where the engine loads `model` from: its Hugging Face id, the checkpoint folder its config.json was read from
    (load_config_file records it), else CHECKPOINT_PLACEHOLDER (never its name: `--model-path my-30b` starts nothing)."""
    return model.hf_ids[0] if model.hf_ids else CHECKPOINT_PLACEHOLDER


def served_name(model: ModelSpec) -> str:
    """The name a server answers to: its checkpoint where it has one, else the model's own name."""
    return model.hf_ids[0] if model.hf_ids else model.name


def quantized_checkpoint(model: ModelSpec, weight, gpu=None, engine: str | None = None) -> str | None:
    """The registry's checkpoint of `model` already quantized to `weight` that `engine` loads on `gpu`, or None
    (spec.plan.release_checkpoint: the same release and shape; an AMD Quark one only where Quark's MXFP4 runs, elsewhere
    quark_elsewhere says why not); NVIDIA's ModelOpt FP8 one only where `engine` loads it on `gpu` (modelopt_fp8_loads: not
    SGLang on ROCm; None counts as loading)."""
    from llm_codesign.spec.plan import release_checkpoint

    return release_checkpoint(model, weight, gpu, skip=lambda e: _is_modelopt(e) and weight.name == "fp8"
                              and not modelopt_fp8_loads(engine, gpu))


def _is_modelopt(entry: dict) -> bool:
    """A TensorRT Model Optimizer checkpoint: its hf_quant_config.json (the registry's `quant` files, nvidia--*) or quant_method."""
    return bool(entry.get("quant")) or str(entry.get("quantization_config", {}).get("quant_method", "")).lower() == "modelopt"


def modelopt_fp8_loads(engine: str | None, gpu) -> bool:
    """Whether `engine` on `gpu` loads NVIDIA's ModelOpt FP8 checkpoint (nvidia/Llama-3.1-70B-Instruct-FP8). SGLang 0.5.23 on
    ROCm does not: its quant method, modelopt_fp8, is not in ModelConfig._verify_quantization's rocm_supported_quantization, which
    raises "modelopt_fp8 quantization is currently not supported in ROCm" (sglang/srt/configs/model_config.py:2002-2016,
    2156-2160@0.5.23 wheel). vLLM 0.33.0 on ROCm does: RocmPlatform.supported_quantization lists modelopt and modelopt_fp4
    (vllm/platforms/rocm.py:668-692), ModelOptFp8Config asks capability 80 (model_executor/layers/quantization/modelopt.py:
    449-450) and its per-tensor FP8 weights are rescaled to e4m3fnuz on gfx942 (modelopt.py:2181-2183, is_fp8_fnuz); the
    newcomer's "modelopt is not supported in rocm" is an older list. TensorRT-LLM runs on NVIDIA only. ModelOpt NVFP4 on
    SGLang ROCm loads as petit_nvfp4, which model_config.py's compatible_quantization_methods maps to modelopt."""
    return not (engine == "sglang" and gpu is not None and gpu.vendor == "amd")


def modelopt_elsewhere(model: ModelSpec, weight, gpu, engine: str) -> str | None:
    """The header line where the registry's `weight` checkpoint of `model` is NVIDIA's ModelOpt FP8 one, which `engine` on
    `gpu` does not load (modelopt_fp8_loads), and the launch quantizes the BF16 checkpoint as it loads instead."""
    if modelopt_fp8_loads(engine, gpu) or not (ck := quantized_checkpoint(model, weight)):
        return None
    return (f"# weights: {weight.name} quantized as the BF16 checkpoint loads (--quantization {weight.name}): the registry's "
            f"{weight.name} checkpoint, {ck}, is NVIDIA ModelOpt's, which {engine} on ROCm does not load (its modelopt_fp8 is not "
            "in SGLang's ROCm quantization list); or point the model at an FP8 checkpoint of the fp8 or quark methods "
            "(AMD publishes amd/*-FP8-KV ones)")


def quark_elsewhere(model: ModelSpec, weight, gpu) -> str | None:
    """Where `gpu` runs no Quark MXFP4 but the registry's checkpoint of `model` at `weight` is AMD's Quark one (quantized_checkpoint
    with no GPU): the header line saying why export does not name it. vLLM on CUDA loads a Quark OCP MX checkpoint emulated,
    dequantising each forward (quark/schemes/quark_ocp_mx.py: emulate = not current_platform.supports_mx(), CDNA4 only), SGLang's
    Quark MXFP4 linears call AITER's gemm_afp4wfp4 (spec/engines/sglang.py), and TensorRT-LLM reads ModelOpt checkpoints;
    no NVIDIA MXFP4 DeepSeek-R1 checkpoint is published (NVIDIA's FP4 one is NVFP4, nvidia/DeepSeek-R1-0528-FP4)."""
    from llm_codesign.spec.plan import quark_runs_on

    ck = None if quark_runs_on(gpu) else quantized_checkpoint(model, weight)
    if ck is None:
        return None
    return (f"# weights: {weight.name} is read from a checkpoint already quantized to it: the registry's, {ck}, is AMD Quark's, "
            f"whose MXFP4 kernels run on CDNA GPUs only ({gpu.name} loads it emulated in vLLM, not at all in SGLang or "
            "TensorRT-LLM), and no NVIDIA MXFP4 one is published: point the model at such a checkpoint (the answer prices "
            f"MXFP4 weights on BF16 activations, as NVIDIA's engines run gpt-oss's), or --weight-dtype nvfp4 for NVIDIA's")


def weight_option(model: ModelSpec, prec: Precision, engine: str) -> str | None:
    """The engine's quantization method for the weight format, None where it is the checkpoint's own."""
    if prec.weight == model.default_precision.weight:
        return None
    table = engine_spec(engine)["quantization"]
    if prec.weight.name not in table:
        raise InputError("weight_dtype", prec.weight.name, f"a format {engine} loads ({', '.join(table) or 'the checkpoint own'})")
    return table[prec.weight.name]


def kv_option(prec: Precision, engine: str) -> str:
    table = engine_spec(engine)["kv_cache_dtype"]
    if prec.kv.name not in table:
        raise InputError("kv_dtype", prec.kv.name, f"a KV-cache format {engine} stores ({', '.join(table)})")
    return table[prec.kv.name]


def per_rank(concurrency: int, adp: int, *, instances: int = 1) -> int:
    """The batch each attention-DP rank of an instance runs: `concurrency` requests over `instances` instances, each
    instance's share over its `adp` ranks, ceil(ceil(C / instances) / adp), at least 1. The one count of it for the
    exporters' batch limits and capture (written_capture), export's pricing of that capture (explore.search.with_capture)
    and Dynamo's pools (adp 1: an instance's requests)."""
    return max(1, math.ceil(math.ceil(concurrency / instances) / adp))


def launch_batch(dep: Deployment, concurrency: int, adp: int) -> int:
    """The batch cap per attention-DP rank an export writes (TensorRT-LLM max_batch_size, vLLM max-num-seqs, SGLang
    max-running-requests over its ranks): the deployment's own where it states one (Deployment.max_batch, which `import`
    reads back), else the rank's share of `concurrency` (per_rank), so the file runs the batch it was priced at."""
    return int(dep.max_batch) if dep.max_batch is not None else per_rank(concurrency, adp)


def written_capture(dep: Deployment, rank_batch: int) -> int | None:
    """The decode capture an SGLang or vLLM export writes (a batch per rank; 0: graphs off): the deployment's, at most the
    rank's batch (a search's points state their grid's largest, explore.search.point_graphs, as TensorRT-LLM's export
    caps it at its max_batch_size), and none where that holds the whole batch and the engine's own default capture on
    the launch's GPU, plan and batch limit (serve.aggregated.default_capture: SGLang's by memory and TP, vLLM's from
    max_num_seqs) holds it too: the launch is priced the same left at the engine's default. Where the deployment states
    none, the priced default is written where the release the export writes for captures another batch there
    (Engine.export_graphs_default: SGLang 0.5.23's 48 / 160 below 35 GiB against the runs' 24 / 80), so the launch
    captures what the price reads."""
    from llm_codesign.serve.eager import decode_capture
    from llm_codesign.spec.harness import SchedulerFlags

    # the launch's batch limit is the rank's batch (the exporters write it: vLLM's max-num-seqs, SGLang's max-running-requests)
    flags = SchedulerFlags(max_running_requests=float(rank_batch))
    if dep.cuda_graph_max_bs is None:  # the engine's default, priced at its runs' releases: written where the export's moved
        top = min(decode_capture(dep, flags)[0], rank_batch)
        return None if min(decode_capture(dep, flags, exported=True)[0], rank_batch) == top else int(top)
    if dep.cuda_graph_max_bs == 0:  # graphs off
        return 0
    n = min(int(dep.cuda_graph_max_bs), rank_batch)
    top, padded = decode_capture(replace(dep, cuda_graph_max_bs=None), flags)
    covered = padded and top >= rank_batch
    return None if n >= rank_batch and covered else n


def flags(opts: dict) -> list[str]:
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


def parse_flags(words: list[str], origin: str = "export", *, engine: str | None = None) -> dict:
    """Command-line words back to options (flags' inverse); a JSON value nested past the limit is refused. With `engine`
    (a Dynamo worker's, whose flags its engine's own parser reads), a flag that takes several words there (nargs_flags:
    SGLang's --cuda-graph-bs-decode 1 2 64) gets every word up to the next flag under its documented name, as read_flags
    reads the plain command line (_list_value), not its first word with the rest refused as stray."""
    out, i = {}, 0
    many = nargs_flags(engine) if engine is not None else frozenset()
    if (odd := next((w for w in words if not isinstance(w, str)), None)) is not None:  # YAML's unquoted 64 is an int
        raise InputError("args", odd, "text: a container's args are strings (Kubernetes core/v1 Container.args, []string); "
                                      "quote a number: '64'")
    while i < len(words):
        w = words[i]
        if not w.startswith("--"):
            raise InputError("export", w, "--flag value pairs")
        if many and (name := resolve_option(engine, w[2:])) in many:
            out[name], i = _list_value(words, i, w[2:], given=None, engine=engine, origin=origin)
            i += 1
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            v = words[i + 1]
            try:
                v = parse_nested(json.loads, v, "export", origin)
            except json.JSONDecodeError:  # a plain word (InputError, a ValueError too, is a nesting refusal)
                pass
            out[w[2:]] = v
            i += 2
        else:
            out[w[2:]] = True
            i += 1
    return out


def whole(field: str, value, default: int | None = 1, *, hi: int = 1 << 16) -> int | None:
    """A configuration's whole number (a parallel size, a batch, a token budget) from 1 to `hi`, or
    `default` where it is absent; anything else (`eight`, 1.5, 0, -2) one line naming the option."""
    if value is None:
        return default
    n = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, float) and value.is_integer():
        n = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        n = int(value)
    if n is None or not 1 <= n <= hi:
        raise InputError(field, value, f"a whole number from 1 to {hi:,}")
    return n


def switch(field: str, value) -> bool | None:
    """A configuration's on/off option, None where it is absent; anything but true or false (`enable-expert-parallel: 7`,
    a YAML 1.1 boolean's misspelling read as text) one line naming the option: read by its truth, 7 was true."""
    if value is not None and not isinstance(value, bool):
        raise InputError(field, value, "true or false")
    return value


def fraction(field: str, value) -> float | None:
    """A configuration's share of memory in (0, 1], or None where it is absent; anything else (0.0, 1.5,
    `most`) one line naming the option: an engine refuses a fraction outside it."""
    if value is None:
        return None
    try:  # a command line's text spells the number
        f = memory_fraction(float(value) if isinstance(value, str) else value)
    except ValueError:
        f = None
    if f is None:
        raise InputError(field, value, FRACTION)
    return f


def read_spec(meta: dict, method_value: str | None, k: int | None, engine: str, draft: str | None) -> SpecDecoding | None:
    """The speculative decoding an engine's options name (its method's value, draft length and draft
    model), with the acceptance the header states."""
    if method_value is None:
        return None
    method = read_value(engine, "spec_method", method_value)
    if method is None:
        known = [*engine_spec(engine)["spec_method"].values(), *engine_spec(engine).get("read", {}).get("spec_method", {})]
        raise InputError("speculative method", method_value, "one of: " + ", ".join(known))
    if k is None:
        raise InputError("speculative method", method_value, "with its draft length stated (the tokens drafted a step)")
    s = meta.get("spec") or {}
    k = whole("draft length", k, hi=16)
    # one rate per draft token, as estimate's --acceptance-rates (import's are the user's, the configuration's k)
    given = s.get("rates") or None
    if isinstance(given, list) and all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in given):
        given = ",".join(repr(float(r)) for r in given)  # named as typed, 0.8,0.6 (repr round-trips)
    rates = acceptance_rates_of(given, k=k, draft=f"the configuration drafts {k} tokens a step")
    # none stated: the model's published one where one is bundled, as estimate's (spec_decoding: one rule everywhere)
    return spec_decoding(method, draft_len=k, acceptance=s.get("mean_accepted"), acceptance_rates=rates or None,
                         draft_model=draft or s.get("draft_model"), model=s.get("model") or meta.get("model"))


# ---------------------------------------------------------------------------------------------------------
# reading a real engine configuration (`llm-codesign import`): the engine's own command lines and files


def code_lines(text: str) -> str:
    """The text less its comment lines (an export's header and `# launch:` line)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def file_beside(path: str, origin: str) -> str:
    """The text of a file a configuration names (`--config`, `--extra_llm_api_options`), relative to the
    configuration's own folder."""

    # a command line given as text (origin "the command line", no folder): Path(origin).parent is ".", the working folder
    p = Path(path).expanduser() if Path(path).expanduser().is_absolute() or origin == "export" else Path(origin).parent / path
    if not p.is_file():
        where = f"beside {origin}" if Path(origin).parent != Path(".") else f"in the working folder {Path.cwd()} or an absolute path"
        raise InputError("config", path, f"a file {where} (the configuration names it)")
    return p.read_text(encoding="utf-8-sig")


def env_words(env: dict[str, str]) -> list[str]:
    """The words that set `env` for the one command they precede (NAME=value)."""
    return [f"{k}={v}" for k, v in env.items()]


def command_words(text: str, origin: str = "config") -> list[str]:
    """A shell command's words: continued lines joined, comment lines dropped, quotes as the shell reads them."""
    body = " ".join(line for line in text.replace("\\\n", " ").splitlines() if not line.lstrip().startswith("#"))
    try:
        return shlex.split(body, comments=True)
    except ValueError as e:
        raise InputError("config", origin, f"a shell command line ({e})") from None


def resolve_option(engine: str, name: str, *, dashes: bool = True, abbrev: bool = True) -> str | None:
    """The documented option a flag names in `engine` (data/engines/NAME.toml options, command_options
    and [aliases]): underscores read as dashes where the engine's parser takes both (`dashes`), an
    alias as what it stands for, and a unique prefix as its option where the parser is argparse's
    (`abbrev`); None where it names none."""
    es = engine_spec(engine)
    aliases = es.get("aliases", {})
    known = set(es["options"]) | set(es.get("command_options", ()))
    n = name.replace("_", "-") if dashes else name
    if n in aliases:
        return aliases[n]
    if n in known:
        return n
    if abbrev and len(n) >= 2:
        hits = {aliases.get(o, o) for o in (*known, *aliases) if o.startswith(n)}
        if len(hits) == 1:
            return hits.pop()
    return None


def _boolean(flag: str) -> bool:
    """Flags that take no value (argparse store_true / BooleanOptionalAction), by their names."""
    return flag.startswith(("enable-", "disable-", "no-", "enable_", "disable_", "skip-", "trust-remote-code", "trust_remote_code",
                            "enforce-eager", "async-scheduling"))


class Flags(dict):
    """Options read from a command line, with `typed`: each option's flag as the user typed it where that differs from
    its documented name (an alias, a prefix, underscores), so a refusal names what the user wrote (`cuda-graph-max-bs`,
    not SGLang's newer `cuda-graph-max-bs-decode` it stands for)."""

    def __init__(self, *a, typed: dict | None = None, **kw):
        super().__init__(*a, **kw)
        self.typed = dict(typed or {})


def nargs_flags(engine: str) -> frozenset[str]:
    """The options whose flag takes every word after it up to the next flag (argparse nargs "+" / "*"), as the engine's
    own parser declares them (data/engines/NAME.toml [nargs], extracted by tools/engine_nargs.py); none where it lists none."""
    return frozenset(engine_spec(engine).get("nargs", {}).get("flags", ()))


# argparse's test for a word that is a value although it starts with a dash (ArgumentParser._negative_number_matcher,
# CPython Lib/argparse.py; neither engine's parser declares an option that looks like a negative number): -3, -1.5
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _value_word(w: str) -> bool:
    """Whether argparse reads the word `w` after a flag as that flag's value: not a flag (`-` alone is a value), or a
    negative number."""
    return not w.startswith("-") or w == "-" or _NEGATIVE.match(w) is not None


def _list_value(words: list[str], i: int, flag: str, *, given: list[str] | None, engine: str, origin: str) -> tuple[list, int]:
    """(the words of a several-word flag at words[i], the index of its last word): `given` (its `--flag=value`), else every
    value word after it (_value_word); one JSON list word read as its items; none refused, as argparse's nargs "+" does."""
    taken = given or []
    while given is None and i + 1 < len(words) and _value_word(words[i + 1]):
        taken.append(words[i + 1])
        i += 1
    if not taken:
        raise MissingInput(flag, f"one value or more after it ({engine} {engine_spec(engine)['version']}'s parser takes "
                           "every word up to the next flag and refuses none)")
    if len(taken) == 1 and taken[0].lstrip().startswith("["):  # one JSON list word: its items
        try:
            v = parse_nested(json.loads, taken[0], "config", origin)
            taken = v if isinstance(v, list) else taken
        except json.JSONDecodeError:
            pass
    return taken, i


def read_flags(words: list[str], engine: str, origin: str = "config", *, dashes: bool = True, abbrev: bool = True) -> tuple[dict, list[str]]:
    """An engine's command-line words as its parser reads them: ({option: value}, positional words).
    `--flag value`, `--flag=value`, `-tp 8` (short aliases), a bare flag as true and `--no-flag` as false;
    each flag resolved to its documented option (resolve_option), one it does not document kept under
    its own name (the caller lists it as ignored). Values are JSON where they parse as JSON (8, 0.9,
    true, a speculative config's mapping), else the word. An option the engine takes several words for (nargs_flags:
    SGLang's --cuda-graph-bs-decode 1 2 64, vLLM's --cudagraph-capture-sizes) gets the list of every word up to the
    next flag, each kept as typed (its reader checks them: `nan`, `1.5`, `-3` are not capture sizes), as argparse
    collects them; `--flag=value` gives one (argparse leaves the words after it positional). One JSON list word
    (`[1,2,64]`) reads as its items. Such a flag with no word after it is refused where the engine needs one (nargs "+")."""
    out, pos, i = Flags(), [], 0
    many = nargs_flags(engine)
    while i < len(words):
        w = words[i]
        if not w.startswith("-") or w == "-":
            pos.append(w)
            i += 1
            continue
        flag, eq, given = w.lstrip("-").partition("=")
        name = resolve_option(engine, flag, dashes=dashes, abbrev=abbrev)
        negated = name is None and flag.startswith(("no-", "no_")) and resolve_option(engine, flag[3:], dashes=dashes, abbrev=False)
        key = negated or name or (flag.replace("_", "-") if dashes else flag)
        if name in many and not negated:
            out[key], i = _list_value(words, i, flag, given=[given] if eq else None, engine=engine, origin=origin)
            if flag != name:
                out.typed[key] = flag
            i += 1
            continue
        if eq:
            value = given
        elif negated:
            value = False
        elif i + 1 < len(words) and (not words[i + 1].startswith("-") or words[i + 1][1:2].isdigit()) and (
                not _boolean(key) or words[i + 1].lower() in ("true", "false")):  # argparse: -2 is a value
            value = words[i + 1]
            i += 1
        else:
            value = True
        if isinstance(value, str):
            try:
                value = parse_nested(json.loads, value, "config", origin)
            except json.JSONDecodeError:  # a plain word
                value = {"true": True, "false": False}.get(value.lower(), value)
        out[key] = value
        if name and flag != name:
            out.typed[key] = flag
        i += 1
    return out, pos


def read_value(engine: str, table: str, value) -> str | None:
    """Our name for an engine's value in `table` (quantization, kv_cache_dtype, spec_method): the
    reading table [read.TABLE] first, then the inverse of the export's [TABLE]; None where neither has it."""
    es = engine_spec(engine)
    if value in es.get("read", {}).get(table, {}):
        return es["read"][table][value]
    for ours, theirs in es.get(table, {}).items():
        if theirs == value:
            return ours
    return None


def instruct_ids(ids: tuple) -> tuple:
    """Hugging Face `ids` with the instruction-tuned one first where they list it (meta-llama/Llama-3.1-70B-Instruct for
    meta-llama/Llama-3.1-70B: the first id + "-instruct"): the model a server serves, and the one the published accuracy
    rows quote. A local folder, or a first id already instruction-tuned, as given."""
    if not ids or Path(ids[0]).is_absolute() or ids[0].lower().endswith("-instruct"):
        return ids
    hit = next((h for h in ids if h.lower() == ids[0].lower() + "-instruct"), None)
    return (hit, *(h for h in ids if h != hit)) if hit else ids


def draft_path(name: str | None) -> str | None:
    """Where the engines load a drafter (`--draft-model`) from: a registry entry's instruction-tuned Hugging Face id, as the
    target's (instruct_ids: llama-3.1-8b -> meta-llama/Llama-3.1-8B-Instruct); any other Hub id or a folder as given.
    vLLM's speculative_config.model, SGLang's --speculative-draft-model-path and TensorRT-LLM's speculative_model
    each read a Hub id or a local folder, so a registry name written verbatim fails at load (newc11 #5)."""
    from llm_codesign.spec.registry import get_model, is_bundled

    if not name or not is_bundled(name):
        return name
    ids = get_model(name).hf_ids
    if not ids:
        raise InputError("draft_model", name, "a drafter's Hugging Face id or checkpoint folder: the registry names no checkpoint for it")
    return instruct_ids(ids)[0]
