"""AMD's Quark MXFP4 checkpoints of DeepSeek-R1 keep self_attn BF16 (spec.plan.quark_mxfp4;
docs/modelling-notes.md#mxtrue-kv)."""
import numpy as np

from llm_codesign.cost.memory import weight_bytes_per_gpu
from llm_codesign.measure.validate import _precision
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan, precision_for
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def test_a_re_quantised_mxfp4_mla_checkpoint_keeps_its_attention_bf16():
    r1 = get_model("deepseek-ai/DeepSeek-R1-0528")
    assert precision_for(r1, "mxfp4").label() == "W:mxfp4 attn-W:bf16 A:per GPU KV:bf16"
    assert _precision(r1, {"weight_dtype": "mxfp4", "kv_dtype": ""}).attn.name == "bf16"
    # the checkpoint's own FP8 and a GQA model's MXFP4 are as before; gpt-oss's own MXFP4 keeps its BF16 attention
    assert precision_for(r1, "fp8_block").attn.name == "fp8_block"
    assert precision_for(get_model("meta-llama/Llama-3.3-70B-Instruct"), "mxfp4").attn.name == "mxfp4"
    assert precision_for(get_model("openai/gpt-oss-120b"), "mxfp4").label() == "W:mxfp4 attn-W:bf16 A:bf16 KV:bf16"


def test_bf16_attention_weights_of_the_mxfp4_checkpoint_per_gpu():
    # per layer at TP 8: q_a and kv_a replicated (7168 x 1536, 7168 x 576), q_b, kv_b and o split 8 ways
    # (1536 x 128 x 192, 512 x 128 x (128 + 128), 128 x 128 x 7168); 61 layers; BF16's 2 bytes against MXFP4's
    # 4.25 bits (4 bits and an 8-bit scale per 32)
    r1, g, sh = get_model("deepseek-ai/DeepSeek-R1-0528"), get_gpu("mi355x"), Plan(8, 1, 1, 8, 1, 1)
    per_gpu = 7168 * (1536 + 576) + (1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * 7168) / 8
    golden = 61 * per_gpu * (2.0 - 4.25 / 8)
    assert golden == 3_282_233_344
    got = weight_bytes_per_gpu(r1, precision_for(r1, "mxfp4").on(g), sh) - weight_bytes_per_gpu(r1, Precision.of("mxfp4").on(g), sh)
    assert np.isclose(float(got), golden, rtol=1e-12)


def test_the_quark_checkpoint_is_amds_only():
    """AMD's Quark MXFP4 checkpoint runs on CDNA GPUs (InferenceX's MI355X): DeepSeek-R1 at MXFP4 on a B200 is every
    layer MXFP4, as before mxtrue; on an MI355X its attention stays BF16 and the answer says so."""
    import json

    from conftest import cli

    r1 = get_model("deepseek-ai/DeepSeek-R1-0528")
    assert precision_for(r1, "mxfp4", gpu=get_gpu("b200")).attn.name == "mxfp4"
    assert precision_for(r1, "mxfp4", gpu=get_gpu("mi355x")).attn.name == "bf16"
    assert _precision(r1, {"weight_dtype": "mxfp4", "kv_dtype": "", "gpu": "b200"}).attn.name == "mxfp4"
    assert _precision(r1, {"weight_dtype": "mxfp4", "kv_dtype": "", "gpu": "mi355x"}).attn.name == "bf16"
    out = {}
    for gpu, backend in (("b200", "trtllm"), ("mi355x", "sglang")):
        code, text, _ = cli("estimate", "deepseek-r1", "--gpu", gpu, "--gpus", "8", "--weight-dtype", "mxfp4", "--backend", backend,
                            "--concurrency", "16", "--json")
        assert code == 0
        out[gpu] = json.loads(text)
    # its experts on TensorRT-LLM's MXFP8 activations: on B200 the MXFP4 answer is a checkpoint whose quant_method is "mxfp4"
    # (AMD's Quark one, quant_method "quark", which never reaches get_mxfp4_quant_algo, runs on CDNA only: quark_runs_on),
    # and load_hf_quant_config gives such a checkpoint get_mxfp4_quant_algo's W4A8_MXFP4_MXFP8 on SM >= 100 whatever the MoE
    # backend but TRITON (model_config.py@008e0af8; cost.ffns.trtllm_gen_activation). DeepseekV3's AUTO backend resolves to
    # CUTLASS, not TRTLLM-Gen: the format is the source's, the kernel family priced (the Blackwell tables' TRTLLM-Gen) is not
    # (docs/modelling-notes.md#revfix5-mxfp8)
    assert out["b200"]["precision"] == "W:mxfp4 A:bf16 MoE-A:mxfp8 KV:bf16" and out["b200"]["precision_notes"] == []
    assert out["mi355x"]["precision"] == "W:mxfp4 attn-W:bf16 A:mxfp4 KV:bf16"
    assert out["mi355x"]["precision_notes"] == ["attention projections BF16 (AMD Quark MXFP4 checkpoint)"]
