"""A newcomer's first hour, second pass (n3): the engine a GPU runs by default and the ones it refuses, compare's
rows told apart by their activation and KV-cache formats, every option's help naming what it takes."""
import json
import re

import pytest
from conftest import cli

from llm_codesign.cli import app
from llm_codesign.render.intervals import arrival_footer


@pytest.mark.parametrize("gpu, engine", [("mi355x", "sglang"), ("mi300x", "sglang"), ("h100", "trtllm"), ("b200", "trtllm")])
def test_without_backend_each_gpu_runs_its_vendors_engine(gpu, engine):
    # TensorRT-LLM priced on an MI355X (the old default on every GPU) is a deployment nobody can run
    code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", gpu, "--concurrency", "8", "--json")
    assert code == 0 and json.loads(out)["backend"] == engine


@pytest.mark.parametrize("args, line", [
    (["estimate", "gpt-oss-120b", "--gpu", "mi355x", "--backend", "trtllm"],
     "error: backend: 'trtllm' is not valid; an engine that runs on MI355X (TensorRT-LLM runs on NVIDIA GPUs only): vllm, sglang, atom\n"),
    (["estimate", "gpt-oss-120b", "--gpu", "h100", "--engine", "atom"],
     "error: backend: 'atom' is not valid; an engine that runs on H100 SXM (ATOM runs on AMD GPUs only): trtllm, vllm, sglang\n"),
    (["pareto", "llama-3.1-8b", "--gpu", "h100,mi300x", "--gpus", "1", "--backend", "trtllm"],
     "error: backend: 'trtllm' is not valid; an engine that runs on MI300X (TensorRT-LLM runs on NVIDIA GPUs only): vllm, sglang, atom\n"),
    (["compare", "llama-3.1-8b", "--gpu", "mi300x", "--gpus", "1", "--backend", "tensorrt-llm"],
     "error: backend: 'tensorrt-llm' is not valid; an engine that runs on MI300X (TensorRT-LLM runs on NVIDIA GPUs only): vllm, sglang, atom\n"),
    # pools of two vendors are refused before any engine is chosen (spec.engines.check_pool_vendors, newc10 #7)
    (["disagg", "llama-3.1-8b", "--gpu", "b200", "--decode-gpu", "mi355x", "--prefill", "tp=1", "--decode", "tp=1", "--backend", "trtllm"],
     "error: decode_gpu: 'mi355x' is not valid; an NVIDIA GPU, as the prefill pool's B200: both pools run one engine build (CUDA or "
     "ROCm), and no engine hands its KV cache from one vendor's GPUs to the other's\n"),
    # `--backend dynamo` runs TensorRT-LLM workers: the line names what was typed, not the 'trtllm' behind it
    (["export", "llama-3.1-8b", "--gpu", "mi355x", "--backend", "dynamo", "--prefill", "tp=1", "--decode", "tp=1", "-o", "-"],
     "error: backend: 'dynamo' is not valid; an engine that runs on MI355X: dynamo's workers are TensorRT-LLM's, which runs on "
     "NVIDIA GPUs only (Dynamo with vllm or sglang workers: --backend vllm or sglang with --prefill/--decode)\n"),
    # an engine export writes no file for offers those that run on the GPU (it offered trtllm and dynamo on an MI355X)
    (["export", "llama-3.1-8b", "--gpu", "mi355x", "--backend", "atom", "-o", "-"], "error: backend: 'atom' is not valid; one of: vllm, sglang"
     " (ATOM has no launch-configuration writer: it is priced, not exported)\n"),
    (["export", "llama-3.1-8b", "--gpu", "h100", "--backend", "atom", "-o", "-"],
     "error: backend: 'atom' is not valid; one of: trtllm, vllm, sglang, dynamo (ATOM has no launch-configuration writer: it is priced, "
     "not exported)\n"),
])
def test_an_engine_the_gpu_does_not_run_is_one_line(args, line):
    code, out, err = cli(*args)
    assert (code, out, err) == (2, "", line)


def test_dynamo_on_a_gpu_none_of_its_workers_runs_names_what_is_missing(monkeypatch):
    # with Dynamo's workers TensorRT-LLM's alone, an MI355X runs none: the line read "Dynamo with  workers: --backend  with"
    import llm_codesign.explore.export as ex

    monkeypatch.setattr(ex, "dynamo_workers", lambda: ("trtllm",))
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "mi355x", "--backend", "dynamo", "--prefill", "tp=1", "--decode", "tp=1", "-o", "-")
    assert (code, out, err) == (2, "", "error: backend: 'dynamo' is not valid; an engine that runs on MI355X: dynamo's workers are "
                                       "TensorRT-LLM's, which runs on NVIDIA GPUs only (none of Dynamo's workers (trtllm) runs on MI355X, "
                                       "which runs vllm, sglang, atom)\n")
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "mi355x", "--backend", "sglang", "--prefill", "tp=1", "--decode", "tp=1", "-o", "-")
    assert (code, out, err) == (2, "", "error: backend: 'sglang' is not valid; an engine Dynamo runs: none of Dynamo's workers (trtllm) "
                                       "runs on MI355X, which runs vllm, sglang, atom\n")


def test_compare_names_each_gpus_engine_and_tells_rows_of_one_weight_format_apart():
    code, out, _ = cli("compare", "gpt-oss-120b", "--gpu", "b200,mi355x", "--gpus", "1", "--min-tps-user", "100", columns=80)
    assert code == 0
    # each engine with the releases its defaults are priced at (Engine.release)
    assert out.startswith("compare at ISL/OSL 1024/1024 on 1x b200 (trtllm, defaults as 1.3.0rc1-1.3.0rc27)\n"
                          "/ 1x mi355x (sglang, defaults as 0.5.7-0.5.23), SLO >= 100 tok/s/user\n")
    # MI355X runs gpt-oss's MXFP4 weights on BF16 activations (the checkpoint's W4A16; AITER's SwiGLU MoE, not W4A4 since
    # 517770e) with its own KV cache and an FP8 one: two rows that read "mi355x  mxfp4" alike before, their A/KV beneath now
    rows = [(a.split()[0], a.split()[1], b.split()[0]) for a, b in zip(out.splitlines(), out.splitlines()[1:], strict=False)
            if a.startswith(" mi355x")]
    assert rows == [("mi355x", "mxfp4", "bf16/bf16"), ("mi355x", "fp8", "fp8/fp8"), ("mi355x", "mxfp4", "bf16/fp8")]
    assert "W: weight format, A/KV beneath: activation and KV-cache formats." in out
    code, out, _ = cli("compare", "llama-3.1-8b", "--gpu", "h100,h200", "--gpus", "1", "--min-tps-user", "100")
    assert code == 0 and out.startswith("compare at ISL/OSL 1024/1024 on 1x h100 / 1x h200, trtllm (defaults as 1.3.0rc1-1.3.0rc27), SLO >= 100 "
                                   "tok/s/user\n")
    code, out, _ = cli("compare", "gpt-oss-120b", "--gpu", "mi355x", "--gpus", "1", "--min-tps-user", "100", "--json")
    assert [(r["engine"], r["weight_dtype"], r["activation_dtype"], r["kv_dtype"]) for r in json.loads(out)["rows"]] == [
        ("sglang", "mxfp4", "bf16", "bf16"), ("sglang", "fp8", "fp8", "fp8"), ("sglang", "mxfp4", "bf16", "fp8")]


def test_every_option_and_argument_says_what_it_takes():
    import typer.main

    group = typer.main.get_command(app)
    bare = {name: [p.name for p in cmd.params if not (getattr(p, "help", None) or "").strip()] for name, cmd in group.commands.items()}
    # 24 options and estimate's MODEL had none: lint's --gpu error read "--gpu is required: a value"
    assert {k: v for k, v in bare.items() if v} == {}


@pytest.mark.parametrize("args, line", [
    (["lint", "llama-3.1-70b"], "error: gpu: missing; --gpu is required: GPU id (see `gpus`) or a GPU .toml file\n"),
    (["disagg", "llama-3.1-8b", "--gpu", "b200", "--prefill", "tp=1", "--decode", "tp=1", "--prefill-instances", "0"],
     "error: prefill_instances: '0' is not valid; an integer from 1 to 65,536 (--prefill-instances)\n"),
])
def test_a_missing_or_bad_value_names_what_is_valid(args, line):
    assert cli(*args) == (2, "", line)


def test_export_and_import_give_each_figure_its_80pct_interval_as_estimate_does(tmp_path):
    # the same deployment and batch: estimate's intervals are the ones the one-line summaries must show
    code, out, _ = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--backend", "vllm", "--concurrency", "16", "--json")
    e = json.loads(out)
    iv = e["intervals"]
    f = lambda k, x: f"{x:.2f}" if k == "tpot_ms" else (f"{x:.1f}" if x < 100 else f"{x:.0f}")  # noqa: E731
    band = lambda k: f"(80%: {f(k, iv[k]['lo80'])}-{f(k, iv[k]['hi80'])})"  # noqa: E731
    path = str(tmp_path / "v.yaml")
    code, out, _ = cli("export", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--backend", "vllm", "--concurrency", "16", "-o", path)
    assert code == 0
    assert " ".join(out.split()).endswith(
        f"predicted (vllm, defaults as 0.11-0.14): TTFT {e['ttft_ms']:.0f} ms {band('ttft_ms')}, TPOT {e['tpot_ms']:.2f} ms {band('tpot_ms')}, "
        f"{e['tok_s_per_user']:.1f} tok/s/user {band('tok_s_per_user')}, {e['output_tok_s_per_gpu']:.0f} tok/s/GPU "
        f"{band('output_tok_s_per_gpu')} at 16 requests " + arrival_footer("waves"))  # the arrival its TTFT turns on, beneath it
    code, out, _ = cli("import", path)
    assert code == 0 and " ".join(out.split()) + "\n" == (
        "llama-3.1-70b on 8x H200 SXM, TP8, W:bf16 A:bf16 KV:bf16, vllm (defaults as 0.11-0.14): 16 requests (the export's), "
        f"TTFT {e['ttft_ms']:.0f} ms {band('ttft_ms')}, TPOT {e['tpot_ms']:.2f} ms {band('tpot_ms')}, "
        f"{e['output_tok_s_per_gpu']:.0f} tok/s/GPU {band('output_tok_s_per_gpu')}\n")


def test_pareto_names_the_engine_it_priced_and_the_gpu_as_estimate_does():
    # the GPU by its name, as estimate's title has it ("on 1x MI300X"), not its catalog id ("mi300x")
    code, out, _ = cli("pareto", "llama-3.1-8b", "--gpu", "mi300x,h200", "--gpus", "1", columns=200)
    assert code == 0 and " ".join(out.split()).startswith(
        "Pareto frontier: llama-3.1-8b on 1x MI300X, sglang (defaults as 0.5.7-0.5.23), ISL/OSL 1024/1024 (")
    assert "Pareto frontier: llama-3.1-8b on 1x H200 SXM, trtllm (defaults as 1.3.0rc1-1.3.0rc27), ISL/OSL 1024/1024 (" in " ".join(out.split())


def test_models_lists_each_hugging_face_id_whole_at_120_columns():
    # ids are copied into commands: ", "-joined, 4 of them broke mid-id at 120 columns ("...-16E-I" / "nstruct")
    code, out, _ = cli("models", columns=120)
    _, js, _ = cli("models", "--json")
    ids = [x for m in json.loads(js) for x in m["hf_ids"][:2]]
    assert code == 0 and len(ids) > 40 and [x for x in ids if x not in out.split()] == []


def test_one_finding_and_one_request_are_singular():
    code, out, _ = cli("lint", "llama-3.1-70b", "--gpu", "h100", "--json")
    n = len(json.loads(out)["findings"])
    code, out, _ = cli("lint", "llama-3.1-70b", "--gpu", "h100")
    assert code == 0 and f"throughput regime ({n} finding{'s' if n != 1 else ''})" in out
    code, out, _ = cli("disagg", "llama-3.1-8b", "--gpu", "b200", "--prefill", "tp=1", "--decode", "tp=1", "--concurrency", "1,8")
    # each load's TTFT line: "1 request: TTFT 21.2 ms; 80%: ..." or, past x20 at 95%, "...; no interval: ..." (bands)
    lines = [x.split(":")[0] for x in out.splitlines() if re.match(r"\d+ requests?: TTFT [\d.]+ ms; ", x)]
    assert code == 0 and lines == ["1 request", "8 requests"]


def test_disagg_arrival_help_leads_with_its_default():
    # it read "closed_loop (...; waves prices the same) or burst" under "[default: waves]"
    import typer.main

    p = next(p for p in typer.main.get_command(app).commands["disagg"].params if p.name == "arrival")
    assert p.default == "waves" and p.help.startswith("How requests arrive: waves (") and "price alike here" in p.help


def test_validate_takes_a_bundled_serving_file_by_name(tmp_path, monkeypatch):
    # the README pointed at src/llm_codesign/data/measurements/, which a pip install does not have
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("validate", "--serving", "published_runs.csv", "--json")
    assert code == 0 and json.loads(out)["rows"] == 8  # the eight published TensorRT-LLM runs (docs/howto/calibrate.md)
    code, out, err = cli("validate", "--serving", "runs.csv")
    assert (code, out) == (2, "") and err == (
        "error: serving: 'runs.csv' is not valid; an existing CSV file (.csv or .csv.gz) with the canonical serving columns, or a "
        "bundled one: published_mtp_depth.csv, published_runs.csv, serving_disagg_blackwell.csv, serving_inferencex_blackwell.csv, "
        "serving_inferencex_mi355x.csv, serving_measured_blackwell.csv, serving_measured_blackwell_clean.csv, trtllm_perf_overview.csv\n")


def test_a_frontier_at_the_models_best_precision_says_so_in_words():
    # it read "every point: W/KV mxfp4/fp8, spec none, drop best"
    code, out, _ = cli("pareto", "gpt-oss-120b", "--gpu", "b200", "--gpus", "1", "--weight-dtype", "mxfp4")
    line = next(x for x in out.splitlines() if x.startswith("every point: "))
    assert code == 0 and line.endswith(", spec none, drop none (the model's best precision)")


def test_estimate_says_its_gpus_are_one_instance():
    # "Total GPUs." while `estimate --gpus 8 --tp 4` is refused and `export --gpus 8 --tp 4` exports two TP4 replicas
    import typer.main

    cmds = typer.main.get_command(app).commands
    gpus = {name: next(p.help for p in cmds[name].params if p.name == "gpus_") for name in ("estimate", "mix", "export")}
    assert gpus["estimate"] == gpus["mix"] and gpus["estimate"].startswith("GPUs of the one instance priced") and gpus["export"].startswith(
        "With --concurrency: the GPUs of one instance")  # newc8 #15: "Total GPUs." read as the sum over --replicas
    code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--tp", "4")
    # and the refusal says what to do: TP4 makes 8 / 4 = 2 copies of a 4-GPU instance, not one
    assert (code, out, err) == (2, "", "error: deployment: 'TP4 on 8 GPUs' is not valid; the parallel sizes must multiply to the GPU count: "
                                       "tp*attention_dp*kvp*pp = ep*moe_tp*pp = gpus; these sizes make an instance of 4 GPUs: ask for 4, and 2 "
                                       "replicas of it (estimate and export take replicas; pareto searches copies)\n")
    # the same refusal from the Python API names no command-line flag (it said "--gpus 4" there too)
    import llm_codesign as lc

    m = lc.get_model("llama-3.1-70b")
    with pytest.raises(lc.InputError) as e:
        lc.estimate(m, lc.deployment(m, gpu="h200", num_gpus=8, tp=4), lc.Workload(isl=1024, osl=1024, concurrency=8))
    assert str(e.value) == err.removeprefix("error: ").rstrip("\n")
    code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--tp", "3")  # 3 does not divide 8: no copies
    # and TP3 splits no 64 heads: no --gpus 3 offered, only the TP the 8 GPUs make (newc8 #16: a fix on every count refusal)
    assert (code, out) == (2, "") and err.endswith("tp*attention_dp*kvp*pp = ep*moe_tp*pp = gpus; these sizes make 3 GPUs; plans on 8 GPUs: TP8\n")


def test_import_refuses_an_engine_configuration_on_a_gpu_it_does_not_run_on(tmp_path):
    f = tmp_path / "trt.yaml"
    f.write_text("tensor_parallel_size: 8\nmax_batch_size: 64\nkv_cache_config:\n  dtype: fp8\n")
    assert cli("import", str(f), "--gpu", "mi355x", "--model", "llama-3.1-70b") == (2, "", (
        "error: backend: 'trtllm' is not valid; an engine that runs on MI355X (TensorRT-LLM runs on NVIDIA GPUs only): vllm, sglang, atom\n"))
    code, out, _ = cli("import", str(f), "--gpu", "h200", "--model", "llama-3.1-70b")
    assert code == 0 and out.startswith("llama-3.1-70b on 8x H200 SXM, TP8, W:bf16 A:bf16 KV:fp8, trtllm (defaults as 1.3.0rc1-1.3.0rc27): 64 requests")


def test_sweep_with_no_gpu_says_so(tmp_path):
    # no GPU, no engine: it was priced as no plan fitting 8 GPUs, on a hard-coded trtllm
    code, out, err = cli("sweep", "--models", "llama-3.1-8b", "--gpu", " , ", "--out", str(tmp_path / "s.parquet"))
    assert (code, out, err) == (2, "", "error: gpu: ' , ' is not valid; one or more GPU ids, comma-separated\n")
    assert not (tmp_path / "s.parquet").exists()


def test_backend_help_follows_the_registry(monkeypatch):
    """--backend's default and its vendor limits are written from spec.engines (VENDOR_ENGINE, Engine.vendors) in one place,
    the same in estimate's, export's and sweep's help."""
    from dataclasses import replace

    from llm_codesign.cli import common
    from llm_codesign.spec.engines import ENGINES, VENDOR_ENGINE, VLLM

    assert common.O_BACKEND.help == ("trtllm, vllm, sglang or atom (default: trtllm on NVIDIA GPUs, sglang on AMD's; trtllm runs on "
                                     "NVIDIA's only, atom on AMD's).")
    for command, text in (("export", "(default: trtllm on NVIDIA GPUs, sglang on AMD's; with --prefill/--decode"),
                          ("sweep", "(default: each GPU's, trtllm on NVIDIA GPUs, sglang on AMD's).")):
        assert text in " ".join(cli(command, "--help", columns=4000)[1].replace("│", " ").split())
    monkeypatch.setitem(VENDOR_ENGINE, "amd", "atom")
    monkeypatch.setitem(ENGINES, "toy", replace(VLLM, name="toy", vendors=("nvidia",)))
    assert common.vendor_engines() == "trtllm on NVIDIA GPUs, atom on AMD's"
    # each vendor worded as itself, not by its place in the registry (AMD's first read "atom on AMD GPUs, trtllm on NVIDIA's")
    monkeypatch.setattr(common, "VENDOR_ENGINE", {"amd": "atom", "nvidia": "trtllm"})
    assert common.vendor_engines() == "trtllm on NVIDIA GPUs, atom on AMD's"
    assert common._vendor_only() == "trtllm runs on NVIDIA's only, atom on AMD's, toy on NVIDIA's"


def test_sweep_runs_each_gpu_on_its_vendors_engine(tmp_path):
    pd = pytest.importorskip("pandas")
    out = str(tmp_path / "s.parquet")
    code, _, _ = cli("sweep", "--models", "llama-3.1-8b", "--gpu", "h100,mi300x", "--gpus", "1", "-o", out)  # -o as export's (newc12 #11)
    d = pd.read_parquet(out)
    assert code == 0 and sorted(set(zip(d["gpu"], d["backend"], strict=True))) == [("h100", "trtllm"), ("mi300x", "sglang")]
    assert sorted(d["task"].unique()) == list(range(d["task"].nunique()))  # tasks numbered across the two groups
    code, out, err = cli("sweep", "--models", "llama-3.1-8b", "--gpu", "h100,mi300x", "--backend", "trtllm,vllm", "--out", out)
    assert (code, out) == (2, "") and err.startswith("error: backend: 'trtllm' is not valid; an engine that runs on MI300X")


def test_disagg_across_vendors_is_refused_with_or_without_backend():
    # prefill on an H100 and decode on an MI355X: refused in one line naming decode_gpu (it priced vLLM on both, newc10 #7)
    for extra in ((), ("--backend", "trtllm")):
        code, out, err = cli("disagg", "llama-3.1-8b", "--gpu", "h100", "--decode-gpu", "mi355x", "--prefill", "tp=1", "--decode", "tp=1",
                             "--concurrency", "8", "--json", *extra)
        assert code == 2 and out == "" and err.strip() == (
            "error: decode_gpu: 'mi355x' is not valid; an NVIDIA GPU, as the prefill pool's H100 SXM: both pools run one engine "
            "build (CUDA or ROCm), and no engine hands its KV cache from one vendor's GPUs to the other's")


def test_lint_takes_the_engine_its_findings_are_priced_on():
    # lint priced every finding on the GPU vendor's engine with no way to name another (api.lint and /api/lint took one)
    code, out, _ = cli("lint", "llama-3.1-8b", "--gpu", "h100", "--regime", "latency", "--json")
    code2, out2, _ = cli("lint", "llama-3.1-8b", "--gpu", "h100", "--regime", "latency", "--json", "--backend", "vllm")
    assert code == code2 == 0 and json.loads(out) != json.loads(out2)
    code, _, err = cli("lint", "llama-3.1-8b", "--gpu", "mi355x", "--backend", "trtllm")
    assert code == 2 and "TensorRT-LLM runs on NVIDIA GPUs only" in err


def test_a_gpu_files_vendor_is_read_in_any_case(tmp_path):
    # a GPU file saying vendor = "AMD" skipped the vendor rule: TensorRT-LLM was priced on an MI355X's twin
    from pathlib import Path

    import llm_codesign

    text = (Path(llm_codesign.__file__).parent / "data/gpus/mi355x.toml").read_text()
    f = tmp_path / "mymi.toml"
    f.write_text("\n".join('id = "mymi"' if line.startswith("id ") else 'vendor = "AMD"' if line.startswith("vendor ") else line
                           for line in text.splitlines()) + "\n")
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", str(f), "--gpus", "1", "--backend", "trtllm")
    assert code == 2 and "TensorRT-LLM runs on NVIDIA GPUs only" in err
    code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", str(f), "--gpus", "1", "--json")
    assert code == 0 and json.loads(out)["backend"] == "sglang"


def test_empty_lists_are_one_line():
    # `validate --serving ""` ended in an internal TypeError; `sweep --backend ,` was priced as no plan fitting
    code, _, err = cli("validate", "--serving", "")
    assert code == 2 and err.startswith("error: serving: ") and "Traceback" not in err
    code, _, err = cli("sweep", "--models", "llama-3.1-8b", "--gpu", "h100", "--backend", ",", "--out", "x.parquet")
    assert code == 2 and err.strip() == "error: backend: ',' is not valid; one or more engines, comma-separated"


def test_a_defaulted_gpu_is_said_first():
    """newc12 #5: pareto and compare without --gpu price h200 (pareto without MODEL, llama-3.1-70b), said on standard error
    before the answer, and only where there is one (a refusal is its one line); the answer is the one --gpu h200 gives, and a --gpu given says nothing."""
    for cmd in ("compare", "pareto"):
        code, out, err = cli(cmd, "llama-3.1-8b", "--gpus", "1", "--json")
        assert (code, err) == (0, "note: no --gpu given: default --gpu h200\n")
        code, same, err = cli(cmd, "llama-3.1-8b", "--gpus", "1", "--gpu", "h200", "--json")
        drop = (lambda d: {k: v for k, v in d.items() if k != "seconds"})  # noqa: E731 (how long the search took)
        assert (code, err) == (0, "") and drop(json.loads(same)) == drop(json.loads(out))
    code, _, err = cli("pareto", "--gpu", "h100", "--gpus", "1", "--max-ttft-ms", "-1")  # refused: its one line, no note
    assert code == 2 and err.startswith("error: max_ttft_ms") and len(err.strip().splitlines()) == 1
