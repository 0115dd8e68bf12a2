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


def test_the_catalog_states_each_gpus_int8_rate():
    """Dense INT8 tensor-core OPS from the GPU reference's vendor tables (tools/make_gpu_catalog.py): A100 624 TOPS, H100
    SXM 1,979 (both NVIDIA datasheets), MI300X 2,615 (AMD), B200 4,500 (HGX B200 at 1,000 W: 4,500 dense / 9,000 sparse,
    glennklockwood.com/garden/processors/B200), and Blackwell Ultra's cut to 150 (B300's int8_note)."""
    from llm_codesign.spec.hardware import get_gpu

    want = {"a100": 6.24e14, "h100": 1.9789e15, "mi300x": 2.6149e15, "b200": 4.5e15, "b300": 1.5e14}
    assert {g: get_gpu(g).peak("int8") for g in want} == want


def test_int8_weights_take_one_byte_and_their_embeddings_two():
    """Llama-3.1-8B: 8,029,995,008 parameters, its untied embedding and LM head 128,256 x 4,096 = 525,336,576 each, kept
    BF16 (cost.memory). At INT8 the other 8,029,995,008 - 1,050,673,152 = 6,979,321,856 take a byte each:
    6,979,321,856 + 2 x 1,050,673,152 = 9,080,668,160 B (before: priced as BF16, 16,059,990,016 B)."""
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--weight-dtype", "int8", "--backend", "vllm",
                         "--concurrency", "8", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["precision"] == "W:int8 A:int8 KV:bf16"
    assert d["memory"]["weights_gb"] * 1e9 == pytest.approx(9_080_668_160, rel=1e-9)


def test_an_int8_gemm_runs_at_the_int8_rate():
    """A W8A8 GEMM's compute term is its OPS at the GPU's INT8 peak times the per-tensor FP8 family's efficiency (vLLM's
    cutlass_scaled_mm, one template for both): on an A100, 2 x 8192^3 = 1.0995e12 OPS / (624e12 x 0.72) = 2.447 ms, tiles
    and waves adding ~1%; a BF16 one at 312e12 x 0.858: 4.107 ms, so INT8 takes 0.596 of BF16's time. W8A16 (INT8 weights on
    BF16) runs 16-bit math in the mixed-input (Marlin) family."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.gemm import gemm_kernel, gemm_time
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision, gemm_math

    a100 = get_gpu("a100")
    cal = calibration_for(a100)
    assert cal.gemm_eff("fp8") == 0.72  # default.toml's per-tensor FP8 share
    n = 8192
    _, t_int8, _ = gemm_time(n, n, n, a100, cal, math="int8", a_bytes=1, w_bytes=1)
    _, t_bf16, _ = gemm_time(n, n, n, a100, cal, math="bf16", a_bytes=2, w_bytes=2)
    floor = 2 * n**3 / (624e12 * 0.72)
    assert floor == pytest.approx(2.447e-3, rel=1e-3)
    assert floor <= float(t_int8) <= 1.02 * floor
    assert float(t_int8) / float(t_bf16) == pytest.approx((312e12 * cal.gemm_eff("bf16")) / (624e12 * 0.72), rel=0.01)
    w8a8, w8a16 = Precision.of("int8"), Precision.of("int8", activation="bf16")
    assert gemm_math(w8a8.weight, w8a8.activation, a100) == "int8" and gemm_kernel("int8", "int8") == "fp8"
    assert gemm_math(w8a16.weight, w8a16.activation, a100) == "bf16" and gemm_kernel("bf16", "int8") == "w4a16"


def test_int8_on_hopper_prices_as_fp8_and_on_ampere_beats_bf16():
    """H100's INT8 and FP8 peaks are both 1,979 T and one kernel family prices both: the same answer. An A100 has no FP8
    but INT8 at twice BF16's peak: a prefill-bound TTFT drops."""
    def est(gpu, *dt):
        code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", gpu, "--backend", "vllm", "--concurrency", "8", "--isl", "8192",
                             "--osl", "64", "--json", *dt)
        assert code == 0, err
        d = json.loads(out)
        return d["ttft_ms"], d["tpot_ms"]

    assert est("h100", "--weight-dtype", "int8") == est("h100", "--weight-dtype", "fp8")
    assert est("a100", "--weight-dtype", "int8")[0] < 0.8 * est("a100")[0]


@pytest.mark.parametrize("backend,gpu,refused", [("vllm", "b200", True), ("sglang", "b200", True), ("trtllm", "h100", True),
                                                 ("vllm", "h100", False), ("sglang", "a100", False), ("atom", "mi300x", False)])
def test_engines_without_an_int8_gemm_refuse_w8a8_and_run_w8a16(backend, gpu, refused):
    """vLLM's CUTLASS scaled_mm and sgl-kernel's int8_scaled_mm have no INT8 kernel from SM100; TensorRT-LLM's PyTorch backend
    has no SmoothQuant linear; each runs INT8 weights on BF16 activations (W8A16). ATOM runs W8A8 (AITER gemm_a8w8)."""
    run = ("estimate", "llama-3.1-8b", "--gpu", gpu, "--backend", backend, "--concurrency", "8", "--weight-dtype", "int8")
    code, _, err = cli(*run)
    assert (code == 2) == refused, err
    if refused:
        assert err.startswith("error: activation_dtype: 'int8' is not valid;") and err.count("\n") == 1
        assert "bf16 runs them weight-only (W8A16" in err
        code, _, err = cli(*run, "--activation-dtype", "bf16")
        assert code == 0, err


def test_int8_mixed_with_a_float_format_is_refused_in_one_line():
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--weight-dtype", "int8", "--activation-dtype", "fp8")
    assert code == 2 and err.strip() == ("error: activation_dtype: 'fp8' is not valid; a format int8 weights run with: int8 "
                                         "(W8A8) or bf16 (W8A16)")
