"""Shapes, checkpoints and launch files the engines cannot run are refused, not priced (newc11 #2-#5, branch fixN2):
hidden_size that heads do not divide, a head size no kernel of the engine takes, an INT checkpoint's TP that splits its
quantization groups, a drafter named by its registry name or of another vocabulary, NVIDIA's ModelOpt FP8 checkpoint
for SGLang on ROCm. Each refusal is one line naming field, value and what is valid (exit 2)."""
from __future__ import annotations

import json
import re

import pytest

from llm_codesign.errors import InputError
from llm_codesign.explore.export_engines.base import draft_path, modelopt_fp8_loads, quantized_checkpoint
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.plan import REASONS, Plan, deployment, reason_text, validity
from llm_codesign.spec.registry import get_model
from llm_codesign.spec.validation import check_config
from tests.conftest import cli

H100 = get_gpu("h100")
BAD1 = {"hidden_size": 4095, "num_hidden_layers": 4, "num_attention_heads": 32, "vocab_size": 1000, "intermediate_size": 100}
# Qwen2.5-72B-Instruct-AWQ's shape (newc11's q72awq/config.json)
AWQ72 = {"model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80, "num_attention_heads": 64,
         "num_key_value_heads": 8, "vocab_size": 152064, "max_position_embeddings": 32768, "torch_dtype": "float16",
         "quantization_config": {"bits": 4, "group_size": 128, "quant_method": "awq", "version": "gemm", "zero_point": True}}


def _write(tmp_path, name, cfg):
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(cfg))
    return str(p)


def _one_line_refusal(args, *needles):
    code, out, err = cli(*args)
    text = (out + err).strip()
    assert code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text, text
    for n in needles:
        assert n in text, text
    return text


def test_hidden_size_heads_do_not_divide_is_refused_unless_head_dim_is_given(tmp_path):
    # 4095 / 32 = 127.97: floored to 127 it would be a 4064-wide q_proj on a 4095 residual, which no checkpoint has
    with pytest.raises(InputError) as e:
        check_config(BAD1)
    assert e.value.field == "config.hidden_size" and e.value.value == 4095
    _one_line_refusal(["estimate", _write(tmp_path, "bad1", BAD1), "--gpu", "h100"],
                      "config.hidden_size: 4095 is not valid; a multiple of num_attention_heads (32), or give head_dim")
    # a stated head_dim is priced as stated: 32 heads x 128 = a 4096-wide q_proj
    m = from_hf_config(BAD1 | {"head_dim": 128}, "hd128")
    assert {layer.attn.head_dim for layer, _ in m.groups} == {128}
    check_config({"hidden_size": 4096, "num_attention_heads": 32})  # 4096 / 32 = 128: nothing said


def test_a_head_size_the_engine_has_no_kernel_for_is_refused_naming_the_engines_that_run_it(tmp_path):
    # head_dim 127: not one of TensorRT-LLM's MMHA sizes (lint R4's error); vLLM runs it on Triton, SGLang with a flag
    path = _write(tmp_path, "hd127", BAD1 | {"head_dim": 127})
    _one_line_refusal(["estimate", path, "--gpu", "h100"],
                      "head_dim: 127 is not valid; a head size trtllm runs on H100 SXM", "(lint R4); --backend vllm or sglang run it")
    _one_line_refusal(["pareto", path, "--gpu", "h100", "--gpus", "1"], "head_dim: 127 is not valid")
    _one_line_refusal(["export", path, "--gpu", "h100", "--concurrency", "4", "-o", str(tmp_path / "x.yaml")], "head_dim: 127")
    code, out, _ = cli("estimate", path, "--gpu", "h100", "--backend", "vllm", "--concurrency", "4")
    assert code == 0 and "head_dim 127: vLLM's FlashAttention backend takes multiples of 8 up to 256" in out
    # Gemma 4's 512-wide global heads: TensorRT-LLM has cubins on datacenter Blackwell only (NVIDIA/TensorRT-LLM#17772)
    with pytest.raises(InputError, match="head_dim: 512 is not valid; a head size trtllm runs on H200 SXM"):
        deployment("gemma-4-26b-a4b", gpu="h200", backend="trtllm")
    assert deployment("gemma-4-26b-a4b", gpu="b200", backend="trtllm").engine.name == "trtllm"


def test_an_int_checkpoint_is_refused_at_a_tp_whose_shards_split_its_groups(tmp_path):
    m = from_hf_config(AWQ72, "q72awq")
    # down_proj: 29568 = 231 groups of 128 (231 = 3 x 7 x 11): TP2 gives 14784 = 115.5 groups, TP8 3696 = 28.875;
    # o_proj: 64 x 128 = 8192 = 64 groups, whole at any TP up to 64
    code = [int(validity(m, H100, Plan(tp=t), t)) for t in (1, 2, 4, 8)]
    assert code[0] == -1 and all(REASONS[c] == "quant_groups" for c in code[1:])
    said = reason_text(m, H100, REASONS.index("quant_groups"))
    assert "o_proj 8192 (over tp), down_proj 29568 (over tp*kvp)" in said and "29568 = 231 groups" in said
    assert said.endswith("tp 1 holds whole groups")
    # padded to 29696 = 232 groups = 8 x 29: TP8's 3712 = 29 groups each, as vLLM's check wants
    assert int(validity(from_hf_config(AWQ72 | {"intermediate_size": 29696}, "q72pad"), H100, Plan(tp=8), 8)) == -1
    # the same shape in BF16 has no groups to split
    bf16 = {k: v for k, v in AWQ72.items() if k != "quantization_config"}
    assert int(validity(from_hf_config(bf16, "q72"), H100, Plan(tp=8), 8)) == -1
    path = _write(tmp_path, "q72awq", AWQ72)
    _one_line_refusal(["estimate", path, "--gpu", "h100", "--tp", "8", "--backend", "vllm", "--concurrency", "16"],
                      "deployment: 'TP8 on 8 GPUs' is not valid; each rank's share of", "29568 = 231 groups")
    _one_line_refusal(["export", path, "--gpu", "h100", "--tp", "8", "--backend", "vllm", "--concurrency", "16", "-o",
                       str(tmp_path / "a.yaml")], "quantization group")


def test_a_width_not_whole_in_groups_leaves_no_tp_and_the_tps_listed_divide_the_heads():
    # fixR11 (frev11 #2). down_proj 10304 = 80.5 groups of 128: no TP holds whole groups, TP1 included (gcd(0, 20) was 20,
    # which listed "tp 1, 2, 4, 5, 10, 20")
    mixed = AWQ72 | {"hidden_size": 2560, "intermediate_size": 10304, "num_attention_heads": 32, "num_key_value_heads": 32}
    m = from_hf_config(mixed, "mixed")
    assert REASONS[int(validity(m, H100, Plan(tp=1), 1))] == "quant_groups"
    assert reason_text(m, H100, REASONS.index("quant_groups")).endswith("; no TP holds whole groups")
    # down_proj 10240 = 80 groups, o_proj 2560 = 20: gcd 20, but of its divisors 1, 2, 4, 5, 10, 20 only those of the
    # 32 heads are TPs: gcd(20, 32) = 4 -> tp 1, 2, 4
    m = from_hf_config(mixed | {"intermediate_size": 10240}, "whole")
    assert reason_text(m, H100, REASONS.index("quant_groups")).endswith("; tp 1, 2, 4 hold whole groups")


def test_pareto_leaves_out_the_plans_that_split_groups_and_says_how_many(tmp_path):
    # 8 GPUs, instances of 1, 2, 4 or 8 GPUs as tp x pp x kvp: 1 + 3 + 6 + 10 = 20 ordered splits; 4 of them (tp = kvp = 1,
    # pp = the instance) split no down_proj, so 16 are left out
    code, out, _ = cli("pareto", _write(tmp_path, "q72awq", AWQ72), "--gpu", "h100", "--gpus", "8", "--backend", "vllm", "--json")
    assert code == 0, out
    r = json.loads(out)
    assert any(line.startswith("16 plans left out: each rank's share of") for line in r["not_searched"])
    assert {p["deployment"]["tp"] for p in r["frontier"]} == {1}


def test_a_registry_drafter_is_written_as_its_hub_id_and_another_vocabulary_is_refused(tmp_path):
    assert draft_path("llama-3.1-8b") == "meta-llama/Llama-3.1-8B-Instruct"
    assert draft_path("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B") == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"  # a Hub id as given
    base = ["llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--concurrency", "4", "--spec", "draft", "--draft-len", "4", "--acceptance", "3.0"]
    for engine, key in (("vllm", "model: meta-llama/Llama-3.1-8B-Instruct"),
                        ("sglang", "--speculative-draft-model-path meta-llama/Llama-3.1-8B-Instruct"),
                        ("trtllm", "speculative_model: meta-llama/Llama-3.1-8B-Instruct")):
        out = tmp_path / f"d8.{engine}"
        code, text, err = cli("export", *base, "--draft-model", "llama-3.1-8b", "--backend", engine, "-o", str(out))
        assert code == 0, text + err
        written = next(tmp_path.glob(f"d8.{engine}*")).read_text()
        assert key in written and "model: llama-3.1-8b" not in written and "path llama-3.1-8b" not in written
    # Qwen3's vocabulary 151,936 against Llama 3.1's 128,256 (their config.json vocab_size)
    for cmd in ("estimate", "export"):
        _one_line_refusal([cmd, *base, "--draft-model", "qwen3-0.6b", *(["-o", str(tmp_path / "q.yaml")] if cmd == "export" else [])],
                          "draft_model: 'qwen3-0.6b' is not valid; a drafter with llama-3.1-70b's tokenizer (vocabulary 128,256; "
                          "qwen3-0.6b's 151,936)")


def test_sglang_on_rocm_names_no_modelopt_fp8_checkpoint_and_vllm_does(tmp_path):
    # SGLang 0.5.23's ROCm list has no modelopt_fp8; vLLM 0.33.0's lists modelopt (rocm.py) and rescales to e4m3fnuz
    mi300x, llama = get_gpu("mi300x"), get_model("llama-3.1-70b")
    fp8 = get_model("llama-3.1-70b-fp8").default_precision.weight
    assert not modelopt_fp8_loads("sglang", mi300x) and modelopt_fp8_loads("vllm", mi300x) and modelopt_fp8_loads("sglang", H100)
    assert quantized_checkpoint(llama, fp8, mi300x, "sglang") is None
    assert quantized_checkpoint(llama, fp8, mi300x, "vllm") == quantized_checkpoint(llama, fp8, H100, "sglang") \
        == "nvidia/Llama-3.1-70B-Instruct-FP8"
    args = ["llama-3.1-70b", "--gpu", "mi300x", "--tp", "8", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--concurrency", "32"]
    code, out, err = cli("export", *args, "--backend", "sglang", "-o", str(tmp_path / "s.sh"))
    assert code == 0, out + err
    path = next(tmp_path.glob("s.sh*"))
    text = path.read_text()
    # the file reads back as the deployment priced: the BF16 checkpoint quantized online is W:fp8, the same TPOT
    code, back, err = cli("import", str(path), "--gpu", "mi300x")
    tpot = re.compile(r"TPOT ([0-9.]+) ms")
    assert code == 0 and "W:fp8 A:fp8 KV:fp8" in back and tpot.search(back).group(1) == tpot.search(out).group(1), back + err
    assert "--model-path meta-llama/Llama-3.1-70B-Instruct " in text and "--quantization fp8" in text
    assert "is NVIDIA ModelOpt's, which sglang on ROCm does not load" in text and "nvidia/Llama-3.1-70B-Instruct-FP8 \\" not in text
    code, out, err = cli("export", *args, "--backend", "vllm", "-o", str(tmp_path / "v.yaml"))
    assert code == 0 and "model: nvidia/Llama-3.1-70B-Instruct-FP8" in next(tmp_path.glob("v.yaml*")).read_text()


def test_lint_r4_calls_the_split_groups_an_error_with_a_width_that_holds_them(tmp_path):
    # TP2, 4 and 8 split down_proj's 231 groups; 29696 = 128 x 8 x 29 is the nearest width whole at TP8 (29568 -> 29696)
    code, out, _ = cli("lint", _write(tmp_path, "q72awq", AWQ72), "--gpu", "h100", "--json")
    r4 = [f for f in json.loads(out)["findings"] if f["rule"] == "R4" and f["where"] == "inter"]
    assert len(r4) == 1 and r4[0]["severity"] == "error" and r4[0]["figures"]["tp_refused"] == [2, 4, 8]
    assert r4[0]["fix"].startswith("inter 29568 -> 29696 (whole groups of 128 at TP8)")


def test_lint_r4_widens_only_the_width_that_splits(tmp_path):
    # fixR11 (frev11 #3): 32 heads x head_dim 80 = o_proj 2560 = 20 groups of 128, 2.5 a rank at TP8 (2560 / 1024), while
    # inter 10240 = 80 groups, 10 a rank: the fix names o_proj, not "inter 10240 -> 10240", and proposes no shape
    phi80 = AWQ72 | {"hidden_size": 2560, "intermediate_size": 10240, "num_attention_heads": 32, "num_key_value_heads": 32}
    code, out, _ = cli("lint", _write(tmp_path, "phi80", phi80), "--gpu", "h100", "--json")
    r4 = [f for f in json.loads(out)["findings"] if f["rule"] == "R4" and f["severity"] == "error"]
    assert len(r4) == 1 and r4[0]["where"] == "o_proj" and r4[0]["figures"]["tp_refused"] == [8]
    assert r4[0]["fix"].startswith("o_proj's heads x head_dim 2560 -> a multiple of 1024 (whole groups of 128 at TP8)")
    assert "inter" not in r4[0]["fix"]


def test_a_drafter_and_a_target_take_their_checkpoint_by_one_rule():
    # fixR11 (frev11 #5): draft_path and export's instruct_first share instruct_ids: the first id + "-instruct" where listed
    from llm_codesign.explore.export import instruct_first
    from llm_codesign.explore.export_engines.base import instruct_ids
    from llm_codesign.spec.registry import get_model
    assert instruct_ids(("a/M", "b/x", "a/m-Instruct")) == ("a/m-Instruct", "a/M", "b/x")
    assert instruct_ids(("a/M-Instruct", "a/M")) == ("a/M-Instruct", "a/M") and instruct_ids(("/ckpt/m",)) == ("/ckpt/m",)
    m = get_model("llama-3.1-8b")
    assert draft_path("llama-3.1-8b") == instruct_first(m).hf_ids[0] == "meta-llama/Llama-3.1-8B-Instruct"
    assert draft_path("/ckpt/drafter") == "/ckpt/drafter"
