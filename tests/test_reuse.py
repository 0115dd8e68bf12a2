"""cost/reuse.py: prices kept by their inputs within a block, per context, the oldest dropped first."""
import threading
from contextvars import ContextVar
from dataclasses import replace

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.reuse import PriceMemo, array_key, reusing
from llm_codesign.spec.hardware import get_gpu


def test_a_memo_prices_each_key_once_and_drops_the_oldest():
    memo, calls = PriceMemo(("bw_eff",), kept=2), []

    def price(v):
        return lambda: calls.append(v) or v * 10

    assert [memo.get(("a",), price(1)), memo.get(("a",), price(2)), memo.get(("b",), price(3))] == [10, 10, 30]
    assert memo.get(("c",), price(4)) == 40 and list(memo.prices) == [("b",), ("c",)]  # ("a",) went first
    assert memo.get(("a",), price(5)) == 50 and calls == [1, 3, 4, 5]
    assert memo.get(([1],), price(6)) == 60 and memo.get(([1],), price(7)) == 70  # a key that does not hash: priced each time


def test_array_keys_tell_dtypes_shapes_and_values_apart():
    assert array_key(np.array([1.0, 2.0])) == array_key([1.0, 2.0]) != array_key(np.array([1.0, 2.0], np.float32))
    assert array_key(np.ones((2, 1))) != array_key(np.ones((1, 2))) and array_key(1.0) != array_key(1)


def test_a_profile_is_keyed_by_the_fields_the_prices_read():
    cal = calibration_for(get_gpu("h100"))
    memo = PriceMemo(("bw_eff", "gemm_blend_p"), kept=4)
    assert memo.cal_key(cal) == (cal.bw_eff, cal.gemm_blend_p)
    assert memo.cal_key(replace(cal, step_overhead_s=(("vllm", 1e-3),))) == memo.cal_key(cal)
    assert memo.cal_key(replace(cal, bw_eff=0.5)) == (0.5, cal.gemm_blend_p)


def test_the_memo_is_the_blocks_own_and_no_other_threads():
    var: ContextVar = ContextVar("test_memo", default=None)
    seen = []
    with reusing(var, (), 8):
        inside = var.get()
        t = threading.Thread(target=lambda: seen.append(var.get()))  # a search's worker thread starts a context of its own
        t.start()
        t.join()
        with reusing(var, (), 8):
            assert var.get() is not inside
        assert var.get() is inside
    assert isinstance(inside, PriceMemo) and seen == [None] and var.get() is None


def test_gemm_prices_are_the_same_reused_or_not():
    gpu, cal = get_gpu("b200"), calibration_for(get_gpu("b200"))
    m = np.array([1.0, 64.0, 4096.0])
    fresh = gemm.gemm_time(m, 4096, 4096, gpu, cal, math="fp8", a_bytes=1.0, w_bytes=1.0)
    with gemm.reuse_gemm_prices():
        first = gemm.gemm_time(m, 4096, 4096, gpu, cal, math="fp8", a_bytes=1.0, w_bytes=1.0)
        # the collectives' latencies are no GEMM's: the same arrays come back
        again = gemm.gemm_time(m, 4096, 4096, gpu, replace(cal, custom_ar_latency_s=9e-6), math="fp8", a_bytes=1.0, w_bytes=1.0)
        slower = gemm.gemm_time(m, 4096, 4096, gpu, replace(cal, gemm_eff_fp8=0.3), math="fp8", a_bytes=1.0, w_bytes=1.0)
    assert all(np.array_equal(a, b) for a, b in zip(fresh, first, strict=True)) and again is first
    assert slower[0][-1] > first[0][-1]
