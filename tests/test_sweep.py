"""Sweeps (explore/sweep.py): tasks that Pareto-reduce their chunk lose no frontier point, and every
scheduler gives the serial run's rows."""
import json

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from llm_codesign.cost.calibration import calibration_for  # noqa: E402
from llm_codesign.errors import InputError  # noqa: E402
from llm_codesign.explore.search import SearchSpace, search  # noqa: E402
from llm_codesign.explore.sweep import execute, frontier, plan_tasks, run_task, write_parquet  # noqa: E402
from llm_codesign.spec.engines import get_engine  # noqa: E402
from llm_codesign.spec.hardware import get_gpu  # noqa: E402
from llm_codesign.spec.registry import get_model  # noqa: E402


def small_tasks(**kw):
    return plan_tasks(["llama-3.1-8b", "qwen3-30b-a3b"], ["h100"], num_gpus=4, precisions=["fp8"], backends=["trtllm", "vllm"],
                      workloads=[(1024, 1024), (4096, 256)], **kw)


def test_tasks_cover_the_product():
    tasks = small_tasks()
    # 2 models x 1 GPU x fp8 with BF16 and FP8 KV x 2 engines x 2 workloads x instance sizes 1, 2, 4
    assert len(tasks) == 2 * 2 * 2 * 2 * 3
    assert [t.index for t in tasks] == list(range(len(tasks)))
    with pytest.raises(InputError, match="backend"):
        plan_tasks(["llama-3.1-8b"], ["h100"], num_gpus=4, backends=["tgi"])
    with pytest.raises(InputError, match="model"):
        plan_tasks(["nope"], ["h100"], num_gpus=4)


def test_local_reduction_keeps_the_whole_frontier(tmp_path):
    """The frontier of the tasks' frontiers is the frontier of one search over the whole space."""
    tasks = plan_tasks(["qwen3-30b-a3b"], ["h100"], num_gpus=8, backends=["trtllm"], workloads=[(2048, 512)])
    out = tmp_path / "s.parquet"
    write_parquet(execute(tasks), str(out))
    got = frontier(pd.read_parquet(out))
    m, g = get_model("qwen3-30b-a3b"), get_gpu("h100")
    ref = search(m, g, calibration_for(g), SearchSpace(8), isl=2048, osl=512, engine=get_engine("trtllm")).points
    pts = lambda xs: sorted((round(a, 9), round(b, 9)) for a, b in xs)  # noqa: E731
    assert pts(zip(got["tok_s_per_user"], got["output_tok_s_per_gpu"], strict=True)) == \
        pts((p.tok_s_per_user, p.output_tok_s_per_gpu) for p in ref)
    assert len(got) > 10


def test_local_cluster_gives_the_serial_rows(tmp_path):
    pytest.importorskip("distributed")
    tasks = small_tasks(gpu_hour_price="3")
    a, b = tmp_path / "serial.parquet", tmp_path / "dask.parquet"
    ta = write_parquet(execute(tasks), str(a))
    tb = write_parquet(execute(tasks, scheduler="local", workers=2, window=3), str(b))
    da, db = pd.read_parquet(a), pd.read_parquet(b)
    assert ta["rows"] == tb["rows"] == len(da) > 50 and ta["evaluated"] == tb["evaluated"]
    pd.testing.assert_frame_equal(da, db)
    assert np.all(np.isfinite(da["usd_per_m_output_tokens"]))
    assert np.allclose(da["usd_per_m_output_tokens"], 3 / 3600 / da["output_tok_s_per_gpu"] * 1e6)


def test_a_task_keeps_only_its_frontier():
    t = small_tasks()[5]
    r = run_task(t)
    assert 0 < len(r["rows"]) < r["evaluated"]
    x = np.array([row["tok_s_per_user"] for row in r["rows"]])
    y = np.array([row["output_tok_s_per_gpu"] for row in r["rows"]])
    order = np.argsort(x)
    assert np.all(np.diff(y[order]) < 0)  # along the frontier, more tok/s/user costs tok/s/GPU


def test_nothing_half_written(tmp_path):
    tasks = small_tasks()

    def results():
        yield run_task(tasks[0])
        raise RuntimeError("worker lost")

    out = tmp_path / "x.parquet"
    with pytest.raises(RuntimeError):
        write_parquet(results(), str(out))
    assert not out.exists() and not list(tmp_path.iterdir())


def test_the_stream_goes_to_a_temporary_file_its_process_names(tmp_path):
    # before: `.x.parquet.partial`, which a SIGKILL left for good; now outputs.write_all's name, which the
    # next write to the folder removes once this process is gone, in a folder made for it
    import os

    tasks = small_tasks()
    out = tmp_path / "new" / "x.parquet"
    seen = []

    def results():
        yield run_task(tasks[0])
        seen.extend(p.name for p in out.parent.iterdir())
        yield run_task(tasks[1])

    totals = write_parquet(results(), str(out))
    assert seen == [f".x.{os.getpid()}.llmcs-tmp.parquet"] and [p.name for p in out.parent.iterdir()] == ["x.parquet"]
    assert totals["tasks"] == 2 and len(pd.read_parquet(out)) == totals["rows"] > 0


def test_bad_scheduler_is_one_line():
    pytest.importorskip("distributed")
    with pytest.raises(InputError, match="scheduler"):
        list(execute(small_tasks()[:1], scheduler="nonsense"))


def test_cli_sweep(tmp_path):
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    out = tmp_path / "s.parquet"
    r = CliRunner().invoke(app, ["sweep", "--models", "llama-3.1-8b", "--gpu", "h100,b200", "--gpus", "2", "--backend", "vllm",
                                 "--isl", "1024,8192", "--osl", "512", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    totals = json.loads(r.stdout[r.stdout.index("{"):])
    df = pd.read_parquet(out)
    assert totals["rows"] == len(df) and set(df["gpu"]) == {"h100", "b200"} and set(df["isl"]) == {1024, 8192}
    assert set(df["osl"]) == {512}
    bad = CliRunner().invoke(app, ["sweep", "--models", "llama-3.1-8b", "--gpu", "h100", "--isl", "1,2,3", "--osl", "1,2",
                                   "--out", str(tmp_path / "y.parquet")])
    assert bad.exit_code == 2 and not (tmp_path / "y.parquet").exists()


def test_existing_cluster_through_dask_scheduler_address(monkeypatch):
    """An existing scheduler named by DASK_SCHEDULER_ADDRESS runs the tasks unchanged."""
    distributed = pytest.importorskip("distributed")
    tasks = small_tasks()[:6]
    serial = list(execute(tasks))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
        remote = list(execute(tasks))
    assert [r["rows"] for r in remote] == [r["rows"] for r in serial]


def test_design_on_a_local_cluster_gives_the_serial_designs():
    """design's shape chunks are sweep tasks too: a LocalCluster prices them to the serial run's figures."""
    pytest.importorskip("distributed")
    from llm_codesign.explore.design import Slo, candidates, evaluate_shapes, plans_for
    from llm_codesign.spec.precision import Precision

    g = get_gpu("h100")
    cal, prec, slo = calibration_for(g), Precision.of("bf16"), Slo("throughput")
    # a small grid (two widths, depths 8-60) so the test prices ~50 shapes, not the default 20,000
    cand = candidates(8e9, moe=False, dense_hidden=[3072, 4096], layers=np.arange(8, 61, 2), max_candidates=50)
    plan, inst = plans_for(2, g, moe=False, long_context=False)
    kw = {"inst": inst, "slo": slo, "vocab": 128256, "moe": False, "engine": get_engine("trtllm"), "num_gpus": 2}
    serial = evaluate_shapes(cand, g, cal, prec, plan, **kw)
    local = evaluate_shapes(cand, g, cal, prec, plan, scheduler="local", workers=2, **kw)
    n = len(serial[0])
    assert n >= 20 and np.isfinite(serial[0]).sum() >= 20  # shapes that fit on two H100s and meet 20 tok/s/user
    for a, b in zip(serial, local, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_sweeps_rows_carry_the_frontiers_intervals(tmp_path):
    # newc7 #10: each row's 80%/95% bounds, predictable flags and widening reasons are the ones pareto's points carry for the
    # same search (Frontier.banded, Frontier.to_records' names), and the Parquet file keeps them
    import llm_codesign as lc
    from llm_codesign.measure.intervals import PREDICTABLE_SPAN

    t = plan_tasks(["llama-3.1-8b"], ["mi300x"], num_gpus=1, precisions=["bf16"], backends=["sglang"], workloads=[(1024, 1024)])
    rows = run_task(t[0])["rows"]
    ref = lc.pareto("llama-3.1-8b", "mi300x", num_gpus=1, instance_gpus=(1,), engine="sglang", weight_dtype="bf16",
                    kv_dtype="bf16", workload=lc.Workload(isl=1024, osl=1024)).to_records()
    cols = [f"{m}_{e}" for m in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu") for e in ("lo80", "hi80", "lo95", "hi95")]
    assert len(rows) == len(ref) > 3
    by_batch = {r["concurrency_per_instance"]: r for r in ref}
    for row in rows:
        want = by_batch[row["concurrency_per_instance"]]
        assert [row[c] for c in cols] == pytest.approx([want[c] for c in cols], rel=1e-12)
        assert row["interval_widened"] == want["interval_widened"] and "CDNA3" in row["interval_widened"]
        assert row["ttft_ms_lo95"] <= row["ttft_ms_lo80"] <= row["ttft_ms_hi80"] <= row["ttft_ms_hi95"]
        assert row["ttft_ms_predictable"] == (row["ttft_ms_hi95"] / row["ttft_ms_lo95"] <= PREDICTABLE_SPAN)
    out = tmp_path / "s.parquet"
    write_parquet([{"task": 0, "rows": rows, "evaluated": 1, "seconds": 0.0}], str(out))
    df = pd.read_parquet(out)
    assert set(cols) | {"ttft_ms_predictable", "tpot_ms_predictable", "interval_widened"} <= set(df.columns)
    assert df["ttft_ms_predictable"].dtype == bool and df["ttft_ms_hi95"].tolist() == [r["ttft_ms_hi95"] for r in rows]


def test_a_format_the_engine_refuses_on_one_gpu_empties_that_cell_only(tmp_path):
    # review r8 #6: FP8 under TensorRT-LLM on an A100 (no FP8 GEMM before SM89) is refused; the sweep kept the H100 cell's
    # rows and says which cell has none, where it had aborted whole and written nothing
    import json

    from typer.testing import CliRunner

    from llm_codesign.cli import app

    out = tmp_path / "s.parquet"
    r = CliRunner().invoke(app, ["sweep", "--models", "llama-3.1-8b", "--gpu", "h100,a100", "--gpus", "1", "--precisions", "fp8",
                                 "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout)
    assert t["rows"] > 0 and out.exists() and len(t["refused"]) == 1
    assert t["refused"][0].startswith("a100 trtllm fp8: weight_dtype: 'fp8' is not valid; a format TensorRT-LLM runs on A100")


def test_a_sweeps_metrics_are_the_intervals_ones():
    # uxleft2: one definition of the metrics that carry bounds; the Parquet's band columns follow measure.intervals.METRICS
    # in its order (ttft, tpot, tok/s/user, tok/s/GPU), 4 bounds each = 16 float columns then 4 predictable flags
    from llm_codesign.explore import sweep
    from llm_codesign.measure import intervals

    assert sweep.METRICS is intervals.METRICS
    names = [c for c, _ in sweep.COLUMNS]
    start = names.index("ttft_ms_lo80")
    assert names[start:start + 20] == [f"{m}_{e}" for m in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")
                                       for e in ("lo80", "hi80", "lo95", "hi95")] + [
        "ttft_ms_predictable", "tpot_ms_predictable", "tok_s_per_user_predictable", "output_tok_s_per_gpu_predictable"]


def test_a_head_size_the_engine_has_no_kernel_for_is_refused_before_any_task(tmp_path):
    # leftV: fixN2's refusal (head_dims.check_head_dims, lint R4's line) reached a sweep only inside the task that priced
    # it, after the others had run ("sweep: 2/5 tasks ..." then the error): Gemma 4's head_dim 512 under TensorRT-LLM on
    # an H200 (Blackwell only) is now refused by plan_tasks, as pareto refuses it, before any task runs
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    assert len(plan_tasks(["gemma-4-26b-a4b"], ["b200"], num_gpus=1, precisions=["fp8"], backends=["trtllm"])) == 2  # BF16/FP8 KV
    with pytest.raises(InputError, match=r"^head_dim: 512 is not valid; a head size trtllm runs on H200 SXM: .*\(lint R4\); "
                                         r"--backend vllm or sglang run it$"):
        plan_tasks(["gemma-4-26b-a4b"], ["b200", "h200"], num_gpus=1, backends=["trtllm"])
    plan_tasks(["gemma-4-26b-a4b"], ["h200"], num_gpus=1, backends=["vllm"])  # an engine that runs it: planned
    out = tmp_path / "s.parquet"
    r = CliRunner().invoke(app, ["sweep", "gemma-4-26b-a4b", "--gpu", "b200,h200", "--gpus", "1", "--out", str(out)])
    assert r.exit_code == 2 and not out.exists()
    assert "tasks" not in r.output and r.output.startswith("error: head_dim: 512 is not valid; a head size trtllm runs on H200")
