"""vLLM's export: a `vllm serve --config` YAML (each key a long flag without its dashes)."""
from __future__ import annotations

from llm_codesign.errors import InputError
from llm_codesign.explore import yaml_subset
from llm_codesign.explore.export_engines.base import (
    Exporter,
    engine_spec,
    hf_id,
    kv_option,
    nested,
    per_rank,
    plan_ints,
    read_spec,
    refuse,
    register_exporter,
    weight_option,
)
from llm_codesign.spec.engines import VLLM
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan


def vllm_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """`vllm serve --config` keys for one instance (vLLM runs experts all-EP or all-TP, attention DP as DP ranks)."""
    tp, pp, ep, mtp, adp, kvp = plan_ints(dep.plan)
    stage = tp * adp * kvp
    if model.is_moe and ep > 1 and ep != stage:
        refuse("vllm", dep.plan, f"vLLM runs the experts expert-parallel over all {stage} GPUs of a stage or tensor-parallel, not EP{ep} x MoE-TP{mtp}")
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
    o["gpu-memory-utilization"] = VLLM.kv_budget[1]
    if dep.spec is not None:
        draft = {"model": dep.spec.draft_model} if dep.spec.method in ("eagle3", "draft") and dep.spec.draft_model else {}
        o["speculative-config"] = nested("vllm", "speculative-config", method=engine_spec("vllm")["spec_method"][dep.spec.method],
                                         num_speculative_tokens=dep.spec.k, **draft)
    return o


class VLLMExporter(Exporter):
    name, file_name, dynamo_image = VLLM.name, "vllm_config.yaml", "vllm"

    def options(self, model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
        return vllm_options(model, dep, concurrency)

    def render(self, opts: dict, *, head: list[str], model: ModelSpec, file_name: str) -> str:
        return "\n".join(head + [f"# launch: vllm serve --config {file_name}", yaml_subset.dump(opts)]) + "\n"

    def parse(self, text: str, origin: str = "export") -> tuple[dict, str]:
        o = yaml_subset.load(text, origin)
        if not o.get("model"):
            raise InputError("export", "model", "a vLLM export with its model: key")
        return o, o["model"]

    def plan_from(self, o: dict, model: ModelSpec) -> tuple[Plan, int]:
        kvp = int(o.get("decode-context-parallel-size", 1))
        tp, pp, adp = int(o["tensor-parallel-size"]) // kvp, int(o.get("pipeline-parallel-size", 1)), int(o.get("data-parallel-size", 1))
        stage = tp * adp * kvp
        ep, mtp = (stage, 1) if o.get("enable-expert-parallel") else (1, stage if model.is_moe else 1)
        return Plan(tp, pp, ep, mtp, adp, kvp), int(o["max-num-seqs"]) * adp

    def settings(self, o: dict, meta: dict) -> tuple:
        sc = o.get("speculative-config") or {}
        spec = read_spec(meta, sc.get("method"), sc.get("num_speculative_tokens"), "vllm", sc.get("model"))
        return o.get("quantization"), o.get("kv-cache-dtype", "auto"), spec, o.get("max-num-batched-tokens")


register_exporter(VLLMExporter())
