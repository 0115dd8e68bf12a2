"""The cost model: calibration parameters, array-valued kernel formulas, the operator graph of one
forward step, memory per GPU and the per-operator roofline."""
