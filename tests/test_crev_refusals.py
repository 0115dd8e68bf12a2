"""Review crev #5: a request the engine refuses is refused here too, in one line, not priced as if served. TensorRT-LLM
without chunked prefill rejects a prompt over max_num_tokens (tensorrt_llm/llmapi/llm.py BaseLLM._check_arguments
@4c05a748); vLLM rejects isl + osl over --max-model-len, SGLang at or over --context-length (explore.export
CONTEXT_LIMIT_OPTIONS)."""
import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.serve.metrics import evaluate
from llm_codesign.spec.plan import Workload, check_whole_prompt, deployment
from llm_codesign.spec.registry import get_model

L8 = ["llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--osl", "256", "--concurrency", "8"]
TRT_LINE = ("isl: 4096 is not valid; at most max_num_tokens (1,024): TensorRT-LLM without chunked prefill schedules a prompt "
            "whole and its LLM API refuses a longer one (BaseLLM._check_arguments); raise max_num_tokens to 4,096 or more, or "
            "turn chunked prefill on (enable_chunked_prefill: true; --chunked-prefill, the API's chunked_prefill: true)")


def _run(*args):
    return CliRunner().invoke(app, list(args))


def test_tensorrt_llm_refuses_an_unchunked_prompt_over_its_stated_budget():
    r = _run("estimate", *L8, "--isl", "4096", "--max-num-tokens", "1024", "--backend", "trtllm")
    assert r.exit_code == 2 and r.output.strip() == "error: " + TRT_LINE
    # the engine's check is prompt_len > max_num_tokens: 1,024 tokens under 1,024 are scheduled, and priced
    assert _run("estimate", *L8, "--isl", "1024", "--max-num-tokens", "1024", "--backend", "trtllm", "--json").exit_code == 0
    # with chunked prefill on, priced as it was before with the flag left out: the prompt over 4 steps of 1,024 tokens
    on = _run("estimate", *L8, "--isl", "4096", "--max-num-tokens", "1024", "--backend", "trtllm", "--chunked-prefill", "--json")
    assert on.exit_code == 0, on.output
    assert json.loads(on.stdout)["max_num_tokens"] == 1024


def test_the_rule_reads_the_launch_options():
    m = get_model("llama-3.1-8b")
    off = deployment(m, gpu="h100", num_gpus=1, backend="trtllm", max_num_tokens=1024)
    with pytest.raises(InputError) as e:
        check_whole_prompt(off, 4096)
    assert (e.value.field, e.value.value) == ("isl", 4096)
    check_whole_prompt(replace(off, chunked_prefill=True), 4096)
    assert deployment(m, gpu="h100", num_gpus=1, backend="trtllm", chunked_prefill=True).chunked_prefill is True
    with pytest.raises(InputError, match="chunked_prefill: 'yes' is not valid; True, False or None"):
        deployment(m, gpu="h100", num_gpus=1, chunked_prefill="yes")
    # both left at TensorRT-LLM's defaults (8,192 tokens, chunked prefill off): read as a long-context launch, chunked as before
    check_whole_prompt(deployment(m, gpu="h100", num_gpus=1, backend="trtllm"), 16384)
    # Helix: the engine divides the prompt by cp_size (our kvp) before comparing: 4,096 / 4 = 1,024 <= 1,024
    helix = deployment(get_model("deepseek-r1"), gpu="gb200", num_gpus=16, tp=4, kvp=4, ep=16, backend="trtllm", max_num_tokens=1024)
    check_whole_prompt(helix, 4096)
    with pytest.raises(InputError, match="raise max_num_tokens to 1,025 or more"):
        check_whole_prompt(helix, 4100)  # 4,100 / 4 = 1,025
    # vLLM chunks its prompts by default: no refusal at any length under its budget
    check_whole_prompt(deployment(m, gpu="h100", num_gpus=1, backend="vllm", max_num_tokens=1024), 4096)


def test_one_rule_for_the_search_columns_and_the_deployment():
    # leftA #2: serve.aggregated's search columns and check_whole_prompt read one rule (spec.plan.prompt_schedules). Columns
    # of the flag (None, True, False) at a stated 1,024-token budget, 4,096-token prompts: TensorRT-LLM (chunked prefill off
    # by default) schedules them where the flag is True only; stated no budget, the default reads as chunked (scheduled);
    # vLLM chunks by default (scheduled unless the flag is False); SGLang has no refusal read (always scheduled)
    from llm_codesign.spec.engines.base import get_engine
    from llm_codesign.spec.plan import prompt_schedules

    m = get_model("llama-3.1-8b")
    for name, want in (("trtllm", [False, True, False]), ("vllm", [True, True, False]), ("sglang", [True, True, True])):
        eng = get_engine(name)
        got = [bool(prompt_schedules(eng, f, 4096, 1024, stated=True)) for f in (None, True, False)]
        assert got == want, name
        assert bool(prompt_schedules(eng, None, 4096, 1024, stated=False))  # no budget stated: read as chunked, every engine
        assert prompt_schedules(eng, np.array([True, False]), np.array([4096, 1024]), 1024, stated=True).tolist() == [True, True]
        for f, ok in zip((None, True, False), want, strict=True):
            dep = deployment(m, gpu="h100", num_gpus=1, backend=name, max_num_tokens=1024, chunked_prefill=f)
            if ok:
                check_whole_prompt(dep, 4096)
            else:
                with pytest.raises(InputError, match=r"raise max_num_tokens( \(--max-num-batched-tokens\))? to 4,096 or more"):
                    check_whole_prompt(dep, 4096)


def test_a_search_drops_the_cells_the_engine_refuses():
    m = get_model("llama-3.1-8b")
    stated = deployment(m, gpu="h100", num_gpus=1, backend="trtllm", max_num_tokens=1024)
    chunked = replace(stated, chunked_prefill=True)
    assert not bool(np.all(evaluate(m, stated, Workload(4096, 256, 8)).fits))
    assert bool(np.all(evaluate(m, stated, Workload(1024, 256, 8)).fits))
    assert bool(np.all(evaluate(m, chunked, Workload(4096, 256, 8)).fits))


def test_import_refuses_a_config_that_turns_chunked_prefill_off(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tr.yaml").write_text("max_num_tokens: 1024\nenable_chunked_prefill: false\n")
    r = _run("import", "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --max_num_tokens 1024 --extra_llm_api_options tr.yaml",
             "--gpu", "h100", "--isl", "4096", "--osl", "256", "--concurrency", "8")
    assert r.exit_code == 2 and r.output.strip() == "error: " + TRT_LINE


@pytest.mark.parametrize("line, limit, most", [
    # vLLM: isl + osl up to max_model_len; SGLang: below context_length (max_new_tokens + input >= context_len refused)
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len {n}", "max-model-len", 0),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --context-length {n}", "context-length", 1),
])
def test_import_refuses_requests_over_the_context_limit(line, limit, most):
    args = ("--gpu", "h100", "--isl", "4096", "--osl", "256", "--concurrency", "8", "--json")
    r = _run("import", line.format(n=512), *args[:-1])
    assert r.exit_code == 2
    assert r.output.strip() == (f"error: isl+osl: 4352 is not valid; at most {512 - most} under the configuration's {limit} 512: "
                                f"{line.split()[0] if most == 0 else 'sglang'} rejects a longer request; raise {limit} or price "
                                "shorter requests (--isl, --osl)")
    # 4,096 + 256 = 4,352 tokens: vLLM serves them under 4,352, SGLang needs 4,353; read, so no longer `ignored`
    ok = _run("import", line.format(n=4352 + most), *args)
    assert ok.exit_code == 0, ok.output
    assert limit not in json.loads(ok.stdout)["ignored"]
    if most:
        assert _run("import", line.format(n=4352), *args).exit_code == 2


def test_each_engine_names_its_own_chunked_prefill_option_or_refuses_nothing():
    # frev #8c: vLLM's launch check (SchedulerConfig: max_num_batched_tokens under max_model_len with chunked prefill off)
    # in its own options; SGLang has no such refusal read, so its 20,000-token prompt over an 8,192 budget is priced
    m = get_model("llama-3.1-8b")
    v = deployment(m, gpu="h100", num_gpus=1, backend="vllm", max_num_tokens=8192, chunked_prefill=False)
    with pytest.raises(InputError) as e:
        check_whole_prompt(v, 20000, osl=1000)  # vLLM's budget holds the whole request, as its max_model_len (crev12 #3)
    assert str(e.value) == ("isl+osl: 21000 is not valid; at most max_num_tokens (8,192): vLLM without chunked prefill serves no "
                            "longer prompt: its SchedulerConfig refuses a launch whose max_num_batched_tokens is under "
                            "max_model_len; raise max_num_tokens (--max-num-batched-tokens) to 21,000 or more, or turn chunked "
                            "prefill on (--enable-chunked-prefill; --chunked-prefill, the API's chunked_prefill: true)")
    check_whole_prompt(deployment(m, gpu="h100", num_gpus=1, backend="sglang", max_num_tokens=8192, chunked_prefill=False), 20000)
    r = _run("estimate", *L8, "--isl", "20000", "--max-num-tokens", "8192", "--backend", "sglang", "--no-chunked-prefill", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["fits"] is True, r.output


def test_mix_refuses_the_prompt_estimate_refuses(tmp_path):
    # frev #2: 1,000 and 20,000-token prompts on TensorRT-LLM at max_num_tokens 8,192 (chunked prefill off by default):
    # estimate refuses the 20,000 one, so mix refuses the mix, naming its longest prompt; --chunked-prefill prices both
    csv = tmp_path / "len.csv"
    csv.write_text("isl,osl\n1000,100\n20000,100\n")
    mix = ["mix", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--lengths", str(csv), "--concurrency", "4", "--max-num-tokens", "8192"]
    r = _run(*mix)
    assert r.exit_code == 2 and r.output.startswith("error: isl (the mix's longest): 20000 is not valid; at most max_num_tokens (8,192)")
    on = _run(*mix, "--chunked-prefill", "--json")
    assert on.exit_code == 0, on.output
    assert [x["isl"] for x in json.loads(on.stdout)["per_length"]] == [1000, 20000]


def test_sglang_prices_an_unchunked_prompt_whole_and_atom_refuses_it():
    """crev9 #9: with chunked prefill off, a prompt over the step budget was priced in chunks of it whatever the flag (SGLang
    4,096 tokens at a 2,048 budget: TTFT 717.86 ms with the flag and without). SGLang's PrefillAdder admits a prefill batch's
    first request whole: priced as one 4,096-token step, alone. ATOM's scheduler rejects such a prompt
    (Scheduler._unschedulable_reason), so it is refused as vLLM's is, naming ATOM's own options."""
    from llm_codesign.serve.aggregated import prompt_budget
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.harness import SchedulerFlags

    off = SchedulerFlags(chunked_prefill=False)
    # SGLang: the 4,096-token prompt whole (not 2,048); two 1,000-token ones still fill 2,048 whole, floor(2048 / 1000) x 1000 = 2000
    assert prompt_budget(2048.0, 4096.0, engine=get_engine("sglang"), flags=off) == 4096.0
    assert prompt_budget(2048.0, 1000.0, engine=get_engine("sglang"), flags=off) == 2000.0
    assert prompt_budget(2048.0, 4096.0, engine=get_engine("sglang")) == 2048.0  # chunked, its default: chunks of the budget
    args = ["llama-3.1-8b", "--gpu", "mi355x", "--tp", "1", "--isl", "4096", "--osl", "256", "--concurrency", "16", "--max-num-tokens", "2048"]
    on, whole = (json.loads(_run("estimate", *args, "--backend", "sglang", *c, "--json").stdout) for c in ((), ("--no-chunked-prefill",)))
    assert whole["ttft_ms"] < on["ttft_ms"] and whole["ttft_ms"] != pytest.approx(on["ttft_ms"], rel=1e-3)
    r = _run("estimate", *args, "--backend", "atom", "--no-chunked-prefill")
    assert r.exit_code == 2 and r.output.strip() == (
        "error: isl: 4096 is not valid; at most max_num_tokens (2,048): ATOM without chunked prefill rejects a longer prompt "
        "unscheduled (Scheduler._unschedulable_reason); raise max_num_tokens (--max-num-batched-tokens) to 4,096 or more, or "
        "turn chunked prefill on (--enable_chunked_prefill, its default; --chunked-prefill, the API's chunked_prefill: true)")
    assert _run("estimate", *args, "--backend", "atom", "--no-chunked-prefill", "--isl", "2000").exit_code == 0


@pytest.mark.parametrize("flags, budget", [("--chunked-prefill-size -1", 16384), ("--chunked-prefill-size 0 --max-prefill-tokens 2048", 2048)])
def test_import_reads_sglangs_chunked_prefill_off(flags, budget):
    """crev9 #8: `--chunked-prefill-size -1`, SGLang's documented "disabling chunked prefill", was refused as "max_num_tokens:
    -1 is not valid". Read as chunking off, the step budget the prefill batch's --max-prefill-tokens (16,384 by default),
    and priced as estimate --no-chunked-prefill prices it."""
    from llm_codesign.explore.export import read_config
    from llm_codesign.spec.hardware import get_gpu

    # with the AITER kernels it is priced on (an MI355X launch without them is refused: newc10 #13)
    line = "SGLANG_USE_AITER=1 python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 1 " + flags
    imp = read_config(line, "c", gpu=get_gpu("mi355x"))
    assert (imp.deployment.chunked_prefill, imp.deployment.step_tokens) == (False, budget) and "max-prefill-tokens" not in imp.ignored
    got = json.loads(_run("import", line, "--gpu", "mi355x", "--concurrency", "16", "--isl", "4096", "--osl", "256", "--json").stdout)
    want = json.loads(_run("estimate", "llama-3.1-8b", "--gpu", "mi355x", "--tp", "1", "--isl", "4096", "--osl", "256", "--concurrency",
                           "16", "--backend", "sglang", "--max-num-tokens", str(budget), "--no-chunked-prefill", "--json").stdout)
    assert (got["ttft_ms"], got["max_num_tokens"]) == (pytest.approx(want["ttft_ms"], rel=1e-12), budget)
    text = _run("import", line, "--gpu", "mi355x", "--concurrency", "16", "--isl", "4096", "--osl", "256").stdout
    assert (f"chunked prefill off (--chunked-prefill-size -1, or any value <= 0): prefill batches of up to {budget:,} tokens "
            "(--max-prefill-tokens), a longer prompt run whole, alone") in " ".join(text.split())


def test_sglang_chunking_off_budget_is_the_same_in_estimate_and_import():
    """frev9 #2: estimate --backend sglang --no-chunked-prefill kept the H100's chunk, chunked_prefill_size 8,192 (80 GiB:
    8192 below 160 GiB), a setting that no longer applies, while import of the same launch (--chunked-prefill-size -1)
    used --max-prefill-tokens' 16,384 (TTFT 1088 vs 1161 ms). One constant in the SGLang engine (Engine.launch_step_tokens), both read it."""
    from llm_codesign.spec.engines.sglang import MAX_PREFILL_TOKENS
    from llm_codesign.spec.plan import deployment

    assert MAX_PREFILL_TOKENS == 16384
    d = lambda c: deployment("llama-3.1-8b", gpu="h100", num_gpus=1, backend="sglang", chunked_prefill=c).step_tokens  # noqa: E731
    assert (d(None), d(True), d(False)) == (8192, 8192, 16384)
    load = ["--isl", "4096", "--osl", "256", "--concurrency", "16", "--json"]
    est = json.loads(_run("estimate", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--backend", "sglang", "--no-chunked-prefill", *load).stdout)
    imp = json.loads(_run("import", "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 1 "
                          "--chunked-prefill-size -1", "--gpu", "h100", *load).stdout)
    assert (est["ttft_ms"], est["tpot_ms"]) == (pytest.approx(imp["ttft_ms"], rel=1e-12), pytest.approx(imp["tpot_ms"], rel=1e-12))
