"""export's launch options on every path (branch leftE): --cuda-graph-max-bs, --max-batch and --chunked-prefill with the SLO
search and with Dynamo's pools, each file re-imported at the figures it was priced at; vLLM with chunked prefill off written
and read back; NVFP4 on AMD per engine (vLLM emulates it, ATOM has no path)."""
from __future__ import annotations

import json

import pytest
from conftest import cli

KEYS = ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")


def _json(*args) -> dict:
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def _back(path, *more) -> dict:
    r = _json("import", str(path), *more)
    return {k: r[k] for k in KEYS}


def test_the_slo_search_prices_and_writes_the_launch_options(tmp_path):
    # SGLang on one H200, the default SLO (20 tok/s/user, TTFT <= 2 s): graphs off, a cap of 48 a rank, chunking off. The
    # search prices every point so and keeps batches <= 48; the one chosen is the cap itself, and the file writes all three
    opts = ["--cuda-graph-max-bs", "0", "--max-batch", "48", "--no-chunked-prefill"]
    e = _json("export", "llama-3.1-8b", "--gpu", "h200", "--gpus", "1", "--backend", "sglang", *opts, "-o", str(tmp_path / "s.sh"))
    text = (tmp_path / "s.sh").read_text()
    assert "--disable-decode-cuda-graph" in text and "--max-running-requests 48" in text and "--chunked-prefill-size -1" in text
    d = e["deployment"]
    assert (d["cuda_graph_max_bs"], d["max_batch"], d["chunked_prefill"], e["concurrency"]) == (0, 48, False, 48)
    # tok/s/GPU = C / (TTFT + (OSL - 1) x TPOT) x OSL = 48 x 1024 / (TTFT + 1023 x TPOT): the answer's own figures agree
    p = e["predicted"]
    assert 48 * 1024 / (p["ttft_ms"] / 1e3 + 1023 * p["tpot_ms"] / 1e3) == pytest.approx(p["output_tok_s_per_gpu"], rel=1e-6)
    assert _back(tmp_path / "s.sh") == pytest.approx(p, rel=1e-9)
    # the same flags at --concurrency 48 (estimate's path) price the same deployment
    f = _json("export", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--backend", "sglang", "--concurrency", "48", *opts, "-o", str(tmp_path / "f.sh"))
    assert f["predicted"] == pytest.approx(p, rel=1e-9)


def test_the_slo_search_under_a_cap_writes_it_and_imports_at_its_point(tmp_path):
    # TensorRT-LLM, 70B FP8 on 4 H200s at >= 40 tok/s/user with graphs up to 16 and a cap of 64: the point chosen runs 15
    # requests on TP1 x4, its file states max_batch_size 64 and the capture 16; import prices it again at the header's 15
    # requests (a stated cap's export: its header's load, the cap itself as the load priced 64 requests, TPOT 32.54 ms)
    e = _json("export", "llama-3.1-70b", "--gpu", "h200", "--gpus", "4", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--min-tps-user", "40",
              "--cuda-graph-max-bs", "16", "--max-batch", "64", "-o", str(tmp_path / "t.yaml"))
    text = (tmp_path / "t.yaml").read_text()
    assert "max_batch_size: 64" in text and "  max_batch_size: 16" in text  # the cap, then cuda_graph_config's
    assert e["concurrency"] <= 64 and e["predicted"]["tok_s_per_user"] >= 40
    assert e["concurrency"] == 15 and round(e["predicted"]["tpot_ms"], 2) == 22.90
    assert _back(tmp_path / "t.yaml") == pytest.approx(e["predicted"], rel=1e-9)
    assert _json("import", str(tmp_path / "t.yaml"))["concurrency"] == 15
    assert round(_json("import", str(tmp_path / "t.yaml"), "--concurrency", "64")["tpot_ms"], 2) == 32.54


@pytest.mark.parametrize("engine, name", [("trtllm", "d.yaml"), ("sglang", "d.yaml"), ("vllm", "d.yaml")])
def test_dynamo_writes_the_decode_capture_cap_and_both_pools_chunking(tmp_path, engine, name):
    args = ["llama-3.1-70b", "--gpu", "h200", "--backend", engine, "--prefill", "tp=4", "--decode", "tp=4", "--concurrency", "96",
            "--isl", "4000", "--osl", "256", "--weight-dtype", "fp8", "--kv-dtype", "fp8"]
    opts = ["--decode-cuda-graph-max-bs", "16", "--decode-max-batch", "64"]
    e = _json("export", *args, "--cuda-graph-max-bs", "16", "--max-batch", "64", "--no-chunked-prefill", "-o", str(tmp_path / name))
    assert _back(tmp_path / name) == pytest.approx(e["predicted"], rel=1e-9)
    assert e["decode"]["max_batch"] == 64 and e["decode"]["cuda_graph_max_bs"] == 16 and e["prefill"]["chunked_prefill"] is False
    # disagg at the same decode capture and cap (chunking on, which disagg does not switch): the same decode step; the
    # 4,000-token prompts within the 8,192 budget are one chunk, so TTFT moves only where the step mixes (vLLM's)
    d = _json("disagg", *args, *opts)["rows"][0]
    assert e["predicted"]["tpot_ms"] == pytest.approx(d["tpot_ms"], rel=1e-9)


def test_vllm_with_chunking_off_is_written_read_back_and_priced_whole(tmp_path):
    # V1 honours --no-enable-chunked-prefill (scheduler.py:1335-1344@0.33.0): prompts whole, the context capped at the
    # step budget (8,192 on H200) as SchedulerConfig.verify_max_model_len requires, and written for the workload's 4,256
    # tokens rounded up to a multiple of 1,024 (fixB13: explore.export_engines.vllm.model_len)
    args = ["llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--isl", "4000", "--osl", "256", "--concurrency", "8", "--backend", "vllm"]
    e = _json("export", *args, "--no-chunked-prefill", "-o", str(tmp_path / "v.yaml"))
    text = (tmp_path / "v.yaml").read_text()
    assert "enable-chunked-prefill: false" in text and "max-model-len: 5120" in text and "max-num-batched-tokens: 8192" in text
    est = _json("estimate", *args, "--no-chunked-prefill")
    assert e["predicted"] == pytest.approx({k: est[k] for k in KEYS}, rel=1e-9)
    back = _json("import", str(tmp_path / "v.yaml"))
    assert {k: back[k] for k in KEYS} == pytest.approx(e["predicted"], rel=1e-9) and back["ignored"] == []
    on = _json("estimate", *args)
    assert round(e["predicted"]["ttft_ms"], 1) == 210.2 and round(on["ttft_ms"], 1) == 213.7  # whole vs chunked: not the same
    # a real vLLM command line with chunking off is priced so too (it was listed as ignored and priced chunked)
    back = _json("import", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 8 --no-enable-chunked-prefill "
                           "--max-num-batched-tokens 8192 --max-model-len 8192", "--gpu", "h200", "--isl", "4000", "--osl", "256")
    assert back["ignored"] == [] and back["deployment"]["chunked_prefill"] is False
    # with no --max-num-batched-tokens vLLM raises the budget to max(max_model_len, its default) (arg_utils.py:3194-3198
    # @0.33.0): --max-model-len 32768 runs a 32,768-token budget, priced as estimate --max-num-tokens 32768 prices it; without
    # it the model's context, 131,072 (Llama-3.1's)
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 8 --no-enable-chunked-prefill"
    long = ["--gpu", "h200", "--isl", "20000", "--osl", "256"]
    back = _json("import", line + " --max-model-len 32768", *long)
    est = _json("estimate", "llama-3.1-8b", "--tp", "1", "--backend", "vllm", "--concurrency", "8", "--no-chunked-prefill",
                "--max-num-tokens", "32768", *long)
    assert back["deployment"]["max_num_tokens"] == 32768 and {k: back[k] for k in KEYS} == pytest.approx({k: est[k] for k in KEYS}, rel=1e-9)
    assert _json("import", line, *long)["deployment"]["max_num_tokens"] == 131072


@pytest.mark.parametrize("gpu", ["mi300x", "mi355x"])
def test_atom_has_no_nvfp4_path(gpu):
    code, out, err = cli("estimate", "qwen3-30b-a3b", "--gpu", gpu, "--backend", "atom", "--weight-dtype", "nvfp4", "--concurrency", "16")
    assert code == 2 and err.startswith("error: weight_dtype: 'nvfp4' is not valid; a format ATOM runs: it has no NVFP4 path")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("model, gpu, dequant", [
    # the dense 8B: every linear emulated. A layer's weights: QKV 4096 x (4096 + 2 x 1024) + O 4096 x 4096 = 41,943,040, and
    # gate/up/down 3 x 4096 x 14336 = 176,160,768: 218,103,808 weights x (0.5625 NVFP4 bytes: 4 bits + an FP8 scale per 16,
    # read; + 2 BF16 bytes, written) = 558,891,008 B a layer x 32 layers = 17,884,512,256 B
    ("llama-3.1-8b", "mi300x", 17_884_512_256),
    ("llama-3.1-8b", "mi355x", 17_884_512_256),
    # the MoE: its attention alone (the experts dequantise in their Triton tiles, priced W4A16). Q 2048 x 4096, K and V
    # 2 x 2048 x 512, O 4096 x 2048 = 18,874,368 weights x 2.5625 = 48,365,568 B a layer x 48 = 2,321,547,264 B
    ("qwen3-30b-a3b", "mi300x", 2_321_547_264),
])
def test_vllm_emulates_nvfp4_on_amd(model, gpu, dequant):
    r = _json("estimate", model, "--gpu", gpu, "--backend", "vllm", "--weight-dtype", "nvfp4", "--concurrency", "16", "--breakdown")
    ops = {o["name"]: o for o in r["breakdown"] if o["phase"] == "decode"}
    assert ops["layer/mxfp4_dequant"]["bytes"] == pytest.approx(dequant, rel=1e-12)
    if model == "qwen3-30b-a3b":
        # the experts' two input QDQs: 16 tokens x (h 2048 + top_k 8 x expert_inter 768 = 8,192 values) x 4 bytes = 524,288 B
        # a layer x 48 = 25,165,824 B
        assert ops["layer/nvfp4_experts_qdq"]["bytes"] == pytest.approx(25_165_824, rel=1e-12)
    else:
        assert "layer/nvfp4_experts_qdq" not in ops
    assert any(n.startswith(f"vLLM has no NVFP4 kernel on {gpu.upper()} (ROCm): it emulates it") for n in r["precision_notes"])
    assert not any("priced as mxfp4" in n or "no FP4 math" in n for n in r["precision_notes"])  # the mapping it replaced
    if model == "llama-3.1-8b":  # dequantise-then-BF16 is slower than BF16 itself, as vLLM's own warning says
        bf16 = _json("estimate", model, "--gpu", gpu, "--backend", "vllm", "--concurrency", "16")
        assert r["tpot_ms"] > bf16["tpot_ms"]


def test_vllm_emulates_a_moes_dense_layers_and_shared_experts_not_only_its_attention():
    # fixR11 (frev11 #1): only the routed experts run W4A16; DeepSeek-R1's 3 dense-FFN layers and 58 layers' shared experts
    # are vLLM's emulated linears (dequantised to BF16, a BF16 GEMM), as a dense model's are. One request, TP8 on MI355X:
    r = _json("roofline", "deepseek-r1-nvfp4", "--gpu", "mi355x", "--tp", "8", "--backend", "vllm")
    ops = {o["name"]: o for o in r["ops"]}
    # dense gate/up: 2 x 18,432 / 8 x 7,168 = 33,030,144 weights x 3 layers = 99,090,432, read at 2 BF16 bytes
    # (198,180,864 B) + 1 token's input 7,168 x 2 B x 3 and output 4,608 x 2 B x 3 = 70,656 B; was 0.5625 B a weight
    assert ops["layer0/ffn/gate_up"]["bytes"] == pytest.approx(198_251_520, rel=1e-12)
    # dense dequant: 3 x 18,432 x 7,168 / 8 = 49,545,216 weights x 3 layers x (0.5625 read + 2 written) = 380,878,848 B
    assert ops["layer0/mxfp4_dequant"]["bytes"] == pytest.approx(380_878_848, rel=1e-12)
    # shared experts: 3 x 7,168 x 2,048 / 8 = 5,505,024 weights x 58 layers x 2.5625 = 818,184,192 B, two launches a layer
    assert ops["layer1/mxfp4_dequant"]["bytes"] == pytest.approx(818_184_192, rel=1e-12)
    # their input QDQs: 1 token x (h 7,168 + shared_inter 2,048 / 8 = 256) x 4 B x 58 = 1,722,368 B
    assert ops["layer1/mxfp4_act_qdq"]["bytes"] == pytest.approx(1_722_368, rel=1e-12)
    assert ops["layer1/moe/shared_gate_up"]["bytes"] > 2.0 * ops["layer1/moe/shared_gate_up"]["flops"] / 2.0  # BF16 weights
    assert "layer1/nvfp4_experts_qdq" in ops  # the routed experts keep their W4A16 path


@pytest.mark.parametrize("args", [
    ["llama-3.1-70b", "--gpu", "h200", "--backend", "vllm", "--prefill", "tp=4", "--decode", "tp=4", "--concurrency", "96",
     "--weight-dtype", "fp8", "--kv-dtype", "fp8"],
    ["llama-3.1-8b", "--gpu", "h200", "--gpus", "1", "--backend", "vllm"],
])
def test_vllm_unchunked_requests_past_the_budget_are_one_line_on_every_path(tmp_path, args):
    # ISL 8,000 + OSL 256 = 8,256 > the 8,192 budget its max-model-len may not pass (Dynamo's pools and the SLO search alike)
    code, out, err = cli("export", *args, "--isl", "8000", "--osl", "256", "--no-chunked-prefill", "-o", str(tmp_path / "x.yaml"))
    assert code == 2 and err.startswith("error: isl+osl: 8256 is not valid; at most max_num_tokens (8,192): vLLM without chunked prefill")
    assert err.count("\n") == 1 and not (tmp_path / "x.yaml").exists()


def test_the_pages_vllm_export_without_chunking_is_written_and_imports_at_its_header(tmp_path):
    # the page's and the JSON API's export: true (web.app._priced_export) goes through export_config as the CLI does
    from llm_codesign.web.app import EstimateRequest, _estimate

    x = _estimate(EstimateRequest(model="llama-3.1-8b", gpu="h200", backend="vllm", tp=1, isl=4000, osl=256, concurrency=8,
                                  chunked_prefill=False, export=True))["export"]
    assert "enable-chunked-prefill: false" in x["text"] and "max-model-len: 5120" in x["text"]
    assert round(x["predicted"]["ttft_ms"], 1) == 210.2
    (tmp_path / "p.yaml").write_text(x["text"])
    assert _back(tmp_path / "p.yaml") == pytest.approx(x["predicted"], rel=1e-9)
