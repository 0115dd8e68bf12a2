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
    assert "TTFT 392 ms (no interval: 95% spans x33)" in said and "TPOT 13.15 ms (80%: 11.04-16.30)" in said
    _, out, _ = cli("import", str(path), "--concurrency", "64")
    assert out.startswith("llama-3.1-70b on 8x H200") and "TTFT 392 ms (no interval: 95% spans x33)" in " ".join(out.split())


def test_a_requantised_answer_prices_the_attention_of_the_checkpoint_it_launches(tmp_path):
    """newc12 #1, fixN5a: deepseek-r1 --weight-dtype nvfp4 quotes and launches nvidia/DeepSeek-R1-NVFP4, whose
    hf_quant_config leaves q_a/q_b/kv_a/kv_b unquantised but not o_proj (data/models/nvidia--DeepSeek-V3.1-NVFP4_
    hf_quant_config.json exclude_modules): a partial exclusion, priced at NVFP4 (one attention format a layer) and said,
    0.76 GB a GPU unpriced at TP8 = 61 layers x (7168*1536 + 1536*128*192 + 7168*576 + 512*128*256 = 69,664,768)
    x (2 - 0.5625) B / 8; the checkpoint's own name the same; Meta's FP8 Maverick leaves the whole self_attn: BF16."""
    import json

    from llm_codesign.explore.accuracy_model import accuracy_of
    from llm_codesign.explore.search import default_precisions
    from llm_codesign.spec.plan import precision_for

    r1, b200 = lc.get_model("deepseek-r1"), lc.get_gpu("b200")
    assert lc.get_model("deepseek-r1-nvfp4").attn_kept_partial == ("kv_a_proj_with_mqa", "kv_b_proj", "q_a_proj", "q_b_proj")
    p = precision_for(r1, "nvfp4", kv="fp8", gpu=b200)
    assert p == lc.get_model("deepseek-r1-nvfp4").default_precision and p.label() == "W:nvfp4 A:nvfp4 KV:fp8"
    assert p in default_precisions(r1, b200)
    assert precision_for(lc.get_model("llama-4-maverick"), "fp8").attn.name == "bf16"
    assert precision_for(lc.get_model("llama-3.1-8b"), "nvfp4").attn_weight is None
    common = ("--gpu", "b200", "--tp", "8", "--ep", "8", "--concurrency", "64", "--json")
    a = json.loads(cli("estimate", "deepseek-r1", "--weight-dtype", "nvfp4", "--kv-dtype", "fp8", *common)[1])
    b = json.loads(cli("estimate", "deepseek-r1-nvfp4", *common)[1])
    assert a["precision"] == b["precision"] == "W:nvfp4 A:nvfp4 KV:fp8"
    assert (a["tpot_ms"], a["memory"]) == (b["tpot_ms"], b["memory"]) and a["tpot_ms"] == pytest.approx(15.83, abs=0.005)
    said = ("the checkpoint keeps kv_a_proj_with_mqa, kv_b_proj, q_a_proj, q_b_proj BF16, priced here in nvfp4: "
            f"{61 * 69_664_768 * (2 - 0.5625) / 8 / 1e9:.2f} GB of weights a GPU not priced (at TP8)")
    assert said == "the checkpoint keeps kv_a_proj_with_mqa, kv_b_proj, q_a_proj, q_b_proj BF16, priced here in nvfp4: " \
                   "0.76 GB of weights a GPU not priced (at TP8)"
    assert said in a["precision_notes"] and said in b["precision_notes"]
    assert a["accuracy"]["source"] == "published" and a["accuracy"]["scores"][0]["checkpoint"] == "nvidia/DeepSeek-R1-NVFP4"
    out = tmp_path / "r1.yaml"
    assert cli("export", "deepseek-r1", "--weight-dtype", "nvfp4", "--kv-dtype", "fp8", *common[:-1], "--out", str(out))[0] == 0
    head = json.loads(out.read_text().splitlines()[0].split(": ", 1)[1])
    assert "attn_weight_dtype" not in head and "trtllm-serve nvidia/DeepSeek-R1-NVFP4" in out.read_text()
    assert "W:nvfp4 A:nvfp4 KV:fp8" in " ".join(cli("import", str(out))[1].split())
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
