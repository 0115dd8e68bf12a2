"""crev11 #8, #10 (branch fixC11b): an EAGLE-3 frontier searched without its head exports with export-point
--draft-model at the point's own figures; a long queue's text writes counts and times as the rest of the tool."""
import json

import pytest
from conftest import cli, cli_ok

import llm_codesign as lc
from llm_codesign.errors import InputError
from llm_codesign.render.intervals import count, queue_text

HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def test_queue_text_writes_a_whole_count_and_its_times_as_durations():
    # 1,048,575 cohorts of 119.22 ms: 1,048,575 x 0.11922 s = 125,011 s = 34.7 h (was "1.05e+06 cohorts")
    q = {"queue": {"ttft_ms": 1_048_575 * 119.22, "cohorts": 1_048_575 * 119.22 / 119.22, "cycle_ms": 119.22}}
    assert queue_text(q) == " (34.7 h of it queue: 1,048,575 cohorts of 119.2 ms, which the bands include)"
    assert count(4095.0000000001) == "4,095" and count(2.5) == "2.5" and count(1) == "1"


def test_an_eagle3_frontier_without_its_head_exports_with_draft_model(tmp_path):
    front = tmp_path / "pe.json"
    front.write_text(cli_ok("pareto", "llama-3.1-8b", "--gpu", "h200", "--gpus", 1, "--spec", "eagle3", "--acceptance", 2.5, "--json"))
    out = tmp_path / "pe3.yaml"
    code, _, err = cli("export-point", str(front), "--index", "3", "-o", str(out))
    assert code == 2 and "--draft-model REPO" in err  # the option the refusal names is export-point's own
    cli_ok("export-point", front, "--index", 3, "-o", out, "--draft-model", HEAD)
    head = json.loads(out.read_text().splitlines()[0][len("# llm-codesign export: "):])
    p = json.loads(front.read_text())["frontier"][3]
    assert head["spec"]["draft_model"] == HEAD and f"speculative_model: {HEAD}" in out.read_text()
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):  # the head is named, not priced: the point's figures
        assert head["predicted"][k] == pytest.approx(p[k], rel=1e-9), k
    f = lc.pareto("llama-3.1-8b", "h200", num_gpus=1, spec="eagle3", acceptance=2.5)
    (text,) = lc.export_point(f, 3, draft_model=HEAD).values()
    assert f"speculative_model: {HEAD}" in text
    plain = lc.pareto("llama-3.1-8b", "h200", num_gpus=1)
    with pytest.raises(InputError, match="only an EAGLE-3 point's head is named at export"):
        lc.export_point(plain, 0, draft_model=HEAD)


def test_a_vllm_export_is_priced_at_the_max_num_seqs_it_writes(tmp_path):
    # max-num-seqs 16 caps vLLM's capture at min(2 x 16, 512) = 32 tokens (graphs_default), so the file's 512-token
    # chunks run eager: the export is priced so (TTFT 254.00 ms, as estimate --max-batch 16), not at the default's
    # 512-token capture (236.25 ms), and its import answers the same (crev11 #4)
    out = tmp_path / "v1.yaml"
    cli_ok("export", "llama-3.1-8b", "--gpu", "h100", "--tp", 1, "--backend", "vllm", "--concurrency", 16, "--isl", 4096, "--osl", 256,
           "--chunked-prefill", "--max-num-tokens", 512, "-o", out)
    head = json.loads(out.read_text().splitlines()[0][len("# llm-codesign export: "):])
    back = json.loads(cli_ok("import", out, "--json"))
    assert head["predicted"]["ttft_ms"] == pytest.approx(254.0036, abs=1e-3) and "max-num-seqs: 16" in out.read_text()
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
        assert back[k] == pytest.approx(head["predicted"][k], rel=1e-9), k


def test_cpp_is_exported_only_where_the_engine_runs_it(tmp_path):
    # Llama-3.1-70B PP4 on H100, one 8,192-token prompt in 2,048-token chunks: pipelined (--cpp) TTFT ~0.8 s, one chunk
    # after another ~1.7 s (crev11 #5). TensorRT-LLM and vLLM have no launch option for it: refused, one line, exit 2.
    # SGLang's scheduler pipelines a chunked request over its micro-batches by default: written, and its import
    # (the header's cpp) prices what export predicted.
    args = ["llama-3.1-70b", "--gpu", "h100", "--pp", "4", "--concurrency", "1", "--isl", "8192", "--osl", "256",
            "--chunked-prefill", "--max-num-tokens", "2048", "--cpp"]
    for e in ("trtllm", "vllm"):
        code, out, err = cli("export", *args, "--backend", e, "-o", str(tmp_path / f"{e}.out"))
        assert code == 2 and err.strip() == (f"error: cpp: True is not valid; left out for {e}: no {e} launch option pipelines "
                                             "one request's prefill chunks over PP stages (SGLang's scheduler does: --backend sglang)")
        assert not (tmp_path / f"{e}.out").exists()
    out = tmp_path / "sglang.sh"
    cli_ok("export", *args, "--backend", "sglang", "-o", out)
    head = json.loads(next(x for x in out.read_text().splitlines() if x.startswith("# llm-codesign export: "))[len("# llm-codesign export: "):])
    back = json.loads(cli_ok("import", out, "--json"))
    assert head["cpp"] is True and back["ttft_ms"] == pytest.approx(head["predicted"]["ttft_ms"], rel=1e-9)
    plain = json.loads(cli_ok("estimate", *args[:-1], "--backend", "vllm", "--json"))
    assert back["ttft_ms"] < 0.6 * plain["ttft_ms"]  # pipelined over 4 stages: about half the one-after-another TTFT


def test_sglang_pipelines_one_requests_chunks_by_default(tmp_path):
    # leftV (crev11 #5's left-over): SGLang's scheduler pipelines a chunked request over its PP micro-batches with no flag
    # (srt/managers/scheduler.py:2463-2466@0.5.11), yet its estimate without --cpp priced the chunks one after another:
    # Llama-3.1-70B PP4 on H100, one 8,192-token prompt in 2,048-token chunks, TTFT 1,744.38 ms (825.89 with --cpp). Now
    # 825.89 either way, and estimate == export == import without --cpp; vLLM (1,714.95 ms) and TensorRT-LLM stay serial
    args = ["llama-3.1-70b", "--gpu", "h100", "--pp", "4", "--concurrency", "1", "--isl", "8192", "--osl", "256",
            "--max-num-tokens", "2048"]
    sg, cpp, vl = (json.loads(cli_ok("estimate", *args, *more, "--json"))
                   for more in (("--backend", "sglang"), ("--backend", "sglang", "--cpp"), ("--backend", "vllm")))
    assert sg["ttft_ms"] == pytest.approx(825.8934, abs=1e-3) and sg["ttft_ms"] == cpp["ttft_ms"]
    assert vl["ttft_ms"] == pytest.approx(1714.9488, abs=1e-3)
    assert sg["pipeline_note"] == ("one request's 4 prefill chunks of 2,048 tokens pipelined over its 4 PP stages: SGLang's "
                                   "scheduler does so by default (chunked pipeline parallelism, no flag); no bundled run measures it")
    assert vl["pipeline_note"] == ("one request's 4 prefill chunks of 2,048 tokens cross its 4 PP stages one after another: vLLM "
                                   "pipelines only different requests' chunks (SGLang's scheduler pipelines one request's by default)")
    assert "pipeline_note" not in json.loads(cli_ok("estimate", *args[:3], "--pp", "4", "--isl", "2048", "--osl", "256",
                                                    "--max-num-tokens", "2048", "--concurrency", "1", "--backend", "sglang", "--json"))
    out = tmp_path / "sglang.sh"
    exported = json.loads(cli_ok("export", *args, "--backend", "sglang", "-o", out, "--json"))
    back = json.loads(cli_ok("import", out, "--json"))
    assert exported["pipeline_note"] == sg["pipeline_note"]
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
        assert exported["predicted"][k] == pytest.approx(sg[k], rel=1e-12) and back[k] == pytest.approx(sg[k], rel=1e-9), k
