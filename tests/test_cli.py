import json
import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "COLUMNS": "160"}


def run(*args):
    return subprocess.run([sys.executable, "-m", "llm_codesign.cli", *args], capture_output=True, text=True, env=ENV, timeout=300)


def test_gpus_and_models_json():
    g = json.loads(run("gpus", "--json").stdout)
    assert {x["id"] for x in g} >= {"h100", "b200", "mi355x"}
    m = json.loads(run("models", "--json").stdout)
    row = next(x for x in m if x["name"] == "gpt-oss-120b")
    assert {"name", "hf_ids", "total_params", "active_params"} <= set(row)


def test_roofline_json_keys_and_floor():
    r = run("roofline", "llama-3.1-8b", "--gpu", "h100", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"name", "flops", "bytes", "intensity", "bound", "time_s"} <= set(d["ops"][0])
    # batch-1 BF16 decode cannot beat weight bytes / HBM bandwidth (16 GB / 3.35 TB/s ~ 4.5 ms)
    assert d["totals"]["time_s"] >= 2 * (8.03e9 - 128256 * 4096) / 3.35e12


def test_estimate_json_keys():
    r = run("estimate", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--tp", "8", "--weight-dtype", "fp8",
            "--concurrency", "16", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu", "max_batch"):
        assert d[k] > 0
    assert {"weights_gb", "kv_gb", "free_gb"} <= set(d["memory"])


def test_estimate_spec_flags():
    r = run("estimate", "deepseek-r1", "--gpu", "b200", "--tp", "8", "--ep", "8", "--spec", "mtp", "--draft-len", "3",
            "--acceptance-rates", "0.85,0.7,0.6", "--concurrency", "1", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["spec"]["speedup_at_1"] > 1 and d["accepted_per_step"] == pytest.approx(1 + 0.85 + 0.85 * 0.7 + 0.85 * 0.7 * 0.6)


@pytest.mark.parametrize("args,needle", [
    (("estimate", "llama-9", "--gpu", "h100"), "model"),
    (("estimate", "llama-3.1-8b", "--gpu", "h900"), "gpu"),
    (("estimate", "llama-3.1-70b", "--gpu", "h100", "--tp", "3"), "heads"),
    (("estimate", "llama-3.1-405b", "--gpu", "h100", "--tp", "1"), "GB per GPU"),
    (("roofline", "llama-3.1-8b", "--gpu", "h100", "--batch", "-4"), "batch"),
    (("estimate", "nemotron-h-56b", "--gpu", "h100"), "Mamba"),
    (("estimate", "llama-3.1-8b", "--gpu", "h100", "--weight-dtype", "fp3"), "weight_dtype"),
    (("pareto", "llama-3.1-8b", "--gpu", "h100", "--plot", "/nonexistent/dir/x.png"), "plot"),
])
def test_bad_input_is_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and needle in lines[0]


def test_malformed_config(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"hidden_size": 64}')
    r = run("roofline", str(p), "--gpu", "h100")
    assert r.returncode == 2 and "num_hidden_layers" in r.stderr and "Traceback" not in r.stderr


def test_pareto_json_and_files(tmp_path):
    r = run("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--isl", "512", "--osl", "128", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["evaluated"] > 0 and d["seconds"] > 0
    assert {"tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "deployment"} <= set(d["frontier"][0])
    assert (tmp_path / "frontier.png").exists() and (tmp_path / "report.html").exists() and (tmp_path / "frontier.csv").exists()
