"""`export` writes what was priced, on every surface (crev10 #2, #3, #6, #10; newc10 #12; branch fixC): the page's and the
API's launch file priced with the capture it writes, export taking estimate's launch options, a config.json's frontier
exported by its path, EAGLE-3 without its head refused, SGLang with chunking off written, pareto --out's frontier.json."""
from __future__ import annotations

import json

import pytest
from conftest import cli

import llm_codesign as lc

KEYS = ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")
L70 = ["llama-3.1-70b", "--gpu", "h200", "--tp", "4", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--concurrency", "78"]
# a Llama-3.1-8B shape of one's own (no registry name, no checkpoint)
CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
       "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
       "tie_word_embeddings": False, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}


def _json(*args) -> dict:
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def _header(text: str) -> dict:
    return json.loads(next(x for x in text.splitlines() if x.startswith("# llm-codesign export: "))[len("# llm-codesign export: "):])


def test_the_pages_export_header_is_what_its_file_imports_at(tmp_path):
    # 78 requests on TP4: TensorRT-LLM's default capture (1-32, 64, 128, unpadded) runs them eager, TPOT 29.32 ms, which the
    # header quoted for a file padded to 78 that imports at 14.52 ms. Golden: tok/s/GPU = 78 x 1024 / (TTFT + 1023 x TPOT)
    # / 4 = 79872 / (0.43724 + 1023 x 0.0145181) / 4 = 79872 / 15.2893 / 4 = 1306.0
    from llm_codesign.web.app import EstimateRequest, _estimate

    r = _estimate(EstimateRequest(model="llama-3.1-70b", gpu="h200", tp=4, weight_dtype="fp8", kv_dtype="fp8", concurrency=78, export=True))
    x = r["export"]
    assert (round(r["tpot_ms"], 2), round(r["output_tok_s_per_gpu"], 1)) == (29.32, 655.5)  # the answer: the engine's default
    assert round(x["predicted"]["tpot_ms"], 2) == 14.52 and round(x["predicted"]["output_tok_s_per_gpu"]) == 1306
    assert 78 * 1024 / (x["predicted"]["ttft_ms"] / 1e3 + 1023 * x["predicted"]["tpot_ms"] / 1e3) / 4 == pytest.approx(
        x["predicted"]["output_tok_s_per_gpu"], rel=1e-6)
    assert _header(x["text"])["predicted"] == x["predicted"]
    assert x["capture"] == ("priced with graphs padded to 78 a rank, as the file writes them (estimate --cuda-graph-max-bs 78); "
                            "estimate's default capture (without it): TPOT 29.32 ms")
    path = tmp_path / x["file_name"]
    path.write_text(x["text"])
    back = _json("import", str(path))
    assert {k: back[k] for k in KEYS} == pytest.approx(x["predicted"], rel=1e-9)


def test_cli_export_says_the_capture_and_takes_estimates_launch_options(tmp_path):
    code, out, err = cli("export", *L70, "-o", str(tmp_path / "t.yaml"))
    said = " ".join((out + err).split())
    assert code == 0, err
    assert "TPOT 14.52 ms" in said and "estimate's default capture (without it): TPOT 29.32 ms" in said
    assert _json("estimate", *L70, "--cuda-graph-max-bs", "78")["tpot_ms"] == pytest.approx(14.518, abs=5e-4)
    # graphs off, a batch cap of 64 a rank, chunking on: written and priced as estimate prices them, the import alike
    opts = ["--cuda-graph-max-bs", "0", "--max-batch", "64", "--chunked-prefill"]
    e = _json("export", *L70, *opts, "-o", str(tmp_path / "o.yaml"))
    text = (tmp_path / "o.yaml").read_text()
    assert "cuda_graph_config: null" in text and "max_batch_size: 64" in text and "enable_chunked_prefill: true" in text
    est = _json("estimate", *L70, *opts)
    assert e["predicted"] == pytest.approx({k: est[k] for k in KEYS}, rel=1e-9)
    # the requests past the cap of 64 wait (TTFT 7.0 s); import prices the header's 78 (a stated cap's export, leftE)
    back = _json("import", str(tmp_path / "o.yaml"))
    assert {k: back[k] for k in KEYS} == pytest.approx(e["predicted"], rel=1e-9) and back["concurrency"] == 78
    # eager steps of 64 (the cap): slower than 78 padded in graphs (14.52), faster than 78 eager (the default's, 29.32)
    assert 14.52 < e["predicted"]["tpot_ms"] < 29.32


def test_no_capture_line_where_the_padded_file_decodes_as_the_default():
    # frev10 #6: 300 requests on SGLang (H100, llama-3.1-8b): the file pads graphs to 300 past the default 256, but the KV
    # cache holds 274 and the batch that decodes prices alike, TPOT 41.07 ms both: a line "estimate's default capture
    # (without it): TPOT 41.07 ms" claimed a difference that isn't there
    from llm_codesign.web.app import EstimateRequest, _estimate

    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--backend", "sglang", "-o", "-", "--concurrency", "300")
    assert code == 0, err
    assert "TPOT 41.07 ms" in " ".join((out + err).split()) and "default capture" not in out + err
    r = _estimate(EstimateRequest(model="llama-3.1-8b", gpu="h100", backend="sglang", concurrency=300, export=True))
    assert round(r["export"]["predicted"]["tpot_ms"], 2) == round(r["tpot_ms"], 2) == 41.07 and r["export"]["capture"] is None


def test_sglang_with_chunking_off_is_written_as_sglang_reads_it(tmp_path):
    # crev10 #10: a 20,000-token prompt priced whole over the 16,384 prefill budget; the file writes -1 and the budget
    args = ["llama-3.1-8b", "--gpu", "mi355x", "--tp", "1", "--isl", "20000", "--osl", "256", "--concurrency", "8", "--backend", "sglang",
            "--no-chunked-prefill"]
    e = _json("export", *args, "-o", str(tmp_path / "nc.sh"))
    text = (tmp_path / "nc.sh").read_text()
    assert "--chunked-prefill-size -1" in text and "--max-prefill-tokens 16384" in text
    est = _json("estimate", *args)
    assert e["predicted"] == pytest.approx({k: est[k] for k in KEYS}, rel=1e-9)
    back = _json("import", str(tmp_path / "nc.sh"))
    assert {k: back[k] for k in KEYS} == pytest.approx(e["predicted"], rel=1e-9)


@pytest.mark.parametrize("args, line", [
    (["qwen3-30b-a3b", "--gpu", "h200", "--tp", "2", "--ep", "2", "--backend", "vllm", "--concurrency", "16", "--spec", "eagle3",
      "--acceptance", "2.5"], "error: draft_model: None is not valid; the drafter's checkpoint with --spec eagle3 (--draft-model REPO"),
    (["llama-3.1-8b", "--gpu", "mi355x", "--tp", "1", "--backend", "sglang", "--concurrency", "16", "--spec", "eagle3", "--acceptance", "2.5"],
     "error: draft_model: None is not valid; the drafter's checkpoint with --spec eagle3 (--draft-model REPO"),
    # vLLM without chunking: written since leftE; a request past the max-model-len it must write is refused (test_export_launch_paths)
    (["llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--backend", "vllm", "--concurrency", "16", "--no-chunked-prefill", "--isl", "8000",
      "--osl", "256"], "error: isl+osl: 8256 is not valid; at most max_num_tokens (8,192): vLLM without chunked prefill"),
])
def test_a_file_the_engine_refuses_or_export_cannot_state_is_one_line(tmp_path, args, line):
    code, out, err = cli("export", *args, "-o", str(tmp_path / "x"))
    assert code == 2 and err.startswith(line) and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_eagle3_with_its_head_names_it_in_the_file(tmp_path):
    head = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    _json("export", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--backend", "vllm", "--concurrency", "16", "--spec", "eagle3",
          "--acceptance", "2.5", "--draft-model", head, "-o", str(tmp_path / "e.yaml"))
    assert f"model: {head}" in (tmp_path / "e.yaml").read_text()


def test_a_config_json_frontier_is_exported_by_its_path(tmp_path, monkeypatch):
    # crev10 #3: estimate_command named the file's stem ('my8'), which no command finds; export-point failed on it
    cfg = tmp_path / "my8.json"
    cfg.write_text(json.dumps(CFG))
    monkeypatch.chdir(tmp_path)
    fr = _json("pareto", "my8.json", "--gpu", "h100", "--gpus", "1")
    assert fr["model"] == "my8" and fr["model_ref"] == str(cfg.resolve())
    p = fr["frontier"][2]
    assert p["estimate_command"].startswith(f"llm-codesign estimate {cfg.resolve()} --gpu h100 ")
    (tmp_path / "pa.json").write_text(json.dumps(fr))
    code, out, err = cli("export-point", "pa.json", "--index", "2", "-o", "p2.yaml")
    assert code == 0, err
    assert _header((tmp_path / "p2.yaml").read_text())["predicted"] == {k: p[k] for k in KEYS}
    back = _json("import", "p2.yaml", "--model", str(cfg))
    assert {k: back[k] for k in KEYS} == pytest.approx({k: p[k] for k in KEYS}, rel=1e-9)
    # from Python, a dict's frontier: exported from the shape it keeps; its JSON names no file, so export-point asks for one
    f = lc.pareto(CFG, "h100", num_gpus=1)
    assert f.model_ref == "<your config.json>" and len(lc.export_point(f, 2)) == 1
    (tmp_path / "pd.json").write_text(json.dumps(f.to_dict()))
    code, out, err = cli("export-point", "pd.json", "--index", "2", "-o", "d2.yaml")
    assert code == 2 and err.startswith("error: model: None is not valid; the config.json of 'custom' (--model PATH)")
    code, out, err = cli("export-point", "pd.json", "--index", "2", "-o", "d2.yaml", "--model", str(cfg))
    assert code == 0, err


def test_pareto_out_writes_the_frontier_json_export_point_reads(tmp_path):
    # newc10 #12: the README's `pareto --out DIR` wrote frontier.csv, which export-point refused with a JSONDecodeError
    code, out, err = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--out", str(tmp_path / "pq"))
    assert code == 0, err
    saved = json.loads((tmp_path / "pq" / "frontier.json").read_text())
    assert saved["model"] == "llama-3.1-8b" and len(saved["frontier"]) == sum(1 for _ in open(tmp_path / "pq" / "frontier.csv")) - 1
    code, out, err = cli("export-point", str(tmp_path / "pq" / "frontier.csv"), "--index", "1", "-o", str(tmp_path / "p.yaml"))
    assert code == 2 and err.startswith(f"error: path: '{tmp_path / 'pq' / 'frontier.csv'}' is not valid; the JSON of "
                                        "`llm-codesign pareto --json`, or the frontier.json `pareto --out DIR` writes beside frontier.csv")
    code, out, err = cli("export-point", str(tmp_path / "pq" / "frontier.json"), "--index", "1", "-o", str(tmp_path / "p.yaml"))
    assert code == 0, err
    p = saved["frontier"][1]
    assert _header((tmp_path / "p.yaml").read_text())["predicted"] == {k: p[k] for k in KEYS}


def test_a_kv_bound_vllm_export_says_its_max_num_seqs_frees_the_sampler_rows_and_estimates_default(tmp_path):
    # Llama-3.1-70B on 2 H100s, vLLM 2,048 / 1,024 at 16 requests: the file's max-num-seqs 16 sizes the sampler's warm-up
    # on 16 rows of logits, not the default 1,024, so its KV cache holds 12 sequences where estimate's default launch holds
    # 11: the export prices its file (estimate --max-batch 16, import alike) and says estimate's default figures (frev13)
    args = ["llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--backend", "vllm", "--isl", "2048", "--osl", "1024", "--concurrency", "16"]
    default, capped = _json("estimate", *args), _json("estimate", *args, "--max-batch", "16")
    assert (default["max_batch"], capped["max_batch"]) == (11, 12) and capped["memory"]["kv_gb"] > default["memory"]["kv_gb"]
    x = _json("export", *args, "-o", str(tmp_path / "v.yaml"))
    assert x["predicted"]["ttft_ms"] == pytest.approx(capped["ttft_ms"], rel=1e-9)
    assert x["capture"] == ("priced at the file's max-num-seqs 16 (estimate --max-batch 16): vLLM's capture from it, and its "
                            f"sampler's warm-up on 16 rows of logits, not 1,024, leaves the KV cache {capped['memory']['kv_gb']:.1f} GB "
                            f"a GPU, not {default['memory']['kv_gb']:.1f}; estimate at vLLM's default launch (max-num-seqs 1,024): "
                            f"TTFT {default['ttft_ms']:.0f} ms, TPOT {default['tpot_ms']:.2f} ms, {default['output_tok_s_per_gpu']:.0f} "
                            "tok/s/GPU, largest batch 11")
    # 7,486 / 4,132 ms before fixP13 counted vLLM's admitted past the cap unrounded (K / L: every prompt's blocks fit)
    assert round(default["ttft_ms"]) == 4653 and round(x["predicted"]["ttft_ms"]) == 3897
