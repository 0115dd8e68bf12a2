"""Time the host side of prompt-lookup drafting (--spec ngram) as the engines run it: SGLang's and TensorRT-LLM's figures of
Engine.ngram_host (spec/engines/sglang.py, trtllm.py; docs/modelling-notes.md#ngram-prompt-lookup, #trtngram-host-pool). vLLM's is its V1 model runner's host matcher
(VLLM_USE_V2_MODEL_RUNNER=0), not priced: 0.33's default runner matches on the GPU (docs/modelling-notes.md#ngramO-v2-runner).

vLLM: its own NgramProposer code, read from an unpacked vllm 0.33.0 wheel (`--vllm DIR`, the folder holding vllm/), the
numba functions and propose / batch_propose run as they are (numba needed: pip install numba), over batches of b requests
of ctx tokens (uniform and Zipf-drawn ids), fitted as fixed + b x per_request + b^2 x per_request^2 + b x ctx x per_token.
SGLang: NGRAMWorker's per-request Python around its C++ corpus (speculative/ngram_worker.py:232-305, 396-420@0.5.23),
re-typed below with the C++ match and insert stubbed (they are not built here), so its per-request cost only.
TensorRT-LLM: NGramDrafter.prepare_draft_tokens and NGramPoolManager.get_draft_tokens (tensorrt_llm/_torch/speculative/
ngram.py:86-143, 179-202@02499765), re-typed below with TensorRT-LLM's Apache-2.0 notice (ordered-set needed: pip install
ordered-set), the binding's get_tokens(0) list (a Python int per token) made by tolist(): its copy a context token and its
match and update a request (a + b x ctx) on uniform, Zipf and word-token ids; the public pool and the first build apart.

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
# as a function of the pool's fields (its `self`, here `m`), its loop variable `l` named `lo`; the logic unchanged.
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
        for lo in range(len(sequence) - size):
            r = min(lo + size + m.max_total_draft_tokens, len(sequence))
            pattern = tuple(sequence[lo:lo + size])
            new_match = tuple(sequence[lo + size:r])
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


def word_ids(text: str) -> list[int]:
    """Text as token ids, a word or a punctuation mark with its leading space a token (as BPE merges them): a real text's
    repetitions and frequencies, which the pool's match sets follow."""
    vocab: dict[str, int] = {}
    return [vocab.setdefault(w, len(vocab)) for w in re.findall(r"\s*\w+|\s*[^\w\s]", text)]


def time_trtllm():
    """TensorRT-LLM's NGram drafter a step (NGramDrafter.prepare_draft_tokens, ngram.py:179-202@02499765): per generation
    request, a copy of its tokens (`list(request.get_tokens(0))`, the binding's list of Python ints: tolist() here) and
    get_draft_tokens with NGramDecodingConfig's defaults (max_matching_ngram_size 2, is_keep_all, is_use_oldest; 1.4.0rc4's
    API reference), k = 3, on the private pool the export writes (is_public_pool false), each request 2 tokens longer a
    step. The match sets of frequent patterns, scanned on each new match, grow with the context, so the per-request time
    is fitted as a + b x ctx over 512 and 8,192 tokens, on distinct (uniform) ids, Zipf-1.1 ids, and this project's own
    notes and source as word tokens. Then the public pool (TensorRT-LLM's default, never pruned) on Zipf ids, and each
    request's first call, which builds its pool from the whole prompt."""
    from types import SimpleNamespace

    root, rng, k, grow, b = Path(__file__).resolve().parents[1], np.random.default_rng(0), 3, 2, 8

    def pool(public=False):
        return SimpleNamespace(max_total_draft_tokens=k, max_matching_ngram_size=2, is_keep_all=True, is_use_oldest=True,
                               is_public_pool=public, pool={}, start_index={})

    def steady(m, seqs, ctx):
        """Seconds a request a step, the prefixes' slicing (the copy, timed apart) taken out."""
        lens = [ctx] * len(seqs)
        for i, q in enumerate(seqs):
            trtllm_get_draft_tokens(m, q[:ctx], i, 1 << 30)

        def step(m, seqs, lens):
            for i, q in enumerate(seqs):
                lens[i] += grow
                trtllm_get_draft_tokens(m, q[:lens[i]], i, 1 << 30)

        def slices(seqs, lens):
            for i, q in enumerate(seqs):
                q[:lens[i]]
        return (best(step, m, seqs, lens, n=100) - best(slices, seqs, lens, n=100)) / len(seqs)

    a = rng.integers(0, 128000, 8192).astype(np.int32)
    copy = best(lambda: list(a.tolist()), n=50) / 8192
    print(f"TensorRT-LLM token copy: {copy * 1e9:.1f} ns a context token")
    src = "".join(f.read_text() for f in sorted((root / "src").rglob("*.py")))
    draws = {"uniform": rng.integers(0, 128000, (b, 9000)).tolist(),
             "zipf": np.minimum(rng.zipf(1.1, (b, 9000)), 128000).tolist(),
             "notes": [word_ids((root / "docs/modelling-notes.md").read_text())[i * 20000:i * 20000 + 9000] for i in range(b)],
             "source": [word_ids(src)[i * 20000:i * 20000 + 9000] for i in range(b)]}
    for name, seqs in draws.items():
        t = {ctx: steady(pool(), seqs, ctx) for ctx in (512, 2048, 8192)}
        slope = (t[8192] - t[512]) / (8192 - 512)
        print(f"TensorRT-LLM {name:7s}: {t[512] * 1e6:.1f} / {t[2048] * 1e6:.1f} / {t[8192] * 1e6:.1f} us a request at 512 / 2,048 / "
              f"8,192 tokens: {(t[512] - 512 * slope) * 1e6:.1f} us + {slope * 1e9:.1f} ns a context token (+ the copy's)")
    zipf = np.minimum(rng.zipf(1.1, (16, 3000)), 128000).tolist()
    print(f"TensorRT-LLM public pool, 16 Zipf requests at 2,048: {steady(pool(True), zipf, 2048) * 1e6:.0f} us a request")
    m, t = pool(), time.process_time()
    for i, q in enumerate(draws["notes"]):
        trtllm_get_draft_tokens(m, q[:8192], i, 1 << 30)
    print(f"TensorRT-LLM first call: {(time.process_time() - t) / (b * 8192) * 1e9:.0f} ns a prompt token, once a request")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm", type=Path, help="an unpacked vllm 0.33.0 wheel (the folder holding vllm/)")
    args = ap.parse_args()
    if args.vllm:
        time_vllm(args.vllm)
    time_sglang()
    time_trtllm()
