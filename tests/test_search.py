import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.explore.search import SearchSpace, pareto_mask, plans, search
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import SpecDecoding
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

pts = st.lists(st.tuples(st.floats(0.1, 1e4), st.floats(0.1, 1e4)), min_size=1, max_size=200)


def dominates(a, b):
    return a[0] >= b[0] and a[1] >= b[1] and (a[0] > b[0] or a[1] > b[1])


@settings(max_examples=200, deadline=None)
@given(pts)
def test_frontier_properties(p):
    x, y = np.array(p).T
    keep = pareto_mask(x, y)
    front = [(x[i], y[i]) for i in np.nonzero(keep)[0]]
    for a in front:  # no frontier point dominates another
        assert not any(dominates(b, a) for b in front)
    for i in np.nonzero(~keep)[0]:  # every dropped point is dominated by (or equal to) a frontier point
        assert any(dominates(a, (x[i], y[i])) or a == (x[i], y[i]) for a in front)


@settings(max_examples=100, deadline=None)
@given(pts, pts)
def test_superset_frontier_never_worse(p, extra):
    x, y = np.array(p).T
    X, Y = np.array(p + extra).T
    small = [(x[i], y[i]) for i in np.nonzero(pareto_mask(x, y))[0]]
    big = [(X[i], Y[i]) for i in np.nonzero(pareto_mask(X, Y))[0]]
    for a in small:
        assert any(b[0] >= a[0] and b[1] >= a[1] for b in big)


def test_llama70b_search_covers_tp_and_batch():
    m, g = get_model("llama-3.1-70b"), get_gpu("h200")
    r = search(m, g, calibration_for(g), SearchSpace(8, precisions=(Precision.of("fp8", kv="fp8"),)), isl=1024, osl=1024)
    fr = r.points
    assert r.evaluated > 500 and len(fr) > 10
    xs = [p.tok_s_per_user for p in fr]
    ys = [p.output_tok_s_per_gpu for p in fr]
    assert xs == sorted(xs) and ys == sorted(ys, reverse=True)
    # the most interactive point is the widest TP at batch 1; the highest throughput uses big batches
    assert fr[-1].deployment.plan.tp == 8 and fr[-1].concurrency == 1
    assert fr[0].concurrency > 32


def test_moe_plans_and_speculation():
    m, g = get_model("deepseek-r1"), get_gpu("b200")
    plan, inst = plans(m, g, SearchSpace(16))
    assert np.all(np.asarray(plan.tp) * np.asarray(plan.adp) * np.asarray(plan.kvp) * np.asarray(plan.pp) == inst)
    assert np.all(np.asarray(plan.ep) * np.asarray(plan.moe_tp) * np.asarray(plan.pp) == inst)
    spec = SpecDecoding("mtp", 3, rates=(0.8, 0.6, 0.5, 0.4, 0.3))
    r = search(m, g, calibration_for(g), SearchSpace(8, spec=spec, spec_ks=(0, 1, 2, 3)), isl=1024, osl=1024)
    assert any(p.deployment.spec is not None and p.deployment.spec.k > 0 for p in r.points)


def test_slo_filters():
    m, g = get_model("llama-3.1-8b"), get_gpu("h100")
    r = search(m, g, calibration_for(g), SearchSpace(8), isl=1024, osl=256, min_tps_user=100, max_ttft_ms=200)
    assert r.points and all(p.tok_s_per_user >= 100 and p.ttft_s <= 0.2 for p in r.points)


def test_fixed_dimension_restricts_sweep():
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    r = search(m, g, calibration_for(g), SearchSpace(8, tp=(4,)), isl=1024, osl=1024)
    assert {p.deployment.plan.tp for p in r.points} == {4}


def test_search_rejects_impossible_space():
    from llm_codesign.errors import InputError

    with pytest.raises(InputError):
        search(get_model("llama-3.1-70b"), get_gpu("h100"), calibration_for(get_gpu("h100")), SearchSpace(8, tp=(3,)), isl=128, osl=128)


def _snapshot(r):
    return [p.to_dict() for p in r.points], r.cloud, r.evaluated, r.fitting


def test_threads_and_chunk_sizes_change_no_answer(monkeypatch):
    # the same DeepSeek-R1 MTP search in one chunk on one thread, and in chunks of a few plans on two
    import llm_codesign.explore.search as S

    ds, gb = get_model("deepseek-r1"), get_gpu("gb200")
    space = SearchSpace(8, spec=SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6)), spec_ks=(0, 1, 3))
    monkeypatch.setenv("LLM_CODESIGN_THREADS", "1")
    one = _snapshot(search(ds, gb, calibration_for(gb), space, isl=1024, osl=1024))
    monkeypatch.setenv("LLM_CODESIGN_THREADS", "2")
    monkeypatch.setattr(S, "CHUNK", 2000)
    monkeypatch.setattr(S, "THREADED_CHUNK", 500)
    assert _snapshot(search(ds, gb, calibration_for(gb), space, isl=1024, osl=1024)) == one


@pytest.mark.parametrize("groups", [1, 2, 3, 5])
@pytest.mark.parametrize("workers", [2, 3, 4])
def test_chunks_are_shared_evenly_by_the_threads_largest_first(groups, workers):
    # each group cut into the fewest chunks of at most 1.5 CHUNK, one more in one group after another
    # until the threads share them evenly: priced largest first, every thread ends within one chunk
    import llm_codesign.explore.search as S

    for size in (S.CHUNK, 3 * S.CHUNK, 10 * S.CHUNK + 7):
        counts, threads = S._chunking(size, groups, workers)
        assert len(counts) == groups and min(counts) >= -(-size * 2 // (S.CHUNK * 3))
        assert sum(counts) % workers == 0 and max(counts) - min(counts) <= 1
        assert threads == (workers if size / max(counts) >= S.THREADED_CHUNK else 1)
        chunks = sorted((size / m for m in counts for _ in range(m)), reverse=True)
        loads = [0.0] * workers
        for c in chunks:  # as a pool's threads take them, each the next when it is free
            loads[loads.index(min(loads))] += c
        assert max(loads) - min(loads) <= min(chunks) + 1e-9
    # DeepSeek-R1 on 32 GB200 GPUs: 3 precisions of 166k deployments on two threads, one split (4 chunks, not 6)
    assert S._chunking(166_320, 3, 2) == ([2, 1, 1], 2)
    assert S._chunking(40_000, 3, 2)[1] == 1  # chunks under THREADED_CHUNK: one thread


def test_batches_no_plan_holds_are_judged_by_the_memory_fit_alone():
    # the search leaves out the batches beyond every plan's KV cache: the same fitting count and
    # frontier as pricing the whole grid (plans x batches) with evaluate
    import llm_codesign.explore.search as S
    from llm_codesign.serve.aggregated import Serving, evaluate
    from llm_codesign.spec.plan import Plan

    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    prec = Precision.of("fp8", kv="fp8")
    space = SearchSpace(8, precisions=(prec,))
    r = search(m, g, calibration_for(g), space, isl=8192, osl=2048)
    pl, _ = plans(m, g, space)
    b = np.asarray(space.batches)
    # with the CUDA graphs each point's export captures (S.SEARCH_GRAPHS), as the search prices it
    full = evaluate(m, Serving(gpu=g, prec=prec, plan=Plan(*(np.asarray(x)[:, None] for x in pl.arrays())), cuda_graph_max_bs=S.SEARCH_GRAPHS),
                    cal=calibration_for(g), concurrency=b[None, :] * np.asarray(pl.adp)[:, None], isl=8192, osl=2048)
    fits = np.broadcast_to(full["fits"], (len(pl.tp), len(b)))
    assert not fits[:, -1].any()  # the largest batches fit no plan: the search skipped them
    assert r.fitting == int(fits.sum()) and r.evaluated == fits.size
    x, y = (np.broadcast_to(full[k], fits.shape)[fits] for k in ("tok_s_per_user", "output_tok_s_per_gpu"))
    keep = pareto_mask(x, y)
    assert sorted(zip(x[keep], y[keep], strict=True)) == sorted((p.tok_s_per_user, p.output_tok_s_per_gpu) for p in r.points)


@pytest.mark.parametrize("value", ["0", "many", "-2", "1000"])
def test_thread_count_from_the_environment_is_checked(monkeypatch, value):
    from llm_codesign.explore.search import threads

    monkeypatch.setenv("LLM_CODESIGN_THREADS", value)
    with pytest.raises(InputError, match="LLM_CODESIGN_THREADS.*an integer from 1 to 256"):
        threads()


def test_batches_in_any_order_give_the_same_search():
    # the batches past every plan's cache are left out by value, not by position
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    prec = Precision.of("fp8", kv="fp8")
    shuffled = (64, 1, 2, 4, 8, 16, 32, 128, 256, 3, 1024)

    def run(batches):
        r = search(m, g, calibration_for(g), SearchSpace(4, precisions=(prec,), batches=batches), isl=8192, osl=1024)
        return r.fitting, sorted((p.tok_s_per_user, p.output_tok_s_per_gpu) for p in r.points)

    assert run(shuffled) == run(tuple(sorted(shuffled)))


def test_the_callers_floating_point_error_handling_reaches_every_thread(monkeypatch):
    # numpy keeps np.errstate per thread: a search on threads runs its chunks under the caller's
    import llm_codesign.explore.search as S

    seen = []
    real = S.evaluate

    def spy(*args, **kwargs):
        seen.append(np.geterr()["divide"])
        return real(*args, **kwargs)

    monkeypatch.setattr(S, "evaluate", spy)
    monkeypatch.setattr(S, "THREADED_CHUNK", 100)
    monkeypatch.setenv("LLM_CODESIGN_THREADS", "2")
    m, g = get_model("llama-3.1-8b"), get_gpu("h100")
    with np.errstate(divide="ignore"):
        search(m, g, calibration_for(g), SearchSpace(8, precisions=(Precision.of("fp8", kv="fp8"),)), isl=1024, osl=256)
    assert len(seen) > 1 and set(seen) == {"ignore"}


@pytest.mark.parametrize("model, gpu, n, precs", [
    ("llama-3.1-70b", "h200", 8, (Precision.of("fp8", kv="fp8"),)),  # one group: 7 plans, up to 17 loads each
    ("qwen3-30b-a3b", "b200", 2, None),  # MoE, NVFP4 and FP8 frontier points: a group each
])
def test_frontier_priced_together_is_each_deployment_alone_bit_for_bit(model, gpu, n, precs):
    """with_energy and point_breakdowns price a frontier's deployments of one precision together (plans as
    rows, loads as columns: _frontier_priced); each point's energy and operator rows are what pricing its
    deployment alone at its loads gives, to the last bit, and the breakdowns reuse the energy's pricing."""
    from dataclasses import replace

    from llm_codesign.explore.search import BATCHES, _frontier_priced, op_rows, point_breakdowns
    from llm_codesign.serve.aggregated import pdl_per_launch
    from llm_codesign.serve.energy import energy
    from llm_codesign.serve.metrics import decode_operators
    from llm_codesign.spec.plan import Workload

    g, m = get_gpu(gpu), get_model(model)
    cal, wl = calibration_for(g), Workload(isl=1024, osl=1024)
    r = search(m, g, cal, SearchSpace(n, precisions=precs or ()), isl=1024, osl=1024)
    # each point's record carries its own capture (padded up to its batch per rank); the points of one plan are priced
    # together at the search's largest capture (_frontier_priced), which misses no step of any of them
    def planned(d):
        return replace(d, cuda_graph_max_bs=int(BATCHES[-1]) if d.cuda_graph_max_bs else None)

    deps = {planned(p.deployment): [q for q in r.points if planned(q.deployment) == planned(p.deployment)] for p in r.points}
    assert len(deps) > 1 and len(r.points) > len(deps)  # several plans, several at more than one load
    hits = _frontier_priced.cache_info().hits
    rows = point_breakdowns(m, cal, [(p.deployment, p.concurrency) for p in r.points], r.workload)
    assert _frontier_priced.cache_info().hits == hits + 1  # the search's own pricing, not another
    for dep, pts in deps.items():
        conc = np.array([p.concurrency for p in pts])
        e = energy(m, dep, wl, conc, calibration=cal, output_tok_s_per_gpu=np.array([p.output_tok_s_per_gpu for p in pts]))
        ops = decode_operators(m, dep, wl, conc, calibration=cal)
        for j, p in enumerate(pts):
            assert p.energy == {k: e.at(j)[k] for k in p.energy}
            assert _operators(rows[r.points.index(p)]) == op_rows(ops, at=j, n=len(pts), pdl_per_launch=pdl_per_launch(g, dep.engine.costs(cal)))
            assert sum(x["tpot_ms"] for x in rows[r.points.index(p)]) == pytest.approx(p.tpot_s * 1e3, rel=1e-9)


def _operators(rows: list[dict]) -> list[dict]:
    """A point breakdown's operator rows (op_rows'), less their share of TPOT: the rows beyond them say `what` they are."""
    return [{k: v for k, v in x.items() if k != "tpot_ms"} for x in rows if "what" not in x]


def test_breakdowns_priced_at_the_frontiers_prefix_hit():
    """A frontier's breakdowns are priced at its own workload, its prefix hits with it (Frontier.workload),
    as its points and their energy are: each point's rows are its deployment's operators priced alone at
    its load and that workload. Priced at no hit (point_breakdowns built Workload(isl, osl)), 1 of the 26 points then
    differed in its operator rows (core_decode 21.34 ms where its own pricing gave 23.35 ms: the budget's batch counted
    the new tokens). Since fixW13 TensorRT-LLM counts the cached prefix against its budget (Engine.budget_counts_cached),
    so its batches are the no-hit ones: 34 points (33 before fixR13's budget charge), their operator rows as at no hit, and 33 of them (32 of 33 before) differ in the other
    prompts' share of TPOT (prefill/others_prompts: TP2 at 34 requests 47.8 ms at 0.95 hits, 734.0 ms at none)."""
    from llm_codesign.explore.search import _frontier_priced, op_rows, point_breakdowns
    from llm_codesign.serve.aggregated import pdl_per_launch
    from llm_codesign.serve.metrics import decode_operators
    from llm_codesign.spec.plan import Workload

    g, m = get_gpu("h200"), get_model("llama-3.1-70b")
    cal = calibration_for(g)
    r = search(m, g, cal, SearchSpace(8, precisions=(Precision.of("fp8", kv="fp8"),)), isl=32768, osl=128, prefix_hit=0.95)
    # 26 before the re-fit ba3a87f, 27 before fixW13
    assert r.workload == Workload(isl=32768, osl=128, prefix_hit=0.95) and len(r.points) == 34
    points = [(p.deployment, p.concurrency) for p in r.points]
    hits = _frontier_priced.cache_info().hits
    full = point_breakdowns(m, cal, points, r.workload)
    assert _frontier_priced.cache_info().hits == hits + 1  # the pricing the frontier's energy made
    own = [op_rows(decode_operators(m, d, r.workload, c, calibration=cal), pdl_per_launch=pdl_per_launch(g, d.engine.costs(cal)))
           for d, c in points]
    assert [_operators(x) for x in full] == own
    no_hit = point_breakdowns(m, cal, points, Workload(isl=32768, osl=128))
    moved = [(a, b) for a, b in zip(full, no_hit, strict=True) if a != b]
    assert len(moved) == 33  # of 34 (32 of 33 before fixR13)
    others = {(d.plan.label(), c): [{x["name"]: x["time_ms"] for x in side}.get("prefill/others_prompts", 0.0) for side in (a, b)]
              for (d, c), a, b in zip(points, full, no_hit, strict=True)}
    assert others[("TP2", 34)] == pytest.approx([52.044, 734.042], abs=1e-3)  # 47.833 before fixR13's budget charge


def test_frontier_pricing_is_held_read_only():
    """_frontier_priced's groups are cached and shared by with_energy and point_breakdowns: their
    evaluation (serve.aggregated.read_only) and cell index cannot be written into."""
    from types import MappingProxyType

    from llm_codesign.explore.search import _frontier_priced

    g, m = get_gpu("h200"), get_model("llama-3.1-70b")
    cal = calibration_for(g)
    r = search(m, g, cal, SearchSpace(8, precisions=(Precision.of("fp8", kv="fp8"),)), isl=1024, osl=1024)
    for grp, _ in _frontier_priced(m, cal, tuple((p.deployment, p.concurrency) for p in r.points), r.workload):
        assert isinstance(grp.r, MappingProxyType) and isinstance(grp.r["ops"], tuple)
        assert not grp.cell.flags.writeable and not grp.r["output_tok_s_per_gpu"].flags.writeable
        assert all(not op.time.flags.writeable for op in grp.r["ops"] if isinstance(op.time, np.ndarray))
