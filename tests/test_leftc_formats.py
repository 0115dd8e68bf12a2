"""leftC: INT8 weights as a format (W8A8 at the INT8 tensor-core rate, W8A16 dequantised), export's MXFP4 DeepSeek-R1
checkpoint only where AMD's Quark MXFP4 runs, and SGLang's disaggregated prefill pool with PP and MTP
(docs/modelling-notes.md#leftC-int8-export)."""
import json

import pytest
from conftest import cli

from llm_codesign.errors import InputError
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.plan import spec_decoding

DSR1_H200 = ("disagg", "deepseek-r1", "--gpu", "h200", "--backend", "sglang", "--concurrency", "8", "--json")


def test_sglang_prefill_node_takes_pp_with_mtp_not_eagle3():
    """SGLang 0.5.23's check_pipeline_parallel_compat asserts disaggregation_mode == "prefill" for PP with EAGLE (MTP's
    NEXTN is promoted to EAGLE), and refuses EAGLE3 / STANDALONE under PP on any server."""
    sgl, mtp = get_engine("sglang"), spec_decoding("mtp", draft_len=1, acceptance=1.8)
    assert sgl.prefill_spec(2, mtp) is None  # the prefill pool runs PP2 with MTP, no draft priced
    assert sgl.prefill_spec(1, mtp) is mtp  # PP1: as before, its own launch
    assert get_engine("vllm").prefill_spec(2, mtp) is mtp  # vLLM refuses no PP with speculation
    with pytest.raises(InputError) as e:
        sgl.prefill_spec(2, spec_decoding("eagle3", draft_len=3, acceptance=2.5))
    assert "its prefill nodes take mtp under PP" in str(e.value)


def test_disagg_prices_a_pp_prefill_pool_with_mtp_and_refuses_a_pp_decode_pool():
    """Before: PP2 prefill + MTP decode was refused as a whole (the prefill Deployment carried the decode pool's draft).
    The prefill pool prices no draft, so its own figures equal those of the same pools without speculation."""
    code, out, err = cli(*DSR1_H200, "--prefill", "tp=8,pp=2", "--decode", "tp=8", "--spec", "mtp")
    assert code == 0, err
    with_mtp = json.loads(out)
    code, out, err = cli(*DSR1_H200, "--prefill", "tp=8,pp=2", "--decode", "tp=8")
    assert code == 0, err
    plain = json.loads(out)
    assert with_mtp["prefill"] == plain["prefill"]  # its plan, capacity (req/s) and step alike
    assert any("prefill-only servers alone" in n for n in with_mtp["notes"])
    code, _, err = cli(*DSR1_H200, "--prefill", "tp=8", "--decode", "tp=8,pp=2", "--spec", "mtp")
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert "pp: 2 is not valid; 1 with speculative decoding on SGLang" in err


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_export_names_amd_mxfp4_checkpoint_on_cdna_only(tmp_path, backend):
    """AMD's Quark MXFP4 DeepSeek-R1 runs its W4A4 kernels on CDNA4 alone (spec.plan.quark_runs_on): on an MI355X export loads
    it; on a B200 (before: the same AMD checkpoint) it keeps deepseek-ai/DeepSeek-R1 with a header saying to point at an MXFP4
    checkpoint, and writes no --quantization mxfp4 (gpt-oss's loader, which fails on the FP8 checkpoint at start)."""
    on = {}
    for gpu in ("mi355x", "b200"):
        f = tmp_path / f"{gpu}.{backend}"
        code, _, err = cli("export", "deepseek-r1", "--gpu", gpu, "--gpus", "8", "--tp", "8", "--weight-dtype", "mxfp4",
                           "--concurrency", "64", "--backend", backend, "-o", str(f))
        assert code == 0, err
        on[gpu] = f.read_text()
    assert "amd/DeepSeek-R1-0528-MXFP4-Preview (the registry's mxfp4 checkpoint of this shape)" in on["mi355x"]
    nv = on["b200"]
    assert "model: amd/" not in nv and "--model-path amd/" not in nv
    assert "quantization: mxfp4" not in nv and "--quantization mxfp4" not in nv
    assert ("deepseek-ai/DeepSeek-R1\n" in nv or "deepseek-ai/DeepSeek-R1 \\\n" in nv)
    assert "is AMD Quark's, whose MXFP4 kernels run on CDNA GPUs only (B200 loads it emulated in vLLM" in nv
    code, out, err = cli("import", str(tmp_path / f"b200.{backend}"))  # read back at the header's formats
    assert code == 0, err
    assert "W:mxfp4 A:bf16 KV:bf16" in " ".join(out.split())
