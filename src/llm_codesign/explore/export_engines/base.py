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
import tomllib
from abc import ABC, abstractmethod
from functools import lru_cache
from importlib import resources

import numpy as np

from llm_codesign.errors import InputError, parse_nested
from llm_codesign.spec.engines import ENGINES
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding
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

    @abstractmethod
    def options(self, model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
        """The engine's options for one instance of `dep` (a plan it cannot express: refuse())."""

    @abstractmethod
    def render(self, opts: dict, *, head: list[str], model: ModelSpec, file_name: str) -> str:
        """The file's text: the comment lines `head`, the launch line and the options."""

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

    def worker_args(self, model: ModelSpec, dep: Deployment, concurrency: int, mode: str) -> list[str]:
        """The command-line words of its Dynamo worker in `mode` (prefill or decode): its own options
        as flags."""
        return flags({"disaggregation-mode": mode} | self.options(model, dep, concurrency))

    def worker_options(self, args: dict) -> tuple[dict, str]:
        """A Dynamo worker's flags (less disaggregation-mode) back to (its options, the model they name)."""
        return args, args.get("model") or args["model-path"]


EXPORTERS: dict[str, Exporter] = {}


def register_exporter(exporter: Exporter) -> Exporter:
    """Make an engine exportable: the engine must be registered (spec.engines) and have a data file."""
    if exporter.name not in ENGINES or exporter.name in EXPORTERS:
        raise ValueError(f"exporter {exporter.name!r}: not a registered engine, or exported already")
    EXPORTERS[exporter.name] = exporter
    return exporter


def exportable() -> tuple[str, ...]:
    """What `export` writes: the engines with an exporter, in the registry's order, and Dynamo."""
    return (*(n for n in ENGINES if n in EXPORTERS), DYNAMO)


def exporter(name: str) -> Exporter:
    """The exporter of a registered engine, or one line naming the exportable ones."""
    if name not in EXPORTERS:
        raise InputError("engine", name, "one of: " + ", ".join(exportable()[:-1]))
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


def hf_id(model: ModelSpec) -> str:
    return model.hf_ids[0] if model.hf_ids else model.name


def refuse(engine: str, plan: Plan, why: str):
    raise InputError("engine", engine, f"{why} (plan {plan.label()}); export this plan for another engine")


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


def per_rank(concurrency: int, adp: int) -> int:
    return max(1, math.ceil(concurrency / adp))


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


def parse_flags(words: list[str], origin: str = "export") -> dict:
    """Command-line words back to options (flags' inverse); a JSON value nested past the limit is refused."""
    out, i = {}, 0
    while i < len(words):
        w = words[i]
        if not w.startswith("--"):
            raise InputError("export", w, "--flag value pairs")
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
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


def read_spec(meta: dict, method_value: str | None, k: int | None, engine: str, draft: str | None) -> SpecDecoding | None:
    """The speculative decoding an engine's options name (its method's value, draft length and draft
    model), with the acceptance the header states."""
    if method_value is None:
        return None
    rev = {v: m for m, v in engine_spec(engine)["spec_method"].items()}
    if method_value not in rev:
        raise InputError("speculative method", method_value, "one of: " + ", ".join(rev))
    s = meta.get("spec") or {}
    return SpecDecoding(rev[method_value], int(k), s.get("mean_accepted"), tuple(s.get("rates") or ()), draft or s.get("draft_model"))
