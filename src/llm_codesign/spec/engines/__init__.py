"""Serving engines: one module each (trtllm.py, vllm.py, sglang.py, atom.py), each one `Engine` object holding the
engine's documented defaults with their sources, registered in `ENGINES` (base.py). Adding an engine is
one module here, its import below, and its name in each per-engine table of data/calibration/default.toml;
an export builder (explore/export_engines/), its options file (data/engines/) and its name in EXPORTABLE make it
exportable."""
from llm_codesign.spec.engines.base import (
    AR_NORM_KERNELS,
    ENGINES,
    EXPORTABLE,
    FUSIONS,
    MOE_A2A_BACKENDS,
    MOE_KERNELS,
    VENDOR_ENGINE,
    VENDOR_NAMES,
    Engine,
    EngineCosts,
    cdna3_mxfp4,
    check_kv_format,
    check_pool_vendors,
    check_runs,
    engine_choices,
    engine_for,
    engine_for_pools,
    engine_names,
    engines_on,
    get_engine,
    listed,
    register_engine,
)

# isort: off
# the order registered is the order the CLI, the web form and error messages list them: the reference first
from llm_codesign.spec.engines.trtllm import TRTLLM
from llm_codesign.spec.engines.vllm import VLLM
from llm_codesign.spec.engines.sglang import SGLANG
from llm_codesign.spec.engines.atom import ATOM
# isort: on

__all__ = ["AR_NORM_KERNELS", "ATOM", "ENGINES", "EXPORTABLE", "FUSIONS", "MOE_A2A_BACKENDS", "MOE_KERNELS", "SGLANG", "TRTLLM", "VENDOR_ENGINE", "VENDOR_NAMES", "VLLM",
           "Engine", "EngineCosts", "cdna3_mxfp4", "check_kv_format", "check_pool_vendors", "check_runs", "engine_choices", "engine_for", "engine_for_pools", "engine_names", "engines_on",
           "get_engine", "listed", "register_engine"]
