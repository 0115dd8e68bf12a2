"""Small CLI frictions a newcomer review of main found (branch uxb): export's precision and the release its options were
read at, a misspelt GPU key, a command line given to `import` as the argument, -o's extension, empty and far-off output
paths, repeated names in comma lists, "missing" inputs, "1 GPU each"."""
import json

import pytest
from conftest import cli

from llm_codesign.errors import InputError, MissingInput, check_output_path
from llm_codesign.explore.export import engine_spec
from llm_codesign.spec.engines import ENGINES, EXPORTABLE


def test_export_at_pareto_precision_reaches_pareto_best_point(tmp_path):
    # pareto's best point at 50 tok/s/user is FP8 (TP2 x4, 1634 tok/s/GPU on 8x H200); export keeps the checkpoint's BF16
    # (TP8, 812) unless told: its chose line names the precision and the flags that export pareto's
    args = ["llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--min-tps-user", "50"]
    code, fr, err = cli("pareto", *args, "--json")
    assert code == 0, err
    best = max(json.loads(fr)["frontier"], key=lambda p: p["output_tok_s_per_gpu"])
    assert best["deployment"]["weight_dtype"] == best["deployment"]["kv_dtype"] == "fp8"
    code, out, err = cli("export", *args, "-o", str(tmp_path / "t.yaml"))
    assert code == 0, err
    assert out.splitlines()[0] == ("chose TP8 at 126 requests per instance, W:bf16 A:bf16 KV:bf16 (the checkpoint's; pareto searches "
                                   "precisions too: --weight-dtype fp8 --kv-dtype fp8 exports another): the frontier point with the "
                                   "most tok/s/GPU that meets >= 50 tok/s/user")
    code, out, err = cli("export", *args, "--weight-dtype", "fp8", "--kv-dtype", "fp8", "-o", str(tmp_path / "t.yaml"), "--json")
    got = json.loads(out)
    assert code == 0 and got["chosen_by"]["plan"] == best["deployment"]["plan"] and got["replicas"] == best["deployment"]["replicas"]
    assert got["predicted"]["output_tok_s_per_gpu"] == pytest.approx(best["output_tok_s_per_gpu"], rel=1e-12)
    code, out, _ = cli("export", *args, "--weight-dtype", "fp8", "--kv-dtype", "fp8", "-o", str(tmp_path / "t.yaml"))
    assert out.splitlines()[0] == ("chose TP2 x4 at 66 requests per instance, W:fp8 A:fp8 KV:fp8: the frontier point with the most "
                                   "tok/s/GPU that meets >= 50 tok/s/user")


@pytest.mark.parametrize("name", [n for n in EXPORTABLE if n in ENGINES])
def test_engines_names_the_release_export_reads(name):
    # export wrote "vllm 0.33.0" while `engines` said 0.11-0.14: the table names the release export's options are read at
    assert engine_spec(name)["version"] in ENGINES[name].versions


def test_export_says_its_options_release_and_may_differ(tmp_path):
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "8", "-o", str(tmp_path / "t.yaml"))
    assert code == 0, err
    # newc8 #14: both releases said plainly, the options' and the priced (it read "options read at trtllm 1.4.0rc4; newer releases
    # may differ" above "defaults as 1.3.0rc1-1.3.0rc27", and no release to install): 1.4.0rc4 is none of the priced ones
    assert out.splitlines()[0] == (f"wrote trtllm configuration (options as trtllm 1.4.0rc4 reads them; priced at 1.3.0rc1-1.3.0rc27): "
                                   f"{tmp_path / 't.yaml'}")


def test_import_takes_a_command_line_as_its_argument(tmp_path):
    line = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8 --max-num-seqs 64"
    f = tmp_path / "serve.sh"
    f.write_text(line + "\n")
    code, from_file, err = cli("import", str(f), "--gpu", "h200", "--json")
    assert code == 0, err
    code, from_arg, err = cli("import", line, "--gpu", "h200", "--json")
    assert code == 0, err
    assert json.loads(from_arg) == json.loads(from_file)
    assert json.loads(from_arg)["deployment"]["tp"] == 8 and json.loads(from_arg)["concurrency"] == 64
    for cmd in ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2",
                "CUDA_VISIBLE_DEVICES=0,1 trtllm-serve meta-llama/Llama-3.1-8B --tp_size 2"):
        code, out, err = cli("import", cmd, "--gpu", "h100", "--json")
        assert code == 0 and json.loads(out)["deployment"]["tp"] == 2, err
    # no GPU: the message names the command line, not a temporary file
    code, _, err = cli("import", line)
    assert code == 2 and err.strip() == ("error: gpu: missing; the command line names no GPU (an engine's configuration does not): "
                                         "give --gpu, the one it runs on (e.g. --gpu h200)")
    code, _, err = cli("import", str(tmp_path / "nosuch.yaml"), "--gpu", "h100")
    assert code == 2 and err.strip() == (f"error: path: '{tmp_path / 'nosuch.yaml'}' is not valid; an existing file (an export, an "
                                         "engine's YAML or command line) or an engine's command line itself: 'vllm serve MODEL ...', "
                                         "'python -m sglang.launch_server ...' or 'trtllm-serve MODEL ...'")


@pytest.mark.parametrize("engine,name,valid", [
    ("sglang", "sg.yaml", "a .sh path (sglang's launch file is a shell script)"),
    ("vllm", "v.sh", "a .yaml path (vllm's launch file is YAML)"),
    ("trtllm", "t.json", "a .yaml path (trtllm's launch file is YAML)"),
])
def test_export_refuses_an_extension_of_another_kind(tmp_path, engine, name, valid):
    out = tmp_path / name
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--backend", engine, "--concurrency", "8", "-o", str(out))
    assert code == 2 and err.strip() == f"error: out: '{out}' is not valid; {valid}" and not out.exists()


def test_export_takes_matching_or_no_extension(tmp_path):
    for engine, name in (("sglang", "sg.sh"), ("sglang", "sg"), ("vllm", "v.yml"), ("vllm", "v.txt")):
        code, out, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--backend", engine, "--concurrency", "8", "-o", str(tmp_path / name))
        assert code == 0 and (tmp_path / name).read_text().startswith("#!/bin/sh" if engine == "sglang" else "# llm-codesign export"), err


@pytest.mark.parametrize("args,field", [
    (["pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--out", ""], "out"),  # wrote nothing and exited 0
    (["pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--csv", ""], "csv"),
    (["export", "llama-3.1-8b", "--gpu", "h100", "-o", ""], "out"),
])
def test_an_empty_output_path_is_one_line(args, field, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(*args)
    assert code == 2 and err.strip() == f"error: {field}: '' is not valid; a path (an empty one names no file)" and out == ""
    assert list(tmp_path.iterdir()) == []


def test_far_off_output_folders_are_refused_not_made(tmp_path):
    # --csv /nonexistent/dir/x.csv made /nonexistent/dir at the filesystem root
    far = tmp_path / "no" / "such" / "x.csv"
    code, _, err = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--csv", str(far))
    assert code == 2 and err.strip() == (f"error: csv: '{far}' is not valid; a path whose folder, or the folder above it, exists "
                                         f"({tmp_path / 'no'} does not: create it first)")
    assert list(tmp_path.iterdir()) == []
    near = tmp_path / "new" / "x.csv"  # the file's own folder, whose parent exists: made
    code, _, err = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--csv", str(near))
    assert code == 0 and near.read_text().startswith("model,"), err


def test_check_output_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # paths inside the working folder create what they name, relative or absolute (review of uxb: `$PWD/a/b/c/x.csv` was
    # refused where `a/b/c/x.csv`, the same place, was taken)
    for ok, folder in (("x.csv", False), ("a/x.csv", False), ("out/ds", True), ("a/b/c/x.csv", False), (str(tmp_path / "a" / "x.csv"), False),
                       (str(tmp_path / "a" / "b" / "c" / "x.csv"), False), (str(tmp_path / "a" / "b"), True)):
        check_output_path("out", ok, folder=folder)
    outside = tmp_path.parent / f"{tmp_path.name}-zz"  # a sibling of the working folder that does not exist
    for bad, folder in ((str(outside / "yy" / "x.csv"), False), (str(outside / "yy"), True), (f"../{outside.name}/yy/x.csv", False),
                        # the missing folder named is the resolved path's top one, not `a` (which `a/..` climbs through)
                        (f"a/../../{outside.name}/yy/x.csv", False)):
        with pytest.raises(InputError) as e:
            check_output_path("out", bad, folder=folder)
        assert str(e.value) == (f"out: {bad!r} is not valid; a path whose folder, or the folder above it, exists ({outside} does not: "
                                "create it first)")
    # a quoted ~ reaches no shell: refused, where it made a folder named "~"
    with pytest.raises(InputError) as e:
        check_output_path("out", "~/new/x.yaml")
    assert str(e.value) == "out: '~/new/x.yaml' is not valid; a path without a leading ~ (no shell expanded it: write $HOME/... or an absolute path)"
    assert not any(tmp_path.iterdir())


def test_repeated_names_are_priced_once():
    code, two, err = cli("pareto", "llama-3.1-8b,llama-3.1-8b", "--gpu", "h100,h100", "--gpus", "1", "--json")
    assert code == 0, err
    code, one, _ = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--json")
    two, one = json.loads(two), json.loads(one)
    assert "comparisons" not in two and {**two, "seconds": 0} == {**one, "seconds": 0}  # one search, as for the names given once
    code, rows, err = cli("compare", "llama-3.1-8b,llama-3.1-8b", "--gpu", "h100,h100", "--gpus", "1", "--json")
    assert code == 0, err
    assert [(r["model"], r["gpu"], r["weight_dtype"]) for r in json.loads(rows)["rows"]] == [("llama-3.1-8b", "h100", "bf16"),
                                                                                            ("llama-3.1-8b", "h100", "fp8")]


def test_a_missing_input_reads_missing():
    assert str(MissingInput("model", "give --model NAME")) == "model: missing; give --model NAME"


def test_one_gpu_each_is_singular(tmp_path):
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--concurrency", "8", "--replicas", "2", "--backend", "vllm",
                       "-o", str(tmp_path / "v.yaml"))
    assert code == 0, err
    assert "# run 2 instances of this configuration behind a load balancer (1 GPU each)\n" in (tmp_path / "v.yaml").read_text()


def test_import_command_line_finds_its_config_in_the_working_folder(tmp_path, monkeypatch):
    # review of uxb: `--config x.yaml` in a quoted command line was looked for beside a temporary file and always refused
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text("max_num_seqs: 32\n")
    code, out, err = cli("import", "vllm serve meta-llama/Llama-3.1-8B-Instruct --config x.yaml", "--gpu", "h100", "--json")
    assert code == 0 and json.loads(out)["concurrency"] == 32, err
    code, _, err = cli("import", "vllm serve meta-llama/Llama-3.1-8B-Instruct --config nosuch.yaml", "--gpu", "h100")
    assert code == 2 and err.strip() == (f"error: config: 'nosuch.yaml' is not valid; a file in the working folder {tmp_path} or an "
                                         "absolute path (the configuration names it)")
    assert "llm-codesign-import" not in err


def test_import_long_command_line_and_long_name(tmp_path, monkeypatch):
    # over 255 characters without "/": Path.exists() raised "File name too long" before the command line was recognised
    monkeypatch.chdir(tmp_path)
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct" + " --max-num-seqs 8" * 20
    assert len(line) > 255
    code, out, err = cli("import", line, "--gpu", "h100", "--json")
    assert code == 0 and json.loads(out)["concurrency"] == 8, err
    code, _, err = cli("import", "x" * 300, "--gpu", "h100")
    # a text past 256 characters quoted by its first 60 and its length (errors.quoted, fixN5c)
    assert code == 2 and err.strip().startswith(f"error: path: '{'x' * 60}'... (300 characters) is not valid; an existing file")


@pytest.mark.parametrize("tail", ["$(touch made)", "; touch made", "`touch made`", "&& touch made"])
def test_import_never_runs_the_command_line(tmp_path, monkeypatch, tail):
    # shlex only: what a shell would run is a word to it (refused or ignored), never executed
    monkeypatch.chdir(tmp_path)
    cli("import", f"vllm serve meta-llama/Llama-3.1-8B-Instruct {tail}", "--gpu", "h100", "--json")
    assert not (tmp_path / "made").exists() and list(tmp_path.iterdir()) == []


def test_repeats_by_what_they_name_are_priced_once():
    # review of uxb: repeats were dropped as typed, so "h100,H100" and "qwen3-0.6b,Qwen/Qwen3-0.6B" ran twice
    code, one, err = cli("pareto", "qwen3-0.6b", "--gpu", "h100", "--gpus", "1", "--json")
    assert code == 0, err
    for models, gpus in (("qwen3-0.6b, qwen3-0.6b", "h100,H100"), ("qwen3-0.6b,Qwen/Qwen3-0.6B", "h100")):
        code, two, err = cli("pareto", models, "--gpu", gpus, "--gpus", "1", "--json")
        assert code == 0, err
        assert "comparisons" not in json.loads(two) and {**json.loads(two), "seconds": 0} == {**json.loads(one), "seconds": 0}
        code, rows, err = cli("compare", models, "--gpu", gpus, "--gpus", "1", "--json")
        assert code == 0, err
        assert {(r["model"], r["gpu"]) for r in json.loads(rows)["rows"]} == {("qwen3-0.6b", "h100")}
        assert len(json.loads(rows)["rows"]) == len({r["weight_dtype"] for r in json.loads(rows)["rows"]})  # each precision once


@pytest.mark.parametrize("gpu,hint", [
    ("a100", " (the checkpoint's)"),  # FP8 was suggested, then refused: the A100 runs none of the lower formats
    ("h100", " (the checkpoint's; pareto searches precisions too: --weight-dtype fp8 --kv-dtype fp8 exports another)"),
    ("b200", " (the checkpoint's; pareto searches precisions too: --weight-dtype fp8 --kv-dtype fp8 or --weight-dtype nvfp4 "
             "--kv-dtype fp8 exports another)"),
])
def test_export_suggests_only_precisions_the_gpu_runs(tmp_path, gpu, hint):
    code, out, err = cli("export", "llama-3.1-8b", "--gpu", gpu, "-o", str(tmp_path / "t.yaml"))
    assert code == 0, err
    first = " ".join(out.split())  # the console wraps
    assert first.startswith("chose TP1 at ") and f"W:bf16 A:bf16 KV:bf16{hint}: the frontier point" in first
    if gpu == "a100":  # and what it no longer suggests is refused there
        code, _, err = cli("export", "llama-3.1-8b", "--gpu", gpu, "--weight-dtype", "fp8", "--kv-dtype", "fp8", "-o", str(tmp_path / "u.yaml"))
        assert code == 2


def test_lc_import_config_takes_a_command_line_as_the_cli_does(tmp_path, monkeypatch):
    # one code path (explore.export.import_config): the CLI's argument and lc.import_config's price a command line alike
    import llm_codesign as lc

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text("max_num_seqs: 32\n")
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct --config x.yaml"
    r = lc.import_config(line, gpu="h100")
    assert r.path == line and r.concurrency == 32 and r.deployment.gpu.id == "h100"
    code, out, err = cli("import", line, "--gpu", "h100", "--json")
    assert code == 0 and json.loads(out) == r.to_dict(), err
