"""`import` prices the line it is given (review crev10 #1, #5, #7, #10; newc10 #13 is in test_first_hour_amd_engineer.py):
an export's recorded arrival, an AWQ checkpoint's groups, a Dynamo file's intervals and notes, and estimate's word on an
SGLang prompt past its unchunked prefill budget."""
import json

import pytest
from conftest import cli

import llm_codesign as lc

FIGURES = ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")


def _export(tmp_path, name: str, *args: str) -> tuple[str, dict]:
    path = str(tmp_path / name)
    code, out, err = cli("export", *args, "-o", path)
    assert code == 0, err
    head = next(line for line in open(path) if line.startswith("# llm-codesign export: "))
    return path, json.loads(head[len("# llm-codesign export: "):])


@pytest.mark.parametrize("arrival", ["waves", "closed_loop", "burst"])
def test_an_export_reimports_at_the_arrival_its_header_records(tmp_path, arrival):
    # crev10 #1: a closed-loop export of DeepSeek-R1 on 8x MI355X predicted TTFT 125 ms and re-imported at 1820 ms (waves,
    # the default, whatever the header said). Each arrival's export gives back its header's figures, bit for bit
    path, meta = _export(tmp_path, "v.yaml", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--backend", "vllm",
                         "--concurrency", "64", "--arrival", arrival)
    assert meta.get("arrival", "waves") == arrival  # export writes it where it is not the default
    code, out, _ = cli("import", path, "--json")
    r = json.loads(out)
    assert code == 0 and r["arrival"] == arrival and {k: r[k] for k in FIGURES} == meta["predicted"]
    imp = lc.import_config(path)  # the API alike
    assert imp.to_dict()["arrival"] == arrival and imp.ttft_s * 1e3 == meta["predicted"]["ttft_ms"]


def test_import_arrival_overrides_the_header_and_a_bad_one_is_one_line(tmp_path):
    loop, _ = _export(tmp_path, "loop.yaml", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--backend", "vllm", "--concurrency", "64",
                      "--arrival", "closed_loop")
    _, burst = _export(tmp_path, "burst.yaml", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--backend", "vllm", "--concurrency", "64",
                       "--arrival", "burst")
    asked = lc.import_config(loop, arrival="burst").to_dict()
    assert {k: asked[k] for k in FIGURES} == burst["predicted"]
    # a burst's 64 prompts share the prefill steps; a closed loop's arrive one per freed slot: TTFT well under the burst's
    assert lc.import_config(loop).ttft_s * 1e3 < burst["predicted"]["ttft_ms"] / 2
    code, out, _ = cli("import", loop)  # the text names the arrival where it is not the default
    assert code == 0 and "TTFT with requests arriving in closed loop" in " ".join(out.split())
    assert cli("import", loop, "--arrival", "poisson") == (2, "", "error: arrival: 'poisson' is not valid; one of: waves, closed_loop, burst\n")


AWQ = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
       "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072, "rope_theta": 500000.0,
       "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm",
                                                          "zero_point": True}}


@pytest.mark.parametrize("gpu, out", [("mi355x", "aw.sh"), ("h100", "aw.yaml")])
def test_an_awq_export_reimports_with_its_groups(tmp_path, gpu, out):
    # crev10 #5: import read the header's "int4" as int4's default (32-value groups, 16-bit scales: 4.5 bits a weight) and
    # dropped the checkpoint's groups of 128 with a 16-bit scale and a 4-bit zero (4 + 20/128 = 4.15625 bits).
    # Golden: linears 32 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336) = 6,979,321,856 weights x 4.15625 / 8
    # = 3,625,975,808 B, plus the BF16 embedding and head 2 x 128256 x 4096 x 2 B = 2,101,346,304 B: 5.727322112 GB
    # (the 4.5-bit reading added 6,979,321,856 x 0.34375 / 8 = 299,892,736 B: 6.027 GB)
    cfg = tmp_path / "q_awq4.json"
    cfg.write_text(json.dumps(AWQ))
    path, meta = _export(tmp_path, out, str(cfg), "--gpu", gpu, "--tp", "1", "--concurrency", "16")
    code, text, _ = cli("import", path, "--model", str(cfg), "--json")
    r = json.loads(text)
    assert code == 0 and r["memory"]["weights_gb"] == pytest.approx(5.727322112, rel=1e-12)
    assert {k: r[k] for k in FIGURES} == meta["predicted"]
    w = lc.import_config(path, model=str(cfg)).deployment.precision.weight
    assert (w.name, w.weight_block, w.scale_bits) == ("int4", 128, 20)


def test_a_dynamo_export_reimports_with_disaggs_intervals_and_notes(tmp_path):
    # crev10 #7: the import of a Dynamo file kept the bare row (no intervals, no notes) and its text dropped tok/s/user and
    # tok/s/GPU. Its row now is disagg's for the same pools, decode capture and arrival, bands and notes included
    path, meta = _export(tmp_path, "d.yaml", "llama-3.1-8b", "--gpu", "h200", "--backend", "dynamo", "--prefill", "tp=1", "--decode",
                         "tp=2", "--decode-instances", "2", "--concurrency", "96", "--arrival", "burst")
    code, out, _ = cli("import", path, "--json")
    r = json.loads(out)
    code2, out2, _ = cli("disagg", "llama-3.1-8b", "--gpu", "h200", "--backend", "trtllm", "--prefill", "tp=1", "--decode", "tp=2",
                         "--decode-instances", "2", "--concurrency", "96", "--arrival", "burst", "--decode-cuda-graph-max-bs", "48", "--json")
    d = json.loads(out2)
    row = d["rows"][0]
    assert code == code2 == 0 and r["arrival"] == "burst" and {k: r[k] for k in FIGURES} == meta["predicted"]
    assert r["intervals"] == row["intervals"] and set(r["intervals"]) >= set(FIGURES) and r["notes"] == list(d["notes"])
    _, text, _ = cli("import", path)
    iv = r["intervals"]["output_tok_s_per_gpu"]
    assert f"{r['output_tok_s_per_gpu']:.0f} tok/s/GPU (80%: {iv['lo80']:.0f}-{iv['hi80']:.0f})" in " ".join(text.split())
    assert f"{r['tok_s_per_user']:.1f} tok/s/user (80%: " in " ".join(text.split())


def test_estimate_says_an_sglang_prompt_past_its_unchunked_budget_runs_whole():
    # crev10 #10: with SGLang's chunked prefill off, a 20,000-token prompt is priced as one step past the 16,384-token prefill
    # budget (--max-prefill-tokens' default, MAX_PREFILL_TOKENS) and estimate said nothing; import said it. One rule
    # (serve.estimate.chunking_note): said wherever chunking is off, the prompt named where it passes the budget
    args = ["estimate", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--osl", "256", "--concurrency", "8", "--json"]
    notes = {}
    for isl, backend, flag in ((20000, "sglang", "--no-chunked-prefill"), (1024, "sglang", "--no-chunked-prefill"),
                               (20000, "sglang", "--chunked-prefill"), (1024, "vllm", "--no-chunked-prefill")):
        code, out, _ = cli(*args, "--isl", str(isl), "--backend", backend, flag)
        assert code == 0
        notes[(isl, backend, flag)] = json.loads(out).get("chunking_note")
    said = ("chunked prefill off (--chunked-prefill-size -1, or any value <= 0): prefill batches of up to 16,384 tokens "
            "(--max-prefill-tokens), a longer prompt run whole, alone")
    assert notes == {(20000, "sglang", "--no-chunked-prefill"): said + "; each 20,000-token prompt is one: its prefill runs as one "
                                                                       "20,000-token step",
                     (1024, "sglang", "--no-chunked-prefill"): said, (20000, "sglang", "--chunked-prefill"): None,
                     (1024, "vllm", "--no-chunked-prefill"): None}
