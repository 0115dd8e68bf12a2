"""Quality proxy: a cited scaling-law loss with an MoE rule, a shape term and precision deltas.

Lower is better (nats per token). It does not predict benchmark scores; it lets the shape search
compare candidates at equal quality. Every constant lives in data/quality.toml and can be
overridden from a user file.
"""
from __future__ import annotations

import copy
import tomllib
from functools import lru_cache
from importlib import resources

import numpy as np

from llm_codesign.errors import InputError, read_toml


@lru_cache(maxsize=1)  # parsed once: a search asks for every precision's accuracy
def _bundled() -> dict:
    return tomllib.loads(resources.files("llm_codesign").joinpath("data/quality.toml").read_text())


def constants(override: str | None = None) -> dict:
    """The quality proxy's constants (a copy of the bundled ones: the caller's to change), a user's
    TOML of the same sections and keys laid over them."""
    doc = copy.deepcopy(_bundled())
    if override:
        user = read_toml(override, "quality", "a quality-constants")
        for sec, vals in user.items():
            if sec not in doc or not isinstance(vals, dict):
                raise InputError(f"quality.{sec}", vals, "one of the sections " + ", ".join(doc))
            for k, v in vals.items():
                if k not in doc[sec]:
                    raise InputError(f"quality.{sec}.{k}", v, "one of " + ", ".join(doc[sec]))
                doc[sec][k] = float(v)
    return doc


def loss(total_params, active_params, hidden, layers, weight_dtype: str = "bf16", *, c: dict | None = None):
    """Proxy loss for arrays of shapes (broadcasts)."""
    c = c or constants()
    s, m, sh = c["scaling"], c["moe"], c["shape"]
    N_tot = np.asarray(total_params, float)
    N_act = np.asarray(active_params, float)
    n_eff = N_act ** (1 - m["total_weight"]) * N_tot ** m["total_weight"]
    base = s["E"] + s["A"] / n_eff ** s["alpha"] + s["B"] / s["tokens"] ** s["beta"]
    aspect = np.asarray(hidden, float) / np.asarray(layers, float)
    x = np.abs(np.log(aspect / sh["optimum"]))
    shape = sh["coeff"] * np.maximum(x - np.log(sh["flat_band"]), 0.0) ** 2
    prec = c["precision"].get(weight_dtype, 0.0)
    return base + shape + prec


def model_loss(model, weight_dtype: str | None = None, c: dict | None = None) -> float:
    return float(loss(model.total_params, model.active_params, model.hidden, model.num_layers,
                      weight_dtype or model.default_precision.weight.name, c=c))
