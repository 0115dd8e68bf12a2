"""Per-engine export builders, one module each (vllm.py, sglang.py, trtllm.py), registered in `EXPORTERS`
under the engine's registry name (base.py). Making an engine exportable is one module here, its import
below and its documented options in data/engines/NAME.toml."""
from llm_codesign.explore.export_engines import sglang, trtllm, vllm  # noqa: F401  (each registers its exporter)
from llm_codesign.explore.export_engines.base import (
    DYNAMO,
    EXPORTERS,
    Exporter,
    engine_spec,
    exportable,
    exporter,
    nested_keys,
    register_exporter,
)

__all__ = ["DYNAMO", "EXPORTERS", "Exporter", "engine_spec", "exportable", "exporter", "nested_keys", "register_exporter"]
