"""Speculative decoding at short outputs (review crev #4): a step credits a request no more tokens than it has left to
decode (spec.plan.accepted_within), so TPOT never falls under the step's weight read per token actually accepted and
the step budget's batch does not collapse."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign.serve.invariants import weight_floor_s
from llm_codesign.serve.metrics import evaluate
from llm_codesign.spec.plan import SpecDecoding, Workload, accepted_within, deployment
from llm_codesign.spec.registry import get_model

# Llama-3.1-8B BF16 on one H100 reads 15,009,316,864 bytes of dense weights and LM head a step (test_invariants):
# 15,009,316,864 / 3.35e12 B/s = 4.4804 ms, the least one verify step can take
FLOOR_S = 15_009_316_864 / 3.35e12


def _eagle(acceptance, k=3, **kw):
    m = get_model("llama-3.1-8b")
    return m, deployment(m, gpu="h100", num_gpus=1, backend="trtllm", spec=SpecDecoding("eagle3", k, acceptance), **kw)


def test_a_step_credits_at_most_the_tokens_a_request_has_left():
    # acceptance 4 at k = 3: every draft accepted (1 + r + r^2 + r^3 = 4 at r = 1), 4 tokens a step where 4 are left;
    # OSL 2 leaves 1 token after the first, OSL 4 leaves 3, OSL 5 leaves 4; OSL 1 decodes none (one step's worth: 1)
    assert accepted_within(4.0, np.array([1, 2, 3, 4, 5, 1024])).tolist() == [1.0, 1.0, 2.0, 3.0, 4.0, 4.0]
    assert float(accepted_within(2.5, 3)) == 2.0 and float(accepted_within(2.5, 4)) == 2.5


def test_osl_2_and_4_at_acceptance_4_are_priced_as_one_and_three_tokens_a_step():
    m, d = _eagle(4.0)
    two, four, five = (evaluate(m, d, Workload(1024, osl, 1)) for osl in (2, 4, 5))
    assert [float(np.ravel(x.accepted_per_step)[0]) for x in (two, four, five)] == pytest.approx([1.0, 3.0, 4.0], rel=1e-9)
    t2, t4, t5 = (float(np.ravel(x.tpot_s)[0]) for x in (two, four, five))
    # OSL 2: the one token after the first costs one whole draft + verify step, at least the 4.4804 ms weight read
    # (it was 1.92 ms, the step over 4); OSL 4: three tokens from one step, TPOT = step / 3
    assert t2 >= FLOOR_S and t4 >= FLOOR_S / 3
    # the same step (context 1024 + 2/2 = 1025 vs 1024 + 4/2 = 1026 tokens: within 0.5%) over 1 and over 3 tokens
    assert t2 / t4 == pytest.approx(3.0, rel=5e-3)
    # OSL 5 is where the cap stops: 4 tokens left, 4 a step, step / 4
    assert t4 / t5 == pytest.approx(4.0 / 3.0, rel=5e-3)


def test_the_step_budget_keeps_its_batch_at_osl_2():
    # TensorRT-LLM's 8,192-token budget (H100): each decode takes 1 + k = 4 tokens and, as requests finish, brings in
    # the next prompt's 1,024 tokens at accepted / (OSL - 1) a step: 1 + 3 + 1 x 1024 / 1 = 1028 -> floor(8192 / 1028) = 7
    # requests a step (it was 4 + 4 x 1024 / 1 = 4100 -> 1, the other 7 of 8 queued)
    m, d = _eagle(4.0)
    r = evaluate(m, d, Workload(1024, 2, 8))
    assert int(np.ravel(r.max_batch)[0]) == 7


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 4), frac=st.floats(0.0, 1.0), osl=st.integers(2, 40), c=st.integers(1, 32), isl=st.sampled_from([128, 1024, 4096]))
def test_tpot_never_beats_the_weight_read_per_token_actually_accepted(k, frac, osl, c, isl):
    acceptance = 1.0 + frac * k  # 1 .. k + 1
    m, d = _eagle(acceptance, k=k)
    r = evaluate(m, d, Workload(isl, osl, c))
    taken = min(float(SpecDecoding("eagle3", k, acceptance).accepted()), osl - 1.0)  # what a step can credit
    assert float(np.ravel(weight_floor_s(m, d))[0]) == pytest.approx(FLOOR_S, rel=1e-9)
    assert float(np.min(r.tpot_s)) >= FLOOR_S / taken * (1 - 1e-9)
