"""A search grid's prices taken once where they repeat (serve.broadcast): along the draft lengths and
at the step budget, by hand on a toy price and on a real prefill step, equal bit for bit to pricing every
element."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve import aggregated as agg
from llm_codesign.serve.broadcast import once_along_last, once_at_cap
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def test_once_along_last_prices_the_first_column_and_the_elements_that_differ():
    # b over (2 plans, 3 k): row 0 the same at every k, row 1 capped differently at the last k. The toy
    # price counts the elements it is asked for: 2 at k's first column, then only the one that differs
    asked = []

    def price(sh, b, extra):
        asked.append(np.size(b))
        return (np.asarray(sh.tp, float) * 100.0 + np.asarray(b, float) + extra, np.asarray(b, float) * 2.0)

    sh = Plan(tp=np.array([[1], [2]]))
    b = np.array([[4.0, 4.0, 4.0], [8.0, 8.0, 5.0]])
    got = once_along_last(price, sh, b, np.asarray(0.5))
    assert asked == [2, 1]
    np.testing.assert_array_equal(got[0], [[104.5] * 3, [208.5, 208.5, 205.5]])
    np.testing.assert_array_equal(got[1], [[8.0] * 3, [16.0, 16.0, 10.0]])
    asked.clear()
    flat = once_along_last(price, sh, b[:, :1], np.asarray(0.5))  # one k: priced as it is, once
    assert asked == [2] and flat[0].tolist() == [[104.5], [208.5]]


def test_once_along_last_falls_back_where_the_price_varies_along_k():
    def price(sh, b, ks):  # what it is not given varies along k (a draft length inside the price)
        return (np.asarray(b, float) * np.asarray(ks, float),)

    sh, b, ks = Plan(tp=np.array([[1], [2]])), np.full((2, 3), 2.0), np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(once_along_last(price, sh, b, ks)[0], [[2.0, 4.0, 6.0]] * 2)


@pytest.mark.parametrize("isl", [128, 1024, 8192])
def test_wave_prefill_priced_once_at_the_budget_equals_every_element(isl):
    """once_at_cap prices a search grid's wave prefill once per plan where it fills the step budget:
    the same numbers, bit for bit, as pricing every element, with elements below the budget (short
    prompts, few requests) and without (8k prompts fill an 8k budget alone)."""
    m, g = get_model("deepseek-r1"), get_gpu("b200")
    costs = get_engine("trtllm").costs(calibration_for(g))
    prec = Precision.of("nvfp4", kv="fp8")
    tp = np.array([8, 4, 1, 2])[:, None, None]
    sh = Plan(tp=tp, pp=np.array([1, 2, 1, 1])[:, None, None], ep=np.array([8, 8, 8, 4])[:, None, None],
                  moe_tp=np.array([1, 1, 1, 2])[:, None, None], adp=8 // tp // np.array([1, 2, 1, 1])[:, None, None],
                  kvp=np.ones((4, 1, 1), int))
    running = np.array([1, 3, 7, 8, 64, 2048], float)[None, :, None] * np.ones((4, 1, 3))
    mnt, new = np.asarray(8192.0), np.asarray(float(isl))
    tokens = np.minimum(mnt, running * new)
    chunk = np.minimum(new, mnt)

    def price(sh_, t, i, c, cached):
        return agg.prefill_step(m, g, prec, sh_, costs=costs, tokens=t, isl=i, chunk=c, cached=cached)

    direct = np.broadcast_to(price(sh, tokens, new, chunk, np.asarray(0.0)), tokens.shape)
    once = once_at_cap(price, sh, tokens, mnt, new, chunk, np.asarray(0.0))
    assert once.shape == direct.shape and np.array_equal(once, direct)
    assert (tokens < mnt).any() == (isl < 8192)


def test_once_at_cap_falls_back_where_the_price_varies_along_other_axes():
    """Inputs that vary along an axis but the first (a plan field over batches; the price itself over a
    design's shapes) take the direct path: the same values as pricing each element, never a crash."""
    tokens = np.minimum(8.0, np.arange(1.0, 13.0).reshape(2, 6))  # 2 rows, some at the cap of 8

    def price(sh, t, extra):
        return np.asarray(sh.tp, float) * 1e3 + np.asarray(t, float) * 10.0 + np.asarray(extra, float)

    by_row = Plan(tp=np.array([[1], [2]]))
    direct = price(by_row, tokens, np.asarray(0.5))
    assert np.array_equal(once_at_cap(price, by_row, tokens, np.asarray(8.0), np.asarray(0.5)), direct)  # the fast path
    across = Plan(tp=np.array([[1, 2, 1, 2, 1, 2]]))  # varies along the second axis
    assert np.array_equal(once_at_cap(price, across, tokens, np.asarray(8.0), np.asarray(0.5)), price(across, tokens, 0.5))
    hidden = np.array([[3.0], [4.0]])  # what the price varies by without being given it, as a design's model shapes

    def shaped(sh, t, extra):
        return price(sh, t, extra) * hidden

    assert np.array_equal(once_at_cap(shaped, by_row, tokens, np.asarray(8.0), np.asarray(0.5)), shaped(by_row, tokens, 0.5))


def test_once_at_cap_keeps_one_price_where_what_it_is_not_given_varies_along_the_batches():
    # leftV: a vLLM search prices each batch at its file's capture (explore.search.file_capture), which its flags carry: the
    # price at the cap varies along the batches. Every element at the cap: that one price, broadcast (the wave's prefill
    # step of a 512-token budget, once per plan), not every element again; an element below it: every element priced
    asked = []
    pieces = np.array([[[0.0], [0.0], [1.0]]])  # along 3 batches: 1 where the step runs as graph pieces

    def price(sh, tokens, extra):
        asked.append(np.size(tokens))
        return np.asarray(sh.tp, float) * 100.0 + np.asarray(tokens, float) + extra - pieces

    sh = Plan(tp=np.array([[[1]], [[2]]]))
    at_cap = np.full((2, 3, 1), 512.0)
    got = once_at_cap(price, sh, at_cap, 512.0, np.asarray(0.5))
    assert asked == [2]  # one price a plan
    np.testing.assert_array_equal(got, [[[612.5], [612.5], [611.5]], [[712.5], [712.5], [711.5]]])
    asked.clear()
    below = at_cap.copy()
    below[0, 0, 0] = 300.0
    got = once_at_cap(price, sh, below, 512.0, np.asarray(0.5))
    assert asked == [2, 6] and got[0, 0, 0] == 400.5 and got[1, 2, 0] == 711.5  # the cap's price, then every element
