"""The slowest pipeline stage (cost.pipeline): the candidate stages engines' splits give, the slowest
of them by hand from per-layer times, and every pipeline depth of a search's chunk in one pass equal
to each priced alone."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.cost.pipeline import slowest_stage
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model

# DeepSeek-R1's parts as forward_ops prices them: MLA shared by both groups, the 3 dense FFNs, the 58 MoEs
R1_MEMBERS = [(0, 1), (0,), (1,)]


def _never(j):
    raise AssertionError("no per-layer time is needed where every stage holds the same layers")


def test_the_slowest_candidate_by_hand():
    # R1 at PP4: stages of (3 dense + 12 MoE), 15, 16 and 15 MoE layers, the last with the LM head.
    # Per layer: attention 1, dense FFN 2, MoE 3; stage times 15 + 6 + 36 = 57, 60, 64 and 60 + head
    m = get_model("deepseek-r1")
    times = (1.0, 2.0, 3.0)
    counts, head_on = slowest_stage(m, np.array([4.0]), R1_MEMBERS, part_time=lambda j: np.array([times[j]]), head_time=np.array([10.0]))
    assert [c.tolist() for c in counts] == [[15.0], [0.0], [15.0]] and head_on.tolist() == [1.0]  # 70 > 64
    counts, head_on = slowest_stage(m, np.array([4.0]), R1_MEMBERS, part_time=lambda j: np.array([times[j]]), head_time=np.array([3.0]))
    assert [c.tolist() for c in counts] == [[16.0], [0.0], [16.0]] and head_on.tolist() == [0.0]  # 64 > 63


def test_even_splits_need_no_times():
    # a regular stack pp divides: L / pp layers and the head; R1 at PP1: the whole model on one stage
    llama = get_model("llama-3.1-70b")
    counts, head_on = slowest_stage(llama, np.array([1.0, 2.0, 4.0]), [(0,)], part_time=lambda j: np.float64(1.0), head_time=5.0)
    assert counts[0].tolist() == [80.0, 40.0, 20.0] and head_on.tolist() == [1.0, 1.0, 1.0]
    counts, head_on = slowest_stage(get_model("deepseek-r1"), np.array([1.0]), R1_MEMBERS, part_time=_never, head_time=0.0)
    assert [c.tolist() for c in counts] == [[61.0], [3.0], [58.0]] and head_on.tolist() == [1.0]


def test_a_regular_stack_pp_does_not_divide():
    # Llama-3.1-405B (126 layers) at PP4: 32-layer stages, the last holding 31 and the head: 31 t + h
    # against 32 t, the head counted only where its stage is the slower
    m = get_model("llama-3.1-405b")
    counts, head_on = slowest_stage(m, np.array([4.0, 4.0]), [(0,)], part_time=lambda j: np.array([1.0, 1.0]), head_time=np.array([0.5, 2.0]))
    assert counts[0].tolist() == [32.0, 31.0] and head_on.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("along", ["plans", "other"])
def test_many_pipeline_depths_at_once_equal_each_priced_alone(along):
    # a search prices every plan's pp in one pass (uneven splits' candidate stages in one table, the
    # slowest taken per element): each element's counts and step time as its pp priced alone, with
    # pp along the plans' axis (rows) or along another one
    m, g = get_model("deepseek-r1"), get_gpu("gb200")
    cal = calibration_for(g)
    pps = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 8.0, 16.0, 4.0, 61.0])
    seqs = np.array([1.0, 16.0, 256.0])
    pp, dec = (pps[:, None], seqs[None, :]) if along == "plans" else (pps[None, :], seqs[:, None])
    ops = forward_ops(m, g, cal, m.default_precision, Plan(tp=4, pp=pp, ep=4), b=Batch(dec_seqs=dec, dec_ctx=2048, pf_tokens=dec * 8))
    total = np.broadcast_to(sum(op.total_time for op in ops), np.broadcast_shapes(pp.shape, dec.shape))
    for i, v in enumerate(pps):
        for j, d in enumerate(seqs):
            alone = forward_ops(m, g, cal, m.default_precision, Plan(tp=4, pp=v, ep=4), b=Batch(dec_seqs=d, dec_ctx=2048, pf_tokens=d * 8))
            at = (i, j) if along == "plans" else (j, i)
            assert total[at] == pytest.approx(float(sum(op.total_time for op in alone)), rel=1e-12), (v, d)
