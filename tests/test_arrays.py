"""The cost formulas' broadcasting machinery (cost.arrays): each helper by hand, and a GEMM priced
through it (a step's shared tokens, the table of distinct shapes, every tile at once or one at a time)
equal, bit for bit, to each element priced alone."""
import numpy as np
import pytest

from llm_codesign.cost import arrays
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.gemm import gemm_time
from llm_codesign.spec.hardware import get_gpu


def test_masked_zeroes_dead_elements_and_leaves_live_arrays_as_they_are():
    live = np.array([True, False, True])
    t, c = arrays.masked(live, np.array([1.0, 2.0, 3.0]), np.float32(4.0))
    assert t.tolist() == [1.0, 0.0, 3.0] and c.tolist() == [4.0, 0.0, 4.0]
    every = np.ones(3, bool)
    x = np.array([1.0, 2.0, 3.0])
    same, scalar = arrays.masked(every, x, 5.0)
    assert same is x and scalar.shape == (3,) and scalar.tolist() == [5.0] * 3  # no copy, no pass over x
    (wide,) = arrays.masked(every, x, shape=(2, 3))
    assert wide.shape == (2, 3)


def test_add_sums_in_place_where_the_total_holds_the_result():
    total = np.zeros(3)
    assert arrays.add(total, (np.ones(3), 2.0)) is total and total.tolist() == [3.0] * 3
    grown = arrays.add(np.zeros(3), (np.ones((2, 3)),))  # a wider term: a new array
    assert grown.shape == (2, 3)
    assert arrays.add(0, (np.float32(1.5), 2)) == 3.5
    f32 = np.zeros(2, np.float32)
    assert arrays.add(f32, (np.ones(2),)).dtype == np.float64  # float64 terms are not cut to float32


def test_distinct_rows_indexes_each_element_into_its_combination():
    n = np.array([[512.0], [1024.0], [512.0]])
    row, (dn, dk) = arrays.distinct_rows((n, 4096.0), (3, 2))
    assert dn.tolist() == [512.0, 1024.0] and dk.tolist() == [4096.0, 4096.0]
    assert row.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    one, (cn,) = arrays.distinct_rows((np.full((2, 1), 7.0),), (2, 1))  # nothing varies: index 0 everywhere
    assert one == 0 and cn.tolist() == [7.0]


def test_fastest_stacked_and_one_at_a_time_agree(monkeypatch):
    # two tiles of (1 / M in rows, cost per whole tile): 16-row tiles at 1.0, 64-row tiles at 3.0
    per_tile = ((np.float32(1.0), np.float32(1.0)), (np.float32(0.25), np.float32(3.0)))
    columns = tuple(np.array(c, np.float32) for c in zip(*per_tile, strict=True))
    rows = arrays.Rows(np.array([1.0, 4.0, 8.0], np.float32), 16)  # 16, 64 and 128 tokens

    def tile_time(m_tiles, cost):
        return m_tiles * cost

    # by hand: min(1, 3), min(4, 3), min(8, 6)
    for batch in (0, 1 << 30):
        monkeypatch.setattr(arrays, "TILE_BATCH", batch)
        assert arrays.fastest(rows, per_tile, columns, tile_time, shapes=(np.float32(1.0),)).tolist() == [1.0, 3.0, 6.0]


def test_tokens_keep_their_rows_once_per_quantum():
    tok = arrays.Tokens([0.0, 17.0, 40.0])
    r = tok.rows(16)
    assert r is tok.rows(16) and r.j.tolist() == [0.0, 2.0, 3.0] and r.span == (0.0, 3.0) and not tok.positive
    assert tok.rows(0).j is tok.m and tok.rows(0).span is None


@pytest.mark.parametrize("gpu_name", ["gb200", "h100", "mi300x"])
def test_tiles_at_once_equal_one_tile_at_a_time(gpu_name, monkeypatch):
    # small arrays price every tile in one pass along a leading axis, large ones one tile at a time:
    # the same float32 operations, so the same times bit for bit, split-K and swap-AB tiles included
    gpu = get_gpu(gpu_name)
    cal = calibration_for(gpu)
    rng = np.random.default_rng(11)
    m = np.round(rng.uniform(0.0, 5000.0, size=(30, 20)), 1)
    n = rng.choice([128.0, 896.0, 7168.0], size=(30, 1))
    k = rng.choice([256.0, 2048.0, 7168.0], size=(30, 1))
    for kernel, math in (("bf16", "bf16"), ("fp8_block", "fp8")):
        kw = dict(math=math, a_bytes=2.0 if math == "bf16" else 1.0, w_bytes=2.0 if math == "bf16" else 1.0, kernel=kernel)
        monkeypatch.setattr(arrays, "TILE_BATCH", 0)
        loop = gemm_time(m, n, k, gpu, cal, **kw)
        monkeypatch.setattr(arrays, "TILE_BATCH", 1 << 30)
        batch = gemm_time(m, n, k, gpu, cal, **kw)
        for a, b in zip(loop, batch, strict=True):
            np.testing.assert_array_equal(a, b)


def test_gemms_sharing_one_tokens_object_equal_each_priced_from_its_array(h100, cal_h100):
    # a step's GEMMs share its tokens (float32, their tile rows and extent once): the same times as
    # each GEMM given the array, zero and NaN rows included
    m = np.array([[0.0, 1.0, 17.0, 300.0, 4096.0]] * 3)
    m[2, 4] = np.nan
    tokens = arrays.Tokens(m)
    for n, k, groups, math in ((8192, 8192, 1.0, "bf16"), (1536, 7168, 1.0, "fp8"), (512, 128, 16.0, "bf16")):
        kw = dict(math=math, a_bytes=1.0 if math == "fp8" else 2.0, w_bytes=1.0 if math == "fp8" else 2.0, groups=groups)
        for shared, alone in zip(gemm_time(tokens, n, k, h100, cal_h100, **kw), gemm_time(m, n, k, h100, cal_h100, **kw), strict=True):
            np.testing.assert_array_equal(shared, alone)
    assert not tokens.positive and arrays.Tokens(m[:2, 1:]).positive
    q = min(t[0] for t in h100.tiles)
    assert tokens.rows(q) is tokens.rows(q) and tokens.rows(q).j.dtype == np.float32


@pytest.mark.parametrize("gpu_name", ["gb200", "h100", "mi300x"])
@pytest.mark.parametrize("kernel", ["bf16", "fp8_block", "fp4"])
@pytest.mark.parametrize("varying", [1, 2, 3])
def test_gemm_tiles_tabulated_over_a_grid_equal_each_element_priced_alone(gpu_name, kernel, varying):
    """A search's GEMM (per-plan N, K and groups against plans x batches x k tokens) goes through the
    table of distinct (N, K, groups) x whole-row counts; every element equals its GEMM priced alone,
    bit for bit, dead rows and fractional, huge and repeated row counts included."""
    gpu = get_gpu(gpu_name)
    cal = calibration_for(gpu)
    math = {"bf16": "bf16", "fp8_block": "fp8", "fp4": "fp4" if gpu.supports("fp4") else "fp8"}[kernel]
    rng = np.random.default_rng(7)
    plans = 60
    # per plan: N alone, N and K, or N, K and the groups vary (one integer key, or distinct columns)
    n = rng.choice([896.0, 7168.0], size=(plans, 1, 1))
    k = rng.choice([7168.0, 1536.0], size=(plans, 1, 1)) if varying > 1 else 7168.0
    groups = rng.choice([1.0, 16.0], size=(plans, 1, 1)) if varying > 2 else 1.0
    m = np.round(rng.uniform(0.0, 3000.0, size=(plans, 46, 6)), 1)
    m[::7] = 0.0  # plans that run nothing
    m[1, :, :] = 1.0
    kw = dict(math=math, a_bytes=1.0 if math != "bf16" else 2.0, w_bytes=0.5 if math == "fp4" else (1.0 if math == "fp8" else 2.0),
              kernel=kernel)
    grid = gemm_time(m, n, k, gpu, cal, groups=groups, **kw)
    idx = [(p, b, q) for p in (0, 1, 3, 22, 59) for b in (0, 7, 45) for q in (0, 5)]
    n, k, groups = (np.broadcast_to(x, (plans, 1, 1)) for x in (n, k, groups))
    for p, b, q in idx:
        alone = gemm_time(m[p, b, q], n[p, 0, 0], k[p, 0, 0], gpu, cal, groups=groups[p, 0, 0], **kw)
        for g, a in zip(grid, alone, strict=True):
            assert np.asarray(g)[p, b, q] == np.asarray(a), (p, b, q)
    # the table path ran: fewer distinct (N, K, groups) x row counts than elements
    rows = arrays.Rows(np.ceil(np.asarray(m, np.float32) / np.float32(16.0)), 16)
    calls = []
    arrays.tabulated(lambda r, *a: calls.append(np.shape(r.j)) or np.zeros(np.broadcast_shapes(np.shape(r.j), *(np.shape(x) for x in a)), np.float32),
                    rows, n.astype(np.float32), k.astype(np.float32), groups.astype(np.float32))
    assert calls and calls[0][0] == 1 and calls[0][1] < m.size // 4


def test_gemm_tile_table_keeps_nan_rows_and_many_distinct_shapes(h100, cal_h100):
    """Row counts the table cannot hold (NaN tokens) and (N, K, groups) that vary in all three are
    priced as each element alone would be."""
    rng = np.random.default_rng(3)
    n = rng.choice([512.0, 1024.0], size=(40, 1, 1))
    k = rng.choice([512.0, 4096.0], size=(40, 1, 1))
    groups = rng.choice([1.0, 8.0], size=(40, 1, 1))
    m = np.round(rng.uniform(1.0, 400.0, size=(40, 30, 6)))
    kw = dict(math="bf16", a_bytes=2.0, w_bytes=2.0)
    t = gemm_time(m, n, k, h100, cal_h100, groups=groups, **kw)[0]
    for p, b, q in ((0, 0, 0), (17, 29, 5), (39, 3, 2)):
        assert t[p, b, q] == gemm_time(m[p, b, q], n[p, 0, 0], k[p, 0, 0], h100, cal_h100, groups=groups[p, 0, 0], **kw)[0]
    m[5, 5, 5] = np.nan
    with np.errstate(invalid="ignore"):
        t2 = gemm_time(m, n, k, h100, cal_h100, groups=groups, **kw)[0]
    assert np.isnan(t2[5, 5, 5]) or t2[5, 5, 5] == 0.0
    keep = np.ones(m.shape, bool)
    keep[5, 5, 5] = False
    assert np.array_equal(t2[keep], t[keep])


def test_gemm_tile_table_leaves_row_counts_past_float32_integers_to_the_loop(h100, cal_h100):
    """Row counts near 2**24 (M of 2**28 tokens) cannot index a float32 table exactly: each element is
    priced as it would be alone."""
    m = np.full((40, 30, 6), 2.0**28) + np.arange(6) * 16.0 * np.arange(40)[:, None, None]
    n = np.where(np.arange(40)[:, None, None] % 2, 512.0, 1024.0)
    t = gemm_time(m, n, 4096.0, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)[0]
    for p, b, q in ((0, 0, 0), (39, 29, 5), (13, 2, 3)):
        assert t[p, b, q] == gemm_time(m[p, b, q], n[p, 0, 0], 4096.0, h100, cal_h100, math="bf16", a_bytes=2.0, w_bytes=2.0)[0]
