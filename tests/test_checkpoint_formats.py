"""A quantized checkpoint's id is priced, exported and read back at its own format, and a deployment gets one set of
bands whatever the name it is reached by (newc8 #1 and #6)."""
import re

import pytest

import llm_codesign as lc
from llm_codesign.explore.export import export_config, read_export
from llm_codesign.measure.intervals import reasons
from llm_codesign.render.intervals import short, short_range
from llm_codesign.spec.registry import entries, release_of
from tests.conftest import cli

# Hub ids and the format each checkpoint is published in (registry.toml cites each model card / config)
FP8_IDS = {"Qwen/Qwen3-32B-FP8": "fp8_block", "Qwen/Qwen3-30B-A3B-FP8": "fp8_block", "Qwen/Qwen3-235B-A22B-FP8": "fp8_block",
           "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8": "fp8", "zai-org/GLM-5-FP8": "fp8_block"}


@pytest.mark.parametrize("hf_id,fmt", sorted(FP8_IDS.items()))
def test_each_fp8_checkpoint_id_is_priced_at_its_own_format(hf_id, fmt):
    m = lc.get_model(hf_id)
    assert m.default_precision.weight.name == fmt and m.hf_ids[0] == hf_id
    # its own entry, of the BF16 release's shape: the same parameters, the weights' bytes about halved
    base = lc.get_model(release_of(m.name))
    assert base.name != m.name and base.default_precision.weight.name == "bf16" and base.total_params == m.total_params


def test_every_quantized_looking_hub_id_resolves_to_a_quantized_format():
    # an id naming a quantized format (FP8, FP4, NVFP4, INT4, AWQ, GPTQ) never lands on a BF16 entry
    quantized = re.compile(r"(fp8|fp4|nvfp4|int4|awq|gptq)", re.I)
    ids = [h for e in entries() for h in e.get("hf_ids", []) if quantized.search(h.split("/")[-1])]
    assert len(ids) >= 15
    for h in ids:
        assert lc.get_model(h).default_precision.weight.name != "bf16", h


def test_maverick_fp8_fits_the_8xh100_host_it_was_built_for():
    # 400.7B parameters at one byte, 50.1 GB a GPU over 8; its BF16 attention (48 layers x (5120 x 7168 + 5120 x 5120) =
    # 3.0B) and BF16 embedding and head (2 x 202048 x 5120 = 2.07B) add 2 bytes - 1 each: +0.63 GB a GPU -> 50.7 GB
    # (47.2 GiB) of 79.6 GiB; as BF16 it was refused: "needs 95.1 GiB per GPU ... at least 16 GPUs" (newc8 #1)
    m = "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"
    d = lc.estimate(m, lc.deployment(m, gpu="h100", num_gpus=8, tp=8), lc.Workload(concurrency=8)).to_dict()
    assert d["fits"] and d["memory"]["weights_gb"] == pytest.approx(50.7, abs=0.2)


def test_export_keeps_the_checkpoint_id_the_user_gave():
    m = lc.get_model("Qwen/Qwen3-32B-FP8")
    dep = lc.deployment(m, gpu="h100", num_gpus=2, tp=2, backend="vllm")
    out = export_config(m, dep, engine="vllm", concurrency=16)
    assert "model: Qwen/Qwen3-32B-FP8" in out and "Qwen/Qwen3-32B\n" not in out
    assert read_export(out).model.name == "qwen3-32b-fp8"


def test_export_import_round_trip_comes_back_to_the_entry_and_its_bands(tmp_path):
    # the README's plan: llama-3.1-70b at FP8 on 8 x H200; the launch reads nvidia/Llama-3.1-70B-Instruct-FP8 (the
    # registry's llama-3.1-70b-fp8), which import resolved to that entry, "unmeasured", every band x1.12/x1.68 wider
    dep = lc.deployment("llama-3.1-70b", gpu="h200", num_gpus=8, tp=8, weight_dtype="fp8", kv_dtype="fp8")
    est = lc.estimate("llama-3.1-70b", dep, lc.Workload(concurrency=64))
    text = export_config(lc.get_model("llama-3.1-70b"), dep, engine="trtllm", concurrency=64,
                         extra={"isl": 1024, "osl": 1024, "predicted": {}})
    assert "nvidia/Llama-3.1-70B-Instruct-FP8" in text
    (tmp_path / "t70.yaml").write_text(text)
    back = lc.import_config(tmp_path / "t70.yaml", concurrency=64)
    assert back.model.name == "llama-3.1-70b"
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
        a, b = est.to_dict()["intervals"][k], back.to_dict()["intervals"][k]
        assert (a["lo80"], a["hi80"], a["lo95"], a["hi95"]) == pytest.approx((b["lo80"], b["hi80"], b["lo95"], b["hi95"]))


def test_a_release_shares_its_measured_runs_whatever_entry_names_it():
    # llama-3.1-70b-fp8 quantizes llama-3.1-70b's weights: no "no measured run of llama-3.1-70b-fp8" widening
    for name in ("llama-3.1-70b-fp8", "llama-3.1-70b"):
        dep = lc.deployment(name, gpu="h200", num_gpus=8, tp=8, weight_dtype="fp8", kv_dtype="fp8")
        e = lc.estimate(name, dep, lc.Workload(concurrency=64))
        assert not any("no measured run of llama" in str(w) for b in e.to_dict()["intervals"].values() for w in b["widened"])
    assert release_of("llama-3.1-70b-fp8") == release_of("llama-3.1-70b") == "llama-3.1-70b"
    assert release_of("my-own-shape") == "my-own-shape" and callable(reasons)


def test_summaries_withhold_the_band_estimate_withholds():
    # TTFT 80% 177-657 ms (x3.71), 95% 90-1900 ms (x21.1 > 20: "no interval" in estimate's table, that span quoted: frev #4)
    b = {"lo80": 177.0, "hi80": 657.0, "lo95": 90.0, "hi95": 1900.0, "centre": 337.0, "predictable": False, "widened": []}
    assert short({"intervals": {"ttft_ms": b}}, "ttft_ms") == " (no interval: 95% spans x21)"
    ok = {**b, "lo95": 120.0, "hi95": 900.0, "predictable": True}  # x7.5: a band, printed
    assert short({"intervals": {"ttft_ms": ok}}, "ttft_ms") == " (80%: 177-657)" and short_range(ok, "ttft_ms") == "177-657"
    # the rule is the one that sets the band's flag (measure.intervals.predictability): a band without it reads alike
    assert short({"intervals": {"ttft_ms": {k: v for k, v in b.items() if k != "predictable"}}}, "ttft_ms") == " (no interval: 95% spans x21)"


def test_export_and_import_say_no_interval_where_estimate_does(tmp_path):
    # vLLM's 70B FP8 on 8 H200 at 64 requests: TTFT's 95% spans x33 (> x20: "no interval"; x30 before the afternoon folds
    # of 2026-12-07 widened the Hopper family term x1.05/x1.20 -> x1.07/x1.26), TPOT a band
    args = ["llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--backend", "vllm", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
            "--concurrency", "64"]
    _, out, _ = cli("estimate", *args)
    assert "391.8 ms; no interval" in out
    path = tmp_path / "t70.yaml"
    _, out, err = cli("export", *args, "-o", str(path))
    said = " ".join((out + err).split())
    assert "TTFT 392 ms (no interval: 95% spans x33)" in said and "TPOT 13.15 ms (80%: 11.10-16.50)" in said
    _, out, _ = cli("import", str(path), "--concurrency", "64")
    assert out.startswith("llama-3.1-70b on 8x H200") and "TTFT 392 ms (no interval: 95% spans x33)" in " ".join(out.split())


def test_a_requantised_answer_prices_the_attention_of_the_checkpoint_it_launches(tmp_path):
    """newc12 #1, fixN5a, attnproj: deepseek-r1 --weight-dtype nvfp4 quotes and launches nvidia/DeepSeek-R1-NVFP4, whose
    hf_quant_config leaves q_a/q_b/kv_a/kv_b unquantised but not o_proj (data/models/nvidia--DeepSeek-V3.1-NVFP4_
    hf_quant_config.json exclude_modules): each projection priced at its own format (q/kv-W:bf16, o_proj NVFP4) and said;
    the checkpoint's own name the same; Meta's FP8 Maverick leaves the whole self_attn: BF16."""
    import json

    from llm_codesign.explore.accuracy_model import accuracy_of
    from llm_codesign.explore.search import default_precisions
    from llm_codesign.spec.plan import precision_for

    r1, b200 = lc.get_model("deepseek-r1"), lc.get_gpu("b200")
    assert lc.get_model("deepseek-r1-nvfp4").attn_kept_partial == ("kv_a_proj_with_mqa", "kv_b_proj", "q_a_proj", "q_b_proj")
    p = precision_for(r1, "nvfp4", kv="fp8", gpu=b200)
    assert p == lc.get_model("deepseek-r1-nvfp4").default_precision and p.label() == "W:nvfp4 q/kv-W:bf16 A:nvfp4 KV:fp8"
    assert (p.attn.name, p.attn_in.name, p.attn_weight) == ("nvfp4", "bf16", None)
    assert p in default_precisions(r1, b200)
    assert precision_for(lc.get_model("llama-4-maverick"), "fp8").attn.name == "bf16"
    assert precision_for(lc.get_model("llama-3.1-8b"), "nvfp4").attn_weight is None
    common = ("--gpu", "b200", "--tp", "8", "--ep", "8", "--concurrency", "64", "--json")
    a = json.loads(cli("estimate", "deepseek-r1", "--weight-dtype", "nvfp4", "--kv-dtype", "fp8", *common)[1])
    b = json.loads(cli("estimate", "deepseek-r1-nvfp4", *common)[1])
    assert a["precision"] == b["precision"] == "W:nvfp4 q/kv-W:bf16 A:nvfp4 KV:fp8"
    # 15.83 ms with every projection NVFP4 (fixN5a), 15.94 all BF16 (530feb20): the BF16 q/kv GEMMs read 3.5x the
    # weight bytes but take the hidden state unquantised (no NVFP4 quantise kernel before them)
    assert (a["tpot_ms"], a["memory"]) == (b["tpot_ms"], b["memory"]) and a["tpot_ms"] == pytest.approx(15.79, abs=0.005)
    said = "the checkpoint keeps kv_a_proj_with_mqa, kv_b_proj, q_a_proj, q_b_proj BF16, priced so; o_proj in nvfp4"
    assert said in a["precision_notes"] and said in b["precision_notes"]
    assert not any("not priced" in n for n in a["precision_notes"])
    assert a["accuracy"]["source"] == "published" and a["accuracy"]["scores"][0]["checkpoint"] == "nvidia/DeepSeek-R1-NVFP4"
    out = tmp_path / "r1.yaml"
    assert cli("export", "deepseek-r1", "--weight-dtype", "nvfp4", "--kv-dtype", "fp8", *common[:-1], "--out", str(out))[0] == 0
    head = json.loads(out.read_text().splitlines()[0].split(": ", 1)[1])
    assert "attn_weight_dtype" not in head and "trtllm-serve nvidia/DeepSeek-R1-NVFP4" in out.read_text()
    assert "W:nvfp4 q/kv-W:bf16 A:nvfp4 KV:fp8" in " ".join(cli("import", str(out))[1].split())
    # Maverick at FP8 launches Meta's FP8 checkpoint, self_attn BF16: the header records it and import reads it back
    mav = tmp_path / "mav.yaml"
    assert cli("export", "llama-4-maverick", "--weight-dtype", "fp8", "--gpu", "h200", "--tp", "8", "--out", str(mav))[0] == 0
    assert json.loads(mav.read_text().splitlines()[0].split(": ", 1)[1])["attn_weight_dtype"] == "bf16"
    assert "attn-W:bf16" in " ".join(cli("import", str(mav))[1].split())
    # no NVFP4 checkpoint of AMD's MXFP4 release: every projection NVFP4, and the NVIDIA checkpoint's score is not its own
    mx = accuracy_of(lc.get_model("deepseek-r1-mxfp4"), lc.Precision.of("nvfp4", kv="fp8"))
    assert mx["source"] == "proxy" and mx["note"].startswith("the drop is the proxy's, not a published recipe's: "
                                                             "nvidia/DeepSeek-R1-NVFP4's published nvfp4 scores are of its "
                                                             "kv_a_proj_with_mqa, kv_b_proj, q_a_proj, q_b_proj in bf16, priced here in nvfp4")


def test_a_partial_attention_exclusion_is_read_as_partial():
    """spec.quant.attn_excluded (fixN5a): a name ending at self_attn, a wildcard after it or o_proj is the whole attention
    (Maverick FP8, Quark, gpt-oss, Kimi-K2.5's regex); q/kv projections without o_proj a part (nvidia's R1 NVFP4)."""
    from llm_codesign.spec.quant import attn_excluded

    for whole in (["language_model.model.layers.*.self_attn"], ["*self_attn*"], ["re:.*self_attn.*"],
                  ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj"]):
        assert attn_excluded(whole) == (True, ()), whole
    assert attn_excluded(["lm_head", "model.layers.0.self_attn.kv_b_proj", "model.layers.1.self_attn.q_a_proj",
                          "model.layers.61*"]) == (False, ("kv_b_proj", "q_a_proj"))
    assert attn_excluded(["lm_head", "*mlp.gate.*"]) == (False, ())
    # a part is priced BF16 where it is every input projection of one layout (spec.quant.input_projs_kept), else said
    from llm_codesign.spec.quant import input_projs_kept

    assert input_projs_kept(("kv_a_proj_with_mqa", "kv_b_proj", "q_a_proj", "q_b_proj"))
    assert input_projs_kept(("k_proj", "q_proj", "v_proj")) and input_projs_kept(("qkv_proj",))
    assert not input_projs_kept(("kv_b_proj", "q_a_proj")) and not input_projs_kept(("k_proj", "v_proj")) and not input_projs_kept(())


def test_each_attention_projection_holds_its_own_format_a_gpu():
    """attnproj: nvidia/DeepSeek-R1-NVFP4 at TP8, one MLA layer a GPU. The down-projections are replicated on every TP rank
    (spec.kinds MLA.weight_bytes_per_gpu), the up-projections and o_proj split by 8; q/kv BF16 (2 B), o_proj NVFP4 (4 bits
    + an FP8 scale per 16: 0.5625 B):
    q_a 7168 x 1536 x 2 = 22,020,096; kv_a 7168 x 576 x 2 = 8,257,536; q_b 1536 x 128 x 192 / 8 x 2 = 9,437,184;
    kv_b 512 x 128 x 256 / 8 x 2 = 4,194,304; o 128 x 128 x 7168 / 8 x 0.5625 = 8,257,536: 52,166,656 B a layer,
    x 61 = 3.18 GB a GPU (every projection NVFP4: 20,606,976 a layer; the difference, 61 x 21,954,560 x 1.4375 =
    1.93 GB, is what fixN5a's note said unpriced, as 0.76 GB: it split q_a and kv_a by TP too)."""
    from dataclasses import replace

    from llm_codesign.cost.memory import mixer_weight_bytes, weight_bytes_per_gpu
    from llm_codesign.spec.plan import Plan

    m = lc.get_model("deepseek-r1-nvfp4")
    mla = m.groups[0][0].attn
    p = m.default_precision
    layer = mixer_weight_bytes(mla, m.hidden, p, 8.0, 1.0)
    assert layer == 22_020_096 + 8_257_536 + 9_437_184 + 4_194_304 + 8_257_536 == 52_166_656
    assert mla.o_bytes_per_gpu(m.hidden, 0.5625, 8.0, 1.0) == 8_257_536
    flat = replace(p, attn_in_weight=None)
    assert mixer_weight_bytes(mla, m.hidden, flat, 8.0, 1.0) == (21_954_560 + 14_680_064) * 0.5625 == 20_606_976
    diff = weight_bytes_per_gpu(m, p, Plan(tp=8, ep=8)) - weight_bytes_per_gpu(m, flat, Plan(tp=8, ep=8))
    assert float(diff) == pytest.approx(61 * 21_954_560 * 1.4375) and round(float(diff) / 1e9, 2) == 1.93
    # a precision that leaves the part at the linear format says those same bytes unpriced (q_a and kv_a whole a GPU)
    from llm_codesign.spec.plan import partial_attn_note

    d = lc.deployment("deepseek-r1-nvfp4", gpu="b200", tp=8, ep=8)
    assert partial_attn_note(m, replace(d, precision=flat)) == (
        "the checkpoint keeps kv_a_proj_with_mqa, kv_b_proj, q_a_proj, q_b_proj BF16, priced here in nvfp4: "
        "1.93 GB of weights a GPU not priced (at TP8)",)


def test_a_bf16_q_kv_projection_prices_its_own_roofline():
    """attnproj: one decode step of 64 tokens on B200 (8 TB/s; 2.25 PFLOP/s BF16, 9 NVFP4), TP8, TensorRT-LLM's fused
    q_a + kv_a GEMM (N 1536 + 576 = 2112, K 7168; 1,937,768,448 FLOPs). BF16 (the checkpoint's): A 64 x 7168 x 2 + C 64 x
    2112 x 2 + W 2112 x 7168 x 2 = 31,465,472 B, 3.93 us memory-bound (0.86 us of math). At NVFP4 (the linear format
    fixN5a priced it at): A 0.5625 B a value, W 0.5625 = 9,043,968 B, 1.13 us. q_b (N 128 / 8 x 192 = 3072, K 1536):
    10,027,008 B, 1.25 us BF16; 3,102,720 B, 0.39 us NVFP4. o_proj stays NVFP4 either way."""
    from dataclasses import replace

    import numpy as np

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops
    from llm_codesign.spec.engines import ENGINES
    from llm_codesign.spec.plan import Plan

    m, gpu = lc.get_model("deepseek-r1-nvfp4"), lc.get_gpu("b200")
    p = m.default_precision
    layer = m.groups[0][0]

    def ops(prec):
        got = layer_ops(m, layer, 1.0, gpu, calibration_for(gpu), prec=prec, sh=Plan(tp=8), b=Batch(dec_seqs=64.0, dec_ctx=1024.0),
                        prefix="layer", parts=("attn",), engine=ENGINES["trtllm"])
        return {o.role: o for o in got}

    bf, fp = ops(p), ops(replace(p, attn_in_weight=None))
    roof = {"bf16": 2.25e15, "fp4": 9e15}
    for o, flops, nbytes, t in ((bf["qkv_a"], 1_937_768_448, 31_465_472, 3.933e-6), (fp["qkv_a"], 1_937_768_448, 9_043_968, 1.130e-6),
                                (bf["q_b"], 603_979_776, 10_027_008, 1.253e-6), (fp["q_b"], 603_979_776, 3_102_720, 0.388e-6)):
        assert (float(o.flops), float(o.bytes)) == (flops, nbytes)
        assert max(flops / roof[o.math], nbytes / 8e12) == pytest.approx(t, rel=1e-3)
    assert (bf["qkv_a"].math, fp["qkv_a"].math, bf["o"].weight, fp["o"].weight) == ("bf16", "fp4", "nvfp4", "nvfp4")
    assert float(bf["o"].time) == float(fp["o"].time)
    # priced (the fitted GEMM efficiencies and fixed costs): each above its roofline; at 64 rows the NVFP4 GEMM's input
    # quantise and its kernel's fixed cost outweigh the 22 MB of weights BF16 adds, 10.32 us against BF16's 8.71
    assert np.all(bf["qkv_a"].time > 3.933e-6) and np.all(fp["qkv_a"].time > 1.130e-6)
    assert (float(bf["qkv_a"].time), float(fp["qkv_a"].time)) == (pytest.approx(8.71e-6, rel=0.01), pytest.approx(10.32e-6, rel=0.01))
