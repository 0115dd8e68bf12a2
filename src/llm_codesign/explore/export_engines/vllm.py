"""vLLM's export: a `vllm serve --config` YAML (each key a long flag without its dashes)."""
from __future__ import annotations

import shlex

from llm_codesign.errors import InputError
from llm_codesign.explore import yaml_io
from llm_codesign.explore.export_engines.base import (
    Exporter,
    Flags,
    code_lines,
    command_words,
    engine_spec,
    env_words,
    exporter,
    file_beside,
    fraction,
    hf_id,
    kv_option,
    nested,
    per_rank,
    plan_ints,
    read_flags,
    read_spec,
    refuse,
    register_exporter,
    resolve_option,
    weight_option,
    whole,
    written_capture,
)
from llm_codesign.spec.engines import VLLM
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan


def vllm_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """`vllm serve --config` keys for one instance (vLLM runs experts all-EP or all-TP, attention DP as DP ranks)."""
    tp, pp, ep, moe_tp, adp, kvp = plan_ints(dep.plan)
    stage = tp * adp * kvp
    if model.is_moe and ep > 1 and ep != stage:
        refuse("vllm", dep.plan, f"vLLM runs the experts expert-parallel over all {stage} GPUs of a stage or tensor-parallel, not EP{ep} x MoE-TP{moe_tp}")
    o = {"model": hf_id(model), "tensor-parallel-size": tp * kvp, "pipeline-parallel-size": pp}
    if adp > 1:
        o["data-parallel-size"] = adp
    if kvp > 1:
        o["decode-context-parallel-size"] = kvp  # DCP shards the KV cache over ranks of the TP group
    if model.is_moe and ep > 1:
        o["enable-expert-parallel"] = True
    if q := weight_option(model, dep.precision, "vllm"):
        o["quantization"] = q
    o["kv-cache-dtype"] = kv_option(dep.precision, "vllm")
    o["max-num-seqs"] = per_rank(concurrency, adp)  # each DP rank schedules its own batch
    o["max-num-batched-tokens"] = dep.step_tokens
    o["enable-chunked-prefill"] = True
    o["gpu-memory-utilization"] = exporter("vllm").written_kv_fraction(dep)
    # the deployment's capture where it states one: --max-cudagraph-capture-size counts tokens, a decode request's 1 + k
    # (VllmConfig._set_cudagraph_sizes, uniform_decode_query_len; vllm/config/vllm.py:2398-2470@0.33.0), --enforce-eager none
    # (written_capture: where the default would not hold it)
    graphs = written_capture(dep, per_rank(concurrency, adp))
    if graphs == 0:
        o["enforce-eager"] = True
    elif graphs is not None:
        o["max-cudagraph-capture-size"] = graphs * (1 + (dep.spec.k if dep.spec is not None else 0))
    if dep.spec is not None:
        draft = {"model": dep.spec.draft_model} if dep.spec.method in ("eagle3", "draft") and dep.spec.draft_model else {}
        o["speculative-config"] = nested("vllm", "speculative-config", method=engine_spec("vllm")["spec_method"][dep.spec.method],
                                         num_speculative_tokens=dep.spec.k, **draft)
    return o


class VLLMExporter(Exporter):
    name, file_name, dynamo_image = VLLM.name, "vllm_config.yaml", "vllm"
    reads = frozenset({"model", "tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size", "decode-context-parallel-size",
                       "enable-expert-parallel", "quantization", "kv-cache-dtype", "max-num-seqs", "max-num-batched-tokens",
                       "enable-chunked-prefill", "gpu-memory-utilization", "speculative-config", "spec-method", "spec-tokens", "spec-model",
                       "enforce-eager", "max-cudagraph-capture-size", "cudagraph-capture-sizes"})
    switches = frozenset({"enable-expert-parallel", "enable-chunked-prefill", "enforce-eager"})

    def options(self, model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
        return vllm_options(model, dep, concurrency)

    def render(self, opts: dict, *, head: list[str], model: ModelSpec, file_name: str, env: dict[str, str]) -> str:
        # quoted as trtllm's line is (shlex.join): a name with a space ran as two arguments
        cmd = shlex.join([*env_words(env), "vllm", "serve", "--config", file_name])
        return "\n".join(head + [f"# launch: {cmd}", yaml_io.dump(opts)]) + "\n"

    def parse(self, text: str, origin: str = "export") -> tuple[dict, str | None]:
        """Its export or a `vllm serve --config` YAML (keys as flags, underscores or dashes), or a `vllm
        serve MODEL ...` command line (`python -m vllm.entrypoints.openai.api_server`, the vllm-openai
        image's arguments): its options by their documented names, and the model they name."""
        words = command_words(text, origin) if any(m in code_lines(text) for m in COMMAND_MARKERS) else None
        if words is None:
            o = _yaml_options(text, origin)
            return o, o.get("model")
        start = next((i + 1 for i, w in enumerate(words) if (w == "serve" and i and words[i - 1].endswith("vllm"))
                      or w.endswith(("vllm.entrypoints.openai.api_server", "vllm-openai")) or "vllm-openai:" in w), len(words))
        o, pos = read_flags(words[start:], "vllm", origin)
        if isinstance(o.get("config"), str):  # `--config FILE`: its keys beneath the command line's (vLLM's precedence)
            o = Flags({**_yaml_options(file_beside(o.pop("config"), origin), origin), **o}, typed=o.typed)
        return o, o.get("model") or (pos[0] if pos else None)

    def plan_from(self, o: dict, model: ModelSpec) -> tuple[Plan, int | None]:
        sizes = {k: whole(k, o.get(k)) for k in ("tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size",
                                                 "decode-context-parallel-size")}
        kvp, tps = sizes["decode-context-parallel-size"], sizes["tensor-parallel-size"]
        if tps % kvp:  # DCP shards the KV cache over ranks of the TP group
            raise InputError("tensor-parallel-size", tps, f"a multiple of decode-context-parallel-size ({kvp})")
        tp, pp, adp = tps // kvp, sizes["pipeline-parallel-size"], sizes["data-parallel-size"]
        stage = tp * adp * kvp
        ep, moe_tp = (stage, 1) if o.get("enable-expert-parallel") else (1, stage if model.is_moe else 1)
        seqs = whole("max-num-seqs", o.get("max-num-seqs"), None, hi=1 << 20)
        return Plan(tp, pp, ep, moe_tp, adp, kvp), seqs * adp if seqs else None

    def replicas(self, o: dict, model: ModelSpec) -> tuple[dict, int]:
        """A dense model's data-parallel ranks are copies of it (the experts are what DP shares)."""
        dp = whole("data-parallel-size", o.get("data-parallel-size"))
        if model.is_moe or dp == 1:
            return o, 1
        return {k: v for k, v in o.items() if k != "data-parallel-size"}, dp

    def cuda_graph_max_bs(self, o: dict) -> int | None:
        """The decode capture in requests a rank: 0 where --enforce-eager (or compilation-config's cudagraph_mode NONE) turns
        graphs off; else --max-cudagraph-capture-size, else the largest of --cudagraph-capture-sizes (either also inside
        compilation-config), in tokens, over the 1 + k tokens a decode request carries (vLLM pads a batch up to the next
        captured size); None where none is set (the engine's default capture). A capture size of 0 is refused: it is the
        value vLLM writes once graphs are off (vllm/config/vllm.py:2008, 2652@0.33.0 wheel), not a way to turn them off;
        given with graphs on, VllmConfig stops on it (`assert max_cudagraph_capture_size >= 1`, vllm.py:2554)."""
        cc = o.get("compilation-config")
        cc = cc if isinstance(cc, dict) else {}
        if o.get("enforce-eager") or str(cc.get("cudagraph_mode", "")).upper() == "NONE":
            return 0
        # each read where the user set it: a flag, else compilation-config's field, named so in a refusal
        top_at = "max-cudagraph-capture-size" if "max-cudagraph-capture-size" in o else "compilation-config.max_cudagraph_capture_size"
        sizes_at = "cudagraph-capture-sizes" if "cudagraph-capture-sizes" in o else "compilation-config.cudagraph_capture_sizes"
        top = o.get("max-cudagraph-capture-size", cc.get("max_cudagraph_capture_size"))
        sizes = o.get("cudagraph-capture-sizes", cc.get("cudagraph_capture_sizes"))
        off = "--enforce-eager (or compilation-config's cudagraph_mode NONE) turns its CUDA graphs off"
        if top is None and sizes is not None:
            sizes = sizes if isinstance(sizes, list) else [sizes]
            if not sizes:  # VllmConfig: `assert len(cudagraph_capture_sizes) > 0` with graphs on (config/vllm.py:2561@0.33.0 wheel)
                raise InputError(sizes_at, sizes, f"one size or more: vLLM does not start with an empty capture list; {off}")
            top = max(whole(sizes_at, b, hi=1 << 20) for b in sizes)
            top_at = sizes_at
        if top in (0, "0"):
            raise InputError(top_at, top, f"1 or more: vLLM does not start with a capture of 0; {off}")
        top = whole(top_at, top, None, hi=1 << 20)
        if top is None:
            return None
        sc = o.get("speculative-config")
        k = (sc.get("num_speculative_tokens") if isinstance(sc, dict) else None) or o.get("spec-tokens")
        return max(top // (1 + whole("num_speculative_tokens", k, 0, hi=16)), 1)

    def kv_fraction(self, o: dict) -> float | None:
        """--gpu-memory-utilization: the share of the GPU weights, activations and KV cache take (Engine.kv_budget "total")."""
        return fraction("gpu-memory-utilization", o.get("gpu-memory-utilization"))

    def settings(self, o: dict, meta: dict) -> tuple:
        sc = o.get("speculative-config") or {"method": o.get("spec-method"), "num_speculative_tokens": o.get("spec-tokens"),
                                             "model": o.get("spec-model")}
        if not isinstance(sc, dict):
            raise InputError("speculative-config", sc, 'a JSON mapping, e.g. {"method": "eagle3", "num_speculative_tokens": 3}')
        spec = read_spec(meta, sc.get("method"), sc.get("num_speculative_tokens"), "vllm", sc.get("model"))
        return o.get("quantization"), o.get("kv-cache-dtype", "auto"), spec, o.get("max-num-batched-tokens")


COMMAND_MARKERS = ("vllm serve", "vllm.entrypoints", "vllm-openai")  # a command line rather than a YAML config


def _yaml_options(text: str, origin: str) -> dict:
    """A `vllm serve --config` YAML's options by their documented names (it takes underscores too)."""
    o = yaml_io.load(text, origin)
    if not isinstance(o, dict):
        raise InputError("config", origin, "a YAML mapping of vLLM options")
    return {resolve_option("vllm", k, abbrev=False) or k: v for k, v in o.items()}


register_exporter(VLLMExporter())
