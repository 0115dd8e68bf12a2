"""MXFP4 on CDNA3 (gfx942: MI300X, MI325X, no FP4 math), as each AMD engine runs it (newc8 #3): SGLang refuses it (its
Quark linears call AITER's gemm_afp4wfp4, which asserts an FP4 GPU; gpt-oss's mxfp4 refuses at load), ATOM refuses a dense
model's (AITER's gemm_a4w4 raises on gfx942) and runs a MoE's experts weight-only (Triton), vLLM emulates a dense model's
linears (Quark's QuarkOCP_MX: dequantise to BF16 each forward, then a BF16 GEMM). MI355X (gfx950) is unchanged."""
import json

import numpy as np
import pytest
from conftest import cli

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, layer_ops
from llm_codesign.errors import InputError
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan, deployment
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

# Llama-3.1-8B, one layer: h 4096, 32 query heads and 8 KV heads of 128, FFN 14336 (SwiGLU)
#   attention: Q 4096 x 4096 + K, V 2 x 4096 x 1024 + O 4096 x 4096 = 16,777,216 + 8,388,608 + 16,777,216 = 41,943,040
#   FFN: gate, up, down 3 x 4096 x 14336 = 176,160,768;  together 218,103,808 weights a layer
# the dequantisation reads each packed (4 bits + an 8-bit E8M0 scale per 32: 0.53125 bytes) and writes it in BF16 (2 bytes):
#   218,103,808 x 2.53125 = 552,075,264 bytes a layer at TP 1, half at TP 2
DEQUANT_BYTES_TP1 = 552_075_264
# each linear's input quantise-dequantised (amd-quark qdq_mxfp4: read and written in BF16, 4 bytes a value), 8 decode tokens:
#   TP 1: QKV 4096 + O 32 x 128 + gate/up 4096 + down 14336 = 26,624 values a token x 4 x 8 = 851,968 bytes
#   TP 2: 4096 + 2048 + 4096 + 7168 = 17,408 x 4 x 8 = 557,056 bytes
QDQ_BYTES = {1: 851_968, 2: 557_056}


def _layer(engine, weight, tp=1, kvp=1):
    m, gpu = get_model("llama-3.1-8b"), get_gpu("mi300x")
    ops = layer_ops(m, m.groups[0][0], 1.0, gpu, calibration_for(gpu), prec=Precision.of(weight), sh=Plan(tp=tp, kvp=kvp),
                    b=Batch(dec_seqs=8, dec_ctx=1500), prefix="layer", engine=engine)
    return {o.name: o for o in ops}


@pytest.mark.parametrize("tp", [1, 2])
def test_vllms_emulated_mxfp4_step_is_the_bf16_step_plus_the_dequantisation(tp):
    vllm = get_engine("vllm")
    emulated, bf16 = _layer(vllm, "mxfp4", tp), _layer(vllm, "bf16", tp)
    dq, qdq = emulated.pop("layer/mxfp4_dequant"), emulated.pop("layer/mxfp4_act_qdq")
    assert float(dq.bytes) == DEQUANT_BYTES_TP1 / tp and float(dq.kernels) == 4.0  # QKV, O, gate/up, down
    assert float(qdq.bytes) == QDQ_BYTES[tp] and float(qdq.kernels) == 4.0 and float(qdq.time) > 0  # leftB: was unpriced
    # every other operator is the BF16 step's: the GEMMs read BF16 weights, dequantised
    assert emulated.keys() == bf16.keys()
    for name, op in emulated.items():
        assert float(op.bytes) == float(bf16[name].bytes) and float(op.time) == float(bf16[name].time), name
    assert {o.weight for o in emulated.values() if o.kind == "gemm"} == {"bf16"}
    # so slower than BF16, and slower still than the weight-only price it had (4-bit weights read by the GEMMs)
    t = {k: sum(float(o.time) for o in v.values()) for k, v in (("emulated", {**emulated, "dq": dq, "qdq": qdq}), ("bf16", bf16),
                                                                  ("weight_only", _layer(None, "mxfp4", tp)))}
    assert t["emulated"] > t["bf16"] > t["weight_only"]


def test_the_output_projections_input_is_sharded_over_tp_and_kvp():
    """frev9 #9: O's input width was heads x v / tp while its weights shard over TP x KVP (spec.kinds._o_bytes_per_gpu).
    TP 1, KVP 2: QKV 4096 + O 32 x 128 / 2 = 2048 + gate/up 4096 + down 14336 / 2 = 7168 = 17,408 values a token,
    x 4 bytes x 8 tokens = 557,056 (TP 2's figure), not 19,456 x 32 = 622,592."""
    qdq = _layer(get_engine("vllm"), "mxfp4", tp=1, kvp=2)["layer/mxfp4_act_qdq"]
    assert float(qdq.bytes) == 557_056 == QDQ_BYTES[2]


def test_mi355x_and_other_engines_price_no_emulation():
    mi355x = get_gpu("mi355x")
    for e in ("vllm", "sglang", "atom"):
        assert get_engine(e).mxfp4_emulation(Precision.of("mxfp4"), mi355x, moe=False) is None
        assert get_engine(e).precision_refusal(Precision.of("mxfp4"), mi355x, moe=False) is None
    mi300x = get_gpu("mi300x")
    assert get_engine("vllm").mxfp4_emulation(Precision.of("mxfp4"), mi300x, moe=True) is None  # gpt-oss: triton_kernels W4A16
    assert get_engine("vllm").mxfp4_emulation(Precision.of("fp8"), mi300x, moe=False) is None
    assert not {"layer/mxfp4_dequant", "layer/mxfp4_act_qdq"} & _layer(get_engine("atom"), "mxfp4").keys()


def test_the_engines_rule_through_the_api():
    with pytest.raises(InputError) as e:
        deployment("llama-3.1-8b", gpu="mi300x", weight_dtype="mxfp4")  # SGLang, AMD's default engine
    assert e.value.field == "weight_dtype" and "SGLang runs on MI300X: it has no MXFP4 GEMM off gfx950" in str(e.value)
    with pytest.raises(InputError, match="for a dense model: its MXFP4 linears call AITER's gemm_a4w4"):
        deployment("llama-3.1-8b", gpu="mi325x", weight_dtype="mxfp4", engine="atom")
    with pytest.raises(InputError, match="gpt-oss's mxfp4 refuses at load"):  # a MoE too, its own checkpoint
        deployment("openai/gpt-oss-120b", gpu="mi300x")
    mi300x, mx = get_gpu("mi300x"), Precision.of("mxfp4")
    said = get_engine("sglang").precision_refusal(mx, mi300x, moe=True)
    assert said[:2] == ("weight_dtype", "mxfp4") and said[2].endswith(
        "--backend atom or vllm runs a MoE's MXFP4 experts weight-only (Triton), or fp8 runs natively")
    assert get_engine("atom").precision_refusal(mx, mi300x, moe=True) is None  # its Triton W4A16 MoE
    assert get_engine("atom").precision_refusal(mx, mi300x, moe=None) is None  # a Deployment alone: the model not known
    assert get_engine("vllm").precision_refusal(mx, mi300x, moe=False) is None  # emulated, not refused
    # what runs it: ATOM's and vLLM's MoE experts weight-only, vLLM's dense linears emulated; MI355X as before
    assert deployment("openai/gpt-oss-120b", gpu="mi300x", engine="atom").backend == "atom"
    assert deployment("openai/gpt-oss-120b", gpu="mi300x", engine="vllm").backend == "vllm"
    assert deployment("llama-3.1-8b", gpu="mi300x", weight_dtype="mxfp4", engine="vllm").backend == "vllm"
    assert deployment("llama-3.1-8b", gpu="mi355x", weight_dtype="mxfp4").backend == "sglang"


def test_the_cli_refuses_in_one_line_and_says_the_emulation():
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "mi300x", "--weight-dtype", "mxfp4", "--concurrency", "8")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("error: weight_dtype: 'mxfp4' is not valid; a format SGLang runs on MI300X") and "fp8 runs natively" in err
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "mi300x", "--weight-dtype", "mxfp4", "--backend", "atom")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--backend vllm runs it emulated" in err
    runs = {}
    for w in ("mxfp4", "bf16"):
        code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", "mi300x", "--weight-dtype", w, "--backend", "vllm",
                           "--concurrency", "8", "--json")
        assert code == 0
        runs[w] = json.loads(out)
    assert runs["mxfp4"]["precision_notes"] == [
        "vLLM has no MXFP4 GEMM on MI300X (gfx942): Quark emulates it, dequantising the 4-bit weights to BF16 each forward "
        "before a BF16 GEMM (priced so: slower than BF16; fp8 runs natively)"]
    assert runs["mxfp4"]["tpot_ms"] > runs["bf16"]["tpot_ms"]
    assert np.isfinite(runs["mxfp4"]["tpot_ms"])


def test_a_dense_models_refusal_is_its_own_in_every_entry_point():
    # frev #7: Deployment's model-blind check (moe=None) no longer pre-empts lc.deployment's: estimate (CLI and web API)
    # and lc.deployment give a dense model the advice roofline gives it (vLLM emulates, ATOM refuses a dense MXFP4), a MoE
    # its own (ATOM or vLLM run its experts weight-only)
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    dense = "--backend vllm runs it emulated (dequantised to BF16 each forward), or fp8 runs natively"
    for cmd in (("estimate", "--concurrency", "16"), ("roofline", "--batch", "16")):
        code, _, err = cli(cmd[0], "llama-3.1-8b", "--gpu", "mi300x", "--backend", "sglang", "--weight-dtype", "mxfp4", *cmd[1:])
        assert code == 2 and err.strip().endswith(dense) and "atom" not in err
    with pytest.raises(InputError, match="--backend vllm runs it emulated"):
        deployment("llama-3.1-8b", gpu="mi300x", weight_dtype="mxfp4", engine="sglang")
    with pytest.raises(InputError, match="--backend atom or vllm runs a MoE's MXFP4 experts weight-only"):
        deployment("qwen3-30b-a3b", gpu="mi300x", weight_dtype="mxfp4", engine="sglang")
    r = TestClient(create_app()).post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "mi300x", "num_gpus": 1, "concurrency": 16,
                                                            "engine": "sglang", "weight_dtype": "mxfp4"})
    assert r.status_code == 422 and dense in json.dumps(r.json())


def test_frontier_points_say_the_emulation_estimate_says():
    # frev #6: every pareto point of a dense MXFP4 model under vLLM on an MI300X carries estimate's emulation note
    # (spec.plan.precision_notes), in --json and beneath the table, and so does the web API's frontier
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    note = ("vLLM has no MXFP4 GEMM on MI300X (gfx942): Quark emulates it, dequantising the 4-bit weights to BF16 each forward "
            "before a BF16 GEMM (priced so: slower than BF16; fp8 runs natively)")
    args = ("llama-3.1-8b", "--gpu", "mi300x", "--gpus", "1", "--backend", "vllm", "--weight-dtype", "mxfp4")
    code, out, _ = cli("pareto", *args, "--json")
    pts = json.loads(out)["frontier"]
    assert code == 0 and len(pts) > 1 and all(p["precision_notes"] == [note] for p in pts)
    code, out, _ = cli("pareto", *args)
    assert code == 0 and f"precision as run: {note}" in " ".join(out.split())
    r = TestClient(create_app()).post("/api/pareto", json={"model": "llama-3.1-8b", "gpus": ["mi300x"], "num_gpus": 1,
                                                          "engine": "vllm", "weight_dtype": "mxfp4"})
    assert r.status_code == 200, r.text
    assert note in json.dumps(r.json())
    # bf16: no note, as estimate's
    code, out, _ = cli("pareto", "llama-3.1-8b", "--gpu", "mi300x", "--gpus", "1", "--backend", "vllm", "--json")
    assert all("precision_notes" not in p for p in json.loads(out)["frontier"])
