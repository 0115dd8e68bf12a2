"""estimate's breakdown: its rows are the sums the metrics were made of (serve.estimate.step_rows), so the decode rows'
shares sum to TPOT and the first-token rows to TTFT, and the host rows are the engine's fitted costs times what they
are paid for (issue 40, docs/modelling-notes.md#uxd-breakdown)."""
import json
import tomllib
from pathlib import Path

import pytest

import llm_codesign as lc

FITTED = Path(lc.__file__).parent / "data" / "calibration" / "fitted.toml"


def _fitted(name: str, engine: str) -> float:
    """An engine's host cost as the bundled profile states it (read from the file, so a re-fit moves the goldens with it)."""
    return tomllib.loads(FITTED.read_text())["default"][name][engine]


def _rows(est) -> tuple[dict, dict]:
    d = est.to_dict()
    dec = {o["name"]: o for o in d["breakdown"] if o["phase"] == "decode"}
    first = {o["name"]: o for o in d["breakdown"] if o["phase"] == "first token"}
    return dec, first


@pytest.mark.parametrize("model,gpu,engine,plan,conc,batch,pp", [
    # vLLM, one H100, 16 requests: every one runs, one stage (the review's case: 7.93 ms of kernels in 8.65 ms then)
    ("llama-3.1-8b", "h100", "vllm", dict(num_gpus=1), 16, 16, 1),
    # TensorRT-LLM, TP4 x PP2 on B200, 64 requests: 32 a stage's micro-batch, each step counted on both stages
    ("llama-3.1-70b", "b200", "trtllm", dict(num_gpus=8, tp=4, pp=2), 64, 32, 2),
])
def test_rows_sum_to_tpot_and_ttft_and_the_host_rows_are_the_fitted_costs(model, gpu, engine, plan, conc, batch, pp):
    m = lc.get_model(model)
    est = lc.estimate(m, lc.deployment(m, gpu=gpu, engine=engine, **plan), lc.Workload(isl=1024, osl=1024, concurrency=conc),
                      breakdown=True)
    dec, first = _rows(est)
    assert sum(o["tpot_ms"] for o in dec.values()) == pytest.approx(est.tpot_s * 1e3, rel=1e-9)
    assert sum(o["time_ms"] for o in first.values()) == pytest.approx(est.ttft_s * 1e3, rel=1e-9)
    # hand-derived: one step's host cost, and the per-sequence one for each of the stage's running sequences
    step, seq = _fitted("step_overhead_s", engine), _fitted("seq_overhead_s", engine)
    assert dec["fitted/per_step"]["time_ms"] == pytest.approx(step * 1e3, rel=1e-12)
    assert dec["fitted/per_sequence"]["time_ms"] == pytest.approx(batch * seq * 1e3, rel=1e-12)
    # no speculation, every request admitted: a step's part counts once on each of the pp stages in TPOT
    assert dec["fitted/per_step"]["tpot_ms"] == pytest.approx(pp * step * 1e3, rel=1e-12)
    # the operators alone fall short of TPOT by the host rows at least (the gap the review found)
    kernels = sum(o["tpot_ms"] for o in dec.values() if "what" not in o)
    assert est.tpot_s * 1e3 - kernels >= pp * (step + batch * seq) * 1e3 * (1 - 1e-9)
    assert {"first/prefill_kernels", "first/prefill_host", "first/prefill_eager", "first/wait_steps", "first/front_end",
            "first/slot_queue"} <= set(first)
    # the first token's compute part: its prefill steps, each step's host part paid once a step and once a prompt
    assert first["first/prefill_kernels"]["time_ms"] > first["first/prefill_host"]["time_ms"] > 0


def test_speculation_and_a_queue_keep_the_sum():
    """Speculation's draft passes are a row of their own and a step's parts count over the tokens it accepts; past the
    batch that fits, the first token's wait for a slot is its own row."""
    m = lc.get_model("deepseek-r1")
    dep = lc.deployment(m, gpu="b200", num_gpus=8, engine="trtllm", spec="mtp", draft_len=3, acceptance=2.5)
    est = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=32), breakdown=True)
    dec, _ = _rows(est)
    assert dec["spec/draft_passes"]["time_ms"] > 0
    assert dec["fitted/per_step"]["tpot_ms"] == pytest.approx(dec["fitted/per_step"]["time_ms"] / est.accepted_per_step, rel=1e-9)
    assert sum(o["tpot_ms"] for o in dec.values()) == pytest.approx(est.tpot_s * 1e3, rel=1e-9)
    m = lc.get_model("llama-3.1-8b")
    est = lc.estimate(m, lc.deployment(m, gpu="h100", num_gpus=1, engine="trtllm"), lc.Workload(isl=1024, osl=1024, concurrency=4000),
                      breakdown=True)
    dec, first = _rows(est)
    assert first["first/slot_queue"]["time_ms"] > 0.5 * est.ttft_s * 1e3
    assert sum(o["time_ms"] for o in first.values()) == pytest.approx(est.ttft_s * 1e3, rel=1e-9)
    assert sum(o["tpot_ms"] for o in dec.values()) == pytest.approx(est.tpot_s * 1e3, rel=1e-9)


def test_the_cli_prints_the_rows_and_their_totals():
    from conftest import cli, cli_ok

    code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "vllm", "--concurrency", "16", "--breakdown")
    assert code == 0
    assert "fitted/per_step" in out and "fitted/per_sequence" in out and "first/wait_steps" in out
    assert "overlap scheduler runs the rest of its host work under the step before" in out
    got = json.loads(cli_ok("estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "vllm", "--concurrency", "16", "--breakdown",
                             "--json"))
    tpot = next(line for line in out.splitlines() if line.strip().startswith("TPOT ") and "ms;" not in line)
    assert float(tpot.split()[-1]) == pytest.approx(got["tpot_ms"], abs=5e-4)


@pytest.mark.parametrize("arrival", ["waves", "closed_loop", "burst"])
def test_attention_dp_keeps_the_sums_under_each_arrival(arrival):
    """DeepSeek-R1 on eight B200s, attention DP 8 x EP 8 (the hold of AttentionDpConfig in the wait row): the decode rows
    sum to TPOT and the first-token rows to TTFT as the arithmetic of one evaluation, under waves, a closed loop and a burst."""
    m = lc.get_model("deepseek-r1")
    dep = lc.deployment(m, gpu="b200", num_gpus=8, tp=1, ep=8, attention_dp=8, engine="trtllm")
    est = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=256, arrival=arrival), breakdown=True)
    dec, first = _rows(est)
    assert sum(o["tpot_ms"] for o in dec.values()) == pytest.approx(est.tpot_s * 1e3, rel=1e-9)
    assert sum(o["time_ms"] for o in first.values()) == pytest.approx(est.ttft_s * 1e3, rel=1e-9)
    # 256 requests over 8 ranks: 32 running sequences on each rank's step (no pipeline, every request admitted)
    assert dec["fitted/per_sequence"]["time_ms"] == pytest.approx(32 * _fitted("seq_overhead_s", "trtllm") * 1e3, rel=1e-12)


def test_a_disaggregated_points_decode_rows_sum_to_its_tpot():
    """A disaggregated frontier's points (explore.disagg_search.decode_breakdown, the pareto report's rows): each row's
    `tpot_ms` is its step time x the decode pool's TPOT per second of its operator rows, so they sum to the point's TPOT."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.disagg_search import decode_breakdown, search_disagg
    from llm_codesign.explore.search import SearchSpace
    from llm_codesign.spec.hardware import get_gpu

    m, g = lc.get_model("llama-3.1-8b"), get_gpu("h100")
    cal = calibration_for(g)
    r = search_disagg(m, g, cal, SearchSpace(4), isl=2048, osl=256)
    for p in r.points[:: max(1, len(r.points) // 4)]:
        rows = decode_breakdown(m, cal, p, isl=2048, osl=256)
        assert sum(o["tpot_ms"] for o in rows) == pytest.approx(p.tpot_s * 1e3, rel=1e-12)
        ratio = {o["tpot_ms"] / o["time_ms"] for o in rows}
        assert max(ratio) == pytest.approx(min(ratio), rel=1e-12)  # one per-token factor for the pool


def test_the_cli_writes_long_first_token_times_as_the_estimate_does_and_per_token_rows_without_a_step_time():
    """At 4,000 requests on one H100 the first token waits minutes: its table's TTFT reads as the estimate's ('515 s',
    render.intervals.table_time), not 514609.456 under an ms header; a part per output token has no ms/step."""
    from conftest import cli

    code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "vllm", "--concurrency", "4000", "--breakdown")
    assert code == 0
    said = next(line for line in out.splitlines() if line.strip("│ ").startswith("TTFT ")).split("│")[2].split(";")[0].strip()
    # the estimate's row says the slot wait's share after the time (newc7 #7: "515 s (503 s of it queue: ...)")
    said, queue = said.split(" (", 1) if " (" in said else (said, "")
    assert said.endswith(" s") and "of it queue" in queue
    ttft = next(line.split() for line in out.splitlines() if line.split()[:1] == ["TTFT"])
    assert " ".join(ttft[1:]) == said
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["prefill/others_prompts"])
    assert row[1:3] == ["per", "token"] and len(row) == 4  # name, kind (two words), its TPOT share: no ms/step cell


def test_the_overlap_sentence_reads_the_runs_queued_steps_not_the_engines():
    """vLLM 0.11's synchronous loop (campaigns.toml: queued_steps 0) queues no step ahead whatever the engine's own
    ttft_wait_steps (1): its host work runs in series, and the breakdown says so; NaN (no run flag) reads the engine's."""
    import math
    from types import SimpleNamespace

    from llm_codesign.serve.estimate import _overlap_said

    vllm = SimpleNamespace(ttft_wait_steps=1.0)
    assert "synchronous" in _overlap_said(vllm, 0.0)
    assert "overlap scheduler" in _overlap_said(vllm, math.nan) and "overlap scheduler" in _overlap_said(vllm, 1.0)
    assert "synchronous" in _overlap_said(SimpleNamespace(ttft_wait_steps=0.0), math.nan)


def test_decode_rows_are_the_operators_slowest_first_then_the_rest_in_order():
    """One helper (serve.estimate.decode_rows) orders the decode rows for estimate --breakdown and the page's point breakdown
    (/api/estimate's point_breakdown): it was written out twice. By hand: operators 1, 3, 2 ms -> 3, 2, 1; the rows with
    a `what` after them in their own order; the first token's rows left out."""
    from llm_codesign.serve.estimate import decode_rows

    rows = [{"phase": "decode", "name": "a", "time_ms": 1.0}, {"phase": "first token", "name": "first/x", "time_ms": 9.0, "what": "x"},
            {"phase": "decode", "name": "b", "time_ms": 3.0}, {"phase": "decode", "name": "fitted/per_step", "time_ms": 9.0, "what": "w"},
            {"phase": "decode", "name": "c", "time_ms": 2.0}, {"phase": "decode", "name": "host/eager", "time_ms": 0.5, "what": "v"}]
    assert [o["name"] for o in decode_rows(rows)] == ["b", "c", "a", "fitted/per_step", "host/eager"]


def test_the_cli_and_the_page_list_the_decode_rows_in_one_order():
    """estimate --breakdown's table and /api/estimate's point_breakdown (the page's) in decode_rows' order, one row a part."""
    from conftest import cli, cli_ok
    from fastapi.testclient import TestClient

    from llm_codesign.serve.estimate import decode_rows
    from llm_codesign.web.app import create_app

    args = ("estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "vllm", "--concurrency", "16", "--breakdown")
    want = [o["name"] for o in decode_rows(json.loads(cli_ok(*args, "--json"))["breakdown"])]
    assert len(want) > 5 and "fitted/per_step" in want
    code, out, _ = cli(*args)
    table = out[out.index("decode: time per step"):out.index("first token: its parts")]
    assert code == 0 and [line.split()[0] for line in table.splitlines() if line.split() and line.split()[0] in want] == want
    rec = {"plan": "TP1", "backend": "vllm", "tp": 1, "pp": 1, "ep": 1, "moe_tp": 1, "attention_dp": 1, "kvp": 1, "replicas": 1,
           "instance_gpus": 1, "weight_dtype": "bf16", "activation_dtype": "bf16", "kv_dtype": "bf16", "concurrency_per_instance": 16}
    e = TestClient(create_app()).post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "deployment": rec})
    assert e.status_code == 200, e.text
    assert [o["name"] for o in e.json()["point_breakdown"]] == want
