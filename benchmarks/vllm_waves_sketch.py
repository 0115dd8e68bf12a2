"""A diagnostic, not a price (docs/modelling-notes.md#vdoc-first-token): a step-level sketch of vLLM V1's scheduler
under aiperf's waves, to test whether the clean sample's later rounds queue behind the first wave's train.

C slots, rounds x C requests of identical lengths; a step budget of C + ISL + 1500 tokens (the workflow's
max_num_batched_tokens, campaigns.toml); the running decodes first, one token each, then the waiting prompts first come
first served in chunks (v1/core/sched/scheduler.py:383-517@0.19.0); a prompt's first token at the end of the step it
completes, its last OSL - 1 decode steps later; the slot's next request enters the queue `lag` steps after the step of
that last token (2: async scheduling's batch queue, phase-locked, default.toml [default.ttft_wait_steps]). Prints the
steps each request queues beyond that lag before its first token: the first wave (a burst), the second round, the rest.

    python benchmarks/vllm_waves_sketch.py
"""
from __future__ import annotations

from collections import deque

import numpy as np


def sim(C: int, isl: int, osl: int, *, lag: int = 2, rounds: int = 20, extra: int = 1500) -> tuple[float, float, float, float]:
    """Mean steps from entering the queue to the first token: (first wave, second round, later rounds, all)."""
    budget_of_step = C + isl + extra
    waiting = deque(range(C))
    left = dict.fromkeys(range(C), isl)  # prompt tokens still to prefill
    arrived = dict.fromkeys(range(C), 0)
    decoding: dict[int, int] = {}  # decode tokens left
    pending: list[tuple[int, int]] = []  # (step it enters the queue, request)
    ttft: list[int] = []
    sent, total, step = C, rounds * C, 0
    while len(ttft) < total or decoding:
        step += 1
        entering = [(s, i) for s, i in pending if s <= step]
        pending = [(s, i) for s, i in pending if s > step]
        for s, i in entering:
            waiting.append(i)
            left[i], arrived[i] = isl, s
        budget = budget_of_step - len(decoding)
        finished = []
        for i in list(decoding):
            decoding[i] -= 1
            if decoding[i] <= 0:
                finished.append(i)
                del decoding[i]
        while waiting and budget > 0:
            i = waiting[0]
            take = min(budget, left[i])
            left[i] -= take
            budget -= take
            if left[i]:
                break
            waiting.popleft()
            ttft.append(step - arrived[i])
            decoding[i] = osl - 1
        for _ in finished:
            if sent < total:
                pending.append((step + 1 + lag, sent))
                sent += 1
    t = np.array(ttft[:total], float)
    return float(t[:C].mean()), float(t[C:2 * C].mean()), float(t[2 * C:].mean()), float(t.mean())


if __name__ == "__main__":
    for c, isl in ((4, 1024), (16, 1024), (64, 1024), (256, 1024), (512, 1024), (64, 8192), (256, 8192)):
        w1, w2, rest, mean = sim(c, isl, 1024)
        print(f"C={c:4d} ISL={isl}: steps queued before the first token: wave 1 {w1:6.1f}, round 2 {w2:5.1f}, later {rest:4.1f}, "
              f"mean {mean:4.1f}")
