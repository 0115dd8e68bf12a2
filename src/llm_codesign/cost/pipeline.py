"""Which pipeline stage sets a step's pace: the layers per part of each stage engines split
(spec.model stage_split), the candidates that may be slowest, and the slowest of them at each element
of a search's arrays, every pipeline depth of a chunk in one pass. No formula of its own: it weighs
the per-layer times the operator graph (cost.ops.forward_ops) hands it."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from llm_codesign.spec.model import ModelSpec, stage_split


def slowest_stage(model: ModelSpec, pp, members: list[tuple[int, ...]], *, part_time, head_time):
    """Layers per part (and 0/1 for the LM head) of the stage that sets the pipeline's pace. Engines
    split consecutive layers (ModelSpec.stage_counts); a stage is as slow as its layers plus, on the
    last, the LM head, and every micro-batch waits for the slowest (GPipe-style 1F1B schedules run
    at the slowest stage's rate). Where every stage holds the same layers (pp dividing a regular
    stack) that is the last, with n / pp layers of each group, as before uneven stages were priced.
    `members`: the layer groups each part serves; part_time(j): part j's per-layer time at this step
    (asked only where the split is uneven); head_time: that of every operator the last stage alone runs
    (the LM head, and in a target step the logits gather and the sampler: forward_ops's own list)."""
    if len(model.groups) == 1:  # a regular stack (layer counts may be arrays in a shape sweep)
        n = np.asarray(model.groups[0][1], float)
        # pp dividing L, and a one-layer draft (MTP, EAGLE) spread over the target's stages as before
        even = (n % pp == 0) | (n < pp)
        hi, lo = np.ceil(n / pp), np.floor(n / pp)
        t = part_time(0)
        last = even | (lo * t + head_time > hi * t)  # the last stage: floor(L / pp) layers and the LM head
        return [np.where(even, n / pp, np.where(last, lo, hi))], last.astype(float)
    values, inv = np.unique(pp, return_inverse=True)
    inv = inv.reshape(pp.shape)
    cands = [_stage_candidates(model, int(v), members) for v in values]
    # where one candidate stands (every stage alike, or a draft spread over the stages) it is the count
    counts = [np.array([c[-1][j] for c in cands], float)[inv] for j in range(len(members))]
    head_on = np.ones_like(pp)
    uneven = [i for i, c in enumerate(cands) if len(c) > 1]
    if not uneven:
        return counts, head_on
    return _slowest_of(pp, inv=inv, cands=cands, uneven=uneven, part_time=part_time, head_time=head_time, counts=counts)


def _slowest_of(pp, *, inv, cands, uneven, part_time, head_time, counts):
    """slowest_stage where some pp (`uneven`, indices into `cands`, each pp's candidates; `inv`, each
    element's pp among them) splits the layers unevenly: each of those elements' slowest candidate,
    priced at this step's per-layer time of each part."""
    # per-layer time of each part, at this step's batch, on one flat grid
    t_part = [part_time(j) for j in range(len(counts))]
    shape = np.broadcast_shapes(pp.shape, np.shape(head_time), *(np.shape(t) for t in t_part))
    t_part = [np.broadcast_to(t, shape) for t in t_part]
    counts = [np.broadcast_to(c, shape).copy() for c in counts]
    head_on = np.ones(shape)
    # each uneven pp's candidates in one table, padded to the most with copies of its first (the
    # first of equal times wins below, so a copy never does) and its last stage, the one with the LM
    # head, last
    n_c = max(len(cands[i]) for i in uneven)
    table = np.zeros((len(cands), n_c, len(counts)))
    for i in uneven:
        c = cands[i]
        table[i] = [*c[:-1], *[c[0]] * (n_c - len(c)), c[-1]]
    # the elements at those pp: whole rows where pp varies along the first axis only (a search's
    # plans), a copy of those rows cheaper than a boolean gather of the flat grid
    sel = np.isin(inv, uneven)
    if 0 < pp.ndim == len(shape) and pp.shape[0] == shape[0] and all(d == 1 for d in pp.shape[1:]):
        at = np.nonzero(sel.reshape(-1))[0]
        row = inv.reshape(-1)[at].reshape((-1,) + (1,) * (len(shape) - 1))
    else:
        at = np.broadcast_to(sel, shape)
        row = np.broadcast_to(inv, shape)[at]
    tm = [t[at] for t in t_part]
    # the slowest candidate, the first of equal times (a running maximum: cheaper than argmax across
    # a stack of the candidates)
    slowest, idx = None, None
    for c in range(n_c):
        t = sum(table[row, c, j] * t for j, t in enumerate(tm))
        if c == n_c - 1:
            t = t + np.broadcast_to(head_time, shape)[at]
        if slowest is None:
            slowest, idx = t, np.zeros(t.shape, np.intp)
        else:
            idx[t > slowest] = c
            slowest = np.maximum(slowest, t)
    for j in range(len(counts)):
        counts[j][at] = table[row, idx, j]
    head_on[at] = idx == n_c - 1
    return counts, head_on


def _stage_candidates(model: ModelSpec, pp: int, members: list[tuple[int, ...]]) -> tuple[tuple, ...]:
    """Layers per part of the stages that may set a pipeline of `pp` stages' pace: each distinct
    composition at its first stage, then the last stage (which adds the LM head); one, the count
    itself, where every stage holds the same layers or a one-layer draft (MTP, EAGLE) is spread over
    the target's stages."""
    return _candidates(tuple(int(n) for _, n in model.groups), model.layout, pp, tuple(members))


@lru_cache(maxsize=1024)  # a search asks for every pp of every chunk
def _candidates(counts: tuple[int, ...], layout: tuple[int, ...], pp: int, members: tuple[tuple[int, ...], ...]) -> tuple[tuple, ...]:
    if pp > sum(counts):
        return (tuple(sum(counts[g] for g in m) / pp for m in members),)
    stages = stage_split(counts, layout, pp)
    per = [tuple(sum(st[g] for g in m) for m in members) for st in (*dict.fromkeys(stages[:-1]), stages[-1])]
    if all(p == per[-1] for p in per):
        return (tuple(float(x) for x in per[-1]),)
    return (*dict.fromkeys(per[:-1]), per[-1])

