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
    n = eager_note(_dep("trtllm"), batch=100.0, extra_s=0.03263, part_s=0.03263, tpot_s=0.048).to_dict()
    assert n["batch_per_rank"] == 100.0 and n["extra_ms_per_step"] == pytest.approx(32.63) and n["cuda_graph_max_bs"] == 100
    assert n["share_of_tpot"] == pytest.approx(0.03263 / 0.048)  # 68%
    assert "+32.6 ms a step, 68% of TPOT" in n["note"] and n["avoid"].startswith(GRAPH_OPTION["trtllm"].format(n=100))
    # SGLang 0.5.23 reads the single-phase flag as an ambiguous prefix: the advice names -decode (data/engines/sglang.toml)
    s = eager_note(_dep("sglang"), batch=600.0, extra_s=0.01, part_s=0.01, tpot_s=0.05, here="--decode-cuda-graph-max-bs").to_dict()
    assert s["avoid"].startswith("`--cuda-graph-max-bs-decode 600` (`--cuda-graph-max-bs 600` before 0.5.23)")
    assert "(here: --decode-cuda-graph-max-bs 600," in s["avoid"]
