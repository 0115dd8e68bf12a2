"""Known GPUs the catalog lacks are refused as such, with the data-sheet figures that differ (newc6 #10: did-you-mean sent
h100-pcie to h100 and rtx6000 to rtx-pro-6000, answers 40-90% too fast); the names nvidia-smi prints for catalog GPUs are
aliases of them."""
from __future__ import annotations

import pytest
from conftest import cli

from llm_codesign.spec.hardware import _alias_table, _norm, _not_in_catalog, catalog, get_gpu


@pytest.mark.parametrize("typed, differs", [
    # H100 PCIe against the catalog's H100 SXM: 2.0 vs 3.35 TB/s, 350 vs 700 W, 114 vs 132 SMs; both 80 GB (not said)
    ("h100-pcie", "H100 PCIe is not in it: it differs from h100, the H100 SXM, in bandwidth 2 vs 3.35 TB/s, TDP 350 vs 700 W, SMs 114 vs 132;"),
    ("H100_NVL", "H100 NVL is not in it: it differs from h100, the H100 SXM, in memory 94 vs 80 GB, bandwidth 3.9 vs 3.35 TB/s, TDP 400 vs 700 W;"),
    ("rtx6000", "RTX 6000 Ada Generation is not in it: it differs from rtx-pro-6000, the RTX PRO 6000 Blackwell Server, in memory 48 vs 96 GB, "
                "bandwidth 0.96 vs 1.792 TB/s, TDP 300 vs 600 W, SMs 142 vs 188;"),
    ("a100-40gb", "it differs from a100, the A100 SXM 80GB, in memory 40 vs 80 GB, bandwidth 1.555 vs 2.039 TB/s;"),
    ("mi250x", "it differs from mi300x, the MI300X, in memory 128 vs 192 GB, bandwidth 3.2 vs 5.3 TB/s, TDP 560 vs 750 W, CUs 220 vs 304;"),
])
def test_a_known_gpu_not_in_the_catalog_is_one_line_naming_what_differs(typed, differs):
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", typed)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in out + err, err
    assert lines[0].startswith(f"error: gpu: '{typed}' is not valid; a GPU in the catalog (")
    assert differs in lines[0] and "did you mean" not in lines[0]
    assert lines[0].endswith("give its path (docs/howto/compare-gpus.md#a-gpu-that-is-not-in-the-catalog)")


@pytest.mark.parametrize("typed, gid", [("NVIDIA H100 80GB HBM3", "h100"), ("H100-SXM5-80GB", "h100"), ("NVIDIA A100-SXM4-80GB", "a100"),
                                        ("NVIDIA H200", "h200"), ("AMD Instinct MI300X", "mi300x")])
def test_the_names_nvidia_smi_prints_are_aliases(typed, gid):
    assert get_gpu(typed).id == gid


def test_no_name_is_both_in_and_out_of_the_catalog():
    known = _not_in_catalog()
    assert not set(known) & set(_alias_table())
    assert all(g["nearest"] in catalog() for g in known.values())
    assert _norm("RTX 6000 Ada Generation") in known  # each entry's own name is one of its names
