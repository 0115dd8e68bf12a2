"""What a newcomer meets (issue 41): one word for the engine on every command, a "did you mean" that
helps, export's interactive default, tables that read at 80 columns, units as the data sheet states them."""
import json
import sys

import pytest
from conftest import cli

from llm_codesign.cli import app
from llm_codesign.errors import close_matches, did_you_mean


def test_every_command_choosing_an_engine_takes_backend_and_engine():
    import typer.main

    group = typer.main.get_command(app)
    choosing = {}
    for name, cmd in group.commands.items():
        for p in cmd.params:
            if {"--backend", "--engine"} & set(p.opts):
                choosing[name] = set(p.opts)
    # export said --engine where every other command said --backend
    assert {"estimate", "pareto", "compare", "design", "disagg", "export", "export-point", "import", "sweep"} <= set(choosing)
    assert all({"--backend", "--engine"} <= opts for opts in choosing.values()), choosing
    code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--concurrency", "8", "--json")
    assert code == 0 and json.loads(out)["backend"] == "vllm"


@pytest.mark.parametrize("word, names, near", [
    ("batch", ["backend", "concurrency"], []),  # ratio 0.5: below the cutoff, no suggestion is better than a wrong one
    ("max-ttft", ["max-ttft-ms", "min-tps-user"], ["max-ttft-ms"]),  # a prefix of an option
    ("h100-80gb", ["a100-80gb", "h100", "h200"], ["h100", "a100-80gb"]),  # what the word begins with ranks first
    ("llama3-70b", ["llama-3.1-70b", "qwen3-32b"], ["llama-3.1-70b"]),
    ("", ["a"], []),
])
def test_close_matches(word, names, near):
    assert close_matches(word, names) == near


def test_did_you_mean_wording():
    assert [did_you_mean(x) for x in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == [
        "", "did you mean a? ", "did you mean a or b? ", "did you mean a, b or c? "]


def test_a_misspelt_model_gets_the_close_names_not_the_whole_list():
    from llm_codesign.spec.registry import entries

    code, _, err = cli("estimate", "llama3-70b", "--gpu", "h200")
    assert code == 2 and err.strip() == (
        "error: model: 'llama3-70b' is not valid; did you mean llama-3.3-70b, llama-3.1-70b or llama-2-70b? a bundled name "
        f"(`llm-codesign models` lists all {len(entries())}), a Hugging Face id, or a config.json path")


@pytest.mark.parametrize("args, line", [
    # --batch is another tool's word for requests in flight (--concurrency) or the engine's cap on them (--max-batch), never the look-alike --backend
    # --batch is another tool's word for requests in flight: --concurrency, never the look-alike --backend
    (["estimate", "llama-3.1-8b", "--gpu", "h100", "--batch", "8"],
     "error: option: '--batch' is not valid; did you mean --concurrency or --max-batch? the options are listed by `llm-codesign estimate --help`"),
    (["estimate", "llama-3.1-8b", "--gpu", "h100", "--concurency", "8"], "error: option: '--concurency' is not valid; did you mean --concurrency?"),
    (["pareto", "llama-3.1-8b", "--gpu", "h100", "--max-ttft", "500"], "error: option: '--max-ttft' is not valid; did you mean --max-ttft-ms?"),
    (["estimate", "--model", "llama-3.1-8b", "--gpu", "h100"],
     "error: option: '--model' is not valid; did you mean the MODEL argument (no flag) or --draft-model?"),
    (["paretto"], "error: command: 'paretto' is not valid; did you mean pareto? one of: gpus, engines, models, "),
])
def test_did_you_mean_on_gpus_flags_and_commands(args, line):
    code, out, err = cli(*args)
    assert code == 2 and err.startswith(line) and len(err.strip().splitlines()) == 1 and not out, err
    assert "--backend" not in err


def test_serve_without_its_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if not installed: its import raises ImportError
    code, _, err = cli("serve", "--port", "8765")
    assert code == 2 and err.strip() == "error: `llm-codesign serve` needs the serve extra (uvicorn is not installed): pip install 'llm-codesign[serve]'"


def test_memory_is_stated_usable_and_as_on_the_data_sheet():
    # H200: 150.75e9 B / 2^30 = 140.4 GiB is what the driver reports and the fit uses; it is sold as 141 GB, the GiB figure.
    # Said in GiB, the data sheet's GB beside (newc5 #10: "150.8 GB usable" beside "141 GB" read as more than installed)
    code, out, _ = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--concurrency", "64")
    said = " ".join(out.split())
    assert code == 0 and " of 140.4 GiB (the capacity nvidia-smi / rocm-smi report; 141 GB on the data sheet)" in said
    assert " GB usable" not in said


def test_export_picks_the_interactive_point_and_says_why(tmp_path):
    """No --concurrency and no SLO: the frontier point with the most tok/s/GPU at >= 20 tok/s/user and TTFT
    <= 2 s (the max-throughput batch ran Llama-3.1-70B at 10.7 tok/s/user and 2.9 s to the first token)."""
    out = tmp_path / "v.yaml"
    code, stdout, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--backend", "vllm", "-o", str(out), "--json")
    assert code == 0, err
    got = json.loads(stdout)
    assert got["chosen_by"]["default"] and got["chosen_by"]["slo"] == {"min_tps_user": 20.0, "max_ttft_ms": 2000.0}
    # the same search `pareto` runs at the checkpoint's precision: the best point meeting the SLO
    code, fr, _ = cli("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--backend", "vllm", "--weight-dtype", "bf16",
                      "--kv-dtype", "bf16", "--min-tps-user", "20", "--max-ttft-ms", "2000", "--json")
    best = max(json.loads(fr)["frontier"], key=lambda p: p["output_tok_s_per_gpu"])
    assert got["concurrency"] == best["deployment"]["concurrency_per_instance"] and got["replicas"] == best["deployment"]["replicas"]
    assert got["predicted"]["output_tok_s_per_gpu"] == pytest.approx(best["output_tok_s_per_gpu"], rel=1e-12)
    assert got["predicted"]["tok_s_per_user"] >= 20 and got["predicted"]["ttft_ms"] <= 2000
    assert f"max-num-seqs: {got['concurrency']}\n" in out.read_text()
    code, stdout, _ = cli("export", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--backend", "vllm", "-o", str(out))
    plan = f"{best['deployment']['plan']}" + (f" x{best['deployment']['replicas']}" if best["deployment"]["replicas"] > 1 else "")
    # the precision named, and how to export another: pareto searches precisions, export keeps the checkpoint's
    assert stdout.splitlines()[0] == (f"chose {plan} at {got['concurrency']} requests per instance, W:bf16 A:bf16 KV:bf16 (the "
                                      "checkpoint's; pareto searches precisions too: --weight-dtype fp8 --kv-dtype fp8 exports another): "
                                      "the frontier point with the most tok/s/GPU that meets >= 20 tok/s/user and TTFT <= 2000 ms, the "
                                      "interactive default (--min-tps-user/--max-ttft-ms set another, --concurrency a batch)")
    assert stdout.splitlines()[1] == f"wrote vllm configuration (options as vllm 0.33.0 reads them; priced at 0.11-0.14): {out}"


def test_export_slo_options(tmp_path):
    out = tmp_path / "t.yaml"
    code, stdout, _ = cli("export", "llama-3.1-8b", "--gpu", "h100", "--min-tps-user", "100", "-o", str(out), "--json")
    got = json.loads(stdout)
    assert code == 0 and got["chosen_by"]["slo"] == {"min_tps_user": 100.0, "max_ttft_ms": None} and got["predicted"]["tok_s_per_user"] >= 100
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "8", "--max-ttft-ms", "500", "-o", str(out))
    assert code == 2 and err.strip() == ("error: max_ttft_ms: 500.0 is not valid; unset with --concurrency (the SLO chooses the batch; "
                                         "give one or the other)")
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--min-tps-user", "100000", "-o", str(out))
    assert code == 2 and err.startswith("error: min_tps_user: 100000.0 is not valid; an SLO that one of the ")


def test_compare_puts_one_benchmark_in_a_models_column():
    """BF16 Llama-3.1-70B showed MMLU 79.3 and FP8 OpenLLM v1 84.29, so FP8 looked the more accurate: now
    both show OpenLLM v1 avg (instruct), the benchmark published for both (84.4 and 84.29)."""
    code, out, err = cli("compare", "llama-3.1-70b,qwen3-32b", "--gpu", "h200", "--json")
    assert code == 0, err
    rows = {(r["model"], r["weight_dtype"]): r["accuracy_compared"] for r in json.loads(out)["rows"]}
    assert {k: (v["kind"], v.get("benchmark"), v["value"]) for k, v in rows.items() if k[0] == "llama-3.1-70b"} == {
        ("llama-3.1-70b", "bf16"): ("score", "OpenLLM v1 avg (instruct)", 84.4), ("llama-3.1-70b", "fp8"): ("score", "OpenLLM v1 avg (instruct)", 84.29)}
    # no benchmark published for both: each precision's change against the reference, the proxy's here
    assert rows[("qwen3-32b", "bf16")]["kind"] == "drop" and rows[("qwen3-32b", "bf16")]["source"] == "reference"
    assert rows[("qwen3-32b", "fp8")]["source"] == "proxy"
    code, out, _ = cli("compare", "llama-3.1-70b,qwen3-32b", "--gpu", "h200", columns=80)
    lines = out.splitlines()
    assert code == 0 and all(len(line) <= 80 for line in lines)
    titles = [line.strip() for line in lines]
    assert "llama-3.1-70b" in titles and "qwen3-32b" in titles  # each model's table titled with its whole name
    cells = {line.split()[0]: line.split()[1] for line in lines if line.split()[:1] in (["bf16"], ["fp8"])}
    assert cells == {"bf16": "ref", "fp8": "-0.10±0.05%"}  # the later table's rows (qwen3-32b) overwrite llama's
    assert any(line.split()[:2] == ["fp8", "84.29"] for line in lines) and any(line.split()[:2] == ["bf16", "84.4"] for line in lines)


def test_validate_table_keeps_group_names_whole_at_80_columns():
    from importlib import resources

    csv = str(resources.files("llm_codesign").joinpath("data/measurements/trtllm_perf_overview.csv"))
    code, out, err = cli("validate", "--serving", csv, columns=80)
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.lstrip().startswith("model ")]
    assert rows and all(len(line) <= 80 for line in out.splitlines())
    assert any(line.split()[:2] == ["model", "qwen3-235b-a22b"] for line in rows)  # once folded to "model" / "qwen3-235b-a22b"
    assert all(len(line.split()) == 7 for line in rows)  # group, its name, metric, n, median, p90, signed: one line each


def test_a_bound_off_the_axes_is_neither_drawn_nor_named():
    """The ideal bound runs a decade above the frontier (Llama-3.1-70B on 8 H200: 14.2k tok/s/GPU against
    3.0k); the axes no longer stretch towards it, and the legend names only a bound that crosses them."""
    from llm_codesign.render.plot import bound_in_view

    lim = ((10.0, 200.0), (20.0, 3500.0))
    corner = {"tok_s_per_user": [552.5, 552.5, 201.5, 2.9], "output_tok_s_per_gpu": [69.0, 14236.0, 14236.0, 14236.0]}
    assert not bound_in_view(corner, lim) and not bound_in_view(None, lim)
    # both ends outside, the segment between them across the axes: in view
    assert bound_in_view({"tok_s_per_user": [1.0, 1000.0], "output_tok_s_per_gpu": [10000.0, 10.0]}, lim)
    assert bound_in_view({"tok_s_per_user": [50.0], "output_tok_s_per_gpu": [1000.0]}, lim)


def test_the_png_legend_names_the_bound_only_in_view(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    import llm_codesign as lc
    from llm_codesign.render.plot import data_limits, draw

    r = lc.pareto("llama-3.1-8b", "h100", num_gpus=1).to_dict(plot=True)
    seen = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (seen.append(fig), real(fig, *a, **k))[1])
    (x0, x1), (y0, y1) = data_limits([r])
    # a bound off the top right corner (the real one, reading each request's KV cache since fixroof, crosses the axes)
    far = {**r, "roofline_bound": {"tok_s_per_user": [x1 * 2, x1 * 3], "output_tok_s_per_gpu": [y1 * 3, y1 * 2]}}
    draw([far], tmp_path / "off.png")
    near = {**r, "roofline_bound": {"tok_s_per_user": [x0, x1], "output_tok_s_per_gpu": [y1 * 0.9, y0 * 1.1]}}
    draw([near], tmp_path / "on.png")
    legends = [[t.get_text() for t in fig.axes[0].get_legend().get_texts()] for fig in seen]
    assert max(r["roofline_bound"]["output_tok_s_per_gpu"]) > y1  # the real bound peaks above the axes' top
    assert not any("bound" in t for t in legends[0]) and sum("roofline-ideal bound" in t for t in legends[1]) == 1
    ys = [p["output_tok_s_per_gpu"] for p in r["frontier"]] + list(r["cloud"]["output_tok_s_per_gpu"])
    assert seen[0].axes[0].get_ylim()[1] == pytest.approx(max(ys) * 1.15)  # the frontier fills the axes

