"""A GPU .toml may name a catalog GPU as its `base` and change the API's what-if keys (newc11 #14): the same GPU, the same
checks and the same one-line errors as the API's what_if (spec.hardware.what_if, one code path for both)."""
from __future__ import annotations

import pytest
from conftest import cli

from llm_codesign.measure.intervals import what_if_gpu
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.web.app import WhatIfGpu, _what_if


def _file(tmp_path, text: str) -> str:
    p = tmp_path / "mine.toml"
    p.write_text(text)
    return str(p)


def test_a_file_with_a_base_is_the_apis_what_if_gpu(tmp_path):
    g = get_gpu(_file(tmp_path, 'base = "h100"\nid = "h100x"\nhbm_tb_s = 6\nmemory_gb = 100\n'))
    api = _what_if(WhatIfGpu(base="h100", id="h100x", hbm_tb_s=6, memory_gb=100))
    assert g.figures() == api.figures() and g.base_id == "h100"
    h100 = get_gpu("h100")
    # 6 TB/s = 6e12 B/s; memory 100 GB driver-reported, headline 80 GB x 100 / 85.52 (h100's driver/data-sheet ratio)
    assert g.hbm_bandwidth_bytes_per_s == 6e12 and g.memory_bytes == 100e9
    assert g.hbm_bytes == pytest.approx(80e9 * 100e9 / h100.memory_bytes, rel=1e-12)
    assert g.peak("bf16") == h100.peak("bf16") and g.sms == h100.sms and g.tdp_w == h100.tdp_w  # the rest is the base's
    # the interval's what-if reason names the base as the API's does: 6 / 3.35 = 1.79x its bandwidth
    assert what_if_gpu(g) == "a GPU no run measured (h100x): what-if figures from its TOML, x1.79 the bandwidth of its base, the H100 SXM"
    assert what_if_gpu(api) == "a GPU no run measured (h100x): figures from the what-if form, x1.79 the bandwidth of its base, the H100 SXM"


def test_a_file_with_a_base_changing_nothing_is_priced_as_its_base(tmp_path):
    g = get_gpu(_file(tmp_path, 'base = "h200"\nid = "my-h200"\n'))
    assert g.figures() == get_gpu("h200").figures() and what_if_gpu(g) == ""


@pytest.mark.parametrize("text, line", [
    ('base = "h100"\nid = "x"\nhbm_tb_s = 0\n', "error: gpu.hbm_tb_s: 0 is not valid; a number from 0.001 to 1000 TB/s"),
    ('base = "h100"\nid = "x"\nhbm_bw = 6\n', "error: gpu: 'hbm_bw' is not valid; did you mean hbm_tb_s? a key a GPU file with a base takes"),
    ('base = "h100"\nhbm_tb_s = 6\n', "error: gpu.id: missing; "),
    ('base = "h100-pcie"\nid = "x"\n', "error: gpu.base: 'h100-pcie' is not valid; a GPU in the catalog (H100 PCIe is not in it"),
    ('base = "mine.toml"\nid = "x"\n', "error: gpu.base: 'mine.toml' is not valid; a catalog GPU id, one of: "),
    ('base = "h100"\nid = "x"\nmemory_gb = "80"\n', "error: gpu.memory_gb: '80' is not valid; a number from 1.069 to"),
    ('base = "h100"\nid = "h100"\n', "error: gpu.id: 'h100' is not valid; a name no bundled GPU has"),
    ('base = "h100"\nid = "x"\nscale_up_domain = 2.5\n', "error: gpu.scale_up_domain: 2.5 is not valid; a whole number of GPUs"),
])
def test_a_bad_file_with_a_base_is_one_line_exit_2(tmp_path, text, line):
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", _file(tmp_path, text), "--tp", "1")
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in out + err, err
    assert lines[0].startswith(line), lines[0]


def test_the_api_and_the_file_refuse_a_figure_alike(tmp_path):
    from llm_codesign.errors import InputError

    with pytest.raises(InputError) as api:
        _what_if(WhatIfGpu(base="h100", id="x", hbm_tb_s=5000))
    with pytest.raises(InputError) as file:
        get_gpu(_file(tmp_path, 'base = "h100"\nid = "x"\nhbm_tb_s = 5000\n'))
    assert (api.value.field, file.value.field) == ("what_if.hbm_tb_s", "gpu.hbm_tb_s") and api.value.valid == file.value.valid
