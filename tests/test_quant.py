"""spec.quant: each quantization_config method maps to the formats the engines' loaders build (newc8 #2).

The samples are minimal real-shaped dicts: the keys each method's checkpoints carry, copied from the sources named
beside them, with the layer lists cut to the entries the reader looks at."""
import pytest

import llm_codesign as lc
from llm_codesign.spec.quant import READ_METHODS, read_quant

# Qwen2.5-14B's shape (Qwen/Qwen2.5-14B config.json): the newcomer's q14, to which each quantization_config is added
Q14 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120, "num_hidden_layers": 48,
       "num_attention_heads": 40, "num_key_value_heads": 8, "intermediate_size": 13824, "vocab_size": 152064,
       "max_position_embeddings": 32768, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}

# compressed-tensors presets as llm-compressor writes them (vllm-project/compressed-tensors
# src/compressed_tensors/quantization/quant_scheme.py PRESET_SCHEMES@0bb1251a), one group targeting Linear
FP8_DYNAMIC = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"], "config_groups": {
    "group_0": {"targets": ["Linear"],  # RedHatAI's *-FP8-dynamic: FP8 per channel, activations per token
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False},
                "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True, "dynamic": True}}}}
FP8_STATIC = {"quant_method": "compressed-tensors", "format": "naive-quantized", "ignore": ["lm_head"],
              "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True},
              "config_groups": {"group_0": {"targets": ["Linear"],  # preset FP8, with an FP8 KV scheme
                                            "weights": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True},
                                            "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}}
NVFP4 = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"], "config_groups": {
    "group_0": {"targets": ["Linear"],  # preset NVFP4: E2M1 in groups of 16 (FP8 scales), weights and activations
                "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True},
                "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                                      "dynamic": "local"}}}}
NVFP4A16 = {**NVFP4, "config_groups": {"group_0": {**NVFP4["config_groups"]["group_0"], "input_activations": None}}}
W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"], "config_groups": {
    "group_0": {"targets": ["Linear"], "input_activations": None,  # preset W4A16: INT4 in groups of 128
                "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}}}}
INT8 = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"],  # preset W8A8 (INT8)
        "weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True}}}}
# AutoAWQ / AutoGPTQ as the Qwen2.5 *-AWQ / *-GPTQ-Int4 releases write them (their config.json's quantization_config)
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm", "modules_to_not_convert": None}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True, "damp_percent": 0.01,
        "true_sequential": True}
GPTQ8 = {**GPTQ, "bits": 8}
# fbgemm_fp8 as Meta's FP8 releases write it (activation_scale_ub, modules_to_not_convert: vLLM fbgemm_fp8.py
# FBGEMMFp8Config.from_config reads both@04843c7c)
FBGEMM = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
          "modules_to_not_convert": ["model.layers.0.self_attn", "lm_head"]}
# AMD Quark: FP8 with the KV cache in FP8 (amd/*-FP8-KV: export.kv_cache_group names the K and V projections),
# the keys vLLM's QuarkConfig.from_config reads (quark.py)
_FP8_T = {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False, "symmetric": True}
QUARK_FP8_KV = {"quant_method": "quark", "exclude": ["lm_head"],
                "export": {"kv_cache_group": ["*k_proj", "*v_proj"], "pack_method": "reorder", "weight_format": "real_quantized"},
                "global_quant_config": {"weight": _FP8_T, "input_tensors": _FP8_T, "output_tensors": None, "bias": None},
                "layer_quant_config": {"*k_proj": {"output_tensors": _FP8_T}, "*v_proj": {"output_tensors": _FP8_T}}}
_MX = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}
QUARK_MXFP4 = {"quant_method": "quark", "exclude": ["lm_head", "model.layers.0.self_attn"],  # amd/*-MXFP4: w_mxfp4_a_mxfp4
               "export": {"kv_cache_group": [], "pack_method": "reorder"},
               "global_quant_config": {"weight": {**_MX, "is_dynamic": False}, "input_tensors": {**_MX, "is_dynamic": True}}}
QUARK_INT4 = {"quant_method": "quark", "export": {"pack_method": "reorder", "kv_cache_group": []},  # per_group 128
              "global_quant_config": {"weight": {"dtype": "int4", "qscheme": "per_group", "group_size": 128, "symmetric": True}}}
# ModelOpt in config.json (quant_method "modelopt", flat, as NVIDIA's newer exports write it; vLLM modelopt.py reads the
# flat form and hf_quant_config.json's nested `quantization` alike)
MODELOPT_FP8 = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}
MODELOPT_NVFP4 = {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                                                                "group_size": 16, "exclude_modules": ["lm_head"]}}


def _label(qc: dict) -> str:
    return lc.get_model({**Q14, "quantization_config": qc}).default_precision.label()


@pytest.mark.parametrize("qc,label", [
    (FP8_DYNAMIC, "W:fp8 A:fp8 KV:bf16"),  # was W:bf16 (newc8 #2)
    (FP8_STATIC, "W:fp8 A:fp8 KV:fp8"),  # kv_cache_scheme float 8 bits
    (NVFP4, "W:nvfp4 A:nvfp4 KV:bf16"),  # was W:int4 attn-W:bf16 A:bf16: priced as W4A16 INT4
    (NVFP4A16, "W:nvfp4 A:bf16 KV:bf16"),  # weight-only NVFP4
    (W4A16, "W:int4 A:bf16 KV:bf16"),  # attention quantized too: nothing in ignore names self_attn
    (AWQ, "W:int4 A:bf16 KV:bf16"), (GPTQ, "W:int4 A:bf16 KV:bf16"),
    (FBGEMM, "W:fp8 attn-W:bf16 A:fp8 KV:bf16"),  # self_attn in modules_to_not_convert: BF16 attention
    (QUARK_FP8_KV, "W:fp8 A:fp8 KV:fp8"), (QUARK_MXFP4, "W:mxfp4 attn-W:bf16 A:mxfp4 KV:bf16"),
    (QUARK_INT4, "W:int4 A:bf16 KV:bf16"),
    # INT8 (leftC; before: BF16 with a note): W8A8 per channel x per token, GPTQ 8 bits and ModelOpt's SmoothQuant / W8A16
    (INT8, "W:int8 A:int8 KV:bf16"), (GPTQ8, "W:int8 A:bf16 KV:bf16"),
    ({"quant_method": "modelopt", "quant_algo": "W8A8_SQ_PER_CHANNEL"}, "W:int8 A:int8 KV:bf16"),
    ({"quant_method": "modelopt", "quant_algo": "W8A16"}, "W:int8 A:bf16 KV:bf16"),
    (MODELOPT_FP8, "W:fp8 A:fp8 KV:fp8"), (MODELOPT_NVFP4, "W:nvfp4 A:nvfp4 KV:fp8"),
    ({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
     "W:fp8_block A:fp8_block KV:bf16"),  # Qwen/Qwen3-*-FP8, DeepSeek-V3: unchanged
])
def test_each_method_reads_as_its_loader_builds_it(qc, label):
    assert _label(qc) == label
    assert lc.get_model({**Q14, "quantization_config": qc}).notes == ()  # read, so nothing to say


@pytest.mark.parametrize("qc,what", [({**GPTQ, "bits": 3}, "gptq 3 bits"), ({**AWQ, "bits": 8}, "awq 8 bits"),
                                     ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "quant_method bitsandbytes"),
                                     ({"quant_method": "modelopt", "quant_algo": "W4A8_NVFP4_FP8"}, "modelopt quant_algo")])
def test_a_format_the_tool_cannot_price_is_said_not_read_as_bf16_silently(qc, what):
    m = lc.get_model({**Q14, "quantization_config": qc})
    assert m.default_precision.label() == "W:bf16 A:bf16 KV:bf16"
    (note,) = m.notes
    assert note.kind == "loader" and what in note and "priced as BF16" in note and "--weight-dtype" in note


def test_the_bytes_follow_the_format():
    # Qwen2.5-14B: 14.77B parameters, 1.56B of them the untied embedding and head (152064 x 5120 x 2), kept BF16.
    # FP8 (1 byte) vs BF16 (2 bytes): the non-embedding weights halve, 13.21B x (2 - 1) B = 13.2 GB less
    from llm_codesign.cost.memory import weight_bytes_per_gpu
    from llm_codesign.spec.plan import Plan

    bf16, fp8, int8, gptq8 = (lc.get_model({**Q14, "quantization_config": qc}) for qc in ({}, FP8_DYNAMIC, INT8, GPTQ8))
    gb = lambda m: float(weight_bytes_per_gpu(m, m.default_precision, Plan(1))) / 1e9  # noqa: E731
    assert gb(bf16) - gb(fp8) == pytest.approx(13.2, abs=0.1)
    # INT8 per channel: 1 byte a weight as FP8's; GPTQ 8 bits in groups of 128: 8 + 16/128 = 8.125 bits, so the 13.21B
    # non-embedding weights take 13.21 x 0.125 / 8 = 0.206 GB more
    assert gb(int8) == gb(fp8)
    assert gb(gptq8) - gb(int8) == pytest.approx(13.21 * 0.125 / 8, abs=0.005)


def test_every_method_read_has_a_reader_and_bad_values_are_said_not_raised():
    assert READ_METHODS == ("fp8", "fbgemm_fp8", "mxfp4", "compressed-tensors", "awq", "gptq", "quark", "modelopt")
    for qc in ({"quant_method": "awq", "bits": "four"}, {"quant_method": "quark", "global_quant_config": []},
               {"quant_method": "compressed-tensors", "config_groups": {}}):
        p, note = read_quant({"quantization_config": qc}, None)
        assert p.label() == "W:bf16 A:bf16 KV:bf16" and "not a format the tool prices" in note


@pytest.mark.parametrize("qc, field", [
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {
        "type": "float", "num_bits": 4, "group_size": [16]}}}}, "config.quantization_config.config_groups.g.weights.group_size"),
    ({"quant_method": "awq", "bits": "4"}, "config.quantization_config.bits"),
])
def test_a_quantization_field_of_the_wrong_type_is_one_line_not_a_traceback(qc, field):
    # review: group_size [16] reached a dict look-up (TypeError: unhashable type) and an AWQ "bits": "4" was priced BF16
    from llm_codesign.errors import InputError

    with pytest.raises(InputError) as e:
        lc.get_model({**Q14, "quantization_config": qc})
    assert e.value.field == field


@pytest.mark.parametrize("qc,bits", [
    (AWQ, 4 + 16 / 128 + 4 / 128),  # 4.15625: a BF16 scale and a 4-bit zero point per 128 (AWQ's qzeros)
    (GPTQ, 4 + 16 / 128),  # 4.125: sym, Marlin reads no zero point
    ({**GPTQ, "sym": False}, 4 + 16 / 128 + 4 / 128),  # asymmetric: its qzeros are read
    ({**AWQ, "group_size": 64}, 4 + 20 / 64),  # 4.3125
    ({**GPTQ, "group_size": -1}, 4.0),  # one scale per output channel over the whole input: 16 / 5120 bits, read as none
    ({**AWQ, "zero_point": False}, 4 + 16 / 128),
    ({k: v for k, v in AWQ.items() if k != "group_size"} | {"q_group_size": 32}, 4 + 20 / 32),  # older AutoAWQ spelling
    (W4A16, 4 + 16 / 128),  # compressed-tensors symmetric groups of 128
])
def test_int4_checkpoints_are_priced_from_their_groups_not_at_4_5_bits(qc, bits):
    # leftB: every weight-only INT4 checkpoint was priced at 4 + 16/32 = 4.5 bits a weight (about 8% high for AWQ g128)
    w = lc.get_model({**Q14, "quantization_config": qc}).default_precision.weight
    assert w.name == "int4" and w.bytes_per_weight() * 8 == pytest.approx(bits, abs=1e-12)


def test_an_awq_checkpoint_weighs_its_groups_and_keeps_them_through_a_record():
    # Qwen2.5-14B's quantized weights: 48 layers x 5120 x (5120 + 1024 + 1024 + 5120 + 3 x 13824) = 13,212,057,600;
    # at 4.5 bits they weighed 13,212,057,600 x (4.5 - 4.15625) / 8 = 567,705,600 bytes more than AWQ's 4.15625
    from llm_codesign.cost.memory import weight_bytes_per_gpu
    from llm_codesign.spec.plan import Deployment, Plan, precision_for
    from llm_codesign.spec.precision import Precision

    m = lc.get_model({**Q14, "quantization_config": AWQ})
    nbytes = lambda p: float(weight_bytes_per_gpu(m, p, Plan(1)))  # noqa: E731
    assert nbytes(Precision.of("int4", activation="bf16")) - nbytes(m.default_precision) == pytest.approx(567_705_600, abs=1)
    # naming the checkpoint's own format keeps its groups; a record (to_dict / from_dict) rebuilds them
    assert precision_for(m, "int4").weight == m.default_precision.weight
    dep = Deployment(gpu=lc.get_gpu("h100"), num_gpus=1, plan=Plan(1), precision=m.default_precision, backend="vllm")
    assert dep.to_dict()["weight_groups"] == {"group_size": 128, "scale_bits": 20}
    assert Deployment.from_dict(dep.to_dict()).precision.weight == m.default_precision.weight
    assert "weight_groups" not in Deployment(gpu=lc.get_gpu("h100"), num_gpus=1, plan=Plan(1),
                                             precision=Precision.of("int4", activation="bf16"), backend="vllm").to_dict()


@pytest.mark.parametrize("gs", [0, "128", -2, True])
def test_an_awq_group_size_that_is_no_group_is_one_line(gs):
    from llm_codesign.errors import InputError

    with pytest.raises(InputError) as e:
        lc.get_model({**Q14, "quantization_config": {**AWQ, "group_size": gs}})
    assert e.value.field == "config.quantization_config.group_size"


@pytest.mark.parametrize("key, field, value", [
    ("sym", "config.quantization_config.sym", "false"),
    ("zero_point", "config.quantization_config.zero_point", "yes"),
    ("symmetric", "config.quantization_config.config_groups.group_0.weights.symmetric", "no"),
])
def test_a_zero_point_key_that_is_no_boolean_is_one_line(key, field, value):
    """frev9 #7: `"sym": "false"` priced as symmetric (no zero point: 4 + 16/128 = 4.125 bits, not 4.156), and AWQ's
    zero_point / compressed-tensors' symmetric the same, without a word: now one line naming the field (the CLI's exit 2)."""
    from llm_codesign.errors import InputError

    if key == "symmetric":
        qc = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "type": "int", "num_bits": 4, "group_size": 128, "symmetric": value}}}}
    else:
        qc = {**AWQ, "quant_method": "gptq" if key == "sym" else "awq", key: value}
    with pytest.raises(InputError) as e:
        lc.get_model({**Q14, "quantization_config": qc})
    assert (e.value.field, str(e.value)) == (field, f"{field}: {value!r} is not valid; true or false")
    lc.get_model({**Q14, "quantization_config": {**qc, key: False} if key != "symmetric" else qc | {"config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"type": "int", "num_bits": 4, "group_size": 128, "symmetric": False}}}}})


def test_one_grouped_int_layout_for_every_width():
    # frev10 #4a: int4_grouped was int_grouped with bits 4, written twice; one function, its bytes a weight:
    # INT4 in groups of 128 with AWQ's 4-bit zero: (4 + (16 + 4) / 128) / 8 = 4.15625 / 8 = 0.51953; GPTQ INT8 symmetric:
    # (8 + 16 / 128) / 8 = 1.015625; group -1 (a channel's scale over the whole input): 4 / 8 = 0.5
    from llm_codesign.spec import precision

    assert not hasattr(precision, "int4_grouped")
    assert precision.int_grouped(4, 128, 4).bytes_per_weight() == pytest.approx(4.15625 / 8, rel=1e-12)
    assert precision.int_grouped(8, 128).bytes_per_weight() == pytest.approx(1.015625, rel=1e-12)
    assert precision.int_grouped(4, -1).bytes_per_weight() == 0.5
