"""serve.eager: the capture in words and the eager note, one helper for estimate and disagg (docs/modelling-notes.md
#cg128-default-graphs, #sgcap-default-caps, #revfix11a)."""
from dataclasses import replace

import pytest

import llm_codesign as lc
from llm_codesign.serve.eager import GRAPH_OPTION, captured_text, eager_note


def _dep(engine: str, **over):
    return replace(lc.deployment(lc.get_model("llama-3.1-70b"), gpu="h100", num_gpus=8, tp=8, engine=engine), **over)


def test_the_capture_in_words_by_engine_and_launch():
    # TensorRT-LLM's LLM API default: 1-31, 32, 64, 128, unpadded (llm_args.py@00043967); SGLang on an 80 GB GPU at
    # tp_size >= 4: 512 (server_args.py:936-998@0.5.9); vLLM: min(2 x max_num_seqs x (1 + k), 512) off SM100
    assert captured_text(_dep("trtllm")) == "TensorRT-LLM's default where the launch sets none: batches 1-32, 64, 128 per rank, unpadded"
    assert captured_text(_dep("sglang")) == "SGLang's default: padded graphs up to 512 per rank"
    assert captured_text(_dep("vllm")) == "vLLM's default: padded graphs up to 512 per rank"
    assert captured_text(_dep("trtllm", cuda_graph_max_bs=0)) == "none: the launch turns CUDA graphs off"
    assert captured_text(_dep("trtllm", cuda_graph_max_bs=256)) == "padded graphs up to 256 per rank (the deployment's cuda_graph_max_bs)"


def test_the_note_states_its_figures_and_each_engines_own_flag():
    n = eager_note(_dep("trtllm"), batch=100.0, extra_s=0.03263, part_s=0.03263, tpot_s=0.048, moves=(0.5, 0.1)).to_dict()
    assert n["batch_per_rank"] == 100.0 and n["extra_ms_per_step"] == pytest.approx(32.63) and n["cuda_graph_max_bs"] == 100
    assert n["share_of_tpot"] == pytest.approx(0.03263 / 0.048)  # 68%
    assert "+32.6 ms a step beyond its kernels, 68% of TPOT" in n["note"] and n["avoid"].startswith(GRAPH_OPTION["trtllm"].format(n=100))
    # how the launches are priced (serve.aggregated.DECODE_LAUNCH_S 35 us, range 8-40; LAUNCH_JITTER_S 2 us, range 0-5) and
    # the intervals' terms: TPOT's moves at the range's ends, e^-0.5 = x0.61 and e^0.1 = x1.11, each side its own
    # (docs/modelling-notes.md#eagerfix-eager-sides)
    assert n["note"].endswith(
        "The launches are priced at 35 us a launch (documented, range 8-40 us) per fused operator (standing for the unfused "
        "kernels an eager forward runs beside it), and each collective waits for the slowest of the 8 ranks' launches (jitter 2 us a launch, range 0-5 us), not fitted; no measured run decodes without CUDA graphs, "
        "so this part is unmeasured for decode (TPOT x0.61-x1.11 with the launches at the range's ends; each side of the "
        "intervals widens by its own end's move)")
    assert n["tpot_log_moves"] == [0.5, 0.1] and n["ttft_log_moves"] == [0.0, 0.0]
    assert "fitted on prefill" not in n["note"] and "3-9" not in n["note"]
    # one rank: no collective waits on another's jitter
    one = eager_note(_8b("trtllm", "h100"), batch=100.0, extra_s=0.003, part_s=0.003, tpot_s=0.01, moves=(0.1, 0.1)).note
    assert ("The launches are priced at 35 us a launch (documented, range 8-40 us) per fused operator (standing for the unfused "
            "kernels an eager forward runs beside it), not fitted;") in one and "jitter" not in one
    # SGLang 0.5.23 reads the single-phase flag as an ambiguous prefix: the advice names -decode (data/engines/sglang.toml)
    s = eager_note(_dep("sglang"), batch=600.0, extra_s=0.01, part_s=0.01, tpot_s=0.05, here="--decode-cuda-graph-max-bs",
                   moves=(0.1, 0.1)).to_dict()
    assert s["avoid"].startswith("`--cuda-graph-max-bs-decode 600` (`--cuda-graph-max-bs 600` before 0.5.23)")
    assert "(here: --decode-cuda-graph-max-bs 600," in s["avoid"]


def _8b(engine: str, gpu: str, spec=None, model: str = "llama-3.1-8b"):
    d = lc.deployment(lc.get_model(model), gpu=gpu, num_gpus=1, tp=1, engine=engine)
    return replace(d, spec=spec) if spec is not None else d


@pytest.mark.parametrize("engine, gpu, k, cap, model", [
    # hand-derived caps (docs/modelling-notes.md#sgcap-default-caps): vLLM min(2 x 1,024 x (1 + k), 512 off Blackwell, 1,024 on
    # it) / (1 + k) requests; SGLang 256 on an 80 GB GPU at tp_size < 4. The caps do not depend on the model; past them
    # 8B's kernels hide its eager launches (decode step bound by compute: docs/modelling-notes.md#ppeager-eager), so the
    # caps are checked on Qwen3-0.6B, whose step is host-bound there
    ("vllm", "h100", 0, 512, "qwen3-0.6b"),
    ("vllm", "h100", 1, 256, "qwen3-0.6b"),
    ("vllm", "b200", 3, 256, "qwen3-0.6b"),
    ("sglang", "h100", 0, 256, "qwen3-0.6b"),
])
def test_the_notes_capture_is_the_priced_one(engine, gpu, k, cap, model):
    """decode_capture is the one reading of the default capture for the note and the pricing: a batch of `cap` a rank is
    priced captured (no note), cap + 1 eager, and the note names `cap` (its advice: cap + 1)."""
    from llm_codesign.serve.eager import decode_capture
    from llm_codesign.spec.plan import SpecDecoding

    dep = _8b(engine, gpu, SpecDecoding("eagle3", k, 1.0 + 0.6 * k, draft_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B") if k else None,
              model=model)
    assert decode_capture(dep) == (cap, True)
    m = lc.get_model(model)
    at = [lc.estimate(m, dep, lc.Workload(isl=128, osl=128, concurrency=c)) for c in (cap, cap + 1)]
    assert at[0].eager_decode is None
    e = at[1].eager_decode
    assert e is not None and e.captured == f"{dep.engine.title}'s default: padded graphs up to {cap} per rank" and e.cuda_graph_max_bs == cap + 1


def test_the_capture_follows_the_runs_batch_limit():
    """vLLM's max_num_seqs (the run's max_running_requests) sets its cap: 2 x 100 x (1 + 0) = 200 tokens, 200 requests; with a
    draft of 1, min(2 x 100 x 2, 512) / 2 = 200 (vllm/config/vllm.py:2447-2470@0.33.0); the note's words read it too."""
    from llm_codesign.serve.eager import decode_capture
    from llm_codesign.spec.harness import SchedulerFlags
    from llm_codesign.spec.plan import SpecDecoding

    fl = SchedulerFlags(max_running_requests=100.0)
    assert decode_capture(_8b("vllm", "h100"), fl) == (200.0, True)
    assert decode_capture(_8b("vllm", "h100", SpecDecoding("eagle3", 1, 1.6, draft_model="x/y")), fl) == (200.0, True)
    assert captured_text(_8b("vllm", "h100"), fl) == "vLLM's default: padded graphs up to 200 per rank"
    assert eager_note(_8b("vllm", "h100"), batch=300.0, extra_s=0.001, part_s=0.001, tpot_s=0.01, flags=fl, moves=(0.1, 0.1)).captured == \
        "vLLM's default: padded graphs up to 200 per rank"


def test_the_eager_host_counts_the_draft_passes_launches():
    """Review rev12a #8: a speculative step outside the graphs launches its draft passes from the host too. llama-3.1-8b
    EAGLE-3 (k = 3) on one H100, TensorRT-LLM, 1 request: a draft pass launches qkv, decode attention, o, gate_up, down, 4
    elementwise kernels and the LM head = 10 (its prefill attention and TP1 all-reduces take no time, so no launch), 3
    passes = 30, and TensorRT-LLM's worker counts no kernels of its own (Engine.spec_worker_kernels): 30 beside the
    target's 290, so the step's eager host is 320 x 35 us = 11.2 ms, against its kernels and its draft passes'."""
    from dataclasses import replace

    import numpy as np

    from llm_codesign.serve import aggregated as agg

    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=1, engine="trtllm", spec="eagle3", acceptance=2.0), cuda_graph_max_bs=0)
    costs = dep.engine.costs(lc.api._calibration(dep.gpu, None))
    k = np.asarray(agg.draft_lengths(dep.spec)[0], float)
    assert float(k) == 3.0
    n = agg._draft_launches(m, dep.gpu, dep.precision, dep.plan, costs=costs, b=np.asarray(1.0), ctx=np.asarray(1536.0), k=k, spec=dep.spec)
    assert float(n) == 30.0
    e = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=1))
    assert e.eager_decode is not None and e.eager_decode.moves[0] > e.eager_decode.moves[1] > 0.0
