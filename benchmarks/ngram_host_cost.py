"""Time the host side of prompt-lookup drafting (--spec ngram) as the engines run it: SGLang's figure of Engine.ngram_host
(spec/engines/sglang.py; docs/modelling-notes.md#ngram-prompt-lookup). vLLM's is its V1 model runner's host matcher
(VLLM_USE_V2_MODEL_RUNNER=0), not priced: 0.33's default runner matches on the GPU (docs/modelling-notes.md#ngramO-v2-runner).

vLLM: its own NgramProposer code, read from an unpacked vllm 0.33.0 wheel (`--vllm DIR`, the folder holding vllm/), the
numba functions and propose / batch_propose run as they are (numba needed: pip install numba), over batches of b requests
of ctx tokens (uniform and Zipf-drawn ids), fitted as fixed + b x per_request + b^2 x per_request^2 + b x ctx x per_token.
SGLang: NGRAMWorker's per-request Python around its C++ corpus (speculative/ngram_worker.py:232-305, 396-420@0.5.23),
re-typed below with the C++ match and insert stubbed (they are not built here), so its per-request cost only.

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


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm", type=Path, help="an unpacked vllm 0.33.0 wheel (the folder holding vllm/)")
    args = ap.parse_args()
    if args.vllm:
        time_vllm(args.vllm)
    time_sglang()
