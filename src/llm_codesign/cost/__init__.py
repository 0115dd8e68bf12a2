"""The cost model: calibration parameters, array-valued kernel formulas, the operator graph of one
forward step, memory per GPU and the per-operator roofline."""
# the operator builders of each layer kind register themselves (ops.op_builder) as these load
from llm_codesign.cost import ffns, mixers  # noqa: F401
