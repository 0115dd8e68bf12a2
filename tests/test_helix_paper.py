"""benchmarks/helix_paper.py: the Helix paper's figures (Bhatia et al. 2025, arXiv:2507.07120) re-priced on
GB200 NVL72 at 1M context, against the paper's within 15% where the mechanisms agree (docs/helix_paper.md)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("helix_paper", ROOT / "benchmarks" / "helix_paper.py")
hp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hp)


def test_plans_swept():
    # Llama-3.1-405B: TP x PP powers of two on at most 64 GPUs, 7 + 6 + 5 + 4 + 3 + 2 + 1 = 28; Helix at TP <= 8 KV heads
    # with KVP 2..64: TP1 6 KVPs x its PPs, ... every one a valid plan
    base, helix = hp.plans(hp.get_model("llama-3.1-405b"), 8)
    assert len(base) == 28
    assert {p.sizes[0] for p in helix} == {1, 2, 4, 8} and min(p.sizes[5] for p in helix) == 2
    assert max(p.sizes[0] * p.sizes[1] * p.sizes[5] for p in helix) == 64


def test_helix_paper_figures():
    rows = {r["model"]: r for r in hp.run()}
    ds, ll = rows["deepseek-r1"], rows["llama-3.1-405b"]
    # DeepSeek-R1: TTL 1.47x lower at a batch of 4 (paper: up to 1.5x; the batch where the gain peaks moves between 2 and 4
    # with the fit: 2 on the fit with i46a's measured one-shot all-reduce, 4 after review rD's fixes and its re-fit)
    assert ds["ttl_at_batch"][0] == pytest.approx(1.5, rel=0.15) and ds["ttl_at_batch"][1] in (2, 4)
    # its batch at the conventional plans' best TTL: 16x, one doubling short of the paper's 32x (32 sequences take
    # 11.97 ms against 10.49: Helix's one-sequence TTL is mostly per-kernel floors; docs/guidelines.md section 7)
    assert ds["batch_at_ttl"][0] == 16.0
    # Llama-3.1-405B (8 KV heads): Helix wins once TensorRT-LLM's MNNVL all-reduce prices the 64-GPU FFN
    # all-reduces (NCCL's ~38 us each made it lose, 0.96x and 1.0x): one sequence's TTL 14.15 ms on TP64 against
    # 11.71 ms on TP8 Helix8, 1.208x at a batch of 1 (paper 1.13x), 4x the batch at the same TTL (paper ~4x). (14.17 and
    # 11.72 ms before the serving re-fit with TensorRT-LLM's whole prompts; 14.07 and
    # 11.69 ms before issue 39's split-KV decode: one KV head per GPU splits its keys and merges them; 14.13 before the
    # serving re-fit without campaign B's TensorRT-LLM release 1.1 runs; 14.15 before this session's re-fit). With the one-shot
    # all-reduce at Blackwell's measured 4.8 us (i46a; the serving fit's 5.67 before) TP32 takes the best TTL, 14.06 ms
    # (TP64's 14.16 before), Helix 11.71: 1.200x (1.208x before)
    (t_tp, t_helix), (gain, batch) = ll["best_ttl"], ll["ttl_at_batch"]
    # (14.07 and 11.73 ms on the final fit, after review rD's fixes: the ratio holds at 1.200x). With the one-shot's cost per
    # further peer (custom_ar_peer_s, 0.12 us on Blackwell, at 8 GPUs' six peers beyond 8) and its two-GPU base 4.73 us, every
    # all-reduce of 8 or more GPUs takes 0.65 us more: 14.24 and 11.89 ms, 1.197x; 14.21 and 11.86 ms since the re-fit ba3a87f
    # (TensorRT-LLM's host step 39.6 -> 10 us, paid once a step by both plans: the ratio holds); 14.22 and 11.87 ms since the
    # re-fit 14086fe (host step 10.0 -> 18.7 us, host cost a sequence 1.43 -> 1.26 us: 1.1976x)
    assert t_tp * 1e3 == pytest.approx(14.22, abs=0.01) and t_helix * 1e3 == pytest.approx(11.87, abs=0.01)
    assert gain == pytest.approx(t_tp / t_helix, rel=1e-9) and gain == pytest.approx(1.197, abs=0.001) and gain > 1.0 and batch == 1
    assert ll["batch_at_ttl"][0] == 4.0
    assert ll["best_plans"] == ("TP32", "TP8 Helix8")
