"""Time the host side of prompt-lookup drafting (--spec ngram) as the engines run it: SGLang's figure of Engine.ngram_host
(spec/engines/sglang.py; docs/modelling-notes.md#ngram-prompt-lookup). vLLM's is its V1 model runner's host matcher
(VLLM_USE_V2_MODEL_RUNNER=0), not priced: 0.33's default runner matches on the GPU (docs/modelling-notes.md#ngramO-v2-runner).

vLLM: its own NgramProposer code, read from an unpacked vllm 0.33.0 wheel (`--vllm DIR`, the folder holding vllm/), the
numba functions and propose / batch_propose run as they are (numba needed: pip install numba), over batches of b requests
of ctx tokens (uniform and Zipf-drawn ids), fitted as fixed + b x per_request + b^2 x per_request^2 + b x ctx x per_token.
SGLang: NGRAMWorker's per-request Python around its C++ corpus (speculative/ngram_worker.py:232-305, 396-420@0.5.23),
re-typed below with the C++ match and insert stubbed (they are not built here), so its per-request cost only.
TensorRT-LLM: NGramDrafter.prepare_draft_tokens and NGramPoolManager.get_draft_tokens (tensorrt_llm/_torch/speculative/
ngram.py:86-143, 179-202@02499765), re-typed below with TensorRT-LLM's Apache-2.0 notice (ordered-set needed: pip install
ordered-set), the binding's get_tokens(0) list (a Python int per token) made by tolist(); fitted as fixed + b x
per_request + b x ctx x per_token in the steady state (each request 2 tokens longer a step), its pool's first build
(max_matching_ngram_size x the prompt's tokens, once a request) timed apart.

    python benchmarks/ngram_host_cost.py --vllm /tmp/vllm-0.33.0   # a few minutes on one core
"""
import argparse
import array
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def vllm_proposer(root: Path):
    """vLLM's NgramProposer without its VllmConfig: the module's numba functions and its propose / batch_propose bodies."""
    src = (root / "vllm/v1/spec_decode/ngram_proposer.py").read_text()
    body = src[src.index("    def batch_propose("):src.index("    def load_model(")]
    body = re.sub(r"dict\[str, torch\.Tensor\]", "dict", body)
    mod = ("import numpy as np\nfrom numba import get_num_threads, jit, njit, prange, set_num_threads\n\nclass P:\n"
           "    def __init__(self, k, max_seqs, min_n=5, max_n=5, max_model_len=1 << 15):\n"
           "        self.k, self.min_n, self.max_n, self.max_model_len = k, min_n, max_n, max_model_len\n"
           "        self.valid_ngram_draft = np.zeros((max_seqs, k), dtype=np.int32)\n"
           "        self.valid_ngram_num_drafts = np.zeros(max_seqs, dtype=np.int32)\n"
           "        self.num_tokens_threshold, self.num_numba_thread_available = 8192, 1\n" + body + src[src.index("@njit(parallel=True)"):])
    d = tempfile.mkdtemp()
    Path(d, "vprop.py").write_text(mod)
    sys.path.insert(0, d)
    from vprop import P  # noqa: E402

    return P


def best(fn, *args, n=9):
    """The least CPU time of `n` calls of fn(*args), in seconds: the process's, all its threads (numba's too), so that a
    shared machine's other work, which takes the core away, is not counted as the proposer's."""
    out = []
    for _ in range(n):
        t = time.process_time()
        fn(*args)
        out.append(time.process_time() - t)
    return min(out)


def time_vllm(root: Path):
    P, rng, k, L = vllm_proposer(root), np.random.default_rng(0), 3, 8192 + 8
    p = P(k, 1024, max_model_len=L)
    tokens = {"zipf": np.minimum(rng.zipf(1.3, (1024, L)), 128000).astype(np.int32),
              "uniform": rng.integers(0, 128000, (1024, L)).astype(np.int32)}
    p.propose(k, [[1]] * 4, np.full(1024, 8, np.int32), tokens["zipf"])  # numba's compile
    for name, tok in tokens.items():
        rows = []
        for b in (1, 8, 64, 256, 512, 1024):
            for ctx in (16, 512, 2048, 8192):
                if b * ctx > 1024 * 2048:
                    continue
                nt = np.zeros(1024, np.int32)
                nt[:b] = ctx
                rows.append((b, ctx, best(p.propose, k, [[1]] * b, nt, tok)))
        a = np.array([[1.0, b, b * b, b * ctx] for b, ctx, _ in rows])
        c, *_ = np.linalg.lstsq(a, np.array([t for *_, t in rows]), rcond=None)
        print(f"vLLM {name:7s}: fixed {c[0] * 1e6:.1f} us, {c[1] * 1e6:.2f} us a request, {c[2] * 1e9:.1f} ns a request^2, "
              f"{c[3] * 1e9:.2f} ns a context token")


def time_sglang():
    depth, n = 18, 4  # max_trie_depth's default, draft_token_num k + 1 at k = 3

    class Req:
        def __init__(self, i):
            self.rid, self.origin_input_ids_unpadded, self.output_ids = f"r{i}", array.array("i", range(1024)), list(range(300))

    def last(a, b):
        s = a + b
        return s[-depth:] if len(s) > depth else s

    def step(reqs, prev_ids, prev_lens, states):
        tails_in = [list(r.origin_input_ids_unpadded[-depth:]) for r in reqs]
        tails_out = [list(r.output_ids[-depth:]) for r in reqs]
        lens = [len(r.origin_input_ids_unpadded) + len(r.output_ids) for r in reqs]
        ids, acc = prev_ids.tolist(), prev_lens.tolist()
        for i in range(len(reqs)):  # _prepare_draft_tokens' check tokens
            last(tails_in[i], tails_out[i] + ids[i * n:i * n + acc[i]]), lens[i] + acc[i]
        [states.setdefault(r.rid, len(states)) for r in reqs]  # NgramCorpus._get_state_id
        for i, r in enumerate(reqs):  # _update_ngram_corpus' put ids
            last(list(r.origin_input_ids_unpadded[-depth:]), list(r.output_ids[-depth:]) + ids[i * n:i * n + acc[i]])

    for b in (1, 8, 64, 256, 1024):
        reqs, states = [Req(i) for i in range(b)], {}
        t = best(step, reqs, np.zeros(b * n, np.int64), np.full(b, 2, np.int64), states, n=15)
        print(f"SGLang b={b:5d}: {t / b * 1e6:.2f} us a request (C++ match and insert stubbed)")


# SPDX-FileCopyrightText: Copyright (c) 2022-2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: Apache-2.0 (http://www.apache.org/licenses/LICENSE-2.0)
# NGramPoolManager.get_draft_tokens, NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/ngram.py:86-143@02499765, re-typed
# as a function of the pool's fields (its `self`); the logic unchanged.
def trtllm_get_draft_tokens(m, prefix, request_id, max_sequence_length):
    from ordered_set import OrderedSet

    prefix_len = len(prefix)
    max_draft_token_length_this_step = max_sequence_length - 1 - prefix_len
    if max_draft_token_length_this_step <= 0:
        return []
    if request_id not in m.start_index:
        m.start_index[request_id] = 0
        if not m.is_public_pool:
            m.pool[request_id] = {}
    pool = m.pool if m.is_public_pool else m.pool[request_id]
    sequence = prefix[m.start_index[request_id]:]
    for size in range(min(m.max_matching_ngram_size, prefix_len - 1), 0, -1):
        for l in range(len(sequence) - size):
            r = min(l + size + m.max_total_draft_tokens, len(sequence))
            pattern = tuple(sequence[l:l + size])
            new_match = tuple(sequence[l + size:r])
            if pattern not in pool or (not m.is_keep_all and len(new_match) > len(pool[pattern][0])):
                pool[pattern] = OrderedSet((new_match, ))
            elif new_match not in pool[pattern]:
                for match in pool[pattern]:
                    if len(match) < len(new_match):
                        pool[pattern].remove(match)
                pool[pattern].add(new_match)
    draft_tokens = []
    for size in range(min(m.max_matching_ngram_size, prefix_len - 1), 0, -1):
        pattern = tuple(prefix[-size:])
        if pattern not in pool:
            continue
        draft_tokens = pool[pattern][0 if m.is_use_oldest else -1]
        draft_tokens = list(draft_tokens)[:max_draft_token_length_this_step]
        break
    m.start_index[request_id] = max(0, prefix_len - (m.max_total_draft_tokens + m.max_matching_ngram_size - 1))
    return draft_tokens


def time_trtllm():
    """TensorRT-LLM's NGram drafter a step (NGramDrafter.prepare_draft_tokens, ngram.py:179-202@02499765): per generation
    request, a copy of its tokens (`list(request.get_tokens(0))`, the binding's list of Python ints) and get_draft_tokens
    over the pool's defaults (NGramDecodingConfig: max_matching_ngram_size 2, is_keep_all, is_use_oldest and
    is_public_pool True; 1.4.0rc4's API reference), k = 3."""
    from types import SimpleNamespace

    rng, k, grow = np.random.default_rng(0), 3, 2
    draws = {"uniform": lambda size: rng.integers(0, 128000, size), "zipf": lambda size: np.minimum(rng.zipf(1.1, size), 128000)}
    for name, draw in draws.items():
        rows, builds = [], []
        for b in (1, 8, 32, 128):
            for ctx in (512, 2048, 8192):
                if b * ctx > 32 * 8192:
                    continue
                m = SimpleNamespace(max_total_draft_tokens=k, max_matching_ngram_size=2, is_keep_all=True, is_use_oldest=True,
                                    is_public_pool=True, pool={}, start_index={})
                toks, lens = draw((b, ctx + grow * 64)).astype(np.int32), [ctx] * b
                t = time.process_time()
                for i in range(b):  # each request's first call builds the pool from its whole prompt
                    trtllm_get_draft_tokens(m, list(toks[i, :lens[i]].tolist()), i, 1 << 30)
                builds.append((b, ctx, time.process_time() - t))

                def step():
                    for i in range(b):
                        lens[i] += grow
                        trtllm_get_draft_tokens(m, list(toks[i, :lens[i]].tolist()), i, 1 << 30)
                rows.append((b, ctx, best(step, n=9)))
        a = np.array([[1.0, b, b * ctx] for b, ctx, _ in rows])
        c, *_ = np.linalg.lstsq(a, np.array([t for *_, t in rows]), rcond=None)
        print(f"TensorRT-LLM {name:7s} step: fixed {c[0] * 1e6:.1f} us, {c[1] * 1e6:.2f} us a request, {c[2] * 1e9:.2f} ns a "
              "context token")
        for b, ctx, t in rows:
            print(f"  b={b:4d} ctx={ctx:5d}: {t * 1e6:9.1f} us (fit {(c[0] + b * c[1] + b * ctx * c[2]) * 1e6:9.1f})")
        per = [t / (b * ctx) for b, ctx, t in builds]
        print(f"TensorRT-LLM {name:7s} first build: {min(per) * 1e9:.0f}-{max(per) * 1e9:.0f} ns a prompt token (2 n-gram sizes), "
              "once a request")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm", type=Path, help="an unpacked vllm 0.33.0 wheel (the folder holding vllm/)")
    args = ap.parse_args()
    if args.vllm:
        time_vllm(args.vllm)
    time_sglang()
    time_trtllm()
