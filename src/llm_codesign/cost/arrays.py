"""Broadcasting machinery of the cost formulas, no formula of its own: a step's GEMM rows shared by
its GEMMs (`Tokens`), a price over a search's grid taken once per distinct (N, K, groups) and whole-row
count and gathered (`tabulated`), the fastest of a GEMM's tiles stacked or one at a time (`fastest`),
masks skipped where every element is live (`masked`) and sums in place (`add`). Each returns what
pricing every element would, bit for bit (tests/test_arrays.py)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Rows(NamedTuple):
    """M as the tile loop reads it: `j` = ceil(M / q), whole rows of q, where every tile's M is a
    power-of-two multiple of q (ceil(ceil(x) / r) = ceil(x / r), and exact in float32); M itself where
    q = 0."""
    j: object
    q: int
    span: tuple[float, float] | None = None  # j's least and most, where known


class Tokens:
    """A GEMM's M as the GEMMs of one step share it (a search's chunk: every attention and dense GEMM
    of a layer takes the step's tokens, at full size): float32 once, whether every element has rows,
    and its whole tile rows per row quantum with their least and most once. gemm_time takes it
    wherever it takes M."""

    __slots__ = ("m", "positive", "_rows")

    def __init__(self, m):
        self.m = np.asarray(m, dtype=np.float32)
        self.positive = self.m.size > 0 and bool(self.m.min() > 0)  # False on NaN
        self._rows: dict[int, Rows] = {}

    def rows(self, q: int) -> Rows:
        """M in whole rows of q (q = 0: M as it is), with their least and most where q > 0."""
        if q not in self._rows:
            if q:
                j = np.ceil(self.m * np.float32(1.0 / q))
                self._rows[q] = Rows(j, q, (float(j.min()), float(j.max())) if j.size else None)
            else:
                self._rows[q] = Rows(self.m, 0)
        return self._rows[q]


def tabulated(price, rows: Rows, n, k, groups):
    """price(rows, n, k, groups) over their broadcast, priced on a table of the distinct (n, k, groups)
    by the row counts between the least and the most, and gathered where that table is much smaller
    than the elements (bit for bit the same: the tile loop reads M only through the row counts);
    else priced directly."""
    j = rows.j
    full = np.broadcast_shapes(np.shape(j), np.shape(n), np.shape(k), np.shape(groups))
    per = np.broadcast_shapes(np.shape(n), np.shape(k), np.shape(groups))
    size = int(np.prod(full))
    if size < 4096 or np.shape(j) != full or 16 * int(np.prod(per)) > size:
        return price(rows, n, k, groups)
    lo, hi = rows.span or (float(j.min()), float(j.max()))
    if not (0.0 <= lo and hi - lo < size / 4.0):  # NaN, negative or too many row counts: price them as they are
        return price(rows, n, k, groups)
    width = int(hi - lo) + 1
    row, distinct = distinct_rows((n, k, groups), per)
    if len(distinct[0]) * width * 4 > size or hi + len(distinct[0]) * width >= 2.0**24:  # float32 indices stay exact integers
        return price(rows, n, k, groups)
    counts = np.arange(lo, hi + 1.0, dtype=np.float32)[None, :]
    table = price(Rows(counts, rows.q), *(d[:, None] for d in distinct))
    # each element's cell, computed in float32 (exact integers below 2**24), for the gather
    # (exact integers in float32 either way: the per-row base first, one full-size add)
    at = ((row * np.float32(width) - np.float32(lo)) + j).astype(np.intp) if np.ndim(row) else (j - np.float32(lo)).astype(np.intp)
    return np.take(np.broadcast_to(table, (len(distinct[0]), width)).reshape(-1), at)


def distinct_rows(arrays, shape):
    """The distinct combinations of `arrays` (broadcast to `shape`, float32): each element's index
    into them (a float32 array of `shape`, 0 where there is one) and the combinations, one array each."""
    flat = [np.broadcast_to(np.asarray(x, np.float32), shape).reshape(-1) for x in arrays]
    varying = [i for i, x in enumerate(flat) if x.size > 1 and (x != x[0]).any()]
    if not varying:
        return 0, [x[:1] for x in flat]
    if len(varying) <= 2:  # one integer key: the float32 bit patterns side by side
        key = sum(flat[i].view(np.uint32).astype(np.uint64) << np.uint64(32 * s) for s, i in enumerate(varying))
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, inv = np.unique(np.stack(flat), axis=1, return_index=True, return_inverse=True)
    return inv.reshape(shape).astype(np.float32), [x[first] for x in flat]


TILE_BATCH = 1 << 16  # the most elements x tiles priced in one pass over every tile (above: one pass per tile)


def fastest(rows: Rows, per_tile, columns, tile_time, *, shapes):
    """The least of tile_time(whole tiles along M, *the tile's other fields) over the tiles, at each
    element: `per_tile` holds each tile's fields, the first 1 / its M in rows of rows.q; `columns`
    each field over the tiles; `shapes`, the other operands' (N, K, groups). Small arrays (a table of
    distinct GEMMs, a chunk's per-plan shapes) take every tile at once along a leading axis, large ones
    one tile at a time; the same float32 operations on the same values either way."""
    if len(per_tile) * np.broadcast(rows.j, *shapes).size <= TILE_BATCH:
        ax = (slice(None),) + (None,) * max(np.ndim(rows.j), *(np.ndim(x) for x in shapes))
        rq, *rest = (col[ax] for col in columns)
        return tile_time(np.ceil(rows.j * rq), *rest).min(axis=0)
    best = None
    m_tiles: dict = {}  # whole tiles along M, once per tile M
    for rq, *rest in per_tile:
        if rq not in m_tiles:
            m_tiles[rq] = np.ceil(rows.j * rq)
        t = tile_time(m_tiles[rq], *rest)
        best = t if best is None else np.minimum(best, t)
    return best


def masked(live, *times, shape=None):
    """Each time where `live`, else 0 (no work, no launch), in its own dtype; where everything is live,
    as in most of a search's chunks, the times as they are (three passes fewer), broadcast to `shape`
    (live's own by default)."""
    if np.all(live):
        shape = np.shape(live) if shape is None else shape
        return tuple(t if np.shape(t) == shape else np.broadcast_to(t, np.broadcast_shapes(shape, np.shape(t))) for t in times)
    return tuple(np.where(live, t, 0.0) for t in times)


def add(total, terms):
    """total + each term, in place where total already has the sum's shape and dtype."""
    for t in terms:
        if isinstance(total, np.ndarray) and total.shape == np.broadcast_shapes(total.shape, np.shape(t)) and np.result_type(total, t) == total.dtype:
            np.add(total, t, out=total)
        else:
            total = total + t
    return total
