"""Prices kept by their inputs while a fit asks for the same ones again (measure.calibrate).

A serving fit re-prices its rows ~1,300 times, and most of its steps change only what no kernel reads
(an engine's host costs) or what no GEMM reads (the collectives' latencies). Within `reusing(var, ...)`
a pricing function looks its inputs up in the PriceMemo the context variable holds and prices only
what it has not seen. The variable is per context, so threads a search starts never see a fit's memo;
outside the block it holds None and the pricing runs as it always does.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np


def array_key(x) -> tuple:
    """An array's (or a scalar's) value as a dict key: dtype, shape and bytes."""
    a = np.asarray(x)
    return a.dtype.str, a.shape, a.tobytes()


class PriceMemo:
    """Prices by their inputs, at most `kept` of them (the oldest dropped first: priced again if asked
    again). `fields`: the Calibration fields the prices read, compared by value; the last profile's
    values are looked up once (the prices of one evaluation share one profile)."""

    def __init__(self, fields: tuple[str, ...], kept: int):
        self.fields, self.kept = fields, kept
        self.prices: dict = {}
        self._cal: tuple = (None, None)

    def cal_key(self, cal) -> tuple:
        if self._cal[0] is not cal:  # held here, so never another object at the same address
            self._cal = (cal, tuple(getattr(cal, f) for f in self.fields))
        return self._cal[1]

    def get(self, key: tuple, price: Callable):
        """price()'s value, from the memo where `key` was priced before (price() where the key does not
        hash: a design's arrays of model shapes)."""
        try:
            out = self.prices.get(key)
        except TypeError:
            return price()
        if out is None:
            out = self.prices[key] = price()
            if len(self.prices) > self.kept:
                del self.prices[next(iter(self.prices))]
        return out


@contextmanager
def reusing(var: ContextVar, fields: tuple[str, ...], kept: int) -> Iterator[None]:
    """`var` holds a fresh PriceMemo within the block (the outer one again after it)."""
    token = var.set(PriceMemo(fields, kept))
    try:
        yield
    finally:
        var.reset(token)
