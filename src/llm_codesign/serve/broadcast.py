"""Pricing a search's (plans, batches, k) grid without pricing every element, where the price is known
to repeat: once per plan where a wave's prefill fills the step budget (`once_at_cap`), once per (plan,
batch) where only the sequences running vary along the draft lengths (`once_along_last`). No formula of
its own: each returns what pricing every element would, bit for bit (tests/test_broadcast.py)."""
from __future__ import annotations

import numpy as np

from llm_codesign.spec.plan import Plan


def once_at_cap(price, sh: Plan, tokens, cap, *args):
    """price(sh, tokens, *args) where tokens = min(cap, demand), the elements at the cap priced once per
    deployment row: in a search's (plans, batches, k) grid a wave's prefill step fills the token budget
    from a few requests on (41 of 42 elements repeat one on DeepSeek-R1 at 1k/1k). Applies where every
    input but `tokens` varies along the first axis only (and the price with them); the same values as
    pricing every element."""
    fields = sh.sizes
    full = np.broadcast_shapes(np.shape(tokens), *(np.shape(x) for x in (*fields, cap, *args)))
    if len(full) < 2 or any(np.ndim(x) and (np.ndim(x) != len(full) or any(d != 1 for d in np.shape(x)[1:]))
                            for x in (*fields, cap, *args)):
        return price(sh, tokens, *args)
    lead = (full[0],) + (1,) * (len(full) - 1)
    at_cap = price(sh, np.broadcast_to(cap, lead), *args)
    below = np.broadcast_to(tokens, full) < cap
    if not below.any() and _broadcasts(np.shape(at_cap), full):
        # every element at the cap: at_cap's, along whatever else it varies with that it is not given (a vLLM search's
        # capture per batch, explore.search.file_capture, in the price's flags)
        return np.array(np.broadcast_to(at_cap, np.broadcast_shapes(np.shape(at_cap), full)))  # writable, as every other path's
    if np.shape(at_cap) != lead:  # the price varies along other axes too
        return price(sh, tokens, *args)
    tokens = np.broadcast_to(tokens, full)
    rows = np.nonzero(below)[0]

    def pick(x):  # an input's value for each element below the cap (by its row)
        return np.asarray(x).reshape(()) if np.size(x) == 1 else np.asarray(x).reshape(-1)[rows]

    vals = price(Plan(*(pick(f) for f in fields)), tokens[below], *(pick(a) for a in args))
    if np.shape(vals) != rows.shape:  # the price varies along the first axis with what it is not given (a design's model shapes)
        return price(sh, tokens, *args)
    out = np.array(np.broadcast_to(at_cap, full))
    out[below] = vals
    return out


def _broadcasts(*shapes) -> bool:
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


def once_along_last(price, sh: Plan, b, *args):
    """price(sh, b, *args), a tuple of arrays, where only `b` varies along the last axis (a search's
    draft lengths k): priced once at b[..., :1] and again only at the elements where b differs from
    it (sequences the KV cache caps differently at each k). The same values as pricing every element."""
    fields = sh.sizes
    full = np.broadcast_shapes(np.shape(b), *(np.shape(x) for x in (*fields, *args)))
    if (len(full) < 2 or full[-1] == 1 or np.ndim(b) != len(full)
            or any(np.ndim(x) == len(full) and np.shape(x)[-1] != 1 for x in (*fields, *args))):
        return price(sh, b, *args)
    b = np.asarray(b)
    col = b[..., :1]
    once = price(sh, col, *args)
    if any(np.ndim(o) == len(full) and np.shape(o)[-1] != 1 for o in once):  # it varies along k with what it is not given
        return price(sh, b, *args)
    out = [np.array(np.broadcast_to(o, full)) for o in once]  # writable
    differ = b != col
    if differ.any():
        at = np.nonzero(differ)

        def pick(x):  # an input's value at each element that differs (inputs broadcast right-aligned)
            x = np.asarray(x)
            lead = len(full) - x.ndim
            return x if x.ndim == 0 else x[tuple(i if s > 1 else 0 for i, s in zip(at[lead:], x.shape, strict=True))]

        for o, v in zip(out, price(Plan(*(pick(f) for f in fields)), b[differ], *(pick(a) for a in args)), strict=True):
            o[differ] = v
    return tuple(out)
