"""The edge validation layer (spec/validation.py) covers every config.json field the normaliser reads,
and refuses each with one InputError naming it."""
from __future__ import annotations

import ast
import inspect
import json
import math
from pathlib import Path

import pytest

import llm_codesign
from llm_codesign.errors import InputError
from llm_codesign.spec import model as normaliser
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.validation import (
    BLOCK_FIELDS,
    CONFIG_FIELDS,
    HF_QUANT_FIELDS,
    QUANT_FIELDS,
    ROPE_FIELDS,
    check_result,
    param_range,
)

DATA = Path(llm_codesign.__file__).parent / "data"
LLAMA = json.loads((DATA / "models" / "meta-llama--Meta-Llama-3.1-8B_config.json").read_text())
# the dicts the normaliser reads fields from: the config (and its outer form), a Nemotron-NAS block and
# its attention/FFN objects, the quantization configs and their groups
READERS = {"cfg", "outer", "b", "a", "f", "q", "qc", "g", "w", "quant", "rs"}


def fields_read() -> set[str]:
    """Every key the normaliser reads: d.get("k"), d["k"] and _req(cfg, k) over a tuple of names."""
    tree = ast.parse(inspect.getsource(normaliser))
    names: set[str] = set()
    tuples = {t.id: n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Tuple)
              for t in n.targets if isinstance(t, ast.Name)}

    def consts(node):
        return {e.value for e in getattr(node, "elts", ()) if isinstance(e, ast.Constant) and isinstance(e.value, str)}

    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and isinstance(n.func.value, ast.Name) \
                and n.func.value.id in READERS and n.args and isinstance(n.args[0], ast.Constant):
            names.add(n.args[0].value)
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in READERS and isinstance(n.slice, ast.Constant):
            names.add(n.slice.value)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_req" and len(n.args) > 1:
            if isinstance(n.args[1], ast.Constant):
                names.add(n.args[1].value)
        elif isinstance(n, ast.comprehension):  # (_req(cfg, k, origin) for k in ("a", "b") / for k in need)
            it = tuples.get(n.iter.id) if isinstance(n.iter, ast.Name) else n.iter
            names |= consts(it)
    return {x for x in names if isinstance(x, str)}


def test_every_field_the_normaliser_reads_is_validated():
    read = fields_read()
    assert {"hidden_size", "num_key_value_heads", "n_heads_in_group", "ffn_mult", "linear_conv_kernel_dim", "mamba_head_dim"} <= read
    nested = {x for v in BLOCK_FIELDS.values() for x in v} | set(BLOCK_FIELDS) | set(QUANT_FIELDS) | set(HF_QUANT_FIELDS) | set(ROPE_FIELDS)
    assert read - set(CONFIG_FIELDS) - nested == set()


WRONG = {"int": ["8", True, 1.5, math.nan, math.inf, -1, 10**30], "float": ["7", True, math.nan, math.inf, -1.0, 1e7], "bool": ["yes", 1], "str": [5, ["a"]], "str_list": [5, [1]],
         "int_list": [True, ["a"], [-1]], "dict": [5, "fp8"], "dict_list": [5, [1]], "int_or_str": [True, 1.5, 0, -1, [1]]}


@pytest.mark.parametrize("field", sorted(CONFIG_FIELDS))
def test_each_config_field_is_refused_with_its_name(field):
    kind = CONFIG_FIELDS[field][0]
    for bad in WRONG[kind]:
        if kind == "int" and isinstance(bad, int) and not isinstance(bad, bool) and CONFIG_FIELDS[field][1] <= bad <= CONFIG_FIELDS[field][2]:
            continue
        with pytest.raises(InputError) as e:
            from_hf_config({**LLAMA, field: bad}, "llama")
        assert e.value.field.startswith(f"config.{field}"), (field, bad, str(e.value))


def test_every_bundled_config_passes():
    from llm_codesign.spec.registry import list_models

    assert all(not m.get("error") for m in list_models())


@pytest.mark.parametrize("name,inside,outside", [("bw_eff", 0.85, 0.0), ("bw_eff", 1.0, 1.01), ("bw_eff", 1e-4, 1e-30), ("moe_eff", 1.5, 2.5),
                                                  ("moe_eff_fp8_deepgemm", 1.05, 2.5), ("gemm_bw_eff_w4a16", 0.73, 1.01),
                                                  ("gemm_overhead_bf16_s", 0.0, -1e-9), ("moe_routing_alpha", 1.01, -0.1),
                                                  ("prefill_queue_fraction", 1.0, 1.1)])
def test_calibration_ranges(name, inside, outside):
    lo, hi, lo_open = param_range(name)
    assert (lo < inside if lo_open else lo <= inside) and inside <= hi
    assert not ((lo < outside if lo_open else lo <= outside) and outside <= hi)


def test_results_must_be_finite_and_non_negative():
    check_result({"ttft_ms": 1.0, "signed_median_pe": -3.0, "by": [{"tpot_ms": 2.0}]})
    for bad in ({"ttft_ms": math.nan}, {"x": [{"tpot_ms": -1.0}]}, {"ttft_ms": 1e12}, {"flops": math.inf}):
        with pytest.raises(InputError, match="non-finite result"):
            check_result(bad)


def test_pdl_credit_beyond_a_launch_latency_is_refused():
    from llm_codesign.spec.validation import check_param

    assert check_param("pdl_credit_s", "pdl_credit_s", 0.6e-6) == 0.6e-6
    with pytest.raises(InputError, match=r"pdl_credit_s's physical range"):
        check_param("pdl_credit_s", "pdl_credit_s", 5e-6)
