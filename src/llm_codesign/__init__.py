"""llm-codesign: hardware-aware co-design of large language models.

Predicts accuracy (a quality proxy), throughput (output tokens/s per GPU) and interactivity
(tokens/s per user, time to first token) for any model shape on any GPU and deployment.

    import llm_codesign as lc
    model = lc.get_model("llama-3.1-70b")
    dep = lc.deployment(model, gpu="h200", num_gpus=8, weight_dtype="fp8", kv_dtype="fp8")
    lc.estimate(model, dep, lc.Workload(isl=1024, osl=1024, concurrency=64)).tpot_s

The public API (`__all__`) lives in `llm_codesign.api` and is imported on first use (PEP 562), so
that the command line's entry point starts without it (cli.main forks the figure's process first).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = ["Comparison", "Deployment", "DisaggEstimate", "Estimate", "Frontier", "FrontierPoint", "Gpu", "ImportEstimate", "InputError", "Metrics",
           "Mix", "ModelSpec", "Plan", "Precision", "Profile", "SpecDecoding", "Workload", "__version__", "calibrate", "compare", "deployment", "design",
           "disagg", "estimate", "evaluate", "export_point", "get_gpu", "get_model", "import_config", "lint", "mix", "pareto", "validate_serving"]

if TYPE_CHECKING:
    from llm_codesign.api import (
        Comparison,
        Deployment,
        DisaggEstimate,
        Estimate,
        Frontier,
        FrontierPoint,
        Gpu,
        ImportEstimate,
        InputError,
        Metrics,
        Mix,
        ModelSpec,
        Plan,
        Precision,
        Profile,
        SpecDecoding,
        Workload,
        calibrate,
        compare,
        deployment,
        design,
        disagg,
        estimate,
        evaluate,
        export_point,
        get_gpu,
        get_model,
        import_config,
        lint,
        mix,
        pareto,
        validate_serving,
    )


def __getattr__(name: str):
    if name in __all__:
        from llm_codesign import api

        value = getattr(api, name)
        globals()[name] = value  # once: later lookups find it without this hook
        return value
    raise AttributeError(f"module 'llm_codesign' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
