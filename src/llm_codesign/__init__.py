"""llm-codesign: hardware-aware co-design of large language models.

Predicts accuracy (a quality proxy), throughput (output tokens/s per GPU) and interactivity
(tokens/s per user, time to first token) for any model shape on any GPU and deployment.

    import llm_codesign as lc
    model = lc.get_model("llama-3.1-70b")
    dep = lc.deployment(model, gpu="h200", num_gpus=8, weight_dtype="fp8", kv_dtype="fp8")
    lc.estimate(model, dep, lc.Workload(isl=1024, osl=1024, concurrency=64))["tpot_ms"]
"""

from llm_codesign.api import (
    Deployment,
    Frontier,
    Gpu,
    InputError,
    Metrics,
    ModelSpec,
    Plan,
    Precision,
    SpecDecoding,
    Workload,
    deployment,
    design,
    estimate,
    evaluate,
    get_gpu,
    get_model,
    lint,
    pareto,
    validate_serving,
)

__version__ = "0.1.0"

__all__ = ["Deployment", "Frontier", "Gpu", "InputError", "Metrics", "ModelSpec", "Plan", "Precision", "SpecDecoding", "Workload",
           "__version__", "deployment", "design", "estimate", "evaluate", "get_gpu", "get_model", "lint", "pareto", "validate_serving"]
