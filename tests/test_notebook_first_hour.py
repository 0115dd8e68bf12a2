"""A researcher's first hour with the Python API in a notebook: a shape of one's own without a file, every bad
argument refused in one InputError line, results as flat tables, the CLI's options in the API's functions."""
import dataclasses
import json
import math
import re

import numpy as np
import pytest

import llm_codesign as lc

# a dense ~25B shape of one's own (Llama-style, untied), nothing on disk
DENSE = {"model_type": "llama", "hidden_size": 6144, "num_hidden_layers": 60, "num_attention_heads": 48, "num_key_value_heads": 8,
         "intermediate_size": 16384, "vocab_size": 128256, "max_position_embeddings": 32768}


def test_a_shape_of_ones_own_is_a_config_dict(tmp_path):
    m = lc.get_model(DENSE, name="dense25b")
    # per layer: Q and O 6144^2 each, K and V 6144 x (8 x 128) each, a gated FFN 3 x 6144 x 16384; embedding and LM head 128256 x 6144
    layer = 2 * 6144 * 6144 + 2 * 6144 * 1024 + 3 * 6144 * 16384
    assert m.name == "dense25b" and m.total_params == 60 * layer + 2 * 128256 * 6144 == 24_980_226_048
    assert lc.get_model(DENSE).name == "custom"
    (tmp_path / "dense25b").mkdir()
    (tmp_path / "dense25b" / "config.json").write_text(json.dumps(DENSE))
    # a pathlib.Path too, named by its folder, the one shape; the file's folder is its checkpoint (hf_ids: export launches it)
    got = lc.get_model(tmp_path / "dense25b" / "config.json")
    assert got.hf_ids == (str(tmp_path / "dense25b"),) and dataclasses.replace(got, hf_ids=()) == m
    # every entry point takes the dict where it takes a name, lc.deployment included
    dep = lc.deployment(DENSE, gpu="h100", num_gpus=2)
    assert dep.plan.label() == "TP2" and lc.Deployment(gpu="h100", num_gpus=2, plan=dep.plan) == dep
    w = lc.Workload(isl=2048, osl=512, concurrency=64)
    assert lc.estimate(DENSE, dep, w).tpot_s == lc.estimate(m, dep, w).tpot_s


BAD = [
    (lambda: lc.get_gpu(None), "gpu: None is not valid; a GPU id, one of: "),
    (lambda: lc.get_gpu(5), "gpu: 5 is not valid; a GPU id, one of: "),
    (lambda: lc.get_model(5), "model: 5 is not valid; a registry name (see `llm-codesign models`), a Hugging Face id, a config.json "
                              "path, or a config.json's contents as a dict"),
    (lambda: lc.get_model(DENSE, name=""), "name: '' is not valid; a non-empty string"),
    # renamed, llama-3.1-70b was 'no measured run of mine' and lost its published accuracy
    (lambda: lc.get_model("llama-3.1-70b", name="mine"), "name: 'mine' is not valid; left out unless the model is a config dict"),
    (lambda: lc.deployment(DENSE, gpu=None), "gpu: None is not valid; a GPU id, one of: "),
    (lambda: lc.deployment(DENSE, gpu="h100", tp="2"), "tp: '2' is not valid; a positive integer"),
    (lambda: lc.deployment(DENSE, gpu="h100", tp=2.5), "tp: 2.5 is not valid; a positive integer"),
    (lambda: lc.deployment(DENSE, gpu="h100", tp=math.nan), "tp: nan is not valid; a positive integer"),
    (lambda: lc.deployment(DENSE, gpu="h100", num_gpus=True), "num_gpus: True is not valid; a positive integer"),
    (lambda: lc.Deployment(gpu="h100", num_gpus=1, plan=lc.Plan(tp=0)), "plan.tp: 0 is not valid; a positive integer"),
    (lambda: lc.Deployment(gpu="h100", num_gpus=1, plan="tp=2"), "plan: 'tp=2' is not valid; a Plan, e.g. Plan(tp=4)"),
    (lambda: lc.Deployment(gpu="h100", num_gpus=1, precision="fp8"), "precision: 'fp8' is not valid; a Precision, e.g. Precision.of"),
    (lambda: lc.estimate(DENSE, "h100"), "deployment: 'h100' is not valid; a Deployment: lc.deployment(model, gpu=..., num_gpus=...)"),
    (lambda: lc.estimate(DENSE, lc.deployment(DENSE, gpu="h100", tp=2), {"isl": 8}),
     "workload: {'isl': 8} is not valid; a Workload: lc.Workload(isl=..., osl=..., concurrency=...)"),
    (lambda: lc.evaluate(DENSE, lc.deployment(DENSE, gpu="h100", tp=2), concurrency=-1),
     "concurrency: -1 is not valid; a positive integer up to 1,048,576, or an array of them"),
    (lambda: lc.evaluate(DENSE, lc.deployment(DENSE, gpu="h100", tp=2), concurrency=[0, 1]),
     "concurrency: [0, 1] is not valid; a positive integer up to 1,048,576, or an array of them"),
    (lambda: lc.evaluate(DENSE, lc.deployment(DENSE, gpu="h100", tp=2), concurrency=math.nan),
     "concurrency: nan is not valid; a positive integer up to 1,048,576, or an array of them"),
    (lambda: lc.evaluate(DENSE, lc.deployment(DENSE, gpu="h100", tp=2), concurrency=np.arange(1, 9) * 0.5),
     "concurrency: [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, '...'] is not valid; a positive integer up to 1,048,576, or an array of them"),
    (lambda: lc.pareto(DENSE, "h100", num_gpus="8"), "num_gpus: '8' is not valid; a positive integer"),
    (lambda: lc.pareto(DENSE, "h100", num_gpus=4, tp=0), "tp: 0 is not valid; a positive integer"),  # was 'gpus: 4 ...'
    (lambda: lc.pareto(DENSE, "h100", num_gpus=2, step_tokens=(4096, 0)), "step_tokens[1]: 0 is not valid; a positive integer"),
    (lambda: lc.pareto(DENSE, "h100", num_gpus=2, max_num_tokens=0), "max_num_tokens: 0 is not valid; a positive integer"),
    # the CLI's bounds (--gpus, --max-num-tokens): 10^12 tokens was a memory error, 10^9 GPUs a frontier of 10^9 replicas
    (lambda: lc.deployment(DENSE, gpu="h100", max_num_tokens=10**12),
     "max_num_tokens: 1000000000000 is not valid; a positive integer up to 16,777,216"),
    (lambda: lc.pareto(DENSE, "h100", num_gpus=10**9), "num_gpus: 1000000000 is not valid; a positive integer up to 65,536"),
    (lambda: lc.pareto(DENSE, "h100", num_gpus=2, step_tokens=(4096, (1 << 24) + 1)),
     "step_tokens[1]: 16777217 is not valid; a positive integer up to 16,777,216"),
    (lambda: lc.pareto(DENSE, "h100", num_gpus=2, min_tps_user=math.nan), "min_tps_user: nan is not valid; a finite number from 0"),
    (lambda: lc.pareto(DENSE, "h100", num_gpus=2, max_ttft_ms=0), "max_ttft_ms: 0 is not valid; a finite number above 0"),
    (lambda: lc.pareto(DENSE, "h100", workload={"isl": 8}), "workload: {'isl': 8} is not valid; a Workload: lc.Workload(isl=..., osl=...)"),
    # a frontier with these was the frontier without them
    (lambda: lc.pareto(DENSE, "h100", workload=lc.Workload(concurrency=8)), "workload.concurrency: 8 is not valid; left out: a frontier"),
    # the aggregated search prices any arrival (newc4 #1); the disaggregated one prices its pools in waves
    (lambda: lc.pareto(DENSE, "h100", workload=lc.Workload(arrival="closed_loop"), disagg=True),
     "workload.arrival: 'closed_loop' is not valid; 'waves' with disagg=True"),
    (lambda: lc.design(math.nan, "h100"), "params: nan is not valid; a total-parameter budget from 1e6 to 1e14, e.g. 70e9"),
    (lambda: lc.design("8e9", "h100"), "params: '8e9' is not valid; a total-parameter budget from 1e6 to 1e14, e.g. 70e9"),
    (lambda: lc.design(8e9, "h100", num_gpus=0), "num_gpus: 0 is not valid; an integer from 1 to 65,536"),
    (lambda: lc.design(8e9, "h100", top=0), "top: 0 is not valid; an integer from 1 to 1,000"),
    (lambda: lc.design(30e9, "h100", moe=True, active_params=-3e9),
     "active_params: -3000000000.0 is not valid; an active-parameter budget from 1e6 to 1e14, e.g. 30e9"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m.split(" is not valid")[0] + f"#{i}" for i, (_, m) in enumerate(BAD)])
def test_a_bad_argument_is_one_input_error_line(call, message):
    # each was an AttributeError, a TypeError, a ValueError, an IndexError, a ZeroDivisionError or an InvariantError from deep in the
    # code, or (NaN sizes and SLOs, a zero step budget, top=0) no error at all
    with pytest.raises(lc.InputError) as e:
        call()
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def _plain(v) -> bool:
    return v is None or type(v) in (str, int, float, bool) or (type(v) is list and all(_plain(x) for x in v))


def test_a_frontier_is_a_flat_table_of_plain_values():
    f = lc.pareto("qwen3-30b-a3b", "h100", num_gpus=2, workload=lc.Workload(isl=1024, osl=512))
    recs = f.to_records()
    assert len(recs) == len(f.points) > 3 and all(_plain(v) for r in recs for v in r.values())
    r, p = recs[0], f.points[0]
    assert (r["model"], r["gpu"], r["plan"], r["concurrency_per_instance"]) == ("qwen3-30b-a3b", "h100", p.deployment.plan.label(), p.concurrency)
    assert r["accuracy_source"] == p.accuracy["source"] and r["tokens_per_joule"] == p.energy["tokens_per_joule"]
    for m in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu"):
        assert [r[f"{m}_{e}"] for e in ("lo80", "hi80", "lo95", "hi95")] == [p.intervals[m][e] for e in ("lo80", "hi80", "lo95", "hi95")]
    # H100 lies outside the bundled runs (Blackwell): every metric's band says so, once
    assert r["interval_widened"].count("no serving run on any Hopper GPU") == 1
    df = f.to_pandas()
    assert list(df.columns) == list(r) and df["ttft_ms_hi80"].tolist() == [x["ttft_ms_hi80"] for x in recs]
    assert not any(df[c].map(lambda v: isinstance(v, dict)).any() for c in df.columns)  # the accuracy, energy, intervals dicts were cells
    # the CSV is these records' columns under the same names (to_records said accuracy_relative_drop_pct and accuracy_short
    # where the CSV says accuracy_drop_pct and accuracy): one flattening, the CSV rounding the drop to 0.001%
    import csv
    import io

    from llm_codesign.render.report import FIELDS, csv_text

    rows = list(csv.DictReader(io.StringIO(csv_text([f]))))
    assert (r["accuracy_drop_pct"], r["accuracy"]) == (p.accuracy["relative_drop_pct"], p.accuracy["short"])
    assert len(rows) == len(recs) and list(rows[0]) == list(FIELDS) and set(FIELDS) <= set(r)
    # the first point's row as a reader sees it: its deployment spelled out, no speculation a blank, the drop to 0.001%
    row = rows[0]
    assert {k: row[k] for k in FIELDS[:3] + FIELDS[7:19]} == {
        "model": "qwen3-30b-a3b", "gpu": "h100", "backend": "trtllm", "plan": "TP1 PP2", "instance_gpus": "2", "replicas": "1",
        "concurrency_per_instance": str(p.concurrency), "weight_dtype": "fp8", "activation_dtype": "fp8", "kv_dtype": "fp8",
        "spec": "", "draft_len": "0", "accuracy_source": "proxy", "accuracy_drop_pct": "0.1", "accuracy": "-0.1±0.1% (proxy)"}
    # its metrics are the point's own (TTFT and TPOT in ms) and its bands the point's intervals
    assert [float(row[k]) for k in ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms")] == pytest.approx(
        [p.tok_s_per_user, p.output_tok_s_per_gpu, p.ttft_s * 1e3, p.tpot_s * 1e3])
    assert float(row["ttft_ms_hi80"]) == pytest.approx(p.intervals["ttft_ms"]["hi80"])


def test_an_estimate_row_carries_its_intervals():
    m = lc.get_model(DENSE)
    e = lc.estimate(m, lc.deployment(m, gpu="b200", num_gpus=1), lc.Workload(isl=1024, osl=1024, concurrency=32))
    row = e.to_pandas().iloc[0]
    assert row["tpot_ms"] == e.tpot_s * 1e3 and row["tpot_ms_lo80"] == e.intervals["tpot_ms"]["lo80"]
    assert row["output_tok_s_per_gpu_hi95"] == e.intervals["output_tok_s_per_gpu"]["hi95"]
    assert "no measured run of custom" in row["interval_widened"]


def test_the_api_takes_the_clis_design_and_pareto_options():
    # design --active-params and pareto --draft-model had no keyword in the API
    r = lc.design(30e9, "h100", moe=True, active_params=3e9, max_candidates=300, top=3)
    assert r["designs"] and all(2.7e9 <= d["active_params"] <= 3.3e9 for d in r["designs"])  # within budget_tol 0.1 of 3e9
    f = lc.pareto("qwen3-32b", "h100", num_gpus=2, spec="draft", draft_model="qwen3-0.6b", draft_len=2, acceptance=2.0,
                  workload=lc.Workload(isl=512, osl=256))
    assert {p.deployment.spec.draft_model for p in f.points if p.deployment.spec} == {"qwen3-0.6b"}


def test_the_package_docstring_example_runs():
    code = "\n".join(line[4:] for line in lc.__doc__.split("\n\n")[2].splitlines())
    assert re.match(r"import llm_codesign as lc\n", code)
    exec(compile(code, "llm_codesign/__init__.py", "exec"), {})


def test_the_api_references_notebook_block_runs(capsys):
    from pathlib import Path

    section = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text().split("### In a notebook", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/api.md", "exec"), {})
    out = capsys.readouterr().out
    assert re.fullmatch(r"(h100|b200|mi355x) TP\d+( PP\d+)?( EP\d+/MoE-TP\d+)? \d+ tok/s/GPU, 80%: \d+-\d+\n"
                        r"((h100|b200) \w+ \d+ tok/s/GPU, accuracy drop \d+\.\d\d%\n){5}", out), out
    # compare's rows: the checkpoint's BF16 and what each GPU runs natively (FP8 on H100; FP8 and NVFP4 on B200)
    assert re.findall(r"^(\w+) (\w+) ", out, re.M)[1:] == [("h100", "bf16"), ("h100", "fp8"), ("b200", "bf16"), ("b200", "fp8"), ("b200", "nvfp4")]


RUNS = """source,model,gpu,num_gpus,backend,weight_dtype,isl,osl,concurrency,tp,ep,moe_tp,ttft_ms,tpot_ms,output_tok_s_per_gpu
r1,llama-3.1-8b,h100,1,vllm,bf16,1024,256,8,1,,,60,7.5,
r2,llama-3.1-8b,h100,1,vllm,bf16,1024,256,64,1,,,210,11.0,2600
r3,qwen3-30b-a3b,h100,2,vllm,bf16,1024,256,16,2,,,90,9.0,
"""


def test_validate_serving_gives_each_run_beside_its_prediction(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(RUNS)
    rep = lc.validate_serving(str(p), runs=True)
    # the MoE TP2 run's blank ep and moe_tp read as lc.deployment fills them (EP 1, MoE-TP 2): priced, not EP x MoE-TP = 1
    assert (rep["rows"], rep["modeled"], [u["source"] for u in rep["unmodeled"]]) == (3, 3, [])
    r1, r2, r3 = rep["runs"]
    assert (r2["concurrency"], r2["tp"], r2["ep"], r2["ttft_ms"], r2["output_tok_s_per_gpu"]) == (64, 1, None, 210.0, 2600.0)
    assert r1["predicted_tpot_ms_lo"] < r1["predicted_tpot_ms"] < r1["predicted_tpot_ms_hi"] and r3["predicted_tpot_ms"] > 0
    # the report's TPOT errors are these runs' own
    ape = sorted(abs(r["predicted_tpot_ms"] / r["tpot_ms"] - 1) * 100 for r in (r1, r2, r3))
    assert rep["overall"]["tpot_ms"]["median_ape"] == pytest.approx(ape[1]) and "runs" not in lc.validate_serving(str(p))
    # a file none of whose runs is priced is refused, as `validate --serving` refuses it (an empty report before): the
    # MoE run stating EP 1 x MoE-TP 1 on its 2 GPUs; named as the call names the file (`path`; the CLI's --serving)
    q = tmp_path / "moe.csv"
    q.write_text(RUNS.split("\n", 1)[0] + "\n" + RUNS.strip().splitlines()[-1].replace(",2,,,", ",2,1,1,") + "\n")
    with pytest.raises(lc.InputError, match=r"^path: '.*moe.csv' is not valid; a file with at least one row the model can price; "
                                            r"none of its 1 rows is \(line 2: ep 1 x moe_tp 1 x pp 1 = 1 GPUs, num_gpus 2 \(the parallel sizes must multiply"):
        lc.validate_serving(str(q))


def test_the_engine_is_backend_as_the_answers_and_the_cli_call_it():
    # to_dict(), to_records() and Deployment say `backend`, the CLI --backend (or --engine); the functions took engine= alone
    m = lc.get_model("llama-3.1-8b")
    assert lc.deployment(m, gpu="h100", backend="vllm") == lc.deployment(m, gpu="h100", engine="vllm") == lc.Deployment(
        gpu="h100", num_gpus=1, backend="vllm")
    assert lc.pareto(m, "h100", num_gpus=1, backend="sglang", workload=lc.Workload(isl=512, osl=128)).to_records()[0]["backend"] == "sglang"
    assert lc.lint(m, "mi355x", backend="atom") == lc.lint(m, "mi355x", engine="atom")
    with pytest.raises(lc.InputError, match=r"^backend: 'vllm' is not valid; the engine engine='sglang' names, or only one of the two$"):
        lc.deployment(m, gpu="h100", engine="sglang", backend="vllm")


def test_a_numpy_integer_is_an_integer_size():
    from llm_codesign.spec.validation import as_int

    # a size read off an array (np.int64) was refused as 'not an integer' where a Python int passed
    assert as_int("gpus", np.int64(8), hi=65_536) == 8 and type(as_int("gpus", np.int64(8))) is int
    with pytest.raises(lc.InputError, match=r"^gpus: 65537 is not valid; an integer from 1 to 65,536$"):
        as_int("gpus", np.int64(65_537), hi=65_536)
