"""The public API: what `import llm_codesign` exports, and the README's first Python block, run as it stands."""
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import llm_codesign as lc

README = Path(__file__).resolve().parents[1] / "README.md"


def test_public_names():
    for name in ("get_model", "get_gpu", "Plan", "Precision", "Deployment", "Workload", "estimate", "pareto", "lint", "design",
                 "validate_serving", "InputError", "evaluate"):
        assert name in lc.__all__ and hasattr(lc, name)


def test_readme_python_block_runs(capsys):
    section = README.read_text().split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert re.search(r"TTFT \d+ ms, TPOT [\d.]+ ms, \d+ tok/s/GPU", out)
    assert "tok_s_per_user" in out and "plan" in out


def test_evaluate_is_array_valued_and_matches_estimate():
    m = lc.get_model("llama-3.1-70b")
    dep = lc.deployment(m, gpu="b200", num_gpus=8)
    many = lc.evaluate(m, dep, lc.Workload(isl=1024, osl=1024), concurrency=np.array([1, 8, 64]))
    assert many.tpot_s.shape == (3,) and np.all(np.diff(many.tpot_s) > 0)  # more requests share each step
    one = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=64))
    assert one.tpot_s == pytest.approx(many.tpot_s[2], rel=1e-12)
    assert many.to_dict()["concurrency"] == [1, 8, 64]


def test_bottleneck_is_read_from_the_step_the_metrics_time(monkeypatch):
    # Llama-3.1-70B on B200 TP8 at 64 requests: the decode bottleneck was named from operators priced
    # with the isolated-kernel calibration (14.1 ms a step) while TPOT used the in-step one (~8 ms)
    from llm_codesign.serve import estimate as est
    from llm_codesign.serve.aggregated import op_step_time

    # the decode step's resources (serve.estimate._decode_bound sets the host rows beside them: fixcg)
    seen = []
    real = est.resource_times
    monkeypatch.setattr(est, "resource_times", lambda ops, per=0.0: seen.append((ops, per)) or real(ops, per))
    m = lc.get_model("llama-3.1-70b")
    r = lc.estimate(m, lc.deployment(m, gpu="b200", tp=8), lc.Workload(isl=1024, osl=1024, concurrency=64), breakdown=True)
    ops, per = seen[0]
    assert per == pytest.approx(0.7 * 0.25e-6)  # TensorRT-LLM's PDL on Blackwell, taken off the bottleneck's operators too
    step_ms = sum(float(np.sum(op_step_time(o, per))) for o in ops) * 1e3
    assert step_ms == pytest.approx(sum(o.time_s for o in r.breakdown if not o.what) * 1e3, rel=1e-9)  # the operator rows
    assert step_ms <= r.tpot_s * 1e3


def test_frontier_to_pandas_holds_each_deployment():
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=2, workload=lc.Workload(isl=512, osl=128))
    df = f.to_pandas()
    assert len(df) == len(f.points) > 0 and {"tp", "weight_dtype", "attn_weight_dtype", "backend"} <= set(df.columns)
    assert all(isinstance(p, lc.FrontierPoint) and isinstance(p.deployment, lc.Deployment) for p in f.points)
    assert df["tp"].tolist() == [p.deployment.plan.tp for p in f.points]
    assert df["ttft_ms"].tolist() == [p.ttft_s * 1e3 for p in f.points]


def _cli_json(*args):
    import json

    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_estimate_to_dict_is_what_the_cli_prints():
    # the typed Estimate's to_dict(), key for key and in order, is `estimate --json` (speculation,
    # breakdown, prefix cache and cost included); the typed figures are its SI units
    import json

    from llm_codesign.explore.pricing import cost_of

    m = lc.get_model("deepseek-r1")
    dep = lc.deployment(m, gpu="b200", num_gpus=8, attention_dp=8, ep=8, spec="mtp", draft_len=3, acceptance_rates="0.85,0.7,0.6")
    e = lc.estimate(m, dep, lc.Workload(isl=2048, osl=512, concurrency=256, prefix_hit=0.25), breakdown=True)
    e = replace(e, cost=cost_of(dep.gpu, 4.0, e.output_tok_s_per_gpu, 2048, 512))
    want = _cli_json("estimate", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--attention-dp", "8", "--ep", "8", "--spec", "mtp",
                     "--draft-len", "3", "--acceptance-rates", "0.85,0.7,0.6", "--isl", "2048", "--osl", "512", "--concurrency", "256",
                     "--prefix-hit", "0.25", "--breakdown", "--gpu-hour-price", "4")
    got = json.loads(json.dumps(e.to_dict()))
    assert list(got) == list(want) and got == want
    assert got["ttft_ms"] == e.ttft_s * 1e3 and got["memory"]["weights_gb"] == e.memory.weights / 1e9
    assert got["spec"]["draft_len"] == e.spec.draft_len == 3 and len(got["breakdown"]) == len(e.breakdown) > 10
    assert e.deployment is dep and e.fits == (e.concurrency <= e.kv_seqs) and e.queued == max(e.concurrency - e.max_batch, 0) and e.to_pandas()["tpot_ms"].tolist() == [got["tpot_ms"]]


def test_frontier_points_hold_their_deployment_and_print_what_the_cli_prints():
    # api.pareto and `pareto --json` give the same frontier; each point's record rebuilds the very
    # Deployment it holds (step budget resolved), and its to_dict() is the CLI's point
    f = lc.pareto("qwen3-30b-a3b", "h100", num_gpus=2, workload=lc.Workload(isl=1024, osl=512), engine="vllm", kv_dtype="fp8")
    want = _cli_json("pareto", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "2", "--isl", "1024", "--osl", "512", "--backend", "vllm",
                     "--kv-dtype", "fp8")
    got = f.to_dict()
    assert [k for k in got if k != "seconds"] == [k for k in want if k != "seconds"]
    assert {k: v for k, v in got.items() if k != "seconds"} == {k: v for k, v in want.items() if k != "seconds"}
    assert len(f.points) > 5
    for p in f.points:
        rec = p.to_dict()["deployment"]
        assert lc.Deployment.from_dict(rec) == p.deployment
        assert (rec["instance_gpus"], rec["concurrency_per_instance"], rec["replicas"]) == (p.deployment.num_gpus, p.concurrency, p.replicas)
        assert p.deployment.max_num_tokens == 8192 and p.deployment.backend == "vllm"  # vLLM's budget on H100, resolved


def test_cli_pareto_and_api_pareto_search_one_space():
    # `pareto` and llm_codesign.pareto build their space with SearchSpace.build: fixed sizes, speculation's
    # draft lengths, a step-budget grid and the prefix cache give one frontier (the API ignored the
    # workload's prefix_hit before)
    f = lc.pareto("deepseek-r1", "b200", num_gpus=8, workload=lc.Workload(isl=2048, osl=256, prefix_hit=0.5), ep=8, attention_dp=8,
                  spec="mtp", acceptance_rates="0.8,0.6", step_tokens=(2048, 8192), kv_dtype="fp8")
    want = _cli_json("pareto", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--isl", "2048", "--osl", "256", "--prefix-hit", "0.5",
                     "--ep", "8", "--attention-dp", "8", "--spec", "mtp", "--acceptance-rates", "0.8,0.6", "--max-num-tokens-grid",
                     "2048,8192", "--kv-dtype", "fp8")
    got = f.to_dict()
    assert {k: v for k, v in got.items() if k != "seconds"} == {k: v for k, v in want.items() if k != "seconds"}
    assert got["prefix_hit"] == 0.5 and len(f.points) > 5
    assert {(p.deployment.plan.adp, p.deployment.plan.ep, p.deployment.plan.moe_tp) for p in f.points} == {(8, 8, 1)}
    assert {p.deployment.max_num_tokens for p in f.points} <= {2048, 8192}
    assert {p.deployment.spec.k if p.deployment.spec else 0 for p in f.points} <= {0, 1, 2, 3, 4, 5}


def test_search_space_build_golden():
    from llm_codesign.explore.search import SearchSpace

    m, g = lc.get_model("llama-3.1-70b"), lc.get_gpu("h200")
    s = SearchSpace.build(m, g, num_gpus=16, instance_gpus=(8, 16), tp=8, kvp=1, kv_dtype="fp8", spec=lc.SpecDecoding("eagle3", 3, 2.5),
                          draft_len=2, step_tokens=[4096])
    assert (s.num_gpus, s.tp, s.pp, s.ep, s.moe_tp, s.adp, s.kvp, s.instance_gpus) == (16, (8,), None, None, None, None, (1,), (8, 16))
    assert s.spec_ks == (0, 2) and s.step_tokens == (4096,)
    # the KV format fixed, the weights the checkpoint's (BF16) and the FP8 the H200 runs natively
    assert [p.label() for p in s.precisions] == [lc.Precision.of("bf16", kv="fp8").label(), lc.Precision.of("fp8", kv="fp8").label()]
    plain = SearchSpace.build(m, g, num_gpus=8)
    assert plain == SearchSpace(8) and SearchSpace.build(m, g, num_gpus=8, spec=lc.SpecDecoding("eagle3", 3, 2.0)).spec_ks == (0, 1, 2, 3, 4, 5)


def test_the_api_prices_each_gpus_vendor_engine_and_refuses_one_it_cannot_run():
    """lc.deployment, lc.pareto, lc.design and lc.lint resolve the engine as the CLI does (spec.engines.engine_for): an
    MI355X prices SGLang unnamed and refuses TensorRT-LLM in the CLI's line (they used to price TensorRT-LLM there)."""
    m = lc.get_model("llama-3.1-8b")
    assert lc.deployment(m, gpu="mi355x", num_gpus=1).backend == "sglang"
    assert lc.deployment(m, gpu="h200", num_gpus=1).backend == "trtllm"
    refusal = re.escape("backend: 'trtllm' is not valid; an engine that runs on MI355X (TensorRT-LLM runs on NVIDIA GPUs only): "
                        "vllm, sglang, atom")
    for call in (lambda: lc.deployment(m, gpu="mi355x", num_gpus=1, engine="trtllm"),
                 lambda: lc.pareto(m, "mi355x", num_gpus=1, engine="trtllm"),
                 lambda: lc.design(8e9, "mi355x", engine="trtllm"),
                 lambda: lc.lint(m, "mi355x", engine="trtllm")):
        with pytest.raises(lc.InputError, match=refusal):
            call()
    pts = lc.pareto(m, "mi355x", num_gpus=1, tp=1, weight_dtype="bf16").points
    assert pts and {p.deployment.backend for p in pts} == {"sglang"}


def test_lint_reprices_on_the_gpus_vendor_engine():
    """lint's findings are priced on the MI355X's SGLang unless told otherwise: Llama-3.1-70B's R3 (width for depth) TPOTs
    are SGLang's (6.15 ms against 5.27 ms wider), not TensorRT-LLM's (6.09 ms, 5.21 ms) as they were."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.lint import lint
    from llm_codesign.spec.engines import SGLANG, TRTLLM

    m, g = lc.get_model("llama-3.1-70b"), lc.get_gpu("mi355x")
    cal = calibration_for(g)
    default, sglang, trtllm = (lint(m, g, cal, "long-context", engine=e) for e in (None, SGLANG, TRTLLM))
    assert [f.rule for f in default] == ["R3"] and [f.figures for f in default] == [f.figures for f in sglang] != [f.figures for f in trtllm]
    assert lc.lint(m, "mi355x", regime="long-context") == lc.lint(m, "mi355x", regime="long-context", engine="sglang")
